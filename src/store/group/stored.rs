//! What a classic group keeps of its membership across a restart or a move of its coordinator:
//! Kafka's GroupMetadataValue (generation, protocol, leader, each member with its static id,
//! timeouts, subscription and assignment). Kafka writes it when a rebalance completes (the
//! leader's SyncGroup makes the group Stable), when a rebalance ends with no member (Empty),
//! when a static member takes its place again under a new member id without a rebalance, and
//! when a consumer group becomes a classic one; the answers that depend on it wait until it is
//! durable (the actor holds the group's answers meanwhile). A group is read back Stable with
//! those members (Empty without any), each member with a fresh session timeout, so members go
//! on with their heartbeats, commits and TxnOffsetCommits at their generation without a
//! rebalance (Kafka's GroupMetadataManager.replay and onLoaded).

use serde::{Deserialize, Serialize};

use super::membership::Member;
use super::{Group, GroupState};

/// The membership of a classic group as of its last completed rebalance.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct StoredMembership {
    pub generation_id: i32,
    pub protocol_name: Option<String>,
    pub leader_id: Option<String>,
    pub members: Vec<StoredMember>,
}

/// One member as Kafka's GroupMetadataValue.MemberMetadata has it: its subscription is its
/// metadata for the group's protocol.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct StoredMember {
    pub member_id: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub group_instance_id: Option<String>,
    pub client_id: String,
    pub client_host: String,
    pub session_timeout_ms: i32,
    pub rebalance_timeout_ms: i32,
    pub subscription: Vec<u8>,
    pub assignment: Vec<u8>,
}

impl Group {
    /// Records the membership as it is now as the one to keep (a rebalance completed, or a
    /// static member took its place again), to be written before the answers that depend on it.
    pub(super) fn store_membership(&mut self) {
        let protocol = self.protocol_name.clone().unwrap_or_default();
        let members = self
            .members
            .iter()
            .map(|m| StoredMember {
                member_id: m.member_id.clone(),
                group_instance_id: m.group_instance_id.clone(),
                client_id: m.client_id.clone(),
                client_host: m.client_host.clone(),
                session_timeout_ms: m.session_timeout_ms,
                rebalance_timeout_ms: m.rebalance_timeout_ms,
                subscription: m.metadata(&protocol),
                assignment: m.assignment.clone(),
            })
            .collect();
        self.stored = Some(StoredMembership {
            generation_id: self.generation_id,
            protocol_name: self.protocol_name.clone(),
            leader_id: self.leader_id.clone(),
            members,
        });
        self.stored_changed = true;
    }

    /// Whether the kept membership changed since the last call (the caller writes the group
    /// and holds its answers until that write is durable).
    pub fn take_stored_change(&mut self) -> bool {
        std::mem::take(&mut self.stored_changed)
    }

    /// The kept membership, as written.
    pub fn stored_membership(&self) -> Option<&StoredMembership> {
        self.stored.as_ref()
    }

    /// A group read back: Stable with its kept members (each with a fresh session timeout from
    /// `now`), or Empty at the kept generation when it had none.
    pub(super) fn restore_membership(&mut self, stored: StoredMembership, now: u64) {
        self.generation_id = stored.generation_id;
        self.protocol_name = stored.protocol_name.clone();
        self.leader_id = stored.leader_id.clone();
        let protocol_type = self.protocol_type.clone().unwrap_or_default();
        let protocol = stored.protocol_name.clone().unwrap_or_default();
        self.members = stored
            .members
            .iter()
            .map(|s| {
                let mut m = Member {
                    member_id: s.member_id.clone(),
                    group_instance_id: s.group_instance_id.clone(),
                    client_id: s.client_id.clone(),
                    client_host: s.client_host.clone(),
                    session_timeout_ms: s.session_timeout_ms,
                    rebalance_timeout_ms: s.rebalance_timeout_ms,
                    protocol_type: protocol_type.clone(),
                    protocols: vec![(protocol.clone(), s.subscription.clone())],
                    assignment: s.assignment.clone(),
                    last_heartbeat_ms: now,
                    awaiting_join: None,
                    awaiting_sync: None,
                    is_new: false,
                    heartbeat_deadline_ms: 0,
                };
                m.touch(now);
                m
            })
            .collect();
        self.state = if self.members.is_empty() { GroupState::Empty } else { GroupState::Stable };
        if self.members.is_empty() {
            self.protocol_name = None;
            self.leader_id = None;
        }
        self.stored = Some(stored);
    }
}
