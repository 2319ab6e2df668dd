//! DeleteRecords (KIP-107) on one partition, as Apache Kafka's leader does it
//! (Partition.deleteRecordsOnLeader, UnifiedLog.maybeIncrementLogStartOffset): the log start
//! moves forward to the requested offset (-1: the high watermark), never past the high
//! watermark; whole segments below it go. Producer state stays (Kafka's
//! ProducerStateManager.onLogStartOffsetIncremented drops none: a producer whose batches were
//! all deleted keeps its sequence and epoch until producer.id.expiration.ms); an open
//! transaction that began below the new start stays open, and the last stable offset is never
//! below the log start (UnifiedLog.maybeIncrementFirstUnstableOffset).

use std::path::PathBuf;
use std::sync::Arc;

use thiserror::Error;

use super::{Partition, SnapshotError, SnapshotWrite};
use crate::error_code::ResponseError;
use crate::store::cluster::fence::{FenceError, SelfFence};
use crate::store::log::start_offset::LogStartFile;

/// DeleteRecordsRequest.HIGH_WATERMARK: delete everything below the high watermark.
pub const HIGH_WATERMARK: i64 = -1;

#[derive(Debug, Error)]
pub enum DeleteRecordsError {
    /// A negative offset other than -1.
    #[error("the offset {0} is not valid")]
    InvalidOffset(i64),
    #[error("cannot move the log start to {offset}: above the high watermark {high_watermark}")]
    AboveHighWatermark { offset: i64, high_watermark: i64 },
    /// cleanup.policy without `delete` (a compacted topic).
    #[error("records cannot be deleted under a cleanup.policy without delete")]
    Policy,
    #[error("partition offline")]
    Offline,
    #[error(transparent)]
    Snapshot(#[from] SnapshotError),
}

impl DeleteRecordsError {
    /// The partition error Kafka answers (ReplicaManager.deleteRecordsOnLocalLog).
    pub fn error(&self) -> ResponseError {
        match self {
            DeleteRecordsError::InvalidOffset(_) | DeleteRecordsError::AboveHighWatermark { .. } => {
                ResponseError::OffsetOutOfRange
            }
            DeleteRecordsError::Policy => ResponseError::PolicyViolation,
            DeleteRecordsError::Offline | DeleteRecordsError::Snapshot(_) => ResponseError::KafkaStorageError,
        }
    }

    pub fn code(&self) -> i16 {
        self.error().code()
    }
}

/// The log start a DeleteRecords of `requested` leaves: -1 is the high watermark; any other
/// negative offset, or one above the high watermark, is OFFSET_OUT_OF_RANGE; an offset at or
/// below the current start changes nothing.
pub fn new_log_start(requested: i64, log_start: i64, high_watermark: i64) -> Result<i64, DeleteRecordsError> {
    let offset = if requested == HIGH_WATERMARK { high_watermark } else { requested };
    if offset < 0 {
        return Err(DeleteRecordsError::InvalidOffset(offset));
    }
    if offset > high_watermark {
        return Err(DeleteRecordsError::AboveHighWatermark { offset, high_watermark });
    }
    Ok(offset.max(log_start))
}

/// Records are deleted only under a cleanup.policy holding `delete` (Kafka's
/// `LogConfig.delete`): `deletes` is that of the topic's effective policy, its own or the
/// broker's default (store::configs::topic::deletes_by_retention).
pub fn check_cleanup_policy(deletes: bool) -> Result<(), DeleteRecordsError> {
    if deletes {
        Ok(())
    } else {
        Err(DeleteRecordsError::Policy)
    }
}

/// Kafka's internal topics (`Topic.isInternal`), whose records DeleteRecords never deletes
/// (INVALID_TOPIC_EXCEPTION).
pub fn check_not_internal(topic: &str) -> Result<(), ResponseError> {
    const INTERNAL: [&str; 3] = ["__consumer_offsets", "__transaction_state", "__share_group_state"];
    if INTERNAL.contains(&topic) {
        return Err(ResponseError::InvalidTopicException);
    }
    Ok(())
}

/// Why a [`Deletion`] did not complete.
#[derive(Debug, Error)]
pub enum DeletionError {
    /// The new log start is not durable: the request fails (KAFKA_STORAGE_ERROR).
    #[error("log start not written: {0}")]
    NotDurable(std::io::Error),
    /// The start is durable but a file was left behind; the next open deletes what lies below it.
    #[error("cleanup after moving the log start: {0}")]
    Cleanup(std::io::Error),
    /// The start is durable, but this broker was fenced (store::cluster::fence): another broker
    /// took the partition over and may not have seen it, so it is not acknowledged
    /// (NOT_LEADER_OR_FOLLOWER) and no segment is unlinked.
    #[error("not deleted: {0}")]
    Fenced(FenceError),
}

/// The file work of a DeleteRecords, for a blocking thread: the new start made durable, then the
/// producer snapshot (so the producers described only by the deleted segments survive a crash),
/// then the segment files removed.
#[derive(Debug)]
pub struct Deletion {
    pub log_start: i64,
    start_file: Arc<LogStartFile>,
    snapshot: Option<SnapshotWrite>,
    segments: Vec<PathBuf>,
}

impl Deletion {
    /// Blocks on fsync and unlink: run it off the actor threads. After the new start and the
    /// snapshot are durable, and before anything is unlinked or answered, `fence` is checked
    /// (self-fence): a broker that lost the partition neither acknowledges the deletion nor
    /// removes files the new owner's seal names.
    pub fn run(self, fence: &SelfFence) -> Result<(), DeletionError> {
        self.start_file.persist(self.log_start).map_err(DeletionError::NotDurable)?;
        if let Some(snapshot) = self.snapshot {
            snapshot.run().map_err(DeletionError::Cleanup)?;
        }
        match fence.check() {
            Ok(()) => {}
            Err(e @ FenceError::Fenced { .. }) => return Err(DeletionError::Fenced(e)),
            Err(FenceError::Io(path, e)) => {
                return Err(DeletionError::NotDurable(std::io::Error::new(
                    e.kind(),
                    format!("{}: {e}", path.display()),
                )))
            }
        }
        for p in &self.segments {
            match std::fs::remove_file(p) {
                Err(e) if e.kind() != std::io::ErrorKind::NotFound => return Err(DeletionError::Cleanup(e)),
                _ => {}
            }
        }
        Ok(())
    }

    /// The segment files this deletion removes.
    pub fn segments(&self) -> &[PathBuf] {
        &self.segments
    }
}

impl Partition {
    /// DeleteRecords up to `requested`: moves the log start in memory (readers see it at once,
    /// as in Kafka) and returns the file work to run before answering.
    pub fn delete_records_before(&mut self, requested: i64) -> Result<Deletion, DeleteRecordsError> {
        if self.offline {
            return Err(DeleteRecordsError::Offline);
        }
        let current = self.log_start_offset();
        let start = new_log_start(requested, current, self.high_watermark)?;
        if start == current {
            return Ok(Deletion {
                log_start: start,
                start_file: self.log.start_file(),
                snapshot: None,
                segments: Vec::new(),
            });
        }
        // Encoded before anything changes: a failure leaves the partition as it was.
        let encoded = self.encode_snapshot(true)?;
        let segments = self.log.advance_start(start);
        Ok(self.deletion(start, segments, Some(encoded)))
    }

    /// The file work once the log start moved to `start` and `segments` left the log
    /// (DeleteRecords or retention): aborted transactions that ended below the start overlap no
    /// read any more; the producer snapshot `encoded` (offset, bytes) goes with it when files go.
    pub(super) fn deletion(&mut self, start: i64, segments: Vec<PathBuf>, encoded: Option<SnapshotWrite>) -> Deletion {
        self.txns.truncate_head(start);
        // Only a deletion that removes files needs (and writes) the snapshot.
        let snapshot = encoded.filter(|_| !segments.is_empty());
        if let Some(write) = &snapshot {
            self.mark_snapshot(write);
        }
        Deletion { log_start: start, start_file: self.log.start_file(), snapshot, segments }
    }
}

#[cfg(test)]
#[path = "delete_records_tests.rs"]
mod tests;
