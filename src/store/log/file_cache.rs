//! Segment files are opened on use through one bounded, least-recently-used cache of open
//! files shared by every partition of the broker: a broker with 100,000 partitions keeps as
//! many descriptors open as the cache holds, not one per segment. An evicted file stays open for
//! whoever still holds it (an append waiting for its fsync, a read in progress) and is closed
//! when they drop it; the next use opens it again.
//!
//! Files held past the cache are bounded too: a Fetch answer keeps each range's file open until
//! sendfile has sent it, and a Fetch may cover thousands of partitions. Each such range takes a
//! loan from the cache ([`FileCache::lend`]); when the loans are spent, the partition reads the
//! range into memory instead (a copied read, bounded by the response budget), so a wide fetch
//! never runs the broker out of descriptors.

use std::fs::{File, OpenOptions};
use std::io;
use std::path::Path;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use lru::LruCache;

/// Open files the cache keeps when nothing is configured (tests, benches).
pub const DEFAULT_CAPACITY: usize = 4096;

/// `max_open_segment_files = 0` (auto): a quarter of the open-file limit, the rest being kept
/// for connections, coordinator databases and files held during an fsync; at least 64.
pub fn auto_capacity(nofile: u64) -> usize {
    usize::try_from(nofile / 4).unwrap_or(usize::MAX).clamp(64, 1 << 20)
}

#[derive(Debug)]
pub struct FileCache {
    /// Unbounded in the type (nothing is allocated up front); `capacity` bounds it.
    open: Mutex<LruCache<u64, Arc<File>>>,
    capacity: usize,
    next_id: AtomicU64,
    /// Files lent to pending sends now; at most `capacity` (as many again as the cache keeps).
    lent: Arc<AtomicUsize>,
}

/// One open file lent to a pending send (a Fetch answer's range); returned when dropped.
#[derive(Debug)]
pub struct Loan(Arc<AtomicUsize>);

impl Drop for Loan {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::Relaxed);
    }
}

impl Default for FileCache {
    fn default() -> Self {
        FileCache::new(DEFAULT_CAPACITY)
    }
}

impl FileCache {
    pub fn new(capacity: usize) -> FileCache {
        FileCache {
            open: Mutex::new(LruCache::unbounded()),
            capacity: capacity.max(1),
            next_id: AtomicU64::new(1),
            lent: Arc::new(AtomicUsize::new(0)),
        }
    }

    /// A loan for one file held until a send completes, or None when `capacity` are out: the
    /// caller then copies the bytes and lets the file go.
    pub fn lend(&self) -> Option<Loan> {
        self.lent
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| (n < self.capacity).then_some(n + 1))
            .ok()
            .map(|_| Loan(self.lent.clone()))
    }

    /// Loans out now.
    pub fn lent(&self) -> usize {
        self.lent.load(Ordering::Acquire)
    }

    /// A new key for one segment file.
    pub fn register(&self) -> u64 {
        self.next_id.fetch_add(1, Ordering::Relaxed)
    }

    /// Keeps `file` (just created or opened) as the open file of `id`.
    pub fn put(&self, id: u64, file: Arc<File>) {
        let mut open = self.lock();
        open.put(id, file);
        self.trim(&mut open);
    }

    fn trim(&self, open: &mut LruCache<u64, Arc<File>>) {
        while open.len() > self.capacity {
            open.pop_lru();
        }
    }

    /// The open file of segment `id` at `path`, opened again if it was evicted: for reading and
    /// writing when `writable` (a segment of this leader's epoch), else read-only (a
    /// predecessor's, which this broker never writes).
    pub fn get(&self, id: u64, path: &Path, writable: bool) -> io::Result<Arc<File>> {
        if let Some(f) = self.lock().get(&id) {
            return Ok(f.clone());
        }
        // Opened outside the lock: an open on a shared disk may take a while.
        let file = Arc::new(OpenOptions::new().read(true).write(writable).open(path)?);
        let mut open = self.lock();
        let file = open.get_or_insert(id, || file).clone();
        self.trim(&mut open);
        Ok(file)
    }

    /// Forgets segment `id` (deleted): its file closes once nobody holds it.
    pub fn forget(&self, id: u64) {
        self.lock().pop(&id);
    }

    /// Files the cache holds open now.
    pub fn len(&self) -> usize {
        self.lock().len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, LruCache<u64, Arc<File>>> {
        self.open.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::FileExt;

    #[test]
    fn at_most_capacity_files_stay_open_and_evicted_ones_reopen_with_their_data() {
        let dir = tempfile::tempdir().unwrap();
        let cache = FileCache::new(2);
        let mut ids = Vec::new();
        for n in 0..5u8 {
            let path = dir.path().join(format!("{n}.log"));
            std::fs::write(&path, [n]).unwrap();
            let id = cache.register();
            cache.put(id, Arc::new(File::open(&path).unwrap()));
            ids.push((id, path));
        }
        assert_eq!(cache.len(), 2);
        for (n, (id, path)) in ids.iter().enumerate() {
            let f = cache.get(*id, path, true).unwrap();
            let mut b = [0u8; 1];
            f.read_exact_at(&mut b, 0).unwrap();
            assert_eq!(b[0] as usize, n);
            assert!(cache.len() <= 2);
        }
    }

    #[test]
    fn an_evicted_file_stays_open_for_its_holder() {
        let dir = tempfile::tempdir().unwrap();
        let cache = FileCache::new(1);
        let (a, b) = (dir.path().join("a"), dir.path().join("b"));
        std::fs::write(&a, b"a").unwrap();
        std::fs::write(&b, b"b").unwrap();
        let (ia, ib) = (cache.register(), cache.register());
        let held = cache.get(ia, &a, true).unwrap();
        cache.get(ib, &b, true).unwrap();
        held.write_all_at(b"A", 0).unwrap();
        held.sync_data().unwrap();
        assert_eq!(std::fs::read(&a).unwrap(), b"A");
    }

    #[test]
    fn at_most_capacity_files_are_lent_and_a_returned_loan_frees_one() {
        let cache = FileCache::new(2);
        let (a, b) = (cache.lend().unwrap(), cache.lend().unwrap());
        assert!(cache.lend().is_none(), "a third loan would pass the budget");
        drop(a);
        assert_eq!(cache.lent(), 1);
        let c = cache.lend().expect("a returned loan is lent again");
        drop((b, c));
        assert_eq!(cache.lent(), 0);
    }

    #[test]
    fn the_auto_capacity_is_a_quarter_of_the_open_file_limit() {
        assert_eq!(auto_capacity(20_000), 5_000);
        assert_eq!(auto_capacity(100), 64);
        assert_eq!(auto_capacity(u64::MAX), 1 << 20);
    }
}
