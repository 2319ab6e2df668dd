//! JoinGroup (Kafka's GroupCoordinator.handleJoinGroup): new members (MEMBER_ID_REQUIRED, KIP-394),
//! known members, and static members (KIP-345) that rejoin under a new member id.

use super::membership::{reply, JoinRequest, JoinResponse, Member, MemberAnswer, Response, SyncResponse};
use super::{Group, GroupError, GroupState};

impl Group {
    /// JoinGroup. `new_member_id` is called at most once, to mint an id for an unknown member.
    pub fn join(
        &mut self,
        now_ms: u64,
        token: u64,
        req: JoinRequest,
        new_member_id: impl FnOnce() -> String,
    ) -> Vec<MemberAnswer> {
        let mut out = Vec::new();
        self.run_timers(now_ms, &mut out);
        if let Err(e) = self.do_join(now_ms, token, req.clone(), new_member_id, &mut out) {
            reply(&mut out, token, Response::Join(JoinResponse::err(&req.member_id, e)));
        }
        self.run_timers(now_ms, &mut out);
        out
    }

    fn do_join(
        &mut self,
        now: u64,
        token: u64,
        req: JoinRequest,
        new_member_id: impl FnOnce() -> String,
        out: &mut Vec<MemberAnswer>,
    ) -> Result<(), GroupError> {
        let cfg = &self.config;
        if req.session_timeout_ms < cfg.min_session_timeout_ms || req.session_timeout_ms > cfg.max_session_timeout_ms {
            return Err(GroupError::InvalidSessionTimeout);
        }
        if self.state == GroupState::Dead {
            return Err(GroupError::CoordinatorNotAvailable);
        }
        if !self.supports_protocols(&req.protocol_type, &req.protocols) {
            return Err(GroupError::InconsistentGroupProtocol);
        }
        if req.member_id.is_empty() {
            let existing_static = req.group_instance_id.as_deref().and_then(|i| self.static_member_id(i));
            if let Some(old) = existing_static.map(str::to_string) {
                let id = new_member_id();
                self.replace_static_member(now, token, &old, id, req, out);
                return Ok(());
            }
            if self.members.len() + self.pending_members.len() >= self.config.max_size {
                return Err(GroupError::GroupMaxSizeReached);
            }
            let id = new_member_id();
            if req.group_instance_id.is_none() && req.version >= 4 {
                self.pending_members.insert(id.clone(), now + req.session_timeout_ms as u64);
                reply(out, token, Response::Join(JoinResponse::err(&id, GroupError::MemberIdRequired)));
            } else {
                self.add_member_and_rebalance(now, token, id, req, out);
            }
            return Ok(());
        }
        if self.pending_members.remove(&req.member_id).is_some() {
            let id = req.member_id.clone();
            self.add_member_and_rebalance(now, token, id, req, out);
            return Ok(());
        }
        let i = self.validate_member(&req.member_id, req.group_instance_id.as_deref())?;
        let m = &self.members[i];
        let same = m.protocols == req.protocols;
        let is_leader = self.is_leader(&req.member_id);
        match self.state {
            GroupState::PreparingRebalance => self.update_member_and_rebalance(now, token, i, req, out),
            GroupState::CompletingRebalance if same => {
                // Lost the JoinGroup response: answer with the current generation again.
                let members = if is_leader { self.current_member_metadata() } else { Vec::new() };
                let leader = self.leader_id.clone().unwrap_or_default();
                let r = self.join_result(&req.member_id, members, leader, false);
                reply(out, token, Response::Join(r));
            }
            GroupState::Stable if same && !is_leader => {
                let leader = self.leader_id.clone().unwrap_or_default();
                let r = self.join_result(&req.member_id, Vec::new(), leader, false);
                reply(out, token, Response::Join(r));
            }
            GroupState::CompletingRebalance | GroupState::Stable => {
                self.update_member_and_rebalance(now, token, i, req, out)
            }
            GroupState::Empty | GroupState::Dead => return Err(GroupError::UnknownMemberId),
        }
        Ok(())
    }

    fn add_member_and_rebalance(
        &mut self,
        now: u64,
        token: u64,
        id: String,
        req: JoinRequest,
        out: &mut Vec<MemberAnswer>,
    ) {
        if self.state == GroupState::PreparingRebalance && self.generation_id == 0 {
            self.new_member_added = true;
        }
        if self.members.is_empty() {
            self.protocol_type = Some(req.protocol_type.clone());
        }
        if self.leader_id.is_none() {
            self.leader_id = Some(id.clone());
        }
        self.members.push(Member {
            member_id: id,
            group_instance_id: req.group_instance_id,
            client_id: req.client_id,
            client_host: req.client_host,
            session_timeout_ms: req.session_timeout_ms,
            rebalance_timeout_ms: req.rebalance_timeout_ms,
            protocol_type: req.protocol_type,
            protocols: req.protocols,
            assignment: Vec::new(),
            last_heartbeat_ms: now,
            awaiting_join: Some(token),
            awaiting_sync: None,
            is_new: true,
            heartbeat_deadline_ms: now + self.config.new_member_join_timeout_ms,
        });
        self.maybe_prepare_rebalance(now, out);
    }

    fn update_member(&mut self, i: usize, token: u64, req: JoinRequest, out: &mut Vec<MemberAnswer>) {
        let m = &mut self.members[i];
        if let Some(old) = m.awaiting_join.replace(token) {
            // A retried JoinGroup supersedes the parked one.
            reply(out, old, Response::Join(JoinResponse::err(&m.member_id, GroupError::RebalanceInProgress)));
        }
        m.client_id = req.client_id;
        m.client_host = req.client_host;
        m.session_timeout_ms = req.session_timeout_ms;
        m.rebalance_timeout_ms = req.rebalance_timeout_ms;
        m.protocol_type = req.protocol_type;
        m.protocols = req.protocols;
    }

    fn update_member_and_rebalance(
        &mut self,
        now: u64,
        token: u64,
        i: usize,
        req: JoinRequest,
        out: &mut Vec<MemberAnswer>,
    ) {
        self.update_member(i, token, req, out);
        self.maybe_prepare_rebalance(now, out);
    }

    /// A static member rejoined with an empty member id: it takes over the old member
    /// (which is fenced from now on) under a fresh member id.
    fn replace_static_member(
        &mut self,
        now: u64,
        token: u64,
        old_id: &str,
        new_id: String,
        req: JoinRequest,
        out: &mut Vec<MemberAnswer>,
    ) {
        let Some(i) = self.idx(old_id) else {
            // The instance map and the member list disagree: refuse rather than guess.
            reply(out, token, Response::Join(JoinResponse::err(&new_id, GroupError::UnknownMemberId)));
            return;
        };
        let old_leader = self.leader_id.clone().unwrap_or_default();
        let m = &mut self.members[i];
        if let Some(t) = m.awaiting_join.take() {
            reply(out, t, Response::Join(JoinResponse::err(old_id, GroupError::FencedInstanceId)));
        }
        if let Some(t) = m.awaiting_sync.take() {
            reply(out, t, Response::Sync(SyncResponse::err(GroupError::FencedInstanceId)));
        }
        let protocols_changed = m.protocols != req.protocols;
        m.member_id = new_id.clone();
        if self.leader_id.as_deref() == Some(old_id) {
            self.leader_id = Some(new_id.clone());
        }
        if self.pending_sync.remove(old_id) {
            self.pending_sync.insert(new_id.clone());
        }
        let version = req.version;
        self.update_member(i, token, req, out);
        match self.state {
            GroupState::Stable if !protocols_changed && self.select_protocol() == self.protocol_name => {
                let m = &mut self.members[i];
                m.awaiting_join = None;
                m.touch(now);
                // Kafka stores the group with the new member id (the old one stays fenced
                // after a restart), before the answer.
                self.store_membership();
                // KIP-814: a v9+ leader gets the member list but must not reassign; older
                // clients are told the previous leader id so they do not run the assignor.
                let is_leader = self.is_leader(&new_id);
                let skip = is_leader && version >= 9;
                let members = if skip { self.current_member_metadata() } else { Vec::new() };
                let leader = if version >= 9 { self.leader_id.clone().unwrap_or_default() } else { old_leader };
                let r = self.join_result(&new_id, members, leader, skip);
                reply(out, token, Response::Join(r));
            }
            GroupState::Stable | GroupState::CompletingRebalance => self.prepare_rebalance(now, out),
            _ => {} // PreparingRebalance: parked, completion checked by run_timers
        }
    }
}
