//! ClusterView: owns the topic registry and the producer-id allocator of this broker, and starts
//! one PartitionLeader per partition on the partition arbiters. Runs on its own arbiter, so its
//! file I/O never blocks a connection thread.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;
use std::time::Duration;

use actix::{Actor, ActorFutureExt, ArbiterHandle, Context, Handler, ResponseActFuture, WrapFuture};
use uuid::Uuid;

use super::messages::*;
use super::partition::PartitionLeader;
use super::syncer::Syncer;
use crate::config::Settings;
use crate::store::fence_log::FenceLog;
use crate::store::producer_ids::ProducerIdAllocator;
use crate::store::topics::{self, TopicMeta};

/// Kafka error codes used here.
const UNKNOWN_TOPIC_OR_PARTITION: i16 = 3;
const INVALID_TOPIC_EXCEPTION: i16 = 17;
const TOPIC_ALREADY_EXISTS: i16 = 36;
const INVALID_PARTITIONS: i16 = 37;
const INVALID_CONFIG: i16 = 40;
const UNKNOWN_TOPIC_ID: i16 = 100;
const UNKNOWN_SERVER_ERROR: i16 = -1;
const COORDINATOR_LOAD_IN_PROGRESS: i16 = 14;

/// Topic-level configs kaas accepts on CreateTopics (others are refused with INVALID_CONFIG).
pub const KNOWN_TOPIC_CONFIGS: &[&str] = &[
    "cleanup.policy",
    "retention.ms",
    "retention.bytes",
    "segment.bytes",
    "min.insync.replicas",
    "max.message.bytes",
    "message.timestamp.type",
    "compression.type",
];

pub struct ClusterView {
    settings: Arc<Settings>,
    topics: HashMap<String, TopicHandle>,
    arbiters: Vec<ArbiterHandle>,
    next_arbiter: usize,
    syncer: Syncer,
    producer_ids: ProducerIdAllocator,
    fence_log: FenceLog,
}

impl ClusterView {
    /// Loads every topic and recovers every partition before the listener opens.
    pub fn load(settings: Arc<Settings>, arbiters: Vec<ArbiterHandle>, syncer: Syncer) -> Result<ClusterView, String> {
        let producer_ids = ProducerIdAllocator::open(&settings.data_dir, settings.node_id)
            .map_err(|e| format!("producer ids: {e}"))?;
        let fence_log = FenceLog::open(&settings.data_dir, settings.node_id).map_err(|e| format!("fence log: {e}"))?;
        let mut view = ClusterView {
            settings: settings.clone(),
            topics: HashMap::new(),
            arbiters,
            next_arbiter: 0,
            syncer,
            producer_ids,
            fence_log,
        };
        for meta in topics::load_all(&settings.data_dir).map_err(|e| e.to_string())? {
            let handle = view.start_partitions(meta).map_err(|(_, m)| m)?;
            view.topics.insert(handle.meta.name.clone(), handle);
        }
        Ok(view)
    }

    fn start_partitions(&mut self, meta: TopicMeta) -> Result<TopicHandle, (i16, String)> {
        let mut partitions = Vec::with_capacity(meta.partitions as usize);
        for p in 0..meta.partitions {
            let dir = topics::partition_dir(&self.settings.data_dir, &meta.name, p);
            let mut log_config = self.settings.log_config();
            if let Some(v) = meta.configs.get("retention.ms").and_then(|v| v.parse().ok()) {
                log_config.retention_ms = v;
            }
            if let Some(v) = meta.configs.get("retention.bytes").and_then(|v| v.parse().ok()) {
                log_config.retention_bytes = v;
            }
            if let Some(v) = meta.configs.get("segment.bytes").and_then(|v| v.parse().ok()) {
                log_config.segment_bytes = v;
            }
            let leader = PartitionLeader::open(
                format!("{}-{p}", meta.name),
                dir,
                log_config,
                self.syncer.clone(),
                Duration::from_millis(self.settings.retention_check_interval_ms.max(100)),
                self.settings.producer_id_expiration_ms,
            )
            .map_err(|e| (UNKNOWN_SERVER_ERROR, format!("opening {}-{p}: {e}", meta.name)))?;
            let arbiter = &self.arbiters[self.next_arbiter % self.arbiters.len()];
            self.next_arbiter += 1;
            partitions.push(PartitionLeader::start_in_arbiter(arbiter, move |_| leader));
        }
        Ok(TopicHandle { meta, partitions })
    }

    fn create(&mut self, msg: CreateTopic) -> Result<TopicMeta, TopicFailure> {
        let fail = |code: i16, message: String| TopicFailure { error_code: code, message };
        topics::validate_name(&msg.name).map_err(|e| fail(INVALID_TOPIC_EXCEPTION, e.to_string()))?;
        if self.topics.contains_key(&msg.name) {
            return Err(fail(TOPIC_ALREADY_EXISTS, format!("Topic '{}' already exists.", msg.name)));
        }
        let partitions = if msg.partitions == -1 { self.settings.num_partitions } else { msg.partitions };
        if partitions < 1 {
            return Err(fail(INVALID_PARTITIONS, "Number of partitions must be larger than 0.".into()));
        }
        let mut configs = BTreeMap::new();
        for (k, v) in msg.configs {
            if !KNOWN_TOPIC_CONFIGS.contains(&k.as_str()) {
                return Err(fail(INVALID_CONFIG, format!("Unknown topic config name: {k}")));
            }
            configs.insert(k, v);
        }
        let meta = TopicMeta { name: msg.name, id: Uuid::new_v4(), partitions, configs };
        if msg.validate_only {
            return Ok(meta);
        }
        topics::save(&self.settings.data_dir, &meta).map_err(|e| fail(UNKNOWN_SERVER_ERROR, e.to_string()))?;
        let handle = self.start_partitions(meta.clone()).map_err(|(c, m)| fail(c, m))?;
        tracing::info!(topic = %meta.name, partitions = meta.partitions, "created topic");
        self.topics.insert(meta.name.clone(), handle);
        Ok(meta)
    }
}

impl Actor for ClusterView {
    type Context = Context<Self>;
}

impl Handler<GetTopic> for ClusterView {
    type Result = Result<TopicHandle, i16>;

    fn handle(&mut self, msg: GetTopic, _: &mut Self::Context) -> Self::Result {
        if let Some(h) = self.topics.get(&msg.name) {
            return Ok(h.clone());
        }
        if !(msg.auto_create && self.settings.auto_create_topics) {
            return Err(UNKNOWN_TOPIC_OR_PARTITION);
        }
        let create = CreateTopic { name: msg.name.clone(), partitions: -1, configs: Vec::new(), validate_only: false };
        match self.create(create) {
            Ok(_) => self.topics.get(&msg.name).cloned().ok_or(UNKNOWN_TOPIC_OR_PARTITION),
            Err(f) => Err(f.error_code),
        }
    }
}

impl Handler<ListTopics> for ClusterView {
    type Result = Vec<TopicMeta>;

    fn handle(&mut self, _: ListTopics, _: &mut Self::Context) -> Self::Result {
        let mut all: Vec<TopicMeta> = self.topics.values().map(|h| h.meta.clone()).collect();
        all.sort_by(|a, b| a.name.cmp(&b.name));
        all
    }
}

impl Handler<CreateTopic> for ClusterView {
    type Result = Result<TopicMeta, TopicFailure>;

    fn handle(&mut self, msg: CreateTopic, _: &mut Self::Context) -> Self::Result {
        self.create(msg)
    }
}

impl Handler<DeleteTopic> for ClusterView {
    type Result = ResponseActFuture<Self, Result<TopicMeta, i16>>;

    fn handle(&mut self, msg: DeleteTopic, _: &mut Self::Context) -> Self::Result {
        let name = match (&msg.name, msg.id) {
            (Some(n), _) => Some(n.clone()),
            (None, Some(id)) => self.topics.values().find(|h| h.meta.id == id).map(|h| h.meta.name.clone()),
            (None, None) => None,
        };
        let missing = if msg.name.is_some() { UNKNOWN_TOPIC_OR_PARTITION } else { UNKNOWN_TOPIC_ID };
        let Some(handle) = name.and_then(|n| self.topics.remove(&n)) else {
            return Box::pin(async move { Err(missing) }.into_actor(self));
        };
        let data_dir = self.settings.data_dir.clone();
        let stops = handle.partitions.clone();
        Box::pin(
            async move {
                for p in stops {
                    let (tx, rx) = tokio::sync::oneshot::channel();
                    if p.send(Shutdown { reply: tx }).await.is_ok() {
                        let _ = rx.await;
                    }
                }
            }
            .into_actor(self)
            .map(move |_, _, _| {
                topics::remove(&data_dir, &handle.meta).map_err(|e| {
                    tracing::error!(topic = %handle.meta.name, "delete: {e}");
                    UNKNOWN_SERVER_ERROR
                })?;
                tracing::info!(topic = %handle.meta.name, "deleted topic");
                Ok(handle.meta)
            }),
        )
    }
}

impl Handler<AllocateProducerId> for ClusterView {
    type Result = Result<i64, i16>;

    fn handle(&mut self, _: AllocateProducerId, _: &mut Self::Context) -> Self::Result {
        // eos-rules 1: when no id block can be reserved, the client retries.
        self.producer_ids.next_id().map_err(|e| {
            tracing::error!("producer id block: {e}");
            COORDINATOR_LOAD_IN_PROGRESS
        })
    }
}

impl Handler<ShutdownAll> for ClusterView {
    type Result = ResponseActFuture<Self, ()>;

    fn handle(&mut self, msg: ShutdownAll, _: &mut Self::Context) -> Self::Result {
        let all: Vec<_> = self.topics.values().flat_map(|h| h.partitions.clone()).collect();
        Box::pin(
            async move {
                for p in all {
                    let (tx, rx) = tokio::sync::oneshot::channel();
                    if p.send(Shutdown { reply: tx }).await.is_ok() {
                        let _ = rx.await;
                    }
                }
                let _ = msg.reply.send(());
            }
            .into_actor(self),
        )
    }
}

impl Handler<BroadcastFence> for ClusterView {
    type Result = ();

    fn handle(&mut self, msg: BroadcastFence, _: &mut Self::Context) {
        // In process: every partition leader of this broker rejects the older epoch from now on.
        for p in self.topics.values().flat_map(|h| &h.partitions) {
            p.do_send(FenceEpoch { producer_id: msg.producer_id, epoch: msg.epoch });
        }
        // Across brokers: peers read this file (design: fence files on the shared disk).
        let max_age = self.settings.producer_id_expiration_ms;
        if let Err(e) = self.fence_log.append(msg.producer_id, msg.epoch, super::partition::now_ms(), max_age) {
            tracing::error!(producer_id = msg.producer_id, "fence file not written: {e}");
        }
    }
}
