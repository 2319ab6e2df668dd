//! TopicRegistry: owns this broker's view of the topics on the shared disk and starts one
//! PartitionLeader for each partition this broker leads (their supervisor: offline when a
//! partition cannot open). A partition is led by the broker that holds its lease
//! (store::leases); which broker should try is store::placement's answer over the live brokers.
//! `Rebalance` (each membership tick) takes what this broker should lead and gives up what a
//! live peer should. Runs on its own arbiter, so its file I/O never blocks a connection thread.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, PoisonError, RwLock};
use std::time::Duration;

use actix::{Actor, Addr, ArbiterHandle, Context, Handler, Message, ResponseActFuture, WrapFuture};
use uuid::Uuid;

use super::cleaner::LogCleaner;
use super::local_actor::LocalActor;
use super::messages::*;
use super::partition::{LeaderMeters, LeaderTimers, PartitionLeader};
use super::syncer::Syncer;
use crate::config::Settings;
use crate::error_code::ResponseError;
use crate::metrics::Metrics;
use crate::store::clock::now_ms;
use crate::store::cluster::fence::SelfFence;
use crate::store::cluster::known_fences::KnownFences;
use crate::store::configs::dynamic::ConfigMap;
use crate::store::configs::topic::{self as topic_config, BrokerDefaults, ProduceLimits};
use crate::store::leases::HeldLease;
use crate::store::log::file_cache::FileCache;
use crate::store::log::{LogConfig, LogError};
use crate::store::ownership::{Lease, Owned, Ownership};
use crate::store::partition::Partition;
use crate::store::topics::{self, TopicMeta};
use kafka_protocol::error::ParseResponseErrorCode;

mod creation;
mod deletion;
mod growth;
mod opening;
mod rebalance;
mod takeover;

use opening::open_logs;

/// A topic and the partition-leader actors of the partitions this broker leads.
#[derive(Debug, Clone)]
pub struct TopicHandle {
    pub meta: TopicMeta,
    /// One cell per served partition; empty while a peer (or nobody) leads it.
    pub partitions: Arc<Vec<LocalActor<PartitionLeader>>>,
    /// What Produce checks, shared by every copy of the handle so an alter reaches them all.
    limits: Arc<RwLock<ProduceLimits>>,
    /// Set when partitions were added (CreatePartitions): handles cached per connection then
    /// ask the registry again instead of serving the old partition count.
    superseded: Arc<AtomicBool>,
}

impl TopicHandle {
    /// `layer`: the topic-config defaults of the dynamic broker configs (store::configs::dynamic).
    fn new(meta: TopicMeta, defaults: &BrokerDefaults, layer: &ConfigMap) -> TopicHandle {
        let cells = (0..meta.partitions).map(|_| LocalActor::default()).collect();
        let limits = Arc::new(RwLock::new(topic_config::produce_limits(defaults, &effective(layer, &meta.configs))));
        TopicHandle { meta, partitions: Arc::new(cells), limits, superseded: Arc::default() }
    }

    /// The topic's current batch size limit and timestamp rules.
    pub fn produce_limits(&self) -> ProduceLimits {
        *self.limits.read().unwrap_or_else(PoisonError::into_inner)
    }

    pub(super) fn set_produce_limits(&self, limits: ProduceLimits) {
        *self.limits.write().unwrap_or_else(PoisonError::into_inner) = limits;
    }

    /// False once partitions were added to the topic: ask the registry for the current handle.
    pub fn is_current(&self) -> bool {
        !self.superseded.load(Ordering::Acquire)
    }

    /// The leader of partition `p` while this broker leads it.
    pub fn leader(&self, p: i32) -> Option<Addr<PartitionLeader>> {
        usize::try_from(p).ok().and_then(|i| self.partitions.get(i)).and_then(LocalActor::get)
    }

    pub(super) fn leaders(&self) -> Vec<Addr<PartitionLeader>> {
        self.partitions.iter().filter_map(LocalActor::get).collect()
    }
}

/// A topic's configs over the dynamic broker configs' topic defaults: what its log and its
/// Produce checks follow (its own values win, as in Kafka).
pub(super) fn effective(layer: &ConfigMap, configs: &BTreeMap<String, String>) -> BTreeMap<String, String> {
    let mut out = layer.clone();
    out.extend(configs.iter().map(|(k, v)| (k.clone(), v.clone())));
    out
}

/// Partition leaders (with their partition numbers) that were running when a topic was dropped.
type RunningLeaders = Vec<(i32, Addr<PartitionLeader>)>;

/// The membership tick: the live brokers' node ids (this one included).
#[derive(Message)]
#[rtype(result = "()")]
pub struct Rebalance {
    pub live: Vec<i32>,
    /// Peers whose heartbeat expired, with the incarnation seen (store::leases::Expired).
    pub expired: Vec<(i32, u64)>,
}

/// Looks a topic up, creating it with the default settings when `auto_create` allows.
#[derive(Message)]
#[rtype(result = "Result<TopicHandle, ResponseError>")]
pub struct GetTopic {
    pub name: String,
    pub auto_create: bool,
}

pub struct TopicRegistry {
    pub(super) settings: Arc<Settings>,
    pub(super) topics: HashMap<String, TopicHandle>,
    arbiters: Vec<ArbiterHandle>,
    next_arbiter: usize,
    syncer: Syncer,
    /// The log cleaner's threads, given to every leader.
    cleaner: LogCleaner,
    /// The table the Directory answers from (shared with it): this registry grants and revokes
    /// the partitions' leases in it.
    ownership: Arc<RwLock<Ownership>>,
    /// The partitions this broker leads, with their leases.
    held: HashMap<(String, i32), HeldLease>,
    /// The open segment files of every partition (bounded).
    files: Arc<FileCache>,
    /// Live node ids as of the last membership tick.
    live: Vec<i32>,
    /// Peers whose heartbeat expired as of the last membership tick (store::leases::Expired).
    expired: Vec<(i32, u64)>,
    /// Partitions that may still be served (`max_partitions`).
    budget: topics::StartupBudget,
    /// Partitions being handed to a peer (their leaders are flushing).
    releasing: HashSet<(String, i32)>,
    /// Topics being deleted here: their file is still on disk until their leaders stopped, and
    /// a membership tick in between must not take them for a topic a peer created.
    deleting: HashSet<String>,
    /// Fences this broker was told of, for partitions it starts leading later.
    fences: KnownFences,
    /// The leaders count into it; a deleted topic's series go.
    metrics: Metrics,
    /// This node's previous process stopped cleanly: its partitions keep their epochs
    /// (store::leases::try_acquire).
    keep_own: bool,
    /// The topic-config defaults the dynamic broker configs give this broker, as last read or
    /// written (actors::broker_configs, `DynamicConfigs::topic_layer`).
    pub(super) topic_layer: ConfigMap,
}

/// A partition whose lease this broker just took, to be opened.
pub(super) struct Acquired {
    topic: TopicHandle,
    partition: i32,
    log_config: LogConfig,
    lease: HeldLease,
}

/// Partitions being handed to a peer, with their leaders (flushing, then stopped).
type HandingOver = Vec<((String, i32), Addr<PartitionLeader>)>;

/// `max_open_segment_files`, with 0 (auto) resolved against the open-file limit.
fn open_segment_files(settings: &Settings) -> usize {
    if settings.log.max_open_segment_files > 0 {
        return settings.log.max_open_segment_files;
    }
    let nofile = crate::limits::nofile().map(|(soft, _)| soft).unwrap_or(1024);
    crate::store::log::file_cache::auto_capacity(nofile)
}

impl TopicRegistry {
    /// Loads every topic and recovers every partition this broker should lead (all of them on
    /// a single broker) before the listener opens. Nothing a client created can stop this: a
    /// partition that does not open is served offline, and partitions past `max_partitions`
    /// (left by an older kaas) are not started.
    pub fn load(
        settings: Arc<Settings>,
        arbiters: Vec<ArbiterHandle>,
        (syncer, cleaner): (Syncer, LogCleaner),
        ownership: Arc<RwLock<Ownership>>,
        live: Vec<i32>,
        metrics: Metrics,
        keep_own: bool,
    ) -> Result<TopicRegistry, String> {
        let mut view = TopicRegistry {
            settings: settings.clone(),
            topics: HashMap::new(),
            arbiters,
            next_arbiter: 0,
            syncer,
            cleaner,
            ownership,
            held: HashMap::new(),
            files: Arc::new(FileCache::new(open_segment_files(&settings))),
            live,
            expired: Vec::new(),
            budget: topics::StartupBudget::new(settings.log.max_partitions),
            releasing: HashSet::new(),
            fences: KnownFences::new(settings.transactions.producer_id_expiration_ms),
            deleting: HashSet::new(),
            metrics,
            keep_own,
            topic_layer: ConfigMap::new(),
        };
        // Before any topic opens: its logs start with the dynamic defaults.
        view.reload_dynamic();
        view.refresh_topics().map_err(|e| e.to_string())?;
        // Nothing is handed over at start: this broker held nothing.
        let _ = view.claim_and_release();
        Ok(view)
    }

    /// Reads the topic files: topics a peer created are added (their partitions unled until
    /// claimed), topics a peer deleted are dropped with the partitions this broker led.
    /// Reads the topics directory; returns the topics a peer deleted with the leaders this
    /// broker ran for them (stopped, then their directories removed, by the caller).
    fn refresh_topics(&mut self) -> Result<Vec<(String, Uuid, RunningLeaders)>, topics::TopicError> {
        // A peer may have changed the dynamic broker configs.
        self.reload_dynamic();
        let on_disk = topics::load_all(&self.settings.broker.data_dir)?;
        let names: HashSet<String> = on_disk.iter().map(|m| m.name.clone()).collect();
        let gone: Vec<String> = self.topics.keys().filter(|n| !names.contains(*n)).cloned().collect();
        let mut deleted = Vec::new();
        for name in gone {
            // A topic goes only through its delete record (store::topics::remove).
            let Some(known) = self.topics.get(&name) else { continue };
            match topics::missing(&self.settings.broker.data_dir, &known.meta)? {
                topics::Missing::Deleted | topics::Missing::Replaced => {}
                topics::Missing::Present => continue,
                topics::Missing::Unexplained => {
                    tracing::warn!(
                        topic = %name,
                        "topic file missing without a delete record: still served, nothing removed"
                    );
                    continue;
                }
            }
            if let Some(h) = self.topics.remove(&name) {
                tracing::info!(topic = %name, "topic deleted by a peer");
                let running = self.forget_partitions(&h);
                // Not served again (nor created anew here) until its directories are gone.
                self.deleting.insert(name.clone());
                deleted.push((name, h.meta.id, running));
            }
        }
        for meta in on_disk {
            if self.topics.get(&meta.name).is_some_and(|h| h.meta.id == meta.id) {
                // A peer may have altered its configs.
                self.apply_configs(&meta.name, meta.configs.clone());
            }
            if self.deleting.contains(&meta.name) {
                continue;
            }
            match self.topics.get(&meta.name) {
                // Partitions a peer added (CreatePartitions): served from this tick on.
                Some(h) if h.meta.id == meta.id => self.grow(meta, true),
                _ => {
                    self.register(meta);
                }
            }
        }
        Ok(deleted)
    }

    /// Serves a topic read from the shared disk (created here or by a peer); its partitions
    /// are claimed by the next membership tick.
    fn register(&mut self, meta: TopicMeta) -> TopicHandle {
        let count = self.budget.take_topic(meta.partitions);
        if count < meta.partitions {
            tracing::error!(
                topic = %meta.name,
                partitions = meta.partitions,
                started = count,
                max_partitions = self.settings.log.max_partitions,
                "partitions past the broker's max_partitions are not served; raise max_partitions or delete the topic"
            );
        }
        // What is not served is not announced either: Metadata, ListOffsets and the broker's
        // partition count see the served partitions; the topic file on disk stays as it is.
        let meta = TopicMeta { partitions: count, ..meta };
        let handle = TopicHandle::new(meta, &self.settings.topic_defaults(), &self.topic_layer);
        if let Some(old) = self.topics.insert(handle.meta.name.clone(), handle.clone()) {
            // A topic of this name deleted and created again by a peer: the new one owns the
            // directories (its creator cleared them).
            for (_, leader) in self.forget_partitions(&old) {
                leader.do_send(Shutdown { reply: tokio::sync::oneshot::channel().0 });
            }
        }
        handle
    }

    /// The topic `name` from its file on the shared disk, when there is one and it is not being
    /// deleted here.
    pub(super) fn load_from_disk(&mut self, name: &str) -> Option<TopicHandle> {
        if self.deleting.contains(name) {
            return None;
        }
        match topics::load_one(&self.settings.broker.data_dir, name) {
            Ok(Some(meta)) => Some(self.register(meta)),
            Ok(None) => None,
            Err(e) => {
                tracing::warn!(topic = %name, "reading the topic file: {e}");
                None
            }
        }
    }

    /// Stops the leaders of a topic that no longer exists and gives up their leases.
    /// Returns the leaders that were running, for the caller to stop.
    fn forget_partitions(&mut self, h: &TopicHandle) -> RunningLeaders {
        let mut running = Vec::new();
        for (p, cell) in h.partitions.iter().enumerate() {
            let p = i32::try_from(p).unwrap_or(i32::MAX);
            if let Some(leader) = cell.set(None) {
                running.push((p, leader));
            }
            self.held.remove(&(h.meta.name.clone(), p));
            self.table_mut().revoke(&Owned::Partition { topic: h.meta.name.clone(), partition: p });
        }
        running
    }

    fn table_mut(&self) -> std::sync::RwLockWriteGuard<'_, Ownership> {
        self.ownership.write().unwrap_or_else(PoisonError::into_inner)
    }

    fn local_node(&self) -> i32 {
        self.settings.broker.node_id
    }

    /// Opens partition `p` under `lease` and publishes its leader; a log that does not open is
    /// served offline. True when it is served offline.
    fn start_partition(
        &mut self,
        h: &TopicHandle,
        p: i32,
        log_config: &LogConfig,
        lease: HeldLease,
        opened: Result<Partition, LogError>,
    ) -> bool {
        let name = h.meta.name.clone();
        let mut offline = false;
        let epoch = lease.record.epoch;
        let leader = match opened {
            Ok(partition) => self.leader(&name, p, partition),
            Err(e) => {
                offline = true;
                tracing::error!(
                    partition = %format!("{name}-{p}"),
                    "cannot open partition, serving it offline (KAFKA_STORAGE_ERROR) until a restart opens it: {e}"
                );
                self.offline_partition(&name, p, log_config)
            }
        };
        let addr = self.spawn_leader(leader);
        // Fences that came while a peer led it (or before this broker led anything): eos-rules 9.
        for (producer_id, epoch) in self.fences.current(now_ms()) {
            addr.do_send(FenceEpoch { producer_id, epoch });
        }
        if let Some(cell) = usize::try_from(p).ok().and_then(|i| h.partitions.get(i)) {
            cell.set(Some(addr));
        }
        self.held.insert((name.clone(), p), lease);
        self.table_mut()
            .grant(Owned::Partition { topic: name, partition: p }, Lease { node_id: self.local_node(), epoch });
        offline
    }

    /// This broker's self-fence (store::cluster::fence), checked after a config file is written
    /// and before the change is answered.
    pub(super) fn self_fence(&self) -> SelfFence {
        self.syncer.fence()
    }

    /// The topic's log settings: the broker's, overridden by valid topic configs.
    pub(super) fn log_config(&self, meta: &TopicMeta) -> LogConfig {
        let base = self.settings.log_config(self.files.clone());
        let (config, ignored) = topic_config::log_config_for(&base, &effective(&self.topic_layer, &meta.configs));
        for e in ignored {
            tracing::warn!(topic = %meta.name, "stored topic config ignored, broker setting used: {e}");
        }
        config
    }

    /// A leader for partition `p` whose log could not be opened: it answers KAFKA_STORAGE_ERROR
    /// and leaves the files as they are until a restart opens them.
    fn offline_partition(&self, topic: &str, p: i32, log_config: &LogConfig) -> PartitionLeader {
        let dir = topics::partition_dir(&self.settings.broker.data_dir, topic, p);
        self.leader(topic, p, Partition::offline(dir, log_config.clone()))
    }

    fn leader(&self, topic: &str, p: i32, partition: Partition) -> PartitionLeader {
        let timers = LeaderTimers {
            retention_check: Duration::from_millis(self.settings.log.retention_check_interval_ms.max(100)),
            producer_expiration_ms: self.settings.transactions.producer_id_expiration_ms,
        };
        let meters = LeaderMeters { topic: self.metrics.topic(topic), broker: self.metrics.clone() };
        PartitionLeader::new(
            format!("{topic}-{p}"),
            partition,
            self.syncer.clone(),
            self.cleaner.clone(),
            timers,
            meters,
        )
    }

    fn spawn_leader(&mut self, leader: PartitionLeader) -> Addr<PartitionLeader> {
        let arbiter = &self.arbiters[self.next_arbiter % self.arbiters.len()];
        self.next_arbiter += 1;
        PartitionLeader::start_in_arbiter(arbiter, move |_| leader)
    }

    fn partition_count(&self) -> u64 {
        self.topics.values().map(|h| u64::try_from(h.meta.partitions).unwrap_or(0)).sum()
    }
}

impl Actor for TopicRegistry {
    type Context = Context<Self>;
}

impl Handler<GetTopic> for TopicRegistry {
    type Result = Result<TopicHandle, ResponseError>;

    fn handle(&mut self, msg: GetTopic, _: &mut Self::Context) -> Self::Result {
        if let Some(h) = self.topics.get(&msg.name) {
            return Ok(h.clone());
        }
        // A peer may have created it since the last membership tick: its file is the truth
        // (a Metadata answer must not call a topic unknown, or auto-create it again, because
        // this broker has not read the topics directory yet).
        if let Some(h) = self.load_from_disk(&msg.name) {
            // Its partitions placed here are taken now, not at the next tick: a peer's Metadata
            // already names this broker their leader. A new topic hands nothing over.
            let mut acquired = Vec::new();
            self.claim_topic(&msg.name, None, &mut acquired);
            self.start_acquired(acquired);
            return Ok(h);
        }
        // An internal topic is never made into a log (store::topics::INTERNAL_TOPICS).
        if !(msg.auto_create && self.settings.log.auto_create_topics) || topics::is_internal(&msg.name) {
            return Err(ResponseError::UnknownTopicOrPartition);
        }
        // Apache Kafka's auto-creation of a colliding name fails on its controller, and its
        // Metadata answers go on saying UNKNOWN_TOPIC_OR_PARTITION (checked against Kafka 4.4).
        let known = self.topics.keys().map(String::as_str).chain(topics::INTERNAL_TOPICS);
        if let Some(other) = topics::collision(&msg.name, known) {
            tracing::warn!(topic = %msg.name, "auto-creation refused: it collides with existing topic {other}");
            return Err(ResponseError::UnknownTopicOrPartition);
        }
        let create = CreateTopic {
            name: msg.name.clone(),
            partitions: -1,
            configs: Vec::new(),
            validate_only: false,
            assignments: Vec::new(),
        };
        match self.create(create) {
            Ok(_) => self.topics.get(&msg.name).cloned().ok_or(ResponseError::UnknownTopicOrPartition),
            // Created by a peer at the same moment: serve the winner's topic.
            Err(_) if self.load_from_disk(&msg.name).is_some() => {
                self.topics.get(&msg.name).cloned().ok_or(ResponseError::UnknownTopicOrPartition)
            }
            Err(f) => {
                tracing::warn!(topic = %msg.name, code = f.error_code, "auto-creation refused: {}", f.message);
                Err(f.error_code.err().unwrap_or(ResponseError::UnknownServerError))
            }
        }
    }
}

impl Handler<ListTopics> for TopicRegistry {
    type Result = Vec<TopicMeta>;

    fn handle(&mut self, _: ListTopics, _: &mut Self::Context) -> Self::Result {
        let mut all: Vec<TopicMeta> = self.topics.values().map(|h| h.meta.clone()).collect();
        all.sort_by(|a, b| a.name.cmp(&b.name));
        all
    }
}

impl Handler<CreateTopic> for TopicRegistry {
    type Result = Result<TopicMeta, TopicFailure>;

    fn handle(&mut self, msg: CreateTopic, _: &mut Self::Context) -> Self::Result {
        self.create(msg)
    }
}

/// Stops partition leaders one after the other, each flushing and closing its log.
pub(super) async fn stop_all(leaders: Vec<Addr<PartitionLeader>>) {
    for p in leaders {
        let (tx, rx) = tokio::sync::oneshot::channel();
        if p.send(Shutdown { reply: tx }).await.is_ok() {
            let _ = rx.await;
        }
    }
}

impl Handler<ShutdownAll> for TopicRegistry {
    type Result = ResponseActFuture<Self, ()>;

    fn handle(&mut self, msg: ShutdownAll, _: &mut Self::Context) -> Self::Result {
        let all: Vec<_> = self.topics.values().flat_map(TopicHandle::leaders).collect();
        Box::pin(
            async move {
                stop_all(all).await;
                let _ = msg.reply.send(());
            }
            .into_actor(self),
        )
    }
}

impl Handler<FenceEpoch> for TopicRegistry {
    type Result = ();

    /// Fans a fence out to every partition leader of this broker: from now on each rejects the
    /// older epoch (eos-rules 9).
    fn handle(&mut self, msg: FenceEpoch, _: &mut Self::Context) {
        // Kept for the partitions this broker starts leading later (store::cluster::known_fences).
        self.fences.record(msg.producer_id, msg.epoch, now_ms());
        for p in self.topics.values().flat_map(TopicHandle::leaders) {
            p.do_send(FenceEpoch { producer_id: msg.producer_id, epoch: msg.epoch });
        }
    }
}
