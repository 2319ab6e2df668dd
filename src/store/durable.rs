//! Making names and sled writes survive a power loss, not just a kill -9. Found by the
//! crash-consistency test (tests/interop/python/test_crash_consistency.py on tests/lazyfs).

use std::fs::File;
use std::io;
use std::path::Path;

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

#[cfg(test)]
mod tests {
    use super::*;

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
}
