//! Group commit: fsync runs on dedicated threads, never on the actor threads. Each partition has
//! at most one sync in flight, covering everything appended before it started, so one fsync
//! answers every producer that appended in the meantime.

use std::thread;

use actix::{Message, Recipient};
use crossbeam_channel::{bounded, Receiver, Sender};

use crate::store::log::SyncSet;

/// The syncer made everything below `upto` durable (or failed to).
#[derive(Message)]
#[rtype(result = "()")]
pub struct Synced {
    pub upto: i64,
    pub result: Result<(), String>,
}

/// Make `files` durable, then tell `reply` that everything below `upto` is on disk.
pub struct SyncJob {
    pub files: SyncSet,
    pub upto: i64,
    pub reply: Recipient<Synced>,
}

#[derive(Clone)]
pub struct Syncer {
    tx: Sender<SyncJob>,
}

impl Syncer {
    /// Starts `threads` fsync threads behind a queue of `capacity` jobs. `skip_fsync` is the
    /// `debug_skip_fsync` test hook: answer every job as synced without syncing anything.
    pub fn start(threads: usize, capacity: usize, skip_fsync: bool) -> Syncer {
        let (tx, rx) = bounded::<SyncJob>(capacity);
        for i in 0..threads.max(1) {
            let rx: Receiver<SyncJob> = rx.clone();
            let spawned = thread::Builder::new().name(format!("kaas-sync-{i}")).spawn(move || {
                super::supervisor::mark_state_thread();
                while let Ok(job) = rx.recv() {
                    let result = if skip_fsync { Ok(()) } else { job.files.sync().map_err(|e| e.to_string()) };
                    job.reply.do_send(Synced { upto: job.upto, result });
                }
            });
            if let Err(e) = spawned {
                tracing::error!("could not start sync thread: {e}");
            }
        }
        Syncer { tx }
    }

    /// Queues a job; blocks the calling partition thread when the queue is full (backpressure).
    pub fn submit(&self, job: SyncJob) -> Result<(), String> {
        self.tx.send(job).map_err(|_| "sync threads are gone".to_string())
    }
}
