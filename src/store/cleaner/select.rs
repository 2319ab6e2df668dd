//! Which part of a log a pass may clean, how dirty a log is, and which log to clean first
//! (Kafka's LogCleanerManager). eos-rules 62.

use super::Compaction;

/// What selection needs of one segment, oldest first; the last one is the active segment.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SegmentStat {
    pub base: i64,
    pub next_offset: i64,
    pub size: u64,
    pub max_timestamp: i64,
    /// The max timestamp of the segment's first batch (-1: empty).
    pub first_batch_timestamp: i64,
}

/// How dirty a log is, and up to where a pass may clean it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Dirtiness {
    /// Bytes of whole cleanable segments at or after the first dirty offset.
    pub dirty_bytes: u64,
    /// Bytes of the segments before the first dirty offset.
    pub clean_bytes: u64,
    /// dirty / (clean + dirty): Kafka's cleanable ratio.
    pub ratio: f64,
    /// A pass cleans the segments wholly below this offset.
    pub cleanable_end: i64,
    /// How long past max.compaction.lag.ms the oldest dirty record is (0: not past it).
    pub compaction_delay_ms: i64,
}

impl Dirtiness {
    /// eos-rules 62: cleanable when some dirty bytes can be cleaned and the ratio reaches
    /// min.cleanable.dirty.ratio, or a record is past max.compaction.lag.ms (KIP-354).
    pub fn needs_cleaning(&self, c: &Compaction) -> bool {
        self.dirty_bytes > 0 && (self.ratio >= c.min_cleanable_dirty_ratio || self.compaction_delay_ms > 0)
    }
}

/// eos-rules 62: the first offset a pass must not clean: never the active segment, never at or
/// past the last stable offset (an open transaction's data may still be aborted), never a
/// segment holding a record newer than min.compaction.lag.ms; whole segments only.
pub fn cleanable_end(segs: &[SegmentStat], first_dirty: i64, last_stable: i64, now_ms: i64, c: &Compaction) -> i64 {
    let Some((active, older)) = segs.split_last() else { return first_dirty };
    let mut end = older.first().map_or(active.base, |s| s.base);
    for s in older {
        let too_new = s.next_offset > first_dirty && s.max_timestamp > now_ms.saturating_sub(c.min_compaction_lag_ms);
        if s.next_offset > last_stable || too_new {
            break;
        }
        end = s.next_offset;
    }
    end
}

/// How dirty the log is (`first_dirty`: where the last pass stopped mapping keys).
pub fn dirtiness(segs: &[SegmentStat], first_dirty: i64, last_stable: i64, now_ms: i64, c: &Compaction) -> Dirtiness {
    let end = cleanable_end(segs, first_dirty, last_stable, now_ms, c);
    let mut d = Dirtiness { dirty_bytes: 0, clean_bytes: 0, ratio: 0.0, cleanable_end: end, compaction_delay_ms: 0 };
    for s in segs.iter().filter(|s| s.next_offset <= end) {
        if s.next_offset <= first_dirty {
            d.clean_bytes += s.size;
        } else {
            d.dirty_bytes += s.size;
        }
    }
    let total = d.clean_bytes + d.dirty_bytes;
    d.ratio = if total == 0 { 0.0 } else { d.dirty_bytes as f64 / total as f64 };
    // KIP-354: the first dirty segment's first batch dates the oldest uncompacted record.
    if c.max_compaction_lag_ms < i64::MAX {
        if let Some(s) = segs.iter().find(|s| s.next_offset > first_dirty && s.first_batch_timestamp >= 0) {
            let due = s.first_batch_timestamp.saturating_add(c.max_compaction_lag_ms);
            d.compaction_delay_ms = now_ms.saturating_sub(due).max(0);
        }
    }
    d
}

/// KIP-354: whether the active segment must roll so that its records can be compacted in time
/// (Kafka rolls a compacted log's active segment after max.compaction.lag.ms).
pub fn must_roll_active(active: &SegmentStat, now_ms: i64, c: &Compaction) -> bool {
    c.max_compaction_lag_ms < i64::MAX
        && active.size > 0
        && active.first_batch_timestamp >= 0
        && now_ms.saturating_sub(active.first_batch_timestamp) > c.max_compaction_lag_ms
}

/// eos-rules 62: of the logs that need cleaning, the one with the highest ratio (Kafka's
/// filthiest log).
pub fn dirtiest<'a, K>(logs: impl IntoIterator<Item = (&'a K, &'a Dirtiness, &'a Compaction)>) -> Option<&'a K> {
    logs.into_iter()
        .filter(|(_, d, c)| d.needs_cleaning(c))
        .max_by(|a, b| a.1.ratio.total_cmp(&b.1.ratio))
        .map(|(k, _, _)| k)
}

/// Consecutive segments, each group rewritten into one file of at most `max_bytes` (Kafka's
/// groupSegmentsBySize; a segment larger than that is a group alone): index ranges into `segs`.
pub fn group_segments(segs: &[SegmentStat], max_bytes: u64) -> Vec<std::ops::Range<usize>> {
    let mut groups = Vec::new();
    let mut start = 0;
    let mut size = 0u64;
    for (i, s) in segs.iter().enumerate() {
        if i > start && size.saturating_add(s.size) > max_bytes {
            groups.push(start..i);
            start = i;
            size = 0;
        }
        size = size.saturating_add(s.size);
    }
    if start < segs.len() {
        groups.push(start..segs.len());
    }
    groups
}
