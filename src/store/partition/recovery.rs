//! Opening a partition: the log recovers its segments, then the producer state is rebuilt from
//! the last snapshot plus the batch headers (and markers) after it.

use std::path::PathBuf;

use super::snapshot::{read_snapshot, SnapshotFile};
use super::{Partition, TxnIndex};
use crate::store::control;
use crate::store::log::{Log, LogConfig, LogError, RecoveryInfo};
use crate::store::producer_state::ProducerStateTable;

impl Partition {
    /// Opens the log as its first leader (epoch 0).
    pub fn open(dir: PathBuf, log_config: LogConfig, now_ms: i64) -> Result<(Partition, RecoveryInfo), LogError> {
        Partition::open_at(dir, log_config, now_ms, 0)
    }

    /// Opens the log for leader epoch `epoch` (recovery, or the takeover of a predecessor's
    /// files: store::cluster::seal) and rebuilds producer state from a snapshot plus the log
    /// tail. What it found is not fsynced here: see `durable::sync_filesystem`; a takeover's
    /// seal and first snapshot are written durably here.
    pub fn open_at(
        dir: PathBuf,
        log_config: LogConfig,
        now_ms: i64,
        epoch: i32,
    ) -> Result<(Partition, RecoveryInfo), LogError> {
        let (log, info) = Log::open_at(&dir, log_config, epoch)?;
        let end = log.next_offset();
        // This epoch's snapshot, else the predecessor's if it describes no more than the seal
        // trusts (a cut-off predecessor may have snapshotted batches past it).
        let snapshot = read_snapshot(&dir, epoch).filter(|s| s.offset <= end).or_else(|| {
            let (previous, sealed_end) = log.sealed_from()?;
            read_snapshot(&dir, previous).filter(|s| s.offset <= sealed_end)
        });
        let start = log.log_start_offset();
        // eos-rules 15: does the table know every producer id that ever wrote here (a snapshot
        // of everything before the log start, or a log that never lost its head)?
        let complete = match &snapshot {
            Some(s) => s.offset >= start,
            None => start == 0 && !log.has_cleaned_segments(),
        };
        let (mut producers, mut txns, from) = match snapshot {
            Some(s) => (s.table, TxnIndex::from_aborted(s.aborted), s.offset),
            None => (ProducerStateTable::new(), TxnIndex::default(), start),
        };
        if !complete {
            producers.mark_history_incomplete();
        }
        // Rebuild what the snapshot does not cover from the batch headers (and markers).
        for h in log.headers_from(from)? {
            if !h.is_control() {
                producers.record_append(&h, now_ms);
                continue;
            }
            let batch = log.read(h.base_offset, h.base_offset + 1, h.total_size())?;
            if let Some(m) = control::parse_marker(&batch) {
                // eos-rules 49, replayed.
                let done = producers.record_marker(
                    h.producer_id,
                    h.producer_epoch,
                    m.coordinator_epoch,
                    h.base_offset,
                    m.commit,
                    now_ms,
                );
                txns.record(done);
            }
        }
        if log.has_cleaned_segments() {
            // eos-rules 64: a snapshot written before the cleaner removed an ABORT marker still
            // names its transaction; without the marker a reader would hide the producer's
            // later transactions. Only markers still in the log stay in the index.
            txns.retain(|t| matches!(log.batch_header_at(t.last_offset), Ok(Some(h)) if h.is_control()));
        }
        // The high watermark exposes what recovery found: the caller makes it durable (one
        // syncfs for every partition opened together) before the partition serves, since a
        // power loss after an earlier crash could still take back what sits in the page cache.
        // Every marker replayed above lies below that high watermark (eos-rules 51).
        txns.advance(end);
        let snapshot_size = if from == end { log.size_bytes() } else { 0 };
        let mut partition = Partition {
            snapshot_file: SnapshotFile::new(&dir, epoch),
            dir,
            log,
            producers,
            txns,
            high_watermark: end,
            offline: false,
            snapshot_offset: from,
            snapshot_size,
            producers_touched: false,
            log_cleaned: false,
        };
        partition.log_cleaned = partition.log.has_cleaned_segments();
        if info.took_over_from.is_some() {
            // The producers of this epoch's log in a file of its own, durably, before it serves:
            // it never depends on a predecessor's snapshot again.
            let write = partition.encode_snapshot(true).map_err(|e| LogError::Io(std::io::Error::other(e)))?;
            partition.mark_snapshot(&write);
            write.run()?;
        }
        Ok((partition, info))
    }
}
