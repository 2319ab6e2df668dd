//! The log start offset a DeleteRecords moved (KIP-107): kept in `log-start-offset` beside the
//! segments, written durably before the deletion is answered, so it survives a crash, a restart
//! and a failover to another broker of the shared disk. Below it nothing is served, even where
//! the first segment still holds batches (the start may fall inside a segment).

use std::path::{Path, PathBuf};
use std::sync::Mutex;

pub const LOG_START_FILE: &str = "log-start-offset";

/// The segments (base offset, next offset after its last batch), oldest first, that lie
/// entirely below `log_start`: Kafka's `deleteLogStartOffsetBreachedSegments` deletes a segment
/// when the next one starts at or below the log start. The active (last) segment always stays.
pub fn segments_below_start(segments: &[(i64, i64)], log_start: i64) -> Vec<i64> {
    segments.windows(2).take_while(|w| w[1].0 <= log_start).map(|w| w[0].0).collect()
}

/// The log start a log opens at: the file's, unless the oldest segment starts later (retention
/// removed more since). None of the file (missing or unreadable): the oldest segment's base.
pub fn opening_start(from_file: Option<i64>, first_base: i64) -> i64 {
    from_file.map_or(first_base, |f| f.max(first_base))
}

/// The `log-start-offset` file of one partition. Writes are monotonic: a write of an offset at
/// or below the one on disk does nothing, so writes finishing out of order on the blocking pool
/// (or the final write at shutdown racing one still running) never move the file back.
#[derive(Debug)]
pub struct LogStartFile {
    path: PathBuf,
    /// The offset on disk (durably); 0, the start of every log, when there is no file.
    written: Mutex<i64>,
}

impl LogStartFile {
    /// Epoch `epoch`'s file in partition directory `dir` (store::cluster::seal: each leader
    /// epoch writes its own) and the offset it holds (None: none, or unreadable).
    pub fn open(dir: &Path, epoch: i32) -> (LogStartFile, Option<i64>) {
        let path = dir.join(crate::store::cluster::seal::tagged(LOG_START_FILE, "", epoch));
        let found = std::fs::read_to_string(&path).ok().and_then(|s| s.trim().parse::<i64>().ok()).filter(|o| *o >= 0);
        (LogStartFile { path, written: Mutex::new(found.unwrap_or(0)) }, found)
    }

    /// The file of a log that could not be opened: never read, never written.
    pub fn unread(dir: &Path) -> LogStartFile {
        LogStartFile { path: dir.join(LOG_START_FILE), written: Mutex::new(i64::MAX) }
    }

    /// Makes `offset` durable (tmp file, fsync, rename, fsync of the directory) unless the file
    /// already holds it or more. Blocks on fsync: call it from a blocking thread.
    pub fn persist(&self, offset: i64) -> std::io::Result<()> {
        // A poisoned lock only means another write panicked: the value it guards is still right.
        let mut written = self.written.lock().unwrap_or_else(|p| p.into_inner());
        if offset <= *written {
            return Ok(());
        }
        crate::store::durable::replace_durably(&self.path, offset.to_string().as_bytes())?;
        *written = offset;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_segment_goes_once_the_next_one_starts_at_or_below_the_log_start() {
        let segs = [(0, 10), (10, 20), (20, 30), (30, 35)];
        assert_eq!(segments_below_start(&segs, 9), Vec::<i64>::new());
        assert_eq!(segments_below_start(&segs, 10), vec![0]);
        assert_eq!(segments_below_start(&segs, 25), vec![0, 10]);
        // The active segment stays even when the start reaches the log end.
        assert_eq!(segments_below_start(&segs, 35), vec![0, 10, 20]);
    }

    #[test]
    fn the_log_opens_at_the_later_of_the_file_and_the_oldest_segment() {
        assert_eq!(opening_start(Some(15), 10), 15);
        assert_eq!(opening_start(Some(5), 10), 10);
        assert_eq!(opening_start(None, 10), 10);
    }

    #[test]
    fn the_log_start_file_only_moves_forward_and_is_read_back() {
        let dir = tempfile::tempdir().unwrap();
        let (f, found) = LogStartFile::open(dir.path(), 0);
        assert_eq!(found, None);
        f.persist(7).unwrap();
        f.persist(3).unwrap();
        assert_eq!(LogStartFile::open(dir.path(), 0).1, Some(7));
        std::fs::write(dir.path().join(LOG_START_FILE), b"garbage").unwrap();
        assert_eq!(LogStartFile::open(dir.path(), 0).1, None);
    }
}
