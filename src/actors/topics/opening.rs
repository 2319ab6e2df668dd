//! Opening (recovering) the partitions whose leases were just taken: many at once on several
//! threads (a restart, a takeover), the results in pieces (memory), made durable together.

use super::takeover::open_log;
use super::Acquired;
use crate::store::log::LogError;
use crate::store::partition::Partition;

/// Threads opening partitions at once: recovery mostly waits for the file system.
const OPEN_THREADS: usize = 8;

/// Threads to open `n` partitions on. From two on, each gets a thread of its own (up to
/// OPEN_THREADS): a takeover on a network file system waits seconds per partition (listing,
/// links, seal, directory fsyncs) and the partitions wait for each other otherwise. Not
/// `parallel`: a creation's new directories in one parent contend, so one thread.
fn open_threads(n: usize, parallel: bool) -> usize {
    if parallel {
        n.clamp(1, OPEN_THREADS)
    } else {
        1
    }
}

type Opened = (Acquired, Result<Partition, LogError>);

/// Opened partitions, in pieces. The recovery threads hand theirs back in pieces of at most
/// OPENED_PIECE: a vector of thousands exceeds glibc's mmap threshold (128 KiB at first), and
/// freeing such a mapping raises the threshold for the rest of the process, which then kept
/// 27.4-28.3 MiB after a restart of 2,000 partitions against 21.5-22.4 in pieces (BENCHMARKS.md).
/// Opening on one thread (a creation) gives one piece.
type OpenedPieces = Vec<Vec<Opened>>;

/// Opened partitions per piece, below the initial mmap threshold (unit-tested).
const OPENED_PIECE: usize = 64;

/// `f` over `items`, the results in pieces of `size` (the last one shorter).
fn in_pieces<T, U>(items: impl Iterator<Item = T>, size: usize, f: impl Fn(T) -> U) -> Vec<Vec<U>> {
    let mut pieces = Vec::new();
    let mut piece = Vec::with_capacity(size);
    for item in items {
        piece.push(f(item));
        if piece.len() >= size {
            pieces.push(std::mem::replace(&mut piece, Vec::with_capacity(size)));
        }
    }
    if !piece.is_empty() {
        pieces.push(piece);
    }
    pieces
}

/// Applies `f` to every opened partition, keeping the pieces.
fn each_opened<F>(opened: OpenedPieces, f: F) -> OpenedPieces
where
    F: Fn(Result<Partition, LogError>) -> Result<Partition, LogError>,
{
    opened.into_iter().map(|piece| piece.into_iter().map(|(a, o)| (a, f(o))).collect()).collect()
}

/// `open_log` of every acquired partition (on up to OPEN_THREADS threads when `parallel`: a
/// restart, a takeover; see `open_threads`). What recovery found is made durable with one syncfs (per segment
/// where syncfs does not flush: FUSE).
pub(super) fn open_logs(data_dir: &std::path::Path, acquired: Vec<Acquired>, parallel: bool) -> OpenedPieces {
    let open = |a: Acquired| {
        let opened = open_log(data_dir, &a.topic.meta, a.partition, &a.log_config, a.lease.record.epoch);
        (a, opened)
    };
    let threads = open_threads(acquired.len(), parallel);
    let opened = if threads == 1 {
        vec![acquired.into_iter().map(open).collect()]
    } else {
        open_in_parallel(acquired, threads, open)
    };
    // New (empty) partitions found nothing to make durable.
    if !opened.iter().flatten().any(|(_, o)| o.as_ref().is_ok_and(|p| p.log_end_offset() > 0)) {
        return opened;
    }
    if !crate::store::durable::syncfs_flushes(data_dir) {
        return each_opened(opened, |o| o.and_then(|p| p.sync_recovered().map(|()| p)));
    }
    match crate::store::durable::sync_filesystem(data_dir) {
        Ok(()) => opened,
        Err(e) => {
            each_opened(opened, |o| o.and_then(|_| Err(LogError::Io(std::io::Error::new(e.kind(), e.to_string())))))
        }
    }
}

/// Runs `open` over `acquired` on `threads` threads.
fn open_in_parallel<F>(acquired: Vec<Acquired>, threads: usize, open: F) -> OpenedPieces
where
    F: Fn(Acquired) -> Opened + Sync,
{
    let open = &open;
    let per_thread = acquired.len().div_ceil(threads.max(1));
    let mut chunks: Vec<Vec<Acquired>> = Vec::new();
    let mut rest = acquired.into_iter();
    loop {
        let chunk: Vec<_> = rest.by_ref().take(per_thread).collect();
        if chunk.is_empty() {
            break;
        }
        chunks.push(chunk);
    }
    std::thread::scope(|scope| {
        let workers: Vec<_> =
            chunks.into_iter().map(|c| scope.spawn(move || in_pieces(c.into_iter(), OPENED_PIECE, open))).collect();
        // A worker that panicked is a bug in recovery: the broker stops (the panic is re-raised).
        workers.into_iter().flat_map(|w| w.join().unwrap_or_else(|e| std::panic::resume_unwind(e))).collect()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn partitions_taken_together_open_on_a_thread_each_up_to_the_limit() {
        assert_eq!(open_threads(0, true), 1);
        assert_eq!(open_threads(1, true), 1);
        assert_eq!(open_threads(6, true), 6);
        assert_eq!(open_threads(10_000, true), OPEN_THREADS);
        assert_eq!(open_threads(10_000, false), 1, "a creation opens on one thread");
    }

    #[test]
    fn recovered_partitions_come_back_in_pieces_in_their_order() {
        let pieces = in_pieces(0..130, OPENED_PIECE, |i| i * 2);
        assert_eq!(pieces.iter().map(Vec::len).collect::<Vec<_>>(), vec![64, 64, 2]);
        assert!(pieces.concat().into_iter().eq((0..130).map(|i| i * 2)));
        assert!(in_pieces(0..0, OPENED_PIECE, |i: i32| i).is_empty());
    }

    #[test]
    fn a_piece_of_opened_partitions_stays_below_the_initial_mmap_threshold() {
        // glibc maps allocations from 128 KiB on until a freed mapping raises that (OpenedPieces).
        assert!(std::mem::size_of::<Opened>() * OPENED_PIECE < 128 * 1024, "{}", std::mem::size_of::<Opened>());
    }
}
