//! Producer fences shared through the data disk: each broker appends the epoch bumps its
//! coordinators make to `<data>/__cluster/producer_fences/from-<node>.json`; peers poll the other
//! brokers' files and fence locally. A bump to a lower or equal epoch is a no-op.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use thiserror::Error;

use crate::store::durable::write_atomic;

#[derive(Debug, Error)]
pub enum FenceLogError {
    #[error("io: {0}")]
    Io(#[from] std::io::Error),
    #[error("bad fence file {0}: {1}")]
    Parse(PathBuf, serde_json::Error),
}

#[derive(Debug, Default, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FenceFile {
    /// producer id -> highest epoch fenced by this broker.
    pub fences: BTreeMap<i64, i16>,
    /// producer id -> when that fence was written (ms); older fences are pruned.
    #[serde(default)]
    pub fenced_at: BTreeMap<i64, i64>,
}

pub fn fences_dir(data_dir: &Path) -> PathBuf {
    data_dir.join("__cluster").join("producer_fences")
}

fn file_for(data_dir: &Path, node_id: i32) -> PathBuf {
    fences_dir(data_dir).join(format!("from-{node_id}.json"))
}

/// This broker's outbound fence file.
#[derive(Debug)]
pub struct FenceLog {
    path: PathBuf,
    file: FenceFile,
}

impl FenceLog {
    pub fn open(data_dir: &Path, node_id: i32) -> Result<FenceLog, FenceLogError> {
        let path = file_for(data_dir, node_id);
        let mut file = read_file(&path)?.unwrap_or_default();
        // Fences from before timestamps were kept age from now.
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_millis() as i64)
            .unwrap_or(0);
        for pid in file.fences.keys() {
            file.fenced_at.entry(*pid).or_insert(now);
        }
        Ok(FenceLog { path, file })
    }

    /// Records a fence; returns whether the file changed (a lower or equal epoch is a no-op).
    /// Fences older than `max_age_ms` are dropped on the way: by then every partition has
    /// expired that producer's state (producer_id_expiration_ms), so the file stays bounded.
    pub fn append(
        &mut self,
        producer_id: i64,
        epoch: i16,
        now_ms: i64,
        max_age_ms: i64,
    ) -> Result<bool, FenceLogError> {
        if self.file.fences.get(&producer_id).is_some_and(|e| *e >= epoch) {
            return Ok(false);
        }
        let FenceFile { fences, fenced_at } = &mut self.file;
        fences.retain(|pid, _| fenced_at.get(pid).is_some_and(|at| now_ms.saturating_sub(*at) < max_age_ms));
        fenced_at.retain(|pid, _| fences.contains_key(pid));
        fences.insert(producer_id, epoch);
        fenced_at.insert(producer_id, now_ms);
        let bytes = serde_json::to_vec(&self.file).map_err(|e| FenceLogError::Parse(self.path.clone(), e))?;
        write_atomic(&self.path, &bytes)?;
        Ok(true)
    }

    pub fn get(&self, producer_id: i64) -> Option<i16> {
        self.file.fences.get(&producer_id).copied()
    }
}

fn read_file(path: &Path) -> Result<Option<FenceFile>, FenceLogError> {
    match std::fs::read(path) {
        Ok(bytes) => serde_json::from_slice(&bytes).map(Some).map_err(|e| FenceLogError::Parse(path.to_path_buf(), e)),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(e.into()),
    }
}

/// A peer's fence file that did not read or parse this poll (half-written, foreign, an I/O
/// error): skipped, never fatal.
#[derive(Debug)]
pub struct UnreadablePeer {
    pub node: i32,
    pub path: PathBuf,
    pub error: FenceLogError,
    /// Changes when the file's bytes (or the error) change, so a warning can be given once per
    /// version of the file instead of every poll.
    pub fingerprint: u64,
}

/// One poll of the peers' fence files.
#[derive(Debug, Default)]
pub struct PeerFences {
    pub files: Vec<(i32, FenceFile)>,
    pub unreadable: Vec<UnreadablePeer>,
}

/// A cheap, stable digest of `bytes` (not cryptographic: it only tells versions of a file apart).
pub fn fingerprint(bytes: &[u8]) -> u64 {
    use std::hash::{Hash, Hasher};
    let mut h = std::collections::hash_map::DefaultHasher::new();
    bytes.hash(&mut h);
    h.finish()
}

/// Every peer's fences (never this broker's own file), each file opened anew: on NFS only an
/// open after the writer's close (its rename) is sure to see the new bytes. Only `from-<n>.json`
/// names count, so `write_atomic`'s tmp files are never read. A file that does not read or
/// parse is listed in `unreadable` and the others are still read; only an unreadable directory
/// fails the whole poll.
pub fn read_peers(data_dir: &Path, self_node: i32) -> Result<PeerFences, FenceLogError> {
    let dir = fences_dir(data_dir);
    let mut out = PeerFences::default();
    let entries = match std::fs::read_dir(&dir) {
        Ok(e) => e,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(out),
        Err(e) => return Err(e.into()),
    };
    for entry in entries {
        let path = entry?.path();
        let Some(node) = path
            .file_name()
            .and_then(|n| n.to_str())
            .and_then(|n| n.strip_prefix("from-"))
            .and_then(|n| n.strip_suffix(".json"))
            .and_then(|n| n.parse::<i32>().ok())
        else {
            continue;
        };
        if node == self_node {
            continue;
        }
        let bytes = match std::fs::read(&path) {
            Ok(b) => b,
            // Gone between the listing and the open (a peer's rename): nothing to read.
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
            Err(e) => {
                let fingerprint = fingerprint(e.to_string().as_bytes());
                out.unreadable.push(UnreadablePeer { node, path, error: e.into(), fingerprint });
                continue;
            }
        };
        match serde_json::from_slice::<FenceFile>(&bytes) {
            Ok(f) => out.files.push((node, f)),
            Err(e) => {
                let error = FenceLogError::Parse(path.clone(), e);
                out.unreadable.push(UnreadablePeer { node, path, error, fingerprint: fingerprint(&bytes) });
            }
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    const DAY: i64 = 86_400_000;

    #[test]
    fn fences_older_than_producer_expiration_are_pruned() {
        let dir = tempfile::tempdir().unwrap();
        let mut log = FenceLog::open(dir.path(), 0).unwrap();
        log.append(1, 1, 0, DAY).unwrap();
        log.append(2, 1, DAY / 2, DAY).unwrap();
        log.append(3, 1, DAY, DAY).unwrap();
        let reread = FenceLog::open(dir.path(), 0).unwrap();
        assert_eq!((reread.get(1), reread.get(2), reread.get(3)), (None, Some(1), Some(1)));
    }

    #[test]
    fn a_fence_file_without_timestamps_still_reads() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(fences_dir(dir.path())).unwrap();
        std::fs::write(file_for(dir.path(), 0), br#"{"fences":{"7":3}}"#).unwrap();
        assert_eq!(FenceLog::open(dir.path(), 0).unwrap().get(7), Some(3));
    }

    #[test]
    fn append_lower_or_equal_epoch_is_noop() {
        let dir = tempfile::tempdir().unwrap();
        let mut log = FenceLog::open(dir.path(), 0).unwrap();
        assert!(log.append(7, 3, 0, DAY).unwrap());
        assert!(!log.append(7, 3, 0, DAY).unwrap());
        assert!(!log.append(7, 2, 0, DAY).unwrap());
        assert_eq!(FenceLog::open(dir.path(), 0).unwrap().get(7), Some(3));
    }

    #[test]
    fn append_higher_epoch_overwrites() {
        let dir = tempfile::tempdir().unwrap();
        let mut log = FenceLog::open(dir.path(), 0).unwrap();
        log.append(7, 1, 0, DAY).unwrap();
        assert!(log.append(7, 5, 0, DAY).unwrap());
        assert_eq!(FenceLog::open(dir.path(), 0).unwrap().get(7), Some(5));
    }

    #[test]
    fn peers_are_read_and_own_file_skipped() {
        let dir = tempfile::tempdir().unwrap();
        FenceLog::open(dir.path(), 0).unwrap().append(1, 1, 0, DAY).unwrap();
        FenceLog::open(dir.path(), 2).unwrap().append(9, 4, 0, DAY).unwrap();
        let peers = read_peers(dir.path(), 0).unwrap().files;
        assert_eq!(peers.len(), 1);
        assert_eq!(peers[0].0, 2);
        assert_eq!(peers[0].1.fences.get(&9), Some(&4));
    }

    #[test]
    fn a_malformed_peer_file_is_listed_and_the_others_still_read() {
        let dir = tempfile::tempdir().unwrap();
        FenceLog::open(dir.path(), 2).unwrap().append(9, 4, 0, DAY).unwrap();
        std::fs::write(file_for(dir.path(), 8), br#"{"fences":{"1":"#).unwrap();
        // write_atomic's tmp file and foreign names are not fence files.
        std::fs::write(fences_dir(dir.path()).join("from-3.tmp"), b"garbage").unwrap();
        std::fs::write(fences_dir(dir.path()).join("notes.json"), b"garbage").unwrap();
        let peers = read_peers(dir.path(), 0).unwrap();
        assert_eq!(peers.files.iter().map(|(n, _)| *n).collect::<Vec<_>>(), vec![2]);
        assert_eq!(peers.unreadable.len(), 1);
        assert_eq!(peers.unreadable[0].node, 8);
        assert!(matches!(peers.unreadable[0].error, FenceLogError::Parse(..)));
    }
}
