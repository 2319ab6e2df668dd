//! The file system's operations on the backing directory, kept in step with the durability
//! model, and the power loss that undoes what was not durable. No FUSE here, so the whole
//! behaviour is testable on a temp dir.
//!
//! Nothing is deleted before it is durably gone: unlink, rmdir and a rename over an existing
//! name move the old inode into `.lazyfs-trash/<ino>` in the backing directory (hidden from the
//! mount), from where a power loss can bring it back. Trash that no directory may want back is
//! removed when a directory is fsynced.

use std::collections::HashMap;
use std::ffi::{OsStr, OsString};
use std::fs::{self, File, OpenOptions};
use std::io;
use std::os::unix::fs::{DirBuilderExt, FileExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

use crate::inodes::{Inodes, ROOT};
use crate::model::{Entries, EntryMode, Ino, Model};

pub const TRASH: &str = ".lazyfs-trash";

#[derive(Debug, Default, PartialEq, Eq)]
pub struct Summary {
    pub files_reverted: usize,
    /// Bytes cut off files that had grown since their last fsync.
    pub bytes_dropped: u64,
    /// Old bytes written back over unsynced overwrites and truncations.
    pub bytes_restored: u64,
    pub entries_removed: usize,
    pub entries_restored: usize,
}

pub struct Lazy {
    root: PathBuf,
    mode: EntryMode,
    pub inodes: Inodes,
    model: Model,
}

fn in_trash(rel: &Path) -> bool {
    rel.starts_with(TRASH)
}

fn trash_path(ino: Ino) -> PathBuf {
    Path::new(TRASH).join(ino.to_string())
}

impl Lazy {
    pub fn new(root: PathBuf, mode: EntryMode) -> io::Result<Lazy> {
        let trash = root.join(TRASH);
        if trash.exists() {
            fs::remove_dir_all(&trash)?;
        }
        fs::create_dir_all(&trash)?;
        Ok(Lazy { root, mode, inodes: Inodes::default(), model: Model::default() })
    }

    pub fn abs(&self, rel: &Path) -> PathBuf {
        self.root.join(rel)
    }

    pub fn path_of(&self, ino: Ino) -> io::Result<PathBuf> {
        self.inodes.path(ino).map(Path::to_path_buf).ok_or_else(|| io::Error::from_raw_os_error(libc::ENOENT))
    }

    /// Relative path of `name` in directory `parent`; the trash is not visible.
    pub fn child(&self, parent: Ino, name: &OsStr) -> io::Result<PathBuf> {
        if parent == ROOT && name == TRASH {
            return Err(io::Error::from_raw_os_error(libc::ENOENT));
        }
        Ok(self.path_of(parent)?.join(name))
    }

    pub fn lookup(&mut self, parent: Ino, name: &OsStr) -> io::Result<(Ino, fs::Metadata)> {
        let rel = self.child(parent, name)?;
        let meta = fs::symlink_metadata(self.abs(&rel))?;
        Ok((self.inodes.get_or_assign(&rel), meta))
    }

    /// Visible entries of a directory, with their inode numbers.
    pub fn list(&mut self, dir: Ino) -> io::Result<Vec<(OsString, Ino, fs::FileType)>> {
        let rel = self.path_of(dir)?;
        let mut out = Vec::new();
        for e in fs::read_dir(self.abs(&rel))? {
            let e = e?;
            let name = e.file_name();
            if dir == ROOT && name == TRASH {
                continue;
            }
            let ino = self.inodes.get_or_assign(&rel.join(&name));
            out.push((name, ino, e.file_type()?));
        }
        out.sort_by(|a, b| a.0.cmp(&b.0));
        Ok(out)
    }

    /// Before the entries of `dir` change: remember them if they are the durable ones.
    fn dir_changing(&mut self, dir: Ino) -> io::Result<()> {
        if !self.model.dir_dirty(dir) {
            let current: Entries = self.list(dir)?.into_iter().map(|(n, i, _)| (n, i)).collect();
            self.model.dir_changing(dir, current);
        }
        Ok(())
    }

    fn parent_of(&mut self, rel: &Path) -> Ino {
        self.inodes.get_or_assign(rel.parent().unwrap_or(Path::new("")))
    }

    /// Moves whatever is at `rel` into the trash so a power loss can bring it back.
    fn move_to_trash(&mut self, rel: &Path) -> io::Result<()> {
        let ino = self.inodes.get_or_assign(rel);
        let dest = trash_path(ino);
        fs::rename(self.abs(rel), self.abs(&dest))?;
        self.inodes.rename(rel, &dest);
        Ok(())
    }

    pub fn create(&mut self, parent: Ino, name: &OsStr, mode: u32, flags: i32) -> io::Result<(Ino, File)> {
        let rel = self.child(parent, name)?;
        self.dir_changing(parent)?;
        let existed = self.abs(&rel).exists();
        if existed && flags & libc::O_EXCL != 0 {
            return Err(io::Error::from_raw_os_error(libc::EEXIST));
        }
        let file = OpenOptions::new().read(true).write(true).create(true).mode(mode).open(self.abs(&rel))?;
        let ino = self.inodes.get_or_assign(&rel);
        if existed {
            if flags & libc::O_TRUNC != 0 {
                self.truncate(ino, &file, 0)?;
            }
        } else {
            self.model.file_created(ino);
        }
        Ok((ino, file))
    }

    /// Opens the backing file; O_TRUNC goes through the model.
    pub fn open(&mut self, ino: Ino, flags: i32) -> io::Result<File> {
        let rel = self.path_of(ino)?;
        let acc = flags & libc::O_ACCMODE;
        let file = OpenOptions::new()
            .read(acc == libc::O_RDONLY || acc == libc::O_RDWR)
            .write(acc == libc::O_WRONLY || acc == libc::O_RDWR)
            .open(self.abs(&rel))?;
        if flags & libc::O_TRUNC != 0 && acc != libc::O_RDONLY {
            self.truncate(ino, &file, 0)?;
        }
        Ok(file)
    }

    pub fn mkdir(&mut self, parent: Ino, name: &OsStr, mode: u32) -> io::Result<Ino> {
        let rel = self.child(parent, name)?;
        self.dir_changing(parent)?;
        fs::DirBuilder::new().mode(mode).create(self.abs(&rel))?;
        let ino = self.inodes.get_or_assign(&rel);
        self.model.dir_created(ino);
        Ok(ino)
    }

    pub fn unlink(&mut self, parent: Ino, name: &OsStr, dir: bool) -> io::Result<()> {
        let rel = self.child(parent, name)?;
        let meta = fs::symlink_metadata(self.abs(&rel))?;
        if dir && !meta.is_dir() {
            return Err(io::Error::from_raw_os_error(libc::ENOTDIR));
        }
        if !dir && meta.is_dir() {
            return Err(io::Error::from_raw_os_error(libc::EISDIR));
        }
        if dir && fs::read_dir(self.abs(&rel))?.next().is_some() {
            return Err(io::Error::from_raw_os_error(libc::ENOTEMPTY));
        }
        self.dir_changing(parent)?;
        self.move_to_trash(&rel)
    }

    /// A hard link: a new name for `ino`'s file, durable once its directory is fsynced. The
    /// model knows files by name, so the new name gets a number of its own; the data is one
    /// file's (a power loss puts back its undo log through whichever name still reaches it).
    pub fn link(&mut self, ino: Ino, newparent: Ino, newname: &OsStr) -> io::Result<(Ino, fs::Metadata)> {
        let from = self.path_of(ino)?;
        let to = self.child(newparent, newname)?;
        if fs::symlink_metadata(self.abs(&from))?.is_dir() {
            return Err(io::Error::from_raw_os_error(libc::EPERM));
        }
        if fs::symlink_metadata(self.abs(&to)).is_ok() {
            return Err(io::Error::from_raw_os_error(libc::EEXIST));
        }
        self.dir_changing(newparent)?;
        fs::hard_link(self.abs(&from), self.abs(&to))?;
        let meta = fs::symlink_metadata(self.abs(&to))?;
        Ok((self.inodes.get_or_assign(&to), meta))
    }

    pub fn rename(&mut self, parent: Ino, name: &OsStr, newparent: Ino, newname: &OsStr, flags: u32) -> io::Result<()> {
        let from = self.child(parent, name)?;
        let to = self.child(newparent, newname)?;
        if flags & libc::RENAME_EXCHANGE != 0 {
            return Err(io::Error::from_raw_os_error(libc::EINVAL));
        }
        let src = fs::symlink_metadata(self.abs(&from))?;
        if from == to {
            return Ok(());
        }
        if let Ok(dst) = fs::symlink_metadata(self.abs(&to)) {
            if flags & libc::RENAME_NOREPLACE != 0 {
                return Err(io::Error::from_raw_os_error(libc::EEXIST));
            }
            if src.is_dir() != dst.is_dir() {
                return Err(io::Error::from_raw_os_error(if dst.is_dir() { libc::EISDIR } else { libc::ENOTDIR }));
            }
            if dst.is_dir() && fs::read_dir(self.abs(&to))?.next().is_some() {
                return Err(io::Error::from_raw_os_error(libc::ENOTEMPTY));
            }
        }
        self.dir_changing(parent)?;
        self.dir_changing(newparent)?;
        if fs::symlink_metadata(self.abs(&to)).is_ok() {
            self.move_to_trash(&to)?;
        }
        fs::rename(self.abs(&from), self.abs(&to))?;
        self.inodes.rename(&from, &to);
        Ok(())
    }

    /// Reads the old bytes of the given ranges into the model before they change.
    fn save_ranges(&mut self, ino: Ino, file: &File, ranges: Vec<(u64, u64)>) -> io::Result<()> {
        for (s, e) in ranges {
            let mut old = vec![0u8; (e - s) as usize];
            let mut got = 0;
            while got < old.len() {
                let n = file.read_at(&mut old[got..], s + got as u64)?;
                if n == 0 {
                    break; // past the end: by the model's invariant this was saved earlier
                }
                got += n;
            }
            self.model.save(ino, s, old);
        }
        Ok(())
    }

    pub fn write(&mut self, ino: Ino, file: &File, offset: u64, data: &[u8]) -> io::Result<usize> {
        let size = file.metadata()?.len();
        let ranges = self.model.before_change(ino, size, offset, offset + data.len() as u64);
        self.save_ranges(ino, file, ranges)?;
        file.write_all_at(data, offset)?;
        Ok(data.len())
    }

    pub fn truncate(&mut self, ino: Ino, file: &File, new_size: u64) -> io::Result<()> {
        let size = file.metadata()?.len();
        let ranges = self.model.before_resize(ino, size, new_size);
        self.save_ranges(ino, file, ranges)?;
        file.set_len(new_size)
    }

    /// (directory, name, inode) from `ino`'s own entry up to the root.
    fn entry_chain(&mut self, ino: Ino) -> Vec<(Ino, OsString, Ino)> {
        let mut chain = Vec::new();
        let Some(mut rel) = self.inodes.path(ino).map(Path::to_path_buf) else { return chain };
        if in_trash(&rel) {
            return chain;
        }
        let mut child = ino;
        while let Some(name) = rel.file_name().map(OsStr::to_os_string) {
            let parent = self.parent_of(&rel);
            chain.push((parent, name, child));
            rel = rel.parent().map(Path::to_path_buf).unwrap_or_default();
            child = parent;
        }
        chain
    }

    pub fn fsync_file(&mut self, ino: Ino) {
        let chain = self.entry_chain(ino);
        self.model.file_synced(ino, &chain, self.mode);
    }

    pub fn fsync_dir(&mut self, ino: Ino) -> io::Result<()> {
        self.model.dir_synced(ino);
        // Trash nobody may want back any more.
        let trash = self.abs(Path::new(TRASH));
        for e in fs::read_dir(&trash)? {
            let name = e?.file_name();
            let Some(t) = name.to_str().and_then(|s| s.parse::<Ino>().ok()) else { continue };
            if !self.model.referenced(t) {
                let rel = trash_path(t);
                let abs = self.abs(&rel);
                if abs.is_dir() {
                    fs::remove_dir_all(&abs)?
                } else {
                    fs::remove_file(&abs)?
                }
                self.inodes.forget(&rel);
            }
        }
        Ok(())
    }

    pub fn pending(&self) -> (usize, usize) {
        self.model.pending()
    }

    /// Drops everything not durable: file bytes and sizes, then directory entries.
    pub fn power_loss(&mut self) -> io::Result<Summary> {
        let (files, dirs) = self.model.take();
        let mut sum = Summary::default();
        for (ino, undo) in files {
            let Some(rel) = self.inodes.path(ino).map(Path::to_path_buf) else { continue };
            let file = OpenOptions::new().write(true).open(self.abs(&rel))?;
            sum.bytes_dropped += file.metadata()?.len().saturating_sub(undo.durable_size);
            file.set_len(undo.durable_size)?;
            for (s, old) in &undo.saved {
                file.write_all_at(old, *s)?;
                sum.bytes_restored += old.len() as u64;
            }
            sum.files_reverted += 1;
        }
        // Detach every entry a directory did not have durably.
        for (dir, durable) in &dirs {
            let Ok(drel) = self.path_of(*dir) else { continue };
            if !self.abs(&drel).is_dir() {
                continue;
            }
            let mut names: Vec<OsString> = Vec::new();
            for e in fs::read_dir(self.abs(&drel))? {
                names.push(e?.file_name());
            }
            for name in names {
                if *dir == ROOT && name == TRASH {
                    continue;
                }
                let rel = drel.join(&name);
                let ino = self.inodes.get_or_assign(&rel);
                if durable.get(&name) != Some(&ino) {
                    eprintln!("lazyfs: power loss drops the entry {} (not durable)", rel.display());
                    self.move_to_trash(&rel)?;
                    sum.entries_removed += 1;
                }
            }
        }
        // Attach the durable entries that are missing, from the trash or (a file durably named
        // in two places) by a hard link; directories become reachable step by step.
        let mut todo: Vec<(Ino, OsString, Ino)> =
            dirs.iter().flat_map(|(d, e)| e.iter().map(move |(n, i)| (*d, n.clone(), *i))).collect();
        loop {
            let before = todo.len();
            let mut rest = Vec::new();
            for (dir, name, ino) in todo {
                let (Some(drel), Some(src)) = (self.inodes.path(dir), self.inodes.path(ino)) else {
                    continue; // gone for good
                };
                if in_trash(drel) {
                    rest.push((dir, name, ino));
                    continue;
                }
                let to = drel.join(&name);
                let src = src.to_path_buf();
                if src == to {
                    continue;
                }
                if fs::symlink_metadata(self.abs(&src))?.is_dir() {
                    if !in_trash(&src) {
                        continue; // a directory lives in one place; it is durable where it is
                    }
                    fs::rename(self.abs(&src), self.abs(&to))?;
                    self.inodes.rename(&src, &to);
                } else {
                    fs::hard_link(self.abs(&src), self.abs(&to))?;
                }
                eprintln!("lazyfs: power loss brings back the entry {}", to.display());
                sum.entries_restored += 1;
            }
            if rest.is_empty() || rest.len() == before {
                break;
            }
            todo = rest;
        }
        let trash = self.abs(Path::new(TRASH));
        fs::remove_dir_all(&trash)?;
        fs::create_dir_all(&trash)?;
        self.inodes = Inodes::default();
        Ok(sum)
    }
}

/// Open files by handle, with whether each write is durable at once (O_SYNC / O_DSYNC).
#[derive(Default)]
pub struct Handles {
    pub files: HashMap<u64, (File, bool)>,
    next: u64,
}

impl Handles {
    pub fn insert(&mut self, f: File, sync: bool) -> u64 {
        self.next += 1;
        self.files.insert(self.next, (f, sync));
        self.next
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn setup(mode: EntryMode) -> (tempfile::TempDir, Lazy) {
        let dir = tempfile::tempdir().unwrap();
        let lazy = Lazy::new(dir.path().to_path_buf(), mode).unwrap();
        (dir, lazy)
    }

    /// Visible names in a directory of the backing dir (by path: a power loss renumbers inodes).
    fn names(l: &Lazy, rel: &str) -> Vec<String> {
        let mut v: Vec<String> = fs::read_dir(l.abs(Path::new(rel)))
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .filter(|n| n != TRASH)
            .collect();
        v.sort();
        v
    }

    fn read(l: &Lazy, rel: &str) -> Vec<u8> {
        fs::read(l.abs(Path::new(rel))).unwrap()
    }

    #[test]
    fn unsynced_file_and_entry_vanish() {
        let (_d, mut l) = setup(EntryMode::Own);
        let (ino, f) = l.create(ROOT, OsStr::new("a"), 0o644, 0).unwrap();
        l.write(ino, &f, 0, b"hello").unwrap();
        let sum = l.power_loss().unwrap();
        assert!(names(&l, "").is_empty());
        assert_eq!(sum.entries_removed, 1);
    }

    #[test]
    fn fsynced_file_keeps_entry_and_data_but_not_later_writes() {
        let (_d, mut l) = setup(EntryMode::Own);
        let (ino, f) = l.create(ROOT, OsStr::new("a"), 0o644, 0).unwrap();
        l.write(ino, &f, 0, b"hello").unwrap();
        l.fsync_file(ino);
        l.write(ino, &f, 5, b" world").unwrap();
        l.write(ino, &f, 0, b"J").unwrap();
        l.power_loss().unwrap();
        assert_eq!(names(&l, ""), vec!["a"]);
        assert_eq!(read(&l, "a"), b"hello");
    }

    #[test]
    fn own_mode_loses_a_new_dir_whose_parent_was_not_synced() {
        let (_d, mut l) = setup(EntryMode::Own);
        let dir = l.mkdir(ROOT, OsStr::new("p"), 0o755).unwrap();
        let (ino, f) = l.create(dir, OsStr::new("seg"), 0o644, 0).unwrap();
        l.write(ino, &f, 0, b"x").unwrap();
        l.fsync_file(ino);
        l.power_loss().unwrap();
        assert!(names(&l, "").is_empty());
    }

    #[test]
    fn path_mode_keeps_the_path_to_a_synced_file() {
        let (_d, mut l) = setup(EntryMode::Path);
        let dir = l.mkdir(ROOT, OsStr::new("p"), 0o755).unwrap();
        let (ino, f) = l.create(dir, OsStr::new("seg"), 0o644, 0).unwrap();
        l.write(ino, &f, 0, b"x").unwrap();
        l.fsync_file(ino);
        l.power_loss().unwrap();
        assert_eq!(read(&l, "p/seg"), b"x");
    }

    #[test]
    fn synced_parent_keeps_a_new_dir_and_the_file_in_it() {
        let (_d, mut l) = setup(EntryMode::Own);
        let dir = l.mkdir(ROOT, OsStr::new("p"), 0o755).unwrap();
        l.fsync_dir(ROOT).unwrap();
        let (ino, f) = l.create(dir, OsStr::new("seg"), 0o644, 0).unwrap();
        l.write(ino, &f, 0, b"abc").unwrap();
        l.fsync_file(ino);
        l.power_loss().unwrap();
        assert_eq!(read(&l, "p/seg"), b"abc");
    }

    #[test]
    fn unsynced_rename_over_a_file_is_reverted() {
        // write_atomic without the final directory fsync: the old file comes back.
        let (_d, mut l) = setup(EntryMode::Own);
        let (old, f) = l.create(ROOT, OsStr::new("meta.json"), 0o644, 0).unwrap();
        l.write(old, &f, 0, b"v1").unwrap();
        l.fsync_file(old);
        l.fsync_dir(ROOT).unwrap();
        let (tmp, f) = l.create(ROOT, OsStr::new("meta.tmp"), 0o644, 0).unwrap();
        l.write(tmp, &f, 0, b"v2").unwrap();
        l.fsync_file(tmp);
        l.rename(ROOT, OsStr::new("meta.tmp"), ROOT, OsStr::new("meta.json"), 0).unwrap();
        assert_eq!(read(&l, "meta.json"), b"v2");
        l.power_loss().unwrap();
        assert_eq!(read(&l, "meta.json"), b"v1");
        // The tmp file was fsynced under its old name, so that entry is durable.
        assert_eq!(names(&l, ""), vec!["meta.json", "meta.tmp"]);
        assert_eq!(read(&l, "meta.tmp"), b"v2");
    }

    #[test]
    fn rename_with_dir_fsync_is_durable() {
        let (_d, mut l) = setup(EntryMode::Own);
        let (old, f) = l.create(ROOT, OsStr::new("meta.json"), 0o644, 0).unwrap();
        l.write(old, &f, 0, b"v1").unwrap();
        l.fsync_file(old);
        l.fsync_dir(ROOT).unwrap();
        let (tmp, f) = l.create(ROOT, OsStr::new("meta.tmp"), 0o644, 0).unwrap();
        l.write(tmp, &f, 0, b"v2").unwrap();
        l.fsync_file(tmp);
        l.rename(ROOT, OsStr::new("meta.tmp"), ROOT, OsStr::new("meta.json"), 0).unwrap();
        l.fsync_dir(ROOT).unwrap();
        l.power_loss().unwrap();
        assert_eq!(names(&l, ""), vec!["meta.json"]);
        assert_eq!(read(&l, "meta.json"), b"v2");
    }

    #[test]
    fn a_link_is_durable_only_after_its_directory_is_fsynced() {
        let (_d, mut l) = setup(EntryMode::Own);
        let (ino, f) = l.create(ROOT, OsStr::new("a"), 0o644, 0).unwrap();
        l.write(ino, &f, 0, b"data").unwrap();
        l.fsync_file(ino);
        l.link(ino, ROOT, OsStr::new("b")).unwrap();
        l.power_loss().unwrap();
        assert_eq!(names(&l, ""), vec!["a"]);
        let (ino, _) = l.lookup(ROOT, OsStr::new("a")).unwrap();
        l.link(ino, ROOT, OsStr::new("b")).unwrap();
        l.fsync_dir(ROOT).unwrap();
        // The first name goes, unsynced: a power loss brings it back; the link stays.
        l.unlink(ROOT, OsStr::new("a"), false).unwrap();
        assert_eq!(names(&l, ""), vec!["b"]);
        l.power_loss().unwrap();
        assert_eq!(names(&l, ""), vec!["a", "b"]);
        assert_eq!(read(&l, "b"), b"data");
        assert!(l.link(ROOT, ROOT, OsStr::new("c")).is_err(), "no link to a directory");
    }

    #[test]
    fn unsynced_unlink_and_rmdir_come_back() {
        let (_d, mut l) = setup(EntryMode::Own);
        let dir = l.mkdir(ROOT, OsStr::new("p"), 0o755).unwrap();
        let (ino, f) = l.create(dir, OsStr::new("f"), 0o644, 0).unwrap();
        l.write(ino, &f, 0, b"keep").unwrap();
        l.fsync_file(ino);
        l.fsync_dir(dir).unwrap();
        l.fsync_dir(ROOT).unwrap();
        l.unlink(dir, OsStr::new("f"), false).unwrap();
        l.unlink(ROOT, OsStr::new("p"), true).unwrap();
        assert!(names(&l, "").is_empty());
        l.power_loss().unwrap();
        assert_eq!(read(&l, "p/f"), b"keep");
    }

    #[test]
    fn unlink_after_dir_fsync_is_durable_and_trash_is_emptied() {
        let (_d, mut l) = setup(EntryMode::Own);
        let (ino, f) = l.create(ROOT, OsStr::new("f"), 0o644, 0).unwrap();
        l.write(ino, &f, 0, b"x").unwrap();
        l.fsync_dir(ROOT).unwrap();
        l.unlink(ROOT, OsStr::new("f"), false).unwrap();
        l.fsync_dir(ROOT).unwrap();
        assert_eq!(fs::read_dir(l.abs(Path::new(TRASH))).unwrap().count(), 0);
        l.power_loss().unwrap();
        assert!(names(&l, "").is_empty());
    }

    #[test]
    fn truncate_through_open_is_undone() {
        let (_d, mut l) = setup(EntryMode::Own);
        let (ino, f) = l.create(ROOT, OsStr::new("f"), 0o644, 0).unwrap();
        l.write(ino, &f, 0, b"0123456789").unwrap();
        l.fsync_file(ino);
        l.fsync_dir(ROOT).unwrap();
        let f = l.open(ino, libc::O_RDWR | libc::O_TRUNC).unwrap();
        l.write(ino, &f, 0, b"new").unwrap();
        l.power_loss().unwrap();
        assert_eq!(read(&l, "f"), b"0123456789");
    }

    #[test]
    fn files_present_before_the_mount_are_durable() {
        let dir = tempfile::tempdir().unwrap();
        fs::DirBuilder::new().mode(0o755).create(dir.path().join("old")).unwrap();
        fs::write(dir.path().join("old/f"), b"was here").unwrap();
        let mut l = Lazy::new(dir.path().to_path_buf(), EntryMode::Own).unwrap();
        let (d, _) = l.lookup(ROOT, OsStr::new("old")).unwrap();
        let (ino, _) = l.lookup(d, OsStr::new("f")).unwrap();
        let f = l.open(ino, libc::O_RDWR).unwrap();
        l.write(ino, &f, 8, b" and more").unwrap();
        l.create(d, OsStr::new("g"), 0o644, 0).unwrap();
        l.power_loss().unwrap();
        assert_eq!(read(&l, "old/f"), b"was here");
        assert_eq!(names(&l, "old"), vec!["f"]);
    }

    #[test]
    fn trash_is_hidden() {
        let (_d, mut l) = setup(EntryMode::Own);
        assert!(l.lookup(ROOT, OsStr::new(TRASH)).is_err());
        assert!(names(&l, "").is_empty());
    }
}
