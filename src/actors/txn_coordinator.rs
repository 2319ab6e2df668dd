//! TxnCoordinator: one actor per shard, owning the shard's transactional ids in its own sled
//! database (`<data>/__cluster/txn/<shard>/`). Rules live in `store::txn`; this actor only
//! persists each decided transition (write + flush on the blocking pool, never on a connection
//! thread) before answering, then runs the effects: markers to the partition leaders, then
//! fences. Prepare* entries found at start re-send their markers. Markers for partitions a
//! peer broker leads go through the peer link (protocol::peer_link, a `Recipient` given at start).

use std::collections::HashMap;
use std::path::Path;
use std::time::Duration;

use actix::{Actor, ActorContext, ActorFutureExt, AsyncContext, Context, Handler, Recipient, WrapFuture};
use tokio::sync::oneshot;

use super::directory::{Directory, Location};
use super::group_coordinator::{complete_txn_offsets, GroupCoordinator};
use super::local_actor::LocalActor;
use super::messages::*;
use crate::error_code::ResponseError;
use crate::metrics::Metrics;
use crate::store::clock::{monotonic_ms, now_ms};
use crate::store::cluster::fence::SelfFence;
use crate::store::cluster::state_dir;
use crate::store::ownership::{Broker, Owned};
use crate::store::producer_ids::ProducerIdAllocator;
use crate::store::txn::parking::{waits_for_completion, Parked, PARK_MS};
use crate::store::txn::{self as core, Decision, Effect, MarkerBatch, MarkerOutcome, MarkerTarget, TxnEntry};

#[derive(Debug, Clone)]
pub struct TxnSettings {
    pub max_timeout_ms: i32,
    pub expiration_ms: i64,
    pub abort_check_interval: Duration,
    /// The finalized transaction.version is 2 (coordinator-driven aborts use it).
    pub cluster_tv2: bool,
    /// This broker's fence, checked after each flush before an answer (store::cluster::fence).
    pub fence: SelfFence,
    /// The coordinator epoch the shard runs at: its database is this epoch's own
    /// (store::cluster::state_dir).
    pub epoch: i32,
}

pub struct TxnCoordinator {
    shard: u32,
    db: sled::Db,
    /// The sled `db` file, fdatasynced after each flush (see store::durable::flush_sled).
    db_file: std::sync::Arc<std::fs::File>,
    /// Checked after each flush, before an answer (store::cluster::fence).
    fence: SelfFence,
    entries: HashMap<String, TxnEntry>,
    ids: ProducerIdAllocator,
    directory: Directory,
    groups: LocalActor<GroupCoordinator>,
    /// Where markers for partitions a peer leads go; None: they wait until led here.
    peers: Option<Recipient<SendPeerMarker>>,
    settings: TxnSettings,
    /// State writes under way (a hand-over waits for them).
    writing: usize,
    /// Set by HandOver: new calls answer NOT_COORDINATOR; the answer goes once nothing is written.
    handing_over: Option<Option<Reply<()>>>,
    /// Calls waiting for their id's completion instead of CONCURRENT_TRANSACTIONS (core::parking).
    parked: Parked<TxnCall>,
    /// Its entries by state (kaas_transactions) and the fences it ran.
    metrics: Metrics,
}

impl TxnCoordinator {
    pub fn open(
        data_dir: &Path,
        shard: u32,
        directory: Directory,
        groups: LocalActor<GroupCoordinator>,
        peers: Option<Recipient<SendPeerMarker>>,
        settings: TxnSettings,
        metrics: Metrics,
    ) -> Result<TxnCoordinator, String> {
        let fence = settings.fence.clone();
        let base = data_dir.join("__cluster").join("txn").join(shard.to_string());
        // store::cluster::state_dir: this epoch's own database.
        let path =
            state_dir::prepare(&base, settings.epoch).map_err(|e| format!("preparing {}: {e}", base.display()))?;
        let (db, db_file) = crate::store::durable::open_sled(&path)?;
        let db_file = std::sync::Arc::new(db_file);
        let mut entries = HashMap::new();
        for item in db.iter() {
            let (k, v) = item.map_err(|e| format!("reading {}: {e}", path.display()))?;
            match serde_json::from_slice::<TxnEntry>(&v) {
                Ok(e) => {
                    entries.insert(String::from_utf8_lossy(&k).into_owned(), e.settled());
                }
                Err(e) => return Err(format!("corrupt transaction entry in {}: {e}", path.display())),
            }
        }
        let ids = ProducerIdAllocator::open_txn_shard(data_dir, shard, settings.epoch)
            .map_err(|e| format!("producer ids: {e}"))?;
        Ok(TxnCoordinator {
            shard,
            db,
            db_file,
            fence,
            entries,
            ids,
            directory,
            groups,
            peers,
            settings,
            writing: 0,
            handing_over: None,
            parked: Parked::default(),
            metrics,
        })
    }

    /// Sets (Some) or forgets (None) `id`'s entry, keeping the state gauges in step.
    fn put(&mut self, id: String, entry: Option<TxnEntry>) {
        let to = entry.as_ref().map(|e| e.state);
        let from = match entry {
            Some(e) => self.entries.insert(id, e),
            None => self.entries.remove(&id),
        };
        self.metrics.txn_moved(from.map(|e| e.state), to);
    }

    /// Epoch bumps reach every leader (and the peers through the fence file).
    fn fence(&self, fences: Vec<core::PidEpoch>) {
        for f in fences {
            self.metrics.fenced_producers().inc();
            self.directory.fence(f.producer_id, f.epoch);
        }
    }

    /// The core asks for at most one fresh id per decision; `ensure_reserved` ran before, so
    /// the id is already durable. Should it not be (a second id in one decision, and the disk
    /// failing), -1 comes back and the decision fails as NOT_COORDINATOR at persistence time.
    fn alloc(ids: &mut ProducerIdAllocator) -> impl FnMut() -> i64 + '_ {
        move || {
            ids.next_id().unwrap_or_else(|e| {
                tracing::error!("cannot reserve producer ids: {e}");
                -1
            })
        }
    }

    /// Persists `decision.write` (if any), then answers and runs the effects.
    fn apply(&mut self, id: String, decision: Decision, reply: Option<Reply<TxnAnswer>>, ctx: &mut Context<Self>) {
        // A producer id could not be reserved (see `alloc`): refuse rather than persist it.
        let decision = core::refuse_unallocated(decision);
        let Some(written) = decision.write else {
            if let Some(r) = reply {
                let _ = r.send(decision.answer);
            }
            return;
        };
        let previous = self.entries.get(&id).cloned();
        self.put(id.clone(), Some(core::in_flight(previous.as_ref(), &written)));
        let db = self.db.clone();
        let db_file = self.db_file.clone();
        let fence = self.fence.clone();
        let key = id.clone();
        let value = serde_json::to_vec(&written);
        let tombstone = written.is_tombstone();
        self.writing += 1;
        let id_after = id.clone();
        let write = tokio::task::spawn_blocking(move || -> Result<(), String> {
            let value = value.map_err(|e| e.to_string())?;
            if tombstone {
                db.remove(key.as_bytes()).map_err(|e| e.to_string())?;
            } else {
                db.insert(key.as_bytes(), value).map_err(|e| e.to_string())?;
            }
            crate::store::durable::flush_sled(&db, &db_file)?;
            // Self-fence (store::cluster::fence): answered only while no broker took this shard over.
            fence.check().map_err(|e| e.to_string())
        });
        ctx.spawn(write.into_actor(self).map(move |res, act, ctx| {
            act.writing -= 1;
            let res = res.map_err(|e| e.to_string()).and_then(|r| r);
            match res {
                Ok(()) => {
                    act.put(id.clone(), core::after_write(written));
                    if let Some(r) = reply {
                        let _ = r.send(decision.answer);
                    }
                    act.run_effects(id, decision.effects, ctx);
                }
                Err(e) => {
                    tracing::error!(shard = act.shard, transactional_id = %id, "transaction state not written: {e}");
                    // eos-rules 6: a sled write or flush error is a storage failure.
                    let (kept, error) = core::write_failed(previous, core::StateWriteFailure::Storage);
                    act.put(id, kept);
                    if let Some(r) = reply {
                        let _ = r.send(Err(error));
                    }
                }
            }
            act.unpark(&id_after, ctx);
            act.finish_hand_over(ctx);
        }));
    }

    /// Answers a pending HandOver once no state write is under way: flushes the database
    /// (blocking this actor, which takes no more calls) and stops, closing it.
    fn finish_hand_over(&mut self, ctx: &mut Context<Self>) {
        if self.writing > 0 {
            return;
        }
        let Some(reply) = self.handing_over.as_mut().and_then(Option::take) else { return };
        let (db, db_file) = (self.db.clone(), self.db_file.clone());
        let flush = tokio::task::spawn_blocking(move || crate::store::durable::flush_sled(&db, &db_file));
        ctx.wait(flush.into_actor(self).map(move |res, act, ctx| {
            if let Ok(Err(e)) | Err(e) = res.map_err(|e| e.to_string()) {
                tracing::error!(shard = act.shard, "flushing at hand-over: {e}");
            }
            let _ = reply.send(());
            ctx.stop();
        }));
    }

    /// Runs the effects in [`core::schedule`]'s order: markers first, fences once they are in.
    fn run_effects(&mut self, id: String, effects: Vec<Effect>, ctx: &mut Context<Self>) {
        let (markers, fences) = core::schedule(effects);
        // Handing over: the next owner re-sends the markers of every Prepare* entry it loads.
        let markers = markers.filter(|_| self.handing_over.is_none());
        let Some(batch) = markers else {
            return self.fence(fences);
        };
        // The shard's coordinator epoch: markers from an older owner of the shard are refused.
        // Its own, not the directory's: the markers resent at start go before the directory
        // records the lease, and a 0 there got them refused as an older owner's (three brokers,
        // the coordinators' broker restarted cleanly: test_java_group_restart).
        let coordinator_epoch = self.settings.epoch;
        let targets =
            Targets { directory: self.directory.clone(), groups: self.groups.clone(), peers: self.peers.clone() };
        let send = write_markers(targets, coordinator_epoch, batch);
        ctx.spawn(send.into_actor(self).map(move |codes, act, ctx| {
            act.fence(fences);
            if core::marker_phase_stuck(&codes) {
                tracing::error!(shard = act.shard, transactional_id = %id, "markers refused; transaction stays in its prepare state");
                return;
            }
            let Some(entry) = act.entries.get(&id) else { return };
            match core::completion(entry, now_ms()) {
                Ok(d) => act.apply(id, d, None, ctx),
                Err(e) => tracing::error!(transactional_id = %id, "completing: {e}"),
            }
        }));
    }

    fn reap(&mut self, ctx: &mut Context<Self>) {
        let now = now_ms();
        let due: Vec<String> = self
            .entries
            .values()
            .filter(|e| core::needs_reaping(e, now, self.settings.expiration_ms))
            .map(|e| e.transactional_id.clone())
            .collect();
        for transactional_id in due {
            ctx.notify(BumpEpoch { transactional_id });
        }
    }
}

/// Sleeps `backoff_ms` and returns the next backoff (core::next_marker_backoff_ms).
async fn wait(backoff_ms: u64) -> u64 {
    tokio::time::sleep(Duration::from_millis(backoff_ms)).await;
    core::next_marker_backoff_ms(backoff_ms)
}

/// Where a transaction's markers go: local leaders (through the directory), the group
/// coordinator for `__consumer_offsets` partitions, peers through the peer link.
#[derive(Clone)]
struct Targets {
    directory: Directory,
    groups: LocalActor<GroupCoordinator>,
    peers: Option<Recipient<SendPeerMarker>>,
}

/// Sends one marker to every partition of the transaction and waits for all; each partition's
/// final answer comes back (see [`core::marker_phase_stuck`]). Retriable failures are resent
/// (eos-rules 50), deleted partitions answer UNKNOWN_TOPIC_OR_PARTITION and are dropped (rule 41).
async fn write_markers(targets: Targets, coordinator_epoch: i32, batch: MarkerBatch) -> Vec<i16> {
    let MarkerBatch { producer_id, epoch, commit, partitions, txn_version } = batch;
    let waits = partitions.into_iter().map(|(topic, partition)| {
        // What a peer leading the partition (or running its group coordinator) is sent; its
        // fields are what a local leader or group coordinator is told too.
        let marker = PeerMarker {
            producer_id,
            producer_epoch: epoch,
            commit,
            coordinator_epoch,
            transaction_version: txn_version,
            topic,
            partition,
        };
        write_marker(targets.clone(), marker)
    });
    futures::future::join_all(waits).await
}

/// What one attempt at writing a marker came to.
enum Attempt {
    /// The partition's final answer (written, or refused for good).
    Done(i16),
    /// Resent after a backoff (eos-rules 50).
    Retry,
}

/// One partition's marker, resent until it is on disk or refused for good (eos-rules 50).
async fn write_marker(targets: Targets, marker: PeerMarker) -> i16 {
    let mut backoff_ms = core::MARKER_FIRST_BACKOFF_MS;
    loop {
        let attempt = match core::marker_target(&marker.topic, marker.partition) {
            MarkerTarget::GroupOffsets(offsets) => offsets_marker(&targets, offsets, &marker).await,
            MarkerTarget::Leader => partition_marker(&targets, &marker).await,
        };
        match attempt {
            Attempt::Done(code) => return code,
            Attempt::Retry => backoff_ms = wait(backoff_ms).await,
        }
    }
}

/// eos-rules 59: a `__consumer_offsets` partition's marker completes the transaction's pending
/// offsets at the group coordinator, here or at the peer running it (WriteTxnMarkers); like any
/// marker it is retried until it is on disk.
async fn offsets_marker(targets: &Targets, offsets: i32, m: &PeerMarker) -> Attempt {
    let code = match targets.directory.locate(&Owned::GroupShard(offsets), || targets.groups.get()) {
        Location::Local(g) => {
            let (pid, epoch, coordinator_epoch) = (m.producer_id, m.producer_epoch, m.coordinator_epoch);
            complete_txn_offsets(&g, offsets, pid, epoch, coordinator_epoch, m.transaction_version, m.commit)
                .await
                .unwrap_or(ResponseError::CoordinatorNotAvailable.code())
        }
        Location::Peer(b) => match &targets.peers {
            Some(peers) => send_to_peer(peers, b, m.clone()).await,
            None => ResponseError::CoordinatorNotAvailable.code(),
        },
        Location::Offline => ResponseError::CoordinatorNotAvailable.code(),
    };
    // A peer's NOT_LEADER_OR_FOLLOWER (the group coordinator moved) is retried like its other
    // retriable codes (eos-rules 50).
    if core::peer_marker_outcome(code) != MarkerOutcome::Retry {
        return Attempt::Done(code);
    }
    tracing::warn!(offsets, code, "offsets marker not written, retrying");
    Attempt::Retry
}

/// eos-rules 41: the partition's leader writes the marker, here or at a peer (WriteTxnMarkers);
/// a deleted partition answers UNKNOWN_TOPIC_OR_PARTITION and is dropped.
async fn partition_marker(targets: &Targets, m: &PeerMarker) -> Attempt {
    let (topic, partition) = (&m.topic, m.partition);
    // A registry gone (this broker stops) answers NOT_LEADER_OR_FOLLOWER, retried like a
    // leader's answer: no deleted partition, the transaction stays PrepareX (eos-rules 41).
    let handle = match targets.directory.topic(topic, false).await {
        Ok(h) => h,
        Err(e) if core::marker_outcome(e.code()) != MarkerOutcome::Retry => return Attempt::Done(e.code()),
        Err(e) => {
            tracing::warn!(%topic, partition, code = e.code(), "marker not written, retrying");
            return Attempt::Retry;
        }
    };
    if partition < 0 || partition >= handle.meta.partitions {
        return Attempt::Done(ResponseError::UnknownTopicOrPartition.code());
    }
    match targets.directory.leader(&handle, partition) {
        Location::Local(leader) => {
            let (tx, rx) = oneshot::channel();
            let msg = WriteMarkers {
                producer_id: m.producer_id,
                producer_epoch: m.producer_epoch,
                commit: m.commit,
                coordinator_epoch: m.coordinator_epoch,
                txn_version: m.transaction_version,
                reply: tx,
            };
            let code = match leader.send(msg).await {
                Ok(()) => rx.await.unwrap_or(ResponseError::UnknownServerError.code()),
                Err(_) => ResponseError::UnknownServerError.code(),
            };
            if core::marker_outcome(code) != MarkerOutcome::Retry {
                return Attempt::Done(code);
            }
            tracing::warn!(%topic, partition, code, "marker not written, retrying");
            Attempt::Retry
        }
        Location::Peer(b) => {
            let Some(peers) = &targets.peers else {
                tracing::warn!(%topic, partition, leader = b.node_id, "no peer link: marker waits to be led here");
                return Attempt::Retry;
            };
            // eos-rules 41, 43, 45, 48: WriteTxnMarkers to the peer, with the shard's coordinator
            // epoch and the entry's transaction version.
            let node = b.node_id;
            let code = send_to_peer(peers, b, m.clone()).await;
            // eos-rules 50, as for a local leader's answer but with the peer's codes.
            if core::peer_marker_outcome(code) != MarkerOutcome::Retry {
                return Attempt::Done(code);
            }
            tracing::warn!(%topic, partition, leader = node, code, "marker not written by the peer, retrying");
            Attempt::Retry
        }
        Location::Offline => {
            tracing::warn!(%topic, partition, "marker for a partition nobody leads, retrying");
            Attempt::Retry
        }
    }
}

/// One marker through the peer link: the peer's code for the partition, or the code a failed
/// send stands for (eos-rules 50: retriable unless no version is common).
async fn send_to_peer(peers: &Recipient<SendPeerMarker>, peer: Broker, marker: PeerMarker) -> i16 {
    let node = peer.node_id;
    let (tx, rx) = oneshot::channel();
    let msg = SendPeerMarker { peer, marker, reply: tx };
    let answer = async {
        peers.send(msg).await.map_err(|_| PeerSendError::Disconnected("the peer link stopped".into()))?;
        rx.await.map_err(|_| PeerSendError::Disconnected("the peer link dropped the marker".into()))?
    };
    // The link answers within its request timeout; this only guards against an answer lost.
    let bound = Duration::from_millis(2 * core::PEER_REQUEST_TIMEOUT_MS);
    let answer = tokio::time::timeout(bound, answer)
        .await
        .unwrap_or(Err(PeerSendError::TimedOut(2 * core::PEER_REQUEST_TIMEOUT_MS)));
    match answer {
        Ok(a) => {
            if !core::peer_code_is_expected(a.error_code) {
                tracing::error!(
                    node,
                    code = a.error_code,
                    "a peer answered a marker with a code eos-rules 50 does not list; retrying"
                );
            }
            a.error_code
        }
        Err(e) => {
            tracing::warn!(node, "marker to peer not sent: {e}");
            core::peer_send_code(&e)
        }
    }
}

impl Actor for TxnCoordinator {
    type Context = Context<Self>;

    fn started(&mut self, ctx: &mut Self::Context) {
        ctx.set_mailbox_capacity(1024);
        // Prepare* entries from before a restart: their markers may not all be in.
        let unfinished: Vec<(TxnEntry, Effect)> =
            self.entries.values().filter_map(|e| core::resend_markers(e).map(|m| (e.clone(), m))).collect();
        for (e, effect) in unfinished {
            tracing::info!(shard = self.shard, transactional_id = %e.transactional_id, state = ?e.state, "resending markers");
            self.run_effects(e.transactional_id, vec![effect], ctx);
        }
        ctx.run_interval(self.settings.abort_check_interval, |act, ctx| act.reap(ctx));
        for e in self.entries.values() {
            self.metrics.txn_moved(None, Some(e.state));
        }
    }

    fn stopped(&mut self, _: &mut Self::Context) {
        for e in self.entries.values() {
            self.metrics.txn_moved(Some(e.state), None);
        }
    }
}

impl Handler<TxnCall> for TxnCoordinator {
    type Result = ();

    fn handle(&mut self, msg: TxnCall, ctx: &mut Self::Context) {
        self.call(msg, monotonic_ms().saturating_add(PARK_MS), ctx);
    }
}

impl TxnCoordinator {
    /// Decides a client's call; one the completion under way would answer differently waits
    /// for it until `deadline_ms` (core::parking).
    fn call(&mut self, msg: TxnCall, deadline_ms: i64, ctx: &mut Context<Self>) {
        if self.handing_over.is_some() {
            let _ = msg.reply.send(Err(TxnError::NotCoordinator));
            return;
        }
        // eos-rules 1/6: no producer id block on disk, no answer that would need one.
        if let Err(e) = self.ids.ensure_reserved() {
            tracing::error!(shard = self.shard, "producer id block: {e}");
            let _ = msg.reply.send(Err(TxnError::NotCoordinator));
            return;
        }
        let now = now_ms();
        let id = msg.transactional_id.clone();
        let entry = self.entries.get(&id);
        let decision = match &msg.op {
            TxnOp::InitProducerId { timeout_ms, claim } => {
                let (max, tv2) = (self.settings.max_timeout_ms, self.settings.cluster_tv2);
                core::init_producer_id(entry, &id, *timeout_ms, *claim, max, tv2, now, &mut Self::alloc(&mut self.ids))
            }
            TxnOp::AddPartitions { producer_id, epoch, partitions, txn_version } => {
                core::add_partitions(entry, &id, *producer_id, *epoch, partitions, now, *txn_version)
            }
            TxnOp::AddOffsets { producer_id, epoch, offsets_partition } => {
                core::add_offsets(entry, &id, *producer_id, *epoch, *offsets_partition, now)
            }
            TxnOp::EndTxn { producer_id, epoch, commit, tv2 } => {
                core::end_txn(entry, &id, *producer_id, *epoch, *commit, *tv2, now, &mut Self::alloc(&mut self.ids))
            }
        };
        let waited = monotonic_ms();
        if decision.write.is_none() && waited < deadline_ms && waits_for_completion(entry, &decision.answer) {
            match self.parked.park(&id, msg, deadline_ms) {
                Ok(()) => {
                    let wait = Duration::from_millis(deadline_ms.saturating_sub(waited).unsigned_abs());
                    ctx.run_later(wait, move |act, ctx| act.answer_due(&id, ctx));
                    return;
                }
                Err(msg) => return self.apply(id, decision, Some(msg.reply), ctx),
            }
        }
        self.apply(id, decision, Some(msg.reply), ctx);
    }

    /// A state write of `id` landed: its parked calls are decided again.
    fn unpark(&mut self, id: &str, ctx: &mut Context<Self>) {
        for (call, deadline_ms) in self.parked.take(id) {
            self.call(call, deadline_ms, ctx);
        }
    }

    /// The parked calls of `id` whose wait is over are decided now (CONCURRENT_TRANSACTIONS if
    /// the completion is still under way).
    fn answer_due(&mut self, id: &str, ctx: &mut Context<Self>) {
        let now = monotonic_ms();
        let due = self.parked.take_due(id, now);
        let early = due.is_empty();
        for (call, deadline_ms) in due {
            self.call(call, deadline_ms, ctx);
        }
        // A timer that fired before its call's deadline (rounding) is set again; every other
        // parked call has its own.
        if let Some(next) = self.parked.next_deadline(id).filter(|_| early) {
            let id = id.to_string();
            let wait = Duration::from_millis(next.saturating_sub(now).max(1).unsigned_abs());
            ctx.run_later(wait, move |act, ctx| act.answer_due(&id, ctx));
        }
    }
}

impl Handler<VerifyTxn> for TxnCoordinator {
    type Result = ();

    fn handle(&mut self, msg: VerifyTxn, _: &mut Self::Context) {
        if self.handing_over.is_some() {
            let answers = msg.partitions.into_iter().map(|tp| (tp, Err(TxnError::NotCoordinator))).collect();
            let _ = msg.reply.send(answers);
            return;
        }
        let entry = self.entries.get(&msg.transactional_id);
        let result = core::verify_partitions(entry, &msg.transactional_id, msg.producer_id, msg.epoch, &msg.partitions);
        let _ = msg.reply.send(result);
    }
}

impl Handler<BumpEpoch> for TxnCoordinator {
    type Result = ();

    fn handle(&mut self, msg: BumpEpoch, ctx: &mut Self::Context) {
        if self.handing_over.is_some() {
            return;
        }
        let now = now_ms();
        let Some(entry) = self.entries.get(&msg.transactional_id) else { return };
        if let Some(d) = core::expire(entry, now, self.settings.expiration_ms) {
            // eos-rules 55: write the tombstone; the id then starts afresh.
            tracing::info!(transactional_id = %msg.transactional_id, "transactional id expired");
            return self.apply(msg.transactional_id, d, None, ctx);
        }
        let tv2 = self.settings.cluster_tv2;
        let entry = entry.clone();
        if let Err(e) = self.ids.ensure_reserved() {
            tracing::error!(shard = self.shard, "producer id block: {e}");
            return;
        }
        let decision = core::timeout_abort(&entry, tv2, now, &mut Self::alloc(&mut self.ids));
        if let Some(d) = decision {
            tracing::info!(transactional_id = %msg.transactional_id, "aborting a timed-out transaction");
            self.apply(msg.transactional_id, d, None, ctx);
        }
    }
}

impl Handler<InspectTxns> for TxnCoordinator {
    type Result = ();

    fn handle(&mut self, msg: InspectTxns, _: &mut Self::Context) {
        let out = match msg.ids {
            Some(ids) => ids.into_iter().map(|id| (id.clone(), self.entries.get(&id).cloned())).collect(),
            None => self.entries.iter().map(|(id, e)| (id.clone(), Some(e.clone()))).collect(),
        };
        let _ = msg.reply.send(out);
    }
}

impl Handler<HandOver> for TxnCoordinator {
    type Result = ();

    fn handle(&mut self, msg: HandOver, ctx: &mut Self::Context) {
        tracing::info!(shard = self.shard, writing = self.writing, "handing the transaction shard over");
        self.handing_over = Some(Some(msg.reply));
        for call in self.parked.drain() {
            let _ = call.reply.send(Err(TxnError::NotCoordinator));
        }
        self.finish_hand_over(ctx);
    }
}
