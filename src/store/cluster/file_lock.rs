//! Whole-file exclusive locks for ownership on the shared disk, as open-file-description
//! (OFD) fcntl locks on Linux: POSIX byte-range locks, which NFS v4 servers and cluster file
//! systems arbitrate between machines (a lock belongs to the open file, like flock(2), so two
//! opens in one process exclude each other too), released by the kernel when the process dies,
//! and testable without taking them (F_OFD_GETLK), so probing a peer's lock never blocks it.
//! Elsewhere flock(2) stands in (tests and development only: it is not arbitrated over NFS
//! everywhere).

use std::fs::{File, OpenOptions};
use std::io;
use std::path::Path;
use std::time::{Duration, Instant};

#[cfg(target_os = "linux")]
mod imp {
    use std::fs::File;
    use std::io;

    use crate::sys;

    pub fn try_lock(file: &File, start: i64, len: i64) -> io::Result<bool> {
        match sys::ofd_lock(file, false, libc::F_WRLCK as libc::c_short, start, len) {
            Ok(_) => Ok(true),
            Err(e) if matches!(e.raw_os_error(), Some(libc::EAGAIN) | Some(libc::EACCES)) => Ok(false),
            Err(e) => Err(e),
        }
    }

    pub fn locked_by_another(file: &File, start: i64, len: i64) -> io::Result<bool> {
        let fl = sys::ofd_lock(file, true, libc::F_WRLCK as libc::c_short, start, len)?;
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

/// Opens (creating it) the lock file at `path` and takes its whole-file lock, retrying for up to
/// `wait`: the file, holding the lock until dropped, or None when another holder kept it that
/// long. For the small shared files changed under a lock (ACLs, SCRAM credentials, group
/// configs).
pub fn lock_file_within(path: &Path, wait: Duration) -> io::Result<Option<File>> {
    let file = OpenOptions::new().create(true).truncate(false).read(true).write(true).open(path)?;
    let deadline = Instant::now() + wait;
    while !try_lock(&file)? {
        if Instant::now() >= deadline {
            return Ok(None);
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    Ok(Some(file))
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
}
