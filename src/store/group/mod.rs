//! The consumer-group coordinator's functional core (classic protocol; Kafka's GroupCoordinator
//! and GroupMetadataManager logic), one file per Kafka concept:
//!
//! * this file: the [`Group`] state (generation, protocol, members, offsets), [`GroupConfig`],
//!   [`GroupError`] and the snapshot that survives a restart;
//! * [`membership`]: members, SyncGroup, Heartbeat and LeaveGroup; [`join`]: JoinGroup (with
//!   static membership); [`rebalance`]: generations, the rebalance and session timers;
//! * [`offsets`]: OffsetCommit / OffsetFetch / OffsetDelete and offset expiration;
//!   [`txn_commit`]: TxnOffsetCommit's pending offsets (eos-rules 56-59);
//! * [`admin`]: ListGroups / DescribeGroups / DeleteGroups;
//! * [`consumer`]: a consumer group (the KIP-848 protocol), and [`consumer_dispatch`]: which group
//!   is which type and the requests that go to a consumer group;
//! * [`subscription`]: Kafka's ConsumerProtocol, the Subscription and Assignment bytes of a
//!   classic member, as far as the coordinator reads them;
//! * [`protocol_migration`]: the online upgrade / downgrade between the protocols (KIP-848), and
//!   [`mixed_mode`]: classic members inside a consumer group (mixed mode) and the conversions;
//! * [`groups`]: every group of the coordinator, which group a request goes to, what changed;
//! * [`stored`]: what a classic group keeps of its membership across a restart.
//!
//! No I/O, no clock: every call gets `now_ms` from the caller. Requests that must wait
//! (JoinGroup during PreparingRebalance, follower SyncGroup during CompletingRebalance) are
//! parked under the caller's opaque `token`; their answers come out as [`MemberAnswer`]s of later
//! calls or of [`Group::tick`]. Call `tick` at [`Group::next_deadline`] (or periodically).
//! Offsets ([`OffsetStore`]), the generation and a classic group's membership as of its last
//! completed rebalance ([`GroupSnapshot`], [`stored`]) are serde-serializable; a restart reads a
//! classic group back Stable with those members; a consumer-protocol group comes back with its
//! members, epochs and assignments ([`consumer::stored`]).

use crate::error_code::ResponseError;
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet};

pub mod admin;
pub mod consumer;
pub mod consumer_dispatch;
pub mod groups;
pub mod join;
pub mod membership;
pub mod mixed_mode;
pub mod offsets;
pub mod offsets_producers;
pub mod protocol_migration;
pub mod rebalance;
pub mod stored;
pub mod subscription;
pub mod txn_commit;

#[cfg(test)]
mod tests;

pub use admin::{GroupDescription, MemberDescription};
pub use consumer_dispatch::GroupType;
pub use groups::{unwritten, Expired, GroupAdminAnswer, GroupAdminOp, GroupOp, Groups};
pub use membership::{
    JoinMember, JoinRequest, JoinResponse, LeaveMember, LeaveMemberResponse, LeaveResponse, Member, MemberAnswer,
    Response, SyncRequest, SyncResponse,
};
pub use offsets::{FetchedOffset, OffsetCommit, OffsetEntry, OffsetStore, PartitionOffsets};
pub use protocol_migration::MigrationPolicy;
pub use stored::{StoredMember, StoredMembership};
pub use subscription::subscribed_topics;
pub use txn_commit::{txn_commit_member, PendingTxn};

macro_rules! group_errors {
    ($($name:ident, $msg:literal;)*) => {
        /// Kafka error codes this state machine produces (`code()` gives the wire value).
        #[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
        pub enum GroupError { $(#[error($msg)] $name,)* }
        impl GroupError {
            /// The Kafka error this is.
            pub fn error(self) -> ResponseError { match self { $(GroupError::$name => ResponseError::$name,)* } }
            /// The wire code.
            pub fn code(self) -> i16 { self.error().code() }
        }
        impl From<GroupError> for ResponseError {
            fn from(e: GroupError) -> ResponseError { e.error() }
        }
    };
}

group_errors! {
    CoordinatorNotAvailable, "COORDINATOR_NOT_AVAILABLE";
    NotCoordinator, "NOT_COORDINATOR";
    InvalidGroupId, "INVALID_GROUP_ID";
    IllegalGeneration, "ILLEGAL_GENERATION";
    InconsistentGroupProtocol, "INCONSISTENT_GROUP_PROTOCOL";
    UnknownMemberId, "UNKNOWN_MEMBER_ID";
    InvalidSessionTimeout, "INVALID_SESSION_TIMEOUT";
    RebalanceInProgress, "REBALANCE_IN_PROGRESS";
    NonEmptyGroup, "NON_EMPTY_GROUP";
    GroupIdNotFound, "GROUP_ID_NOT_FOUND";
    MemberIdRequired, "MEMBER_ID_REQUIRED";
    GroupMaxSizeReached, "GROUP_MAX_SIZE_REACHED";
    FencedInstanceId, "FENCED_INSTANCE_ID";
    GroupSubscribedToTopic, "GROUP_SUBSCRIBED_TO_TOPIC";
    UnstableOffsetCommit, "UNSTABLE_OFFSET_COMMIT";
    StaleMemberEpoch, "STALE_MEMBER_EPOCH";
    UnknownServerError, "UNKNOWN_SERVER_ERROR";
    InvalidProducerEpoch, "INVALID_PRODUCER_EPOCH";
    GroupAuthorizationFailed, "GROUP_AUTHORIZATION_FAILED";
    TopicAuthorizationFailed, "TOPIC_AUTHORIZATION_FAILED";
}

/// Wire code of an optional error (0 = NONE).
pub fn error_code(e: Option<GroupError>) -> i16 {
    crate::error_code::code(e.map(GroupError::error))
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub enum GroupState {
    #[default]
    Empty,
    PreparingRebalance,
    CompletingRebalance,
    Stable,
    Dead,
}

impl GroupState {
    /// Name as used by DescribeGroups / ListGroups.
    pub fn name(self) -> &'static str {
        match self {
            GroupState::Empty => "Empty",
            GroupState::PreparingRebalance => "PreparingRebalance",
            GroupState::CompletingRebalance => "CompletingRebalance",
            GroupState::Stable => "Stable",
            GroupState::Dead => "Dead",
        }
    }
}

#[derive(Debug, Clone)]
pub struct GroupConfig {
    /// group.initial.rebalance.delay.ms
    pub initial_rebalance_delay_ms: u64,
    /// group.min.session.timeout.ms / group.max.session.timeout.ms
    pub min_session_timeout_ms: i32,
    pub max_session_timeout_ms: i32,
    /// group.max.size (members + pending members)
    pub max_size: usize,
    /// How long a new member's parked JoinGroup may wait (Kafka: 5 minutes).
    pub new_member_join_timeout_ms: u64,
    /// offsets.retention.minutes, in ms: committed offsets of an Empty group expire this long
    /// after their commit.
    pub offsets_retention_ms: u64,
    /// The consumer group protocol's settings (group.consumer.*).
    pub consumer: consumer::ConsumerConfig,
    /// group.consumer.migration.policy
    pub migration_policy: MigrationPolicy,
    /// producer.id.expiration.ms: how long the offsets partitions remember an idle producer
    /// ([`offsets_producers`]).
    pub producer_id_expiration_ms: i64,
    /// The cluster's ACLs when the authorizer is on (KIP-848 regex subscriptions resolve to the
    /// topics a member may describe).
    pub acls: Option<crate::store::auth::acl::SharedAcls>,
}

impl Default for GroupConfig {
    fn default() -> Self {
        GroupConfig {
            initial_rebalance_delay_ms: 3000,
            min_session_timeout_ms: 6000,
            max_session_timeout_ms: 1_800_000,
            max_size: usize::MAX,
            new_member_join_timeout_ms: 300_000,
            offsets_retention_ms: 7 * 24 * 3600 * 1000,
            consumer: consumer::ConsumerConfig::default(),
            migration_policy: MigrationPolicy::default(),
            producer_id_expiration_ms: 86_400_000,
            acls: None,
        }
    }
}

/// Everything that survives a restart.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct GroupSnapshot {
    pub generation_id: i32,
    pub protocol_type: Option<String>,
    pub offsets: OffsetStore,
    /// Set for a consumer-protocol group: its group epoch.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub consumer_group_epoch: Option<i32>,
    /// A consumer-protocol group's members and assignments ([`consumer::stored`]); absent in
    /// what kaas wrote before it kept them (the group comes back with its epoch only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub consumer: Option<consumer::stored::StoredConsumerGroup>,
    /// A classic group's membership as of its last completed rebalance ([`stored`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub classic: Option<StoredMembership>,
}

#[derive(Debug, Clone, Default)]
pub struct Group {
    group_id: String,
    config: GroupConfig,
    state: GroupState,
    generation_id: i32,
    protocol_type: Option<String>,
    protocol_name: Option<String>,
    leader_id: Option<String>,
    /// In join order (leader fallback = first member).
    members: Vec<Member>,
    /// Member ids handed out with MEMBER_ID_REQUIRED -> expiry deadline.
    pending_members: BTreeMap<String, u64>,
    join_deadline_ms: Option<u64>,
    /// Some while the initial (Empty-group) delayed join runs: remaining rebalance budget.
    initial_delay_remaining_ms: Option<u64>,
    new_member_added: bool,
    pending_sync: BTreeSet<String>,
    sync_deadline_ms: Option<u64>,
    offsets: OffsetStore,
    /// The membership kept across a restart ([`stored`]), and whether it changed since the
    /// caller last wrote it.
    stored: Option<StoredMembership>,
    stored_changed: bool,
}

impl Group {
    pub fn new(group_id: impl Into<String>, config: GroupConfig) -> Self {
        Self::from_snapshot(group_id, config, GroupSnapshot::default(), 0)
    }

    /// Rebuild a group after a restart: generation and offsets kept; a classic group's kept
    /// membership ([`stored`]) makes it Stable with those members, their sessions starting at
    /// `now_ms`; without one it is Empty.
    pub fn from_snapshot(group_id: impl Into<String>, config: GroupConfig, snap: GroupSnapshot, now_ms: u64) -> Self {
        let GroupSnapshot { generation_id, protocol_type, offsets, classic, consumer_group_epoch, .. } = snap;
        let mut g =
            Group { group_id: group_id.into(), config, generation_id, protocol_type, offsets, ..Default::default() };
        // A consumer-protocol group's members are its own (not kept).
        if let (Some(stored), None) = (classic, consumer_group_epoch) {
            g.restore_membership(stored, now_ms);
        }
        g
    }

    pub fn snapshot(&self) -> GroupSnapshot {
        GroupSnapshot {
            generation_id: self.generation_id,
            protocol_type: self.protocol_type.clone(),
            offsets: self.offsets.clone(),
            consumer_group_epoch: None,
            consumer: None,
            classic: self.stored.clone(),
        }
    }

    pub fn group_id(&self) -> &str {
        &self.group_id
    }
    pub fn state(&self) -> GroupState {
        self.state
    }
    pub fn generation_id(&self) -> i32 {
        self.generation_id
    }
    pub fn protocol_type(&self) -> Option<&str> {
        self.protocol_type.as_deref()
    }
    pub fn protocol_name(&self) -> Option<&str> {
        self.protocol_name.as_deref()
    }
    pub fn leader(&self) -> Option<&str> {
        self.leader_id.as_deref()
    }
    pub fn members(&self) -> &[Member] {
        &self.members
    }
    pub fn offsets(&self) -> &OffsetStore {
        &self.offsets
    }
}

/// The group id check every group API makes before anything else (Kafka's GroupCoordinatorService,
/// `isGroupIdNotEmpty`): an empty id is INVALID_GROUP_ID. TxnOffsetCommit makes it before the
/// transaction membership of eos-rules 58, so an empty id adds no partition to the transaction.
pub fn validate_group_id(group_id: &str) -> Result<(), GroupError> {
    if group_id.is_empty() {
        return Err(GroupError::InvalidGroupId);
    }
    Ok(())
}
