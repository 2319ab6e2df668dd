//! GroupCoordinator: owns every consumer group of this broker (classic protocol). The rules live
//! in `store::group` (this actor only translates messages into calls on [`Groups`]); it parks
//! requests under tokens, drives the timers, and keeps each group's snapshot (generation,
//! committed and pending transactional offsets) in sled (`<data>/__cluster/groups/`), flushed on
//! the blocking pool before a change is answered.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use actix::{Actor, ActorContext, ActorFutureExt, AsyncContext, Context, Handler, SpawnHandle, WrapFuture};

use super::messages::*;
use crate::store::clock::now_ms;
use crate::store::cluster::fence::SelfFence;
use crate::store::cluster::state_dir;
use crate::store::configs::group_store::{self, AllGroupConfigs};
use crate::store::coordinator_key::offsets_partition;
use crate::store::group::consumer::{ConsumerError, TopicImage, TopicInfo};
use crate::store::group::offsets_producers::{key_bytes, key_from_bytes, OffsetsProducerKey, OffsetsProducers};
use crate::store::group::{unwritten, GroupConfig, GroupError, GroupSnapshot, Groups, MemberAnswer};
use crate::store::topics::TopicMeta;

pub struct GroupCoordinator {
    db: sled::Db,
    /// The sled `db` file, fdatasynced after each flush (see store::durable::flush_sled).
    db_file: std::sync::Arc<std::fs::File>,
    /// Checked after each flush, before an answer (store::cluster::fence).
    fence: SelfFence,
    groups: Groups,
    /// The producer state of the offsets partitions (store::group::offsets_producers), kept in
    /// the database's `offsets_producers` tree.
    producers: OffsetsProducers,
    producers_tree: sled::Tree,
    producer_id_expiration_ms: i64,
    /// Parked membership requests by token, with their group.
    waiting: HashMap<u64, (String, Reply<GroupResponse>)>,
    /// Groups whose kept membership is being written (store::group::stored): how many writes
    /// are outstanding, the answers held until they are durable, and whether one failed.
    writing: HashMap<String, Writing>,
    next_token: u64,
    /// Kafka's offsets.retention.check.interval.ms.
    retention_check: Duration,
    /// The topic registry, read for the consumer groups' topic metadata.
    topics: Option<actix::Recipient<ListTopics>>,
    /// A topic refresh is under way.
    refreshing: bool,
    /// The internal topics as the groups see them (always there; no registry knows them).
    internal: Vec<(String, TopicInfo)>,
    data_dir: PathBuf,
    /// A read of the group configs is under way.
    reading_configs: bool,
    /// The timer armed for the earliest group deadline (ms since the epoch), so that a session
    /// expires when it is due, as Kafka's timing wheel does, not at the next periodic sweep.
    timer: Option<(u64, SpawnHandle)>,
}

/// The per-group config overrides changed (IncrementalAlterConfigs / AlterConfigs of a GROUP
/// on this broker): every group's, as the store now holds them.
#[derive(actix::Message)]
#[rtype(result = "()")]
pub struct SetGroupConfigs(pub AllGroupConfigs);

/// A group whose kept membership is being written (`GroupCoordinator::write_membership`).
#[derive(Default)]
struct Writing {
    outstanding: u32,
    /// Answers held until the writes end; each is told whether they all succeeded.
    held: Vec<Held>,
    failed: bool,
}

type Held = Box<dyn FnOnce(bool) + Send>;

/// A held classic answer: sent as it is, or as NOT_COORDINATOR if the write failed (a fence or
/// a storage error: Kafka maps NOT_LEADER_OR_FOLLOWER and KAFKA_STORAGE_ERROR of its group
/// log's append to NOT_COORDINATOR, so the member finds its coordinator again).
fn held_answer(tx: Reply<GroupResponse>, response: GroupResponse) -> Held {
    Box::new(move |written| {
        let _ = tx.send(if written { response } else { response.failed(GroupError::NotCoordinator) });
    })
}

/// How often the group configs are read again while consumer groups have members (a change
/// made on another broker of the cluster).
const CONFIGS_REFRESH: Duration = Duration::from_secs(2);

impl GroupCoordinator {
    pub fn open(
        data_dir: &Path,
        config: GroupConfig,
        retention_check: Duration,
        topics: Option<actix::Recipient<ListTopics>>,
        internal: Vec<(String, TopicInfo)>,
        fence: SelfFence,
        epoch: i32,
    ) -> Result<GroupCoordinator, String> {
        let base = data_dir.join("__cluster").join("groups");
        // store::cluster::state_dir: this epoch's own database.
        let path = state_dir::prepare(&base, epoch).map_err(|e| format!("preparing {}: {e}", base.display()))?;
        let (db, db_file) = crate::store::durable::open_sled(&path)?;
        let db_file = std::sync::Arc::new(db_file);
        let producer_id_expiration_ms = config.producer_id_expiration_ms;
        let mut groups = Groups::new(config);
        let producers_tree = db.open_tree("offsets_producers").map_err(|e| format!("{}: {e}", path.display()))?;
        let mut producers = OffsetsProducers::default();
        for item in producers_tree.iter() {
            let (k, v) = item.map_err(|e| format!("reading {}: {e}", path.display()))?;
            match (key_from_bytes(&k), serde_json::from_slice(&v)) {
                (Some(key), Ok(entry)) => producers.restore(key, entry),
                _ => tracing::error!("ignoring a corrupt offsets producer entry in {}", path.display()),
            }
        }
        for item in db.iter() {
            let (k, v) = item.map_err(|e| format!("reading {}: {e}", path.display()))?;
            let id = String::from_utf8_lossy(&k).into_owned();
            let snap: GroupSnapshot =
                serde_json::from_slice(&v).map_err(|e| format!("corrupt group {id} in {}: {e}", path.display()))?;
            groups.restore(id, snap, now_ms() as u64);
        }
        match group_store::load(data_dir) {
            Ok(all) => groups.set_group_configs(all),
            Err(e) => tracing::error!("reading the group configs: {e}"),
        }
        Ok(GroupCoordinator {
            db,
            db_file,
            fence,
            groups,
            producers,
            producers_tree,
            producer_id_expiration_ms,
            waiting: HashMap::new(),
            writing: HashMap::new(),
            next_token: 1,
            retention_check,
            topics,
            refreshing: false,
            internal,
            data_dir: data_dir.to_path_buf(),
            reading_configs: false,
            timer: None,
        })
    }

    /// Reads the group configs again (on the blocking pool) while consumer groups have members.
    fn refresh_configs(&mut self, ctx: &mut Context<Self>) {
        if self.reading_configs || !self.groups.has_consumer_members() {
            return;
        }
        self.reading_configs = true;
        let dir = self.data_dir.clone();
        let read = async move { tokio::task::spawn_blocking(move || group_store::load(&dir)).await };
        ctx.spawn(read.into_actor(self).map(|res, act, _| {
            act.reading_configs = false;
            match res {
                Ok(Ok(all)) => act.groups.set_group_configs(all),
                Ok(Err(e)) => tracing::warn!("reading the group configs: {e}"),
                Err(e) => tracing::warn!("reading the group configs: {e}"),
            }
        }));
    }

    /// Offset expiration (rules in `Groups::expire`); the changed groups are written.
    fn expire(&mut self, ctx: &mut Context<Self>) {
        let changed = self.groups.expire(now_ms() as u64);
        for key in self.producers.expire(now_ms(), self.producer_id_expiration_ms) {
            if let Err(e) = self.write_producer(key) {
                tracing::error!("expiring an offsets producer: {e}");
            }
        }
        let mut flushes = Vec::new();
        for e in changed {
            if e.removed {
                tracing::info!(group = %e.group_id, expired = e.offsets, "group expired (offsets_retention_minutes)");
            }
            flushes.push(self.persist(&e.group_id));
        }
        ctx.spawn(
            async move {
                for f in flushes {
                    if let Err(e) = f.await {
                        tracing::error!("offset expiration not written: {e}");
                    }
                }
            }
            .into_actor(self),
        );
    }

    /// Sends each answer, or holds it while its group's kept membership is being written.
    fn deliver(&mut self, replies: Vec<MemberAnswer>) {
        for r in replies {
            let Some((group, tx)) = self.waiting.remove(&r.token) else { continue };
            match self.writing.get_mut(&group) {
                Some(w) => w.held.push(held_answer(tx, r.response)),
                None => {
                    let _ = tx.send(r.response);
                }
            }
        }
    }

    /// Writes the kept membership of `ids` (store::group::stored) and holds every answer of
    /// those groups until it is durable: an answer never tells a member of a generation or an
    /// assignment that a restart would not know.
    fn write_membership(&mut self, ctx: &mut Context<Self>, ids: Vec<String>) {
        if ids.is_empty() {
            return;
        }
        for id in &ids {
            self.writing.entry(id.clone()).or_default().outstanding += 1;
        }
        let flushes: Vec<_> = ids.iter().map(|id| self.persist(id)).collect();
        let written = async move {
            let mut result = Ok(());
            for f in flushes {
                if let Err(e) = f.await {
                    result = Err(e);
                }
            }
            result
        };
        ctx.spawn(written.into_actor(self).map(move |result, act, _| {
            if let Err(e) = &result {
                tracing::error!(groups = ?ids, "group membership not written: {e}");
            }
            for id in ids {
                act.membership_written(&id, result.is_ok());
            }
        }));
    }

    /// One write of `id`'s membership ended; the last one releases the held answers, or, if
    /// a write failed, answers them COORDINATOR_NOT_AVAILABLE and rebalances the group (as
    /// Kafka does when the append of a group's metadata fails).
    fn membership_written(&mut self, id: &str, ok: bool) {
        let Some(w) = self.writing.get_mut(id) else { return };
        w.outstanding = w.outstanding.saturating_sub(1);
        w.failed |= !ok;
        if w.outstanding > 0 {
            return;
        }
        let Some(w) = self.writing.remove(id) else { return };
        for answer in w.held {
            answer(!w.failed);
        }
        if w.failed {
            let answers = self.groups.membership_not_written(id, now_ms() as u64);
            self.deliver(answers);
        }
    }

    /// Writes the group's snapshot (in order, on this thread: sled's insert does not wait for
    /// the disk) and returns the flush to await where the answer must be durable.
    fn persist(&self, id: &str) -> impl std::future::Future<Output = Result<(), String>> + 'static {
        let written = self.write_group(id);
        let flush = self.flush();
        async move {
            written?;
            flush.await
        }
    }

    /// Writes the group's snapshot, or removes a group that is gone; not yet durable.
    fn write_group(&self, id: &str) -> Result<(), String> {
        match self.groups.snapshot(id) {
            Some(snap) => serde_json::to_vec(&snap)
                .map_err(|e| e.to_string())
                .and_then(|bytes| self.db.insert(id.as_bytes(), bytes).map(|_| ()).map_err(|e| e.to_string())),
            None => self.db.remove(id.as_bytes()).map(|_| ()).map_err(|e| e.to_string()),
        }
    }

    /// Flushes the database (every tree) on the blocking pool.
    fn flush(&self) -> impl std::future::Future<Output = Result<(), String>> + 'static {
        let db = self.db.clone();
        let db_file = self.db_file.clone();
        let fence = self.fence.clone();
        async move {
            tokio::task::spawn_blocking(move || {
                crate::store::durable::flush_sled(&db, &db_file)?;
                // Self-fence: answered only while no broker took the groups over.
                fence.check().map_err(|e| e.to_string())
            })
            .await
            .map_err(|e| e.to_string())?
        }
    }
}

impl GroupCoordinator {
    /// Writes one offsets producer entry (or its removal); the next flush makes it durable.
    fn write_producer(&self, key: OffsetsProducerKey) -> Result<(), String> {
        let k = key_bytes(key);
        let written = match self.producers.get(key) {
            Some(e) => serde_json::to_vec(e)
                .map_err(|e| e.to_string())
                .and_then(|v| self.producers_tree.insert(k, v).map_err(|e| e.to_string())),
            None => self.producers_tree.remove(k).map_err(|e| e.to_string()),
        };
        written.map(|_| ())
    }
}

/// How often the consumer groups' topic metadata is read again (Kafka's metadata image
/// updates): created and deleted topics and added partitions bump the group epochs.
const TOPIC_REFRESH: Duration = Duration::from_millis(1000);

impl GroupCoordinator {
    /// Reads the topics from the registry while a consumer group has members.
    fn refresh_topics(&mut self, ctx: &mut Context<Self>) {
        let Some(topics) = self.topics.clone() else { return };
        if self.refreshing || !self.groups.has_consumer_members() {
            return;
        }
        self.refreshing = true;
        ctx.spawn(topics.send(ListTopics).into_actor(self).map(|res, act, ctx| {
            act.refreshing = false;
            if let Ok(all) = res {
                act.apply_topics(all, ctx);
            }
        }));
    }

    /// The cluster's topics as the consumer groups see them (Kafka's metadata image): a group
    /// whose subscribed topics changed gets a new epoch, which is written like any change of
    /// what it keeps.
    fn apply_topics(&mut self, all: Vec<TopicMeta>, ctx: &mut Context<Self>) {
        let image = TopicImage {
            topics: all
                .into_iter()
                .map(|t| (t.name, TopicInfo { id: t.id, partitions: t.partitions }))
                .chain(self.internal.iter().cloned())
                .collect(),
            // The store keeps its own ACLs: only the topics are new.
            acls: None,
        };
        let bumped = self.groups.set_topics(image);
        for id in &bumped {
            tracing::info!(group = %id, "consumer group epoch bumped: subscribed topics changed");
        }
        self.write_membership(ctx, bumped);
        // A new epoch gives members new assignment deadlines.
        let next = self.groups.next_deadline();
        self.arm_timer(ctx, next);
    }
}

impl Handler<ConsumerHeartbeat> for GroupCoordinator {
    type Result = ();

    fn handle(&mut self, msg: ConsumerHeartbeat, ctx: &mut Self::Context) {
        self.groups.merge_topics(msg.topics);
        let before = self.groups.consumer_group(&msg.group_id).map(|g| g.group_epoch());
        let digest = self.groups.consumer_digest(&msg.group_id);
        let unique = || uuid::Uuid::new_v4().to_string();
        let answer = self.groups.consumer_heartbeat(now_ms() as u64, &msg.group_id, msg.request, unique);
        let after = self.groups.consumer_group(&msg.group_id).map(|g| g.group_epoch());
        // What the group keeps changed (store::group::consumer::stored: an epoch, a member, an
        // assignment), or it became or stopped being a consumer group (store::group::stored):
        // written before this answer and the answers of its classic members go out.
        let stored = self.groups.take_stored_change(&msg.group_id);
        let changed =
            stored || before.is_none() != after.is_none() || digest != self.groups.consumer_digest(&msg.group_id);
        if changed {
            self.write_membership(ctx, vec![msg.group_id.clone()]);
        }
        // Parked classic requests answered by an online upgrade.
        let answers = self.groups.take_answers();
        self.deliver(answers);
        let deadline = self.groups.next_deadline_of(&msg.group_id);
        self.arm_timer(ctx, deadline);
        let reply = msg.reply;
        match self.writing.get_mut(&msg.group_id) {
            Some(w) => w.held.push(Box::new(move |written| {
                let not_written = || ConsumerError::NotCoordinator("the group could not be written".into());
                let _ = reply.send(if written { answer } else { Err(not_written()) });
            })),
            None => {
                let _ = reply.send(answer);
            }
        }
    }
}

impl Handler<DescribeConsumerGroups> for GroupCoordinator {
    type Result = ();

    fn handle(&mut self, msg: DescribeConsumerGroups, _: &mut Self::Context) {
        let groups = msg.group_ids.into_iter().map(|id| {
            let d = self.groups.consumer_describe(&id);
            (id, d)
        });
        let groups = groups.collect();
        let topic_names = self.groups.topic_image().names();
        let _ = msg.reply.send(DescribedConsumerGroups { groups, topic_names });
    }
}

/// eos-rules 59: the transaction marker of `__consumer_offsets` partition `offsets_partition` at
/// the group coordinator `g` (the transaction's pending offsets become visible, or are dropped):
/// its code, or None when the coordinator went away before answering (the sender retries,
/// eos-rules 50). Shared by the transaction coordinator and the WriteTxnMarkers handler.
pub async fn complete_txn_offsets(
    g: &actix::Addr<GroupCoordinator>,
    offsets_partition: i32,
    producer_id: i64,
    producer_epoch: i16,
    coordinator_epoch: i32,
    txn_version: i8,
    commit: bool,
) -> Option<i16> {
    let (reply, rx) = tokio::sync::oneshot::channel();
    let msg = CompleteTxnOffsets {
        offsets_partition,
        producer_id,
        producer_epoch,
        coordinator_epoch,
        txn_version,
        commit,
        reply,
    };
    g.send(msg).await.ok()?;
    rx.await.ok()
}

impl Actor for GroupCoordinator {
    type Context = Context<Self>;

    fn started(&mut self, ctx: &mut Self::Context) {
        ctx.set_mailbox_capacity(1024);
        // The groups read back see the cluster's topics before their first heartbeat: with an
        // empty image that heartbeat took every subscribed topic for deleted, bumped the group's
        // epoch and had every member give its partitions up (a rebalance on each restart).
        if let Some(topics) = self.topics.clone() {
            ctx.wait(topics.send(ListTopics).into_actor(self).map(|res, act, ctx| match res {
                Ok(all) => act.apply_topics(all, ctx),
                Err(e) => tracing::warn!("reading the topics at start: {e}"),
            }));
        }
        // The sweep behind the armed timer (a deadline a handler did not arm for).
        ctx.run_interval(Duration::from_millis(1000), |act, ctx| act.fire_timers(ctx));
        ctx.run_interval(TOPIC_REFRESH, |act, ctx| act.refresh_topics(ctx));
        ctx.run_interval(CONFIGS_REFRESH, |act, ctx| act.refresh_configs(ctx));
        ctx.run_interval(self.retention_check, |act, ctx| act.expire(ctx));
    }
}

impl GroupCoordinator {
    /// Fires the group timers due now (session, rebalance and join timeouts) and arms the
    /// timer for the next one.
    fn fire_timers(&mut self, ctx: &mut Context<Self>) {
        // From the sweep: the armed timer is replaced by the one armed below.
        if let Some((_, handle)) = self.timer.take() {
            ctx.cancel_future(handle);
        }
        let now = now_ms() as u64;
        let replies = self.groups.tick(now);
        // Consumer groups whose members expired (or that became classic groups).
        let mut changed: Vec<String> = self.groups.consumer_tick(now);
        changed.extend(self.groups.take_stored_changes());
        changed.sort();
        changed.dedup();
        self.write_membership(ctx, changed);
        self.deliver(replies);
        let next = self.groups.next_deadline();
        self.arm_timer(ctx, next);
    }

    /// Arms the timer for `deadline` unless one fires before it. A deadline that moved later
    /// (a heartbeat) leaves the armed timer, which then finds nothing due and re-arms.
    fn arm_timer(&mut self, ctx: &mut Context<Self>, deadline: Option<u64>) {
        let Some(at) = deadline else { return };
        if self.timer.as_ref().is_some_and(|(armed, _)| *armed <= at) {
            return;
        }
        if let Some((_, handle)) = self.timer.take() {
            ctx.cancel_future(handle);
        }
        let wait = Duration::from_millis(at.saturating_sub(now_ms() as u64));
        let handle = ctx.run_later(wait, |act, ctx| {
            act.timer = None;
            act.fire_timers(ctx)
        });
        self.timer = Some((at, handle));
    }
}

impl Handler<SetGroupConfigs> for GroupCoordinator {
    type Result = ();

    fn handle(&mut self, msg: SetGroupConfigs, _: &mut Self::Context) {
        self.groups.set_group_configs(msg.0);
    }
}

impl Handler<GroupCall> for GroupCoordinator {
    type Result = ();

    fn handle(&mut self, msg: GroupCall, ctx: &mut Self::Context) {
        let token = self.next_token;
        self.next_token += 1;
        self.waiting.insert(token, (msg.group_id.clone(), msg.reply));
        let unique = || uuid::Uuid::new_v4().to_string();
        let before = self.groups.group_type(&msg.group_id);
        let digest = self.groups.consumer_digest(&msg.group_id);
        let replies = self.groups.call(now_ms() as u64, token, &msg.group_id, msg.op, unique);
        // A rebalance completed, a consumer group's classic member changed it, or it became a
        // classic group (KIP-848 downgrade): the group is written before its answers go out.
        let stored = self.groups.take_stored_change(&msg.group_id);
        let consumer_changed = digest != self.groups.consumer_digest(&msg.group_id);
        if stored || consumer_changed || before != self.groups.group_type(&msg.group_id) {
            self.write_membership(ctx, vec![msg.group_id.clone()]);
        }
        self.deliver(replies);
        let deadline = self.groups.next_deadline_of(&msg.group_id);
        self.arm_timer(ctx, deadline);
    }
}

impl Handler<CommitOffsets> for GroupCoordinator {
    type Result = ();

    fn handle(&mut self, msg: CommitOffsets, ctx: &mut Self::Context) {
        // eos-rules 18: the append of a TxnOffsetCommit checks the producer's epoch on the
        // offsets partition again (a marker may have come in since BeginTxnOffsetCommit).
        let txn_key = msg.txn.map(|(pid, epoch)| ((offsets_partition(&msg.group_id), pid), epoch));
        if let Some((key, epoch)) = txn_key {
            if self.producers.begin_txn_offset_commit(key, epoch).is_err() {
                let _ = msg.reply.send(Err(GroupError::InvalidProducerEpoch));
                return;
            }
        }
        let instance = msg.group_instance_id.as_deref();
        let result = self.groups.commit_offsets(
            now_ms() as u64,
            &msg.group_id,
            msg.generation_id,
            &msg.member_id,
            instance,
            msg.offsets,
            msg.txn,
        );
        if let Err(e) = result {
            let _ = msg.reply.send(Err(e));
            return;
        }
        let mut producer_written = Ok(());
        if let Some((key, epoch)) = txn_key {
            if self.producers.append_txn_offset_commit(key, epoch, now_ms()).is_ok() {
                producer_written = self.write_producer(key);
            }
        }
        let flush = self.persist(&msg.group_id);
        let flush = async move {
            producer_written?;
            flush.await
        };
        let reply = msg.reply;
        ctx.spawn(flush.into_actor(self).map(move |res, _, _| {
            let _ = reply.send(res.map_err(|e| {
                tracing::error!("group offsets not written: {e}");
                GroupError::NotCoordinator
            }));
        }));
    }
}

impl Handler<FetchOffsets> for GroupCoordinator {
    type Result = ();

    fn handle(&mut self, msg: FetchOffsets, _: &mut Self::Context) {
        let member = msg.member.as_ref().map(|(id, epoch)| (id.as_str(), *epoch));
        let answer = self.groups.fetch_offsets(&msg.group_id, msg.partitions.as_deref(), msg.require_stable, member);
        let _ = msg.reply.send(answer);
    }
}

impl Handler<GroupAdmin> for GroupCoordinator {
    type Result = ();

    fn handle(&mut self, msg: GroupAdmin, ctx: &mut Self::Context) {
        // Deadlines already passed apply first: a DeleteGroups or DescribeGroups that comes in
        // the millisecond a static member's session ends must not find it still there because
        // its timer has not run yet (librdkafka's 0081 deletes its group exactly one session
        // timeout after the members' last commit). The writes keep this order (write_group).
        self.fire_timers(ctx);
        let (answer, changed) = self.groups.admin(msg.op);
        let flushes: Vec<_> = changed.iter().map(|id| self.persist(id)).collect();
        // Deletions are answered only once they are on disk; a failed write is not a success.
        let reply = msg.reply;
        ctx.spawn(
            async move {
                let mut written = true;
                for f in flushes {
                    if let Err(e) = f.await {
                        tracing::error!("group change not written: {e}");
                        written = false;
                    }
                }
                written
            }
            .into_actor(self)
            .map(move |written, _, _| {
                let answer = if written { answer } else { unwritten(answer) };
                let _ = reply.send(answer);
            }),
        );
    }
}

impl Handler<BeginTxnOffsetCommit> for GroupCoordinator {
    type Result = ();

    fn handle(&mut self, msg: BeginTxnOffsetCommit, _: &mut Self::Context) {
        let key = (offsets_partition(&msg.group_id), msg.producer_id);
        let answer = self.producers.begin_txn_offset_commit(key, msg.producer_epoch);
        let _ = msg.reply.send(answer.map_err(|_| GroupError::InvalidProducerEpoch));
    }
}

impl Handler<CompleteTxnOffsets> for GroupCoordinator {
    type Result = ();

    fn handle(&mut self, msg: CompleteTxnOffsets, ctx: &mut Self::Context) {
        // eos-rules 46-48: the marker is checked against the producer's state on the offsets
        // partition, as on any partition.
        let key = (msg.offsets_partition, msg.producer_id);
        if let Err(e) = self.producers.check_marker(key, msg.producer_epoch, msg.coordinator_epoch, msg.txn_version) {
            tracing::warn!(offsets = msg.offsets_partition, producer_id = msg.producer_id, "marker refused: {e}");
            let _ = msg.reply.send(e.code());
            return;
        }
        let changed = self.groups.complete_txn(msg.offsets_partition, msg.producer_id, msg.commit);
        self.producers.record_marker(key, msg.producer_epoch, msg.coordinator_epoch, now_ms());
        // Every change goes into the database first; one flush makes them all durable.
        let written = changed.iter().try_for_each(|id| self.write_group(id)).and_then(|()| self.write_producer(key));
        let flush = self.flush();
        let reply = msg.reply;
        ctx.spawn(
            async move {
                if let Err(e) = async move {
                    written?;
                    flush.await
                }
                .await
                {
                    // The marker is not written: the coordinator retries it, the transaction
                    // stays in its prepare state until it is (eos-rules 50).
                    tracing::error!("transactional offsets not written: {e}");
                    // What a marker to a partition this broker no longer leads (or cannot
                    // write) gets from Kafka's leader; retried (eos-rules 50).
                    return crate::error_code::ResponseError::NotLeaderOrFollower.code();
                }
                0
            }
            .into_actor(self)
            .map(move |code, _, _| {
                let _ = reply.send(code);
            }),
        );
    }
}

impl Handler<HandOver> for GroupCoordinator {
    type Result = ();

    /// Flushes (snapshots are inserted as they change; only the flush may be outstanding) and
    /// stops without taking another call: members waiting in a rebalance get NOT_COORDINATOR
    /// and find the next owner, which loads the groups from the database.
    fn handle(&mut self, msg: HandOver, ctx: &mut Self::Context) {
        tracing::info!(groups = self.waiting.len(), "handing the group coordinator over");
        let (db, db_file) = (self.db.clone(), self.db_file.clone());
        let flush = tokio::task::spawn_blocking(move || crate::store::durable::flush_sled(&db, &db_file));
        ctx.wait(flush.into_actor(self).map(move |res, _, ctx| {
            if let Ok(Err(e)) | Err(e) = res.map_err(|e| e.to_string()) {
                tracing::error!("flushing the group coordinator at hand-over: {e}");
            }
            let _ = msg.reply.send(());
            ctx.stop();
        }));
    }
}
