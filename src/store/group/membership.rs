//! Members of a group and the requests they send once joined: SyncGroup, Heartbeat and
//! LeaveGroup (Kafka's GroupCoordinator handleSyncGroup / handleHeartbeat / handleLeaveGroup),
//! plus the request and reply types of the membership protocol. JoinGroup is in
//! [`super::join`]; the timers and the generation change are in [`super::rebalance`].

use super::{Group, GroupError, GroupState};

#[derive(Debug, Clone, PartialEq)]
pub struct Member {
    pub member_id: String,
    pub group_instance_id: Option<String>,
    pub client_id: String,
    pub client_host: String,
    pub session_timeout_ms: i32,
    pub rebalance_timeout_ms: i32,
    pub protocol_type: String,
    pub protocols: Vec<(String, Vec<u8>)>,
    pub assignment: Vec<u8>,
    pub last_heartbeat_ms: u64,
    pub(super) awaiting_join: Option<u64>,
    pub(super) awaiting_sync: Option<u64>,
    pub(super) is_new: bool,
    pub(super) heartbeat_deadline_ms: u64,
}

impl Member {
    pub(super) fn metadata(&self, protocol: &str) -> Vec<u8> {
        let found = self.protocols.iter().find(|(n, _)| n == protocol);
        found.map(|(_, m)| m.clone()).unwrap_or_default()
    }
    pub(super) fn touch(&mut self, now_ms: u64) {
        self.last_heartbeat_ms = now_ms;
        self.heartbeat_deadline_ms = now_ms + self.session_timeout_ms.max(0) as u64;
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct JoinRequest {
    pub version: i16,
    pub member_id: String,
    pub group_instance_id: Option<String>,
    pub client_id: String,
    pub client_host: String,
    pub session_timeout_ms: i32,
    /// v0: pass the session timeout.
    pub rebalance_timeout_ms: i32,
    pub protocol_type: String,
    pub protocols: Vec<(String, Vec<u8>)>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct JoinMember {
    pub member_id: String,
    pub group_instance_id: Option<String>,
    pub metadata: Vec<u8>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct JoinResponse {
    pub error: Option<GroupError>,
    pub generation_id: i32,
    pub protocol_type: Option<String>,
    pub protocol_name: Option<String>,
    pub leader: String,
    pub skip_assignment: bool,
    pub member_id: String,
    pub members: Vec<JoinMember>,
}

impl JoinResponse {
    pub(super) fn err(member_id: &str, e: GroupError) -> Self {
        JoinResponse {
            error: Some(e),
            generation_id: -1,
            protocol_type: None,
            protocol_name: None,
            leader: String::new(),
            skip_assignment: false,
            member_id: member_id.to_string(),
            members: Vec::new(),
        }
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct SyncRequest {
    pub generation_id: i32,
    pub member_id: String,
    pub group_instance_id: Option<String>,
    /// v5+ only (None for older versions: not checked).
    pub protocol_type: Option<String>,
    pub protocol_name: Option<String>,
    pub assignments: Vec<(String, Vec<u8>)>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct SyncResponse {
    pub error: Option<GroupError>,
    pub protocol_type: Option<String>,
    pub protocol_name: Option<String>,
    pub assignment: Vec<u8>,
}

impl SyncResponse {
    pub(super) fn err(e: GroupError) -> Self {
        SyncResponse { error: Some(e), protocol_type: None, protocol_name: None, assignment: Vec::new() }
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct LeaveMember {
    pub member_id: String,
    pub group_instance_id: Option<String>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct LeaveMemberResponse {
    pub member_id: String,
    pub group_instance_id: Option<String>,
    pub error: Option<GroupError>,
}

/// v3+: top-level error plus per-member errors. For v0-2 (single member) the caller
/// reports `members[0].error` as the top-level error.
#[derive(Debug, Clone, PartialEq)]
pub struct LeaveResponse {
    pub error: Option<GroupError>,
    pub members: Vec<LeaveMemberResponse>,
}

#[derive(Debug, Clone, PartialEq)]
pub enum Response {
    Join(JoinResponse),
    Sync(SyncResponse),
    Heartbeat(Option<GroupError>),
    Leave(LeaveResponse),
}

impl Response {
    /// This answer turned into `error` (its group's write failed before it went out).
    pub fn failed(self, error: GroupError) -> Response {
        match self {
            Response::Join(j) => Response::Join(JoinResponse::err(&j.member_id, error)),
            Response::Sync(_) => Response::Sync(SyncResponse::err(error)),
            Response::Heartbeat(_) => Response::Heartbeat(Some(error)),
            // The members left whatever is written.
            Response::Leave(l) => Response::Leave(l),
        }
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct MemberAnswer {
    pub token: u64,
    pub response: Response,
}

pub(super) fn reply(out: &mut Vec<MemberAnswer>, token: u64, response: Response) {
    out.push(MemberAnswer { token, response });
}

impl Group {
    pub(super) fn idx(&self, member_id: &str) -> Option<usize> {
        self.members.iter().position(|m| m.member_id == member_id)
    }

    pub(super) fn static_member_id(&self, instance_id: &str) -> Option<&str> {
        let m = self.members.iter().find(|m| m.group_instance_id.as_deref() == Some(instance_id));
        m.map(|m| m.member_id.as_str())
    }

    pub(super) fn is_leader(&self, member_id: &str) -> bool {
        self.leader_id.as_deref() == Some(member_id)
    }

    /// FENCED_INSTANCE_ID / UNKNOWN_MEMBER_ID checks; returns the member index.
    pub(super) fn validate_member(&self, member_id: &str, instance_id: Option<&str>) -> Result<usize, GroupError> {
        if let Some(inst) = instance_id {
            match self.static_member_id(inst) {
                None => return Err(GroupError::UnknownMemberId),
                Some(id) if id != member_id => return Err(GroupError::FencedInstanceId),
                Some(_) => {}
            }
        }
        self.idx(member_id).ok_or(GroupError::UnknownMemberId)
    }

    pub(super) fn supports_protocols(&self, protocol_type: &str, protocols: &[(String, Vec<u8>)]) -> bool {
        if self.state == GroupState::Empty || self.members.is_empty() {
            return !protocol_type.is_empty() && !protocols.is_empty();
        }
        self.protocol_type.as_deref() == Some(protocol_type)
            && protocols.iter().any(|(p, _)| self.members.iter().all(|m| m.protocols.iter().any(|(q, _)| q == p)))
    }

    pub(super) fn current_member_metadata(&self) -> Vec<JoinMember> {
        let proto = self.protocol_name.clone().unwrap_or_default();
        let f = |m: &Member| JoinMember {
            member_id: m.member_id.clone(),
            group_instance_id: m.group_instance_id.clone(),
            metadata: m.metadata(&proto),
        };
        self.members.iter().map(f).collect()
    }

    pub(super) fn join_result(
        &self,
        member_id: &str,
        members: Vec<JoinMember>,
        leader: String,
        skip: bool,
    ) -> JoinResponse {
        JoinResponse {
            error: None,
            generation_id: self.generation_id,
            protocol_type: self.protocol_type.clone(),
            protocol_name: self.protocol_name.clone(),
            leader,
            skip_assignment: skip,
            member_id: member_id.to_string(),
            members,
        }
    }

    // ------------------------------------------------------------------ SyncGroup

    pub fn sync(&mut self, now_ms: u64, token: u64, req: SyncRequest) -> Vec<MemberAnswer> {
        let mut out = Vec::new();
        self.run_timers(now_ms, &mut out);
        if let Err(e) = self.do_sync(now_ms, token, req, &mut out) {
            reply(&mut out, token, Response::Sync(SyncResponse::err(e)));
        }
        self.run_timers(now_ms, &mut out);
        out
    }

    fn do_sync(
        &mut self,
        now: u64,
        token: u64,
        req: SyncRequest,
        out: &mut Vec<MemberAnswer>,
    ) -> Result<(), GroupError> {
        if self.state == GroupState::Dead {
            return Err(GroupError::CoordinatorNotAvailable);
        }
        let i = self.validate_member(&req.member_id, req.group_instance_id.as_deref())?;
        if req.generation_id != self.generation_id {
            return Err(GroupError::IllegalGeneration);
        }
        let type_bad = req.protocol_type.is_some() && req.protocol_type != self.protocol_type;
        let name_bad = req.protocol_name.is_some() && req.protocol_name != self.protocol_name;
        if type_bad || name_bad {
            return Err(GroupError::InconsistentGroupProtocol);
        }
        match self.state {
            GroupState::Empty | GroupState::Dead => Err(GroupError::UnknownMemberId),
            GroupState::PreparingRebalance => Err(GroupError::RebalanceInProgress),
            GroupState::CompletingRebalance => {
                if let Some(old) = self.members[i].awaiting_sync.replace(token) {
                    reply(out, old, Response::Sync(SyncResponse::err(GroupError::RebalanceInProgress)));
                }
                self.pending_sync.remove(&req.member_id);
                if self.is_leader(&req.member_id) {
                    // Members missing from the leader's assignment get an empty one.
                    for m in &mut self.members {
                        let a = req.assignments.iter().find(|(id, _)| *id == m.member_id);
                        m.assignment = a.map(|(_, a)| a.clone()).unwrap_or_default();
                    }
                    self.propagate_sync(now, None, out);
                    self.state = GroupState::Stable;
                    // Kafka stores the group with its assignment here, before the answers.
                    self.store_membership();
                }
                Ok(())
            }
            GroupState::Stable => {
                self.pending_sync.remove(&req.member_id);
                let m = &mut self.members[i];
                m.touch(now);
                let r = SyncResponse {
                    error: None,
                    protocol_type: self.protocol_type.clone(),
                    protocol_name: self.protocol_name.clone(),
                    assignment: m.assignment.clone(),
                };
                reply(out, token, Response::Sync(r));
                Ok(())
            }
        }
    }

    // ------------------------------------------------------------------ Heartbeat / Leave

    pub fn heartbeat(
        &mut self,
        now_ms: u64,
        token: u64,
        generation_id: i32,
        member_id: &str,
        group_instance_id: Option<&str>,
    ) -> Vec<MemberAnswer> {
        let mut out = Vec::new();
        self.run_timers(now_ms, &mut out);
        let res = self.do_heartbeat(now_ms, generation_id, member_id, group_instance_id);
        reply(&mut out, token, Response::Heartbeat(res.err()));
        self.run_timers(now_ms, &mut out);
        out
    }

    fn do_heartbeat(
        &mut self,
        now: u64,
        generation: i32,
        member_id: &str,
        inst: Option<&str>,
    ) -> Result<(), GroupError> {
        if self.state == GroupState::Dead {
            return Err(GroupError::CoordinatorNotAvailable);
        }
        let i = self.validate_member(member_id, inst)?;
        if generation != self.generation_id {
            return Err(GroupError::IllegalGeneration);
        }
        match self.state {
            GroupState::Empty | GroupState::Dead => Err(GroupError::UnknownMemberId),
            GroupState::PreparingRebalance => {
                self.members[i].touch(now);
                Err(GroupError::RebalanceInProgress)
            }
            GroupState::CompletingRebalance | GroupState::Stable => {
                self.members[i].touch(now);
                Ok(())
            }
        }
    }

    /// LeaveGroup (v0-2: pass one member with `group_instance_id: None`).
    pub fn leave(&mut self, now_ms: u64, token: u64, leaving: Vec<LeaveMember>) -> Vec<MemberAnswer> {
        let mut out = Vec::new();
        self.run_timers(now_ms, &mut out);
        if self.state == GroupState::Dead {
            let r = LeaveResponse { error: Some(GroupError::CoordinatorNotAvailable), members: Vec::new() };
            reply(&mut out, token, Response::Leave(r));
            return out;
        }
        let mut results = Vec::new();
        for lm in leaving {
            let error = self.leave_one(now_ms, &lm, &mut out).err();
            results.push(LeaveMemberResponse {
                member_id: lm.member_id,
                group_instance_id: lm.group_instance_id,
                error,
            });
        }
        reply(&mut out, token, Response::Leave(LeaveResponse { error: None, members: results }));
        self.run_timers(now_ms, &mut out);
        out
    }

    fn leave_one(&mut self, now: u64, lm: &LeaveMember, out: &mut Vec<MemberAnswer>) -> Result<(), GroupError> {
        let i = match lm.group_instance_id.as_deref() {
            None => {
                if self.pending_members.remove(&lm.member_id).is_some() {
                    return Ok(());
                }
                self.idx(&lm.member_id).ok_or(GroupError::UnknownMemberId)?
            }
            Some(inst) => {
                // An empty member id (admin removal by instance id) is accepted.
                let id = self.static_member_id(inst).ok_or(GroupError::UnknownMemberId)?;
                if !lm.member_id.is_empty() && id != lm.member_id {
                    return Err(GroupError::FencedInstanceId);
                }
                self.idx(id).ok_or(GroupError::UnknownMemberId)?
            }
        };
        self.remove_member_and_update(now, i, out);
        Ok(())
    }
}
