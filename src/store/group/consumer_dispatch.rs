//! The consumer-protocol side of [`Groups`]: which group id is a consumer group, the classic /
//! consumer type rules between them, ConsumerGroupHeartbeat and ConsumerGroupDescribe, the
//! member-epoch checks of the offset APIs, and the topic metadata the assignors read.
//!
//! A consumer group's committed offsets stay in its [`Group`] entry (whose classic state stays
//! Empty); its membership is the [`ConsumerGroup`] beside it.

use std::collections::BTreeSet;

use super::consumer::heartbeat::validate;
use super::consumer::{
    ConsumerError, ConsumerGroup, DescribedConsumerGroup, HeartbeatRequest, HeartbeatResponse, TopicImage, TopicInfo,
    LEAVE_EPOCH, LEAVE_STATIC_EPOCH,
};
use super::groups::consumer_config_for;
use super::protocol_migration::OnConsumerJoin;
use super::{Group, GroupError, Groups};

/// A group's protocol (ListGroups v5 `GroupType`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum GroupType {
    Classic,
    Consumer,
}

impl GroupType {
    pub fn name(self) -> &'static str {
        match self {
            GroupType::Classic => "classic",
            GroupType::Consumer => "consumer",
        }
    }
}

impl Groups {
    pub fn consumer_group(&self, group_id: &str) -> Option<&ConsumerGroup> {
        self.consumer.get(group_id)
    }

    pub fn group_type(&self, group_id: &str) -> GroupType {
        if self.consumer.contains_key(group_id) {
            GroupType::Consumer
        } else {
            GroupType::Classic
        }
    }

    /// Whether any consumer group has members (the caller then keeps the topic image fresh).
    pub fn has_consumer_members(&self) -> bool {
        self.consumer.values().any(|g| !g.is_empty())
    }

    /// The names the consumer groups subscribe to by name (what to look up for them).
    pub fn consumer_topic_names(&self) -> BTreeSet<String> {
        let members = self.consumer.values().flat_map(|g| g.members().values());
        members.flat_map(|m| m.subscribed_topic_names.iter().cloned()).collect()
    }

    /// A fresh image of the cluster's topics: groups whose subscribed topics changed (created,
    /// deleted, more partitions) get a new group epoch. Returns those groups.
    pub fn set_topics(&mut self, image: TopicImage) -> Vec<String> {
        self.image.topics = image.topics;
        let mut bumped = Vec::new();
        for (id, g) in self.consumer.iter_mut() {
            if g.on_metadata(&self.image) {
                bumped.push(id.clone());
            }
        }
        bumped
    }

    /// Topics a heartbeat's handler looked up just now: present (Some) or gone (None).
    pub fn merge_topics(&mut self, looked_up: Vec<(String, Option<TopicInfo>)>) {
        for (name, info) in looked_up {
            match info {
                Some(t) => self.image.topics.insert(name, t),
                None => self.image.topics.remove(&name),
            };
        }
    }

    pub fn topic_image(&self) -> &TopicImage {
        &self.image
    }

    /// The consumer group a non-leave heartbeat may use (Kafka's getOrMaybeCreateConsumerGroup,
    /// the rules of [`super::protocol_migration`]): created by a join (epoch 0); an Empty classic group
    /// is replaced by a new consumer group, its offsets kept (rule 1); a classic group with
    /// members is converted online when validateOnlineUpgrade passes, else GROUP_ID_NOT_FOUND
    /// with Kafka's message (rule 2); a heartbeat that is not a join on a classic group is
    /// GROUP_ID_NOT_FOUND "Group <id> is not a consumer group.".
    fn consumer_group_for(
        &mut self,
        now_ms: u64,
        group_id: &str,
        create: bool,
    ) -> Result<&mut ConsumerGroup, ConsumerError> {
        let not_consumer = || ConsumerError::GroupIdNotFound(format!("Group {group_id} is not a consumer group."));
        if !self.consumer.contains_key(group_id) {
            match self.groups.get_mut(group_id) {
                None if create => {
                    let g = Group::new(group_id, self.config.clone());
                    self.groups.insert(group_id.to_string(), g);
                }
                None => {
                    return Err(ConsumerError::GroupIdNotFound(format!("Consumer group {group_id} not found.")));
                }
                Some(_) if !create => return Err(not_consumer()),
                Some(g) => match g.on_consumer_join(self.config.migration_policy, self.config.consumer.max_size) {
                    OnConsumerJoin::ReplaceEmpty => {
                        tracing::info!(group = %group_id, "the Empty classic group is replaced by a consumer group (KIP-848 online migration); its offsets stay");
                        g.reset_membership();
                    }
                    OnConsumerJoin::Refuse(why) => {
                        tracing::info!(group = %group_id, reason = why.reason(), "cannot upgrade the classic group to a consumer group");
                        return Err(ConsumerError::GroupIdNotFound(format!(
                            "Cannot upgrade classic group {group_id} to consumer group because {}.",
                            why.reason()
                        )));
                    }
                    OnConsumerJoin::Upgrade => {
                        if self.convert_to_consumer_group(group_id, now_ms).is_err() {
                            tracing::warn!(group = %group_id, "cannot upgrade the classic group: the embedded consumer protocol is malformed");
                            return Err(ConsumerError::GroupIdNotFound(format!("Cannot upgrade classic group {group_id} to consumer group because the embedded consumer protocol is malformed.")));
                        }
                    }
                },
            }
            if !self.consumer.contains_key(group_id) {
                self.consumer.insert(group_id.to_string(), ConsumerGroup::new(group_id));
            }
        }
        self.consumer.get_mut(group_id).ok_or_else(not_consumer)
    }

    /// ConsumerGroupHeartbeat. `unique()` makes the member id of a v0 join without one.
    pub fn consumer_heartbeat(
        &mut self,
        now_ms: u64,
        group_id: &str,
        req: HeartbeatRequest,
        unique: impl FnOnce() -> String,
    ) -> Result<HeartbeatResponse, ConsumerError> {
        let config = consumer_config_for(&self.config.consumer, &self.group_configs, group_id);
        let assignor = validate(&req, &config)?;
        if req.member_epoch == LEAVE_EPOCH || req.member_epoch == LEAVE_STATIC_EPOCH {
            let g = self
                .consumer
                .get_mut(group_id)
                .ok_or_else(|| ConsumerError::GroupIdNotFound(format!("Group {group_id} is not a consumer group.")))?;
            let left = g.leave(&req);
            // The last consumer-protocol member leaving classic members behind: downgrade.
            if req.member_epoch == LEAVE_EPOCH && left.is_ok() {
                self.maybe_downgrade(group_id, 1, now_ms);
            }
            return left;
        }
        let member_id = if req.member_id.is_empty() { unique() } else { req.member_id.clone() };
        // First the group (an upgrade reads the topic image), then the heartbeat.
        self.consumer_group_for(now_ms, group_id, req.member_epoch == 0)?;
        let image = std::mem::take(&mut self.image);
        let result = self
            .consumer_group_for(now_ms, group_id, false)
            .and_then(|g| g.heartbeat(now_ms, &req, &member_id, assignor, &image, &config));
        self.image = image;
        result
    }

    /// ConsumerGroupDescribe of one group: a classic or unknown group is GROUP_ID_NOT_FOUND.
    pub fn consumer_describe(&self, group_id: &str) -> Result<DescribedConsumerGroup, ConsumerError> {
        let default = self.config.consumer.assignors.first().map_or("uniform", |a| a.name());
        match self.consumer.get(group_id) {
            Some(g) => Ok(g.describe(default)),
            None if self.groups.contains_key(group_id) => {
                Err(ConsumerError::GroupIdNotFound(format!("Group {group_id} is not a consumer group.")))
            }
            None => Err(ConsumerError::GroupIdNotFound(format!("Group {group_id} not found."))),
        }
    }

    /// Fires the session and rebalance timers of the consumer groups; returns the groups that
    /// lost members.
    pub fn consumer_tick(&mut self, now_ms: u64) -> Vec<String> {
        let mut changed = Vec::new();
        for (id, g) in self.consumer.iter_mut() {
            if g.next_deadline().is_some_and(|d| d <= now_ms) {
                let gone = g.expire_members(now_ms);
                if !gone.is_empty() {
                    tracing::info!(group = %id, members = ?gone, "consumer group members expired (session or rebalance timeout)");
                    changed.push((id.clone(), gone.len()));
                }
            }
        }
        for (id, removed) in &changed {
            self.maybe_downgrade(id, *removed, now_ms);
        }
        changed.into_iter().map(|(id, _)| id).collect()
    }

    /// A classic JoinGroup on an Empty consumer group ([`super::protocol_migration`] rule 3): it is
    /// replaced by a classic group, its offsets kept. (A consumer group with members takes the
    /// member as a classic member, rule 4, in [`super::mixed_mode`].)
    pub(super) fn classic_join_allowed(&mut self, group_id: &str) -> Result<(), GroupError> {
        match self.consumer.get(group_id) {
            Some(g) if !g.is_empty() => Err(GroupError::InconsistentGroupProtocol),
            Some(_) => {
                tracing::info!(group = %group_id, "the Empty consumer group is replaced by a classic group (KIP-848 online migration); its offsets stay");
                self.consumer.remove(group_id);
                if let Some(g) = self.groups.get_mut(group_id) {
                    g.reset_membership();
                }
                Ok(())
            }
            None => Ok(()),
        }
    }

    /// The member-epoch check of OffsetCommit / TxnOffsetCommit on a consumer group (None: the
    /// group is classic, its own checks apply).
    pub(super) fn consumer_commit_check(
        &self,
        group_id: &str,
        member_id: &str,
        epoch: i32,
        transactional: bool,
        offsets: &[super::OffsetCommit],
    ) -> Option<Result<(), GroupError>> {
        let g = self.consumer.get(group_id)?;
        // Kafka resolves a committed topic's id by name (KafkaApis), for the assignment epochs.
        let partitions: Vec<_> =
            offsets.iter().map(|o| (self.image.topics.get(&o.topic).map(|t| t.id), o.partition)).collect();
        Some(g.validate_offset_commit(member_id, epoch, transactional, &partitions))
    }

    /// The partitions of topics a non-empty consumer group subscribes to (OffsetDelete refuses them).
    pub(super) fn consumer_subscribed(&self, group_id: &str) -> Option<BTreeSet<String>> {
        let g = self.consumer.get(group_id).filter(|g| !g.is_empty())?;
        Some(g.members().values().flat_map(|m| m.subscribed_topics(&self.image)).collect())
    }
}
