//! Segmented append-only partition log. Batches are stored exactly as received, with only the
//! base offset patched; reads return them as stored.

pub mod clean;
#[cfg(test)]
mod clean_tests;
pub mod file_cache;
pub mod file_range;
mod open;
mod segment;
pub mod start_offset;

use std::collections::BTreeMap;
use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use bytes::Bytes;
use thiserror::Error;

use super::batch::{BatchHeader, Incoming};
use super::cleaner::Compaction;
use file_cache::FileCache;
use file_range::FileRange;
use segment::{Segment, ZeroAhead};

/// `log.zero_ahead_bytes`'s default: half of it (256 KiB) is written at a time, once per 16
/// batches of the Java producer's default 16 KiB. On ext4 here a one-partition load's mean fsync
/// went from about 370 to 240-310 us with these (docs/performance.md).
pub const DEFAULT_ZERO_AHEAD_BYTES: u64 = 512 << 10;
use start_offset::{segments_below_start, LogStartFile};

#[derive(Debug, Error)]
pub enum LogError {
    #[error("io: {0}")]
    Io(#[from] std::io::Error),
    #[error("corrupt log: {0}")]
    Corrupt(String),
    /// A later leader epoch sealed the partition (store::cluster::seal): this broker no longer
    /// leads it and must not open it.
    #[error("superseded: leader epoch {newer} took the partition over")]
    Superseded { newer: i32 },
    /// A batch the log cannot hold (its offsets would not move the log end forward).
    #[error("invalid batch: {0}")]
    InvalidBatch(String),
    #[error("offset {offset} out of range [{start}, {end}]")]
    OffsetOutOfRange { offset: i64, start: i64, end: i64 },
    /// The log could not be opened (see [`Log::offline`]); nothing can be read or written.
    #[error("log offline")]
    Offline,
}

/// Kafka's segment.ms default (log.roll.hours = 168).
pub const DEFAULT_SEGMENT_MS: i64 = 7 * 24 * 3600 * 1000;

#[derive(Debug, Clone)]
pub struct LogConfig {
    pub segment_bytes: u64,
    /// segment.ms: an append rolls the active segment when its batch is this much newer than
    /// the segment's first batch (`Segment::time_waited_for_roll`).
    pub segment_ms: i64,
    /// -1 keeps data forever.
    pub retention_ms: i64,
    /// -1 means no size limit.
    pub retention_bytes: i64,
    pub index_interval_bytes: usize,
    /// Zeros written ahead of the active segment's appends (`log.zero_ahead_bytes`; see
    /// `segment`); 0: none.
    pub zero_ahead_bytes: u64,
    /// The broker's cache of open segment files (one for all partitions).
    pub files: Arc<FileCache>,
    /// The broker's `log.cleaner.*` defaults of the topic's compaction configs.
    pub compaction_defaults: Compaction,
    /// The topic's compaction settings when its cleanup.policy holds `compact` (None: the log
    /// is never cleaned).
    pub compaction: Option<Compaction>,
}

impl Default for LogConfig {
    fn default() -> Self {
        LogConfig {
            segment_bytes: 1 << 30,
            segment_ms: DEFAULT_SEGMENT_MS,
            retention_ms: 7 * 24 * 3600 * 1000,
            retention_bytes: -1,
            index_interval_bytes: 4096,
            zero_ahead_bytes: DEFAULT_ZERO_AHEAD_BYTES,
            files: Arc::new(FileCache::default()),
            compaction_defaults: Compaction::default(),
            compaction: None,
        }
    }
}

impl LogConfig {
    /// Segments of `segment_bytes`, no retention, an index entry every 100 bytes, no zeros
    /// ahead (tests that edit a file's tail find it ending at its last batch).
    #[cfg(test)]
    pub fn for_tests(segment_bytes: u64) -> LogConfig {
        LogConfig {
            segment_bytes,
            segment_ms: DEFAULT_SEGMENT_MS,
            zero_ahead_bytes: 0,
            retention_ms: -1,
            retention_bytes: -1,
            index_interval_bytes: 100,
            ..LogConfig::default()
        }
    }
}

/// Whether a (small) range holds only batches without records: what a cleaned segment can be
/// left with. A range above 4 KiB is taken to hold records without looking.
fn holds_no_record(r: &FileRange) -> Result<bool, LogError> {
    if r.len > 4096 {
        return Ok(false);
    }
    let bytes = r.load()?;
    let empty = super::batch::iter_batches(&bytes).all(|(h, _)| h.records_count == 0);
    Ok(empty)
}

/// Files and directories to fsync (on a sync thread) before what was appended is acknowledged.
#[derive(Debug, Default)]
pub struct SyncSet {
    pub files: Vec<Arc<File>>,
    /// Directories with new entries (segment files, partition directories).
    pub dirs: Vec<PathBuf>,
}

impl SyncSet {
    pub fn sync(&self) -> std::io::Result<()> {
        for d in &self.dirs {
            crate::store::durable::sync_dir(d)?;
        }
        for f in &self.files {
            f.sync_data()?;
        }
        Ok(())
    }

    pub fn is_empty(&self) -> bool {
        self.files.is_empty() && self.dirs.is_empty()
    }
}

#[derive(Debug)]
pub struct Log {
    dir: PathBuf,
    /// Boxed: a map node holds room for 11 entries, and most logs have one segment.
    segments: BTreeMap<i64, Box<Segment>>,
    config: LogConfig,
    /// Rolled segments whose data has not been fsynced yet.
    unsynced: Vec<Arc<File>>,
    /// Directories whose new entries (a segment file, the partition directory) are not durable
    /// yet: fsynced with the next data, before anything in them is acknowledged.
    unsynced_dirs: Vec<PathBuf>,
    /// Stamped on every appended batch, as Kafka's leader does (the partition's lease epoch);
    /// also the epoch whose files this log writes (store::cluster::seal).
    leader_epoch: i32,
    /// The recovery point on disk (None: none written or read).
    recovery_point: Option<i64>,
    /// The log's size when the recovery point was written (0 when unknown).
    recovery_point_size: u64,
    /// The log start a DeleteRecords moved to (KIP-107); the oldest segment's base when later.
    start: i64,
    /// Where `start` is kept (written off the actor threads, see `persist_start`).
    start_file: Arc<LogStartFile>,
    /// (predecessor epoch, sealed end) when this epoch took the log over (store::cluster::seal).
    sealed_from: Option<(i32, i64)>,
    /// Where the log cleaner's next pass starts mapping keys (store::log::clean).
    first_dirty: i64,
    /// The cleaning generation the next pass names its files with: above every file's.
    next_gen: u32,
    /// The earliest delete horizon the last pass left (None: none, or not known since the open).
    pending_horizon: Option<i64>,
}

/// The recovery point of epoch `epoch`'s own segments (store::cluster::seal).
fn recovery_point_path(dir: &Path, epoch: i32) -> PathBuf {
    dir.join(crate::store::cluster::seal::tagged("recovery-point", "", epoch))
}

fn read_recovery_point(dir: &Path, epoch: i32) -> Option<i64> {
    std::fs::read_to_string(recovery_point_path(dir, epoch)).ok()?.trim().parse().ok()
}

/// What recovery found when the log was opened.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct RecoveryInfo {
    /// Bytes past the last valid batch: cut from this epoch's own files, or (at a takeover)
    /// left unread in the predecessor's.
    pub truncated_bytes: u64,
    pub segments: usize,
    /// The epoch whose files this open took over and sealed (None: the log was this epoch's).
    pub took_over_from: Option<i32>,
}

impl Log {
    /// Records that everything below `offset` is on disk (Kafka's recovery-point checkpoint):
    /// the next open verifies only the segments from there on.
    /// Written only when it moved, and not fsynced: a lost or empty file only makes the next
    /// open verify more (the data below it was fsynced before it was written).
    pub fn checkpoint_recovery_point(&mut self, offset: i64) -> std::io::Result<()> {
        if self.recovery_point == Some(offset) {
            return Ok(());
        }
        crate::store::durable::write_replace(
            &recovery_point_path(&self.dir, self.leader_epoch),
            offset.to_string().as_bytes(),
        )?;
        self.recovery_point = Some(offset);
        if offset == self.next_offset() {
            self.recovery_point_size = self.size_bytes();
        }
        Ok(())
    }

    /// New settings (a topic config altered): appends and retention use them from now on.
    pub fn set_config(&mut self, config: LogConfig) {
        self.config = config;
    }

    /// The topic's compaction settings (None: not compacted).
    pub fn compaction(&self) -> Option<Compaction> {
        self.config.compaction
    }

    /// A log that could not be opened: it holds no segment and no open file, answers every read
    /// and write with [`LogError::Offline`], and leaves whatever is on disk untouched.
    pub fn offline(dir: &Path, config: LogConfig) -> Log {
        Log {
            dir: dir.to_path_buf(),
            segments: BTreeMap::new(),
            config,
            unsynced: Vec::new(),
            unsynced_dirs: Vec::new(),
            leader_epoch: 0,
            recovery_point: None,
            recovery_point_size: 0,
            start: 0,
            start_file: Arc::new(LogStartFile::unread(dir)),
            sealed_from: None,
            first_dirty: 0,
            next_gen: 1,
            pending_horizon: None,
        }
    }

    /// The segment appends go to; an opened log always has one, an offline log none.
    fn active(&self) -> Result<&Segment, LogError> {
        self.segments.values().next_back().map(|s| &**s).ok_or(LogError::Offline)
    }

    /// (predecessor epoch, sealed end) when this epoch's log starts from a seal.
    pub fn sealed_from(&self) -> Option<(i32, i64)> {
        self.sealed_from
    }

    /// The log end offset: the offset the next batch gets (0 for an offline log).
    pub fn next_offset(&self) -> i64 {
        self.active().map_or(0, |s| s.next_offset)
    }

    pub fn log_start_offset(&self) -> i64 {
        self.segments.values().next().map(|s| s.base_offset).unwrap_or(0).max(self.start)
    }

    /// Moves the log start forward to `offset` (never back; the caller checked it against the
    /// high watermark) and takes the segments now wholly below it out of the log. Returns their
    /// files for the caller to delete off the actor threads, after `start_file` made the new
    /// start durable.
    pub fn advance_start(&mut self, offset: i64) -> Vec<PathBuf> {
        self.start = self.start.max(offset);
        let spans: Vec<(i64, i64)> = self.segments.values().map(|s| (s.base_offset, s.next_offset)).collect();
        segments_below_start(&spans, self.log_start_offset())
            .into_iter()
            .filter_map(|base| self.segments.remove(&base))
            .map(|seg| seg.detach())
            .collect()
    }

    /// The file the log start is kept in, for a blocking thread to write.
    pub fn start_file(&self) -> Arc<LogStartFile> {
        self.start_file.clone()
    }

    /// At a stop: makes the start a DeleteRecords moved durable if its own write has not yet
    /// (a no-op otherwise: no write for partitions nobody deleted records of). Blocks on fsync.
    pub fn persist_start(&self) -> std::io::Result<()> {
        self.start_file.persist(self.start)
    }

    pub fn size_bytes(&self) -> u64 {
        self.segments.values().map(|s| s.size).sum()
    }

    /// Appends one validated batch at the log end: patches its base offset and writes it.
    /// Returns the header as stored.
    pub fn append(&mut self, data: impl Into<Bytes>) -> Result<BatchHeader, LogError> {
        let data = Incoming::new(data.into()).map_err(|e| LogError::InvalidBatch(e.to_string()))?;
        self.append_incoming(data)
    }

    /// Appends a batch held as its header and the request's bytes (no copy of the records).
    pub fn append_incoming(&mut self, mut data: Incoming) -> Result<BatchHeader, LogError> {
        let base = self.next_offset();
        data.set_base_offset(base);
        data.set_partition_leader_epoch(self.leader_epoch);
        let h = data.header().map_err(|e| LogError::InvalidBatch(e.to_string()))?;
        // Offsets only move forward: a negative lastOffsetDelta would move the log end back below
        // the high watermark, so no fsync would ever be asked for and the append never answered.
        if h.last_offset_delta < 0 {
            return Err(LogError::InvalidBatch(format!("lastOffsetDelta {}", h.last_offset_delta)));
        }
        // Kafka's LogSegment.shouldRoll: by size, or by time (segment.ms).
        let roll = {
            let a = self.active()?;
            let full = a.size.saturating_add(data.len() as u64) > self.config.segment_bytes;
            let old = a.time_waited_for_roll(crate::store::clock::now_ms(), h.max_timestamp) > self.config.segment_ms;
            a.size > 0 && (full || old)
        };
        if roll {
            // Create first: if that fails (EMFILE, ENOSPC) the log is unchanged and the next
            // append tries again.
            let next = Segment::create(&self.dir, base, self.leader_epoch, &self.config.files)?;
            self.roll_to(next);
        }
        let interval = self.config.index_interval_bytes;
        let ahead = ZeroAhead { bytes: self.config.zero_ahead_bytes, limit: self.config.segment_bytes };
        let active = self.segments.values_mut().next_back().ok_or(LogError::Offline)?;
        active.append(&data.parts(), &h, interval, ahead)?;
        Ok(h)
    }

    /// Fsyncs every segment holding data past the recovery point, one open file at a time:
    /// what recovery found becomes durable where one syncfs would not do it
    /// (`durable::syncfs_flushes`).
    pub fn sync_past_recovery_point(&self) -> Result<(), LogError> {
        let durable = self.recovery_point.unwrap_or(-1);
        for s in self.segments.values().filter(|s| s.next_offset > durable) {
            s.sync_data()?;
        }
        Ok(())
    }

    /// Bytes appended since the recovery point was written (all of them when it is unknown).
    pub fn grown_since_recovery_point(&self) -> u64 {
        self.size_bytes().saturating_sub(self.recovery_point_size)
    }

    /// Makes `next` (created at the log end) the active segment: the rolled one's data is
    /// fsynced with the next sync, its zeros ahead are cut (segment: only space; a failed cut
    /// leaves them), and the new name is made durable with the directory.
    fn roll_to(&mut self, next: Segment) {
        if let Some(rolled) = self.segments.values_mut().next_back() {
            self.unsynced.extend(rolled.sync_handle());
            if let Err(e) = rolled.trim() {
                tracing::debug!(path = %rolled.path.display(), "zeros past a rolled segment's end left: {e}");
            }
        }
        self.segments.insert(next.base_offset, Box::new(next));
        if !self.unsynced_dirs.contains(&self.dir) {
            self.unsynced_dirs.push(self.dir.clone());
        }
    }

    /// At a clean stop: cuts the active segment's zeros ahead (segment), so that the next
    /// opening of this epoch has no tail to read through.
    pub fn trim_active(&mut self) -> Result<(), LogError> {
        match self.segments.values_mut().next_back() {
            Some(s) if s.epoch == self.leader_epoch => s.trim(),
            _ => Ok(()),
        }
    }

    /// What must be fsynced to make everything appended so far durable.
    pub fn sync_handles(&mut self) -> SyncSet {
        let mut files = std::mem::take(&mut self.unsynced);
        // An offline log has no segment and nothing to sync.
        files.extend(self.segments.values_mut().next_back().and_then(|s| s.sync_handle()));
        SyncSet { files, dirs: std::mem::take(&mut self.unsynced_dirs) }
    }

    /// Reads batches from `offset` (which must lie in [log start, log end]) up to `upper_bound`.
    pub fn read(&self, offset: i64, upper_bound: i64, max_bytes: usize) -> Result<Bytes, LogError> {
        Ok(self.read_range(offset, upper_bound, max_bytes)?.map(|r| r.load()).transpose()?.unwrap_or_default())
    }

    /// The same batches as [`Log::read`], as a range of their segment file (None: nothing to read).
    pub fn read_range(&self, offset: i64, upper_bound: i64, max_bytes: usize) -> Result<Option<FileRange>, LogError> {
        self.active()?;
        let (start, end) = (self.log_start_offset(), self.next_offset());
        if offset < start || offset > end {
            return Err(LogError::OffsetOutOfRange { offset, start, end });
        }
        let active_base = self.active()?.base_offset;
        // A cleaned segment may hold nothing but empty batches (eos-rules 66/67): a read that
        // finds only those goes on to the next segment, as Kafka's read goes past an empty
        // segment (a reader answered one empty batch at a time grows its fetch size each time,
        // and librdkafka gives up with MSG_SIZE_TOO_LARGE). They are answered only when no later
        // segment has anything below `upper_bound`, so that the reader still moves past them.
        let mut only_empty = None;
        for seg in self.segments.range(..=offset).next_back().into_iter().chain(self.segments.range(offset + 1..)) {
            let (_, seg) = seg;
            if seg.next_offset <= offset {
                continue;
            }
            let found = seg.read_range(offset, upper_bound, max_bytes)?;
            match found {
                Some(r) if seg.base_offset != active_base && holds_no_record(&r)? => {
                    only_empty.get_or_insert(r);
                }
                Some(r) => return Ok(Some(r)),
                None => return Ok(only_empty),
            }
        }
        Ok(only_empty)
    }

    /// eos/ListOffsets: the first batch holding a record with timestamp >= ts.
    pub fn batch_for_timestamp(&self, ts: i64) -> Result<Option<(i64, Bytes)>, LogError> {
        for seg in self.segments.values() {
            if let Some(found) = seg.find_timestamp(ts)? {
                return Ok(Some(found));
            }
        }
        Ok(None)
    }

    /// The batch with the largest max timestamp (ListOffsets MAX_TIMESTAMP).
    pub fn max_timestamp(&self) -> i64 {
        self.segments.values().map(|s| s.max_timestamp).max().unwrap_or(-1)
    }

    /// Headers of every batch from `offset` to the end (producer-state rebuild).
    pub fn headers_from(&self, offset: i64) -> Result<Vec<BatchHeader>, LogError> {
        let mut out = Vec::new();
        let from = offset.max(self.log_start_offset());
        for (_, seg) in self.segments.iter() {
            if seg.next_offset <= from {
                continue;
            }
            out.extend(seg.headers_from(from)?);
        }
        Ok(out)
    }

    /// Takes whole segments past the retention time or size out of the log (closing their
    /// files) and returns their paths, for the caller to delete off the actor threads: unlinking
    /// a large file frees its blocks synchronously. As Kafka's UnifiedLog.deletableSegments: the
    /// oldest first, only below the high watermark (the log start never passes it), and the
    /// active segment too once it breaches the limits (not empty), after rolling a new empty one
    /// at the log end: a log always has one, and an idle topic's old records expire like any.
    /// The caller makes the log start durable before it deletes the files (a crash could
    /// otherwise lose the new segment and reopen the log at offset 0); a crash before they are
    /// deleted brings them back at recovery, and the next pass takes them again.
    pub fn enforce_retention(&mut self, now_ms: i64, high_watermark: i64) -> Vec<PathBuf> {
        let mut removed = Vec::new();
        loop {
            let total = self.size_bytes() as i64;
            let end = self.next_offset();
            let mut it = self.segments.iter();
            let Some((&base, oldest)) = it.next() else {
                break;
            };
            let next_base = it.next().map(|(b, _)| *b);
            let too_old = self.config.retention_ms >= 0
                && oldest.max_timestamp >= 0
                && now_ms - oldest.max_timestamp > self.config.retention_ms;
            let too_big = self.config.retention_bytes >= 0 && total - oldest.size as i64 >= self.config.retention_bytes;
            let last_and_empty = next_base.is_none() && oldest.size == 0;
            if !(too_old || too_big) || last_and_empty || high_watermark < next_base.unwrap_or(end) {
                break;
            }
            if next_base.is_none() {
                match Segment::create(&self.dir, end, self.leader_epoch, &self.config.files) {
                    Ok(next) => {
                        self.segments.insert(end, Box::new(next));
                        if !self.unsynced_dirs.contains(&self.dir) {
                            self.unsynced_dirs.push(self.dir.clone());
                        }
                        self.start = self.start.max(end);
                    }
                    Err(e) => {
                        tracing::warn!(dir = %self.dir.display(), "retention could not roll the active segment: {e}");
                        break;
                    }
                }
            }
            if let Some(seg) = self.segments.remove(&base) {
                removed.push(seg.detach());
            }
        }
        removed
    }
}

#[cfg(test)]
mod roll_tests;

#[cfg(test)]
mod tests {
    use bytes::BytesMut;

    use super::*;
    use crate::store::batch;
    use crate::store::batch::testutil::{batch, Spec};

    fn cfg(segment_bytes: u64) -> LogConfig {
        LogConfig::for_tests(segment_bytes)
    }

    fn rec(records: i32, ts: i64) -> BytesMut {
        batch(Spec { records, timestamp: ts, ..Spec::default() })
    }

    #[test]
    fn appends_assign_offsets_and_reads_return_batches_as_stored() {
        let dir = tempfile::tempdir().unwrap();
        let (mut log, _) = Log::open(dir.path(), cfg(1 << 20)).unwrap();
        let h1 = log.append(rec(3, 10)).unwrap();
        let h2 = log.append(rec(2, 20)).unwrap();
        assert_eq!((h1.base_offset, h2.base_offset, log.next_offset()), (0, 3, 5));
        let data = log.read(4, 5, 1 << 20).unwrap();
        let got: Vec<i64> = batch::iter_batches(&data).map(|(h, _)| h.base_offset).collect();
        assert_eq!(got, vec![3]);
        let all = log.read(0, 5, 1 << 20).unwrap();
        assert_eq!(batch::iter_batches(&all).count(), 2);
        // upper bound (high watermark) hides later batches
        assert!(log.read(0, 0, 1 << 20).unwrap().is_empty());
        assert!(matches!(log.read(9, 9, 10), Err(LogError::OffsetOutOfRange { .. })));
    }

    #[test]
    fn a_negative_last_offset_delta_is_refused_and_nothing_is_written() {
        let dir = tempfile::tempdir().unwrap();
        let (mut log, _) = Log::open(dir.path(), cfg(1 << 20)).unwrap();
        log.append(rec(2, 1)).unwrap();
        let mut bad = rec(1, 1);
        bad[23..27].copy_from_slice(&(-3i32).to_be_bytes());
        assert!(matches!(log.append(bad), Err(LogError::InvalidBatch(_))));
        assert_eq!(log.next_offset(), 2);
        assert_eq!(log.append(rec(1, 1)).unwrap().base_offset, 2);
    }

    #[test]
    fn recovery_stops_at_a_batch_with_a_negative_last_offset_delta() {
        let dir = tempfile::tempdir().unwrap();
        {
            let (mut log, _) = Log::open(dir.path(), cfg(1 << 20)).unwrap();
            log.append(rec(2, 1)).unwrap();
        }
        // A batch written by an older build before the log refused it.
        let mut bad = rec(1, 1);
        batch::patch_base_offset(&mut bad, 2);
        bad[23..27].copy_from_slice(&(-3i32).to_be_bytes());
        batch::patch_max_timestamp(&mut bad, 1, false); // recomputes a valid CRC
        let path = segment::segment_file(dir.path(), 0);
        let mut bytes = std::fs::read(&path).unwrap();
        bytes.extend_from_slice(&bad);
        std::fs::write(&path, bytes).unwrap();
        let (mut log, info) = Log::open(dir.path(), cfg(1 << 20)).unwrap();
        assert_eq!((log.next_offset(), info.truncated_bytes), (2, bad.len() as u64));
        assert_eq!(log.append(rec(1, 1)).unwrap().base_offset, 2);
    }

    #[test]
    fn max_bytes_still_returns_first_whole_batch() {
        let dir = tempfile::tempdir().unwrap();
        let (mut log, _) = Log::open(dir.path(), cfg(1 << 20)).unwrap();
        log.append(rec(50, 1)).unwrap();
        log.append(rec(50, 1)).unwrap();
        let data = log.read(0, 100, 10).unwrap();
        assert_eq!(batch::iter_batches(&data).count(), 1);
        assert_eq!(data.len(), rec(50, 1).len());
    }

    #[test]
    fn segments_roll_and_reopen_with_same_offsets() {
        let dir = tempfile::tempdir().unwrap();
        {
            let (mut log, _) = Log::open(dir.path(), cfg(300)).unwrap();
            for i in 0..20 {
                log.append(rec(4, i)).unwrap();
            }
            assert!(log.segments.len() > 3);
        }
        let (log, info) = Log::open(dir.path(), cfg(300)).unwrap();
        assert_eq!(info.truncated_bytes, 0);
        assert_eq!(log.next_offset(), 80);
        let data = log.read(41, 80, 1).unwrap();
        let (h, _) = batch::iter_batches(&data).next().unwrap();
        assert_eq!(h.base_offset, 40);
    }

    fn corrupt_last_byte(dir: &Path, base: i64) {
        let path = segment::segment_file(dir, base);
        let mut bytes = std::fs::read(&path).unwrap();
        let last = bytes.len() - 1;
        bytes[last] ^= 0xff;
        std::fs::write(&path, bytes).unwrap();
    }

    #[test]
    fn recovery_cuts_at_a_torn_older_segment_and_drops_the_later_ones() {
        let dir = tempfile::tempdir().unwrap();
        {
            let (mut log, _) = Log::open(dir.path(), cfg(100)).unwrap();
            for _ in 0..3 {
                log.append(rec(1, 1)).unwrap();
            }
            assert_eq!(log.segments.len(), 3);
        }
        // The power loss kept segment 2's pages but not the tail of segment 1.
        corrupt_last_byte(dir.path(), 1);
        let (mut log, info) = Log::open(dir.path(), cfg(100)).unwrap();
        assert_eq!(log.next_offset(), 1);
        assert!(!segment::segment_file(dir.path(), 2).exists());
        assert!(info.truncated_bytes > 0);
        assert_eq!(log.append(rec(1, 1)).unwrap().base_offset, 1);
    }

    #[test]
    fn recovery_drops_a_segment_after_a_gap() {
        let dir = tempfile::tempdir().unwrap();
        {
            let (mut log, _) = Log::open(dir.path(), cfg(100)).unwrap();
            log.append(rec(1, 1)).unwrap();
            log.append(rec(1, 1)).unwrap();
        }
        // Segment 0 lost its unsynced data; segment 1's (empty or not) must not leave a gap.
        std::fs::write(segment::segment_file(dir.path(), 0), b"").unwrap();
        let (log, _) = Log::open(dir.path(), cfg(100)).unwrap();
        assert_eq!((log.next_offset(), log.segments.len()), (0, 1));
    }

    #[test]
    fn recovery_point_limits_verification_to_newer_segments() {
        let dir = tempfile::tempdir().unwrap();
        {
            let (mut log, _) = Log::open(dir.path(), cfg(100)).unwrap();
            for _ in 0..3 {
                log.append(rec(1, 1)).unwrap();
            }
            log.checkpoint_recovery_point(2).unwrap();
        }
        // Below the recovery point nothing is re-verified (it was on disk, as in Kafka)...
        corrupt_last_byte(dir.path(), 0);
        let (log, _) = Log::open(dir.path(), cfg(100)).unwrap();
        assert_eq!(log.next_offset(), 3);
        drop(log);
        // ...while from the recovery point on it is.
        corrupt_last_byte(dir.path(), 2);
        let (log, _) = Log::open(dir.path(), cfg(100)).unwrap();
        assert_eq!(log.next_offset(), 2);
    }

    /// Segments of 300 bytes (a roll every few batches) with zeros written ahead.
    fn zeroing(segment_bytes: u64) -> LogConfig {
        LogConfig { zero_ahead_bytes: 512 << 10, ..cfg(segment_bytes) }
    }

    fn file_lens(dir: &Path) -> Vec<u64> {
        let mut logs: Vec<PathBuf> = std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| p.extension().is_some_and(|x| x == "log"))
            .collect();
        logs.sort();
        logs.iter().map(|p| std::fs::metadata(p).unwrap().len()).collect()
    }

    /// Ten batches of two records into segments of 300 bytes, zeroed ahead: several rolls.
    fn rolled_log(dir: &Path) -> Log {
        let (mut log, _) = Log::open(dir, zeroing(300)).unwrap();
        for _ in 0..10 {
            log.append(rec(2, 1)).unwrap();
        }
        log
    }

    #[test]
    fn a_rolled_segment_is_cut_to_its_last_batch() {
        let dir = tempfile::tempdir().unwrap();
        let log = rolled_log(dir.path());
        let sizes: Vec<u64> = log.segments.values().map(|s| s.size).collect();
        let lens = file_lens(dir.path());
        assert!(sizes.len() > 2);
        assert_eq!(lens[..sizes.len() - 1], sizes[..sizes.len() - 1], "rolled files end at their last batch");
        assert_eq!(lens[sizes.len() - 1], 300, "the active one is zeroed up to segment_bytes");
    }

    #[test]
    fn trim_active_cuts_the_zeros_of_the_active_segment() {
        let dir = tempfile::tempdir().unwrap();
        let (mut log, _) = Log::open(dir.path(), zeroing(1 << 20)).unwrap();
        log.append(rec(2, 1)).unwrap();
        let size = log.size_bytes();
        assert!(file_lens(dir.path())[0] > size);
        log.trim_active().unwrap();
        assert_eq!(file_lens(dir.path()), vec![size]);
        drop(log);
        let (mut log, info) = Log::open(dir.path(), zeroing(1 << 20)).unwrap();
        assert_eq!((log.append(rec(1, 1)).unwrap().base_offset, info.truncated_bytes), (2, 0));
    }

    #[test]
    fn zeros_left_past_a_rolled_segment_do_not_cut_the_log() {
        for epoch in [0, 1] {
            let dir = tempfile::tempdir().unwrap();
            drop(rolled_log(dir.path()));
            // A stop between a roll and the cut of the rolled file's zeros.
            let first = segment::segment_file(dir.path(), 0);
            let f = std::fs::OpenOptions::new().write(true).open(&first).unwrap();
            f.set_len(f.metadata().unwrap().len() + 4096).unwrap();
            // Epoch 0 recovers its own files; epoch 1 takes them over.
            let (log, info) = Log::open_at(dir.path(), zeroing(300), epoch).unwrap();
            assert_eq!((log.next_offset(), info.truncated_bytes), (20, 0), "epoch {epoch}");
        }
    }

    #[test]
    fn recovery_truncates_a_torn_tail() {
        let dir = tempfile::tempdir().unwrap();
        {
            let (mut log, _) = Log::open(dir.path(), cfg(1 << 20)).unwrap();
            log.append(rec(2, 1)).unwrap();
            log.append(rec(2, 1)).unwrap();
        }
        let path = segment::segment_file(dir.path(), 0);
        let full = std::fs::metadata(&path).unwrap().len();
        // tear the last batch in half, then add garbage
        let f = std::fs::OpenOptions::new().write(true).open(&path).unwrap();
        f.set_len(full - 10).unwrap();
        let (log, info) = Log::open(dir.path(), cfg(1 << 20)).unwrap();
        assert_eq!(log.next_offset(), 2);
        assert!(info.truncated_bytes > 0);
    }

    #[test]
    fn recovery_truncates_a_corrupt_tail_batch() {
        let dir = tempfile::tempdir().unwrap();
        {
            let (mut log, _) = Log::open(dir.path(), cfg(1 << 20)).unwrap();
            log.append(rec(2, 1)).unwrap();
            log.append(rec(2, 1)).unwrap();
        }
        let path = segment::segment_file(dir.path(), 0);
        let mut bytes = std::fs::read(&path).unwrap();
        let last = bytes.len() - 1;
        bytes[last] ^= 0x55;
        std::fs::write(&path, bytes).unwrap();
        let (log, _) = Log::open(dir.path(), cfg(1 << 20)).unwrap();
        assert_eq!(log.next_offset(), 2);
    }

    #[test]
    fn retention_by_size_and_time_moves_log_start() {
        let dir = tempfile::tempdir().unwrap();
        let mut c = cfg(200);
        c.retention_bytes = 400;
        let (mut log, _) = Log::open(dir.path(), c).unwrap();
        for i in 0..20 {
            log.append(rec(4, i)).unwrap();
        }
        assert!(!log.enforce_retention(0, log.next_offset()).is_empty());
        assert!(log.log_start_offset() > 0);
        assert!(log.size_bytes() <= 400 + 200);
        let mut c = cfg(200);
        c.retention_ms = 1000;
        let dir2 = tempfile::tempdir().unwrap();
        let (mut log, _) = Log::open(dir2.path(), c).unwrap();
        for _ in 0..10 {
            log.append(rec(4, 5)).unwrap();
        }
        assert!(log.enforce_retention(2000, 0).is_empty(), "nothing at or above the high watermark goes");
        let (end, before) = (log.next_offset(), log.segments.len());
        assert!(before > 1);
        assert_eq!(log.enforce_retention(2000, end).len(), before, "every segment, the active one too");
        assert_eq!(log.segments.len(), 1, "a new empty active segment at the end");
        assert_eq!((log.log_start_offset(), log.next_offset(), log.size_bytes()), (end, end, 0));
        assert!(log.enforce_retention(1_000_000, end).is_empty(), "an empty active segment stays");
    }

    #[test]
    fn retention_removes_an_old_active_segment_of_an_idle_log() {
        let dir = tempfile::tempdir().unwrap();
        let mut c = cfg(1 << 20);
        c.retention_ms = 1000;
        let (mut log, _) = Log::open(dir.path(), c.clone()).unwrap();
        for _ in 0..3 {
            log.append(rec(2, 5)).unwrap();
        }
        assert_eq!(log.segments.len(), 1);
        assert!(log.enforce_retention(1005, 6).is_empty(), "not yet past retention");
        let gone = log.enforce_retention(2000, 6);
        assert_eq!(gone.len(), 1);
        assert_eq!((log.log_start_offset(), log.next_offset()), (6, 6));
        // Offsets go on from the end, and the start survives a reopen once made durable.
        log.persist_start().unwrap();
        for p in &gone {
            std::fs::remove_file(p).unwrap();
        }
        log.append(rec(1, 3000)).unwrap();
        assert_eq!(log.next_offset(), 7);
        drop(log);
        let (log, _) = Log::open(dir.path(), c).unwrap();
        assert_eq!((log.log_start_offset(), log.next_offset()), (6, 7));
    }

    #[test]
    fn an_offline_log_refuses_reads_and_writes_and_touches_no_file() {
        let dir = tempfile::tempdir().unwrap();
        let part = dir.path().join("t-0");
        let mut log = Log::offline(&part, cfg(1 << 20));
        assert!(matches!(log.append(rec(1, 1)), Err(LogError::Offline)));
        assert!(matches!(log.read(0, 1, 100), Err(LogError::Offline)));
        assert!(log.sync_handles().is_empty(), "an offline log has nothing to sync");
        assert_eq!((log.next_offset(), log.log_start_offset(), log.enforce_retention(0, 0).len()), (0, 0, 0));
        assert!(!part.exists());
    }

    #[test]
    fn a_log_start_past_the_recovered_end_starts_the_log_empty_there() {
        let dir = tempfile::tempdir().unwrap();
        {
            let (mut log, _) = Log::open(dir.path(), cfg(1 << 20)).unwrap();
            log.append(rec(3, 1)).unwrap();
        }
        // As Kafka's log loader: the data below the start is gone, no offset below it is reused.
        std::fs::write(dir.path().join(start_offset::LOG_START_FILE), b"50").unwrap();
        let (mut log, _) = Log::open(dir.path(), cfg(1 << 20)).unwrap();
        assert_eq!((log.log_start_offset(), log.next_offset()), (50, 50));
        assert!(!segment::segment_file(dir.path(), 0).exists());
        assert_eq!(log.append(rec(1, 1)).unwrap().base_offset, 50);
    }

    #[test]
    fn finds_batches_by_timestamp() {
        let dir = tempfile::tempdir().unwrap();
        let (mut log, _) = Log::open(dir.path(), cfg(1 << 20)).unwrap();
        log.append(rec(1, 100)).unwrap();
        log.append(rec(1, 200)).unwrap();
        log.append(rec(1, 300)).unwrap();
        assert_eq!(log.batch_for_timestamp(150).unwrap().map(|x| x.0), Some(1));
        assert_eq!(log.batch_for_timestamp(301).unwrap(), None);
        assert_eq!(log.max_timestamp(), 300);
    }
}
