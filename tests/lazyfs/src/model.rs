//! The durability model, with no I/O: what a power loss may take away.
//!
//! Files: everything is written through at once; the first time a byte below the file's durable
//! size is changed after the last fsync/fdatasync of that file, its old value is kept (an undo
//! log). The durable size is the size at that fsync (0 for a file created since). A power loss
//! puts the durable size and the kept bytes back.
//!
//! Directories: a directory whose entries change (create, mkdir, unlink, rmdir, rename in or
//! out) after its last fsync keeps a copy of its entries as they were at that fsync; a power loss
//! puts that copy back. A new directory starts with no durable entries. Exception, as ext4 does
//! in practice: fsync/fdatasync of a file also makes that file's own entry (its current name in
//! its current directory) durable (`EntryMode::Own`, the default). `EntryMode::Path` also makes
//! the entries of its ancestor directories durable (the path to it survives, as a journaling file
//! system that commits all metadata keeps it). `EntryMode::Dir` is POSIX to the letter: only an
//! fsync of the directory makes an entry durable, whatever was synced inside it.

use std::collections::{BTreeMap, HashMap};
use std::ffi::OsString;

pub type Ino = u64;

/// Durable entries of one directory: name -> inode.
pub type Entries = BTreeMap<OsString, Ino>;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EntryMode {
    /// Only a directory's own fsync makes its entries durable.
    Dir,
    /// fsync of a file makes only its own directory entry durable.
    Own,
    /// fsync of a file makes its entry and the entries of every ancestor directory durable.
    Path,
}

/// Undo log of one file since its last fsync.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileUndo {
    /// Size at the last fsync.
    pub durable_size: u64,
    /// Old bytes of every changed region below `durable_size`, by start offset; never overlapping.
    pub saved: BTreeMap<u64, Vec<u8>>,
}

impl FileUndo {
    pub fn new(durable_size: u64) -> FileUndo {
        FileUndo { durable_size, saved: BTreeMap::new() }
    }

    /// The parts of [start, end) below the durable size whose old bytes are not kept yet.
    pub fn unsaved(&self, start: u64, end: u64) -> Vec<(u64, u64)> {
        let end = end.min(self.durable_size);
        let mut out = Vec::new();
        let mut at = start;
        // The saved region that may cover `start` begins at or before it.
        let first = self.saved.range(..=start).next_back().map(|(s, _)| *s).unwrap_or(start);
        for (s, bytes) in self.saved.range(first..) {
            if at >= end {
                break;
            }
            let e = s + bytes.len() as u64;
            if e <= at {
                continue;
            }
            if *s > at {
                out.push((at, (*s).min(end)));
            }
            at = at.max(e);
        }
        if at < end {
            out.push((at, end));
        }
        out
    }

    pub fn save(&mut self, start: u64, old: Vec<u8>) {
        if !old.is_empty() {
            self.saved.insert(start, old);
        }
    }
}

/// What is not durable yet, per file and per directory.
#[derive(Debug, Default)]
pub struct Model {
    files: HashMap<Ino, FileUndo>,
    dirs: HashMap<Ino, Entries>,
}

impl Model {
    /// A file created now: none of its bytes are durable.
    pub fn file_created(&mut self, ino: Ino) {
        self.files.insert(ino, FileUndo::new(0));
    }

    /// Before bytes [start, end) of a file of `size` bytes change: the ranges whose old bytes
    /// must be read and passed to `save` first.
    pub fn before_change(&mut self, ino: Ino, size: u64, start: u64, end: u64) -> Vec<(u64, u64)> {
        self.files.entry(ino).or_insert_with(|| FileUndo::new(size)).unsaved(start, end)
    }

    /// Before a file of `size` bytes is truncated or extended to `new_size`.
    pub fn before_resize(&mut self, ino: Ino, size: u64, new_size: u64) -> Vec<(u64, u64)> {
        self.before_change(ino, size, new_size, size.max(new_size))
    }

    pub fn save(&mut self, ino: Ino, start: u64, old: Vec<u8>) {
        if let Some(u) = self.files.get_mut(&ino) {
            u.save(start, old);
        }
    }

    /// fsync/fdatasync of a file. `path` lists (directory, name, inode) from the file's own entry
    /// up to the root's entry; how much of it becomes durable depends on `mode`.
    pub fn file_synced(&mut self, ino: Ino, path: &[(Ino, OsString, Ino)], mode: EntryMode) {
        self.files.remove(&ino);
        let keep = match mode {
            EntryMode::Dir => 0,
            EntryMode::Own => path.len().min(1),
            EntryMode::Path => path.len(),
        };
        for (dir, name, child) in path.iter().take(keep) {
            if let Some(entries) = self.dirs.get_mut(dir) {
                entries.insert(name.clone(), *child);
            }
        }
    }

    pub fn dir_dirty(&self, dir: Ino) -> bool {
        self.dirs.contains_key(&dir)
    }

    /// First change to a clean directory: its current entries are the durable ones.
    pub fn dir_changing(&mut self, dir: Ino, current: Entries) {
        self.dirs.entry(dir).or_insert(current);
    }

    /// A directory created now: it has no durable entries.
    pub fn dir_created(&mut self, dir: Ino) {
        self.dirs.insert(dir, Entries::new());
    }

    pub fn dir_synced(&mut self, dir: Ino) {
        self.dirs.remove(&dir);
    }

    /// Whether some directory may have to get this inode back after a power loss.
    pub fn referenced(&self, ino: Ino) -> bool {
        self.dirs.values().any(|e| e.values().any(|i| *i == ino))
    }

    pub fn pending(&self) -> (usize, usize) {
        (self.files.len(), self.dirs.len())
    }

    /// Power loss: hand over everything to undo and start again with all durable.
    pub fn take(&mut self) -> (HashMap<Ino, FileUndo>, HashMap<Ino, Entries>) {
        (std::mem::take(&mut self.files), std::mem::take(&mut self.dirs))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A file simulated in memory next to the model, to check what a power loss restores.
    struct SimFile {
        ino: Ino,
        bytes: Vec<u8>,
    }

    impl SimFile {
        fn write(&mut self, m: &mut Model, off: u64, data: &[u8]) {
            let end = off + data.len() as u64;
            for (s, e) in m.before_change(self.ino, self.bytes.len() as u64, off, end) {
                m.save(self.ino, s, self.bytes[s as usize..e as usize].to_vec());
            }
            if self.bytes.len() < end as usize {
                self.bytes.resize(end as usize, 0);
            }
            self.bytes[off as usize..end as usize].copy_from_slice(data);
        }

        fn resize(&mut self, m: &mut Model, size: u64) {
            for (s, e) in m.before_resize(self.ino, self.bytes.len() as u64, size) {
                m.save(self.ino, s, self.bytes[s as usize..e as usize].to_vec());
            }
            self.bytes.resize(size as usize, 0);
        }

        fn power_loss(&mut self, m: &mut Model) {
            let (mut files, _) = m.take();
            if let Some(u) = files.remove(&self.ino) {
                self.bytes.resize(u.durable_size as usize, 0);
                for (s, old) in u.saved {
                    self.bytes[s as usize..s as usize + old.len()].copy_from_slice(&old);
                }
            }
        }
    }

    #[test]
    fn unsynced_appends_are_dropped() {
        let mut m = Model::default();
        let mut f = SimFile { ino: 2, bytes: b"durable".to_vec() };
        f.write(&mut m, 7, b"-lost");
        f.power_loss(&mut m);
        assert_eq!(f.bytes, b"durable");
    }

    #[test]
    fn unsynced_overwrites_get_their_first_old_bytes_back() {
        let mut m = Model::default();
        let mut f = SimFile { ino: 2, bytes: b"abcdefghij".to_vec() };
        f.write(&mut m, 2, b"XX");
        f.write(&mut m, 1, b"YYYY");
        f.write(&mut m, 8, b"ZZZZ");
        assert_eq!(f.bytes, b"aYYYYfghZZZZ");
        f.power_loss(&mut m);
        assert_eq!(f.bytes, b"abcdefghij");
    }

    #[test]
    fn synced_data_survives_and_later_writes_do_not() {
        let mut m = Model::default();
        let mut f = SimFile { ino: 2, bytes: Vec::new() };
        m.file_created(2);
        f.write(&mut m, 0, b"one");
        m.file_synced(2, &[], EntryMode::Own);
        f.write(&mut m, 3, b"two");
        f.write(&mut m, 0, b"ONE");
        f.power_loss(&mut m);
        assert_eq!(f.bytes, b"one");
    }

    #[test]
    fn truncation_is_undone_with_the_cut_bytes() {
        let mut m = Model::default();
        let mut f = SimFile { ino: 2, bytes: b"0123456789".to_vec() };
        f.resize(&mut m, 4);
        f.write(&mut m, 4, b"ab");
        f.resize(&mut m, 12);
        f.power_loss(&mut m);
        assert_eq!(f.bytes, b"0123456789");
    }

    #[test]
    fn a_new_file_loses_everything_unsynced() {
        let mut m = Model::default();
        let mut f = SimFile { ino: 2, bytes: Vec::new() };
        m.file_created(2);
        f.write(&mut m, 0, b"data");
        f.power_loss(&mut m);
        assert!(f.bytes.is_empty());
    }

    #[test]
    fn unsaved_skips_kept_ranges_and_stops_at_the_durable_size() {
        let mut u = FileUndo::new(100);
        u.save(10, vec![0; 10]);
        u.save(40, vec![0; 5]);
        assert_eq!(u.unsaved(0, 200), vec![(0, 10), (20, 40), (45, 100)]);
        assert_eq!(u.unsaved(12, 18), vec![]);
        assert_eq!(u.unsaved(15, 42), vec![(20, 40)]);
        assert_eq!(u.unsaved(100, 120), vec![]);
    }

    #[test]
    fn a_dir_change_keeps_the_entries_of_the_last_fsync() {
        let mut m = Model::default();
        let before: Entries = [(OsString::from("a"), 5)].into_iter().collect();
        m.dir_changing(1, before.clone());
        m.dir_changing(1, Entries::new()); // later changes keep the first copy
        let (_, dirs) = m.take();
        assert_eq!(dirs.get(&1), Some(&before));
    }

    #[test]
    fn dir_fsync_makes_its_entries_durable() {
        let mut m = Model::default();
        m.dir_created(7);
        m.dir_synced(7);
        assert!(!m.dir_dirty(7));
        assert!(m.take().1.is_empty());
    }

    #[test]
    fn file_fsync_keeps_no_entry_its_own_or_its_path_by_mode() {
        let path = [(3, OsString::from("seg"), 9), (1, OsString::from("part"), 3)];
        for (mode, has_seg, root_has_part) in
            [(EntryMode::Dir, false, false), (EntryMode::Own, true, false), (EntryMode::Path, true, true)]
        {
            let mut m = Model::default();
            m.dir_changing(1, Entries::new());
            m.dir_created(3);
            m.file_created(9);
            m.file_synced(9, &path, mode);
            let (files, dirs) = m.take();
            assert!(files.is_empty());
            assert_eq!(dirs[&3].get(&OsString::from("seg")) == Some(&9), has_seg, "{mode:?}");
            assert_eq!(dirs[&1].contains_key(&OsString::from("part")), root_has_part, "{mode:?}");
        }
    }

    #[test]
    fn referenced_sees_inodes_a_dir_may_get_back() {
        let mut m = Model::default();
        m.dir_changing(1, [(OsString::from("x"), 4)].into_iter().collect());
        assert!(m.referenced(4));
        assert!(!m.referenced(5));
    }
}
