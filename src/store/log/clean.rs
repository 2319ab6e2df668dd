//! The log cleaner's file work on one log (the rules are store::cleaner). A pass reads the
//! segments from the log start to the cleanable end, maps the keys of the dirty part, and
//! rewrites each group of segments into one new file of this epoch with a new cleaning
//! generation: `<base>.c<gen>[.e<epoch>].log`, written as `<name>.cleaning`, fsynced, then
//! renamed to its name (never over an existing file) and the directory fsynced. From then on the
//! new file covers the files from its base up to its end, which the log opening skips
//! (store::log::open) and which are deleted after the swap. A crash at any point leaves the old
//! files or the new one whole: never a gap or a duplicate (eos-rules 68). Offsets never change,
//! and a cleaned file ends where the files it covers ended (eos-rules 67).
//!
//! A zombie's pass writes only names of its own epoch: an unfinished one (`.cleaning`) is never
//! read by anyone, and a finished one is trusted by a successor only if it is in the directory
//! when the successor lists it, complete and fsynced.

use std::collections::HashMap;
use std::fs::{File, OpenOptions};
use std::io::{BufReader, BufWriter, Read, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use bytes::Bytes;

use super::file_cache::FileCache;
use super::segment::{OpenMode, Segment};
use super::{Log, LogError};
use crate::store::batch::{BatchHeader, HEADER_LEN};
use crate::store::cleaner::offset_map::OffsetMap;
use crate::store::cleaner::rules::{self, PassContext, Verdict};
use crate::store::cleaner::select::{self, SegmentStat};
use crate::store::cleaner::transactions::CleanedTransactions;
use crate::store::cleaner::CleanerError;
use crate::store::cluster::seal::{self, SegmentId};
use crate::store::producer_state::CompletedTxn;

const UNFINISHED: &str = ".cleaning";
const READ_BUFFER: usize = 512 << 10;
/// Bytes a pass writes between two fsyncs of the file it writes.
const SYNC_EVERY: usize = 4 << 20;

/// One segment a pass reads.
#[derive(Debug, Clone)]
struct Input {
    stat: SegmentStat,
    id: SegmentId,
    path: PathBuf,
}

/// A pass planned on the partition's thread, run on a cleaner thread.
#[derive(Debug)]
pub struct CleanJob {
    dir: PathBuf,
    epoch: i32,
    gen: u32,
    inputs: Vec<Input>,
    first_dirty: i64,
    segment_bytes: u64,
    index_interval: usize,
    files: Arc<FileCache>,
}

/// What a pass needs of the partition beyond the files.
#[derive(Debug)]
pub struct PassInputs {
    pub aborted: Vec<CompletedTxn>,
    pub last_data_offsets: HashMap<i64, i64>,
    pub now_ms: i64,
    pub delete_retention_ms: i64,
    pub dedupe_buffer_bytes: usize,
    /// The most a batch's records may decompress to (a larger one is kept as it is), and the
    /// largest stored batch a pass reads (a larger one fails the pass, as in Kafka's cleaner).
    pub max_decoded_bytes: usize,
}

/// Counters of one pass (metrics).
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct PassStats {
    pub bytes_read: u64,
    pub bytes_written: u64,
    pub batches_dropped: u64,
    pub keys_mapped: u64,
    /// Share of the key map used (0..=1).
    pub map_utilization_permille: u64,
}

/// A group of segments replaced by one cleaned file.
#[derive(Debug)]
pub struct CleanedGroup {
    replaces: Vec<SegmentId>,
    segment: Box<Segment>,
    /// Offsets of the ABORT markers the group no longer holds: their entries leave the aborted
    /// index when it is installed (a reader given an aborted transaction whose marker it never
    /// meets would take the producer's later transactions for aborted ones).
    dropped_aborts: Vec<i64>,
}

/// What installing a pass changed.
#[derive(Debug, Default)]
pub struct Installed {
    pub replaced: Vec<PathBuf>,
    pub unused: Vec<PathBuf>,
    pub dropped_aborts: Vec<i64>,
}

/// The result of a pass, for the partition's thread to install.
#[derive(Debug)]
pub struct Cleaned {
    groups: Vec<CleanedGroup>,
    /// Where the next pass starts mapping keys.
    pub first_dirty: i64,
    /// The earliest delete horizon left in the cleaned files: a pass is due then (eos-rules
    /// 64/65), dirty or not.
    pub next_horizon: Option<i64>,
    pub stats: PassStats,
}

impl CleanJob {
    pub fn first_dirty(&self) -> i64 {
        self.first_dirty
    }

    /// The end of the segments this pass may clean.
    pub fn cleanable_end(&self) -> i64 {
        self.inputs.last().map_or(self.first_dirty, |i| i.stat.next_offset)
    }

    /// Runs the pass: `charge` is told every byte read or written (the I/O rate limit),
    /// `before_swap` runs after the new files are durable and before the first is named (the
    /// producer snapshot the partition needs once markers may go), `stop` abandons the pass.
    pub fn run(
        self,
        inputs: &PassInputs,
        charge: &mut dyn FnMut(u64),
        before_swap: impl FnOnce() -> std::io::Result<()>,
        stop: &AtomicBool,
    ) -> Result<Cleaned, CleanerError> {
        let mut stats = PassStats::default();
        // eos-rules 61/69: the keys of the dirty part, as many as the map holds.
        let mut map = OffsetMap::new(inputs.dedupe_buffer_bytes);
        // Below the first dirty offset every key is at its latest as of the last pass: what the
        // map does not name there stays (unless a tombstone past its horizon).
        map.advance_to(self.first_dirty - 1);
        let mut txns = CleanedTransactions::new(inputs.aborted.clone());
        let mut full = false;
        for input in &self.inputs {
            if input.stat.next_offset <= self.first_dirty {
                // Before the dirty part: only the transactions' progress matters here.
                for_each_batch(input, inputs.max_decoded_bytes, stop, |b, h| {
                    stats.bytes_read += b.len() as u64;
                    charge(b.len() as u64);
                    if h.is_control() {
                        txns.on_control(h, crate::store::control::parse_marker(b));
                    } else {
                        txns.on_batch(h);
                    }
                    Ok(true)
                })?;
                continue;
            }
            let mut more = true;
            for_each_batch(input, inputs.max_decoded_bytes, stop, |b, h| {
                stats.bytes_read += b.len() as u64;
                charge(b.len() as u64);
                more = rules::map_batch(b, h, self.first_dirty, &mut txns, &mut map, inputs.max_decoded_bytes)?;
                Ok(more)
            })?;
            if !more {
                full = true;
                break;
            }
        }
        stats.keys_mapped = map.len() as u64;
        stats.map_utilization_permille = (map.utilization() * 1000.0) as u64;
        let pass_end = if full { map.latest_offset() + 1 } else { self.cleanable_end() };
        if pass_end <= self.first_dirty && full && map.is_empty() {
            return Err(CleanerError::Abandoned("the key map holds no key of the dirty part".into()));
        }
        let ctx = PassContext {
            now_ms: inputs.now_ms,
            delete_retention_ms: inputs.delete_retention_ms,
            last_data_offsets: &inputs.last_data_offsets,
            max_decoded_bytes: inputs.max_decoded_bytes,
        };
        // The segments overlapping [log start, pass end), in groups.
        let upto = self.inputs.iter().take_while(|i| i.stat.base < pass_end).count();
        let stats_of: Vec<SegmentStat> = self.inputs[..upto].iter().map(|i| i.stat).collect();
        let mut txns = CleanedTransactions::new(inputs.aborted.clone());
        let mut written: Vec<(PathBuf, PathBuf, Vec<SegmentId>)> = Vec::new();
        let mut dropped_aborts: Vec<Vec<i64>> = Vec::new();
        let mut next_horizon: Option<i64> = None;
        let result = (|| {
            for range in select::group_segments(&stats_of, self.segment_bytes) {
                let group = &self.inputs[range];
                let base = group[0].stat.base;
                let name = seal::segment_path(&self.dir, base, self.epoch, self.gen);
                let tmp = unfinished_path(&name);
                let file = OpenOptions::new().create(true).truncate(true).write(true).open(&tmp)?;
                written.push((tmp.clone(), name, group.iter().map(|i| i.id).collect()));
                let mut out = BufWriter::with_capacity(READ_BUFFER, &file);
                let mut end_written = base;
                let mut last: Option<BatchHeader> = None;
                let mut group_aborts = Vec::new();
                let mut unsynced = 0usize;
                for input in group {
                    for_each_batch(input, inputs.max_decoded_bytes, stop, |b, h| {
                        stats.bytes_read += b.len() as u64;
                        charge(b.len() as u64);
                        last = Some(*h);
                        let epoch = leader_epoch_of(b);
                        let bytes = match rules::clean_batch(b, h, &mut txns, &map, &ctx)? {
                            Verdict::Drop => {
                                stats.batches_dropped += 1;
                                if h.is_control() && crate::store::control::parse_marker(b).is_some_and(|m| !m.commit) {
                                    group_aborts.push(h.base_offset);
                                }
                                return Ok(true);
                            }
                            Verdict::Keep => {
                                note_horizon(&mut next_horizon, h, inputs.now_ms);
                                b.to_vec()
                            }
                            Verdict::Rewrite(mut v) => {
                                if let Ok(h) = BatchHeader::parse(&v) {
                                    note_horizon(&mut next_horizon, &h, inputs.now_ms);
                                }
                                crate::store::cleaner::batch_records::seal_batch(&mut v, epoch);
                                v
                            }
                        };
                        out.write_all(&bytes)?;
                        charge(bytes.len() as u64);
                        stats.bytes_written += bytes.len() as u64;
                        end_written = h.last_offset() + 1;
                        // Written back as it goes, so that the final fsync is short and does not
                        // hold up the fsyncs of the produce path behind a large flush.
                        unsynced += bytes.len();
                        if unsynced >= SYNC_EVERY {
                            out.flush()?;
                            out.get_ref().sync_data()?;
                            unsynced = 0;
                        }
                        Ok(true)
                    })?;
                }
                // eos-rules 67: the file ends where the group ended.
                if let Some(h) = last.filter(|h| h.last_offset() + 1 > end_written) {
                    let mut v = rules::end_filler(&h)?;
                    crate::store::cleaner::batch_records::seal_batch(&mut v, 0);
                    out.write_all(&v)?;
                    stats.bytes_written += v.len() as u64;
                }
                out.flush()?;
                drop(out);
                file.sync_data()?;
                dropped_aborts.push(group_aborts);
            }
            before_swap()?;
            for (tmp, name, _) in &written {
                if stop.load(Ordering::Acquire) {
                    return Err(CleanerError::Abandoned("stopped".into()));
                }
                std::fs::rename(tmp, name)?;
            }
            crate::store::durable::sync_dir(&self.dir)?;
            Ok(())
        })();
        if let Err(e) = result {
            for (tmp, _, _) in &written {
                let _ = std::fs::remove_file(tmp);
            }
            return Err(e);
        }
        let mut groups = Vec::new();
        for ((_, name, replaces), dropped_aborts) in written.into_iter().zip(dropped_aborts) {
            let id = seal::parse_segment_name(&name.file_name().unwrap_or_default().to_string_lossy())
                .ok_or_else(|| CleanerError::Abandoned(format!("{}: not a segment name", name.display())))?;
            let (segment, _) =
                Segment::open(name, id, OpenMode::Own { verify: false }, self.index_interval, &self.files)
                    .map_err(|e| CleanerError::Abandoned(e.to_string()))?;
            groups.push(CleanedGroup { replaces, segment: Box::new(segment), dropped_aborts });
        }
        Ok(Cleaned { groups, first_dirty: pass_end, next_horizon, stats })
    }
}

/// A delete horizon still to come (`now_ms`: the pass's time) makes a later pass due then. One
/// already past is not: the pass removed what it allowed, and what it kept (a record that is
/// not a tombstone, a marker whose transaction still has data) goes only after new writes.
fn note_horizon(earliest: &mut Option<i64>, h: &BatchHeader, now_ms: i64) {
    if let Some(t) = crate::store::cleaner::batch_records::delete_horizon(h).filter(|t| *t > now_ms) {
        *earliest = Some(earliest.map_or(t, |e| e.min(t)));
    }
}

fn unfinished_path(name: &Path) -> PathBuf {
    let mut s = name.as_os_str().to_owned();
    s.push(UNFINISHED);
    PathBuf::from(s)
}

fn leader_epoch_of(batch: &[u8]) -> i32 {
    batch.get(12..16).map_or(0, |b| i32::from_be_bytes([b[0], b[1], b[2], b[3]]))
}

/// Calls `f` with every batch of `input` (its trusted length only), in order, until it returns
/// false.
fn for_each_batch(
    input: &Input,
    max_batch_bytes: usize,
    stop: &AtomicBool,
    mut f: impl FnMut(&Bytes, &BatchHeader) -> Result<bool, CleanerError>,
) -> Result<(), CleanerError> {
    let file = File::open(&input.path)?;
    let mut r = BufReader::with_capacity(READ_BUFFER, file.take(input.stat.size));
    let mut pos = 0u64;
    while pos < input.stat.size {
        if stop.load(Ordering::Acquire) {
            return Err(CleanerError::Abandoned("stopped".into()));
        }
        let mut head = [0u8; HEADER_LEN];
        r.read_exact(&mut head)?;
        let h = BatchHeader::parse(&head).map_err(|e| CleanerError::Records(e.to_string()))?;
        let size = h.total_size() as u64;
        if size < HEADER_LEN as u64 || pos + size > input.stat.size {
            return Err(CleanerError::Records(format!("{}: batch at {pos} past the segment", input.path.display())));
        }
        // A batch is read whole: its size, read from the disk, is bounded (as Kafka's cleaner
        // buffer is by max.message.bytes) so that a corrupt header cannot ask for a segment's.
        if size > max_batch_bytes as u64 {
            return Err(CleanerError::Records(format!(
                "{}: batch at {pos} of {size} bytes, above the cleaner's {max_batch_bytes}",
                input.path.display()
            )));
        }
        let mut buf = vec![0u8; size as usize];
        buf[..HEADER_LEN].copy_from_slice(&head);
        r.read_exact(&mut buf[HEADER_LEN..])?;
        pos += size;
        if !f(&Bytes::from(buf), &h)? {
            break;
        }
    }
    Ok(())
}

/// Deletes the unfinished cleanings (`.cleaning`) of `epoch` and its predecessors at its log's
/// opening: nobody ever reads one.
pub fn remove_unfinished(dir: &Path, epoch: i32) -> std::io::Result<()> {
    for entry in std::fs::read_dir(dir)? {
        let name = entry?.file_name();
        let name = name.to_string_lossy();
        let Some(seg) = name.strip_suffix(UNFINISHED).and_then(seal::parse_segment_name) else { continue };
        if seg.epoch <= epoch {
            match std::fs::remove_file(dir.join(&*name)) {
                Err(e) if e.kind() != std::io::ErrorKind::NotFound => return Err(e),
                _ => {}
            }
        }
    }
    Ok(())
}

impl Log {
    /// The segments as selection sees them, oldest first (the last is the active one).
    pub fn segment_stats(&self) -> Vec<SegmentStat> {
        self.segments
            .values()
            .map(|s| SegmentStat {
                base: s.base_offset,
                next_offset: s.next_offset,
                size: s.size,
                max_timestamp: s.max_timestamp,
                first_batch_timestamp: s.first_batch_timestamp(),
            })
            .collect()
    }

    /// Whether a log cleaner pass wrote some of the segments.
    pub fn has_cleaned_segments(&self) -> bool {
        self.segments.values().any(|s| s.gen > 0)
    }

    /// Where the last pass stopped mapping keys (the log start before any).
    pub fn first_dirty(&self) -> i64 {
        self.first_dirty.max(self.log_start_offset())
    }

    /// Whether a tombstone's or marker's delete horizon in the cleaned files has come.
    pub fn horizon_due(&self, now_ms: i64) -> bool {
        self.pending_horizon.is_some_and(|t| t <= now_ms)
    }

    /// A pass over the segments wholly below `cleanable_end` (None: nothing to clean; with
    /// `clean_part_too`, also when only the part cleaned before has something to remove: a
    /// delete horizon came). The generation of the files it writes is taken now.
    pub fn plan_cleaning(&mut self, cleanable_end: i64, clean_part_too: bool) -> Option<CleanJob> {
        let first_dirty = self.first_dirty();
        let (_, older) = self.segments.values().collect::<Vec<_>>().split_last().map(|(a, o)| (*a, o.to_vec()))?;
        // Consecutive segments from the log start; an empty one (none is expected before the
        // active segment) ends the pass, so that every group covers exactly its segments.
        let inputs: Vec<Input> = older
            .iter()
            .take_while(|s| s.next_offset <= cleanable_end && s.size > 0)
            .map(|s| Input {
                stat: SegmentStat {
                    base: s.base_offset,
                    next_offset: s.next_offset,
                    size: s.size,
                    max_timestamp: s.max_timestamp,
                    first_batch_timestamp: s.first_batch_timestamp(),
                },
                id: s.id(),
                path: s.path.clone(),
            })
            .collect();
        let nothing_dirty = inputs.last().is_none_or(|i| i.stat.next_offset <= first_dirty);
        if inputs.is_empty() || (nothing_dirty && !clean_part_too) {
            return None;
        }
        let gen = self.next_gen;
        self.next_gen += 1;
        Some(CleanJob {
            dir: self.dir.clone(),
            epoch: self.leader_epoch,
            gen,
            inputs,
            first_dirty,
            segment_bytes: self.config.segment_bytes,
            index_interval: self.config.index_interval_bytes,
            files: self.config.files.clone(),
        })
    }

    /// Installs a pass's files in place of the segments they cover. A group whose segments are
    /// no longer all in the log (retention or DeleteRecords removed some since) is not
    /// installed. Returns the files replaced and the pass's files not installed (the caller
    /// deletes both off the partition's thread), and the offsets of the ABORT markers the
    /// installed files no longer hold.
    pub fn install_cleaned(&mut self, cleaned: Cleaned) -> Installed {
        let mut replaced = Vec::new();
        let mut unused = Vec::new();
        let mut dropped_aborts = Vec::new();
        let mut installed = false;
        for g in cleaned.groups {
            let (base, end) = (g.segment.base_offset, g.segment.next_offset);
            let present: Vec<SegmentId> = self.segments.range(base..end).map(|(_, s)| s.id()).collect();
            if present != g.replaces {
                unused.push(g.segment.detach());
                continue;
            }
            for id in &g.replaces {
                if let Some(old) = self.segments.remove(&id.base) {
                    replaced.push(old.detach());
                }
            }
            self.segments.insert(base, g.segment);
            dropped_aborts.extend(g.dropped_aborts);
            installed = true;
        }
        if installed {
            self.first_dirty = self.first_dirty.max(cleaned.first_dirty);
            self.pending_horizon = cleaned.next_horizon;
        }
        Installed { replaced, unused, dropped_aborts }
    }

    /// The header of the batch starting at `offset` (None: no batch starts there).
    pub fn batch_header_at(&self, offset: i64) -> Result<Option<BatchHeader>, LogError> {
        let Some(seg) = self.segments.range(..=offset).next_back().map(|(_, s)| s) else { return Ok(None) };
        Ok(seg.header_from(offset)?.filter(|h| h.base_offset == offset))
    }

    /// KIP-354: starts a new active segment (a compacted log whose active segment is older than
    /// max.compaction.lag.ms). Nothing happens to an empty active segment.
    pub fn roll(&mut self) -> Result<(), LogError> {
        let end = self.next_offset();
        if self.active()?.size == 0 {
            return Ok(());
        }
        let next = Segment::create(&self.dir, end, self.leader_epoch, &self.config.files)?;
        self.roll_to(next);
        Ok(())
    }
}
