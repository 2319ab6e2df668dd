//! Epoch-owned partition files. A leader epoch writes only files it created: each
//! file name carries the epoch that created it (`00000000000000000042.e3.log`,
//! `producer-state.e3.json`, `recovery-point.e3`, `log-start-offset.e3`; epoch 0 keeps the
//! plain names kaas always used). A broker taking a partition over at epoch E never appends to,
//! truncates, rewrites or renames a predecessor's file: it reads how far each of them holds
//! whole, valid batches (after its claim, through a fresh open), links each under a name of its
//! own (`linked_name`: `<name>.s<E>.log`) and records that in its seal `seal.e<E>.json`; every
//! later reader stops there. What a cut-off predecessor writes late (its page cache flushed when
//! its link comes back, a roll to a new segment) lands past the seal or in files the seal does
//! not name, and is never read; what it deletes late (retention, a cleaning's replaced files)
//! is one of its own names, never the file the new owner reads. Once the seal is durable the
//! older names are no one's (`unreferenced`) and the new owner deletes them.
//!
//! `plan` decides, from the names in a partition directory, how the epoch opening it treats
//! each file; it does no I/O.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

/// `name` as epoch `epoch` writes it: the plain name at epoch 0, else `<stem>.e<epoch><ext>`
/// (`ext` is the extension with its dot, or "").
pub fn tagged(stem: &str, ext: &str, epoch: i32) -> String {
    if epoch == 0 {
        format!("{stem}{ext}")
    } else {
        format!("{stem}.e{epoch}{ext}")
    }
}

/// The file of the segment at `base` created by epoch `epoch`: generation 0 for a segment
/// appends wrote, a higher one for a segment the log cleaner wrote (`<base>.c<gen>[.e<epoch>].log`),
/// which covers the older files from `base` up to its own end (store::log::clean).
pub fn segment_name(base: i64, epoch: i32, gen: u32) -> String {
    if gen == 0 {
        tagged(&format!("{base:020}"), ".log", epoch)
    } else {
        tagged(&format!("{base:020}.c{gen}"), ".log", epoch)
    }
}

pub fn segment_path(dir: &Path, base: i64, epoch: i32, gen: u32) -> PathBuf {
    dir.join(segment_name(base, epoch, gen))
}

/// The name under which epoch `holder` reaches a segment file it took over (a hard link to the
/// predecessor's file, made before its seal names it): `<segment name without .log>.s<holder>.log`.
/// The listing never parses it as a segment: only a seal leads to it. A predecessor still
/// running (a zombie) then unlinks only its own names, never a file its successor reads.
pub fn linked_name(id: SegmentId, holder: i32) -> String {
    let name = segment_name(id.base, id.epoch, id.gen);
    let stem = name.strip_suffix(".log").unwrap_or(&name);
    format!("{stem}.s{holder}.log")
}

/// The segment and holder epoch of a `linked_name`; None for any other name.
pub fn parse_linked_name(name: &str) -> Option<(SegmentId, i32)> {
    let (stem, holder) = name.strip_suffix(".log")?.rsplit_once(".s")?;
    let holder = holder.parse::<i32>().ok().filter(|h| *h > 0)?;
    Some((parse_segment_name(&format!("{stem}.log"))?, holder))
}

/// One segment file's name: its base offset, the epoch that created it, its cleaning generation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct SegmentId {
    pub base: i64,
    pub epoch: i32,
    pub gen: u32,
}

/// The segment a file name names; None for any other name.
pub fn parse_segment_name(name: &str) -> Option<SegmentId> {
    let stem = name.strip_suffix(".log")?;
    let (rest, epoch) = match stem.split_once(".e") {
        Some((rest, epoch)) => (rest, epoch.parse::<i32>().ok().filter(|e| *e > 0)?),
        None => (stem, 0),
    };
    let (base, gen) = match rest.split_once(".c") {
        Some((base, gen)) => (base, gen.parse::<u32>().ok().filter(|g| *g > 0)?),
        None => (rest, 0),
    };
    Some(SegmentId { base: base.parse::<i64>().ok().filter(|b| *b >= 0)?, epoch, gen })
}

/// The seal of epoch `epoch`.
pub fn seal_name(epoch: i32) -> String {
    format!("seal.e{epoch}.json")
}

fn parse_seal_name(name: &str) -> Option<i32> {
    name.strip_prefix("seal.e")?.strip_suffix(".json")?.parse::<i32>().ok().filter(|e| *e > 0)
}

/// A predecessor's segment as far as the sealing epoch trusts it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct SealedSegment {
    pub base: i64,
    /// The epoch that created (and named) the file.
    pub epoch: i32,
    /// The file's cleaning generation (0: written by appends).
    #[serde(default)]
    pub gen: u32,
    /// Bytes of whole, valid batches from the file's start: nothing past them is read.
    pub len: u64,
    /// Reached through the sealing epoch's own `linked_name` (false in seals of kaas before
    /// links: the file's own name).
    #[serde(default)]
    pub linked: bool,
}

impl SealedSegment {
    pub fn id(&self) -> SegmentId {
        SegmentId { base: self.base, epoch: self.epoch, gen: self.gen }
    }
}

/// What epoch `epoch` trusts of its predecessors, written once when it took the partition over.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Seal {
    pub epoch: i32,
    /// The epoch whose files (and producer snapshot) it took over (0: the plain names).
    pub previous: i32,
    /// The log start the predecessor had reached.
    pub log_start: i64,
    /// The offset after the last trusted batch: this epoch's own segments start here.
    pub end: i64,
    /// Oldest first. A file retention or DeleteRecords removed later is missing: the log
    /// starts after it.
    pub segments: Vec<SealedSegment>,
}

impl Seal {
    pub fn read(dir: &Path, epoch: i32) -> std::io::Result<Seal> {
        let bytes = std::fs::read(dir.join(seal_name(epoch)))?;
        serde_json::from_slice(&bytes).map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidData, e))
    }

    /// Writes the seal durably (fsync of the file and the directory) before anything of its
    /// epoch is written or served.
    pub fn write(&self, dir: &Path) -> std::io::Result<()> {
        let bytes = serde_json::to_vec(self).map_err(std::io::Error::other)?;
        crate::store::durable::replace_durably(&dir.join(seal_name(self.epoch)), &bytes)
    }
}

/// The names in a partition directory that decide how it opens.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Listing {
    /// Every segment file.
    pub segments: Vec<SegmentId>,
    /// Every `linked_name`: (segment, holder epoch).
    pub links: Vec<(SegmentId, i32)>,
    /// Epochs that wrote a seal.
    pub seals: Vec<i32>,
}

impl Listing {
    pub fn read(dir: &Path) -> std::io::Result<Listing> {
        let mut listing = Listing::default();
        for entry in std::fs::read_dir(dir)? {
            let name = entry?.file_name();
            let name = name.to_string_lossy();
            if let Some(seg) = parse_segment_name(&name) {
                listing.segments.push(seg);
            } else if let Some(epoch) = parse_seal_name(&name) {
                listing.seals.push(epoch);
            } else if let Some(link) = parse_linked_name(&name) {
                listing.links.push(link);
            }
        }
        listing.segments.sort_unstable();
        Ok(listing)
    }
}

/// How the epoch opening a partition directory treats what it finds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Plan {
    /// The directory is this epoch's: the files its seal names (if any) up to their sealed
    /// lengths, and its own files, recovered as its own (a torn tail cut). Files are
    /// (base, generation), by base and, at one base, the newest generation first.
    Own { seal: Option<i32>, own: Vec<(i64, u32)> },
    /// A takeover: `previous`'s files (after those of its seal `previous_seal`) are read up to
    /// the last valid batch, without changing them, and a seal of this epoch records that.
    Takeover { previous: i32, previous_seal: Option<i32>, files: Vec<(i64, u32)> },
    /// A later epoch sealed the directory: this broker no longer leads the partition.
    Superseded { newer: i32 },
}

/// The plan of epoch `epoch` for `listing`. Only epoch 0 (a partition's first leader) owns a
/// directory without a seal of its own; any later epoch seals what it found first (also when
/// the same broker comes back after it did not stop cleanly: its old process may still write).
pub fn plan(epoch: i32, listing: &Listing) -> Plan {
    if let Some(newer) = listing.seals.iter().copied().filter(|s| *s > epoch).max() {
        return Plan::Superseded { newer };
    }
    let last_seal = listing.seals.iter().copied().filter(|s| *s <= epoch).max();
    let of = |e: i32| {
        let mut files: Vec<(i64, u32)> =
            listing.segments.iter().filter(|s| s.epoch == e).map(|s| (s.base, s.gen)).collect();
        files.sort_unstable_by_key(|&(base, gen)| (base, std::cmp::Reverse(gen)));
        files
    };
    match last_seal {
        Some(s) if s == epoch => Plan::Own { seal: Some(s), own: of(epoch) },
        None if epoch == 0 => Plan::Own { seal: None, own: of(0) },
        // The predecessor is the last sealed epoch, or epoch 0 (the plain names).
        Some(s) => Plan::Takeover { previous: s, previous_seal: Some(s), files: of(s) },
        None => Plan::Takeover { previous: 0, previous_seal: None, files: of(0) },
    }
}

/// The names the seal `seal` makes no one's, for its epoch to delete once the seal is durable:
/// every segment name and link of an older epoch (the seal reaches what it trusts through its
/// own links), and this epoch's links the seal does not name (left by an attempt that failed).
/// A seal written before links names older files by their own names: those stay.
pub fn unreferenced(listing: &Listing, seal: &Seal) -> Vec<String> {
    let named: Vec<String> =
        seal.segments.iter().filter(|s| !s.linked).map(|s| segment_name(s.base, s.epoch, s.gen)).collect();
    let linked: Vec<SegmentId> = seal.segments.iter().filter(|s| s.linked).map(|s| s.id()).collect();
    let segments = listing
        .segments
        .iter()
        .filter(|s| s.epoch < seal.epoch)
        .map(|s| segment_name(s.base, s.epoch, s.gen))
        .filter(|name| !named.contains(name));
    let links = listing
        .links
        .iter()
        .filter(|(id, holder)| *holder < seal.epoch || (*holder == seal.epoch && !linked.contains(id)))
        .map(|&(id, holder)| linked_name(id, holder));
    segments.chain(links).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn listing(segments: &[(i64, i32)], seals: &[i32]) -> Listing {
        let segments = segments.iter().map(|&(base, epoch)| SegmentId { base, epoch, gen: 0 }).collect();
        Listing { segments, seals: seals.to_vec(), links: Vec::new() }
    }

    #[test]
    fn file_names_carry_the_epoch_that_created_them() {
        let id = |base, epoch, gen| Some(SegmentId { base, epoch, gen });
        assert_eq!(segment_name(42, 0, 0), "00000000000000000042.log");
        assert_eq!(segment_name(42, 3, 0), "00000000000000000042.e3.log");
        assert_eq!(segment_name(42, 3, 7), "00000000000000000042.c7.e3.log");
        assert_eq!(segment_name(42, 0, 7), "00000000000000000042.c7.log");
        assert_eq!(parse_segment_name("00000000000000000042.log"), id(42, 0, 0));
        assert_eq!(parse_segment_name("00000000000000000042.e3.log"), id(42, 3, 0));
        assert_eq!(parse_segment_name("00000000000000000042.c7.e3.log"), id(42, 3, 7));
        assert_eq!(parse_segment_name("00000000000000000042.c7.log"), id(42, 0, 7));
        assert_eq!(parse_segment_name("00000000000000000042.c0.log"), None);
        assert_eq!(parse_segment_name("00000000000000000042.c7.log.cleaning"), None);
        assert_eq!(parse_segment_name("00000000000000000042.e0.log"), None);
        assert_eq!(parse_segment_name("00000000000000000042.ex.log"), None);
        assert_eq!(parse_segment_name("producer-state.json"), None);
        assert_eq!(tagged("producer-state", ".json", 2), "producer-state.e2.json");
        assert_eq!(tagged("recovery-point", "", 0), "recovery-point");
        assert_eq!(parse_seal_name(&seal_name(9)), Some(9));
    }

    #[test]
    fn a_taken_over_file_is_reached_through_a_name_the_listing_does_not_parse() {
        let id = SegmentId { base: 42, epoch: 3, gen: 7 };
        assert_eq!(linked_name(id, 5), "00000000000000000042.c7.e3.s5.log");
        assert_eq!(parse_segment_name(&linked_name(id, 5)), None);
        assert_eq!(parse_linked_name(&linked_name(id, 5)), Some((id, 5)));
        let plain = SegmentId { base: 42, epoch: 0, gen: 0 };
        assert_eq!(linked_name(plain, 1), "00000000000000000042.s1.log");
        assert_eq!(parse_segment_name("00000000000000000042.s1.log"), None);
        assert_eq!(parse_linked_name("00000000000000000042.s1.log"), Some((plain, 1)));
        assert_eq!(parse_linked_name("00000000000000000042.e3.log"), None);
        assert_eq!(parse_linked_name("00000000000000000042.s0.log"), None);
    }

    #[test]
    fn a_durable_seal_makes_every_older_name_no_ones() {
        let seg = |base, epoch| SegmentId { base, epoch, gen: 0 };
        let sealed = |base, epoch, linked| SealedSegment { base, epoch, gen: 0, len: 1, linked };
        let listing = Listing {
            segments: vec![seg(0, 0), seg(10, 2), seg(20, 4), seg(30, 5)],
            seals: vec![2, 5],
            links: vec![(seg(0, 0), 2), (seg(0, 0), 5), (seg(10, 2), 5), (seg(20, 4), 5)],
        };
        let seal = Seal {
            epoch: 5,
            previous: 2,
            log_start: 0,
            end: 30,
            segments: vec![sealed(0, 0, true), sealed(10, 2, true)],
        };
        let mut gone = unreferenced(&listing, &seal);
        gone.sort();
        assert_eq!(
            gone,
            vec![
                "00000000000000000000.log",
                "00000000000000000000.s2.log",
                "00000000000000000010.e2.log",
                "00000000000000000020.e4.log",
                "00000000000000000020.e4.s5.log",
            ]
        );
        // A seal of kaas before links names its predecessor's files by their own names.
        let legacy = Seal { segments: vec![sealed(0, 0, false)], ..seal };
        assert!(!unreferenced(&listing, &legacy).contains(&"00000000000000000000.log".to_string()));
    }

    #[test]
    fn the_first_leader_owns_the_plain_files() {
        assert_eq!(plan(0, &listing(&[(0, 0), (10, 0)], &[])), Plan::Own { seal: None, own: vec![(0, 0), (10, 0)] });
    }

    #[test]
    fn a_later_epoch_without_its_seal_takes_over_the_predecessor_files() {
        // A legacy directory (plain names) at epoch 3, or epoch 0's files after a change of hands.
        assert_eq!(
            plan(3, &listing(&[(0, 0), (10, 0)], &[])),
            Plan::Takeover { previous: 0, previous_seal: None, files: vec![(0, 0), (10, 0)] }
        );
    }

    #[test]
    fn a_takeover_reads_only_the_last_sealed_epochs_own_files() {
        // Epoch 2 sealed epoch 0's files and wrote its own from 10; epoch 0's late roll (20, 0)
        // is named by no seal and never read.
        let l = listing(&[(0, 0), (10, 2), (20, 0), (30, 2)], &[2]);
        assert_eq!(plan(5, &l), Plan::Takeover { previous: 2, previous_seal: Some(2), files: vec![(10, 0), (30, 0)] });
        assert_eq!(plan(2, &l), Plan::Own { seal: Some(2), own: vec![(10, 0), (30, 0)] });
    }

    #[test]
    fn an_epoch_older_than_the_last_seal_is_superseded() {
        assert_eq!(plan(1, &listing(&[(0, 0)], &[2])), Plan::Superseded { newer: 2 });
        assert_eq!(plan(0, &listing(&[(0, 0)], &[2, 4])), Plan::Superseded { newer: 4 });
    }

    #[test]
    fn a_seal_is_read_back_as_written() {
        let dir = tempfile::tempdir().unwrap();
        let seal = Seal {
            epoch: 3,
            previous: 0,
            log_start: 5,
            end: 40,
            segments: vec![SealedSegment { base: 0, epoch: 0, gen: 0, len: 300, linked: true }],
        };
        seal.write(dir.path()).unwrap();
        assert_eq!(Seal::read(dir.path(), 3).unwrap(), seal);
        assert_eq!(Listing::read(dir.path()).unwrap().seals, vec![3]);
    }
}
