//! FUSE inode numbers for paths of the backing directory (relative; the root is ""). An inode
//! keeps its number across renames, so the durability model can follow a file that moves.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use crate::model::Ino;

pub const ROOT: Ino = 1;

#[derive(Debug)]
pub struct Inodes {
    paths: HashMap<Ino, PathBuf>,
    by_path: HashMap<PathBuf, Ino>,
    next: Ino,
}

impl Default for Inodes {
    fn default() -> Self {
        let mut t = Inodes { paths: HashMap::new(), by_path: HashMap::new(), next: ROOT + 1 };
        t.paths.insert(ROOT, PathBuf::new());
        t.by_path.insert(PathBuf::new(), ROOT);
        t
    }
}

impl Inodes {
    pub fn path(&self, ino: Ino) -> Option<&Path> {
        self.paths.get(&ino).map(PathBuf::as_path)
    }

    #[cfg(test)]
    pub fn get(&self, path: &Path) -> Option<Ino> {
        self.by_path.get(path).copied()
    }

    pub fn get_or_assign(&mut self, path: &Path) -> Ino {
        if let Some(i) = self.by_path.get(path) {
            return *i;
        }
        let ino = self.next;
        self.next += 1;
        self.paths.insert(ino, path.to_path_buf());
        self.by_path.insert(path.to_path_buf(), ino);
        ino
    }

    /// `from` (and everything below it) now lives at `to`; whatever was known at `to` is gone.
    pub fn rename(&mut self, from: &Path, to: &Path) {
        self.forget(to);
        let moved: Vec<(PathBuf, Ino)> =
            self.by_path.iter().filter(|(p, _)| p.starts_with(from)).map(|(p, i)| (p.clone(), *i)).collect();
        for (old, ino) in moved {
            self.by_path.remove(&old);
            let rest = old.strip_prefix(from).map(Path::to_path_buf).unwrap_or_default();
            let new = if rest.as_os_str().is_empty() { to.to_path_buf() } else { to.join(rest) };
            self.paths.insert(ino, new.clone());
            self.by_path.insert(new, ino);
        }
    }

    /// `path` and everything below it are gone.
    pub fn forget(&mut self, path: &Path) {
        let gone: Vec<PathBuf> = self.by_path.keys().filter(|p| p.starts_with(path)).cloned().collect();
        for p in gone {
            if let Some(ino) = self.by_path.remove(&p) {
                self.paths.remove(&ino);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rename_moves_the_subtree_and_keeps_numbers() {
        let mut t = Inodes::default();
        let d = t.get_or_assign(Path::new("d"));
        let f = t.get_or_assign(Path::new("d/f"));
        let other = t.get_or_assign(Path::new("e"));
        t.rename(Path::new("d"), Path::new("e"));
        assert_eq!(t.path(d), Some(Path::new("e")));
        assert_eq!(t.path(f), Some(Path::new("e/f")));
        assert_eq!(t.path(other), None);
        assert_eq!(t.get(Path::new("d/f")), None);
    }

    #[test]
    fn rename_does_not_touch_siblings_sharing_a_prefix() {
        let mut t = Inodes::default();
        let a = t.get_or_assign(Path::new("t-1"));
        let b = t.get_or_assign(Path::new("t-10"));
        t.rename(Path::new("t-1"), Path::new("x"));
        assert_eq!(t.path(a), Some(Path::new("x")));
        assert_eq!(t.path(b), Some(Path::new("t-10")));
    }
}
