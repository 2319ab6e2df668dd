//! FenceWatcher: applies the producer fences the other brokers sharing the disk wrote
//! (`__cluster/producer_fences/from-<node>.json`, see FenceWriter) to this broker's partitions,
//! through the TopicRegistry's local fan-out. A peer's fence is never written to our own file.
//!
//! It polls every `fence_poll_interval_ms`: inotify does not see another NFS client's writes, and
//! every poll opens each file anew (close-to-open consistency). The read runs on the blocking
//! pool, one at a time, so a slow or hung disk stalls neither the other actors of this arbiter
//! (TopicRegistry, FenceWriter, ProducerIds) nor piles up reads.

use std::path::PathBuf;
use std::time::Duration;

use actix::{Actor, ActorFutureExt, Addr, AsyncContext, Context, WrapFuture};

use super::messages::FenceEpoch;
use super::topics::TopicRegistry;
use crate::store::cluster::fence_log::{fences_dir, fingerprint, read_peers, FenceLogError, PeerFences};
use crate::store::cluster::fence_watch::{FenceWatch, WarnOnce};

pub struct FenceWatcher {
    data_dir: PathBuf,
    node_id: i32,
    interval: Duration,
    topics: Addr<TopicRegistry>,
    watch: FenceWatch,
    warned: WarnOnce,
    /// A read is under way: the next tick waits for it instead of starting a second one.
    reading: bool,
}

impl FenceWatcher {
    pub fn new(data_dir: PathBuf, node_id: i32, interval: Duration, topics: Addr<TopicRegistry>) -> FenceWatcher {
        FenceWatcher {
            data_dir,
            node_id,
            interval,
            topics,
            watch: FenceWatch::new(),
            warned: WarnOnce::new(),
            reading: false,
        }
    }

    fn poll(&mut self, ctx: &mut Context<Self>) {
        if self.reading {
            return;
        }
        self.reading = true;
        let (dir, node) = (self.data_dir.clone(), self.node_id);
        let read = tokio::task::spawn_blocking(move || read_peers(&dir, node));
        ctx.spawn(read.into_actor(self).map(|res, act, _| {
            act.reading = false;
            match res {
                Ok(Ok(peers)) => act.apply(peers),
                Ok(Err(e)) => act.directory_unreadable(&e),
                Err(e) => tracing::warn!("peer fence files not read: {e}"),
            }
        }));
    }

    fn apply(&mut self, peers: PeerFences) {
        let PeerFences { files, unreadable } = peers;
        for u in self.warned.report(&unreadable) {
            tracing::warn!(peer = u.node, file = %u.path.display(), "peer fence file skipped until it reads: {}", u.error);
        }
        let fences = self.watch.tick(files, unreadable.iter().map(|u| u.node));
        if !fences.is_empty() {
            tracing::info!(count = fences.len(), "applying producer fences from peer brokers");
        }
        for (producer_id, epoch) in fences {
            tracing::debug!(producer_id, epoch, "peer fence");
            self.topics.do_send(FenceEpoch { producer_id, epoch });
        }
    }

    /// The whole poll failed (the directory did not list): nothing changes until one reads.
    fn directory_unreadable(&mut self, e: &FenceLogError) {
        let dir = fences_dir(&self.data_dir);
        if self.warned.report_one(&dir, fingerprint(e.to_string().as_bytes())) {
            tracing::warn!(dir = %dir.display(), "peer fence files not read: {e}");
        }
    }
}

impl Actor for FenceWatcher {
    type Context = Context<Self>;

    fn started(&mut self, ctx: &mut Self::Context) {
        // The first poll at once: peers' fences from before this start apply without waiting.
        self.poll(ctx);
        ctx.run_interval(self.interval, |act, ctx| act.poll(ctx));
    }
}
