//! Producer-state snapshots: the producer table and the aborted-transaction index as of a log
//! offset, so recovery replays only the log tail after it.

use std::path::Path;

use serde::{Deserialize, Serialize};
use thiserror::Error;

use super::Partition;
use crate::store::producer_state::{CompletedTxn, ProducerStateTable};
use crate::store::topics::write_replace;

pub const SNAPSHOT_FILE: &str = "producer-state.json";

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

/// The snapshot in `dir`, if there is a readable one.
pub(super) fn read_snapshot(dir: &Path) -> Option<Snapshot> {
    std::fs::read(dir.join(SNAPSHOT_FILE)).ok().and_then(|b| serde_json::from_slice(&b).ok())
}

impl Partition {
    /// Snapshots the producer state as of the log end. Not fsynced: a lost or empty snapshot
    /// only makes recovery replay more of the log (an unreadable one is ignored).
    pub fn write_snapshot(&mut self) -> Result<(), SnapshotError> {
        let (offset, bytes) = self.encode_snapshot()?;
        write_replace(&self.dir.join(SNAPSHOT_FILE), &bytes)?;
        self.mark_snapshot(offset);
        Ok(())
    }

    /// The snapshot as of the log end, encoded, and that offset.
    pub(super) fn encode_snapshot(&self) -> Result<(i64, Vec<u8>), SnapshotError> {
        let offset = self.log.next_offset();
        let snap = Snapshot { offset, table: self.producers.clone(), aborted: self.txns.aborted().to_vec() };
        Ok((offset, serde_json::to_vec(&snap)?))
    }

    /// A snapshot as of `offset` (the log end) is being written.
    pub(super) fn mark_snapshot(&mut self, offset: i64) {
        self.snapshot_offset = offset;
        self.snapshot_size = self.log.size_bytes();
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

    /// Bounds the replay after a crash: snapshots only when the log moved or the producer state
    /// changed since the last one (a broker stopping with 100,000 idle partitions writes none).
    pub fn snapshot_if_changed(&mut self) -> Option<Result<(), SnapshotError>> {
        (self.log.next_offset() != self.snapshot_offset || self.producers_touched).then(|| self.write_snapshot())
    }
}
