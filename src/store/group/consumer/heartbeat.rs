//! ConsumerGroupHeartbeat (Kafka's GroupMetadataManager.consumerGroupHeartbeat): the request's
//! validation, joining, the member-epoch fencing, static members, leaving, and the session and
//! rebalance timers.

use super::member::compile_regex;
use super::reconcile::{reconcile, Owned};
use super::*;

#[derive(Debug, Clone, Default, PartialEq)]
pub struct HeartbeatRequest {
    pub version: i16,
    pub member_id: String,
    pub member_epoch: i32,
    pub instance_id: Option<String>,
    pub rack_id: Option<String>,
    pub rebalance_timeout_ms: i32,
    pub subscribed_topic_names: Option<Vec<String>>,
    pub subscribed_topic_regex: Option<String>,
    pub server_assignor: Option<String>,
    pub owned: Owned,
    pub client_id: String,
    pub client_host: String,
    /// The connection's principal (`User:alice`): a regex subscription resolves to the topics
    /// it may describe when the authorizer is on.
    pub principal: String,
}

#[derive(Debug, Clone, PartialEq)]
pub struct HeartbeatResponse {
    pub member_id: String,
    pub member_epoch: i32,
    pub heartbeat_interval_ms: i32,
    /// Set when the member joined, sent a full request, or its assignment changed.
    pub assignment: Option<Assignment>,
}

fn invalid(msg: &str) -> ConsumerError {
    ConsumerError::InvalidRequest(msg.to_string())
}

fn empty_if_set(v: &Option<String>, msg: &str) -> Result<(), ConsumerError> {
    if v.as_deref() == Some("") {
        return Err(invalid(msg));
    }
    Ok(())
}

/// Kafka's throwIfConsumerGroupHeartbeatRequestIsInvalid; also picks the assignor it names.
pub fn validate(req: &HeartbeatRequest, config: &ConsumerConfig) -> Result<Option<Assignor>, ConsumerError> {
    let epoch = req.member_epoch;
    if (req.version >= CLIENT_MEMBER_ID_VERSION || epoch > 0 || epoch == LEAVE_EPOCH) && req.member_id.is_empty() {
        return Err(invalid("MemberId can't be empty."));
    }
    empty_if_set(&req.instance_id, "InstanceId can't be empty.")?;
    empty_if_set(&req.rack_id, "RackId can't be empty.")?;
    if epoch == 0 {
        if req.rebalance_timeout_ms == -1 {
            return Err(invalid("RebalanceTimeoutMs must be provided in first request."));
        }
        if req.owned.as_ref().is_none_or(|o| !o.is_empty()) {
            return Err(invalid("TopicPartitions must be empty when (re-)joining."));
        }
        let names = req.subscribed_topic_names.as_ref().is_some_and(|n| !n.is_empty());
        let regex = req.subscribed_topic_regex.as_deref().is_some_and(|r| !r.is_empty());
        if !names && !regex {
            return Err(invalid("SubscribedTopicNames or SubscribedTopicRegex must be set in first request."));
        }
    } else if epoch == LEAVE_STATIC_EPOCH {
        if req.instance_id.is_none() {
            return Err(invalid("InstanceId can't be null."));
        }
    } else if epoch < LEAVE_STATIC_EPOCH {
        return Err(invalid("MemberEpoch is invalid."));
    }
    if let Some(re) = req.subscribed_topic_regex.as_deref().filter(|r| !r.is_empty()) {
        compile_regex(re).map_err(|e| {
            ConsumerError::InvalidRegularExpression(format!(
                "SubscribedTopicRegex `{re}` is not a valid regular expression: {e}."
            ))
        })?;
    }
    match req.server_assignor.as_deref() {
        None => Ok(None),
        Some(name) => match Assignor::from_name(name).filter(|a| config.assignors.contains(a)) {
            Some(a) => Ok(Some(a)),
            None => {
                let names: Vec<&str> = config.assignors.iter().map(|a| a.name()).collect();
                Err(ConsumerError::UnsupportedAssignor(format!(
                    "ServerAssignor {name} is not supported. Supported assignors: {}.",
                    names.join(", ")
                )))
            }
        },
    }
}

fn is_subset(owned: &Owned, assigned: &Assignment) -> bool {
    let Some(owned) = owned else { return true };
    owned.iter().all(|(t, ps)| ps.is_empty() || assigned.get(t).is_some_and(|a| ps.is_subset(a)))
}

impl ConsumerGroup {
    /// Kafka's throwIfMemberEpochIsInvalid: a greater epoch is fenced; a smaller one too, unless
    /// it is the previous epoch and the member owns no more than it is assigned (the answer
    /// with the new epoch was lost).
    pub fn check_member_epoch(member: &ConsumerMember, received: i32, owned: &Owned) -> Result<(), ConsumerError> {
        let fenced = || {
            ConsumerError::FencedMemberEpoch(format!(
                "The consumer group member has a {} member epoch ({received}) than the one known by the group coordinator ({}). The member must abandon all its partitions and rejoin.",
                if received > member.member_epoch { "greater" } else { "smaller" },
                member.member_epoch
            ))
        };
        if received > member.member_epoch {
            return Err(fenced());
        }
        if received < member.member_epoch
            && (received != member.previous_member_epoch || !is_subset(owned, &member.assigned))
        {
            return Err(fenced());
        }
        Ok(())
    }

    /// The member a (non-leave) heartbeat is about; a new one when joining.
    fn heartbeat_member(&self, req: &HeartbeatRequest, member_id: &str) -> Result<ConsumerMember, ConsumerError> {
        let unknown = || {
            ConsumerError::UnknownMemberId(format!("Member {member_id} is not a member of group {}.", self.group_id))
        };
        if let Some(instance) = &req.instance_id {
            let holder = self.static_members.get(instance).and_then(|id| self.members.get(id));
            if req.member_epoch == 0 {
                return match holder {
                    Some(old) if old.member_id == member_id => Ok(old.clone()),
                    // The instance's previous member left for a while, or used the classic
                    // protocol (Kafka's getOrMaybeSubscribeStaticConsumerGroupMember): the new
                    // one takes its place.
                    Some(old) if old.member_epoch == LEAVE_STATIC_EPOCH || old.uses_classic_protocol() => {
                        let mut m = old.clone();
                        m.member_id = member_id.to_string();
                        m.member_epoch = 0;
                        m.previous_member_epoch = 0;
                        m.state = MemberState::Stable;
                        Ok(m)
                    }
                    Some(_) => Err(ConsumerError::UnreleasedInstanceId(format!(
                        "Static member {member_id} with instance id {instance} cannot join the group because the instance id is owned by another member."
                    ))),
                    None => Ok(ConsumerMember::new(member_id.to_string())),
                };
            }
            let m = holder.ok_or_else(unknown)?;
            if m.member_id != member_id {
                return Err(ConsumerError::FencedInstanceId(format!(
                    "Static member {member_id} with instance id {instance} is fenced by existing member {}.",
                    m.member_id
                )));
            }
            return Ok(m.clone());
        }
        match self.members.get(member_id) {
            Some(m) => Ok(m.clone()),
            None if req.member_epoch == 0 => Ok(ConsumerMember::new(member_id.to_string())),
            None => Err(unknown()),
        }
    }

    /// A heartbeat that is not a leave. `member_id` is the request's, or the one generated for
    /// a v0 join. The caller checked the request ([`validate`]) and the group's type.
    pub fn heartbeat(
        &mut self,
        now_ms: u64,
        req: &HeartbeatRequest,
        member_id: &str,
        assignor: Option<Assignor>,
        image: &TopicImage,
        config: &ConsumerConfig,
    ) -> Result<HeartbeatResponse, ConsumerError> {
        if !self.members.contains_key(member_id) && self.members.len() >= config.max_size {
            return Err(ConsumerError::GroupMaxSizeReached(format!(
                "The consumer group has reached its maximum capacity of {} members.",
                config.max_size
            )));
        }
        let member = self.heartbeat_member(req, member_id)?;
        let joining = !self.members.contains_key(member_id);
        if req.member_epoch != 0 && member.uses_classic_protocol() {
            return Err(ConsumerError::UnknownMemberId(format!(
                "Member {member_id} is a classic member of group {}.",
                self.group_id
            )));
        }
        if req.member_epoch != 0 {
            Self::check_member_epoch(&member, req.member_epoch, &req.owned)?;
        }
        let mut updated = member.clone();
        // The instance id is sent when joining and may be left out after (null: unchanged), as
        // Kafka's maybeUpdateInstanceId: a keepalive does not make a static member dynamic.
        if let Some(instance) = &req.instance_id {
            updated.instance_id = Some(instance.clone());
        }
        if let Some(r) = &req.rack_id {
            updated.rack_id = Some(r.clone());
        }
        if req.rebalance_timeout_ms > 0 {
            updated.rebalance_timeout_ms = req.rebalance_timeout_ms;
        }
        if let Some(names) = &req.subscribed_topic_names {
            let mut names = names.clone();
            names.sort();
            names.dedup();
            updated.subscribed_topic_names = names;
        }
        if let Some(re) = &req.subscribed_topic_regex {
            updated.subscribed_topic_regex = Some(re.clone()).filter(|r| !r.is_empty());
        }
        if req.server_assignor.is_some() {
            updated.server_assignor = assignor;
        }
        updated.client_id = req.client_id.clone();
        updated.client_host = req.client_host.clone();
        updated.principal = Some(req.principal.clone());
        // A member (re)joining with ConsumerGroupHeartbeat uses the consumer protocol.
        updated.classic = None;
        updated.classic_sync_deadline_ms = None;
        updated.classic_join_deadline_ms = None;
        let subscription_changed = updated.subscribed_topic_names != member.subscribed_topic_names
            || updated.subscribed_topic_regex != member.subscribed_topic_regex
            || updated.server_assignor != member.server_assignor;
        // A static member taking its instance's place keeps its predecessor's subscription and
        // assignment: as Kafka, no group epoch bump unless the subscription changed.
        let replacing = joining && req.instance_id.as_ref().is_some_and(|i| self.static_members.contains_key(i));
        if joining {
            if let Some(instance) = &req.instance_id {
                // A static member replacing its earlier self: the earlier one goes.
                if let Some(old) = self.static_members.get(instance).cloned() {
                    if let Some(old_member) = self.members.remove(&old) {
                        self.release_partitions(&old_member);
                    }
                    if let Some(t) = self.target.remove(&old) {
                        self.target.insert(member_id.to_string(), t);
                    }
                }
            }
        }
        self.put_member(updated.clone());
        let bump = (joining && !replacing) || subscription_changed;
        if bump {
            self.group_epoch += 1;
        }
        // Subscribed topics changed in the metadata: bumps the group epoch.
        let metadata = self.subscription_metadata(image);
        if metadata != self.subscribed_metadata {
            self.subscribed_metadata = metadata;
            if !bump {
                self.group_epoch += 1;
            }
        }
        self.maybe_update_target(image, config);
        let target = self.target.get(member_id).cloned().unwrap_or_default();
        let current = self.members.get(member_id).cloned().unwrap_or(updated);
        let mut next = if current.is_reconciled_to(self.assignment_epoch) {
            current.clone()
        } else {
            reconcile(&current, self.assignment_epoch, &target, &req.owned, |t, p| self.partition_epoch(t, p))
        };
        next.session_deadline_ms = now_ms.saturating_add(config.session_timeout_ms.max(0) as u64);
        next.rebalance_deadline_ms = match next.state {
            MemberState::UnrevokedPartitions => current
                .rebalance_deadline_ms
                .filter(|_| current.state == MemberState::UnrevokedPartitions)
                .or(Some(now_ms.saturating_add(next.rebalance_timeout_ms.max(0) as u64))),
            _ => None,
        };
        let changed = next.assigned != current.assigned;
        let full = req.rebalance_timeout_ms != -1
            && (req.subscribed_topic_names.is_some() || req.subscribed_topic_regex.is_some())
            && req.owned.is_some();
        let response = HeartbeatResponse {
            member_id: member_id.to_string(),
            member_epoch: next.member_epoch,
            heartbeat_interval_ms: config.heartbeat_interval_ms,
            assignment: (req.member_epoch == 0 || full || changed).then(|| next.assigned.clone()),
        };
        self.put_member(next);
        Ok(response)
    }

    /// A leave (member epoch -1, or -2 for a static member leaving for a while).
    pub fn leave(&mut self, req: &HeartbeatRequest) -> Result<HeartbeatResponse, ConsumerError> {
        let member_id = req.member_id.as_str();
        let unknown = || {
            ConsumerError::UnknownMemberId(format!("Member {member_id} is not a member of group {}.", self.group_id))
        };
        let member = match &req.instance_id {
            Some(instance) => {
                let m = self.static_members.get(instance).and_then(|id| self.members.get(id)).ok_or_else(unknown)?;
                if m.member_id != member_id {
                    return Err(ConsumerError::FencedInstanceId(format!(
                        "Static member {member_id} with instance id {instance} is fenced by existing member {}.",
                        m.member_id
                    )));
                }
                m.clone()
            }
            None => self.members.get(member_id).cloned().ok_or_else(unknown)?,
        };
        if req.member_epoch == LEAVE_STATIC_EPOCH {
            // Kept with its assignment until it comes back or its session expires.
            let mut m = member;
            m.member_epoch = LEAVE_STATIC_EPOCH;
            m.state = MemberState::Stable;
            self.put_member(m);
        } else {
            self.remove_member(member_id);
        }
        Ok(HeartbeatResponse {
            member_id: member_id.to_string(),
            member_epoch: req.member_epoch,
            heartbeat_interval_ms: 0,
            assignment: None,
        })
    }

    /// Members whose session expired, who did not revoke in their rebalance timeout, or classic
    /// members that did not sync after joining or rejoin when told to within their rebalance
    /// timeout, are removed (Kafka fences them). Returns the removed member ids.
    pub fn expire_members(&mut self, now_ms: u64) -> Vec<String> {
        let expired: Vec<String> =
            self.members.values().filter(|m| m.deadlines().any(|d| d <= now_ms)).map(|m| m.member_id.clone()).collect();
        for id in &expired {
            self.remove_member(id);
        }
        expired
    }

    /// The earliest deadline of a member.
    pub fn next_deadline(&self) -> Option<u64> {
        self.members.values().flat_map(ConsumerMember::deadlines).min()
    }
}
