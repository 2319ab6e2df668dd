//! What a consumer-protocol group (KIP-848) keeps across a restart or a move of its coordinator,
//! as Kafka keeps it in `__consumer_offsets` (ConsumerGroupMetadata, ConsumerGroupMemberMetadata,
//! ConsumerGroupTargetAssignment*, ConsumerGroupCurrentMemberAssignment): the group epoch, the
//! target assignment and its epoch, and each member with its subscription, member epoch, state
//! and current assignment. Written whenever one of them changes, before the answer that depends
//! on it; read back with every member's session starting again (and its rebalance timeout, if
//! it still has partitions to revoke), as Kafka's onLoaded schedules them, so members go on with
//! their heartbeats and commits at their member epochs.

use std::collections::BTreeMap;
use std::hash::{Hash, Hasher};

use serde::{Deserialize, Serialize};

use super::{Assignment, Assignor, ConsumerConfig, ConsumerGroup, ConsumerMember, MemberState, TopicInfo};

#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct StoredConsumerGroup {
    pub group_epoch: i32,
    pub assignment_epoch: i32,
    pub members: Vec<ConsumerMember>,
    pub target: BTreeMap<String, Assignment>,
    pub subscribed_metadata: BTreeMap<String, TopicInfo>,
    pub assignor: Option<Assignor>,
}

impl ConsumerGroup {
    /// What is kept of this group.
    pub fn stored(&self) -> StoredConsumerGroup {
        StoredConsumerGroup {
            group_epoch: self.group_epoch,
            assignment_epoch: self.assignment_epoch,
            members: self.members.values().cloned().collect(),
            target: self.target.clone(),
            subscribed_metadata: self.subscribed_metadata.clone(),
            assignor: self.assignor,
        }
    }

    /// A digest of what is kept: the caller writes the group when it changes across a call.
    /// (Timers are not kept, so a heartbeat that only renews a session changes nothing.)
    pub fn stored_digest(&self) -> u64 {
        let mut h = std::collections::hash_map::DefaultHasher::new();
        (self.group_epoch, self.assignment_epoch, &self.target, self.assignor).hash(&mut h);
        for m in self.members.values() {
            (&m.member_id, &m.instance_id, m.member_epoch, m.previous_member_epoch, m.state).hash(&mut h);
            (&m.assigned, &m.pending_revocation, &m.subscribed_topic_names, &m.subscribed_topic_regex).hash(&mut h);
            (m.server_assignor, m.rebalance_timeout_ms, m.classic.as_ref().map(|c| &c.protocols)).hash(&mut h);
        }
        for (name, t) in &self.subscribed_metadata {
            (name, t.id, t.partitions).hash(&mut h);
        }
        h.finish()
    }

    /// The group read back at `now_ms`: every member's session (and the rebalance timeout of
    /// one with partitions to revoke) starts again, as Kafka's coordinator does on load.
    pub fn from_stored(
        group_id: impl Into<String>,
        stored: StoredConsumerGroup,
        config: &ConsumerConfig,
        now_ms: u64,
    ) -> Self {
        let mut g = ConsumerGroup {
            group_id: group_id.into(),
            group_epoch: stored.group_epoch,
            assignment_epoch: stored.assignment_epoch,
            target: stored.target,
            subscribed_metadata: stored.subscribed_metadata,
            assignor: stored.assignor,
            ..Default::default()
        };
        for mut m in stored.members {
            let session = m.classic.as_ref().map_or(config.session_timeout_ms, |c| c.session_timeout_ms);
            m.session_deadline_ms = now_ms.saturating_add(session.max(0) as u64);
            m.rebalance_deadline_ms = (m.state == MemberState::UnrevokedPartitions)
                .then(|| now_ms.saturating_add(m.rebalance_timeout_ms.max(0) as u64));
            g.put_member(m);
        }
        g
    }
}
