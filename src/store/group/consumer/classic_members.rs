//! Classic members inside a consumer group (KIP-848 mixed mode, Apache Kafka's
//! GroupMetadataManager classicGroupJoinToConsumerGroup, classicGroupSyncToConsumerGroup,
//! classicGroupHeartbeatToConsumerGroup and the LeaveGroup of a consumer group):
//!
//! * JoinGroup: the member's subscription is its first protocol's ConsumerProtocol Subscription;
//!   it is reconciled like any member (its owned partitions are the Subscription's) and answered
//!   at once with generation = its member epoch, no leader and no member list: the assignment is
//!   the server's, the client only syncs;
//! * SyncGroup: its assigned partitions as a ConsumerProtocol Assignment, or REBALANCE_IN_PROGRESS
//!   while the group epoch is past its epoch (unless it still revokes);
//! * Heartbeat: REBALANCE_IN_PROGRESS when it must rejoin (group epoch past its epoch, partitions
//!   to revoke, or partitions it waited for now free);
//! * LeaveGroup: the member goes, as a fenced member does.
//!
//! Its session timeout is the JoinGroup's. After a JoinGroup it must send SyncGroup, and once told
//! REBALANCE_IN_PROGRESS it must send JoinGroup, each within its rebalance timeout, or it is
//! removed (Kafka's consumerGroupSyncKey / consumerGroupJoinKey timers).

use super::reconcile::reconcile;
use super::*;
use crate::store::group::membership::{JoinRequest, JoinResponse, LeaveMember, LeaveMemberResponse, SyncRequest};
use crate::store::group::subscription::{deserialize_subscription, serialize_assignment, Subscription};
use crate::store::group::{GroupError, SyncResponse};

/// The classic protocol type a consumer group serves (Kafka's ConsumerProtocol.PROTOCOL_TYPE).
pub const CONSUMER_PROTOCOL_TYPE: &str = "consumer";

/// Names by topic id, as the classic protocol carries them (unknown topics are left out).
pub fn named(assignment: &Assignment, image: &TopicImage) -> Vec<(String, Vec<i32>)> {
    let names = image.names();
    let f = |(id, ps): (&Uuid, &BTreeSet<i32>)| Some((names.get(id)?.clone(), ps.iter().copied().collect()));
    assignment.iter().filter_map(f).collect()
}

/// Topic ids from names (unknown topics are left out).
pub fn by_id(partitions: &[(String, Vec<i32>)], image: &TopicImage) -> Assignment {
    let mut out = Assignment::new();
    for (name, ps) in partitions {
        if let Some(t) = image.topics.get(name) {
            out.entry(t.id).or_default().extend(ps.iter().copied().filter(|p| *p >= 0 && *p < t.partitions));
        }
    }
    out.retain(|_, ps| !ps.is_empty());
    out
}

impl ConsumerGroup {
    /// Kafka's ConsumerGroup.supportsClassicProtocols: an Empty group takes any non-empty
    /// protocol type and protocols; otherwise the type must be `consumer` and one protocol
    /// shared by every other classic member.
    pub fn supports_classic_protocols(
        &self,
        member_id: &str,
        protocol_type: &str,
        protocols: &[(String, Vec<u8>)],
    ) -> bool {
        if self.members.is_empty() {
            return !protocol_type.is_empty() && !protocols.is_empty();
        }
        let others: Vec<&ClassicMemberMetadata> =
            self.members.values().filter(|m| m.member_id != member_id).filter_map(|m| m.classic.as_ref()).collect();
        protocol_type == CONSUMER_PROTOCOL_TYPE
            && protocols.iter().any(|(p, _)| others.iter().all(|c| c.protocols.iter().any(|(q, _)| q == p)))
    }

    /// The member a classic request names (Kafka's validateConsumerGroupMember): by instance id
    /// (UNKNOWN_MEMBER_ID, FENCED_INSTANCE_ID) or member id; it must use the classic protocol
    /// (throwIfMemberDoesNotUseClassicProtocol: UNKNOWN_MEMBER_ID).
    fn classic_member(&self, member_id: &str, instance_id: Option<&str>) -> Result<&ConsumerMember, GroupError> {
        let member = match instance_id {
            Some(instance) => {
                let m = self.static_members.get(instance).and_then(|id| self.members.get(id));
                let m = m.ok_or(GroupError::UnknownMemberId)?;
                if m.member_id != member_id {
                    return Err(GroupError::FencedInstanceId);
                }
                m
            }
            None => self.members.get(member_id).ok_or(GroupError::UnknownMemberId)?,
        };
        if !member.uses_classic_protocol() {
            return Err(GroupError::UnknownMemberId);
        }
        Ok(member)
    }

    /// JoinGroup of a classic member. `member_id` is the request's, or a new one when it had
    /// none. The caller checked the group id.
    pub fn classic_join(
        &mut self,
        now_ms: u64,
        req: &JoinRequest,
        member_id: &str,
        image: &TopicImage,
        config: &ConsumerConfig,
    ) -> Result<JoinResponse, GroupError> {
        let unknown = req.member_id.is_empty();
        if !self.members.contains_key(member_id) && self.members.len() >= config.max_size {
            return Err(GroupError::GroupMaxSizeReached);
        }
        if !self.supports_classic_protocols(member_id, &req.protocol_type, &req.protocols) {
            return Err(GroupError::InconsistentGroupProtocol);
        }
        // Kafka's JoinGroupRequest.requiresKnownMemberId (KIP-394).
        if unknown && req.version >= 4 && req.group_instance_id.is_none() {
            return Ok(JoinResponse::err(member_id, GroupError::MemberIdRequired));
        }
        let (protocol_name, metadata) = req.protocols.first().ok_or(GroupError::InconsistentGroupProtocol)?;
        // Kafka: a Subscription it cannot read is an IllegalStateException (UNKNOWN_SERVER_ERROR).
        let subscription = deserialize_subscription(metadata).map_err(|_| GroupError::UnknownServerError)?;
        let (member, replaced) = self.classic_joining_member(req, member_id, unknown)?;
        if !replaced && member.as_ref().is_some_and(|m| !m.uses_classic_protocol()) {
            return Err(GroupError::UnknownMemberId);
        }
        let joining = member.is_none() || !self.members.contains_key(member_id);
        let member = member.unwrap_or_else(|| ConsumerMember::new(member_id.to_string()));
        let updated = joined_as(&member, req, &subscription);
        let subscription_changed = updated.subscribed_topic_names != member.subscribed_topic_names
            || updated.subscribed_topic_regex != member.subscribed_topic_regex;
        self.put_member(updated.clone());
        let mut bump = joining || subscription_changed;
        let metadata = self.subscription_metadata(image);
        if metadata != self.subscribed_metadata {
            self.subscribed_metadata = metadata;
            bump = true;
        }
        if bump {
            self.group_epoch += 1;
        }
        self.maybe_update_target(image, config);
        let target = self.target.get(member_id).cloned().unwrap_or_default();
        let owned = Some(by_id(&subscription.owned_partitions, image));
        let current = self.members.get(member_id).cloned().unwrap_or(updated);
        let mut next = if current.is_reconciled_to(self.assignment_epoch) {
            current.clone()
        } else {
            reconcile(&current, self.assignment_epoch, &target, &owned, |t, p| self.partition_epoch(t, p))
        };
        next.session_deadline_ms = now_ms.saturating_add(req.session_timeout_ms.max(0) as u64);
        next.rebalance_deadline_ms = match next.state {
            MemberState::UnrevokedPartitions => Some(now_ms.saturating_add(next.rebalance_timeout_ms.max(0) as u64)),
            _ => None,
        };
        // It joined: it must now sync within its rebalance timeout (Kafka cancels the join timer
        // and schedules the sync timer).
        next.classic_join_deadline_ms = None;
        next.classic_sync_deadline_ms = Some(now_ms.saturating_add(next.rebalance_timeout_ms.max(0) as u64));
        let response = JoinResponse {
            error: None,
            generation_id: next.member_epoch,
            protocol_type: Some(CONSUMER_PROTOCOL_TYPE.to_string()),
            protocol_name: Some(protocol_name.clone()),
            leader: String::new(),
            skip_assignment: false,
            member_id: member_id.to_string(),
            members: Vec::new(),
        };
        self.put_member(next);
        Ok(response)
    }

    /// The member a classic JoinGroup is for, and whether it replaced a static member: the
    /// member itself, a new instance of a static member (unknown member id) that takes its
    /// place whichever protocol the earlier one used (Kafka's
    /// getOrMaybeSubscribeStaticConsumerGroupMember), or none yet.
    fn classic_joining_member(
        &mut self,
        req: &JoinRequest,
        member_id: &str,
        unknown: bool,
    ) -> Result<(Option<ConsumerMember>, bool), GroupError> {
        let Some(instance) = req.group_instance_id.as_deref() else {
            return Ok((self.members.get(member_id).cloned(), false));
        };
        match self.static_members.get(instance).cloned() {
            Some(held) if held == member_id => Ok((self.members.get(&held).cloned(), false)),
            Some(held) if unknown => {
                let old = self.members.remove(&held);
                if let Some(old) = &old {
                    self.release_partitions(old);
                }
                if let Some(t) = self.target.remove(&held) {
                    self.target.insert(member_id.to_string(), t);
                }
                let replacement = old.map(|mut m| {
                    m.member_id = member_id.to_string();
                    m.assigned = Assignment::new();
                    m.pending_revocation = Assignment::new();
                    m.assignment_epochs.clear();
                    m
                });
                Ok((replacement, true))
            }
            Some(_) => Err(GroupError::FencedInstanceId),
            None => Ok((None, false)),
        }
    }

    /// SyncGroup of a classic member: its assigned partitions (Kafka's prepareAssignment).
    pub fn classic_sync(
        &mut self,
        now_ms: u64,
        req: &SyncRequest,
        image: &TopicImage,
    ) -> Result<SyncResponse, GroupError> {
        let member = self.classic_member(&req.member_id, req.group_instance_id.as_deref())?;
        if req.generation_id != member.member_epoch {
            return Err(GroupError::IllegalGeneration);
        }
        let protocol_name = member.classic.as_ref().and_then(|c| c.protocols.first()).map(|(n, _)| n.clone());
        let type_bad = req.protocol_type.as_deref().is_some_and(|t| t != CONSUMER_PROTOCOL_TYPE);
        let name_bad = req.protocol_name.is_some() && req.protocol_name != protocol_name;
        if type_bad || name_bad {
            return Err(GroupError::InconsistentGroupProtocol);
        }
        // Kafka's throwIfRebalanceInProgress: it must rejoin, within its rebalance timeout.
        if self.group_epoch > member.member_epoch && member.state != MemberState::UnrevokedPartitions {
            let mut m = member.clone();
            m.expect_classic_rejoin(now_ms);
            self.members.insert(m.member_id.clone(), m);
            return Err(GroupError::RebalanceInProgress);
        }
        let assignment = serialize_assignment(&named(&member.assigned, image));
        let mut m = member.clone();
        m.classic_sync_deadline_ms = None;
        m.session_deadline_ms =
            now_ms.saturating_add(m.classic.as_ref().map_or(0, |c| c.session_timeout_ms.max(0)) as u64);
        self.members.insert(m.member_id.clone(), m);
        Ok(SyncResponse {
            error: None,
            protocol_type: req.protocol_type.clone(),
            protocol_name: req.protocol_name.clone(),
            assignment,
        })
    }

    /// Heartbeat of a classic member: REBALANCE_IN_PROGRESS when it must rejoin.
    pub fn classic_heartbeat(
        &mut self,
        now_ms: u64,
        generation_id: i32,
        member_id: &str,
        instance_id: Option<&str>,
    ) -> Result<(), GroupError> {
        let member = self.classic_member(member_id, instance_id)?;
        if generation_id != member.member_epoch {
            return Err(GroupError::IllegalGeneration);
        }
        let rejoin = member.member_epoch < self.group_epoch
            || member.state == MemberState::UnrevokedPartitions
            || (member.state == MemberState::UnreleasedPartitions && !self.waiting_on_unreleased_partition(member));
        let mut m = member.clone();
        m.session_deadline_ms =
            now_ms.saturating_add(m.classic.as_ref().map_or(0, |c| c.session_timeout_ms.max(0)) as u64);
        if rejoin {
            m.expect_classic_rejoin(now_ms);
        }
        self.members.insert(m.member_id.clone(), m);
        if rejoin {
            return Err(GroupError::RebalanceInProgress);
        }
        Ok(())
    }

    /// Whether a classic JoinGroup with an unknown member id and `instance_id` replaces a member
    /// of the consumer protocol (after which the group may downgrade, Kafka's
    /// validateOnlineDowngradeWithReplacedMemberId).
    pub fn replaces_consumer_protocol_member(&self, member_id: &str, instance_id: Option<&str>) -> bool {
        member_id.is_empty()
            && instance_id
                .and_then(|i| self.static_members.get(i))
                .and_then(|id| self.members.get(id))
                .is_some_and(|m| !m.uses_classic_protocol())
    }

    /// Kafka's ConsumerGroup.waitingOnUnreleasedPartition: a partition of its target that is
    /// not its own is still owned by another member.
    pub fn waiting_on_unreleased_partition(&self, member: &ConsumerMember) -> bool {
        let Some(target) = self.target.get(&member.member_id) else { return false };
        target.iter().any(|(t, ps)| {
            ps.iter()
                .any(|p| !member.assigned.get(t).is_some_and(|a| a.contains(p)) && self.partition_epoch(*t, *p) != -1)
        })
    }

    /// LeaveGroup on a consumer group: each leaving member must be a classic member (by member
    /// id, or by instance id with its member id or an empty one); it is removed.
    pub fn classic_leave(&mut self, leaving: &[LeaveMember]) -> Vec<LeaveMemberResponse> {
        let mut out = Vec::new();
        for lm in leaving {
            let found = match lm.group_instance_id.as_deref() {
                Some(instance) => match self.static_members.get(instance).and_then(|id| self.members.get(id)) {
                    None => Err(GroupError::UnknownMemberId),
                    Some(m) if !lm.member_id.is_empty() && m.member_id != lm.member_id => {
                        Err(GroupError::FencedInstanceId)
                    }
                    Some(m) => Ok(m),
                },
                None => self.members.get(&lm.member_id).ok_or(GroupError::UnknownMemberId),
            };
            let found = found.and_then(|m| {
                if m.uses_classic_protocol() {
                    Ok(m.member_id.clone())
                } else {
                    Err(GroupError::UnknownMemberId)
                }
            });
            let error = match found {
                Ok(id) => {
                    self.remove_member(&id);
                    None
                }
                Err(e) => Some(e),
            };
            out.push(LeaveMemberResponse {
                member_id: lm.member_id.clone(),
                group_instance_id: lm.group_instance_id.clone(),
                error,
            });
        }
        out
    }

    /// Whether every member but `except` uses the classic protocol, with at least one left
    /// (Kafka's allMembersUseClassicProtocolExcept and the non-empty check of
    /// validateOnlineDowngradeWithFencedMembers).
    pub fn only_classic_members_left(&self) -> bool {
        !self.members.is_empty() && self.members.values().all(ConsumerMember::uses_classic_protocol)
    }
}

/// `member` as a classic JoinGroup describes it: its subscription (from the first protocol's
/// ConsumerProtocol Subscription), rack, timeouts, client and protocols.
fn joined_as(member: &ConsumerMember, req: &JoinRequest, subscription: &Subscription) -> ConsumerMember {
    let mut updated = member.clone();
    updated.instance_id = req.group_instance_id.clone();
    if subscription.rack_id.is_some() {
        updated.rack_id = subscription.rack_id.clone();
    }
    if req.rebalance_timeout_ms > 0 {
        updated.rebalance_timeout_ms = req.rebalance_timeout_ms;
    }
    updated.server_assignor = None;
    let mut names = subscription.topics.clone();
    names.sort();
    names.dedup();
    updated.subscribed_topic_names = names;
    updated.subscribed_topic_regex = None;
    updated.client_id = req.client_id.clone();
    updated.client_host = req.client_host.clone();
    updated.classic =
        Some(ClassicMemberMetadata { session_timeout_ms: req.session_timeout_ms, protocols: req.protocols.clone() });
    updated
}
