//! A compacted partition and the log cleaner (eos-rules 61-70): how dirty it is, the pass it
//! plans with its producer state and aborted transactions, and the files a pass leaves to
//! delete once it is installed.

use std::collections::HashMap;
use std::path::PathBuf;

use super::{Partition, SnapshotWrite};
use crate::store::cleaner::select::{self, Dirtiness};
use crate::store::cleaner::Compaction;
use crate::store::cluster::fence::{FenceError, SelfFence};
use crate::store::log::clean::{CleanJob, Cleaned, PassInputs};

/// A pass for a cleaner thread: the files to clean, what the rules need, and the producer
/// snapshot to make durable before the cleaned files are named (eos-rules 68: the markers a
/// pass removes are then never needed to rebuild the producer state).
#[derive(Debug)]
pub struct CleanWork {
    pub job: CleanJob,
    pub inputs: PassInputs,
    pub snapshot: SnapshotWrite,
}

/// The files an installed pass replaced (and those of groups it could not install), for a
/// blocking thread to delete.
#[derive(Debug)]
pub struct CleanedFiles {
    replaced: Vec<PathBuf>,
    unused: Vec<PathBuf>,
}

impl CleanedFiles {
    pub fn is_empty(&self) -> bool {
        self.replaced.is_empty() && self.unused.is_empty()
    }

    /// Deletes the files, after checking this broker's fence: a broker that lost the partition
    /// deletes nothing (its successor may have listed these files; a check, then the unlinks:
    /// a broker that stalls between the two can still delete them, as for retention).
    pub fn run(self, fence: &SelfFence) -> Result<(), FenceError> {
        fence.check()?;
        for p in self.replaced.iter().chain(&self.unused) {
            match std::fs::remove_file(p) {
                Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
                    tracing::warn!(file = %p.display(), "not deleted after cleaning: {e}");
                }
                _ => {}
            }
        }
        Ok(())
    }
}

impl Partition {
    /// eos-rules 62: how dirty the log is, with the topic's compaction settings (None: the
    /// topic is not compacted, or the partition is offline).
    pub fn dirtiness(&self, now_ms: i64) -> Option<(Dirtiness, Compaction)> {
        let c = self.log.compaction().filter(|_| !self.offline)?;
        let segs = self.log.segment_stats();
        let d = select::dirtiness(&segs, self.log.first_dirty(), self.last_stable_offset(), now_ms, &c);
        Some((d, c))
    }

    /// Whether a pass is due: the log is dirty enough, a record is past max.compaction.lag.ms,
    /// or a delete horizon came.
    pub fn needs_cleaning(&self, now_ms: i64) -> bool {
        self.dirtiness(now_ms).is_some_and(|(d, c)| d.needs_cleaning(&c) || self.log.horizon_due(now_ms))
    }

    /// KIP-354: rolls the active segment of a compacted log once its first record is older than
    /// max.compaction.lag.ms, so that the cleaner can reach it.
    pub fn roll_for_compaction(&mut self, now_ms: i64) {
        let Some(c) = self.log.compaction().filter(|_| !self.offline) else { return };
        let segs = self.log.segment_stats();
        if segs.last().is_some_and(|a| select::must_roll_active(a, now_ms, &c)) {
            if let Err(e) = self.log.roll() {
                tracing::warn!(dir = %self.dir.display(), "compaction could not roll the active segment: {e}");
            }
        }
    }

    /// The pass to run now (None: nothing to clean).
    pub fn plan_cleaning(
        &mut self,
        now_ms: i64,
        dedupe_buffer_bytes: usize,
        max_decoded_bytes: usize,
    ) -> Option<CleanWork> {
        let (d, c) = self.dirtiness(now_ms)?;
        let horizon_due = self.log.horizon_due(now_ms);
        let job = self.log.plan_cleaning(d.cleanable_end, horizon_due)?;
        // eos-rules 66: each producer's last data batch.
        let last_data_offsets: HashMap<i64, i64> =
            self.producers.entries().filter_map(|e| e.batches.back().map(|b| (e.producer_id, b.last_offset))).collect();
        let snapshot = match self.encode_snapshot(true) {
            Ok(s) => s,
            Err(e) => {
                tracing::warn!(dir = %self.dir.display(), "no cleaning: producer snapshot not encoded: {e}");
                return None;
            }
        };
        self.mark_snapshot(&snapshot);
        // From the first cleaning on, the log alone no longer rebuilds the producer state.
        self.log_cleaned = true;
        let inputs = PassInputs {
            aborted: self.txns.aborted().to_vec(),
            last_data_offsets,
            now_ms,
            delete_retention_ms: c.delete_retention_ms,
            dedupe_buffer_bytes,
            max_decoded_bytes,
        };
        Some(CleanWork { job, inputs, snapshot })
    }

    /// Puts a pass's files in place of the segments they cover (eos-rules 68). The aborted
    /// transactions whose markers went leave the aborted index (eos-rules 64): a read_committed
    /// reader keeps an aborted transaction's producer "aborted" until it meets the marker.
    pub fn install_cleaned(&mut self, cleaned: Cleaned) -> CleanedFiles {
        let installed = self.log.install_cleaned(cleaned);
        if !installed.dropped_aborts.is_empty() {
            self.txns.forget_markers(&installed.dropped_aborts);
            self.producers_touched = true;
        }
        CleanedFiles { replaced: installed.replaced, unused: installed.unused }
    }
}
