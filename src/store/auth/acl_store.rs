//! The cluster's ACLs on the shared disk: `<data>/__cluster/acls.json` (every binding), read
//! whole and rewritten crash-safely under the lock file `acls.lock`, so brokers sharing the disk
//! never interleave two changes (CreateAcls, DeleteAcls). Every broker reads the file again when it
//! changed (server::SecurityFiles). Blocking I/O: callers run it on the blocking pool.

use std::path::{Path, PathBuf};
use std::time::Duration;

use thiserror::Error;

use super::acl::AclBinding;
use crate::store::cluster::file_lock;
use crate::store::durable::{create_dir_all_durable, write_atomic};

/// At most this many ACLs (the file is read whole by every broker after each change).
pub const MAX_ACLS: usize = 100_000;

/// How long a change waits for another broker's change.
const LOCK_WAIT: Duration = Duration::from_secs(5);

#[derive(Debug, Error)]
pub enum AclStoreError {
    #[error("{0}: {1}")]
    Io(PathBuf, std::io::Error),
    #[error("{0}: {1}")]
    Format(PathBuf, serde_json::Error),
    #[error("Another broker is changing the ACLs; try again.")]
    Busy,
    #[error("kaas keeps at most {MAX_ACLS} ACLs")]
    TooMany,
}

pub fn acls_path(data_dir: &Path) -> PathBuf {
    data_dir.join("__cluster").join("acls.json")
}

/// Every ACL; none when the file does not exist.
pub fn load(data_dir: &Path) -> Result<Vec<AclBinding>, AclStoreError> {
    let p = acls_path(data_dir);
    match std::fs::read(&p) {
        Ok(bytes) => serde_json::from_slice(&bytes).map_err(|e| AclStoreError::Format(p, e)),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Vec::new()),
        Err(e) => Err(AclStoreError::Io(p, e)),
    }
}

/// Changes the ACLs with `change` (given the current ones; it returns the new ones and what it
/// reports) under the lock, and writes them durably when they changed.
pub fn change<T>(
    data_dir: &Path,
    change: impl FnOnce(&[AclBinding]) -> (Vec<AclBinding>, T),
) -> Result<(Vec<AclBinding>, T), AclStoreError> {
    let dir = data_dir.join("__cluster");
    let io = |p: &Path| {
        let p = p.to_path_buf();
        move |e| AclStoreError::Io(p, e)
    };
    create_dir_all_durable(&dir).map_err(io(&dir))?;
    let lock_path = dir.join("acls.lock");
    let _lock =
        file_lock::lock_file_within(&lock_path, LOCK_WAIT).map_err(io(&lock_path))?.ok_or(AclStoreError::Busy)?;
    let current = load(data_dir)?;
    let (next, report) = change(&current);
    if next.len() > MAX_ACLS {
        return Err(AclStoreError::TooMany);
    }
    if next != current {
        let p = acls_path(data_dir);
        let bytes = serde_json::to_vec_pretty(&next).map_err(|e| AclStoreError::Format(p.clone(), e))?;
        write_atomic(&p, &bytes).map_err(io(&p))?;
    }
    Ok((next, report))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::auth::acl::*;

    fn binding(name: &str) -> AclBinding {
        AclBinding {
            resource_type: RESOURCE_TOPIC,
            name: name.into(),
            pattern_type: PATTERN_LITERAL,
            principal: "User:a".into(),
            host: "*".into(),
            operation: OP_READ,
            permission: PERMISSION_ALLOW,
        }
    }

    #[test]
    fn acls_are_added_and_removed_durably() {
        let dir = tempfile::tempdir().unwrap();
        assert!(load(dir.path()).unwrap().is_empty());
        let (all, ()) = change(dir.path(), |cur| ([cur, &[binding("a"), binding("b")]].concat(), ())).unwrap();
        assert_eq!(all.len(), 2);
        assert_eq!(load(dir.path()).unwrap(), all);
        let (left, removed) = change(dir.path(), |cur| {
            let (gone, kept): (Vec<_>, Vec<_>) = cur.iter().cloned().partition(|b| b.name == "a");
            (kept, gone.len())
        })
        .unwrap();
        assert_eq!((left.len(), removed), (1, 1));
        assert_eq!(load(dir.path()).unwrap(), vec![binding("b")]);
    }
}
