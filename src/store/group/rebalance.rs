//! Generations and rebalances: PreparingRebalance -> CompletingRebalance -> Stable, the initial
//! rebalance delay, and the timers (session, rebalance and new-member join timeouts) that
//! remove members which stopped answering (Kafka's GroupCoordinator: prepareRebalance,
//! onCompleteJoin, onExpireHeartbeat, DelayedJoin / InitialDelayedJoin).

use super::membership::{reply, JoinResponse, Member, MemberAnswer, Response, SyncResponse};
use super::{Group, GroupError, GroupState};

impl Group {
    /// Earliest time at which `tick` has something to do.
    pub fn next_deadline(&self) -> Option<u64> {
        let hb = self.members.iter().map(|m| m.heartbeat_deadline_ms);
        let pend = self.pending_members.values().copied();
        let sync = if self.pending_sync.is_empty() { None } else { self.sync_deadline_ms };
        hb.chain(pend).chain(self.join_deadline_ms).chain(sync).min()
    }

    /// The longest rebalance timeout of the members: how long a rebalance waits for them.
    pub(super) fn rebalance_timeout_ms(&self) -> u64 {
        self.members.iter().map(|m| m.rebalance_timeout_ms.max(0) as u64).max().unwrap_or(0)
    }

    /// Vote among the protocols every member supports: each member votes for its most
    /// preferred candidate; ties go to the candidate listed first by the first member.
    pub(super) fn select_protocol(&self) -> Option<String> {
        let first = self.members.first()?;
        let candidates: Vec<&String> = first
            .protocols
            .iter()
            .map(|(p, _)| p)
            .filter(|p| self.members.iter().all(|m| m.protocols.iter().any(|(q, _)| q == *p)))
            .collect();
        let mut votes = vec![0usize; candidates.len()];
        for m in &self.members {
            if let Some(i) = m.protocols.iter().find_map(|(p, _)| candidates.iter().position(|c| *c == p)) {
                votes[i] += 1;
            }
        }
        let best = votes.iter().enumerate().max_by(|a, b| a.1.cmp(b.1).then(b.0.cmp(&a.0)))?.0;
        Some(candidates[best].clone())
    }

    pub(super) fn maybe_prepare_rebalance(&mut self, now: u64, out: &mut Vec<MemberAnswer>) {
        if matches!(self.state, GroupState::Stable | GroupState::CompletingRebalance | GroupState::Empty) {
            self.prepare_rebalance(now, out);
        }
    }

    pub(super) fn prepare_rebalance(&mut self, now: u64, out: &mut Vec<MemberAnswer>) {
        if self.state == GroupState::CompletingRebalance {
            for m in &mut self.members {
                m.assignment.clear();
            }
            self.propagate_sync(now, Some(GroupError::RebalanceInProgress), out);
        }
        self.pending_sync.clear();
        self.sync_deadline_ms = None;
        let rebalance_timeout = self.rebalance_timeout_ms();
        if self.state == GroupState::Empty {
            let delay = self.config.initial_rebalance_delay_ms;
            self.join_deadline_ms = Some(now + delay);
            self.initial_delay_remaining_ms = Some(rebalance_timeout.saturating_sub(delay));
            self.new_member_added = false;
        } else {
            self.join_deadline_ms = Some(now + rebalance_timeout);
            self.initial_delay_remaining_ms = None;
        }
        self.state = GroupState::PreparingRebalance;
    }

    /// Answer every parked SyncGroup (with its assignment, or `error`).
    pub(super) fn propagate_sync(&mut self, now: u64, error: Option<GroupError>, out: &mut Vec<MemberAnswer>) {
        for m in &mut self.members {
            if let Some(t) = m.awaiting_sync.take() {
                let r = match error {
                    Some(e) => SyncResponse::err(e),
                    None => SyncResponse {
                        error: None,
                        protocol_type: self.protocol_type.clone(),
                        protocol_name: self.protocol_name.clone(),
                        assignment: m.assignment.clone(),
                    },
                };
                reply(out, t, Response::Sync(r));
                m.touch(now);
            }
        }
    }

    fn all_joined(&self) -> bool {
        self.pending_members.is_empty() && self.members.iter().all(|m| m.awaiting_join.is_some())
    }

    /// Remove a member without changing state; parked requests get UNKNOWN_MEMBER_ID.
    pub(super) fn remove_member_at(&mut self, i: usize, out: &mut Vec<MemberAnswer>) {
        let m = self.members.remove(i);
        if let Some(t) = m.awaiting_join {
            reply(out, t, Response::Join(JoinResponse::err(&m.member_id, GroupError::UnknownMemberId)));
        }
        if let Some(t) = m.awaiting_sync {
            reply(out, t, Response::Sync(SyncResponse::err(GroupError::UnknownMemberId)));
        }
        self.pending_sync.remove(&m.member_id);
        if self.is_leader(&m.member_id) {
            self.leader_id = self.members.first().map(|m| m.member_id.clone());
        }
    }

    pub(super) fn remove_member_and_update(&mut self, now: u64, i: usize, out: &mut Vec<MemberAnswer>) {
        self.remove_member_at(i, out);
        if matches!(self.state, GroupState::Stable | GroupState::CompletingRebalance) {
            self.prepare_rebalance(now, out);
        } // PreparingRebalance: run_timers checks whether the join can complete now
    }

    fn complete_join(&mut self, now: u64, out: &mut Vec<MemberAnswer>) {
        // Dynamic members that did not rejoin are dropped; static ones stay (session timeout).
        while let Some(i) = self.members.iter().position(|m| m.awaiting_join.is_none() && m.group_instance_id.is_none())
        {
            self.remove_member_at(i, out);
        }
        let leader_joined =
            self.leader_id.as_deref().and_then(|l| self.idx(l)).map(|i| self.members[i].awaiting_join.is_some());
        if leader_joined == Some(false) {
            self.leader_id = self.members.iter().find(|m| m.awaiting_join.is_some()).map(|m| m.member_id.clone());
        }
        let rebalance_timeout = self.rebalance_timeout_ms();
        self.initial_delay_remaining_ms = None;
        if self.leader_id.is_none() && !self.members.is_empty() {
            // Nobody rejoined (only static laggards left): wait another rebalance timeout.
            self.join_deadline_ms = Some(now + rebalance_timeout);
            return;
        }
        self.join_deadline_ms = None;
        self.generation_id = self.generation_id.wrapping_add(1);
        if self.members.is_empty() {
            self.protocol_name = None;
            self.state = GroupState::Empty;
            // Kafka stores the empty group at its new generation.
            self.store_membership();
            return;
        }
        self.protocol_name = self.select_protocol();
        self.state = GroupState::CompletingRebalance;
        let all = self.current_member_metadata();
        let leader = self.leader_id.clone().unwrap_or_default();
        for i in 0..self.members.len() {
            if let Some(t) = self.members[i].awaiting_join.take() {
                let id = self.members[i].member_id.clone();
                let members = if id == leader { all.clone() } else { Vec::new() };
                let r = self.join_result(&id, members, leader.clone(), false);
                reply(out, t, Response::Join(r));
            }
            let m = &mut self.members[i];
            m.touch(now);
            m.is_new = false;
            self.pending_sync.insert(m.member_id.clone());
        }
        self.sync_deadline_ms = Some(now + rebalance_timeout);
    }

    /// Fire every timer due at `now_ms`: session expiries, join-phase completion
    /// (rebalance timeout / initial delay), members that never sent SyncGroup.
    pub fn tick(&mut self, now_ms: u64) -> Vec<MemberAnswer> {
        let mut out = Vec::new();
        self.run_timers(now_ms, &mut out);
        out
    }

    pub(super) fn run_timers(&mut self, now: u64, out: &mut Vec<MemberAnswer>) {
        if self.state == GroupState::Dead {
            return;
        }
        self.pending_members.retain(|_, d| *d > now);
        // Members parked in join/sync satisfy heartbeats, except new members (join timeout).
        let expired = |m: &Member| {
            m.heartbeat_deadline_ms <= now && (m.is_new || (m.awaiting_join.is_none() && m.awaiting_sync.is_none()))
        };
        while let Some(i) = self.members.iter().position(expired) {
            self.remove_member_and_update(now, i, out);
        }
        let sync_due = self.sync_deadline_ms.is_some_and(|d| d <= now);
        if sync_due && matches!(self.state, GroupState::CompletingRebalance | GroupState::Stable) {
            self.sync_deadline_ms = None;
            if !self.pending_sync.is_empty() {
                for id in std::mem::take(&mut self.pending_sync) {
                    if let Some(i) = self.idx(&id) {
                        self.remove_member_at(i, out);
                    }
                }
                self.prepare_rebalance(now, out);
            }
        }
        if self.state != GroupState::PreparingRebalance {
            return;
        }
        let due = self.join_deadline_ms.is_some_and(|d| d <= now);
        match self.initial_delay_remaining_ms {
            Some(remaining) if due && self.new_member_added && remaining > 0 => {
                let delay = self.config.initial_rebalance_delay_ms.min(remaining);
                self.join_deadline_ms = Some(now + delay);
                self.initial_delay_remaining_ms = Some(remaining - delay);
                self.new_member_added = false;
            }
            Some(_) if due => self.complete_join(now, out),
            Some(_) => {}
            None if due || self.all_joined() => self.complete_join(now, out),
            None => {}
        }
    }
}
