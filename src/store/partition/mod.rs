//! One partition's functional core: the log, the producer state table and the transaction index,
//! and every rule a partition leader enforces on them (eos-rules 14-29, 45-52). No actors, no
//! threads: the partition actor turns messages into calls here and runs the fsync round trip.
//! Everything below the high watermark is durable; the actor moves it once the syncer says so.

mod clean;
mod delete_records;
mod offsets;
mod produce;
mod recovery;
mod snapshot;
mod txn_index;

#[cfg(test)]
mod takeover_tests;
#[cfg(test)]
mod tests;

use std::path::PathBuf;
use std::sync::Arc;

use thiserror::Error;

use crate::error_code::ResponseError;
use crate::store::log::{Log, LogConfig, LogError, SyncSet};
use crate::store::producer_state::{ProducerEntry, ProducerStateError, ProducerStateTable};
use crate::store::records::RecordsError;
use crate::store::validate::ValidationError;

pub use clean::{CleanWork, CleanedFiles};
pub use delete_records::{check_cleanup_policy, check_not_internal, DeleteRecordsError, Deletion, DeletionError};
pub use offsets::Fetched;
pub use produce::{check_parsed_partition_data, check_partition_data, check_request, Produced};
use snapshot::SnapshotFile;
pub use snapshot::{SnapshotError, SnapshotWrite};
pub use txn_index::{marker_txn_version, TxnIndex};

/// Why a partition refused a request.
#[derive(Debug, Error)]
pub enum PartitionError {
    /// The log could not be opened, or an fsync failed: nothing is read or written any more.
    #[error("partition offline")]
    Offline,
    /// A producer-state rule refused the batch or marker (eos-rules 14-20, 26-28, 46-48).
    #[error(transparent)]
    Rejected(#[from] ProducerStateError),
    /// The batch's shape is not a client's (eos-rules 14, `store::validate`).
    #[error(transparent)]
    Shape(#[from] ValidationError),
    /// The log refused the batch and stayed unchanged.
    #[error("refused by the log: {0}")]
    LogRefused(String),
    /// Writing failed before the log end moved: nothing counts as written, the sender retries.
    #[error("not written: {0}")]
    NotWritten(LogError),
    #[error("offset out of range")]
    OffsetOutOfRange,
    #[error("read: {0}")]
    Read(LogError),
    /// ListOffsets by time met a batch whose records cannot be walked.
    #[error("records: {0}")]
    Records(RecordsError),
}

impl PartitionError {
    /// The Kafka error an append (or read) answers with.
    pub fn error(&self) -> ResponseError {
        match self {
            PartitionError::Offline | PartitionError::NotWritten(_) | PartitionError::Read(_) => {
                ResponseError::KafkaStorageError
            }
            PartitionError::Rejected(e) => e.error(),
            PartitionError::Shape(_) | PartitionError::LogRefused(_) => ResponseError::InvalidRecord,
            PartitionError::OffsetOutOfRange => ResponseError::OffsetOutOfRange,
            PartitionError::Records(_) => ResponseError::CorruptMessage,
        }
    }

    pub fn code(&self) -> i16 {
        self.error().code()
    }

    /// The Kafka error a WriteTxnMarkers answer carries: a marker the log refuses is our bug,
    /// not the coordinator's (UNKNOWN_SERVER_ERROR); eos-rules 50 lists the others.
    pub fn marker_code(&self) -> i16 {
        match self {
            PartitionError::LogRefused(_) => ResponseError::UnknownServerError.code(),
            e => e.code(),
        }
    }

    /// eos-rules 22: a refusal by the rules carries the LogStartOffset; storage errors do not.
    pub fn carries_log_start(&self) -> bool {
        matches!(self, PartitionError::Rejected(_) | PartitionError::Shape(_) | PartitionError::LogRefused(_))
    }
}

pub struct Partition {
    dir: PathBuf,
    log: Log,
    producers: ProducerStateTable,
    txns: TxnIndex,
    /// Everything below is durable and readable.
    high_watermark: i64,
    offline: bool,
    /// Log end offset at the last producer-state snapshot.
    snapshot_offset: i64,
    /// The log's size at the last snapshot (0 when unknown).
    snapshot_size: u64,
    /// The producer state changed since the last snapshot without the log moving (a fence,
    /// expiry, retention).
    producers_touched: bool,
    /// Where snapshots go (see `SnapshotFile`).
    snapshot_file: Arc<SnapshotFile>,
    /// The log cleaner removed batches: the log alone no longer rebuilds the producer state, so
    /// every snapshot is durable (eos-rules 68).
    log_cleaned: bool,
}

impl Partition {
    /// The topic's log settings changed (AlterConfigs): used from the next append on.
    pub fn set_log_config(&mut self, config: LogConfig) {
        self.log.set_config(config);
    }

    /// A partition whose log could not be opened: it owns no file, refuses every read and write
    /// with `Offline`, and never writes a snapshot, so what is on disk stays as it was.
    pub fn offline(dir: PathBuf, log_config: LogConfig) -> Partition {
        Partition {
            log: Log::offline(&dir, log_config),
            producers: ProducerStateTable::new(),
            txns: TxnIndex::default(),
            high_watermark: 0,
            offline: true,
            snapshot_offset: 0,
            snapshot_size: 0,
            producers_touched: false,
            snapshot_file: SnapshotFile::new(&dir, 0),
            log_cleaned: false,
            dir,
        }
    }

    pub fn is_offline(&self) -> bool {
        self.offline
    }

    /// A failed fsync leaves the log in an unknown state: stop serving it.
    pub fn go_offline(&mut self) {
        self.offline = true;
    }

    pub fn log_start_offset(&self) -> i64 {
        self.log.log_start_offset()
    }

    pub fn log_end_offset(&self) -> i64 {
        self.log.next_offset()
    }

    /// Whether appended data waits for an fsync before the high watermark can cover it.
    pub fn needs_sync(&self) -> bool {
        !self.offline && self.log.next_offset() > self.high_watermark
    }

    /// Makes what recovery found durable, segment by segment (see `durable::syncfs_flushes`).
    pub fn sync_recovered(&self) -> Result<(), LogError> {
        self.log.sync_past_recovery_point()
    }

    /// What must be fsynced to make everything appended so far durable.
    pub fn sync_handles(&mut self) -> SyncSet {
        self.log.sync_handles()
    }

    /// At a clean stop, after the last fsync: the zeros ahead of the appends cut off.
    pub fn trim_zeros(&mut self) -> Result<(), LogError> {
        if self.offline {
            return Ok(());
        }
        self.log.trim_active()
    }

    /// At a stop: the log start a DeleteRecords moved, durable (blocks on fsync; nothing to do
    /// for a partition nobody deleted records of).
    pub fn persist_log_start(&self) -> std::io::Result<()> {
        if self.offline {
            return Ok(());
        }
        self.log.persist_start()
    }

    /// Everything below `offset` is on disk: the next recovery may start there.
    pub fn checkpoint_recovery_point(&mut self, offset: i64) -> std::io::Result<()> {
        self.log.checkpoint_recovery_point(offset)
    }

    /// The bytes of the log's batches (Kafka's `UnifiedLog.size`): no zeros written ahead, no
    /// index or state file.
    pub fn log_size(&self) -> u64 {
        self.log.size_bytes()
    }

    /// DescribeProducers: the active producers.
    pub fn producers(&self) -> Vec<ProducerEntry> {
        self.producers.described()
    }

    /// Producer ids with state here (kafka_server_replicamanager_produceridcount).
    pub fn producer_count(&self) -> usize {
        self.producers.len()
    }

    /// A coordinator bumped `producer_id` to `epoch`: older epochs are refused from now on.
    pub fn fence(&mut self, producer_id: i64, epoch: i16, now_ms: i64) {
        self.producers.fence(producer_id, epoch, now_ms);
        self.producers_touched = true;
    }

    /// eos-rules 27/28: None when a transaction is already open here at that epoch, else a
    /// guard to verify with the coordinator; eos-rules 18: a lower epoch is refused at once.
    pub fn begin_verification(
        &mut self,
        producer_id: i64,
        producer_epoch: i16,
        base_sequence: i32,
        tv2: bool,
        now_ms: i64,
    ) -> Result<Option<u64>, ProducerStateError> {
        self.producers.begin_verification(producer_id, producer_epoch, base_sequence, tv2, now_ms)
    }

    /// Retention: takes whole segments past the limits out of the log (below the high
    /// watermark; the active one too, see `Log::enforce_retention`). As Kafka
    /// (ProducerStateManager.onLogStartOffsetIncremented) the producers stay until they expire
    /// (eos-rules 23): an idle idempotent producer whose records expired goes on at its next
    /// sequence; only aborted transactions wholly below the new start go. Returns the file work
    /// for a blocking thread (the new start made durable, the producer snapshot written, so the
    /// producers the removed segments described survive a crash, then the files removed), None
    /// when nothing went.
    pub fn enforce_retention(&mut self, now_ms: i64) -> Option<Deletion> {
        let removed = self.log.enforce_retention(now_ms, self.high_watermark);
        if removed.is_empty() {
            return None;
        }
        // Durable: the removed segments' producers are then only in the snapshot.
        let encoded = self
            .encode_snapshot(true)
            .map_err(|e| tracing::warn!(dir = %self.dir.display(), "retention: producer snapshot not encoded: {e}"))
            .ok();
        Some(self.deletion(self.log_start_offset(), removed, encoded))
    }

    /// eos-rules 23: idle producers without an open transaction expire.
    pub fn expire_producers(&mut self, now_ms: i64, expiration_ms: i64) -> usize {
        let n = self.producers.expire(now_ms, expiration_ms);
        self.producers_touched |= n > 0;
        n
    }
}
