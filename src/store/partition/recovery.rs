//! Opening a partition: the log recovers its segments, then the producer state is rebuilt from
//! the last snapshot plus the batch headers (and markers) after it.

use std::path::PathBuf;

use super::snapshot::{read_snapshot, SnapshotFile};
use super::{Partition, TxnIndex};
use crate::store::control;
use crate::store::log::{Log, LogConfig, LogError, RecoveryInfo};
use crate::store::producer_state::ProducerStateTable;

impl Partition {
    /// Opens the log (recovery) and rebuilds producer state from the snapshot plus the log tail.
    /// What it found is not fsynced here: see `durable::sync_filesystem`.
    pub fn open(dir: PathBuf, log_config: LogConfig, now_ms: i64) -> Result<(Partition, RecoveryInfo), LogError> {
        let (log, info) = Log::open(&dir, log_config)?;
        let end = log.next_offset();
        let (mut producers, mut txns, from) = match read_snapshot(&dir) {
            Some(s) if s.offset <= end => (s.table, TxnIndex::from_aborted(s.aborted), s.offset),
            _ => (ProducerStateTable::new(), TxnIndex::default(), log.log_start_offset()),
        };
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
        // The high watermark exposes what recovery found: the caller makes it durable (one
        // syncfs for every partition opened together) before the partition serves, since a
        // power loss after an earlier crash could still take back what sits in the page cache.
        let snapshot_size = if from == end { log.size_bytes() } else { 0 };
        let partition = Partition {
            snapshot_file: SnapshotFile::new(&dir),
            dir,
            log,
            producers,
            txns,
            high_watermark: end,
            offline: false,
            snapshot_offset: from,
            snapshot_size,
            producers_touched: false,
        };
        Ok((partition, info))
    }
}
