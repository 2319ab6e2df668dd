//! CreateTopics in the TopicRegistry: the topic file is created exclusively first (the commit
//! point), then the partitions this broker should lead are opened; a failure deletes the topic
//! again. Peers open theirs on their next membership tick.

use uuid::Uuid;

use super::{open_logs, Acquired, TopicHandle, TopicRegistry};
use crate::actors::messages::{CreateTopic, TopicFailure};
use crate::error_code::ResponseError;
use crate::store::configs::topic as topic_config;
use crate::store::create_partitions::{check_creation_assignments, CreatePartitionsError};
use crate::store::leases;
use crate::store::ownership::{Lease, Owned};
use crate::store::placement;
use crate::store::topics::{self, TopicMeta};

impl TopicRegistry {
    /// Undoes a creation that committed but could not open its partitions here: deleted as
    /// DeleteTopics deletes (its delete record, then its file, then the directories this broker
    /// made; a peer that started on some removes its own).
    fn roll_back(&self, meta: &TopicMeta, opened: &[i32]) {
        if let Err(e) = topics::remove(&self.settings.broker.data_dir, meta, opened) {
            tracing::error!(topic = %meta.name, "rolling back a failed creation: {e}");
        }
    }

    /// Creates a topic all or nothing: the topic file is created exclusively first (the commit
    /// point: of two brokers creating one name at once, one wins before either touches a
    /// directory), then the partitions this broker leads are opened; a failure deletes the topic
    /// again. A partition directory left by an earlier topic of that name is replaced when its
    /// partition is opened (`topics::adopt_partition_dir`).
    pub(super) fn create(&mut self, msg: CreateTopic) -> Result<TopicMeta, TopicFailure> {
        let fail = |code: i16, message: String| TopicFailure { error_code: code, message };
        topics::validate_name(&msg.name)
            .map_err(|e| fail(ResponseError::InvalidTopicException.code(), e.to_string()))?;
        // The file counts too; an internal topic always exists (store::topics::INTERNAL_TOPICS): a peer on the shared disk may have created it (and its partition
        // directories are then not left-overs to remove).
        if self.topics.contains_key(&msg.name)
            || topics::is_internal(&msg.name)
            || topics::exists_on_disk(&self.settings.broker.data_dir, &msg.name)
        {
            return Err(fail(
                ResponseError::TopicAlreadyExists.code(),
                format!("Topic '{}' already exists.", msg.name),
            ));
        }
        let known = self.topics.keys().map(String::as_str).chain(topics::INTERNAL_TOPICS);
        if let Some(other) = topics::collision(&msg.name, known) {
            return Err(fail(
                ResponseError::InvalidTopicException.code(),
                format!("Topic '{}' collides with existing topic: {other}", msg.name),
            ));
        }
        let limit = |e: topics::LimitError| fail(e.code(), e.to_string());
        let partitions = if msg.assignments.is_empty() {
            topics::resolve_partitions(msg.partitions, self.settings.log.num_partitions).map_err(limit)?
        } else {
            // kaas places leaders itself: an assignment is honoured where it names the broker
            // placement picks (always, with one broker), as CreatePartitions honours one.
            let refused = |e: CreatePartitionsError| fail(e.code(), e.to_string());
            check_creation_assignments(&msg.name, placement::Scheme::RoundRobin, &msg.assignments, &self.live)
                .map_err(refused)?
        };
        let configs = topic_config::validate(&msg.configs).map_err(|e| fail(e.code(), e.to_string()))?;
        topics::check_broker_limit(self.partition_count(), partitions, self.settings.log.max_partitions)
            .map_err(limit)?;
        let meta = TopicMeta {
            name: msg.name,
            id: Uuid::new_v4(),
            partitions,
            configs,
            placed_on: self.live.clone(),
            added: Vec::new(),
            placement: placement::Scheme::RoundRobin,
            leases: topics::LeaseNames::ById,
        };
        if msg.validate_only {
            return Ok(meta);
        }
        if let Err(e) = topics::save(&self.settings.broker.data_dir, &meta) {
            if let topics::TopicError::AlreadyExists(name) = e {
                return Err(fail(ResponseError::TopicAlreadyExists.code(), format!("Topic '{name}' already exists.")));
            }
            return Err(fail(
                ResponseError::KafkaStorageError.code(),
                format!("Could not save topic '{}': {e}", meta.name),
            ));
        }
        let log_config = self.log_config(&meta);
        // The partitions this broker should lead open now, all or nothing; a peer opens its own
        // on its next membership tick.
        let me = self.local_node();
        let fail_at = |p: i32, e: String| {
            tracing::warn!(topic = %meta.name, partition = p, "creation rolled back: {e}");
            fail(
                ResponseError::KafkaStorageError.code(),
                format!("Could not open partition {}-{p}: {e}. Topic '{}' was not created.", meta.name, meta.name),
            )
        };
        let handle = TopicHandle::new(meta.clone(), &self.settings.topic_defaults(), &self.topic_layer);
        let mine: Vec<i32> =
            (0..partitions).filter(|p| placement::leader_of(&meta, *p, &self.live) == Some(me)).collect();
        let mut acquired = Vec::new();
        for &p in &mine {
            let first = leases::first_lease(&meta, p);
            let path = leases::partition_lease_path(&self.settings.broker.data_dir, &meta, p);
            match leases::try_acquire(&self.settings.broker.data_dir, &path, me, first, true, &self.expired) {
                Ok(Some(lease)) => {
                    let (topic, log_config) = (handle.clone(), log_config.clone());
                    acquired.push(Acquired { topic, partition: p, log_config, lease });
                }
                Ok(None) => {
                    drop(acquired);
                    self.roll_back(&meta, &mine);
                    return Err(fail_at(p, "its lease is held by another broker".to_string()));
                }
                Err(e) => {
                    drop(acquired);
                    self.roll_back(&meta, &mine);
                    return Err(fail_at(p, e.to_string()));
                }
            }
        }
        let mut leaders = Vec::new();
        let mut failed = None;
        for (a, opened) in open_logs(&self.settings.broker.data_dir, acquired, false).into_iter().flatten() {
            match opened {
                Ok(partition) => leaders.push((a.partition, self.leader(&meta.name, a.partition, partition), a.lease)),
                Err(e) => failed = failed.or(Some((a.partition, e.to_string()))),
            }
        }
        if let Some((p, e)) = failed {
            drop(leaders);
            self.roll_back(&meta, &mine);
            return Err(fail_at(p, e));
        }
        for (p, leader, lease) in leaders {
            let addr = self.spawn_leader(leader);
            if let Some(cell) = usize::try_from(p).ok().and_then(|i| handle.partitions.get(i)) {
                cell.set(Some(addr));
            }
            let epoch = lease.record.epoch;
            self.held.insert((meta.name.clone(), p), lease);
            self.table_mut()
                .grant(Owned::Partition { topic: meta.name.clone(), partition: p }, Lease { node_id: me, epoch });
        }
        // A new topic counts against the file budget like one recovered at start.
        let _ = self.budget.take_topic(meta.partitions);
        tracing::info!(topic = %meta.name, partitions = meta.partitions, "created topic");
        self.topics.insert(meta.name.clone(), handle);
        Ok(meta)
    }
}
