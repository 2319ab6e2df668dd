//! The system calls std does not wrap, each behind a safe function with its SAFETY argument:
//! with `protocol::outgoing`'s `BufMut` impl (a trait that is unsafe to implement), the only
//! `unsafe` of kaas (tests/architecture.rs keeps it so).

use std::ffi::CString;
use std::fs::File;
use std::io;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

fn check(rc: libc::c_int) -> io::Result<()> {
    if rc == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

fn c_path(path: &Path) -> io::Result<CString> {
    CString::new(path.as_os_str().as_bytes()).map_err(|_| io::Error::from(io::ErrorKind::InvalidInput))
}

/// getrlimit(RLIMIT_NOFILE).
pub fn nofile_limit() -> io::Result<libc::rlimit> {
    let mut lim = libc::rlimit { rlim_cur: 0, rlim_max: 0 };
    // SAFETY: getrlimit only writes the struct we pass.
    check(unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) })?;
    Ok(lim)
}

/// setrlimit(RLIMIT_NOFILE).
pub fn set_nofile_limit(lim: &libc::rlimit) -> io::Result<()> {
    // SAFETY: setrlimit only reads the struct we pass.
    check(unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, lim) })
}

/// statvfs(3) of the file system holding `path`.
pub fn statvfs(path: &Path) -> io::Result<libc::statvfs> {
    let c = c_path(path)?;
    // SAFETY: statvfs is a plain C struct, all-zero a valid value.
    let mut st: libc::statvfs = unsafe { std::mem::zeroed() };
    // SAFETY: `c` is NUL-terminated; statvfs only writes into `st`.
    check(unsafe { libc::statvfs(c.as_ptr(), &mut st) })?;
    Ok(st)
}

/// The file system type (statfs(2) `f_type`) of the file system holding `path`.
pub fn filesystem_type(path: &Path) -> io::Result<i64> {
    let c = c_path(path)?;
    // SAFETY: statfs is a plain C struct, all-zero a valid value.
    let mut st: libc::statfs = unsafe { std::mem::zeroed() };
    // SAFETY: `c` is NUL-terminated; statfs only writes into `st`.
    check(unsafe { libc::statfs(c.as_ptr(), &mut st) })?;
    #[allow(clippy::unnecessary_cast)]
    Ok(st.f_type as i64)
}

/// syncfs(2): flushes the file system `file` is on.
pub fn syncfs(file: &File) -> io::Result<()> {
    // SAFETY: a valid descriptor for the duration of the call.
    check(unsafe { libc::syncfs(file.as_raw_fd()) })
}

/// Makes the calling thread a background one: nice 10 (setpriority(2) of its thread id) and the
/// lowest best-effort I/O priority (ioprio_set(2)), so that it yields the CPU and the disk to the
/// threads that answer clients (the log cleaner's threads).
pub fn lower_thread_priority() -> io::Result<()> {
    // SAFETY: gettid has no preconditions.
    let tid = unsafe { libc::syscall(libc::SYS_gettid) } as libc::id_t;
    // SAFETY: setpriority only reads its scalar arguments; PRIO_PROCESS with a thread id sets
    // that thread's nice value on Linux.
    if unsafe { libc::setpriority(libc::PRIO_PROCESS, tid, 10) } != 0 {
        return Err(io::Error::last_os_error());
    }
    // IOPRIO_PRIO_VALUE(IOPRIO_CLASS_BE = 2, level 7): `class << 13 | level`; IOPRIO_WHO_PROCESS = 1.
    let ioprio: libc::c_long = (2 << 13) | 7;
    // SAFETY: ioprio_set takes three scalars and touches no memory of ours.
    if unsafe { libc::syscall(libc::SYS_ioprio_set, 1 as libc::c_long, tid as libc::c_long, ioprio) } != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// setsockopt(TCP_CORK).
pub fn set_tcp_cork(sock: BorrowedFd<'_>, on: bool) -> io::Result<()> {
    let v: libc::c_int = on.into();
    // SAFETY: a valid socket descriptor and a c_int option value of the size given.
    check(unsafe {
        libc::setsockopt(
            sock.as_raw_fd(),
            libc::IPPROTO_TCP,
            libc::TCP_CORK,
            (&v as *const libc::c_int).cast(),
            std::mem::size_of::<libc::c_int>() as libc::socklen_t,
        )
    })
}

/// sendfile(2) of up to `count` bytes of `file` from `*offset` (advanced by what was sent) to
/// `out`; the bytes sent.
pub fn sendfile(out: BorrowedFd<'_>, file: &File, offset: &mut libc::off_t, count: usize) -> io::Result<usize> {
    // SAFETY: both descriptors are open for the call (borrowed); `offset` is a valid off_t the
    // kernel advances.
    let n = unsafe { libc::sendfile(out.as_raw_fd(), file.as_fd().as_raw_fd(), offset, count) };
    usize::try_from(n).map_err(|_| io::Error::last_os_error())
}

/// pwritev(2) of `parts` at `pos`: the bytes written (perhaps fewer than given).
pub fn pwritev(file: &File, parts: &[&[u8]], pos: u64) -> io::Result<usize> {
    let iov: Vec<libc::iovec> =
        parts.iter().map(|p| libc::iovec { iov_base: p.as_ptr() as *mut libc::c_void, iov_len: p.len() }).collect();
    let off = libc::off_t::try_from(pos).map_err(|_| io::Error::other("file position out of range"))?;
    let count = libc::c_int::try_from(iov.len()).unwrap_or(libc::c_int::MAX);
    // SAFETY: every iovec points into a slice borrowed for the call (the kernel only reads them);
    // the file is open.
    let n = unsafe { libc::pwritev(file.as_raw_fd(), iov.as_ptr(), count, off) };
    usize::try_from(n).map_err(|_| io::Error::last_os_error())
}

/// An open-file-description lock request (fcntl F_OFD_SETLK / F_OFD_GETLK) of `kind`
/// (F_WRLCK, F_UNLCK) over `len` bytes from `start` (`len` 0: to the end, however it grows).
#[cfg(target_os = "linux")]
pub fn ofd_lock(file: &File, get: bool, kind: libc::c_short, start: i64, len: i64) -> io::Result<libc::flock> {
    // SAFETY: flock is a plain C struct; all-zero is a valid value (l_pid must be 0 for OFD).
    let mut fl: libc::flock = unsafe { std::mem::zeroed() };
    fl.l_type = kind;
    fl.l_whence = libc::SEEK_SET as libc::c_short;
    fl.l_start = start;
    fl.l_len = len;
    let cmd = if get { libc::F_OFD_GETLK } else { libc::F_OFD_SETLK };
    // SAFETY: a valid descriptor and a valid flock struct that outlives the call; F_OFD_GETLK
    // only writes into it.
    check(unsafe { libc::fcntl(file.as_raw_fd(), cmd, &mut fl) })?;
    Ok(fl)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_wrappers_answer_for_a_real_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f");
        let file = std::fs::OpenOptions::new().create(true).truncate(true).read(true).write(true).open(&path).unwrap();
        assert_eq!(pwritev(&file, &[b"ab", b"cd"], 2).unwrap(), 4);
        assert_eq!(std::fs::read(&path).unwrap(), b"\0\0abcd");
        syncfs(&file).unwrap();
        assert!(statvfs(dir.path()).unwrap().f_frsize > 0);
        assert!(filesystem_type(dir.path()).is_ok());
        assert!(statvfs(Path::new("/no/such/dir")).is_err());
        let lim = nofile_limit().unwrap();
        assert!(lim.rlim_cur <= lim.rlim_max);
    }
}
