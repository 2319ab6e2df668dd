//! TopicRegistry: owns this broker's topics and starts one PartitionLeader per partition on the
//! partition arbiters (their supervisor: offline when a partition cannot open). Runs on its own
//! arbiter, so its file I/O never blocks a connection thread.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use actix::{Actor, ActorFutureExt, Addr, ArbiterHandle, Context, Handler, Message, ResponseActFuture, WrapFuture};
use uuid::Uuid;

use super::messages::*;
use super::partition::{LeaderTimers, PartitionLeader};
use super::syncer::Syncer;
use crate::config::Settings;
use crate::error_code::ResponseError;
use crate::store::clock::now_ms;
use crate::store::log::{LogConfig, LogError};
use crate::store::partition::Partition;
use crate::store::topic_config;
use crate::store::topics::{self, TopicMeta};

/// A topic and the partition-leader actors of its partitions.
#[derive(Debug, Clone)]
pub struct TopicHandle {
    pub meta: TopicMeta,
    pub partitions: Vec<Addr<PartitionLeader>>,
}

/// Looks a topic up, creating it with the default settings when `auto_create` allows.
#[derive(Message)]
#[rtype(result = "Result<TopicHandle, i16>")]
pub struct GetTopic {
    pub name: String,
    pub auto_create: bool,
}

pub struct TopicRegistry {
    settings: Arc<Settings>,
    topics: HashMap<String, TopicHandle>,
    arbiters: Vec<ArbiterHandle>,
    next_arbiter: usize,
    syncer: Syncer,
}

impl TopicRegistry {
    /// Loads every topic and recovers every partition before the listener opens. Nothing a
    /// client created can stop this: a partition that does not open is served offline, and
    /// partitions past `max_partitions` (left by an older kaas) are not started.
    pub fn load(
        settings: Arc<Settings>,
        arbiters: Vec<ArbiterHandle>,
        syncer: Syncer,
    ) -> Result<TopicRegistry, String> {
        let mut view =
            TopicRegistry { settings: settings.clone(), topics: HashMap::new(), arbiters, next_arbiter: 0, syncer };
        // Start-up keeps the open files the rest of the broker needs (coordinator databases,
        // connections): partitions past what the open-file limit supports are served offline.
        let nofile = crate::limits::nofile().map(|(soft, _)| soft).unwrap_or(u64::MAX);
        let mut budget = topics::StartupBudget::new(settings.max_partitions, nofile);
        for meta in topics::load_all(&settings.data_dir).map_err(|e| e.to_string())? {
            let count = budget.take_topic(meta.partitions);
            if count < meta.partitions {
                tracing::error!(
                    topic = %meta.name,
                    partitions = meta.partitions,
                    started = count,
                    max_partitions = settings.max_partitions,
                    "partitions past the broker's max_partitions are not served; raise max_partitions or delete the topic"
                );
            }
            let log_config = view.log_config(&meta);
            let mut partitions = Vec::new();
            let mut offline = 0u64;
            for p in 0..count {
                let leader = if !budget.take_file() {
                    offline += 1;
                    view.offline_partition(&meta.name, p, &log_config)
                } else {
                    match view.open_partition(&meta.name, p, &log_config) {
                        Ok(l) => l,
                        Err(e) => {
                            offline += 1;
                            tracing::error!(
                                partition = %format!("{}-{p}", meta.name),
                                "cannot open partition, serving it offline (KAFKA_STORAGE_ERROR) until a restart opens it: {e}"
                            );
                            view.offline_partition(&meta.name, p, &log_config)
                        }
                    }
                };
                partitions.push(view.spawn_leader(leader));
            }
            if offline > 0 {
                tracing::error!(
                    topic = %meta.name,
                    offline,
                    open_file_limit = nofile,
                    "partitions served offline (KAFKA_STORAGE_ERROR): they did not open or the open-file limit \
                     cannot hold them; raise `ulimit -n` (nofile) and restart to serve them"
                );
            }
            // What is not served is not announced either: Metadata, ListOffsets and the broker's
            // partition count see the served partitions; the topic file on disk stays as it is.
            let meta = TopicMeta { partitions: count, ..meta };
            view.topics.insert(meta.name.clone(), TopicHandle { meta, partitions });
        }
        Ok(view)
    }

    /// The topic's log settings: the broker's, overridden by valid topic configs.
    fn log_config(&self, meta: &TopicMeta) -> LogConfig {
        let (config, ignored) = topic_config::log_config_for(&self.settings.log_config(), &meta.configs);
        for e in ignored {
            tracing::warn!(topic = %meta.name, "stored topic config ignored, broker setting used: {e}");
        }
        config
    }

    /// Opens partition `p`'s log (recovery) and puts a leader around it.
    fn open_partition(&self, topic: &str, p: i32, log_config: &LogConfig) -> Result<PartitionLeader, LogError> {
        let dir = topics::partition_dir(&self.settings.data_dir, topic, p);
        let (partition, info) = Partition::open(dir, log_config.clone(), now_ms())?;
        if info.truncated_bytes > 0 {
            tracing::warn!(topic, partition = p, bytes = info.truncated_bytes, "recovery truncated a torn log tail");
        }
        Ok(self.leader(topic, p, partition))
    }

    /// A leader for partition `p` whose log could not be opened: it answers KAFKA_STORAGE_ERROR
    /// and leaves the files as they are until a restart opens them.
    fn offline_partition(&self, topic: &str, p: i32, log_config: &LogConfig) -> PartitionLeader {
        let dir = topics::partition_dir(&self.settings.data_dir, topic, p);
        self.leader(topic, p, Partition::offline(dir, log_config.clone()))
    }

    fn leader(&self, topic: &str, p: i32, partition: Partition) -> PartitionLeader {
        let timers = LeaderTimers {
            retention_check: Duration::from_millis(self.settings.retention_check_interval_ms.max(100)),
            producer_expiration_ms: self.settings.producer_id_expiration_ms,
        };
        PartitionLeader::new(format!("{topic}-{p}"), partition, self.syncer.clone(), timers)
    }

    fn spawn_leader(&mut self, leader: PartitionLeader) -> Addr<PartitionLeader> {
        let arbiter = &self.arbiters[self.next_arbiter % self.arbiters.len()];
        self.next_arbiter += 1;
        PartitionLeader::start_in_arbiter(arbiter, move |_| leader)
    }

    fn partition_count(&self) -> u64 {
        self.topics.values().map(|h| u64::try_from(h.meta.partitions).unwrap_or(0)).sum()
    }

    /// Removes what a creation that did not complete left on disk.
    fn roll_back(&self, name: &str) {
        if let Err(e) = topics::remove_partition_dirs(&self.settings.data_dir, name) {
            tracing::error!(topic = %name, "rolling back a failed creation: {e}");
        }
    }

    /// Creates a topic all or nothing: every partition is opened before the topic file (the
    /// commit point) is written, and a failure removes what was made.
    fn create(&mut self, msg: CreateTopic) -> Result<TopicMeta, TopicFailure> {
        let fail = |code: i16, message: String| TopicFailure { error_code: code, message };
        topics::validate_name(&msg.name)
            .map_err(|e| fail(ResponseError::InvalidTopicException.code(), e.to_string()))?;
        // The file counts too: a peer on the shared disk may have created it (and its partition
        // directories are then not left-overs to remove).
        if self.topics.contains_key(&msg.name) || topics::exists_on_disk(&self.settings.data_dir, &msg.name) {
            return Err(fail(
                ResponseError::TopicAlreadyExists.code(),
                format!("Topic '{}' already exists.", msg.name),
            ));
        }
        let limit = |e: topics::LimitError| fail(e.code(), e.to_string());
        let partitions = topics::resolve_partitions(msg.partitions, self.settings.num_partitions).map_err(limit)?;
        let configs = topic_config::validate(&msg.configs).map_err(|e| fail(e.code(), e.to_string()))?;
        topics::check_broker_limit(self.partition_count(), partitions, self.settings.max_partitions).map_err(limit)?;
        let meta = TopicMeta { name: msg.name, id: Uuid::new_v4(), partitions, configs };
        if msg.validate_only {
            return Ok(meta);
        }
        // Directories of an earlier creation that crashed before its topic file was written.
        topics::remove_partition_dirs(&self.settings.data_dir, &meta.name).map_err(|e| {
            fail(ResponseError::KafkaStorageError.code(), format!("removing left-overs of {}: {e}", meta.name))
        })?;
        let log_config = self.log_config(&meta);
        let mut leaders = Vec::with_capacity(usize::try_from(partitions).unwrap_or(0));
        for p in 0..partitions {
            match self.open_partition(&meta.name, p, &log_config) {
                Ok(l) => leaders.push(l),
                Err(e) => {
                    drop(leaders);
                    self.roll_back(&meta.name);
                    tracing::warn!(topic = %meta.name, partition = p, "creation rolled back: {e}");
                    return Err(fail(
                        ResponseError::KafkaStorageError.code(),
                        format!(
                            "Could not open partition {}-{p}: {e}. Topic '{}' was not created.",
                            meta.name, meta.name
                        ),
                    ));
                }
            }
        }
        if let Err(e) = topics::save(&self.settings.data_dir, &meta) {
            drop(leaders);
            self.roll_back(&meta.name);
            return Err(fail(
                ResponseError::KafkaStorageError.code(),
                format!("Could not save topic '{}': {e}", meta.name),
            ));
        }
        let partitions = leaders.into_iter().map(|l| self.spawn_leader(l)).collect();
        tracing::info!(topic = %meta.name, partitions = meta.partitions, "created topic");
        self.topics.insert(meta.name.clone(), TopicHandle { meta: meta.clone(), partitions });
        Ok(meta)
    }
}

impl Actor for TopicRegistry {
    type Context = Context<Self>;
}

impl Handler<GetTopic> for TopicRegistry {
    type Result = Result<TopicHandle, i16>;

    fn handle(&mut self, msg: GetTopic, _: &mut Self::Context) -> Self::Result {
        if let Some(h) = self.topics.get(&msg.name) {
            return Ok(h.clone());
        }
        if !(msg.auto_create && self.settings.auto_create_topics) {
            return Err(ResponseError::UnknownTopicOrPartition.code());
        }
        let create = CreateTopic { name: msg.name.clone(), partitions: -1, configs: Vec::new(), validate_only: false };
        match self.create(create) {
            Ok(_) => self.topics.get(&msg.name).cloned().ok_or(ResponseError::UnknownTopicOrPartition.code()),
            Err(f) => {
                tracing::warn!(topic = %msg.name, code = f.error_code, "auto-creation refused: {}", f.message);
                Err(f.error_code)
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

impl Handler<DeleteTopic> for TopicRegistry {
    type Result = ResponseActFuture<Self, Result<TopicMeta, i16>>;

    fn handle(&mut self, msg: DeleteTopic, _: &mut Self::Context) -> Self::Result {
        let name = match (&msg.name, msg.id) {
            (Some(n), _) => Some(n.clone()),
            (None, Some(id)) => self.topics.values().find(|h| h.meta.id == id).map(|h| h.meta.name.clone()),
            (None, None) => None,
        };
        let missing = if msg.name.is_some() {
            ResponseError::UnknownTopicOrPartition.code()
        } else {
            ResponseError::UnknownTopicId.code()
        };
        let Some(handle) = name.and_then(|n| self.topics.remove(&n)) else {
            return Box::pin(async move { Err(missing) }.into_actor(self));
        };
        let data_dir = self.settings.data_dir.clone();
        let stops = handle.partitions.clone();
        Box::pin(stop_all(stops).into_actor(self).map(move |_, _, _| {
            topics::remove(&data_dir, &handle.meta).map_err(|e| {
                tracing::error!(topic = %handle.meta.name, "delete: {e}");
                ResponseError::UnknownServerError.code()
            })?;
            tracing::info!(topic = %handle.meta.name, "deleted topic");
            Ok(handle.meta)
        }))
    }
}

/// Stops partition leaders one after the other, each flushing and closing its log.
async fn stop_all(leaders: Vec<Addr<PartitionLeader>>) {
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
        let all: Vec<_> = self.topics.values().flat_map(|h| h.partitions.clone()).collect();
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
        for p in self.topics.values().flat_map(|h| &h.partitions) {
            p.do_send(FenceEpoch { producer_id: msg.producer_id, epoch: msg.epoch });
        }
    }
}
