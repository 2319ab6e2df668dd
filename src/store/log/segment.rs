//! One segment file `<base>.log` with its sparse offset index and time index, kept in memory and
//! rebuilt from the batch headers on open. File positions are u64 everywhere: a segment may grow
//! past 4 GiB without a position wrapping to the start of the file.
//!
//! The active segment is zeroed ahead of its appends (`LogConfig::zero_ahead_bytes`): an fsync
//! that covers blocks already allocated and written does not commit the file system's journal
//! (a new file size, new extents), which on ext4 is about half of its time and CPU. So a
//! segment file may end in zeros past its last batch: opening reads batches up to the first
//! that does not parse, and zeros past it are no torn tail.

use std::fs::{File, OpenOptions};
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use bytes::{Bytes, BytesMut};

use super::file_cache::FileCache;
use super::file_range::FileRange;
use super::LogError;
use crate::store::batch::{self, BatchHeader, HEADER_LEN};
use crate::store::cluster::seal::{segment_path, SegmentId};

/// The file of the segment at `base` of epoch 0 (the plain name).
#[cfg(test)]
pub fn segment_file(dir: &Path, base: i64) -> PathBuf {
    segment_path(dir, base, 0, 0)
}

/// How a segment file is opened (store::cluster::seal).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OpenMode {
    /// A file of this leader's epoch: CRCs checked when `verify`, a torn or corrupt tail cut.
    Own { verify: bool },
    /// A predecessor's file at a takeover: read up to its last valid batch, never changed.
    Predecessor { verify: bool },
    /// A predecessor's file as a seal trusts it: exactly `len` bytes of batches.
    Sealed { len: u64 },
}

#[derive(Debug)]
pub struct Segment {
    pub base_offset: i64,
    pub path: PathBuf,
    /// The broker's open-file cache and this segment's key in it: the file is opened on use.
    files: Arc<FileCache>,
    id: u64,
    /// The open file appends went through since the last fsync was asked for: that fsync goes
    /// through the same descriptor, so a write error is reported to it whatever the cache did.
    written: Option<Arc<File>>,
    pub size: u64,
    /// Where the file's zeros written ahead of the appends end (at least `size`; see the module
    /// comment).
    zeroed_to: u64,
    /// Next offset after the last batch of this segment.
    pub next_offset: i64,
    pub max_timestamp: i64,
    /// (last offset of a batch, position of that batch), every `index_interval` bytes.
    index: Vec<(i64, u64)>,
    /// (max timestamp so far, base offset of the batch that raised it).
    time_index: Vec<(i64, i64)>,
    bytes_since_index: usize,
    /// Whether this broker writes the file (a segment of its own epoch).
    writable: bool,
    /// The epoch that created the file (its name carries it).
    pub epoch: i32,
    /// The file's cleaning generation (0: written by appends; its name carries it).
    pub gen: u32,
    /// When this broker created or opened the segment (Kafka's `LogSegment.created`), for
    /// segment.ms when no batch carries a timestamp.
    opened_ms: i64,
}

impl Segment {
    /// Creates the segment at `base_offset` of epoch `epoch`. The name is new: an existing file
    /// (a left-over of this epoch cut away by recovery) is emptied, never one of another epoch.
    pub fn create(dir: &Path, base_offset: i64, epoch: i32, files: &Arc<FileCache>) -> Result<Segment, LogError> {
        let path = segment_path(dir, base_offset, epoch, 0);
        // POSIX: the new name survives a power loss only once its directory is fsynced; the log
        // has that done with the first fsync of its data (Log::sync_handles).
        let file = Arc::new(OpenOptions::new().create(true).truncate(true).read(true).write(true).open(&path)?);
        let id = files.register();
        files.put(id, file);
        Ok(Segment {
            base_offset,
            path,
            files: files.clone(),
            id,
            written: None,
            size: 0,
            zeroed_to: 0,
            next_offset: base_offset,
            max_timestamp: -1,
            index: Vec::new(),
            time_index: Vec::new(),
            bytes_since_index: 0,
            writable: true,
            epoch,
            gen: 0,
            opened_ms: crate::store::clock::now_ms(),
        })
    }

    /// Opens the existing segment `id` at `path` (its own name, or a link a seal names),
    /// scanning every batch header (see `OpenMode`). Returns the segment and the bytes past its
    /// last valid batch (cut away in an own file, left as they are in a predecessor's).
    pub fn open(
        path: PathBuf,
        id: SegmentId,
        mode: OpenMode,
        index_interval: usize,
        files: &Arc<FileCache>,
    ) -> Result<(Segment, u64), LogError> {
        let SegmentId { base: base_offset, epoch, gen } = id;
        let writable = matches!(mode, OpenMode::Own { .. });
        let file = OpenOptions::new().read(true).write(writable).open(&path)?;
        let on_disk = file.metadata()?.len();
        let (len, verify) = match mode {
            OpenMode::Own { verify } | OpenMode::Predecessor { verify } => (on_disk, verify),
            OpenMode::Sealed { len } if len <= on_disk => (len, false),
            OpenMode::Sealed { len } => {
                return Err(LogError::Corrupt(format!("{}: {on_disk} bytes, sealed at {len}", path.display())));
            }
        };
        let mut seg = Segment {
            base_offset,
            path,
            files: files.clone(),
            id: files.register(),
            written: None,
            size: 0,
            zeroed_to: 0,
            next_offset: base_offset,
            max_timestamp: -1,
            index: Vec::new(),
            time_index: Vec::new(),
            bytes_since_index: index_interval,
            writable,
            epoch,
            gen,
            opened_ms: crate::store::clock::now_ms(),
        };
        let mut pos: u64 = 0;
        let mut header_buf = [0u8; HEADER_LEN];
        while pos + HEADER_LEN as u64 <= len {
            if file.read_exact_at(&mut header_buf, pos).is_err() {
                break;
            }
            let Ok(h) = BatchHeader::parse(&header_buf) else {
                break;
            };
            let size = h.total_size() as u64;
            if pos + size > len || h.base_offset < seg.next_offset || h.last_offset_delta < 0 {
                break;
            }
            if verify {
                let mut full = vec![0u8; size as usize];
                file.read_exact_at(&mut full, pos)?;
                if batch::verify_crc(&full, &h).is_err() {
                    break;
                }
            }
            seg.note_batch(&h, pos, index_interval);
            pos += size;
        }
        // Zeros written ahead of the appends are no torn tail (module comment); a tail with any
        // other byte is, all of it.
        let truncated = match mode {
            OpenMode::Sealed { .. } => len - pos,
            _ => written_past(&file, pos, len)?,
        };
        match mode {
            OpenMode::Own { .. } if truncated > 0 => {
                file.set_len(pos)?;
                file.sync_all()?;
            }
            OpenMode::Own { .. } => seg.zeroed_to = len,
            OpenMode::Sealed { .. } if truncated > 0 => {
                return Err(LogError::Corrupt(format!(
                    "{}: no whole batch at {pos}, sealed at {len}",
                    seg.path.display()
                )));
            }
            _ => {}
        }
        seg.size = pos;
        seg.zeroed_to = seg.zeroed_to.max(pos);
        // Kept for what recovery reads next (the log tail); the cache closes the least used.
        files.put(seg.id, Arc::new(file));
        Ok((seg, truncated))
    }

    fn note_batch(&mut self, h: &BatchHeader, pos: u64, index_interval: usize) {
        if self.bytes_since_index >= index_interval || self.index.is_empty() {
            self.index.push((h.last_offset(), pos));
            self.bytes_since_index = 0;
        }
        self.bytes_since_index += h.total_size();
        if h.max_timestamp > self.max_timestamp {
            self.max_timestamp = h.max_timestamp;
            self.time_index.push((h.max_timestamp, h.base_offset));
        }
        self.next_offset = h.last_offset() + 1;
        self.size = pos + h.total_size() as u64;
    }

    /// Appends one batch whose base offset is already patched, given as consecutive pieces (a
    /// header and the rest), at the end; first zeroes the file ahead of it (`ahead`).
    pub fn append(
        &mut self,
        data: &[&[u8]],
        h: &BatchHeader,
        index_interval: usize,
        ahead: ZeroAhead,
    ) -> Result<(), LogError> {
        if !self.writable {
            // store::cluster::seal: a predecessor's file is never written.
            return Err(LogError::Corrupt(format!("{}: a predecessor's segment is read-only", self.path.display())));
        }
        let pos = self.size;
        let file = match self.written.take() {
            Some(f) => f,
            None => self.file()?,
        };
        let len: u64 = data.iter().map(|d| d.len() as u64).sum();
        self.zero_ahead(&file, pos + len, ahead);
        let wrote = write_all_at_vectored(&file, data, pos);
        // Kept even after a failed write: part of it may be in the page cache.
        self.written = Some(file);
        wrote?;
        self.note_batch(h, pos, index_interval);
        self.zeroed_to = self.zeroed_to.max(self.size);
        Ok(())
    }

    /// Writes zeros past `zeroed_to` when fewer than half of the bytes wanted ahead are left past
    /// `end`: up to that many past it, rounded up to a whole 4 KiB block, never past
    /// `ahead.limit` (the segment's size). Wanted: `ahead.bytes`, but never more than the
    /// segment holds, so a partition written little leaves little behind (a takeover's sealed
    /// file keeps its zeros; a file's last block is allocated whole anyway). A failed write
    /// (ENOSPC) only leaves the append to grow the file itself; what it wrote is zeros.
    fn zero_ahead(&mut self, file: &File, end: u64, ahead: ZeroAhead) {
        self.zeroed_to = self.zeroed_to.max(self.size);
        let want = ahead.bytes.min(end);
        if want == 0 || self.zeroed_to >= end.saturating_add(want / 2) {
            return;
        }
        let target = end.saturating_add(want).div_ceil(ZERO_BLOCK).saturating_mul(ZERO_BLOCK).min(ahead.limit);
        while self.zeroed_to < target {
            let n = usize::try_from(target - self.zeroed_to).map_or(ZEROS.len(), |n| n.min(ZEROS.len()));
            if file.write_all_at(&ZEROS[..n], self.zeroed_to).is_err() {
                return;
            }
            self.zeroed_to += n as u64;
        }
    }

    /// Cuts the zeros written ahead of the appends off a segment no longer appended to.
    pub fn trim(&mut self) -> Result<(), LogError> {
        if self.writable && self.zeroed_to > self.size {
            self.file()?.set_len(self.size)?;
            self.zeroed_to = self.size;
        }
        Ok(())
    }

    /// The file appends went through since the last call, for an fsync on the syncer thread;
    /// None when nothing was appended since.
    pub fn sync_handle(&mut self) -> Option<Arc<File>> {
        self.written.take()
    }

    /// Opens (through the cache) and fsyncs the file. An empty segment holds nothing to sync.
    pub fn sync_data(&self) -> Result<(), LogError> {
        if self.size > 0 {
            self.file()?.sync_data()?;
        }
        Ok(())
    }

    /// The open file, from the cache (opened again when it was evicted).
    fn file(&self) -> Result<Arc<File>, LogError> {
        Ok(self.files.get(self.id, &self.path, self.writable)?)
    }

    /// Position of the batch holding `offset`, or None when it is past this segment's end.
    fn locate(&self, offset: i64) -> Result<Option<(u64, BatchHeader)>, LogError> {
        // Start at the last indexed batch that ends before `offset`.
        let idx = self.index.partition_point(|(last, _)| *last < offset);
        let mut pos = idx.checked_sub(1).and_then(|i| self.index.get(i)).map_or(0, |&(_, p)| p);
        let file = self.file()?;
        let mut peek = [0u8; HEADER_LEN];
        while pos < self.size {
            let left = usize::try_from(self.size - pos).unwrap_or(HEADER_LEN);
            file.read_exact_at(&mut peek[..HEADER_LEN.min(left)], pos)?;
            let h =
                BatchHeader::parse(&peek).map_err(|e| LogError::Corrupt(format!("{}: {e}", self.path.display())))?;
            if h.last_offset() >= offset {
                return Ok(Some((pos, h)));
            }
            pos += h.total_size() as u64;
        }
        Ok(None)
    }

    /// The range of whole batches from the one holding `offset`, stopping before `upper_bound`
    /// (exclusive) and after `max_bytes` (the first batch is returned whole even if larger); None
    /// when there is nothing to read. Only batch headers are read: the sparse index finds both
    /// ends, so the work is bounded by the index interval, not by the bytes in the range.
    pub fn read_range(&self, offset: i64, upper_bound: i64, max_bytes: usize) -> Result<Option<FileRange>, LogError> {
        let Some((start, first)) = self.locate(offset)? else {
            return Ok(None);
        };
        if first.base_offset >= upper_bound {
            return Ok(None);
        }
        // Where the readable part ends: a batch that starts below the bound is readable whole.
        let readable_end = if upper_bound >= self.next_offset {
            self.size
        } else {
            match self.locate(upper_bound)? {
                Some((pos, h)) if h.base_offset < upper_bound => pos + h.total_size() as u64,
                Some((pos, _)) => pos,
                None => self.size,
            }
        };
        let cap = start.saturating_add(max_bytes.max(first.total_size()) as u64);
        let end = if cap >= readable_end { readable_end } else { self.last_boundary(start, cap)? };
        // Batch lengths come from the disk: a range past the segment's end (or before its start)
        // is a corrupt header, never an allocation or a send of that size.
        let len =
            end.checked_sub(start).filter(|_| end <= self.size).and_then(|l| usize::try_from(l).ok()).ok_or_else(
                || LogError::Corrupt(format!("{}: batch at {start} runs past the segment", self.path.display())),
            )?;
        Ok(Some(FileRange { file: self.file()?, pos: start, len, loan: self.files.lend().map(Arc::new) }))
    }

    #[cfg(test)]
    pub fn read(&self, offset: i64, upper_bound: i64, max_bytes: usize) -> Result<Bytes, LogError> {
        Ok(self.read_range(offset, upper_bound, max_bytes)?.map(|r| r.load()).transpose()?.unwrap_or_default())
    }

    /// The end of the last whole batch that ends at or before `cap`, walking the headers from the
    /// last indexed batch at or after `start` that starts before `cap`.
    fn last_boundary(&self, start: u64, cap: u64) -> Result<u64, LogError> {
        let idx = self.index.partition_point(|&(_, p)| p < cap);
        let mut pos = idx.checked_sub(1).and_then(|i| self.index.get(i)).map_or(start, |&(_, p)| p.max(start));
        let mut end = pos;
        let file = self.file()?;
        while pos + HEADER_LEN as u64 <= self.size {
            let next = pos + self.header_at(&file, pos)?.total_size() as u64;
            if next > cap {
                break;
            }
            (end, pos) = (next, next);
        }
        Ok(end)
    }

    /// The header of the first batch holding offsets at or after `offset` (None: past the end).
    pub fn header_from(&self, offset: i64) -> Result<Option<BatchHeader>, LogError> {
        Ok(self.locate(offset)?.map(|(_, h)| h))
    }

    /// Header of every batch, in order (recovery of producer state).
    pub fn headers_from(&self, offset: i64) -> Result<Vec<BatchHeader>, LogError> {
        let mut out = Vec::new();
        let Some((mut pos, _)) = self.locate(offset)? else {
            return Ok(out);
        };
        let file = self.file()?;
        while pos + HEADER_LEN as u64 <= self.size {
            let h = self.header_at(&file, pos)?;
            pos += h.total_size() as u64;
            out.push(h);
        }
        Ok(out)
    }

    /// The whole batch header at `pos`.
    fn header_at(&self, file: &File, pos: u64) -> Result<BatchHeader, LogError> {
        let mut peek = [0u8; HEADER_LEN];
        file.read_exact_at(&mut peek, pos)?;
        BatchHeader::parse(&peek).map_err(|e| LogError::Corrupt(format!("{}: {e}", self.path.display())))
    }

    /// First batch whose max timestamp is >= `ts`: (base offset, the batch bytes).
    pub fn find_timestamp(&self, ts: i64) -> Result<Option<(i64, Bytes)>, LogError> {
        if self.max_timestamp < ts {
            return Ok(None);
        }
        let idx = self.time_index.partition_point(|(t, _)| *t < ts);
        let Some(&(_, base)) = self.time_index.get(idx) else {
            return Ok(None);
        };
        let Some((pos, h)) = self.locate(base)? else {
            return Ok(None);
        };
        let mut buf = BytesMut::zeroed(h.total_size());
        self.file()?.read_exact_at(&mut buf, pos)?;
        Ok(Some((h.base_offset, buf.freeze())))
    }

    /// The file's name as a segment id.
    pub fn id(&self) -> SegmentId {
        SegmentId { base: self.base_offset, epoch: self.epoch, gen: self.gen }
    }

    /// The max timestamp of the first batch (-1: empty), for max.compaction.lag.ms (KIP-354).
    pub fn first_batch_timestamp(&self) -> i64 {
        self.time_index.first().map_or(-1, |&(ts, _)| ts)
    }

    /// Kafka's `LogSegment.timeWaitedForRoll`: how far a batch whose max timestamp is
    /// `timestamp` lies past this segment's first batch, or, when no batch here has a
    /// timestamp, how long ago the segment was created or opened.
    pub fn time_waited_for_roll(&self, now_ms: i64, timestamp: i64) -> i64 {
        match self.first_batch_timestamp() {
            first if first >= 0 => timestamp.saturating_sub(first),
            _ => now_ms.saturating_sub(self.opened_ms),
        }
    }

    /// Takes the segment out of the file cache and returns its file, for the caller to delete.
    pub fn detach(self) -> PathBuf {
        self.path.clone()
    }

    /// Closes the file first, so that unlinking frees its blocks here and now (a file still
    /// open would be freed whenever its last descriptor closes, on whatever thread that is).
    pub fn delete(self) -> Result<(), LogError> {
        let path = self.path.clone();
        drop(self);
        std::fs::remove_file(path)?;
        Ok(())
    }
}

/// How far to zero a segment ahead of its appends (see the module comment).
#[derive(Debug, Clone, Copy)]
pub struct ZeroAhead {
    /// Bytes past the end of the appended data (`LogConfig::zero_ahead_bytes`); 0: none.
    pub bytes: u64,
    /// Never past this file size (`segment_bytes`: the segment rolls there).
    pub limit: u64,
}

/// The zeros written ahead, one write at a time at most.
static ZEROS: [u8; 256 << 10] = [0; 256 << 10];

/// Zeros ahead end on a multiple of this (a file system block).
const ZERO_BLOCK: u64 = 4096;

/// The bytes past `from` in the file's first `len`: 0 when they are all zeros (written ahead
/// of the appends, module comment), else all of them (a torn tail). Read 64 KiB at a time up to
/// the first byte that is not zero; a short read ends the file.
fn written_past(file: &File, from: u64, len: u64) -> std::io::Result<u64> {
    let mut buf = vec![0u8; 64 << 10];
    let mut pos = from;
    while pos < len {
        let want = usize::try_from(len - pos).map_or(buf.len(), |n| n.min(buf.len()));
        let n = file.read_at(&mut buf[..want], pos)?;
        if n == 0 {
            break;
        }
        if buf[..n].iter().any(|b| *b != 0) {
            return Ok(len - from);
        }
        pos += n as u64;
    }
    Ok(0)
}

/// pwritev(2) of `parts` at `pos`, continued after short writes: one system call for a batch
/// whose header the broker patched and whose records stay in the request's buffer.
fn write_all_at_vectored(file: &File, parts: &[&[u8]], mut pos: u64) -> std::io::Result<()> {
    let mut parts: Vec<&[u8]> = parts.iter().copied().filter(|p| !p.is_empty()).collect();
    while !parts.is_empty() {
        let n = match crate::sys::pwritev(file, &parts, pos) {
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        if n == 0 {
            return Err(std::io::Error::from(std::io::ErrorKind::WriteZero));
        }
        let mut n = n;
        pos += n as u64;
        while let Some(first) = parts.first_mut() {
            if n < first.len() {
                *first = &first[n..];
                break;
            }
            n -= first.len();
            parts.remove(0);
        }
    }
    Ok(())
}

/// A segment no longer in a log (its partition stopped, moved to a peer, was deleted, or the
/// segment went to retention) closes its file: the cache must not keep descriptors of files
/// nobody will read, least of all of deleted ones, whose blocks the kernel frees only when the
/// last descriptor closes (seconds of discard on some disks, at the broker's exit if not before).
impl Drop for Segment {
    fn drop(&mut self) {
        self.files.forget(self.id);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::batch::testutil::{batch, Spec};

    fn stored(base: i64) -> (BytesMut, BatchHeader) {
        let mut data = batch(Spec { records: 2, timestamp: 7, ..Spec::default() });
        batch::patch_base_offset(&mut data, base);
        let h = BatchHeader::parse(&data).unwrap();
        (data, h)
    }

    const AHEAD: ZeroAhead = ZeroAhead { bytes: 512 << 10, limit: 1 << 30 };

    #[test]
    fn positions_past_four_gib_are_not_truncated() {
        let dir = tempfile::tempdir().unwrap();
        let mut seg = Segment::create(dir.path(), 0, 0, &Arc::new(FileCache::new(4))).unwrap();
        // A sparse file standing for a segment that already holds 5 GiB.
        let five_gib = 5u64 << 30;
        seg.file().unwrap().set_len(five_gib).unwrap();
        seg.size = five_gib;
        let (first, h1) = stored(0);
        let (second, h2) = stored(2);
        seg.append(&[&first[..]], &h1, 0, AHEAD).unwrap();
        seg.append(&[&second[..7], &second[7..]], &h2, 0, AHEAD).unwrap();
        assert_eq!(seg.size, five_gib + (first.len() + second.len()) as u64);
        let mut head = [0u8; HEADER_LEN];
        seg.file().unwrap().read_exact_at(&mut head, five_gib - (4u64 << 30)).unwrap();
        assert_eq!(head, [0u8; HEADER_LEN], "nothing landed at the position truncated to 32 bits");
        let (pos, found) = seg.locate(2).unwrap().unwrap();
        assert_eq!((pos, found.base_offset), (five_gib + first.len() as u64, 2));
        assert_eq!(&seg.read(2, 4, 1 << 20).unwrap()[..], &second[..]);
    }

    /// What read_range must answer, from every header: (position, length) of the whole batches
    /// from the one holding `offset`, below `upper`, within `max` (the first one always).
    fn walked(batches: &[(i64, i64, usize)], offset: i64, upper: i64, max: usize) -> Option<(u64, usize)> {
        let first = batches.iter().position(|&(_, last, _)| last >= offset)?;
        if batches[first].0 >= upper {
            return None;
        }
        let pos: usize = batches[..first].iter().map(|b| b.2).sum();
        let mut len = batches[first].2;
        for &(base, _, size) in &batches[first + 1..] {
            if base >= upper || len + size > max {
                break;
            }
            len += size;
        }
        Some((pos as u64, len))
    }

    #[test]
    fn read_range_covers_the_whole_batches_a_walk_of_every_header_finds() {
        let dir = tempfile::tempdir().unwrap();
        let mut seg = Segment::create(dir.path(), 0, 0, &Arc::new(FileCache::new(4))).unwrap();
        let mut batches = Vec::new();
        let mut base = 0i64;
        for i in 0..40 {
            let n = 1 + (i * 7 % 9);
            let mut data = batch(Spec { records: n, timestamp: 7, ..Spec::default() });
            batch::patch_base_offset(&mut data, base);
            let h = BatchHeader::parse(&data).unwrap();
            // A small index interval: both ends are found from index entries, not from the start.
            seg.append(&[&data[..HEADER_LEN], &data[HEADER_LEN..]], &h, 150, AHEAD).unwrap();
            batches.push((base, h.last_offset(), data.len()));
            base += i64::from(n);
        }
        let whole = std::fs::read(&seg.path).unwrap();
        for offset in (0..=base).step_by(3) {
            for upper in [offset, offset + 1, offset + 5, offset + 40, base - 1, base, base + 10] {
                for max in [0, 1, 80, 200, 450, 1000, 1 << 20] {
                    let got = seg.read_range(offset, upper, max).unwrap();
                    let want = walked(&batches, offset, upper, max);
                    assert_eq!(got.as_ref().map(|r| (r.pos, r.len)), want, "offset {offset} upper {upper} max {max}");
                    if let Some(r) = got {
                        let start = r.pos as usize;
                        assert_eq!(&r.load().unwrap()[..], &whole[start..start + r.len]);
                    }
                }
            }
        }
    }

    #[test]
    fn a_batch_length_past_the_segment_end_is_corrupt_not_a_range() {
        let dir = tempfile::tempdir().unwrap();
        let seg = two_batches(dir.path());
        // The first batch's length on disk claims 1 GiB more than the file holds; a read bounded
        // inside it (a high watermark or LSO below the segment's end) measures it.
        let mut head = [0u8; HEADER_LEN];
        seg.file().unwrap().read_exact_at(&mut head, 0).unwrap();
        let claimed = i32::from_be_bytes([head[8], head[9], head[10], head[11]]) + (1 << 30);
        seg.file().unwrap().write_all_at(&claimed.to_be_bytes(), 8).unwrap();
        assert!(matches!(seg.read_range(0, 1, 1 << 20), Err(LogError::Corrupt(_))));
    }
    fn len_of(path: &Path) -> u64 {
        std::fs::metadata(path).unwrap().len()
    }

    fn zeros_past(path: &Path, from: u64) -> bool {
        std::fs::read(path).unwrap()[from as usize..].iter().all(|b| *b == 0)
    }

    #[test]
    fn zeros_ahead_end_on_a_block_past_a_small_segment() {
        let dir = tempfile::tempdir().unwrap();
        let mut seg = Segment::create(dir.path(), 0, 0, &Arc::new(FileCache::new(4))).unwrap();
        let (data, h) = stored(0);
        seg.append(&[&data[..]], &h, 0, AHEAD).unwrap();
        assert_eq!(len_of(&seg.path), 4096, "one block, not zero_ahead_bytes, for one small batch");
        assert!(zeros_past(&seg.path, seg.size));
    }

    #[test]
    fn zeros_ahead_grow_with_the_segment_up_to_zero_ahead_bytes() {
        let dir = tempfile::tempdir().unwrap();
        let mut seg = Segment::create(dir.path(), 0, 0, &Arc::new(FileCache::new(4))).unwrap();
        let ahead = ZeroAhead { bytes: 8192, limit: 1 << 20 };
        let mut base = 0;
        while seg.size < 64 << 10 {
            let (d, h) = stored(base);
            seg.append(&[&d[..]], &h, 0, ahead).unwrap();
            base += 2;
            let (len, want) = (len_of(&seg.path), 8192.min(seg.size));
            assert!(len >= seg.size + want / 2, "at least half of what is wanted ahead: {len} at {}", seg.size);
            assert!(len <= seg.size + want + 4095, "no more than wanted, to a block: {len} at {}", seg.size);
            assert_eq!(len % 4096, 0);
        }
        assert!(zeros_past(&seg.path, seg.size));
        let (d, _) = stored(base - 2);
        assert_eq!(seg.read(base - 2, base, 1 << 20).unwrap(), d.freeze());
    }

    #[test]
    fn zeros_ahead_stop_at_the_segment_size() {
        let dir = tempfile::tempdir().unwrap();
        let mut seg = Segment::create(dir.path(), 0, 0, &Arc::new(FileCache::new(4))).unwrap();
        let (data, h) = stored(0);
        seg.append(&[&data[..]], &h, 0, ZeroAhead { bytes: 1 << 20, limit: 4096 }).unwrap();
        assert_eq!(len_of(&seg.path), 4096);
        let none = tempfile::tempdir().unwrap();
        let mut seg = Segment::create(none.path(), 0, 0, &Arc::new(FileCache::new(4))).unwrap();
        seg.append(&[&data[..]], &h, 0, ZeroAhead { bytes: 0, limit: 1 << 30 }).unwrap();
        assert_eq!(len_of(&seg.path), seg.size, "zero_ahead_bytes 0: the file ends at its batch");
    }

    /// A segment of two batches (offsets 0-3) with zeros ahead.
    fn two_batches(dir: &Path) -> Segment {
        let mut seg = Segment::create(dir, 0, 0, &Arc::new(FileCache::new(4))).unwrap();
        for base in [0, 2] {
            let (d, h) = stored(base);
            seg.append(&[&d[..]], &h, 0, AHEAD).unwrap();
        }
        seg
    }

    /// `two_batches`, closed: its file and size.
    fn zeroed_segment(dir: &Path) -> (PathBuf, u64) {
        let seg = two_batches(dir);
        (seg.path.clone(), seg.size)
    }

    fn reopen(path: &Path, mode: OpenMode) -> (Segment, u64) {
        let id = SegmentId { base: 0, epoch: 0, gen: 0 };
        Segment::open(path.to_path_buf(), id, mode, 0, &Arc::new(FileCache::new(4))).unwrap()
    }

    #[test]
    fn a_zero_tail_is_no_torn_tail_and_is_written_over() {
        let dir = tempfile::tempdir().unwrap();
        let (path, size) = zeroed_segment(dir.path());
        let file_len = len_of(&path);
        assert!(file_len > size);
        let (mut seg, truncated) = reopen(&path, OpenMode::Own { verify: true });
        assert_eq!((truncated, seg.size, seg.next_offset, len_of(&path)), (0, size, 4, file_len));
        let (d, h) = stored(4);
        seg.append(&[&d[..]], &h, 0, AHEAD).unwrap();
        drop(seg);
        let (seg, truncated) = reopen(&path, OpenMode::Own { verify: true });
        assert_eq!((truncated, seg.next_offset), (0, 6));
    }

    #[test]
    fn a_tail_that_is_not_all_zeros_is_torn_and_cut() {
        let dir = tempfile::tempdir().unwrap();
        let (path, size) = zeroed_segment(dir.path());
        let file_len = len_of(&path);
        // Part of a third batch landed: no whole batch, not zeros either.
        let (d, _) = stored(4);
        std::fs::OpenOptions::new().write(true).open(&path).unwrap().write_all_at(&d[..30], size).unwrap();
        let (seg, truncated) = reopen(&path, OpenMode::Own { verify: true });
        assert_eq!((truncated, seg.next_offset, len_of(&path)), (file_len - size, 4, size));
    }

    #[test]
    fn a_predecessors_zero_tail_is_read_past_and_left() {
        let dir = tempfile::tempdir().unwrap();
        let (path, size) = zeroed_segment(dir.path());
        let file_len = len_of(&path);
        let (seg, past) = reopen(&path, OpenMode::Predecessor { verify: true });
        assert_eq!((past, seg.size, seg.next_offset, len_of(&path)), (0, size, 4, file_len));
    }

    #[test]
    fn trim_cuts_the_zeros_past_the_last_batch() {
        let dir = tempfile::tempdir().unwrap();
        let mut seg = Segment::create(dir.path(), 0, 0, &Arc::new(FileCache::new(4))).unwrap();
        let (d, h) = stored(0);
        seg.append(&[&d[..]], &h, 0, AHEAD).unwrap();
        assert!(len_of(&seg.path) > seg.size);
        seg.trim().unwrap();
        assert_eq!(len_of(&seg.path), seg.size);
    }
}
