//! Transactions on one partition: markers end them (eos-rules 45-49), the open ones and the
//! ones whose marker is not yet durable hold back the last stable offset (51), and the aborted
//! ones form the index read_committed fetches get (52).

use std::collections::VecDeque;

use super::{Partition, PartitionError};
use crate::store::batch::BatchHeader;
use crate::store::control;
use crate::store::log::LogError;
use crate::store::producer_state::{CompletedTxn, ProducerStateTable};

/// The aborted-transaction index (aborted transactions still in the log, in marker order) and
/// the transactions whose marker the high watermark has not passed yet.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TxnIndex {
    aborted: Vec<CompletedTxn>,
    /// (first offset, marker offset) of the transactions ended by a marker at or above the high
    /// watermark, in marker order: Kafka's unreplicatedTxns, here "not yet fsynced".
    unreplicated: VecDeque<(i64, i64)>,
}

impl TxnIndex {
    /// At recovery everything read is durable: no marker waits for the high watermark.
    pub fn from_aborted(aborted: Vec<CompletedTxn>) -> TxnIndex {
        TxnIndex { aborted, unreplicated: VecDeque::new() }
    }

    pub fn aborted(&self) -> &[CompletedTxn] {
        &self.aborted
    }

    /// eos-rules 49: a transaction a marker ended; only aborts enter the index. Until the high
    /// watermark passes its marker it still holds back the last stable offset (51).
    pub fn record(&mut self, done: Option<CompletedTxn>) {
        if let Some(t) = &done {
            self.unreplicated.push_back((t.first_offset, t.last_offset));
        }
        self.aborted.extend(done.filter(|t| t.aborted));
    }

    /// eos-rules 51: the high watermark moved to `high_watermark`; the transactions whose marker
    /// lies below it are stable (Kafka's ProducerStateManager.onHighWatermarkUpdated).
    pub fn advance(&mut self, high_watermark: i64) {
        while self.unreplicated.front().is_some_and(|(_, marker)| *marker < high_watermark) {
            self.unreplicated.pop_front();
        }
    }

    /// The first offset of the earliest transaction whose marker the high watermark has not
    /// passed (`advance` drops the others at every move of the high watermark).
    pub fn first_unreplicated_offset(&self) -> Option<i64> {
        self.unreplicated.iter().map(|(first, _)| *first).min()
    }

    /// The log cleaner removed the ABORT markers at `offsets` (their data went before).
    pub fn forget_markers(&mut self, offsets: &[i64]) {
        let gone: std::collections::HashSet<i64> = offsets.iter().copied().collect();
        self.aborted.retain(|t| !gone.contains(&t.last_offset));
    }

    /// Only the aborted transactions `keep` says are still in the log.
    pub fn retain(&mut self, keep: impl FnMut(&CompletedTxn) -> bool) {
        self.aborted.retain(keep);
    }

    /// Retention removed everything below `log_start_offset`.
    pub fn truncate_head(&mut self, log_start_offset: i64) {
        self.aborted.retain(|t| t.last_offset >= log_start_offset);
    }

    /// eos-rules 52: (producer id, first offset) of the aborted transactions overlapping
    /// [from, upper). The index is in marker order: skip what ended before `from`.
    pub fn overlapping(&self, from: i64, upper: i64) -> Vec<(i64, i64)> {
        let start = self.aborted.partition_point(|t| t.last_offset < from);
        self.aborted[start..]
            .iter()
            .filter(|t| t.first_offset < upper)
            .map(|t| (t.producer_id, t.first_offset))
            .collect()
    }
}

/// eos-rules 51: the last stable offset is the first offset of the earliest transaction that is
/// open or whose marker the high watermark has not passed (Kafka's firstUnstableOffset: a marker
/// not yet durable may be lost, and the transaction be open again after a restart), never above
/// the high watermark, and never below the log start (a DeleteRecords may move the start past an
/// open transaction's first offset: Kafka's maybeIncrementFirstUnstableOffset).
pub fn last_stable_offset(producers: &ProducerStateTable, txns: &TxnIndex, high_watermark: i64, log_start: i64) -> i64 {
    let unstable = [producers.first_unstable_offset(), txns.first_unreplicated_offset()];
    let lso = unstable.into_iter().flatten().fold(high_watermark, i64::min);
    lso.max(log_start.min(high_watermark))
}

/// The transaction version a WriteTxnMarkers marker is validated under: v2 (KIP-1228) carries
/// it per marker; v0/v1 carry none, which is legacy validation (eos-rules 46/47).
pub fn marker_txn_version(request_version: i16, transaction_version: i8) -> i8 {
    if request_version >= 2 {
        transaction_version
    } else {
        0
    }
}

impl Partition {
    /// Checks and appends a COMMIT/ABORT marker for `producer_id` (eos-rules 45-49). Returns the
    /// marker's header: it is durable once the high watermark passes its offset.
    pub fn write_marker(
        &mut self,
        producer_id: i64,
        producer_epoch: i16,
        commit: bool,
        coordinator_epoch: i32,
        txn_version: i8,
        now_ms: i64,
    ) -> Result<BatchHeader, PartitionError> {
        if self.offline {
            return Err(PartitionError::Offline);
        }
        // eos-rules 46-48: epoch checks by the marker's transaction version (47 is KIP-1228).
        self.producers.check_marker(producer_id, producer_epoch, coordinator_epoch, txn_version)?;
        // eos-rules 45: a control batch with one marker record.
        let marker = control::Marker { commit, coordinator_epoch };
        match self.log.append(control::marker_batch(producer_id, producer_epoch, marker, now_ms)) {
            Ok(h) => {
                // eos-rules 49: the marker ends the open transaction; aborts enter the index.
                let done = self.producers.record_marker(
                    producer_id,
                    producer_epoch,
                    coordinator_epoch,
                    h.base_offset,
                    commit,
                    now_ms,
                );
                self.txns.record(done);
                Ok(h)
            }
            Err(LogError::InvalidBatch(e)) => Err(PartitionError::LogRefused(e)),
            // As for appends: not written, the coordinator retries the marker.
            Err(e) => Err(PartitionError::NotWritten(e)),
        }
    }
}
