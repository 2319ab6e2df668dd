//! Making names and sled writes survive a power loss, not just a kill -9. Found by the
//! crash-consistency test (tests/interop/python/test_crash_consistency.py on tests/lazyfs).

use std::fs::File;
use std::io;
use std::io::Write;
use std::path::{Path, PathBuf};

/// `create_dir_all` whose new directories survive a power loss: POSIX makes a new entry durable
/// only with an fsync of the directory holding it, so each created directory's parent is synced.
pub fn create_dir_all_durable(dir: &Path) -> io::Result<()> {
    if dir.as_os_str().is_empty() || dir.is_dir() {
        return Ok(());
    }
    let parent = dir.parent().unwrap_or(Path::new(""));
    create_dir_all_durable(parent)?;
    match std::fs::create_dir(dir) {
        Ok(()) => {}
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists && dir.is_dir() => return Ok(()),
        Err(e) => return Err(e),
    }
    sync_dir(if parent.as_os_str().is_empty() { Path::new(".") } else { parent })
}

/// Flushes everything written to the file system holding `path` (syncfs(2)): one call makes
/// every partition recovery found durable, where an fsync per segment would flush the disk's
/// cache once per partition (minutes for 100,000 of them).
pub fn sync_filesystem(path: &Path) -> io::Result<()> {
    crate::sys::syncfs(&File::open(path)?)
}

/// Whether syncfs(2) on the file system holding `path` makes its files durable. FUSE file
/// systems (lazyfs in the tests, several cluster file systems) only pass it to the daemon when
/// it asks for it (virtiofs), so there each file is fsynced instead.
pub fn syncfs_flushes(path: &Path) -> bool {
    const FUSE_SUPER_MAGIC: i64 = 0x6573_5546;
    crate::sys::filesystem_type(path).is_ok_and(|kind| kind != FUSE_SUPER_MAGIC)
}

/// Whether the file system holding `path` writes an overwrite in place and commits a journal
/// when a file grows (ext4, XFS): there an fsync into blocks written before skips the journal
/// (store::log::segment's zeros ahead). Not copy-on-write ones (btrfs), FUSE ones (JuiceFS,
/// whose overwrites are new slices), network ones (NFS, CephFS: the zeros would cross the
/// network), nor one that cannot be told.
pub fn overwrites_in_place(path: &Path) -> bool {
    crate::sys::filesystem_type(path).is_ok_and(overwrites_in_place_kind)
}

/// `overwrites_in_place` by the file system's magic number (statfs `f_type`).
pub fn overwrites_in_place_kind(kind: i64) -> bool {
    const EXT4_SUPER_MAGIC: i64 = 0xEF53;
    const XFS_SUPER_MAGIC: i64 = 0x5846_5342;
    matches!(kind, EXT4_SUPER_MAGIC | XFS_SUPER_MAGIC)
}

pub fn sync_dir(dir: &Path) -> io::Result<()> {
    File::open(dir)?.sync_all()
}

/// Makes a file written without fsync durable after the fact: its data, then its name.
pub fn sync_file_and_dir(path: &Path) -> io::Result<()> {
    File::open(path)?.sync_all()?;
    sync_dir(path.parent().unwrap_or(Path::new(".")))
}

/// Opens a sled database durably: its directory's entry and the entries sled creates in it
/// (`db`, `conf`) are synced. Returns the database and its `db` file for `flush_sled`.
pub fn open_sled(dir: &Path) -> Result<(sled::Db, File), String> {
    create_dir_all_durable(dir).map_err(|e| format!("creating {}: {e}", dir.display()))?;
    let db = sled::open(dir).map_err(|e| format!("opening {}: {e}", dir.display()))?;
    let file = File::open(dir.join("db")).map_err(|e| format!("opening {}/db: {e}", dir.display()))?;
    // sled writes `conf` at open without syncing it (after a power loss it warns of an empty one).
    if let Ok(conf) = File::open(dir.join("conf")) {
        conf.sync_all().map_err(|e| format!("syncing {}/conf: {e}", dir.display()))?;
    }
    sync_dir(dir).map_err(|e| format!("syncing {}: {e}", dir.display()))?;
    Ok((db, file))
}

/// sled 0.34's `flush` ends in sync_file_range(2) on Linux, which neither writes the file's
/// metadata (the size of what was appended) nor flushes the disk cache; its real fsync runs
/// only every 500 ms in the background. So fdatasync the `db` file (any descriptor of the inode
/// will do) before an answer that must be durable.
pub fn flush_sled(db: &sled::Db, file: &File) -> Result<(), String> {
    db.flush().map_err(|e| e.to_string())?;
    file.sync_data().map_err(|e| e.to_string())
}

/// Writes `bytes` to `path` atomically and durably (tmp file, fsync, rename, fsync dir).
pub fn write_atomic(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    create_dir_all_durable(path.parent().unwrap_or(Path::new(".")))?;
    replace_durably(path, bytes)
}

/// `write_atomic` for a file in a directory that must already exist (a partition's): when the
/// directory is gone (its topic was deleted while the write waited on the blocking pool) the
/// write fails with NotFound instead of creating the directory again.
pub fn replace_durably(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let tmp = sync_tmp(path, bytes)?;
    if let Err(e) = std::fs::rename(&tmp, path) {
        let _ = std::fs::remove_file(&tmp);
        return Err(e);
    }
    sync_dir(path.parent().unwrap_or(Path::new(".")))
}

/// Replaces `path` with `bytes` atomically (tmp file, rename) without fsyncing: for files that
/// only save work after a power loss (a recovery point, a producer snapshot), where losing the
/// new version, or finding an empty one, only means replaying more of the log. A broker with
/// 100,000 partitions then stops in seconds.
pub fn write_replace(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let tmp = unique_tmp(path);
    let mut f = File::create(&tmp)?;
    f.write_all(bytes)?;
    drop(f);
    std::fs::rename(&tmp, path)
}

/// Writes and syncs `bytes` under a private name beside `path` (its directory made durably
/// first); returns the directory and that name.
fn write_synced_tmp<'a>(path: &'a Path, bytes: &[u8]) -> std::io::Result<(&'a Path, PathBuf)> {
    let dir = path.parent().unwrap_or(Path::new("."));
    create_dir_all_durable(dir)?;
    Ok((dir, sync_tmp(path, bytes)?))
}

/// Writes and syncs `bytes` under a private name beside `path`; returns that name.
fn sync_tmp(path: &Path, bytes: &[u8]) -> std::io::Result<PathBuf> {
    let tmp = unique_tmp(path);
    let mut f = File::create(&tmp)?;
    f.write_all(bytes)?;
    f.sync_all()?;
    Ok(tmp)
}

/// A temporary name beside `path` that no other process (brokers share the directory) or
/// thread uses: `.<name>.<pid>.<n>.tmp`, which no reader takes for a data file. The name is cut
/// to its first 200 bytes, so that a file name near the 255-byte limit (a topic file of a
/// 249-character topic) still has one.
fn unique_tmp(path: &Path) -> PathBuf {
    static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    let mut cut = name.len().min(200);
    while !name.is_char_boundary(cut) {
        cut -= 1;
    }
    path.with_file_name(format!(".{}.{}.{n}.tmp", &name[..cut], std::process::id()))
}

/// `create_atomic` without the rename: false also when this file system has no hard links.
pub fn create_linked(path: &Path, bytes: &[u8]) -> std::io::Result<bool> {
    let (dir, tmp) = write_synced_tmp(path, bytes)?;
    let linked = std::fs::hard_link(&tmp, path).is_ok();
    let _ = std::fs::remove_file(&tmp);
    if linked {
        sync_dir(dir)?;
    }
    Ok(linked)
}

/// Writes `bytes` to `path` only if nothing is there, atomically across the brokers sharing the
/// directory: the content is written and synced under a private name, then linked into place
/// (link(2) refuses an existing name, on NFS too). False when another writer was first. On a file
/// system without hard links the file is renamed into place when absent, which is atomic for its
/// content but not exclusive between brokers starting at the same instant.
pub fn create_atomic(path: &Path, bytes: &[u8]) -> std::io::Result<bool> {
    let (dir, tmp) = write_synced_tmp(path, bytes)?;
    let created = match std::fs::hard_link(&tmp, path) {
        Ok(()) => Ok(true),
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => Ok(false),
        Err(_) if path.exists() => Ok(false),
        // No hard links here (some FUSE file systems): rename, which keeps the content atomic.
        Err(_) => std::fs::rename(&tmp, path).map(|()| true),
    };
    let _ = std::fs::remove_file(&tmp);
    if created? {
        sync_dir(dir)?;
        return Ok(true);
    }
    Ok(false)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn zeros_ahead_only_on_file_systems_that_overwrite_in_place() {
        // ext4 (ext2/ext3 share the magic number) and XFS; not btrfs, FUSE, NFS, CephFS, tmpfs.
        assert!(overwrites_in_place_kind(0xEF53) && overwrites_in_place_kind(0x5846_5342));
        for other in [0x9123_683E, 0x6573_5546, 0x6969, 0x00C3_6400, 0x0102_1994] {
            assert!(!overwrites_in_place_kind(other), "{other:#x}");
        }
    }

    #[test]
    fn create_dir_all_durable_creates_nested_dirs_and_is_idempotent() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("a").join("b").join("c");
        create_dir_all_durable(&dir).unwrap();
        assert!(dir.is_dir());
        create_dir_all_durable(&dir).unwrap();
    }

    #[test]
    fn create_dir_all_durable_refuses_a_file_in_the_way() {
        let tmp = tempfile::tempdir().unwrap();
        std::fs::write(tmp.path().join("f"), b"x").unwrap();
        assert!(create_dir_all_durable(&tmp.path().join("f").join("d")).is_err());
    }

    #[test]
    fn flush_sled_persists_what_was_inserted() {
        let tmp = tempfile::tempdir().unwrap();
        let path = tmp.path().join("db");
        {
            let (db, file) = open_sled(&path).unwrap();
            db.insert(b"k", b"v".to_vec()).unwrap();
            flush_sled(&db, &file).unwrap();
        }
        let (db, _) = open_sled(&path).unwrap();
        assert_eq!(db.get(b"k").unwrap().as_deref(), Some(&b"v"[..]));
    }

    #[test]
    fn a_file_name_of_254_bytes_is_written_atomically() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(format!("{}.json", "x".repeat(249)));
        assert!(create_atomic(&path, b"first").unwrap());
        write_atomic(&path, b"second").unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), b"second");
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
    }

    #[test]
    fn create_atomic_writes_once_and_leaves_no_temporary_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("x.json");
        assert!(create_atomic(&path, b"first").unwrap());
        assert!(!create_atomic(&path, b"second").unwrap(), "the name is taken");
        assert_eq!(std::fs::read(&path).unwrap(), b"first");
        let names: Vec<_> = std::fs::read_dir(dir.path()).unwrap().map(|e| e.unwrap().file_name()).collect();
        assert_eq!(names.len(), 1, "{names:?}");
    }
}
