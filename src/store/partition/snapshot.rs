//! Producer-state snapshots: the producer table and the aborted-transaction index as of a log
//! offset, so recovery replays only the log tail after it.
//!
//! Snapshots are encoded on the partition's thread and written there (the common case) or on
//! the blocking pool (when durable: a deletion, or any snapshot of a log whose start has moved).
//! `SnapshotFile` orders those writes: one encoded later is never replaced by one encoded
//! earlier, whichever thread finishes last.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use serde::{Deserialize, Serialize};
use thiserror::Error;

use super::Partition;
use crate::store::durable::{replace_durably, write_replace};
use crate::store::producer_state::{CompletedTxn, ProducerStateTable};

/// See `Partition::checkpoint_at_stop`.
pub const STOP_CHECKPOINT_BYTES: u64 = 1 << 20;

#[derive(Debug, Error)]
pub enum SnapshotError {
    #[error("producer snapshot not encoded: {0}")]
    Encode(#[from] serde_json::Error),
    #[error("producer snapshot not written: {0}")]
    Write(#[from] std::io::Error),
}

#[derive(Serialize, Deserialize)]
pub(super) struct Snapshot {
    /// The table and the aborted list reflect every batch below this offset.
    pub offset: i64,
    pub table: ProducerStateTable,
    #[serde(default)]
    pub aborted: Vec<CompletedTxn>,
}

/// Epoch `epoch`'s snapshot file (store::cluster::seal: each leader epoch writes its own).
fn snapshot_path(dir: &Path, epoch: i32) -> PathBuf {
    dir.join(crate::store::cluster::seal::tagged("producer-state", ".json", epoch))
}

/// Epoch `epoch`'s snapshot in `dir`, if there is a readable one.
pub(super) fn read_snapshot(dir: &Path, epoch: i32) -> Option<Snapshot> {
    std::fs::read(snapshot_path(dir, epoch)).ok().and_then(|b| serde_json::from_slice(&b).ok())
}

/// One partition's snapshot file, shared with the blocking threads that write it.
#[derive(Debug)]
pub struct SnapshotFile {
    path: PathBuf,
    /// The generation of the last snapshot encoded (on the partition's thread only).
    encoded: AtomicU64,
    written: Mutex<Written>,
}

/// What the file holds: the generation it was encoded as (0: none written by this process)
/// and whether it is durable.
#[derive(Debug, Default)]
struct Written {
    generation: u64,
    durable: bool,
}

impl SnapshotFile {
    pub(super) fn new(dir: &Path, epoch: i32) -> Arc<SnapshotFile> {
        Arc::new(SnapshotFile {
            path: snapshot_path(dir, epoch),
            encoded: AtomicU64::new(0),
            written: Mutex::new(Written::default()),
        })
    }

    /// The generation of a snapshot being encoded now. Generations only order the writes: one
    /// encoded and never written leaves a gap.
    fn next_generation(&self) -> u64 {
        self.encoded.fetch_add(1, Ordering::Relaxed) + 1
    }

    /// Writes `bytes`, encoded as `generation`, unless a later generation is there already: a
    /// deletion still running on the blocking pool must not put back the producers of an
    /// earlier log end over a snapshot taken after a later deletion removed the segments that
    /// describe them. A durable write that finds a later one there makes that one durable
    /// instead, so the deletion relying on it may unlink its segments.
    fn write(&self, generation: u64, bytes: &[u8], durable: bool) -> std::io::Result<()> {
        // A poisoned lock only means another write panicked: the value it guards is still right.
        let mut written = self.written.lock().unwrap_or_else(|p| p.into_inner());
        if generation <= written.generation {
            if durable && !written.durable {
                crate::store::durable::sync_file_and_dir(&self.path)?;
                written.durable = true;
            }
            return Ok(());
        }
        if durable {
            replace_durably(&self.path, bytes)?;
        } else {
            write_replace(&self.path, bytes)?;
        }
        *written = Written { generation, durable };
        Ok(())
    }
}

/// One encoded snapshot, to be written where its caller may block (see `run`).
#[derive(Debug)]
pub struct SnapshotWrite {
    file: Arc<SnapshotFile>,
    generation: u64,
    /// The log end and size it was taken at.
    offset: i64,
    size: u64,
    bytes: Vec<u8>,
    durable: bool,
}

impl SnapshotWrite {
    /// Whether `run` fsyncs (then it belongs on a blocking thread).
    pub fn is_durable(&self) -> bool {
        self.durable
    }

    pub fn run(self) -> std::io::Result<()> {
        self.file.write(self.generation, &self.bytes, self.durable)
    }
}

impl Partition {
    /// Snapshots the producer state as of the log end and writes it here, fsyncing when the
    /// snapshot must be durable (see `encode_snapshot`).
    pub fn write_snapshot(&mut self) -> Result<(), SnapshotError> {
        Ok(self.snapshot()?.run()?)
    }

    /// The producer state as of the log end, encoded and marked as the last snapshot; the
    /// caller writes it. Durable once the log start has moved (DeleteRecords, retention): the
    /// producers the removed segments described are then only in the snapshot, so a newer one
    /// must not replace it with a file a power loss can empty; likewise once the log cleaner
    /// removed batches (eos-rules 68). Before that, losing or finding
    /// an empty snapshot only makes recovery replay more of the log.
    pub fn snapshot(&mut self) -> Result<SnapshotWrite, SnapshotError> {
        let durable = self.log_start_offset() > 0 || self.log_cleaned;
        let write = self.encode_snapshot(durable)?;
        self.mark_snapshot(&write);
        Ok(write)
    }

    /// The snapshot as of the log end, encoded; `mark_snapshot` once it will be written.
    pub(super) fn encode_snapshot(&self, durable: bool) -> Result<SnapshotWrite, SnapshotError> {
        let offset = self.log.next_offset();
        let snap = Snapshot { offset, table: self.producers.clone(), aborted: self.txns.aborted().to_vec() };
        let bytes = serde_json::to_vec(&snap)?;
        Ok(SnapshotWrite {
            file: Arc::clone(&self.snapshot_file),
            generation: self.snapshot_file.next_generation(),
            offset,
            size: self.log.size_bytes(),
            bytes,
            durable,
        })
    }

    /// `write` is the last snapshot: the next one is due when the log moves past it or the
    /// producer state changes.
    pub(super) fn mark_snapshot(&mut self, write: &SnapshotWrite) {
        self.snapshot_offset = write.offset;
        self.snapshot_size = write.size;
        self.producers_touched = false;
    }

    /// At a clean stop, after the final fsync: the recovery point and the producer snapshot are
    /// written only when the log grew by STOP_CHECKPOINT_BYTES since they were (or the producer
    /// state changed without it): the next start verifies and replays less than that per
    /// partition, and a broker leading 100,000 partitions stops in seconds, not minutes.
    pub fn checkpoint_at_stop(&mut self) -> Result<(), SnapshotError> {
        if self.log.grown_since_recovery_point() >= STOP_CHECKPOINT_BYTES {
            self.log.checkpoint_recovery_point(self.log.next_offset())?;
        }
        let grown = self.log.size_bytes().saturating_sub(self.snapshot_size);
        if grown >= STOP_CHECKPOINT_BYTES || self.producers_touched {
            self.write_snapshot()?;
        }
        Ok(())
    }

    /// Bounds the replay after a crash: a snapshot to write only when the log moved or the
    /// producer state changed since the last one (a broker stopping with 100,000 idle
    /// partitions writes none), and none while an earlier one is still to be written (each
    /// `SnapshotWrite` holds the file), so the blocking pool holds at most one periodic
    /// snapshot per partition however slow the disk.
    pub fn snapshot_if_changed(&mut self) -> Option<Result<SnapshotWrite, SnapshotError>> {
        let due = self.log.next_offset() != self.snapshot_offset || self.producers_touched;
        (due && Arc::strong_count(&self.snapshot_file) == 1).then(|| self.snapshot())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn snapshot_at(offset: i64) -> Vec<u8> {
        serde_json::to_vec(&Snapshot { offset, table: ProducerStateTable::new(), aborted: Vec::new() }).unwrap()
    }

    #[test]
    fn a_snapshot_encoded_earlier_never_replaces_one_encoded_later() {
        let dir = tempfile::tempdir().unwrap();
        let file = SnapshotFile::new(dir.path(), 0);
        file.write(2, &snapshot_at(20), true).unwrap();
        // The earlier deletion's write finishes last: the later snapshot stays.
        file.write(1, &snapshot_at(10), true).unwrap();
        assert_eq!(read_snapshot(dir.path(), 0).unwrap().offset, 20);
        file.write(3, &snapshot_at(30), false).unwrap();
        assert_eq!(read_snapshot(dir.path(), 0).unwrap().offset, 30);
    }

    #[test]
    fn a_durable_write_after_its_partition_was_deleted_does_not_bring_the_directory_back() {
        let parent = tempfile::tempdir().unwrap();
        let dir = parent.path().join("t-0");
        std::fs::create_dir(&dir).unwrap();
        let file = SnapshotFile::new(&dir, 0);
        // The topic is deleted while the write waits on the blocking pool.
        std::fs::remove_dir(&dir).unwrap();
        assert!(file.write(1, &snapshot_at(10), true).is_err());
        assert!(!dir.exists());
    }

    #[test]
    fn a_durable_write_that_finds_a_later_snapshot_leaves_it_and_marks_it_durable() {
        let dir = tempfile::tempdir().unwrap();
        let file = SnapshotFile::new(dir.path(), 0);
        file.write(2, &snapshot_at(20), false).unwrap();
        file.write(1, &snapshot_at(10), true).unwrap();
        assert_eq!(read_snapshot(dir.path(), 0).unwrap().offset, 20);
        assert!(file.written.lock().unwrap().durable);
    }
}
