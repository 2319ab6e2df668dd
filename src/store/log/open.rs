//! Opening a log: recovery, and the takeover of a predecessor's files (store::cluster::seal).
//! As Kafka's log recovery, every segment holding offsets at or past the recovery point (all of
//! them when there is none) has its CRCs verified, and the log ends at the first torn or
//! corrupt batch or at a gap between segments. In this epoch's own files what lies past that
//! was never durable, so never acknowledged, and is cut away; a predecessor's files are never
//! changed: the seal records how far they are read.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::segment::{OpenMode, Segment};
use super::start_offset::{opening_start, segments_below_start, LogStartFile};
use super::{read_recovery_point, Log, LogConfig, LogError, RecoveryInfo};
use crate::store::cluster::seal::{self, Listing, Plan, Seal, SealedSegment, SegmentId};

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
        let (opened, listing) = open_files(dir, &config, epoch)?;
        let Opened { mut segments, mut info, start, recovery_point, cut, sealed_from, seal: _ } = opened;
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
            first_dirty: 0,
            next_gen: listing.segments.iter().map(|s| s.gen).max().unwrap_or(0).saturating_add(1),
            // Unknown after a restart: the first pass finds the horizons again.
            pending_horizon: None,
        };
        // A cleaned file ends where the last pass cleaned to: the next one starts mapping there.
        log.first_dirty = log.segments.values().filter(|s| s.gen > 0).map(|s| s.next_offset).max().unwrap_or(0);
        if log.recovery_point == Some(end) {
            log.recovery_point_size = log.size_bytes();
        }
        Ok((log, info))
    }
}

/// How many times a takeover lists the directory again when a file it listed is gone: a
/// predecessor still running (a zombie) may have finished a cleaning in between, whose new file
/// the next listing shows.
const TAKEOVER_ATTEMPTS: usize = 5;

/// The files of the log as `epoch` opens it (and the listing they were found in).
fn open_files(dir: &Path, config: &LogConfig, epoch: i32) -> Result<(Opened, Listing), LogError> {
    let mut attempt = 0;
    loop {
        let listing = Listing::read(dir)?;
        let opened = match seal::plan(epoch, &listing) {
            Plan::Superseded { newer } => return Err(LogError::Superseded { newer }),
            Plan::Own { seal, own } => open_own(dir, config, epoch, seal, &own),
            Plan::Takeover { previous, previous_seal, files } => {
                take_over(dir, config, epoch, previous, previous_seal, &files)
            }
        };
        match opened {
            Err(LogError::Io(e)) if e.kind() == std::io::ErrorKind::NotFound && attempt + 1 < TAKEOVER_ATTEMPTS => {
                tracing::info!(dir = %dir.display(), "a listed segment file went while opening; listing again");
                attempt += 1;
            }
            other => {
                let opened = other?;
                // eos-rules 68: an unfinished cleaning (this epoch's or a predecessor's) is never
                // read; deleting it makes a zombie's rename of it fail.
                super::clean::remove_unfinished(dir, epoch)?;
                if let Some(seal) = &opened.seal {
                    remove_unreferenced(dir, &listing, seal)?;
                }
                return Ok((opened, listing));
            }
        }
    }
}

/// Deletes what this epoch's durable seal makes no one's (`seal::unreferenced`): older epochs'
/// names, whose files it reaches through its own links (a taker that listed before the seal
/// and finds one gone lists again and takes over from this seal), and files a cleaning covers.
fn remove_unreferenced(dir: &Path, listing: &Listing, seal: &Seal) -> Result<(), LogError> {
    for name in seal::unreferenced(listing, seal) {
        match std::fs::remove_file(dir.join(name)) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => return Err(e.into()),
            _ => {}
        }
    }
    Ok(())
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
    /// This epoch's seal (None: epoch 0 without one).
    seal: Option<Seal>,
}

/// One file a log may be made of: a file a seal names (trusted up to `sealed_len`, reached
/// through the sealing epoch's link when `holder` is set) or a file of the epoch opening the log
/// (own) or of the predecessor it takes over.
#[derive(Debug, Clone, Copy)]
struct Candidate {
    id: SegmentId,
    sealed_len: Option<u64>,
    holder: Option<i32>,
}

impl Candidate {
    fn path(&self, dir: &Path) -> PathBuf {
        match self.holder {
            Some(holder) => dir.join(seal::linked_name(self.id, holder)),
            None => seal::segment_path(dir, self.id.base, self.id.epoch, self.id.gen),
        }
    }
}

/// The files of `seal` and then `files` of `epoch`, in the order the log is assembled: by base
/// offset and, at one base, the newest cleaning generation first (store::log::clean: a cleaned
/// file covers the files from its base up to its end, which the walk then skips).
fn candidates(
    dir: &Path,
    seal: Option<i32>,
    epoch: i32,
    files: &[(i64, u32)],
) -> Result<(Vec<Candidate>, Option<Seal>), LogError> {
    let seal = seal.map(|s| Seal::read(dir, s)).transpose()?;
    let mut out: Vec<Candidate> = seal
        .iter()
        .flat_map(|seal| seal.segments.iter().map(move |s| (seal.epoch, s)))
        .map(|(by, s)| Candidate { id: s.id(), sealed_len: Some(s.len), holder: s.linked.then_some(by) })
        .collect();
    out.extend(files.iter().map(|&(base, gen)| Candidate {
        id: SegmentId { base, epoch, gen },
        sealed_len: None,
        holder: None,
    }));
    out.sort_by_key(|c| (c.id.base, std::cmp::Reverse(c.id.gen)));
    Ok((out, seal))
}

/// Whether the file at `i` must have its CRCs checked: it holds offsets at or past the
/// recovery point (the next file's base is past it, or there is no next file).
fn must_verify(all: &[Candidate], i: usize, recovery_point: Option<i64>) -> bool {
    let base = all[i].id.base;
    all[i + 1..].iter().map(|c| c.id.base).find(|b| *b > base).is_none_or(|next| next > recovery_point.unwrap_or(-1))
}

/// Where the log assembled so far ends (None: nothing yet).
fn end_of(segments: &Segments) -> Option<i64> {
    segments.values().next_back().map(|s| s.next_offset)
}

/// A file a seal names, as far as it trusts it. A missing one is skipped while nothing is
/// loaded yet: retention and DeleteRecords remove files from the front.
fn load_sealed(
    dir: &Path,
    c: Candidate,
    len: u64,
    config: &LogConfig,
    segments: &mut Segments,
) -> Result<(), LogError> {
    let mode = OpenMode::Sealed { len };
    match Segment::open(c.path(dir), c.id, mode, config.index_interval_bytes, &config.files) {
        Ok((seg, _)) => {
            segments.insert(c.id.base, Box::new(seg));
            Ok(())
        }
        Err(LogError::Io(e)) if e.kind() == std::io::ErrorKind::NotFound && segments.is_empty() => Ok(()),
        Err(e) => Err(e),
    }
}

/// Reopening this epoch's log: the files of its seal, then its own, recovered and cut. Own
/// files a completed cleaning covers are deleted (after the directory is fsynced, so that the
/// cleaned file's name is durable first).
fn open_own(
    dir: &Path,
    config: &LogConfig,
    epoch: i32,
    seal: Option<i32>,
    own: &[(i64, u32)],
) -> Result<Opened, LogError> {
    let (all, seal) = candidates(dir, seal, epoch, own)?;
    let sealed_start = seal.as_ref().map(|s| s.log_start);
    let sealed_end = seal.as_ref().map_or(0, |s| s.end);
    let sealed_from = seal.as_ref().map(|s| (s.previous, s.end));
    let mut segments = Segments::new();
    let recovery_point = read_recovery_point(dir, epoch);
    let mut info = RecoveryInfo::default();
    let mut cut = false;
    let mut covered = Vec::new();
    for (i, &c) in all.iter().enumerate() {
        let end = end_of(&segments);
        if end.is_some_and(|e| c.id.base < e) {
            // store::log::clean: a cleaned file covers this one.
            if c.sealed_len.is_none() {
                covered.push(seal::segment_path(dir, c.id.base, epoch, c.id.gen));
            }
            continue;
        }
        if let Some(len) = c.sealed_len {
            load_sealed(dir, c, len, config, &mut segments)?;
            continue;
        }
        // The first file left is the log's start whatever its base: retention and DeleteRecords
        // remove files from the front, the seal's and this epoch's alike.
        if cut || end.is_some_and(|e| e != c.id.base) {
            // Past a cut or a gap: nothing here was ever acknowledged.
            let path = seal::segment_path(dir, c.id.base, epoch, c.id.gen);
            info.truncated_bytes += std::fs::metadata(&path).map(|m| m.len()).unwrap_or(0);
            std::fs::remove_file(&path)?;
            cut = true;
            continue;
        }
        let mode = OpenMode::Own { verify: must_verify(&all, i, recovery_point) };
        let (seg, truncated) = Segment::open(c.path(dir), c.id, mode, config.index_interval_bytes, &config.files)?;
        info.truncated_bytes += truncated;
        cut = truncated > 0;
        segments.insert(c.id.base, Box::new(seg));
    }
    if cut || !covered.is_empty() {
        crate::store::durable::sync_dir(dir)?;
    }
    for path in covered {
        std::fs::remove_file(path)?;
    }
    let (_, from_file) = LogStartFile::open(dir, epoch);
    let from_file = from_file.max(sealed_start);
    settle_start(epoch, &mut segments, from_file, sealed_end, &mut info, true)?;
    Ok(Opened { segments, info, start: from_file.unwrap_or(0), recovery_point, cut, sealed_from, seal })
}

/// A takeover: `previous`'s files (after those of its seal `previous_seal`) are read up to
/// their last valid batch (never changed), and this epoch's seal, written durably, records how
/// far. Files a cleaning of the predecessor covers are skipped; its unfinished cleanings
/// (`.cleaning` files) are never read.
fn take_over(
    dir: &Path,
    config: &LogConfig,
    epoch: i32,
    previous: i32,
    previous_seal: Option<i32>,
    files: &[(i64, u32)],
) -> Result<Opened, LogError> {
    let (all, seal) = candidates(dir, previous_seal, previous, files)?;
    let sealed_start = seal.as_ref().map(|s| s.log_start);
    let mut end = seal.as_ref().map(|s| s.end);
    let mut segments = Segments::new();
    let recovery_point = read_recovery_point(dir, previous);
    let mut info = RecoveryInfo { took_over_from: Some(previous), ..RecoveryInfo::default() };
    // Where the next file must start: after the last file kept (an empty one too). With none
    // kept (retention removed every sealed file), the first file starts the log.
    let mut next_base: Option<i64> = None;
    for (i, &c) in all.iter().enumerate() {
        if next_base.is_some_and(|e| c.id.base < e) {
            // Covered by a predecessor's cleaning (eos-rules 68): no one's any more.
            continue;
        }
        if let Some(len) = c.sealed_len {
            load_sealed(dir, c, len, config, &mut segments)?;
            next_base = end_of(&segments).or(next_base);
            continue;
        }
        if next_base.is_some_and(|e| e != c.id.base) {
            // A gap: the predecessor's later files were never acknowledged as a whole log.
            break;
        }
        let mode = OpenMode::Predecessor { verify: must_verify(&all, i, recovery_point) };
        let (seg, past) = Segment::open(c.path(dir), c.id, mode, config.index_interval_bytes, &config.files)?;
        info.truncated_bytes += past;
        end = Some(seg.next_offset);
        next_base = end;
        // An empty file holds nothing to trust (and this epoch's first segment takes its base).
        if seg.size > 0 {
            segments.insert(c.id.base, Box::new(seg));
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
    // Every file the seal trusts is reached through a name of this epoch (a hard link), made
    // durable before the seal names it: a predecessor still running unlinks only its own names.
    // A file it unlinked before the link is not found, and the directory is listed again.
    // On a file system without hard links the seal names the predecessor's own files, as
    // before links (that zombie's late unlinks are then not guarded against).
    let mut sealed = Vec::with_capacity(segments.len());
    let mut links = true;
    for seg in segments.values_mut() {
        let own = dir.join(seal::linked_name(seg.id(), epoch));
        if links {
            match link_fresh(&seg.path, &own) {
                Ok(()) => seg.path = own,
                Err(LogError::Io(e)) if no_hard_links(&e) => {
                    tracing::warn!(dir = %dir.display(), "no hard links here ({e}): the seal names the predecessor's files");
                    links = false;
                }
                Err(e) => return Err(e),
            }
        }
        sealed.push(SealedSegment {
            base: seg.base_offset,
            epoch: seg.epoch,
            gen: seg.gen,
            len: seg.size,
            linked: links,
        });
    }
    if sealed.iter().any(|s| s.linked) {
        crate::store::durable::sync_dir(dir)?;
    }
    let seal = Seal { epoch, previous, log_start: start, end, segments: sealed };
    seal.write(dir)?;
    let sealed_from = Some((previous, end));
    Ok(Opened {
        segments,
        info,
        start: from_file.unwrap_or(0),
        recovery_point: None,
        cut: false,
        sealed_from,
        seal: Some(seal),
    })
}

/// Whether `link(2)` failed because the file system has no hard links (not because the file
/// went: NotFound lists the directory again).
fn no_hard_links(e: &std::io::Error) -> bool {
    const EPERM: i32 = 1;
    const EXDEV: i32 = 18;
    const EMLINK: i32 = 31;
    const ENOSYS: i32 = 38;
    const EOPNOTSUPP: i32 = 95;
    matches!(e.raw_os_error(), Some(EPERM | EXDEV | EMLINK | ENOSYS | EOPNOTSUPP))
}

/// Links `from` as `to`, replacing a `to` left by an attempt of the same epoch that failed.
fn link_fresh(from: &Path, to: &Path) -> Result<(), LogError> {
    match std::fs::hard_link(from, to) {
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
            std::fs::remove_file(to)?;
            std::fs::hard_link(from, to)?;
        }
        other => other?,
    }
    Ok(())
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
