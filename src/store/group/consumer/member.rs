//! A member of a consumer group (Kafka's ConsumerGroupMember): who it is, what it subscribes
//! to, its epochs and where its reconciliation stands.

use std::collections::{BTreeMap, BTreeSet};

use uuid::Uuid;

use super::{Assignment, Assignor, ConsumerConfig, TopicImage};
use crate::store::auth::acl::{self, Action};

/// Kafka's MemberState.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, serde::Serialize, serde::Deserialize)]
pub enum MemberState {
    /// Has its target assignment (at the assignment epoch).
    #[default]
    Stable,
    /// Must give partitions up before it moves on (it keeps its epoch until it does).
    UnrevokedPartitions,
    /// At the assignment epoch, but some of its target partitions are still owned by others.
    UnreleasedPartitions,
}

/// Serialized as Kafka keeps a member (store::group::consumer::stored); its timers are not
/// kept: they start again when the group is read back.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct ConsumerMember {
    pub member_id: String,
    pub instance_id: Option<String>,
    pub rack_id: Option<String>,
    pub client_id: String,
    pub client_host: String,
    pub subscribed_topic_names: Vec<String>,
    pub subscribed_topic_regex: Option<String>,
    pub server_assignor: Option<Assignor>,
    pub rebalance_timeout_ms: i32,
    pub member_epoch: i32,
    pub previous_member_epoch: i32,
    pub state: MemberState,
    /// The partitions it owns (and is told it owns).
    pub assigned: Assignment,
    /// The partitions it must revoke; still its own until it says it let them go.
    pub pending_revocation: Assignment,
    /// The member epoch at which it was given each partition it holds (`assigned` and
    /// `pending_revocation`): Kafka 4.4's assignment epochs (KIP-1251), against which a commit
    /// with an older member epoch is checked ([`Self::held_since`]). Members kept before this
    /// field have none: their current epoch stands for every partition.
    #[serde(default)]
    pub assignment_epochs: BTreeMap<Uuid, BTreeMap<i32, i32>>,
    /// When it is removed unless it heartbeats.
    #[serde(skip)]
    pub session_deadline_ms: u64,
    /// When it is removed unless it revoked what it must (set while UnrevokedPartitions).
    #[serde(skip)]
    pub rebalance_deadline_ms: Option<u64>,
    /// A classic member: when it is removed unless it sends SyncGroup (set by its JoinGroup,
    /// Kafka's consumerGroupSyncKey timer, its rebalance timeout).
    #[serde(skip)]
    pub classic_sync_deadline_ms: Option<u64>,
    /// A classic member told to rejoin: when it is removed unless it sends JoinGroup (Kafka's
    /// consumerGroupJoinKey timer, set if absent, its rebalance timeout).
    #[serde(skip)]
    pub classic_join_deadline_ms: Option<u64>,
    /// Set for a member using the classic protocol inside the consumer group (Kafka's
    /// ClassicMemberMetadata): it joins with JoinGroup / SyncGroup / Heartbeat.
    pub classic: Option<ClassicMemberMetadata>,
    /// The principal of its last ConsumerGroupHeartbeat (None before the first, or for a
    /// classic member): the authorizer's subject when its regex is resolved.
    #[serde(default)]
    pub principal: Option<String>,
}

/// What a classic member told in its JoinGroup (Kafka's ClassicMemberMetadata).
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct ClassicMemberMetadata {
    pub session_timeout_ms: i32,
    /// Its protocols (assignor names) with their Subscription bytes, in its order.
    pub protocols: Vec<(String, Vec<u8>)>,
}

/// Compiles a subscription regex with a bounded program size (a client's regex must not make
/// the coordinator build an unbounded automaton).
pub fn compile_regex(pattern: &str) -> Result<regex::Regex, regex::Error> {
    regex::RegexBuilder::new(&format!("^(?:{pattern})$")).size_limit(1 << 20).dfa_size_limit(1 << 20).build()
}

impl ConsumerMember {
    pub fn new(member_id: String) -> Self {
        ConsumerMember { member_id, ..Default::default() }
    }

    /// The topics of `image` it subscribes to: its names, and the names its regex matches.
    pub fn subscribed_topics(&self, image: &TopicImage) -> BTreeSet<String> {
        let mut out: BTreeSet<String> =
            self.subscribed_topic_names.iter().filter(|n| image.topics.contains_key(*n)).cloned().collect();
        if let Some(re) = self.subscribed_topic_regex.as_deref().and_then(|p| compile_regex(p).ok()) {
            out.extend(image.topics.keys().filter(|n| re.is_match(n) && self.may_describe(image, n)).cloned());
        }
        out
    }

    /// Whether a topic its regex matches is its to consume: with the authorizer on, only one its
    /// principal may describe (Kafka's TopicRegexResolver filters the matches so); a member whose
    /// principal is not known yet gets none until its next heartbeat tells it.
    fn may_describe(&self, image: &TopicImage, topic: &str) -> bool {
        let Some(acls) = &image.acls else { return true };
        let Some(principal) = &self.principal else { return false };
        acls.authorize(Action {
            principal,
            host: &self.client_host,
            operation: acl::OP_DESCRIBE,
            resource_type: acl::RESOURCE_TOPIC,
            name: topic,
        })
    }

    /// Its session, rebalance and classic join/sync deadlines.
    pub fn deadlines(&self) -> impl Iterator<Item = u64> {
        [
            Some(self.session_deadline_ms),
            self.rebalance_deadline_ms,
            self.classic_sync_deadline_ms,
            self.classic_join_deadline_ms,
        ]
        .into_iter()
        .flatten()
    }

    /// A classic member told to rejoin must do so within its rebalance timeout (Kafka's
    /// scheduleConsumerGroupJoinTimeoutIfAbsent: a pending timer is kept).
    pub fn expect_classic_rejoin(&mut self, now_ms: u64) {
        if self.classic_join_deadline_ms.is_none() {
            self.classic_join_deadline_ms = Some(now_ms.saturating_add(self.rebalance_timeout_ms.max(0) as u64));
        }
    }

    /// Whether it has its target assignment at `assignment_epoch`.
    pub fn is_reconciled_to(&self, assignment_epoch: i32) -> bool {
        self.state == MemberState::Stable && self.member_epoch == assignment_epoch
    }

    /// Kafka's ConsumerGroupMember.useClassicProtocol.
    pub fn uses_classic_protocol(&self) -> bool {
        self.classic.is_some()
    }

    /// The session timeout that applies: the classic member's own, else the group's.
    pub fn session_timeout_ms(&self, config: &ConsumerConfig) -> i32 {
        self.classic.as_ref().map_or(config.session_timeout_ms, |c| c.session_timeout_ms)
    }

    /// The member epoch since which it holds `partition` of `topic` (assigned or pending
    /// revocation); None when it does not hold it.
    pub fn held_since(&self, topic: Uuid, partition: i32) -> Option<i32> {
        let holds = |a: &Assignment| a.get(&topic).is_some_and(|ps| ps.contains(&partition));
        if !holds(&self.assigned) && !holds(&self.pending_revocation) {
            return None;
        }
        let kept = self.assignment_epochs.get(&topic).and_then(|ps| ps.get(&partition));
        Some(kept.copied().unwrap_or(self.member_epoch))
    }

    pub fn assigned_count(&self) -> usize {
        self.assigned.values().map(|p| p.len()).sum()
    }
}
