//! Fencing a broker that may still run. A broker that takes partitions or a coordinator over
//! from a broker it no longer sees live (its lock was released: the process died, or its
//! file-system client lost its session while the process runs on) first creates the fence file
//! `__cluster/fenced/<node>-<incarnation>` of that broker's incarnation. Every broker checks its
//! own fence file after each fsync and before it acknowledges anything (the self-fence): a fence
//! created after that check comes before the new owner reads how far the predecessor's files
//! go (its seal), so what was acknowledged is inside the seal; a fence created before it makes
//! the broker answer NOT_LEADER_OR_FOLLOWER / NOT_COORDINATOR and stop. An incarnation is a
//! random number drawn at each start, so a restarted broker is never fenced by a fence of its
//! predecessor. Reading the fence needs a lookup that is not answered from a negative cache
//! (NFS: `lookupcache=positive` or `none`; JuiceFS and local file systems do so by default).

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use thiserror::Error;

#[derive(Debug, Error)]
pub enum FenceError {
    /// This broker was fenced: another broker took over what it served.
    #[error("this broker (node {node_id}, incarnation {incarnation}) was fenced by a broker that took over from it")]
    Fenced { node_id: i32, incarnation: u64 },
    #[error("io on {0}: {1}")]
    Io(PathBuf, std::io::Error),
}

fn fenced_dir(data_dir: &Path) -> PathBuf {
    data_dir.join("__cluster").join("fenced")
}

/// The fence file of `node_id`'s `incarnation`.
pub fn fence_path(data_dir: &Path, node_id: i32, incarnation: u64) -> PathBuf {
    fenced_dir(data_dir).join(format!("{node_id}-{incarnation:016x}"))
}

/// Fences `node_id`'s `incarnation` durably (idempotent): from the moment this returns, that
/// incarnation acknowledges nothing more.
pub fn fence_broker(data_dir: &Path, node_id: i32, incarnation: u64) -> Result<(), FenceError> {
    let dir = fenced_dir(data_dir);
    let io = |p: &Path| {
        let p = p.to_path_buf();
        move |e| FenceError::Io(p, e)
    };
    let path = fence_path(data_dir, node_id, incarnation);
    if path.exists() {
        // Taking each partition of a dead broker fences it again: one directory fsync is enough.
        return Ok(());
    }
    crate::store::durable::create_dir_all_durable(&dir).map_err(io(&dir))?;
    std::fs::OpenOptions::new().create(true).truncate(false).write(true).open(&path).map_err(io(&path))?;
    crate::store::durable::sync_dir(&dir).map_err(io(&dir))?;
    Ok(())
}

/// This broker's own fence: checked after every fsync and sled flush before an answer, and
/// before a retention or DeleteRecords unlinks segments (a check, then the unlink: a broker
/// that stalls between the two can still remove files below the log start it had made durable).
/// Once seen, it stays fenced (the flag), and the broker stops.
#[derive(Debug, Clone)]
pub struct SelfFence {
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    path: PathBuf,
    node_id: i32,
    incarnation: u64,
    fenced: AtomicBool,
}

impl SelfFence {
    pub fn new(data_dir: &Path, node_id: i32, incarnation: u64) -> SelfFence {
        let path = fence_path(data_dir, node_id, incarnation);
        SelfFence { inner: Arc::new(Inner { path, node_id, incarnation, fenced: AtomicBool::new(false) }) }
    }

    /// A fence that is never checked on disk (unit tests that run no broker).
    #[cfg(test)]
    pub fn unchecked() -> SelfFence {
        SelfFence::new(Path::new(""), -1, 0)
    }

    pub fn incarnation(&self) -> u64 {
        self.inner.incarnation
    }

    /// Whether a fence was already seen (no I/O).
    pub fn is_fenced(&self) -> bool {
        self.inner.fenced.load(Ordering::Acquire)
    }

    fn fenced(&self) -> FenceError {
        FenceError::Fenced { node_id: self.inner.node_id, incarnation: self.inner.incarnation }
    }

    /// Ok while this incarnation is not fenced: one lookup of the fence file. Call it after the
    /// fsync that makes what is about to be acknowledged durable, never before.
    pub fn check(&self) -> Result<(), FenceError> {
        if self.is_fenced() {
            return Err(self.fenced());
        }
        if self.inner.path.as_os_str().is_empty() {
            return Ok(());
        }
        match std::fs::symlink_metadata(&self.inner.path) {
            Ok(_) => {
                self.inner.fenced.store(true, Ordering::Release);
                Err(self.fenced())
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
            // Cannot tell: nothing may be acknowledged on a guess.
            Err(e) => Err(FenceError::Io(self.inner.path.clone(), e)),
        }
    }
}

/// A fresh incarnation number for a broker start.
pub fn new_incarnation() -> u64 {
    let id = uuid::Uuid::new_v4().as_u64_pair();
    (id.0 ^ id.1).max(1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_fenced_incarnation_fails_its_check_and_stays_fenced() {
        let dir = tempfile::tempdir().unwrap();
        let me = SelfFence::new(dir.path(), 1, 7);
        assert!(me.check().is_ok());
        fence_broker(dir.path(), 1, 7).unwrap();
        assert!(matches!(me.check(), Err(FenceError::Fenced { node_id: 1, incarnation: 7 })));
        std::fs::remove_file(fence_path(dir.path(), 1, 7)).unwrap();
        assert!(me.check().is_err(), "once fenced, always fenced");
        assert!(me.is_fenced());
    }

    #[test]
    fn a_fence_of_another_incarnation_or_node_does_not_fence_this_one() {
        let dir = tempfile::tempdir().unwrap();
        fence_broker(dir.path(), 1, 6).unwrap();
        fence_broker(dir.path(), 2, 7).unwrap();
        fence_broker(dir.path(), 2, 7).unwrap();
        assert!(SelfFence::new(dir.path(), 1, 7).check().is_ok());
        assert_ne!(new_incarnation(), new_incarnation());
    }
}
