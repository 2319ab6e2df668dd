//! Group commit: fsync runs on dedicated threads, never on the actor threads. Each partition has
//! at most one sync in flight, covering everything appended before it started, so one fsync
//! answers every producer that appended in the meantime.

use std::path::PathBuf;
use std::thread;
use std::time::Instant;

use actix::{Message, Recipient};
use crossbeam_channel::{bounded, Receiver, Sender};

use crate::metrics::Metrics;
use crate::store::cluster::fence::{FenceError, SelfFence};
use crate::store::durable::sync_filesystem;
use crate::store::log::SyncSet;

/// The syncer made everything below `upto` durable (or failed to).
#[derive(Message)]
#[rtype(result = "()")]
pub struct Synced {
    pub upto: i64,
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

/// Make `files` durable, then tell `reply` that everything below `upto` is on disk.
pub struct SyncJob {
    pub files: SyncSet,
    pub upto: i64,
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
        job.reply.do_send(Synced { upto: job.upto, result });
    }
}

#[derive(Clone)]
pub struct Syncer {
    tx: Sender<SyncJob>,
    /// The fence its threads check after each fsync, for other durable work of the leaders.
    fence: SelfFence,
}

impl Syncer {
    /// Starts `threads` fsync threads behind a queue of `capacity` jobs. `skip_fsync` is the
    /// `debug_skip_fsync` test hook: answer every job as synced without syncing anything.
    /// `group`: a thread that finds that many jobs waiting (partitions written at once) makes
    /// them all durable with one syncfs instead of an fsync each (see `GroupCommit`).
    pub fn start(
        threads: usize,
        capacity: usize,
        skip_fsync: bool,
        group: Option<GroupCommit>,
        metrics: Metrics,
        fence: SelfFence,
    ) -> Syncer {
        let (tx, rx) = bounded::<SyncJob>(capacity);
        for i in 0..threads.max(1) {
            let rx: Receiver<SyncJob> = rx.clone();
            let group = group.clone();
            let metrics = metrics.clone();
            let thread_fence = fence.clone();
            let spawned = thread::Builder::new().name(format!("kaas-sync-{i}")).spawn(move || {
                super::supervisor::mark_state_thread();
                while let Ok(first) = rx.recv() {
                    let mut jobs = vec![first];
                    while group.is_some() && jobs.len() < GROUP_MAX {
                        match rx.try_recv() {
                            Ok(j) => jobs.push(j),
                            Err(_) => break,
                        }
                    }
                    run(jobs, skip_fsync, group.as_ref(), &metrics, &thread_fence);
                }
            });
            if let Err(e) = spawned {
                tracing::error!("could not start sync thread: {e}");
            }
        }
        Syncer { tx, fence }
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
