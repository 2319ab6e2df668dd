//! The consumer group protocol (KIP-848: ConsumerGroupHeartbeat, ConsumerGroupDescribe), as
//! Apache Kafka's GroupMetadataManager / ConsumerGroup / CurrentAssignmentBuilder run it, one
//! file per concept:
//!
//! * this file: the [`ConsumerGroup`] state (group epoch, target assignment epoch, members,
//!   partition owners), [`ConsumerConfig`], [`ConsumerError`] and the [`TopicImage`] it assigns from;
//! * [`member`]: a member, its subscription and its reconciliation state;
//! * [`assignor`]: the `uniform` and `range` server-side assignors;
//! * [`reconcile`]: the member's next assignment (revoke first, then assign; Kafka's
//!   CurrentAssignmentBuilder);
//! * [`heartbeat`]: the heartbeat's validation, join, fencing, leave and the session timers;
//! * [`commit`]: OffsetCommit / OffsetFetch / TxnOffsetCommit validation with member epochs;
//! * [`describe`]: ConsumerGroupDescribe and the group state names.
//!
//! No I/O, no clock: the caller passes `now_ms` and the topic metadata. As kaas's classic groups,
//! membership lives in memory only (Apache Kafka writes it to `__consumer_offsets`): after a
//! restart the group keeps its epoch (written with its offsets) but no member, and members that
//! heartbeat get UNKNOWN_MEMBER_ID and rejoin.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use uuid::Uuid;

use crate::error_code::ResponseError;
use crate::store::auth::acl::SharedAcls;

pub mod assignor;
pub mod classic_members;
pub mod commit;
pub mod describe;
pub mod heartbeat;
pub mod member;
pub mod reconcile;
pub mod stored;

#[cfg(test)]
mod tests;

pub use assignor::Assignor;
pub use describe::{ConsumerGroupState, DescribedConsumerGroup, DescribedMember};
pub use heartbeat::{HeartbeatRequest, HeartbeatResponse};
pub use member::{ClassicMemberMetadata, ConsumerMember, MemberState};

/// Partitions by topic id.
pub type Assignment = BTreeMap<Uuid, BTreeSet<i32>>;

/// Member epoch of a leave request (Kafka's LEAVE_GROUP_MEMBER_EPOCH).
pub const LEAVE_EPOCH: i32 = -1;
/// Member epoch of a static member leaving for a while (LEAVE_GROUP_STATIC_MEMBER_EPOCH).
pub const LEAVE_STATIC_EPOCH: i32 = -2;
/// From this ConsumerGroupHeartbeat version the client generates its member id (KIP-1082).
pub const CLIENT_MEMBER_ID_VERSION: i16 = 1;

/// Errors of the consumer group protocol; each is the Kafka error Apache Kafka answers.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ConsumerError {
    #[error("{0}")]
    InvalidRequest(String),
    #[error("{0}")]
    GroupIdNotFound(String),
    #[error("{0}")]
    UnknownMemberId(String),
    #[error("{0}")]
    FencedMemberEpoch(String),
    #[error("{0}")]
    FencedInstanceId(String),
    #[error("{0}")]
    UnreleasedInstanceId(String),
    #[error("{0}")]
    GroupMaxSizeReached(String),
    #[error("{0}")]
    UnsupportedAssignor(String),
    #[error("{0}")]
    InvalidRegularExpression(String),
    /// The group's state could not be written before the answer (store::group::consumer::stored):
    /// fenced or a storage error, NOT_COORDINATOR as Kafka answers those.
    #[error("{0}")]
    NotCoordinator(String),
}

impl ConsumerError {
    pub fn error(&self) -> ResponseError {
        match self {
            ConsumerError::InvalidRequest(_) => ResponseError::InvalidRequest,
            ConsumerError::GroupIdNotFound(_) => ResponseError::GroupIdNotFound,
            ConsumerError::UnknownMemberId(_) => ResponseError::UnknownMemberId,
            ConsumerError::FencedMemberEpoch(_) => ResponseError::FencedMemberEpoch,
            ConsumerError::FencedInstanceId(_) => ResponseError::FencedInstanceId,
            ConsumerError::UnreleasedInstanceId(_) => ResponseError::UnreleasedInstanceId,
            ConsumerError::GroupMaxSizeReached(_) => ResponseError::GroupMaxSizeReached,
            ConsumerError::UnsupportedAssignor(_) => ResponseError::UnsupportedAssignor,
            ConsumerError::InvalidRegularExpression(_) => ResponseError::InvalidRegularExpression,
            ConsumerError::NotCoordinator(_) => ResponseError::NotCoordinator,
        }
    }
    pub fn code(&self) -> i16 {
        self.error().code()
    }
}

/// Kafka's group.consumer.* settings.
#[derive(Debug, Clone)]
pub struct ConsumerConfig {
    /// group.consumer.heartbeat.interval.ms
    pub heartbeat_interval_ms: i32,
    /// group.consumer.session.timeout.ms
    pub session_timeout_ms: i32,
    /// group.consumer.max.size (Kafka: 2147483647; kaas bounds it, see docs/configuration.md).
    pub max_size: usize,
    /// group.consumer.assignors; the first is the default.
    pub assignors: Vec<Assignor>,
}

impl Default for ConsumerConfig {
    fn default() -> Self {
        ConsumerConfig {
            heartbeat_interval_ms: 5000,
            session_timeout_ms: 45_000,
            max_size: 10_000,
            assignors: vec![Assignor::Uniform, Assignor::Range],
        }
    }
}

/// A topic as the coordinator sees it in the cluster metadata.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct TopicInfo {
    pub id: Uuid,
    pub partitions: i32,
}

/// The cluster's topics (Kafka's metadata image), by name.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct TopicImage {
    pub topics: BTreeMap<String, TopicInfo>,
    /// The cluster's ACLs when the authorizer is on: a regex subscription resolves to the topics
    /// the member may describe ([`ConsumerMember::subscribed_topics`]).
    pub acls: Option<SharedAcls>,
}

impl TopicImage {
    pub fn name_of(&self, id: Uuid) -> Option<&str> {
        self.topics.iter().find(|(_, t)| t.id == id).map(|(n, _)| n.as_str())
    }
    /// Topic names by id, for answers that name the assigned topics.
    pub fn names(&self) -> HashMap<Uuid, String> {
        self.topics.iter().map(|(n, t)| (t.id, n.clone())).collect()
    }
}

/// One consumer group (Kafka's ConsumerGroup).
#[derive(Debug, Clone, Default)]
pub struct ConsumerGroup {
    pub(crate) group_id: String,
    pub(crate) group_epoch: i32,
    pub(crate) assignment_epoch: i32,
    pub(crate) members: BTreeMap<String, ConsumerMember>,
    /// Static members: instance id -> member id.
    pub(crate) static_members: BTreeMap<String, String>,
    /// The target assignment of each member (computed at `assignment_epoch`).
    pub(crate) target: BTreeMap<String, Assignment>,
    /// The epoch of the member that owns each partition (assigned or pending revocation).
    pub(crate) partition_epochs: HashMap<(Uuid, i32), i32>,
    /// The subscribed topics' metadata the target assignment was computed with.
    pub(crate) subscribed_metadata: BTreeMap<String, TopicInfo>,
    /// The assignor the target assignment was computed with.
    pub(crate) assignor: Option<Assignor>,
}

impl ConsumerGroup {
    pub fn new(group_id: impl Into<String>) -> Self {
        ConsumerGroup { group_id: group_id.into(), ..Default::default() }
    }

    /// A group read back after a restart: its epoch, no member.
    pub fn restored(group_id: impl Into<String>, group_epoch: i32) -> Self {
        ConsumerGroup { group_id: group_id.into(), group_epoch, assignment_epoch: group_epoch, ..Default::default() }
    }

    pub fn group_id(&self) -> &str {
        &self.group_id
    }
    pub fn group_epoch(&self) -> i32 {
        self.group_epoch
    }
    pub fn assignment_epoch(&self) -> i32 {
        self.assignment_epoch
    }
    pub fn members(&self) -> &BTreeMap<String, ConsumerMember> {
        &self.members
    }
    pub fn member(&self, member_id: &str) -> Option<&ConsumerMember> {
        self.members.get(member_id)
    }
    pub fn is_empty(&self) -> bool {
        self.members.is_empty()
    }
    pub fn target_of(&self, member_id: &str) -> Option<&Assignment> {
        self.target.get(member_id)
    }
    /// The epoch of the member owning `partition`, or -1 when it is free.
    pub fn partition_epoch(&self, topic: Uuid, partition: i32) -> i32 {
        self.partition_epochs.get(&(topic, partition)).copied().unwrap_or(-1)
    }

    /// Puts `member` in place of its previous version, moving the partition owners along.
    pub(crate) fn put_member(&mut self, member: ConsumerMember) {
        if let Some(old) = self.members.remove(&member.member_id) {
            self.release_partitions(&old);
        }
        for (topic, parts) in member.assigned.iter().chain(member.pending_revocation.iter()) {
            for p in parts {
                self.partition_epochs.insert((*topic, *p), member.member_epoch);
            }
        }
        if let Some(instance) = &member.instance_id {
            self.static_members.insert(instance.clone(), member.member_id.clone());
        }
        self.members.insert(member.member_id.clone(), member);
    }

    fn release_partitions(&mut self, member: &ConsumerMember) {
        for (topic, parts) in member.assigned.iter().chain(member.pending_revocation.iter()) {
            for p in parts {
                self.partition_epochs.remove(&(*topic, *p));
            }
        }
    }

    /// Removes a member (left, fenced or expired): its partitions are free, the group epoch is
    /// bumped so the next heartbeat computes a new target assignment.
    pub(crate) fn remove_member(&mut self, member_id: &str) -> Option<ConsumerMember> {
        let member = self.members.remove(member_id)?;
        self.release_partitions(&member);
        if let Some(instance) = &member.instance_id {
            if self.static_members.get(instance).is_some_and(|m| m == member_id) {
                self.static_members.remove(instance);
            }
        }
        self.target.remove(member_id);
        self.group_epoch += 1;
        Some(member)
    }

    /// The topics any member subscribes to, as they are in `image` (names and regexes).
    pub fn subscription_metadata(&self, image: &TopicImage) -> BTreeMap<String, TopicInfo> {
        let mut out = BTreeMap::new();
        for m in self.members.values() {
            for name in m.subscribed_topics(image) {
                if let Some(t) = image.topics.get(&name) {
                    out.insert(name, *t);
                }
            }
        }
        out
    }

    /// A metadata change (topic created, deleted, partitions added) that touches the group's
    /// subscription bumps the group epoch. Returns whether it did.
    pub fn on_metadata(&mut self, image: &TopicImage) -> bool {
        let now = self.subscription_metadata(image);
        if now != self.subscribed_metadata {
            self.subscribed_metadata = now;
            if !self.members.is_empty() {
                self.group_epoch += 1;
                return true;
            }
        }
        false
    }

    /// The assignor of the group: the one most members ask for (ties: the name first in
    /// `config.assignors`), else the default (Kafka's preferred server assignor).
    pub fn preferred_assignor(&self, config: &ConsumerConfig) -> Assignor {
        let default = config.assignors.first().copied().unwrap_or(Assignor::Uniform);
        let mut counts: BTreeMap<usize, usize> = BTreeMap::new();
        for m in self.members.values() {
            if let Some(i) = m.server_assignor.and_then(|a| config.assignors.iter().position(|x| *x == a)) {
                *counts.entry(i).or_default() += 1;
            }
        }
        let best = counts.iter().max_by(|a, b| a.1.cmp(b.1).then(b.0.cmp(a.0))).map(|(i, _)| *i);
        best.and_then(|i| config.assignors.get(i).copied()).unwrap_or(default)
    }

    /// Recomputes the target assignment of every member when the group epoch moved past the
    /// assignment epoch (Kafka's updateTargetAssignment).
    pub fn maybe_update_target(&mut self, image: &TopicImage, config: &ConsumerConfig) {
        if self.group_epoch <= self.assignment_epoch && self.target.len() == self.members.len() {
            return;
        }
        let assignor = self.preferred_assignor(config);
        let subscriptions: BTreeMap<String, BTreeSet<String>> =
            self.members.iter().map(|(id, m)| (id.clone(), m.subscribed_topics(image))).collect();
        self.target = assignor.assign(&subscriptions, image, &self.target);
        self.assignment_epoch = self.group_epoch;
        self.assignor = Some(assignor);
    }
}
