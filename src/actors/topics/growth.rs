//! CreatePartitions in the TopicRegistry: the rules are store::create_partitions'; here the
//! topic file is rewritten (the commit point, under the topics lock the brokers sharing the disk
//! take) and the new partitions this broker should lead are opened at once. Peers learn the new
//! count from the file on their next membership tick (`grow`).

use std::sync::atomic::Ordering;
use std::sync::Arc;

use actix::{Context, Handler};

use super::{LocalActor, PartitionLeader, TopicHandle, TopicRegistry};
use crate::actors::messages::{CreatePartitions, TopicFailure};
use crate::error_code::ResponseError;
use crate::store::create_partitions::{self as rules, CreatePartitionsError};
use crate::store::leases;
use crate::store::topics::{self, TopicMeta, TopicsLock, TOPICS_LOCK_WAIT};

/// An empty message is answered as none (store::create_partitions::CreatePartitionsError::message).
fn refused(e: CreatePartitionsError) -> TopicFailure {
    TopicFailure { error_code: e.code(), message: e.message().unwrap_or_default() }
}

fn storage(what: &str, e: impl std::fmt::Display) -> TopicFailure {
    TopicFailure { error_code: ResponseError::KafkaStorageError.code(), message: format!("{what}: {e}") }
}

impl TopicHandle {
    /// The handle of the topic with `meta.partitions` partitions: the existing partitions keep
    /// their cells (their leaders serve on untouched), the new ones start empty; this handle is
    /// superseded.
    fn grown(&self, meta: TopicMeta) -> TopicHandle {
        let mut cells: Vec<LocalActor<PartitionLeader>> = self.partitions.iter().cloned().collect();
        let count = usize::try_from(meta.partitions).unwrap_or(0);
        cells.resize_with(count.max(cells.len()), LocalActor::default);
        self.superseded.store(true, Ordering::Release);
        TopicHandle { meta, partitions: Arc::new(cells), limits: self.limits.clone(), superseded: Arc::default() }
    }
}

impl TopicRegistry {
    /// Serves the topic `meta` (same id as the one served) with the partitions its file now
    /// has: the existing leaders serve on, the new partitions are claimed by the caller or the
    /// next tick. `bounded`: a peer's growth counts against `max_partitions` like a topic read at
    /// start (what does not fit is not served); this broker's own was checked before.
    pub(super) fn grow(&mut self, meta: TopicMeta, bounded: bool) {
        let Some(h) = self.topics.get(&meta.name) else { return };
        let served = h.meta.partitions;
        if meta.partitions <= served {
            return;
        }
        let taken = self.budget.take_topic(meta.partitions - served);
        let count = if bounded { served + taken } else { meta.partitions };
        if count == served {
            return;
        }
        tracing::info!(topic = %meta.name, from = served, to = count, "partitions added");
        let grown = h.grown(TopicMeta { partitions: count, ..meta });
        self.topics.insert(grown.meta.name.clone(), grown);
    }

    fn create_partitions(&mut self, msg: CreatePartitions) -> Result<TopicMeta, TopicFailure> {
        let data_dir = self.settings.broker.data_dir.clone();
        rules::check_not_internal(&msg.name).map_err(refused)?;
        if self.deleting.contains(&msg.name) {
            return Err(refused(CreatePartitionsError::UnknownTopic));
        }
        // Read, check and rewrite the file with no other broker changing or deleting it between.
        let lock = match TopicsLock::acquire(&data_dir, TOPICS_LOCK_WAIT) {
            Ok(Some(lock)) => lock,
            Ok(None) => {
                return Err(TopicFailure {
                    error_code: ResponseError::RequestTimedOut.code(),
                    message: "Another broker is changing the topics; try again.".into(),
                })
            }
            Err(e) => return Err(storage("Could not take the topics lock", e)),
        };
        // The file is the truth: a peer may have created or grown the topic since the last tick.
        let on_disk = match topics::load_one(&data_dir, &msg.name) {
            Ok(Some(meta)) => meta,
            Ok(None) => return Err(refused(CreatePartitionsError::UnknownTopic)),
            Err(e) => return Err(storage("Could not read the topic", e)),
        };
        let current = on_disk.partitions;
        let additional = rules::partitions_to_add(&msg.name, current, msg.count).map_err(refused)?;
        if let Some(assignments) = &msg.assignments {
            rules::check_assignments(&msg.name, on_disk.placement, current, additional, assignments, &self.live)
                .map_err(refused)?;
        }
        let limit = |e| refused(CreatePartitionsError::Limit(e));
        topics::check_request_records(usize::try_from(additional).unwrap_or(usize::MAX)).map_err(limit)?;
        topics::check_broker_limit(self.partition_count(), additional, self.settings.log.max_partitions)
            .map_err(limit)?;
        let grown = rules::grown(&on_disk, msg.count, &self.live);
        if msg.validate_only {
            return Ok(grown);
        }
        // Left-overs of an older topic of this name that nobody removed (its partitions led by a
        // broker that was dead when it was deleted): the new partitions start empty, at their
        // own first leases. Nobody serves these numbers: the file does not have them yet.
        let new: Vec<i32> = (current..msg.count).collect();
        leases::remove_partition_leases(&data_dir, &msg.name, on_disk.id, &new)
            .map_err(|e| storage("Could not remove old lease files", e))?;
        topics::remove_foreign_partitions(&data_dir, &msg.name, on_disk.id, &new)
            .map_err(|e| storage("Could not remove old partition directories", e))?;
        topics::replace(&data_dir, &grown, &lock).map_err(|e| storage("Could not save the topic", e))?;
        drop(lock);
        match self.topics.get(&grown.name) {
            Some(h) if h.meta.id == grown.id => self.grow(grown.clone(), false),
            _ => {
                self.register(grown.clone());
            }
        }
        // The new partitions placed here open now (empty logs); the others are granted to the
        // peers placement names, which open them on their next tick.
        let mut acquired = Vec::new();
        self.claim_topic(&grown.name, None, &mut acquired);
        self.start_acquired(acquired);
        tracing::info!(topic = %grown.name, from = current, to = grown.partitions, "created partitions");
        Ok(grown)
    }
}

impl Handler<CreatePartitions> for TopicRegistry {
    type Result = Result<TopicMeta, TopicFailure>;

    fn handle(&mut self, msg: CreatePartitions, _: &mut Context<Self>) -> Self::Result {
        self.create_partitions(msg)
    }
}
