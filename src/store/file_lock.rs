//! Whole-file exclusive locks for ownership on the shared disk, as open-file-description
//! (OFD) fcntl locks on Linux: POSIX byte-range locks, which NFS v4 servers and cluster file
//! systems arbitrate between machines (a lock belongs to the open file, like flock(2), so two
//! opens in one process exclude each other too), released by the kernel when the process dies,
//! and testable without taking them (F_OFD_GETLK), so probing a peer's lock never blocks it.
//! Elsewhere flock(2) stands in (tests and development only: it is not arbitrated over NFS
//! everywhere).

use std::fs::File;
use std::io;

#[cfg(target_os = "linux")]
mod imp {
    use std::fs::File;
    use std::io;
    use std::os::unix::io::AsRawFd;

    /// `len` 0 reaches the end of the file, however it grows.
    fn range(kind: libc::c_short, start: i64, len: i64) -> libc::flock {
        // SAFETY: flock is a plain C struct; all-zero is a valid value (l_pid must be 0 for OFD).
        let mut fl: libc::flock = unsafe { std::mem::zeroed() };
        fl.l_type = kind;
        fl.l_whence = libc::SEEK_SET as libc::c_short;
        fl.l_start = start;
        fl.l_len = len;
        fl
    }

    fn set(file: &File, mut fl: libc::flock) -> io::Result<bool> {
        // SAFETY: a valid descriptor and a valid flock struct that outlives the call.
        let rc = unsafe { libc::fcntl(file.as_raw_fd(), libc::F_OFD_SETLK, &mut fl) };
        if rc == 0 {
            return Ok(true);
        }
        let e = io::Error::last_os_error();
        match e.raw_os_error() {
            Some(libc::EAGAIN) | Some(libc::EACCES) => Ok(false),
            _ => Err(e),
        }
    }

    pub fn try_lock(file: &File, start: i64, len: i64) -> io::Result<bool> {
        set(file, range(libc::F_WRLCK as libc::c_short, start, len))
    }

    pub fn unlock(file: &File, start: i64, len: i64) -> io::Result<()> {
        set(file, range(libc::F_UNLCK as libc::c_short, start, len)).map(|_| ())
    }

    pub fn locked_by_another(file: &File, start: i64, len: i64) -> io::Result<bool> {
        let mut fl = range(libc::F_WRLCK as libc::c_short, start, len);
        // SAFETY: as above; F_OFD_GETLK only writes into `fl`.
        let rc = unsafe { libc::fcntl(file.as_raw_fd(), libc::F_OFD_GETLK, &mut fl) };
        if rc != 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(fl.l_type != libc::F_UNLCK as libc::c_short)
    }
}

#[cfg(not(target_os = "linux"))]
mod imp {
    use fs2::FileExt;
    use std::fs::File;
    use std::io;

    // Development only: flock(2) locks the whole file, so every range is the whole file.
    pub fn try_lock(file: &File, _start: i64, _len: i64) -> io::Result<bool> {
        Ok(file.try_lock_exclusive().is_ok())
    }

    pub fn unlock(file: &File, _start: i64, _len: i64) -> io::Result<()> {
        FileExt::unlock(file)
    }

    pub fn locked_by_another(file: &File, _start: i64, _len: i64) -> io::Result<bool> {
        if file.try_lock_exclusive().is_err() {
            return Ok(true);
        }
        FileExt::unlock(file)?;
        Ok(false)
    }
}

/// Takes the exclusive lock of `file` (opened for writing) if no other open file holds it;
/// false while one does. The lock lasts as long as this open file.
pub fn try_lock(file: &File) -> io::Result<bool> {
    imp::try_lock(file, 0, 0)
}

/// Whether another open file (another broker) holds `file`'s lock; never takes it.
pub fn locked_by_another(file: &File) -> io::Result<bool> {
    imp::locked_by_another(file, 0, 0)
}

/// Takes the exclusive lock of the one byte at `offset` of `file`: many such locks share one
/// open file (one descriptor for every partition a broker leads), each released on its own.
pub fn try_lock_byte(file: &File, offset: i64) -> io::Result<bool> {
    imp::try_lock(file, offset, 1)
}

/// Releases the lock of the byte at `offset` taken through this open file.
pub fn unlock_byte(file: &File, offset: i64) -> io::Result<()> {
    imp::unlock(file, offset, 1)
}

/// Whether another open file holds the lock of the byte at `offset`; never takes it.
pub fn byte_locked_by_another(file: &File, offset: i64) -> io::Result<bool> {
    imp::locked_by_another(file, offset, 1)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::fs::OpenOptions;

    fn open(path: &std::path::Path) -> File {
        OpenOptions::new().create(true).truncate(false).read(true).write(true).open(path).unwrap()
    }

    #[test]
    fn one_holder_at_a_time_and_released_on_close() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("x.lock");
        let (a, b) = (open(&path), open(&path));
        assert!(!locked_by_another(&b).unwrap());
        assert!(try_lock(&a).unwrap());
        assert!(try_lock(&a).unwrap(), "the holder may take it again");
        assert!(!try_lock(&b).unwrap(), "a second open file is refused");
        assert!(locked_by_another(&b).unwrap());
        drop(a);
        assert!(!locked_by_another(&b).unwrap(), "closing the holder's file releases the lock");
        assert!(try_lock(&b).unwrap());
    }

    #[test]
    fn probing_a_lock_does_not_take_it() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("y.lock");
        let (a, b) = (open(&path), open(&path));
        assert!(!locked_by_another(&b).unwrap());
        assert!(try_lock(&a).unwrap(), "a probe in between left the lock free");
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn byte_locks_of_one_open_file_are_taken_and_released_one_by_one() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("partitions.lock");
        let (a, b) = (open(&path), open(&path));
        let far = 1i64 << 61;
        assert!(try_lock_byte(&a, 7).unwrap());
        assert!(try_lock_byte(&a, far).unwrap());
        assert!(!try_lock_byte(&b, 7).unwrap(), "another open file is refused the same byte");
        assert!(try_lock_byte(&b, 8).unwrap(), "a neighbouring byte is free");
        assert!(byte_locked_by_another(&b, far).unwrap());
        unlock_byte(&a, 7).unwrap();
        assert!(try_lock_byte(&b, 7).unwrap(), "released alone");
        assert!(!try_lock_byte(&b, far).unwrap(), "the other byte is still held");
        drop(a);
        assert!(try_lock_byte(&b, far).unwrap(), "closing the file releases every byte it held");
    }
}
