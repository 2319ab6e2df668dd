//! Pure state machine of one classic-protocol consumer group (Kafka's GroupCoordinator logic).
//!
//! No I/O, no clock: every call gets `now_ms` from the caller. Requests that must wait
//! (JoinGroup during PreparingRebalance, follower SyncGroup during CompletingRebalance) are
//! parked under the caller's opaque `token`; their answers come out as [`Reply`]s of later
//! calls or of [`Group::tick`]. Call `tick` at [`Group::next_deadline`] (or periodically).
//! Offsets ([`OffsetStore`]) and the generation ([`GroupSnapshot`]) are serde-serializable;
//! members are not persisted: after a restart the group is Empty and members rejoin.

use crate::error_code::ResponseError;
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet};

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
        }
    }
}

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
    awaiting_join: Option<u64>,
    awaiting_sync: Option<u64>,
    is_new: bool,
    heartbeat_deadline_ms: u64,
}

impl Member {
    fn metadata(&self, protocol: &str) -> Vec<u8> {
        let found = self.protocols.iter().find(|(n, _)| n == protocol);
        found.map(|(_, m)| m.clone()).unwrap_or_default()
    }
    fn touch(&mut self, now_ms: u64) {
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
    fn err(member_id: &str, e: GroupError) -> Self {
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
    fn err(e: GroupError) -> Self {
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

#[derive(Debug, Clone, PartialEq)]
pub struct Reply {
    pub token: u64,
    pub response: Response,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct OffsetEntry {
    pub offset: i64,
    pub leader_epoch: i32,
    pub metadata: String,
    pub commit_timestamp_ms: u64,
    /// Order of the commit (stands in for Kafka's log append offset).
    pub seq: u64,
}

pub type PartitionOffsets = BTreeMap<String, BTreeMap<i32, OffsetEntry>>;

#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct PendingTxn {
    pub producer_epoch: i16,
    pub offsets: PartitionOffsets,
}

/// Persistent offset state: committed offsets and pending transactional offsets.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct OffsetStore {
    pub committed: PartitionOffsets,
    pub pending_txn: BTreeMap<i64, PendingTxn>,
    pub next_seq: u64,
}

/// Everything that survives a restart.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct GroupSnapshot {
    pub generation_id: i32,
    pub protocol_type: Option<String>,
    pub offsets: OffsetStore,
}

#[derive(Debug, Clone, PartialEq)]
pub struct OffsetCommit {
    pub topic: String,
    pub partition: i32,
    pub offset: i64,
    pub leader_epoch: i32,
    pub metadata: String,
}

#[derive(Debug, Clone, PartialEq)]
pub struct FetchedOffset {
    pub topic: String,
    pub partition: i32,
    /// -1 when none.
    pub offset: i64,
    /// -1 when none.
    pub leader_epoch: i32,
    pub metadata: String,
    pub error: Option<GroupError>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct MemberDescription {
    pub member_id: String,
    pub group_instance_id: Option<String>,
    pub client_id: String,
    pub client_host: String,
    pub metadata: Vec<u8>,
    pub assignment: Vec<u8>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct GroupDescription {
    pub state: GroupState,
    pub protocol_type: String,
    /// Only set when Stable (Kafka's summary), else "".
    pub protocol: String,
    pub members: Vec<MemberDescription>,
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
}

fn reply(out: &mut Vec<Reply>, token: u64, response: Response) {
    out.push(Reply { token, response });
}

impl Group {
    pub fn new(group_id: impl Into<String>, config: GroupConfig) -> Self {
        Self::from_snapshot(group_id, config, GroupSnapshot::default())
    }

    /// Rebuild a group after a restart: Empty, generation and offsets kept.
    pub fn from_snapshot(group_id: impl Into<String>, config: GroupConfig, snap: GroupSnapshot) -> Self {
        let GroupSnapshot { generation_id, protocol_type, offsets } = snap;
        Group { group_id: group_id.into(), config, generation_id, protocol_type, offsets, ..Default::default() }
    }

    pub fn snapshot(&self) -> GroupSnapshot {
        GroupSnapshot {
            generation_id: self.generation_id,
            protocol_type: self.protocol_type.clone(),
            offsets: self.offsets.clone(),
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

    /// Earliest time at which `tick` has something to do.
    pub fn next_deadline(&self) -> Option<u64> {
        let hb = self.members.iter().map(|m| m.heartbeat_deadline_ms);
        let pend = self.pending_members.values().copied();
        let sync = if self.pending_sync.is_empty() { None } else { self.sync_deadline_ms };
        hb.chain(pend).chain(self.join_deadline_ms).chain(sync).min()
    }

    fn idx(&self, member_id: &str) -> Option<usize> {
        self.members.iter().position(|m| m.member_id == member_id)
    }

    fn static_member_id(&self, instance_id: &str) -> Option<&str> {
        let m = self.members.iter().find(|m| m.group_instance_id.as_deref() == Some(instance_id));
        m.map(|m| m.member_id.as_str())
    }

    fn is_leader(&self, member_id: &str) -> bool {
        self.leader_id.as_deref() == Some(member_id)
    }

    /// FENCED_INSTANCE_ID / UNKNOWN_MEMBER_ID checks; returns the member index.
    fn validate_member(&self, member_id: &str, instance_id: Option<&str>) -> Result<usize, GroupError> {
        if let Some(inst) = instance_id {
            match self.static_member_id(inst) {
                None => return Err(GroupError::UnknownMemberId),
                Some(id) if id != member_id => return Err(GroupError::FencedInstanceId),
                Some(_) => {}
            }
        }
        self.idx(member_id).ok_or(GroupError::UnknownMemberId)
    }

    fn rebalance_timeout_ms(&self) -> u64 {
        self.members.iter().map(|m| m.rebalance_timeout_ms.max(0) as u64).max().unwrap_or(0)
    }

    fn supports_protocols(&self, protocol_type: &str, protocols: &[(String, Vec<u8>)]) -> bool {
        if self.state == GroupState::Empty || self.members.is_empty() {
            return !protocol_type.is_empty() && !protocols.is_empty();
        }
        self.protocol_type.as_deref() == Some(protocol_type)
            && protocols.iter().any(|(p, _)| self.members.iter().all(|m| m.protocols.iter().any(|(q, _)| q == p)))
    }

    /// Vote among the protocols every member supports: each member votes for its most
    /// preferred candidate; ties go to the candidate listed first by the first member.
    fn select_protocol(&self) -> Option<String> {
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

    fn current_member_metadata(&self) -> Vec<JoinMember> {
        let proto = self.protocol_name.clone().unwrap_or_default();
        let f = |m: &Member| JoinMember {
            member_id: m.member_id.clone(),
            group_instance_id: m.group_instance_id.clone(),
            metadata: m.metadata(&proto),
        };
        self.members.iter().map(f).collect()
    }

    fn join_result(&self, member_id: &str, members: Vec<JoinMember>, leader: String, skip: bool) -> JoinResponse {
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

    // ------------------------------------------------------------------ JoinGroup

    /// JoinGroup. `new_member_id` is called at most once, to mint an id for an unknown member.
    pub fn join(
        &mut self,
        now_ms: u64,
        token: u64,
        req: JoinRequest,
        new_member_id: impl FnOnce() -> String,
    ) -> Vec<Reply> {
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
        out: &mut Vec<Reply>,
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

    fn add_member_and_rebalance(&mut self, now: u64, token: u64, id: String, req: JoinRequest, out: &mut Vec<Reply>) {
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

    fn update_member(&mut self, i: usize, token: u64, req: JoinRequest, out: &mut Vec<Reply>) {
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

    fn update_member_and_rebalance(&mut self, now: u64, token: u64, i: usize, req: JoinRequest, out: &mut Vec<Reply>) {
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
        out: &mut Vec<Reply>,
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

    fn maybe_prepare_rebalance(&mut self, now: u64, out: &mut Vec<Reply>) {
        if matches!(self.state, GroupState::Stable | GroupState::CompletingRebalance | GroupState::Empty) {
            self.prepare_rebalance(now, out);
        }
    }

    fn prepare_rebalance(&mut self, now: u64, out: &mut Vec<Reply>) {
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
    fn propagate_sync(&mut self, now: u64, error: Option<GroupError>, out: &mut Vec<Reply>) {
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
    fn remove_member_at(&mut self, i: usize, out: &mut Vec<Reply>) {
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

    fn remove_member_and_update(&mut self, now: u64, i: usize, out: &mut Vec<Reply>) {
        self.remove_member_at(i, out);
        if matches!(self.state, GroupState::Stable | GroupState::CompletingRebalance) {
            self.prepare_rebalance(now, out);
        } // PreparingRebalance: run_timers checks whether the join can complete now
    }

    fn complete_join(&mut self, now: u64, out: &mut Vec<Reply>) {
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
    pub fn tick(&mut self, now_ms: u64) -> Vec<Reply> {
        let mut out = Vec::new();
        self.run_timers(now_ms, &mut out);
        out
    }

    fn run_timers(&mut self, now: u64, out: &mut Vec<Reply>) {
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

    // ------------------------------------------------------------------ SyncGroup

    pub fn sync(&mut self, now_ms: u64, token: u64, req: SyncRequest) -> Vec<Reply> {
        let mut out = Vec::new();
        self.run_timers(now_ms, &mut out);
        if let Err(e) = self.do_sync(now_ms, token, req, &mut out) {
            reply(&mut out, token, Response::Sync(SyncResponse::err(e)));
        }
        self.run_timers(now_ms, &mut out);
        out
    }

    fn do_sync(&mut self, now: u64, token: u64, req: SyncRequest, out: &mut Vec<Reply>) -> Result<(), GroupError> {
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
    ) -> Vec<Reply> {
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
    pub fn leave(&mut self, now_ms: u64, token: u64, leaving: Vec<LeaveMember>) -> Vec<Reply> {
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

    fn leave_one(&mut self, now: u64, lm: &LeaveMember, out: &mut Vec<Reply>) -> Result<(), GroupError> {
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

// ---------------------------------------------------------------------- offsets & admin

impl Group {
    /// Kafka's validateOffsetCommit; returns the committing member's index, if any.
    fn validate_offset_commit(
        &self,
        generation: i32,
        member_id: &str,
        inst: Option<&str>,
        transactional: bool,
    ) -> Result<Option<usize>, GroupError> {
        if self.state == GroupState::Dead {
            return Err(GroupError::CoordinatorNotAvailable);
        }
        if generation < 0 && self.state == GroupState::Empty {
            return Ok(None); // standalone consumer / admin client
        }
        let mut idx = None;
        if generation >= 0 || !member_id.is_empty() || inst.is_some() {
            idx = Some(self.validate_member(member_id, inst)?);
            if generation != self.generation_id {
                return Err(GroupError::IllegalGeneration);
            }
        } else if !transactional && self.state != GroupState::Empty {
            return Err(GroupError::UnknownMemberId);
        }
        if !transactional && self.state == GroupState::CompletingRebalance {
            return Err(GroupError::RebalanceInProgress);
        }
        Ok(idx)
    }

    fn entries(&mut self, now_ms: u64, offsets: Vec<OffsetCommit>) -> Vec<(String, i32, OffsetEntry)> {
        let mut v = Vec::with_capacity(offsets.len());
        for o in offsets {
            let seq = self.offsets.next_seq;
            self.offsets.next_seq += 1;
            let e = OffsetEntry {
                offset: o.offset,
                leader_epoch: o.leader_epoch,
                metadata: o.metadata,
                commit_timestamp_ms: now_ms,
                seq,
            };
            v.push((o.topic, o.partition, e));
        }
        v
    }

    /// OffsetCommit. Group-level checks only (metadata size etc. is the caller's business).
    /// A successful member commit also counts as a heartbeat, as in Kafka.
    pub fn commit_offsets(
        &mut self,
        now_ms: u64,
        generation_id: i32,
        member_id: &str,
        group_instance_id: Option<&str>,
        offsets: Vec<OffsetCommit>,
    ) -> Result<(), GroupError> {
        let idx = self.validate_offset_commit(generation_id, member_id, group_instance_id, false)?;
        if let Some(i) = idx {
            self.members[i].touch(now_ms);
        }
        for (t, p, e) in self.entries(now_ms, offsets) {
            self.offsets.committed.entry(t).or_default().insert(p, e);
        }
        Ok(())
    }

    /// TxnOffsetCommit: offsets stay pending for `producer_id` until [`Group::complete_txn`].
    /// Producer-epoch fencing is the transaction layer's job; the epoch is only recorded.
    #[allow(clippy::too_many_arguments)]
    pub fn txn_offset_commit(
        &mut self,
        now_ms: u64,
        producer_id: i64,
        producer_epoch: i16,
        generation_id: i32,
        member_id: &str,
        group_instance_id: Option<&str>,
        offsets: Vec<OffsetCommit>,
    ) -> Result<(), GroupError> {
        self.validate_offset_commit(generation_id, member_id, group_instance_id, true)?;
        let entries = self.entries(now_ms, offsets);
        let pending = self.offsets.pending_txn.entry(producer_id).or_default();
        pending.producer_epoch = producer_epoch;
        for (t, p, e) in entries {
            pending.offsets.entry(t).or_default().insert(p, e);
        }
        Ok(())
    }

    /// Transaction marker: commit moves the producer's pending offsets into the committed
    /// ones (unless a later plain commit already overwrote a partition); abort drops them.
    /// Returns whether the producer had pending offsets.
    pub fn complete_txn(&mut self, producer_id: i64, commit: bool) -> bool {
        let Some(pending) = self.offsets.pending_txn.remove(&producer_id) else {
            return false;
        };
        if commit {
            for (t, parts) in pending.offsets {
                let committed = self.offsets.committed.entry(t).or_default();
                for (p, e) in parts {
                    if committed.get(&p).is_none_or(|c| c.seq < e.seq) {
                        committed.insert(p, e);
                    }
                }
            }
        }
        true
    }

    pub fn has_pending_txn_offset(&self, topic: &str, partition: i32) -> bool {
        let has = |p: &PendingTxn| p.offsets.get(topic).is_some_and(|m| m.contains_key(&partition));
        self.offsets.pending_txn.values().any(has)
    }

    /// OffsetFetch. `partitions: None` = all committed partitions.
    pub fn fetch_offsets(&self, partitions: Option<&[(String, i32)]>, require_stable: bool) -> Vec<FetchedOffset> {
        let wanted: Vec<(String, i32)> = match partitions {
            Some(p) => p.to_vec(),
            None => {
                let c = &self.offsets.committed;
                c.iter().flat_map(|(t, m)| m.keys().map(move |p| (t.clone(), *p))).collect()
            }
        };
        let fetch = |(topic, partition): (String, i32)| {
            let entry = self.offsets.committed.get(&topic).and_then(|m| m.get(&partition));
            let unstable = require_stable && self.has_pending_txn_offset(&topic, partition);
            match entry {
                Some(e) if !unstable => FetchedOffset {
                    offset: e.offset,
                    leader_epoch: e.leader_epoch,
                    metadata: e.metadata.clone(),
                    error: None,
                    topic,
                    partition,
                },
                _ => FetchedOffset {
                    offset: -1,
                    leader_epoch: -1,
                    metadata: String::new(),
                    error: unstable.then_some(GroupError::UnstableOffsetCommit),
                    topic,
                    partition,
                },
            }
        };
        wanted.into_iter().map(fetch).collect()
    }

    /// OffsetDelete (KIP-496). `decode_topics` parses one member's protocol metadata into its
    /// subscribed topics (None = unparseable: treated as subscribed to everything). Only
    /// consulted for non-empty "consumer" groups; other non-empty groups → NON_EMPTY_GROUP.
    pub fn delete_offsets(
        &mut self,
        partitions: &[(String, i32)],
        decode_topics: impl Fn(&[u8]) -> Option<Vec<String>>,
    ) -> Result<Vec<(String, i32, Option<GroupError>)>, GroupError> {
        if self.state == GroupState::Dead {
            return Err(GroupError::GroupIdNotFound);
        }
        let mut subscribed: Option<BTreeSet<String>> = Some(BTreeSet::new()); // None = all
        if self.state != GroupState::Empty {
            if self.protocol_type.as_deref() != Some("consumer") {
                return Err(GroupError::NonEmptyGroup);
            }
            for m in &self.members {
                let proto = self.protocol_name.as_deref();
                let meta = proto.map(|p| m.metadata(p)).or_else(|| m.protocols.first().map(|(_, md)| md.clone()));
                match (decode_topics(&meta.unwrap_or_default()), subscribed.as_mut()) {
                    (Some(topics), Some(set)) => set.extend(topics),
                    _ => subscribed = None,
                }
            }
        }
        let mut results = Vec::new();
        for (topic, partition) in partitions {
            let is_sub = subscribed.as_ref().is_none_or(|s| s.contains(topic));
            if is_sub {
                results.push((topic.clone(), *partition, Some(GroupError::GroupSubscribedToTopic)));
                continue;
            }
            if let Some(m) = self.offsets.committed.get_mut(topic) {
                m.remove(partition);
                if m.is_empty() {
                    self.offsets.committed.remove(topic);
                }
            }
            for p in self.offsets.pending_txn.values_mut() {
                if let Some(m) = p.offsets.get_mut(topic) {
                    m.remove(partition);
                }
            }
            results.push((topic.clone(), *partition, None));
        }
        Ok(results)
    }

    /// Kafka's offset expiration (offsets.retention.minutes, KIP-211): while the group is Empty,
    /// a committed offset expires `offsets_retention_ms` after its commit. Pending transactional
    /// offsets never expire here (the transaction coordinator ends them). Returns how many expired.
    pub fn expire_offsets(&mut self, now_ms: u64) -> usize {
        if self.state != GroupState::Empty {
            return 0;
        }
        let retention = self.config.offsets_retention_ms;
        let mut expired = 0;
        for partitions in self.offsets.committed.values_mut() {
            let before = partitions.len();
            partitions.retain(|_, e| e.commit_timestamp_ms.saturating_add(retention) > now_ms);
            expired += before - partitions.len();
        }
        self.offsets.committed.retain(|_, partitions| !partitions.is_empty());
        expired
    }

    /// An Empty group that holds nothing (no offsets, no pending transactional offsets, no
    /// member being admitted) is forgotten, as Kafka drops such a group at its expiration check.
    pub fn is_removable(&self) -> bool {
        matches!(self.state, GroupState::Empty | GroupState::Dead)
            && self.members.is_empty()
            && self.pending_members.is_empty()
            && self.offsets.committed.is_empty()
            && self.offsets.pending_txn.is_empty()
    }

    /// DeleteGroups precondition.
    pub fn can_delete_group(&self) -> Result<(), GroupError> {
        match self.state {
            GroupState::Dead => Err(GroupError::GroupIdNotFound),
            GroupState::Empty => Ok(()),
            _ => Err(GroupError::NonEmptyGroup),
        }
    }

    /// DeleteGroups: group becomes Dead and its offsets are dropped.
    pub fn delete_group(&mut self) -> Result<(), GroupError> {
        self.can_delete_group()?;
        self.state = GroupState::Dead;
        self.pending_members.clear();
        self.join_deadline_ms = None;
        self.offsets.committed.clear();
        self.offsets.pending_txn.clear();
        Ok(())
    }

    /// DescribeGroups (metadata/assignment and protocol only when Stable, as Kafka).
    pub fn describe(&self) -> GroupDescription {
        let stable = self.state == GroupState::Stable;
        let protocol = if stable { self.protocol_name.clone().unwrap_or_default() } else { String::new() };
        let members = if self.state == GroupState::Dead { &[][..] } else { &self.members[..] };
        let describe_member = |m: &Member| MemberDescription {
            member_id: m.member_id.clone(),
            group_instance_id: m.group_instance_id.clone(),
            client_id: m.client_id.clone(),
            client_host: m.client_host.clone(),
            metadata: if stable { m.metadata(&protocol) } else { Vec::new() },
            assignment: if stable { m.assignment.clone() } else { Vec::new() },
        };
        GroupDescription {
            state: self.state,
            protocol_type: self.protocol_type.clone().unwrap_or_default(),
            protocol: protocol.clone(),
            members: members.iter().map(describe_member).collect(),
        }
    }

    /// ListGroups entry: (protocol type, state name).
    pub fn list_entry(&self) -> (String, &'static str) {
        (self.protocol_type.clone().unwrap_or_default(), self.state.name())
    }
}

#[cfg(test)]
mod tests {
    use super::GroupState::*;
    use super::*;

    fn cfg(delay: u64) -> GroupConfig {
        GroupConfig { initial_rebalance_delay_ms: delay, ..Default::default() }
    }
    fn jreq(version: i16, member_id: &str, inst: Option<&str>, meta: &[u8]) -> JoinRequest {
        JoinRequest {
            version,
            member_id: member_id.into(),
            group_instance_id: inst.map(Into::into),
            client_id: "c".into(),
            client_host: "/127.0.0.1".into(),
            session_timeout_ms: 10_000,
            rebalance_timeout_ms: 30_000,
            protocol_type: "consumer".into(),
            protocols: vec![("range".into(), meta.to_vec())],
        }
    }
    fn join(g: &mut Group, now: u64, token: u64, req: JoinRequest, id: &str) -> Vec<Reply> {
        g.join(now, token, req, || id.to_string())
    }
    fn sreq(generation_id: i32, id: &str, inst: Option<&str>, assignments: &[(&str, &[u8])]) -> SyncRequest {
        SyncRequest {
            generation_id,
            member_id: id.into(),
            group_instance_id: inst.map(Into::into),
            protocol_type: Some("consumer".into()),
            protocol_name: Some("range".into()),
            assignments: assignments.iter().map(|(m, a)| (m.to_string(), a.to_vec())).collect(),
        }
    }
    fn join_resp(out: &[Reply], token: u64) -> JoinResponse {
        match out.iter().find(|r| r.token == token).map(|r| &r.response) {
            Some(Response::Join(j)) => j.clone(),
            other => panic!("no join reply for {token}: {other:?} in {out:?}"),
        }
    }
    fn sync_resp(out: &[Reply], token: u64) -> SyncResponse {
        match out.iter().find(|r| r.token == token).map(|r| &r.response) {
            Some(Response::Sync(s)) => s.clone(),
            other => panic!("no sync reply for {token}: {other:?} in {out:?}"),
        }
    }
    fn hb(g: &mut Group, now: u64, generation: i32, id: &str, inst: Option<&str>) -> i16 {
        let out = g.heartbeat(now, 999, generation, id, inst);
        match &out.last().unwrap().response {
            Response::Heartbeat(e) => error_code(*e),
            r => panic!("{r:?}"),
        }
    }
    fn oc(topic: &str, partition: i32, offset: i64) -> OffsetCommit {
        OffsetCommit { topic: topic.into(), partition, offset, leader_epoch: 3, metadata: "md".into() }
    }
    fn fetched(g: &Group, topic: &str, partition: i32, require_stable: bool) -> FetchedOffset {
        g.fetch_offsets(Some(&[(topic.to_string(), partition)]), require_stable).remove(0)
    }

    /// Generation-1 Stable group; member i gets assignment "a-<id>". Syncs happen at t=200.
    fn stable_group(ids: &[&str], inst: bool) -> Group {
        let mut g = Group::new("g", cfg(100));
        for (i, id) in ids.iter().enumerate() {
            let instance = inst.then(|| format!("i-{id}"));
            assert!(join(&mut g, 0, i as u64, jreq(3, "", instance.as_deref(), b"m"), id).is_empty());
        }
        let mut out = g.tick(100); // initial delay extended once when several members joined
        out.extend(g.tick(200));
        assert_eq!(out.len(), ids.len());
        assert_eq!((g.state(), g.generation_id()), (CompletingRebalance, 1));
        for id in &ids[1..] {
            let instance = inst.then(|| format!("i-{id}"));
            assert!(g.sync(200, 50, sreq(1, id, instance.as_deref(), &[])).is_empty());
        }
        let assignments: Vec<(String, Vec<u8>)> =
            ids.iter().map(|id| (id.to_string(), format!("a-{id}").into_bytes())).collect();
        let leader_inst = inst.then(|| format!("i-{}", ids[0]));
        let req = SyncRequest { assignments, ..sreq(1, ids[0], leader_inst.as_deref(), &[]) };
        let out = g.sync(200, 60, req);
        assert_eq!(out.len(), ids.len());
        assert_eq!(sync_resp(&out, 60).assignment, format!("a-{}", ids[0]).into_bytes());
        assert_eq!(g.state(), Stable);
        g
    }

    #[test]
    fn join_first_member_gets_member_id_required() {
        let mut g = Group::new("g", cfg(0));
        let out = join(&mut g, 0, 1, jreq(4, "", None, b"m"), "m1");
        let r = join_resp(&out, 1);
        assert_eq!((error_code(r.error), r.member_id.as_str(), r.generation_id), (79, "m1", -1));
        assert_eq!((g.state(), g.members().len()), (Empty, 0));
        let r = join_resp(&join(&mut g, 0, 2, jreq(4, "zzz", None, b"m"), "x"), 2);
        assert_eq!(error_code(r.error), 25);
        let r = join_resp(&join(&mut g, 1, 3, jreq(4, "m1", None, b"m"), "x"), 3);
        assert_eq!((r.error, r.generation_id, r.leader.as_str()), (None, 1, "m1"));
        assert_eq!(r.protocol_name.as_deref(), Some("range"));
        assert_eq!(
            r.members,
            vec![JoinMember { member_id: "m1".into(), group_instance_id: None, metadata: b"m".to_vec() }]
        );
        assert_eq!(g.state(), CompletingRebalance);
    }

    #[test]
    fn inconsistent_protocol_rejected() {
        let mut g = stable_group(&["m1"], false);
        let mut req = jreq(3, "", None, b"m");
        req.protocols = vec![("roundrobin".into(), vec![])];
        assert_eq!(error_code(join_resp(&join(&mut g, 300, 1, req, "m2"), 1).error), 23);
        let mut req = jreq(3, "", None, b"m");
        req.protocol_type = "connect".into();
        assert_eq!(error_code(join_resp(&join(&mut g, 300, 2, req, "m2"), 2).error), 23);
        let mut req = jreq(3, "", None, b"m");
        req.session_timeout_ms = 10;
        assert_eq!(error_code(join_resp(&join(&mut g, 300, 3, req, "m2"), 3).error), 26);
        let out = g.sync(300, 4, SyncRequest { protocol_name: Some("sticky".into()), ..sreq(1, "m1", None, &[]) });
        assert_eq!(error_code(sync_resp(&out, 4).error), 23);
        assert_eq!((g.state(), g.generation_id()), (Stable, 1));
    }

    #[test]
    fn single_member_join_sync_becomes_stable() {
        let mut g = Group::new("g", cfg(0));
        let r = join_resp(&join(&mut g, 0, 1, jreq(3, "", None, b"m"), "m1"), 1);
        assert_eq!((r.error, r.generation_id, r.member_id.as_str(), r.leader.as_str()), (None, 1, "m1", "m1"));
        let out = g.sync(5, 2, sreq(1, "m1", None, &[("m1", b"A")]));
        let s = sync_resp(&out, 2);
        assert_eq!((s.error, s.assignment.as_slice(), s.protocol_name.as_deref()), (None, &b"A"[..], Some("range")));
        assert_eq!((g.state(), g.generation_id()), (Stable, 1));
        assert_eq!(hb(&mut g, 6, 1, "m1", None), 0);
        let d = g.describe();
        assert_eq!((d.state, d.protocol_type.as_str(), d.protocol.as_str()), (Stable, "consumer", "range"));
        assert_eq!((d.members[0].metadata.as_slice(), d.members[0].assignment.as_slice()), (&b"m"[..], &b"A"[..]));
        assert_eq!(g.list_entry(), ("consumer".to_string(), "Stable"));
        // A follower-less Stable group answers a repeated sync with the stored assignment.
        assert_eq!(sync_resp(&g.sync(7, 3, sreq(1, "m1", None, &[])), 3).assignment, b"A");
    }

    #[test]
    fn rebalance_on_join_while_stable() {
        let mut g = stable_group(&["m1", "m2"], false);
        let r = join_resp(&join(&mut g, 1000, 1, jreq(4, "", None, b"m"), "m3"), 1);
        assert_eq!(error_code(r.error), 79);
        assert_eq!(g.state(), Stable); // a pending member alone does not rebalance
        assert!(join(&mut g, 1001, 2, jreq(4, "m3", None, b"m3"), "x").is_empty());
        assert_eq!(g.state(), PreparingRebalance);
        assert_eq!(hb(&mut g, 1002, 1, "m1", None), 27);
        assert!(join(&mut g, 1003, 3, jreq(4, "m1", None, b"m"), "x").is_empty());
        let out = join(&mut g, 1004, 4, jreq(4, "m2", None, b"m"), "x");
        assert_eq!(out.len(), 3);
        let (r1, r2, r3) = (join_resp(&out, 3), join_resp(&out, 4), join_resp(&out, 2));
        assert_eq!((r1.generation_id, r1.leader.as_str(), r1.members.len()), (2, "m1", 3));
        assert_eq!((r2.generation_id, r2.members.len(), r3.member_id.as_str()), (2, 0, "m3"));
        assert_eq!((g.state(), g.generation_id()), (CompletingRebalance, 2));
        assert_eq!(hb(&mut g, 1005, 2, "m3", None), 0);
    }

    #[test]
    fn rebalance_on_leave() {
        let mut g = stable_group(&["m1", "m2"], false);
        let leaving = vec![
            LeaveMember { member_id: "m2".into(), group_instance_id: None },
            LeaveMember { member_id: "nope".into(), group_instance_id: None },
        ];
        let out = g.leave(300, 1, leaving);
        let Response::Leave(l) = &out[0].response else { panic!("{out:?}") };
        let codes: Vec<i16> = l.members.iter().map(|m| error_code(m.error)).collect();
        assert_eq!((l.error, codes), (None, vec![0, 25]));
        assert_eq!((g.state(), g.members().len()), (PreparingRebalance, 1));
        let r = join_resp(&join(&mut g, 301, 2, jreq(3, "m1", None, b"m"), "x"), 2);
        assert_eq!((r.generation_id, r.leader.as_str(), r.members.len()), (2, "m1", 1));
        g.sync(302, 3, sreq(2, "m1", None, &[("m1", b"A")]));
        assert_eq!(g.state(), Stable);
        g.leave(303, 4, vec![LeaveMember { member_id: "m1".into(), group_instance_id: None }]);
        assert_eq!((g.state(), g.generation_id(), g.members().len()), (Empty, 3, 0));
    }

    #[test]
    fn rebalance_on_session_timeout() {
        let mut g = stable_group(&["m1", "m2"], false); // session deadlines at 200 + 10_000
        assert_eq!(hb(&mut g, 5000, 1, "m1", None), 0);
        assert!(g.tick(10_199).is_empty());
        assert_eq!(g.next_deadline(), Some(10_200));
        assert!(g.tick(10_200).is_empty());
        assert_eq!((g.state(), g.members().len()), (PreparingRebalance, 1));
        assert_eq!(hb(&mut g, 10_201, 1, "m2", None), 25);
        assert_eq!(hb(&mut g, 10_202, 1, "m1", None), 27);
        let r = join_resp(&join(&mut g, 10_203, 1, jreq(3, "m1", None, b"m"), "x"), 1);
        assert_eq!((r.generation_id, r.members.len()), (2, 1));
        assert_eq!(g.state(), CompletingRebalance);
    }

    #[test]
    fn rebalance_timeout_removes_laggards() {
        let mut g = stable_group(&["m1", "m2"], false);
        assert!(join(&mut g, 1000, 1, jreq(3, "", None, b"m"), "m3").is_empty());
        assert!(join(&mut g, 2000, 2, jreq(3, "m1", None, b"m"), "x").is_empty());
        for t in [9000, 18_000, 27_000] {
            assert_eq!(hb(&mut g, t, 1, "m2", None), 27); // alive, but never rejoins
        }
        assert!(g.tick(30_999).is_empty());
        let out = g.tick(31_000); // 1000 + max rebalance timeout
        assert_eq!(out.len(), 2);
        assert_eq!((join_resp(&out, 2).members.len(), join_resp(&out, 1).generation_id), (2, 2));
        assert_eq!((g.state(), g.generation_id(), g.members().len()), (CompletingRebalance, 2, 2));
        assert_eq!(hb(&mut g, 31_001, 2, "m2", None), 25);
    }

    #[test]
    fn pending_sync_members_are_removed_after_rebalance_timeout() {
        let mut g = Group::new("g", cfg(100));
        let req = JoinRequest { rebalance_timeout_ms: 5000, ..jreq(3, "", None, b"m") };
        join(&mut g, 0, 1, req.clone(), "m1");
        join(&mut g, 0, 2, req, "m2");
        g.tick(100);
        assert_eq!(g.tick(200).len(), 2);
        g.sync(300, 3, sreq(1, "m1", None, &[("m1", b"A"), ("m2", b"B")]));
        assert_eq!(g.state(), Stable);
        assert!(g.tick(5199).is_empty());
        g.tick(5200); // m2 never sent SyncGroup within the rebalance timeout
        assert_eq!((g.state(), g.members().len()), (PreparingRebalance, 1));
    }

    #[test]
    fn static_member_rejoin_fences_old_member_id() {
        let mut g = Group::new("g", cfg(0));
        let r = join_resp(&join(&mut g, 0, 1, jreq(5, "", Some("i1"), b"m"), "a"), 1);
        assert_eq!((r.error, r.member_id.as_str(), r.generation_id), (None, "a", 1)); // static: no 79
        g.sync(1, 2, sreq(1, "a", Some("i1"), &[("a", b"A")]));
        let r = join_resp(&join(&mut g, 2, 3, jreq(5, "", Some("i1"), b"m"), "b"), 3);
        assert_eq!((r.error, r.member_id.as_str(), r.generation_id), (None, "b", 1));
        assert_eq!(hb(&mut g, 3, 1, "a", Some("i1")), 82);
        assert_eq!(error_code(sync_resp(&g.sync(3, 4, sreq(1, "a", Some("i1"), &[])), 4).error), 82);
        assert_eq!(g.commit_offsets(3, 1, "a", Some("i1"), vec![oc("t", 0, 1)]), Err(GroupError::FencedInstanceId));
        assert_eq!(error_code(join_resp(&join(&mut g, 3, 5, jreq(5, "a", Some("i1"), b"m"), "x"), 5).error), 82);
        assert_eq!(hb(&mut g, 3, 1, "b", Some("i1")), 0);
        assert!(join(&mut g, 4, 6, jreq(5, "", Some("i2"), b"m"), "n").is_empty());
        let out = join(&mut g, 5, 7, jreq(5, "b", Some("i1"), b"m"), "x");
        assert_eq!((join_resp(&out, 7).generation_id, join_resp(&out, 6).leader.as_str()), (2, "b"));
        // A replaced member's parked sync is answered FENCED_INSTANCE_ID; the group rebalances.
        assert!(g.sync(6, 8, sreq(2, "n", Some("i2"), &[])).is_empty());
        let out = join(&mut g, 7, 9, jreq(5, "", Some("i2"), b"m"), "n2");
        assert_eq!((out.len(), error_code(sync_resp(&out, 8).error)), (1, 82));
        assert_eq!(g.state(), PreparingRebalance);
        let out = join(&mut g, 8, 10, jreq(5, "b", Some("i1"), b"m"), "x");
        assert_eq!((join_resp(&out, 9).member_id.as_str(), join_resp(&out, 9).generation_id), ("n2", 3));
    }

    #[test]
    fn static_member_rejoin_keeps_assignment_without_rebalance() {
        let mut g = stable_group(&["a", "b"], true);
        let r = join_resp(&join(&mut g, 300, 1, jreq(5, "", Some("i-b"), b"m"), "b2"), 1);
        assert_eq!((r.error, r.generation_id, r.member_id.as_str(), r.leader.as_str()), (None, 1, "b2", "a"));
        assert_eq!((r.members.len(), r.skip_assignment), (0, false));
        assert_eq!((g.state(), g.generation_id()), (Stable, 1));
        let s = sync_resp(&g.sync(301, 2, sreq(1, "b2", Some("i-b"), &[])), 2);
        assert_eq!((s.error, s.assignment.as_slice()), (None, &b"a-b"[..]));
        // v9 leader: member list with skip_assignment; older leader: told the previous leader id.
        let r = join_resp(&join(&mut g, 302, 3, jreq(9, "", Some("i-a"), b"m"), "a2"), 3);
        assert_eq!((r.leader.as_str(), r.members.len(), r.skip_assignment), ("a2", 2, true));
        let r = join_resp(&join(&mut g, 303, 4, jreq(5, "", Some("i-a"), b"m"), "a3"), 4);
        assert_eq!((r.leader.as_str(), r.members.len(), r.skip_assignment), ("a2", 0, false));
        assert_eq!((g.state(), g.generation_id(), g.leader()), (Stable, 1, Some("a3")));
        // Changed subscription metadata: rebalance.
        assert!(join(&mut g, 304, 5, jreq(5, "", Some("i-b"), b"new"), "b3").is_empty());
        assert_eq!(g.state(), PreparingRebalance);
    }

    #[test]
    fn sync_waits_for_leader() {
        let mut g = Group::new("g", cfg(100));
        join(&mut g, 0, 1, jreq(3, "", None, b"m"), "m1");
        join(&mut g, 0, 2, jreq(3, "", None, b"m"), "m2");
        join(&mut g, 0, 3, jreq(3, "", None, b"m"), "m3");
        assert!(g.tick(100).is_empty());
        assert_eq!(g.tick(200).len(), 3);
        assert!(g.sync(201, 12, sreq(1, "m2", None, &[])).is_empty());
        assert_eq!(error_code(sync_resp(&g.sync(201, 13, sreq(0, "m3", None, &[])), 13).error), 22);
        assert_eq!(error_code(sync_resp(&g.sync(201, 14, sreq(1, "zz", None, &[])), 14).error), 25);
        assert_eq!(g.state(), CompletingRebalance);
        let out = g.sync(202, 11, sreq(1, "m1", None, &[("m1", b"A"), ("m2", b"B")]));
        assert_eq!(out.len(), 2);
        assert_eq!((sync_resp(&out, 11).assignment, sync_resp(&out, 12).assignment), (b"A".to_vec(), b"B".to_vec()));
        assert_eq!(g.state(), Stable);
        assert_eq!(sync_resp(&g.sync(203, 15, sreq(1, "m3", None, &[])), 15).assignment, b"");
        // left out by leader
    }

    #[test]
    fn heartbeat_during_rebalance_is_rebalance_in_progress() {
        let mut g = stable_group(&["m1", "m2"], false);
        join(&mut g, 300, 1, jreq(3, "m1", Some("zz"), b"m"), "x"); // unknown instance
        assert_eq!(g.state(), Stable);
        join(&mut g, 300, 2, jreq(3, "m1", None, b"m"), "x"); // leader rejoin -> rebalance
        assert_eq!(g.state(), PreparingRebalance);
        assert_eq!(hb(&mut g, 301, 1, "m2", None), 27);
        assert_eq!(hb(&mut g, 301, 0, "m2", None), 22);
        assert_eq!(hb(&mut g, 301, 1, "zz", None), 25);
        let out = g.sync(301, 3, sreq(1, "m2", None, &[]));
        assert_eq!(error_code(sync_resp(&out, 3).error), 27);
        join(&mut g, 302, 4, jreq(3, "m2", None, b"m"), "x");
        assert_eq!(g.state(), CompletingRebalance);
        assert_eq!(hb(&mut g, 303, 2, "m2", None), 0);
    }

    #[test]
    fn commit_with_wrong_generation_is_illegal_generation() {
        let mut g = stable_group(&["m1", "m2"], false);
        assert_eq!(g.commit_offsets(300, 0, "m1", None, vec![oc("t", 0, 5)]), Err(GroupError::IllegalGeneration));
        assert_eq!(g.commit_offsets(300, 1, "zz", None, vec![oc("t", 0, 5)]), Err(GroupError::UnknownMemberId));
        assert_eq!(g.commit_offsets(300, -1, "", None, vec![oc("t", 0, 5)]), Err(GroupError::UnknownMemberId));
        assert_eq!(g.commit_offsets(300, 1, "m1", None, vec![oc("t", 0, 5)]), Ok(()));
        let f = fetched(&g, "t", 0, false);
        assert_eq!((f.offset, f.leader_epoch, f.metadata.as_str(), f.error), (5, 3, "md", None));
        join(&mut g, 301, 1, jreq(3, "m1", None, b"m"), "x");
        assert_eq!(g.state(), PreparingRebalance); // commits still accepted for the old generation
        assert_eq!(g.commit_offsets(302, 1, "m2", None, vec![oc("t", 0, 6)]), Ok(()));
        join(&mut g, 303, 2, jreq(3, "m2", None, b"m"), "x");
        assert_eq!(g.state(), CompletingRebalance);
        assert_eq!(g.commit_offsets(304, 2, "m1", None, vec![oc("t", 0, 7)]), Err(GroupError::RebalanceInProgress));
        assert_eq!(fetched(&g, "t", 0, false).offset, 6);
    }

    #[test]
    fn standalone_commit_allowed_for_empty_group() {
        let mut g = Group::new("g", cfg(0));
        assert_eq!(g.commit_offsets(1, -1, "", None, vec![oc("t", 0, 10), oc("t", 1, 11)]), Ok(()));
        let all = g.fetch_offsets(None, false);
        assert_eq!(all.iter().map(|f| f.offset).collect::<Vec<_>>(), vec![10, 11]);
        assert_eq!(fetched(&g, "t", 9, false).offset, -1);
        join(&mut g, 2, 1, jreq(3, "", None, b"m"), "m1");
        assert_eq!(g.commit_offsets(3, -1, "", None, vec![oc("t", 0, 12)]), Err(GroupError::UnknownMemberId));
        assert_eq!(g.state(), CompletingRebalance);
    }

    #[test]
    fn txn_offsets_visible_only_after_commit() {
        let mut g = stable_group(&["m1"], false);
        assert_eq!(g.txn_offset_commit(300, 7, 0, 0, "m1", None, vec![]), Err(GroupError::IllegalGeneration));
        assert_eq!(g.txn_offset_commit(300, 7, 0, 1, "zz", None, vec![]), Err(GroupError::UnknownMemberId));
        assert_eq!(g.txn_offset_commit(300, 7, 0, 1, "m1", None, vec![oc("t", 0, 42)]), Ok(()));
        assert_eq!(g.txn_offset_commit(300, 8, 0, -1, "", None, vec![oc("t", 1, 43)]), Ok(())); // no checks
        assert_eq!((fetched(&g, "t", 0, false).offset, g.has_pending_txn_offset("t", 0)), (-1, true));
        // Survives a restart (serde) as pending.
        let json = serde_json::to_string(&g.snapshot()).unwrap();
        let mut g = Group::from_snapshot("g", cfg(0), serde_json::from_str(&json).unwrap());
        assert_eq!((g.state(), g.generation_id(), g.has_pending_txn_offset("t", 0)), (Empty, 1, true));
        assert!(g.complete_txn(7, true));
        assert!(!g.complete_txn(7, true));
        assert_eq!((fetched(&g, "t", 0, false).offset, g.has_pending_txn_offset("t", 0)), (42, false));
        assert_eq!(fetched(&g, "t", 1, false).offset, -1); // producer 8 still open
    }

    #[test]
    fn later_plain_commit_wins_over_txn_commit() {
        let mut g = Group::new("g", cfg(0));
        g.txn_offset_commit(1, 7, 0, -1, "", None, vec![oc("t", 0, 5)]).unwrap();
        g.commit_offsets(2, -1, "", None, vec![oc("t", 0, 9)]).unwrap();
        g.complete_txn(7, true);
        assert_eq!(fetched(&g, "t", 0, false).offset, 9);
    }

    #[test]
    fn txn_offsets_dropped_on_abort() {
        let mut g = Group::new("g", cfg(0));
        g.commit_offsets(1, -1, "", None, vec![oc("t", 0, 1)]).unwrap();
        g.txn_offset_commit(2, 7, 0, -1, "", None, vec![oc("t", 0, 50)]).unwrap();
        assert!(g.complete_txn(7, false));
        assert_eq!((fetched(&g, "t", 0, false).offset, g.has_pending_txn_offset("t", 0)), (1, false));
        assert!(g.offsets().pending_txn.is_empty());
    }

    #[test]
    fn require_stable_sees_pending() {
        let mut g = Group::new("g", cfg(0));
        g.commit_offsets(1, -1, "", None, vec![oc("t", 0, 1)]).unwrap();
        g.txn_offset_commit(2, 7, 0, -1, "", None, vec![oc("t", 0, 50)]).unwrap();
        let f = fetched(&g, "t", 0, true);
        assert_eq!((f.offset, error_code(f.error)), (-1, 88));
        assert_eq!(fetched(&g, "t", 0, false).offset, 1);
        assert_eq!(fetched(&g, "t", 1, true).error, None);
        g.complete_txn(7, true);
        assert_eq!(fetched(&g, "t", 0, true).offset, 50);
    }

    #[test]
    fn delete_offsets_refuses_subscribed_topics() {
        let mut g = stable_group(&["m1"], false); // metadata b"m" decodes to topic "t"
        g.commit_offsets(300, 1, "m1", None, vec![oc("t", 0, 1), oc("u", 0, 2)]).unwrap();
        let decode = |md: &[u8]| (md == b"m").then(|| vec!["t".to_string()]);
        let parts = [("t".to_string(), 0), ("u".to_string(), 0)];
        let res = g.delete_offsets(&parts, decode).unwrap();
        assert_eq!(res.iter().map(|r| error_code(r.2)).collect::<Vec<_>>(), vec![86, 0]);
        assert_eq!((fetched(&g, "t", 0, false).offset, fetched(&g, "u", 0, false).offset), (1, -1));
    }

    #[test]
    fn delete_non_empty_group_refused() {
        let mut g = stable_group(&["m1"], false);
        assert_eq!(g.can_delete_group().map_err(GroupError::code), Err(68));
        assert_eq!(g.delete_group(), Err(GroupError::NonEmptyGroup));
        g.leave(300, 1, vec![LeaveMember { member_id: String::new(), group_instance_id: None }]);
        g.leave(300, 2, vec![LeaveMember { member_id: "m1".into(), group_instance_id: None }]);
        assert_eq!(g.state(), Empty);
        assert_eq!(g.delete_group(), Ok(()));
        assert_eq!((g.state(), g.fetch_offsets(None, false).len()), (Dead, 0));
        assert_eq!(g.can_delete_group(), Err(GroupError::GroupIdNotFound));
        let r = join_resp(&join(&mut g, 301, 3, jreq(3, "", None, b"m"), "x"), 3);
        assert_eq!(error_code(r.error), 15);
    }

    #[test]
    fn offsets_retention_expires_offsets_of_an_empty_group_then_forgets_it() {
        let mut g = Group::new("g", GroupConfig { offsets_retention_ms: 1000, ..cfg(0) });
        g.commit_offsets(10_000, -1, "", None, vec![oc("t", 0, 5)]).unwrap();
        g.commit_offsets(10_500, -1, "", None, vec![oc("t", 1, 7)]).unwrap();
        assert_eq!(g.expire_offsets(10_999), 0);
        assert!(!g.is_removable());
        assert_eq!(g.expire_offsets(11_000), 1, "only the older commit is past retention");
        assert_eq!(g.fetch_offsets(None, false).len(), 1);
        assert_eq!(g.expire_offsets(11_500), 1);
        assert!(g.is_removable());
    }

    #[test]
    fn offsets_retention_keeps_pending_transactional_offsets() {
        let mut g = Group::new("g", GroupConfig { offsets_retention_ms: 1000, ..cfg(0) });
        g.txn_offset_commit(10_000, 7, 0, -1, "", None, vec![oc("t", 0, 5)]).unwrap();
        assert_eq!(g.expire_offsets(1_000_000), 0);
        assert!(!g.is_removable(), "the transaction coordinator still has to end it");
    }

    #[test]
    fn offsets_retention_does_not_touch_a_group_with_members() {
        let mut g = stable_group(&["m1"], false);
        g.config.offsets_retention_ms = 1000;
        g.commit_offsets(300, 1, "m1", None, vec![oc("t", 0, 5)]).unwrap();
        assert_eq!(g.expire_offsets(1_000_000), 0);
        assert!(!g.is_removable());
    }
}
