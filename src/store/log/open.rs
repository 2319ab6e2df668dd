//! Opening a log: recovery, and the takeover of a predecessor's files (store::cluster::seal).
//! As Kafka's log recovery, every segment holding offsets at or past the recovery point (all of
//! them when there is none) has its CRCs verified, and the log ends at the first torn or
//! corrupt batch or at a gap between segments. In this epoch's own files what lies past that
//! was never durable, so never acknowledged, and is cut away; a predecessor's files are never
//! changed: the seal records how far they are read.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;

use super::segment::{OpenMode, Segment};
use super::start_offset::{opening_start, segments_below_start, LogStartFile};
use super::{read_recovery_point, Log, LogConfig, LogError, RecoveryInfo};
use crate::store::cluster::seal::{self, Listing, Plan, Seal, SealedSegment};

type Segments = BTreeMap<i64, Box<Segment>>;

impl Log {
    /// Opens (or creates) the log in `dir` as its first leader (epoch 0).
    pub fn open(dir: &Path, config: LogConfig) -> Result<(Log, RecoveryInfo), LogError> {
        Log::open_at(dir, config, 0)
    }

    /// Opens (or creates) the log in `dir` for leader epoch `epoch`: its own files are
    /// recovered; a predecessor's are sealed first (`seal::plan`). Every segment's index is
    /// rebuilt from its headers.
    pub fn open_at(dir: &Path, config: LogConfig, epoch: i32) -> Result<(Log, RecoveryInfo), LogError> {
        // The partition directory must survive a power loss with the segments in it: its entry
        // is made durable with the first fsync of data (nothing in it is acknowledged before),
        // so creating 100,000 partitions does not fsync 100,000 times.
        let mut unsynced_dirs = Vec::new();
        if !dir.is_dir() {
            // Missing ancestors (the first partition's `topics/`) are made durable now.
            let parent = dir.parent().unwrap_or(Path::new("."));
            crate::store::durable::create_dir_all_durable(parent)?;
            match std::fs::create_dir(dir) {
                Err(e) if !(e.kind() == std::io::ErrorKind::AlreadyExists && dir.is_dir()) => return Err(e.into()),
                _ => unsynced_dirs.push(parent.to_path_buf()),
            }
        }
        let listing = Listing::read(dir)?;
        let opened = match seal::plan(epoch, &listing) {
            Plan::Superseded { newer } => return Err(LogError::Superseded { newer }),
            Plan::Own { seal, own } => open_own(dir, &config, epoch, seal, &own)?,
            Plan::Takeover { previous, previous_seal, files } => {
                take_over(dir, &config, epoch, previous, previous_seal, &files)?
            }
        };
        let Opened { mut segments, mut info, start, recovery_point, cut, sealed_from } = opened;
        let end = segments.values().next_back().map_or(start, |s| s.next_offset);
        if segments.values().next_back().is_none_or(|s| s.epoch != epoch) {
            // Appends go to a segment of this epoch only.
            let at = end.max(start);
            segments.insert(at, Box::new(Segment::create(dir, at, epoch, &config.files)?));
            unsynced_dirs.push(dir.to_path_buf());
        }
        info.segments = segments.len();
        let end = segments.values().next_back().map_or(0, |s| s.next_offset);
        let (start_file, _) = LogStartFile::open(dir, epoch);
        let mut log = Log {
            dir: dir.to_path_buf(),
            segments,
            config,
            unsynced: Vec::new(),
            unsynced_dirs,
            leader_epoch: epoch,
            // A recovery point past a cut, or past the end found, vouches for nothing.
            recovery_point: recovery_point.filter(|rp| !cut && *rp <= end),
            recovery_point_size: 0,
            start,
            start_file: Arc::new(start_file),
            sealed_from,
        };
        if log.recovery_point == Some(end) {
            log.recovery_point_size = log.size_bytes();
        }
        Ok((log, info))
    }
}

/// What recovery found, before the log is assembled.
struct Opened {
    segments: Segments,
    info: RecoveryInfo,
    /// The log start (a DeleteRecords' start, or the oldest segment's base when later).
    start: i64,
    recovery_point: Option<i64>,
    cut: bool,
    /// (predecessor epoch, sealed end) when this epoch's log starts from a seal.
    sealed_from: Option<(i32, i64)>,
}

/// The files a seal names, as far as it trusts them; those retention or DeleteRecords removed
/// since (the oldest ones) are skipped.
fn load_sealed(dir: &Path, seal: &Seal, config: &LogConfig, segments: &mut Segments) -> Result<(), LogError> {
    for s in &seal.segments {
        let mode = OpenMode::Sealed { len: s.len };
        match Segment::open(dir, s.base, s.epoch, mode, config.index_interval_bytes, &config.files) {
            Ok((seg, _)) => {
                segments.insert(s.base, Box::new(seg));
            }
            Err(LogError::Io(e)) if e.kind() == std::io::ErrorKind::NotFound && segments.is_empty() => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

/// Reopening this epoch's log: the files of its seal, then its own, recovered and cut.
fn open_own(dir: &Path, config: &LogConfig, epoch: i32, seal: Option<i32>, own: &[i64]) -> Result<Opened, LogError> {
    let mut segments = Segments::new();
    let mut sealed_start = None;
    let mut sealed_end = 0;
    let mut sealed_from = None;
    if let Some(s) = seal {
        let seal = Seal::read(dir, s)?;
        load_sealed(dir, &seal, config, &mut segments)?;
        sealed_start = Some(seal.log_start);
        sealed_end = seal.end;
        sealed_from = Some((seal.previous, seal.end));
    }
    let recovery_point = read_recovery_point(dir, epoch);
    let mut info = RecoveryInfo::default();
    let mut cut = false;
    for (i, &base) in own.iter().enumerate() {
        // The first file left is the log's start whatever its base: retention and DeleteRecords
        // remove files from the front, the seal's and this epoch's alike.
        let contiguous = segments.values().next_back().is_none_or(|prev| prev.next_offset == base);
        if cut || !contiguous {
            // Past a cut or a gap: nothing here was ever acknowledged.
            let path = seal::segment_path(dir, base, epoch);
            info.truncated_bytes += std::fs::metadata(&path).map(|m| m.len()).unwrap_or(0);
            std::fs::remove_file(&path)?;
            cut = true;
            continue;
        }
        let verify = own.get(i + 1).is_none_or(|next| *next > recovery_point.unwrap_or(-1));
        let mode = OpenMode::Own { verify };
        let (seg, truncated) = Segment::open(dir, base, epoch, mode, config.index_interval_bytes, &config.files)?;
        info.truncated_bytes += truncated;
        cut = truncated > 0;
        segments.insert(base, Box::new(seg));
    }
    if cut {
        crate::store::durable::sync_dir(dir)?;
    }
    let (_, from_file) = LogStartFile::open(dir, epoch);
    let from_file = from_file.max(sealed_start);
    settle_start(epoch, &mut segments, from_file, sealed_end, &mut info, true)?;
    Ok(Opened { segments, info, start: from_file.unwrap_or(0), recovery_point, cut, sealed_from })
}

/// A takeover: `previous`'s files are read up to their last valid batch (never changed), and
/// this epoch's seal, written durably, records how far.
fn take_over(
    dir: &Path,
    config: &LogConfig,
    epoch: i32,
    previous: i32,
    previous_seal: Option<i32>,
    files: &[i64],
) -> Result<Opened, LogError> {
    let mut segments = Segments::new();
    let mut sealed_start = None;
    let mut end = None;
    if let Some(s) = previous_seal {
        let seal = Seal::read(dir, s)?;
        load_sealed(dir, &seal, config, &mut segments)?;
        sealed_start = Some(seal.log_start);
        end = Some(seal.end);
    }
    let recovery_point = read_recovery_point(dir, previous);
    let mut info = RecoveryInfo { took_over_from: Some(previous), ..RecoveryInfo::default() };
    // Where the next file must start: after the last file kept (an empty one too). With none
    // kept (retention removed every sealed file), the first file starts the log.
    let mut next_base = segments.values().next_back().map(|s| s.next_offset);
    for (i, &base) in files.iter().enumerate() {
        if next_base.is_some_and(|e| e != base) {
            // A gap: the predecessor's later files were never acknowledged as a whole log.
            break;
        }
        let verify = files.get(i + 1).is_none_or(|next| *next > recovery_point.unwrap_or(-1));
        let mode = OpenMode::Predecessor { verify };
        let (seg, past) = Segment::open(dir, base, previous, mode, config.index_interval_bytes, &config.files)?;
        info.truncated_bytes += past;
        end = Some(seg.next_offset);
        next_base = end;
        // An empty file holds nothing to trust (and this epoch's first segment takes its base).
        if seg.size > 0 {
            segments.insert(base, Box::new(seg));
        }
        if past > 0 {
            break;
        }
    }
    let (_, from_file) = LogStartFile::open(dir, previous);
    let from_file = from_file.max(sealed_start);
    let end = end.unwrap_or(0);
    let start = settle_start(epoch, &mut segments, from_file, end, &mut info, false)?;
    let end = segments.values().next_back().map_or(end.max(start), |s| s.next_offset);
    let sealed =
        segments.values().map(|s| SealedSegment { base: s.base_offset, epoch: s.epoch, len: s.size }).collect();
    Seal { epoch, previous, log_start: start, end, segments: sealed }.write(dir)?;
    let sealed_from = Some((previous, end));
    Ok(Opened { segments, info, start: from_file.unwrap_or(0), recovery_point: None, cut: false, sealed_from })
}

/// The log start the log opens at, and the segments wholly below it taken out (deleted when
/// they are this epoch's or `delete`; at a takeover a predecessor's files are left alone).
/// A start past the end found starts the log empty there, as Kafka's log loader does, so no
/// offset below it is given out again.
fn settle_start(
    epoch: i32,
    segments: &mut Segments,
    from_file: Option<i64>,
    found_end: i64,
    info: &mut RecoveryInfo,
    delete: bool,
) -> Result<i64, LogError> {
    let first_base = segments.values().next().map_or(found_end, |s| s.base_offset);
    let start = opening_start(from_file, first_base);
    let end = segments.values().next_back().map_or(found_end, |s| s.next_offset);
    let mut gone: Vec<Box<Segment>> = Vec::new();
    if start > end {
        gone.extend(std::mem::take(segments).into_values());
    } else {
        let spans: Vec<(i64, i64)> = segments.values().map(|s| (s.base_offset, s.next_offset)).collect();
        gone.extend(segments_below_start(&spans, start).into_iter().filter_map(|b| segments.remove(&b)));
    }
    for seg in gone {
        if start > end {
            info.truncated_bytes += seg.size;
        }
        if delete || seg.epoch == epoch {
            seg.delete()?;
        }
    }
    Ok(start)
}
