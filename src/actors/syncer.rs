//! Group commit: fsync runs on dedicated threads, never on the actor threads. Each sync covers
//! everything a partition appended before it started, so one fsync answers every producer that
//! appended in the meantime. A partition keeps up to `partition_syncs_in_flight` of them going
//! at once (appends continue into the page cache meanwhile) and acknowledges in the order they
//! were asked for ([`SyncWindow`]).

use std::collections::VecDeque;
use std::path::PathBuf;
use std::thread;
use std::time::Instant;

use actix::{Message, Recipient};

use super::sync_queue::{bounded, JobReceiver, JobSender};
use crate::metrics::Metrics;
use crate::store::cluster::fence::{FenceError, SelfFence};
use crate::store::durable::sync_filesystem;
use crate::store::log::SyncSet;

/// The syncer made job `seq`'s files durable (or failed to); what that covered, the partition's
/// [`SyncWindow`] recorded when the job started.
#[derive(Message)]
#[rtype(result = "()")]
pub struct Synced {
    pub seq: u64,
    pub result: Result<(), SyncFailure>,
}

/// Why a sync job cannot be acknowledged.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SyncFailure {
    /// The fsync failed: the log is in an unknown state.
    Io(String),
    /// The data is durable, but this broker was fenced (store::cluster::fence): a broker that
    /// took its partitions over may not see it, so it is never acknowledged.
    Fenced(String),
}

/// Make `files` durable, then tell `reply` (with the job's `seq`).
pub struct SyncJob {
    /// The partition's number for the job ([`SyncWindow::start`]), given back in `Synced`.
    pub seq: u64,
    pub files: SyncSet,
    pub reply: Recipient<Synced>,
}

/// Jobs answered by one syncfs at most.
const GROUP_MAX: usize = 4096;

/// Group commit across partitions: from `min_partitions` jobs waiting together, one syncfs of
/// the file system holding `dir` replaces their fsyncs (one device flush instead of one each).
/// `settings.group_commit_min_partitions`; only where syncfs flushes (`durable::syncfs_flushes`).
#[derive(Clone, Debug)]
pub struct GroupCommit {
    pub dir: PathBuf,
    pub min_partitions: usize,
}

impl GroupCommit {
    /// Whether `jobs` waiting together are made durable with one syncfs.
    fn covers(&self, jobs: usize) -> bool {
        jobs >= self.min_partitions.max(1)
    }
}

/// Makes `jobs` durable (one syncfs when there are many and `group` allows it) and answers them.
/// Each fsync or syncfs is timed into `kaas_log_fsync_seconds`, with the partitions it covered.
/// Self-fence: after the fsyncs and before any answer, one check for the whole group that this
/// broker was not fenced. A fence created after it comes before the new owner reads how far
/// the files go, so what is acknowledged here is inside its seal.
fn run(jobs: Vec<SyncJob>, skip_fsync: bool, group: Option<&GroupCommit>, metrics: &Metrics, fence: &SelfFence) {
    let results: Vec<(SyncJob, Result<(), SyncFailure>)> = if skip_fsync {
        jobs.into_iter().map(|job| (job, Ok(()))).collect()
    } else {
        match group.filter(|g| g.covers(jobs.len())) {
            Some(GroupCommit { dir, .. }) => {
                // A failed syncfs cannot say whose data it lost: every job of the group fails.
                let started = Instant::now();
                let result = sync_filesystem(dir).map_err(|e| SyncFailure::Io(e.to_string()));
                metrics.fsync().observe_duration(started.elapsed());
                metrics.group_commit_partitions().observe(jobs.len() as u64);
                jobs.into_iter().map(|job| (job, result.clone())).collect()
            }
            None => jobs
                .into_iter()
                .map(|job| {
                    let started = Instant::now();
                    let result = job.files.sync().map_err(|e| SyncFailure::Io(e.to_string()));
                    metrics.fsync().observe_duration(started.elapsed());
                    metrics.group_commit_partitions().observe(1);
                    (job, result)
                })
                .collect(),
        }
    };
    let fenced = match fence.check() {
        Ok(()) => None,
        Err(e @ FenceError::Fenced { .. }) => Some(SyncFailure::Fenced(e.to_string())),
        // The data is durable but whether it may be acknowledged cannot be told.
        Err(e) => Some(SyncFailure::Io(format!("fence check: {e}"))),
    };
    for (job, result) in results {
        let result = match (&fenced, result) {
            (Some(f), Ok(())) => Err(f.clone()),
            (_, r) => r,
        };
        job.reply.do_send(Synced { seq: job.seq, result });
    }
}

/// The syncs of one partition in flight, in the order they were asked for. A later sync may
/// finish first, yet it need not cover an earlier one's files (a rolled segment, a directory
/// entry), so an offset is acknowledged only when every sync asked for before it has finished:
/// the high watermark moves to the end of the finished prefix.
#[derive(Debug)]
pub struct SyncWindow {
    depth: usize,
    next_seq: u64,
    /// (seq, upto, batches covered, finished), oldest first.
    jobs: VecDeque<(u64, i64, u64, bool)>,
}

/// What the finished prefix of the window made durable.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Durable {
    pub upto: i64,
    pub batches: u64,
}

impl SyncWindow {
    pub fn new(depth: usize) -> SyncWindow {
        SyncWindow { depth: depth.max(1), next_seq: 0, jobs: VecDeque::new() }
    }

    /// Whether a sync of everything below `log_end` may start now: fewer than `depth` in flight,
    /// and something appended since the last one was asked for (or since `durable`, the high
    /// watermark, when none is in flight).
    pub fn may_start(&self, log_end: i64, durable: i64) -> bool {
        let asked = self.jobs.back().map_or(durable, |&(_, upto, _, _)| upto.max(durable));
        self.jobs.len() < self.depth && log_end > asked
    }

    /// Records a sync of everything below `upto` (covering `batches` batches); its number.
    pub fn start(&mut self, upto: i64, batches: u64) -> u64 {
        let seq = self.next_seq;
        self.next_seq += 1;
        self.jobs.push_back((seq, upto, batches, false));
        seq
    }

    /// Sync `seq` finished: what became acknowledgeable (None while an older one is still out).
    pub fn finish(&mut self, seq: u64) -> Option<Durable> {
        if let Some(job) = self.jobs.iter_mut().find(|j| j.0 == seq) {
            job.3 = true;
        }
        let mut durable: Option<Durable> = None;
        while let Some(&(_, upto, batches, true)) = self.jobs.front() {
            self.jobs.pop_front();
            let d = durable.get_or_insert(Durable { upto, batches: 0 });
            d.upto = d.upto.max(upto);
            d.batches += batches;
        }
        durable
    }

    /// Syncs in flight.
    pub fn in_flight(&self) -> usize {
        self.jobs.len()
    }

    /// Forgets every sync in flight (the partition went offline: none of them is acknowledged).
    pub fn clear(&mut self) {
        self.jobs.clear();
    }
}

#[derive(Clone)]
pub struct Syncer {
    tx: JobSender<SyncJob>,
    /// The fence its threads check after each fsync, for other durable work of the leaders.
    fence: SelfFence,
    /// Syncs one partition may have in flight at once (`partition_syncs_in_flight`).
    partition_depth: usize,
}

impl Syncer {
    /// Starts `threads` fsync threads behind a queue of `capacity` jobs. `skip_fsync` is the
    /// `debug_skip_fsync` test hook: answer every job as synced without syncing anything.
    /// `group`: a thread that finds that many jobs waiting (partitions written at once) makes
    /// them all durable with one syncfs instead of an fsync each (see `GroupCommit`).
    #[allow(clippy::too_many_arguments)]
    pub fn start(
        threads: usize,
        partition_depth: usize,
        capacity: usize,
        skip_fsync: bool,
        group: Option<GroupCommit>,
        metrics: Metrics,
        fence: SelfFence,
    ) -> Syncer {
        let (tx, rx) = bounded::<SyncJob>(capacity);
        for i in 0..threads.max(1) {
            let rx: JobReceiver<SyncJob> = rx.clone();
            let group = group.clone();
            let metrics = metrics.clone();
            let thread_fence = fence.clone();
            let spawned = thread::Builder::new().name(format!("kaas-sync-{i}")).spawn(move || {
                super::supervisor::mark_state_thread();
                // Without group commit each job is its own fsync: one at a time.
                let take = if group.is_some() { GROUP_MAX } else { 1 };
                while let Some(jobs) = rx.recv_up_to(take) {
                    run(jobs, skip_fsync, group.as_ref(), &metrics, &thread_fence);
                }
            });
            if let Err(e) = spawned {
                tracing::error!("could not start sync thread: {e}");
            }
        }
        Syncer { tx, fence, partition_depth }
    }

    /// A partition's window of syncs in flight.
    pub fn window(&self) -> SyncWindow {
        SyncWindow::new(self.partition_depth)
    }

    /// This broker's fence (store::cluster::fence), for the leaders' deletions.
    pub fn fence(&self) -> SelfFence {
        self.fence.clone()
    }

    /// Queues a job; blocks the calling partition thread when the queue is full (backpressure).
    pub fn submit(&self, job: SyncJob) -> Result<(), String> {
        self.tx.send(job).map_err(|_| "sync threads are gone".to_string())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_sync_window_starts_at_most_depth_syncs_each_covering_new_appends() {
        let mut w = SyncWindow::new(2);
        assert!(!w.may_start(10, 10), "nothing appended past the high watermark");
        assert!(w.may_start(11, 10));
        w.start(11, 1);
        assert!(!w.may_start(11, 10), "everything below 11 is asked for already");
        assert!(w.may_start(12, 10));
        w.start(12, 1);
        assert!(!w.may_start(20, 10), "depth 2 in flight");
        assert_eq!(w.in_flight(), 2);
    }

    #[test]
    fn a_sync_window_acknowledges_only_the_finished_prefix() {
        let mut w = SyncWindow::new(3);
        let a = w.start(5, 2);
        let b = w.start(8, 1);
        let c = w.start(9, 4);
        // b finishing first says nothing about a's files (a rolled segment, a new directory entry).
        assert_eq!(w.finish(b), None);
        assert_eq!(w.finish(a), Some(Durable { upto: 8, batches: 3 }));
        assert_eq!(w.finish(c), Some(Durable { upto: 9, batches: 4 }));
        assert_eq!(w.in_flight(), 0);
        assert_eq!(w.finish(c), None, "a sync finished twice acknowledges nothing more");
    }

    #[test]
    fn a_cleared_sync_window_acknowledges_nothing_of_what_was_in_flight() {
        let mut w = SyncWindow::new(2);
        let a = w.start(5, 1);
        w.clear();
        assert_eq!(w.finish(a), None);
        assert!(w.may_start(6, 5));
    }

    #[test]
    fn one_syncfs_covers_the_jobs_from_min_partitions_on() {
        let group = |min_partitions| GroupCommit { dir: PathBuf::from("."), min_partitions };
        assert!(!group(8).covers(7));
        assert!(group(8).covers(8));
        assert!(!group(2).covers(1));
        assert!(group(2).covers(2));
        // 1: every sync is a syncfs (0 never reaches the sync threads: no group at all).
        assert!(group(1).covers(1));
    }
}
