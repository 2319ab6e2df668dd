//! KIP-848 mixed mode at the coordinator (Apache Kafka's GroupMetadataManager): classic requests
//! sent to a consumer group, the online upgrade of a classic group with members
//! (`convertToConsumerGroup`, `ConsumerGroup.fromClassicGroup`) and the online downgrade when
//! only classic members are left (`validateOnlineDowngradeWithFencedMembers`,
//! `convertToClassicGroup`, `ClassicGroup.fromConsumerGroup`). The per-member rules are in
//! [`super::consumer::classic_members`].

use super::consumer::classic_members::{by_id, named, CONSUMER_PROTOCOL_TYPE};
use super::consumer::{ClassicMemberMetadata, ConsumerGroup, ConsumerMember, MemberState, TopicImage};
use super::groups::consumer_config_for;
use super::membership::{reply, JoinResponse, LeaveResponse, Member, MemberAnswer, Response, SyncResponse};
use super::subscription::{deserialize_assignment, deserialize_subscription, serialize_assignment};
use super::{Group, GroupError, GroupOp, GroupState, Groups};

/// Why a classic group with members could not be converted (Kafka's convertToConsumerGroup
/// catches a SchemaException of the embedded protocol).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MalformedProtocol;

impl ConsumerGroup {
    /// Kafka's ConsumerGroup.fromClassicGroup: group epoch and target assignment epoch = the
    /// generation; every member keeps its current assignment as its assignment and target, at
    /// member epoch = the generation, Stable, with its subscription and classic metadata.
    pub fn from_classic(group: &Group, now_ms: u64, image: &TopicImage) -> Result<ConsumerGroup, MalformedProtocol> {
        let mut cg = ConsumerGroup::new(group.group_id());
        cg.group_epoch = group.generation_id;
        cg.assignment_epoch = group.generation_id;
        let protocol = group.protocol_name.clone().unwrap_or_default();
        for m in &group.members {
            let sub = deserialize_subscription(&m.metadata(&protocol)).map_err(|_| MalformedProtocol)?;
            let assigned = by_id(&deserialize_assignment(&m.assignment).map_err(|_| MalformedProtocol)?, image);
            let mut names = sub.topics.clone();
            names.sort();
            names.dedup();
            let member = ConsumerMember {
                member_id: m.member_id.clone(),
                instance_id: m.group_instance_id.clone(),
                rack_id: sub.rack_id.clone(),
                client_id: m.client_id.clone(),
                client_host: m.client_host.clone(),
                subscribed_topic_names: names,
                rebalance_timeout_ms: m.rebalance_timeout_ms,
                member_epoch: group.generation_id,
                previous_member_epoch: group.generation_id,
                state: MemberState::Stable,
                assigned: assigned.clone(),
                session_deadline_ms: now_ms.saturating_add(m.session_timeout_ms.max(0) as u64),
                classic: Some(ClassicMemberMetadata {
                    session_timeout_ms: m.session_timeout_ms,
                    protocols: m.protocols.clone(),
                }),
                ..Default::default()
            };
            cg.target.insert(m.member_id.clone(), assigned);
            cg.put_member(member);
        }
        cg.subscribed_metadata = cg.subscription_metadata(image);
        Ok(cg)
    }
}

impl Group {
    /// Kafka's ClassicGroup.fromConsumerGroup then prepareRebalance: generation = the group
    /// epoch, protocol type `consumer`, the protocol every member supports (the first member's
    /// order), the first member as leader, each member's assignment as a ConsumerProtocol
    /// Assignment; then a rebalance so the members rejoin.
    pub(super) fn adopt_consumer_members(
        &mut self,
        cg: &ConsumerGroup,
        generation: i32,
        now_ms: u64,
        image: &TopicImage,
    ) {
        let members: Vec<&ConsumerMember> = cg.members().values().collect();
        let protocols = |m: &ConsumerMember| m.classic.as_ref().map(|c| c.protocols.clone()).unwrap_or_default();
        let first = members.first().map(|m| protocols(m)).unwrap_or_default();
        let common = first
            .iter()
            .map(|(n, _)| n.clone())
            .find(|n| members.iter().all(|m| protocols(m).iter().any(|(q, _)| q == n)));
        let mut out = Vec::new();
        self.reset_membership();
        self.generation_id = generation;
        self.protocol_type = Some(CONSUMER_PROTOCOL_TYPE.to_string());
        self.protocol_name = common.or_else(|| first.first().map(|(n, _)| n.clone()));
        self.leader_id = members.first().map(|m| m.member_id.clone());
        for m in members {
            let session_timeout_ms = m.classic.as_ref().map_or(0, |c| c.session_timeout_ms);
            self.members.push(Member {
                member_id: m.member_id.clone(),
                group_instance_id: m.instance_id.clone(),
                client_id: m.client_id.clone(),
                client_host: m.client_host.clone(),
                session_timeout_ms,
                rebalance_timeout_ms: m.rebalance_timeout_ms,
                protocol_type: CONSUMER_PROTOCOL_TYPE.to_string(),
                protocols: protocols(m),
                assignment: serialize_assignment(&named(&m.assigned, image)),
                last_heartbeat_ms: now_ms,
                awaiting_join: None,
                awaiting_sync: None,
                is_new: false,
                heartbeat_deadline_ms: now_ms.saturating_add(session_timeout_ms.max(0) as u64),
            });
        }
        self.state = GroupState::Stable;
        // Kafka writes the converted classic group's records at the conversion.
        self.store_membership();
        self.prepare_rebalance(now_ms, &mut out);
    }

    /// Answers every parked JoinGroup and SyncGroup with `error` (Kafka's completeAllJoinFutures /
    /// completeAllSyncFutures before a conversion).
    pub(super) fn complete_all_waiting(&mut self, error: GroupError, out: &mut Vec<MemberAnswer>) {
        for m in &mut self.members {
            if let Some(t) = m.awaiting_join.take() {
                reply(out, t, Response::Join(JoinResponse::err(&m.member_id, error)));
            }
            if let Some(t) = m.awaiting_sync.take() {
                reply(out, t, Response::Sync(SyncResponse::err(error)));
            }
        }
    }
}

impl Groups {
    /// Answers to deliver that came out of a conversion (parked classic requests).
    pub fn take_answers(&mut self) -> Vec<MemberAnswer> {
        std::mem::take(&mut self.answers)
    }

    /// Kafka's convertToConsumerGroup, once validateOnlineUpgrade passed: the classic group's
    /// members become classic members of a new consumer group.
    pub(super) fn convert_to_consumer_group(&mut self, group_id: &str, now_ms: u64) -> Result<(), MalformedProtocol> {
        let Some(g) = self.groups.get_mut(group_id) else { return Err(MalformedProtocol) };
        let cg = ConsumerGroup::from_classic(g, now_ms, &self.image)?;
        let mut out = Vec::new();
        g.complete_all_waiting(GroupError::RebalanceInProgress, &mut out);
        g.reset_membership();
        self.answers.extend(out);
        self.consumer.insert(group_id.to_string(), cg);
        tracing::info!(group = %group_id, "converted the classic group to a consumer group (KIP-848 online upgrade)");
        Ok(())
    }

    /// Kafka's validateOnlineDowngradeWithFencedMembers then convertToClassicGroup: when the
    /// members left all use the classic protocol, the policy allows downgrades and they fit in
    /// `group.max.size`, the consumer group becomes a classic group and rebalances. Kafka
    /// converts instead of fencing the `removed` members, so the generation is the group epoch
    /// before their removal (the epoch the classic members heartbeat with). Returns whether it did.
    pub(super) fn maybe_downgrade(&mut self, group_id: &str, removed: usize, now_ms: u64) -> bool {
        let Some(cg) = self.consumer.get(group_id) else { return false };
        if !cg.only_classic_members_left() {
            return false;
        }
        if !self.config.migration_policy.is_downgrade_enabled() {
            tracing::info!(group = %group_id, "cannot downgrade the consumer group to a classic group: the online downgrade is disabled");
            return false;
        }
        if cg.members().len() > self.config.max_size {
            tracing::info!(group = %group_id, "cannot downgrade the consumer group to a classic group: its size is greater than the classic group max size");
            return false;
        }
        let Some(cg) = self.consumer.remove(group_id) else { return false };
        let image = std::mem::take(&mut self.image);
        let generation = cg.group_epoch().saturating_sub(i32::try_from(removed).unwrap_or(i32::MAX));
        self.group(group_id).adopt_consumer_members(&cg, generation, now_ms, &image);
        self.image = image;
        tracing::info!(group = %group_id, "converted the consumer group to a classic group (KIP-848 online downgrade)");
        true
    }

    /// A classic request to a consumer group (mixed mode); None when `group_id` is not a
    /// consumer group that takes it (a JoinGroup on an Empty consumer group replaces it, rule 3).
    pub(super) fn consumer_group_call(
        &mut self,
        now_ms: u64,
        token: u64,
        group_id: &str,
        op: &GroupOp,
        unique: impl FnOnce() -> String,
    ) -> Option<Vec<MemberAnswer>> {
        let cg = self.consumer.get_mut(group_id)?;
        if matches!(op, GroupOp::Join(_)) && cg.is_empty() {
            return None;
        }
        let config = consumer_config_for(&self.config.consumer, &self.group_configs, group_id);
        let response = match op {
            GroupOp::Join(req) => {
                let id = if req.member_id.is_empty() {
                    format!("{}-{}", req.client_id, unique())
                } else {
                    req.member_id.clone()
                };
                let replacing = cg.replaces_consumer_protocol_member(&req.member_id, req.group_instance_id.as_deref());
                let r = cg.classic_join(now_ms, req, &id, &self.image, &config);
                if replacing && r.is_ok() {
                    // The static member it replaced may have been the last one of the consumer
                    // protocol: the group downgrades (Kafka's convertToClassicGroup with the
                    // joining member), and its classic members rejoin.
                    self.maybe_downgrade(group_id, 0, now_ms);
                }
                Response::Join(r.unwrap_or_else(|e| JoinResponse::err(&req.member_id, e)))
            }
            GroupOp::Sync(req) => {
                Response::Sync(cg.classic_sync(now_ms, req, &self.image).unwrap_or_else(SyncResponse::err))
            }
            GroupOp::Heartbeat { generation_id, member_id, group_instance_id } => Response::Heartbeat(
                cg.classic_heartbeat(now_ms, *generation_id, member_id, group_instance_id.as_deref()).err(),
            ),
            GroupOp::Leave(members) => {
                let members = cg.classic_leave(members);
                Response::Leave(LeaveResponse { error: None, members })
            }
        };
        if let Response::Leave(r) = &response {
            let removed = r.members.iter().filter(|m| m.error.is_none()).count();
            if removed > 0 {
                self.maybe_downgrade(group_id, removed, now_ms);
            }
        }
        let mut out = self.take_answers();
        out.push(MemberAnswer { token, response });
        Some(out)
    }
}
