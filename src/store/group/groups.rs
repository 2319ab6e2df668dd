//! Every group of one coordinator (the cache of Kafka's GroupMetadataManager): which group a
//! request goes to, which requests may create a group, what an unknown group answers, and
//! which groups changed (the caller writes their snapshots). No I/O: the actor persists.

use std::collections::HashMap;

use super::consumer::{ConsumerConfig, ConsumerGroup, TopicImage};
use super::membership::{JoinRequest, JoinResponse, LeaveMember, MemberAnswer, Response, SyncRequest};
use super::{
    subscribed_topics, FetchedOffset, Group, GroupConfig, GroupDescription, GroupError, GroupSnapshot, GroupState,
    GroupType, OffsetCommit,
};
use crate::store::configs::group::{consumer_timers, GroupDefaults};
use crate::store::configs::group_store::AllGroupConfigs;
use crate::store::coordinator_key::offsets_partition;

/// A membership request of the classic protocol.
#[derive(Debug, Clone)]
pub enum GroupOp {
    Join(JoinRequest),
    Sync(SyncRequest),
    Heartbeat { generation_id: i32, member_id: String, group_instance_id: Option<String> },
    Leave(Vec<LeaveMember>),
}

/// An admin request about groups.
#[derive(Debug, Clone)]
pub enum GroupAdminOp {
    List,
    Describe(Vec<String>),
    Delete(Vec<String>),
    DeleteOffsets { group_id: String, partitions: Vec<(String, i32)> },
}

#[derive(Debug)]
pub enum GroupAdminAnswer {
    /// (group id, protocol type, state, type)
    List(Vec<(String, String, String, super::GroupType)>),
    Describe(Vec<(String, Result<GroupDescription, GroupError>)>),
    Delete(Vec<(String, i16)>),
    DeleteOffsets(Result<Vec<(String, i32, i16)>, GroupError>),
}

/// What one offset-expiration pass did to a group.
#[derive(Debug, Clone, PartialEq)]
pub struct Expired {
    pub group_id: String,
    /// Committed offsets that expired.
    pub offsets: usize,
    /// The group held nothing any more and was forgotten.
    pub removed: bool,
}

/// The groups of one coordinator, by group id.
#[derive(Debug, Default)]
pub struct Groups {
    pub(super) config: GroupConfig,
    pub(super) groups: HashMap<String, Group>,
    /// The consumer-protocol groups (their offsets are in `groups`).
    pub(super) consumer: HashMap<String, ConsumerGroup>,
    /// The cluster's topics, for the consumer groups' assignors.
    pub(super) image: TopicImage,
    /// Answers to parked classic requests that came out of a conversion ([`Groups::take_answers`]).
    pub(super) answers: Vec<MemberAnswer>,
    /// Per-group config overrides (store::configs::group_store).
    pub(super) group_configs: AllGroupConfigs,
}

/// The consumer group protocol's settings of `group_id`: the broker's, with the group's
/// `consumer.session.timeout.ms` / `consumer.heartbeat.interval.ms` overrides.
pub(super) fn consumer_config_for(base: &ConsumerConfig, all: &AllGroupConfigs, group_id: &str) -> ConsumerConfig {
    let defaults = GroupDefaults {
        consumer_session_timeout_ms: base.session_timeout_ms,
        consumer_heartbeat_interval_ms: base.heartbeat_interval_ms,
    };
    let (session_timeout_ms, heartbeat_interval_ms) = consumer_timers(all.get(group_id), defaults);
    ConsumerConfig { session_timeout_ms, heartbeat_interval_ms, ..base.clone() }
}

impl Groups {
    pub fn new(config: GroupConfig) -> Self {
        let acls = config.acls.clone();
        Groups {
            config,
            groups: HashMap::new(),
            consumer: HashMap::new(),
            image: TopicImage { acls, ..TopicImage::default() },
            answers: Vec::new(),
            group_configs: AllGroupConfigs::new(),
        }
    }

    /// Every group's config overrides, as the store now holds them.
    pub fn set_group_configs(&mut self, all: AllGroupConfigs) {
        self.group_configs = all;
    }

    /// A group read back after a restart (or by a new coordinator): generation and offsets
    /// kept, a classic group Stable with its kept members, their sessions starting at `now_ms`.
    pub fn restore(&mut self, group_id: String, snap: GroupSnapshot, now_ms: u64) {
        match (snap.consumer.clone(), snap.consumer_group_epoch) {
            (Some(stored), _) => {
                let config = consumer_config_for(&self.config.consumer, &self.group_configs, &group_id);
                self.consumer
                    .insert(group_id.clone(), ConsumerGroup::from_stored(group_id.clone(), stored, &config, now_ms));
            }
            (None, Some(epoch)) => {
                self.consumer.insert(group_id.clone(), ConsumerGroup::restored(group_id.clone(), epoch));
            }
            (None, None) => {}
        }
        let group = Group::from_snapshot(group_id.clone(), self.config.clone(), snap, now_ms);
        self.groups.insert(group_id, group);
    }

    pub fn get(&self, group_id: &str) -> Option<&Group> {
        self.groups.get(group_id)
    }

    /// What to write for `group_id`: its snapshot, or None when the group is gone (delete it).
    pub fn snapshot(&self, group_id: &str) -> Option<GroupSnapshot> {
        let mut snap = self.groups.get(group_id).map(Group::snapshot)?;
        snap.consumer_group_epoch = self.consumer.get(group_id).map(ConsumerGroup::group_epoch);
        snap.consumer = self.consumer.get(group_id).map(ConsumerGroup::stored);
        Some(snap)
    }

    pub(super) fn group(&mut self, group_id: &str) -> &mut Group {
        let config = self.config.clone();
        self.groups.entry(group_id.to_string()).or_insert_with(|| Group::new(group_id, config))
    }

    /// A membership request under `token`. Only JoinGroup creates a group: SyncGroup, Heartbeat
    /// and LeaveGroup for an unknown group are answered (UNKNOWN_MEMBER_ID, as Kafka) by a
    /// scratch group that is not kept. A new member's id is `<client id>-<unique()>`. A consumer
    /// group takes them from its classic members (mixed mode, [`super::mixed_mode`]).
    pub fn call(
        &mut self,
        now_ms: u64,
        token: u64,
        group_id: &str,
        op: GroupOp,
        unique: impl FnOnce() -> String,
    ) -> Vec<MemberAnswer> {
        let mut unique = Some(unique);
        let mut minted = || unique.take().map(|f| f()).unwrap_or_default();
        if let Some(answers) = self.consumer_group_call(now_ms, token, group_id, &op, &mut minted) {
            return answers;
        }
        if let GroupOp::Join(req) = &op {
            if let Err(e) = self.classic_join_allowed(group_id) {
                let response = Response::Join(JoinResponse::err(&req.member_id, e));
                return vec![MemberAnswer { token, response }];
            }
        }
        let mut scratch;
        let group = match (&op, self.groups.contains_key(group_id)) {
            (GroupOp::Join(_), _) | (_, true) => self.group(group_id),
            _ => {
                scratch = Group::new(group_id, self.config.clone());
                &mut scratch
            }
        };
        match op {
            GroupOp::Join(req) => {
                let client_id = req.client_id.clone();
                group.join(now_ms, token, req, || format!("{client_id}-{}", minted()))
            }
            GroupOp::Sync(req) => group.sync(now_ms, token, req),
            GroupOp::Heartbeat { generation_id, member_id, group_instance_id } => {
                group.heartbeat(now_ms, token, generation_id, &member_id, group_instance_id.as_deref())
            }
            GroupOp::Leave(members) => group.leave(now_ms, token, members),
        }
    }

    /// The digest of what `group_id` keeps as a consumer group (None: not one): the caller
    /// writes the group when it differs across a call ([`super::consumer::stored`]).
    pub fn consumer_digest(&self, group_id: &str) -> Option<u64> {
        self.consumer.get(group_id).map(ConsumerGroup::stored_digest)
    }

    /// Whether `group_id`'s kept membership changed since the last look ([`super::stored`]):
    /// then the caller writes the group and holds its answers until the write is durable.
    pub fn take_stored_change(&mut self, group_id: &str) -> bool {
        self.groups.get_mut(group_id).is_some_and(Group::take_stored_change)
    }

    /// The write of `group_id`'s kept membership failed: its members rebalance (Kafka, on a
    /// failed append of the group's metadata, answers the SyncGroups with an error and prepares
    /// a rebalance).
    pub fn membership_not_written(&mut self, group_id: &str, now_ms: u64) -> Vec<MemberAnswer> {
        let mut out = Vec::new();
        if let Some(g) = self.groups.get_mut(group_id) {
            if matches!(g.state(), GroupState::Stable | GroupState::CompletingRebalance) {
                g.prepare_rebalance(now_ms, &mut out);
            }
        }
        out
    }

    /// Every group whose kept membership changed since the last look (after a timer tick).
    pub fn take_stored_changes(&mut self) -> Vec<String> {
        let mut ids: Vec<String> =
            self.groups.iter_mut().filter_map(|(id, g)| g.take_stored_change().then(|| id.clone())).collect();
        ids.sort();
        ids
    }

    /// OffsetCommit, or TxnOffsetCommit when `txn` is (producer id, epoch). Creates the group.
    /// On success the group's snapshot changed and must be written before answering.
    #[allow(clippy::too_many_arguments)]
    pub fn commit_offsets(
        &mut self,
        now_ms: u64,
        group_id: &str,
        generation_id: i32,
        member_id: &str,
        group_instance_id: Option<&str>,
        offsets: Vec<OffsetCommit>,
        txn: Option<(i64, i16)>,
    ) -> Result<(), GroupError> {
        let consumer = self.consumer_commit_check(group_id, member_id, generation_id, txn.is_some(), &offsets);
        let g = self.group(group_id);
        if let Some(check) = consumer {
            check?;
            match txn {
                None => g.store_offsets(now_ms, offsets),
                Some((pid, epoch)) => g.store_txn_offsets(now_ms, pid, epoch, offsets),
            }
            return Ok(());
        }
        match txn {
            None => g.commit_offsets(now_ms, generation_id, member_id, group_instance_id, offsets),
            Some((pid, epoch)) => {
                g.txn_offset_commit(now_ms, pid, epoch, generation_id, member_id, group_instance_id, offsets)
            }
        }
    }

    /// OffsetFetch. An unknown group has no offsets: every asked partition answers -1.
    /// `member` (v9: member id and epoch) is checked against a consumer group's members.
    pub fn fetch_offsets(
        &self,
        group_id: &str,
        partitions: Option<&[(String, i32)]>,
        require_stable: bool,
        member: Option<(&str, i32)>,
    ) -> Result<Vec<FetchedOffset>, GroupError> {
        if let Some(g) = self.consumer.get(group_id) {
            g.validate_offset_fetch(member)?;
        }
        Ok(match self.groups.get(group_id) {
            Some(g) => g.fetch_offsets(partitions, require_stable),
            None => Group::new(group_id, self.config.clone()).fetch_offsets(partitions, false),
        })
    }

    /// ListGroups, DescribeGroups, DeleteGroups, OffsetDelete; also the groups whose snapshot
    /// changed (to write before answering).
    pub fn admin(&mut self, op: GroupAdminOp) -> (GroupAdminAnswer, Vec<String>) {
        let mut changed = Vec::new();
        let answer = match op {
            GroupAdminOp::List => GroupAdminAnswer::List(
                self.groups
                    .iter()
                    .filter(|(_, g)| g.state() != GroupState::Dead)
                    .map(|(id, g)| match self.consumer.get(id) {
                        Some(c) => {
                            (id.clone(), "consumer".to_string(), c.state().name().to_string(), GroupType::Consumer)
                        }
                        None => {
                            let (ptype, state) = g.list_entry();
                            (id.clone(), ptype, state.to_string(), GroupType::Classic)
                        }
                    })
                    .collect(),
            ),
            GroupAdminOp::Describe(ids) => GroupAdminAnswer::Describe(
                ids.into_iter()
                    .map(|id| {
                        if self.consumer.contains_key(&id) {
                            // Apache Kafka: DescribeGroups is for classic groups.
                            return (id, Err(GroupError::GroupIdNotFound));
                        }
                        let d = match self.groups.get(&id) {
                            Some(g) => g.describe(),
                            // Apache Kafka describes an unknown group as Dead, without an error.
                            None => GroupDescription {
                                state: GroupState::Dead,
                                protocol_type: String::new(),
                                protocol: String::new(),
                                members: Vec::new(),
                            },
                        };
                        (id, Ok(d))
                    })
                    .collect(),
            ),
            GroupAdminOp::Delete(ids) => {
                let mut out = Vec::new();
                for id in ids {
                    if self.consumer.get(&id).is_some_and(|c| !c.is_empty()) {
                        out.push((id, GroupError::NonEmptyGroup.code()));
                        continue;
                    }
                    let code = match self.groups.get_mut(&id) {
                        None => GroupError::GroupIdNotFound.code(),
                        Some(g) => match g.delete_group() {
                            Ok(()) => {
                                self.groups.remove(&id);
                                self.consumer.remove(&id);
                                changed.push(id.clone());
                                0
                            }
                            Err(e) => e.code(),
                        },
                    };
                    out.push((id, code));
                }
                GroupAdminAnswer::Delete(out)
            }
            GroupAdminOp::DeleteOffsets { group_id, partitions } => {
                let subscribed = self.consumer_subscribed(&group_id);
                let result = match self.groups.get_mut(&group_id) {
                    None => Err(GroupError::GroupIdNotFound),
                    Some(g) => match subscribed {
                        Some(topics) => consumer_delete_offsets(g, &partitions, &topics),
                        None => g.delete_offsets(&partitions, subscribed_topics),
                    },
                };
                if result.is_ok() {
                    changed.push(group_id);
                }
                GroupAdminAnswer::DeleteOffsets(
                    result.map(|v| v.into_iter().map(|(t, p, e)| (t, p, super::error_code(e))).collect()),
                )
            }
        };
        (answer, changed)
    }

    /// eos-rules 59: a transaction marker on `__consumer_offsets` partition `offsets_partition`
    /// ends `producer_id`'s pending offsets in every group stored there. Returns the groups
    /// that changed.
    pub fn complete_txn(&mut self, offsets_partition_id: i32, producer_id: i64, commit: bool) -> Vec<String> {
        let mut changed = Vec::new();
        for (id, g) in self.groups.iter_mut() {
            if offsets_partition(id) == offsets_partition_id && g.complete_txn(producer_id, commit) {
                changed.push(id.clone());
            }
        }
        changed
    }

    /// Offset expiration: expired offsets are dropped and groups left with nothing are
    /// forgotten, so groups and offsets created by clients do not pile up forever. Returns the
    /// groups that changed.
    pub fn expire(&mut self, now_ms: u64) -> Vec<Expired> {
        let mut changed = Vec::new();
        for (id, g) in self.groups.iter_mut() {
            // A consumer group's offsets stay while it has members.
            let active = self.consumer.get(id).is_some_and(|c| !c.is_empty());
            if active {
                continue;
            }
            let offsets = g.expire_offsets(now_ms);
            let removed = g.is_removable();
            if offsets > 0 || removed {
                changed.push(Expired { group_id: id.clone(), offsets, removed });
            }
        }
        for e in changed.iter().filter(|e| e.removed) {
            self.groups.remove(&e.group_id);
            self.consumer.remove(&e.group_id);
        }
        changed
    }

    /// The earliest timer of group `group_id` (classic or consumer): when `tick` or
    /// `consumer_tick` has something to do for it.
    pub fn next_deadline_of(&self, group_id: &str) -> Option<u64> {
        let classic = self.groups.get(group_id).and_then(Group::next_deadline);
        let consumer = self.consumer.get(group_id).and_then(|g| g.next_deadline());
        classic.into_iter().chain(consumer).min()
    }

    /// The earliest timer of every group.
    pub fn next_deadline(&self) -> Option<u64> {
        let classic = self.groups.values().filter_map(Group::next_deadline);
        classic.chain(self.consumer.values().filter_map(|g| g.next_deadline())).min()
    }

    /// Fire the timers of every group due at `now_ms`.
    pub fn tick(&mut self, now_ms: u64) -> Vec<MemberAnswer> {
        let mut replies = Vec::new();
        for g in self.groups.values_mut() {
            if g.next_deadline().is_some_and(|d| d <= now_ms) {
                replies.extend(g.tick(now_ms));
            }
        }
        replies
    }
}

/// The answer to give when the change could not be flushed (this broker was fenced, or the
/// disk failed): Kafka answers NOT_COORDINATOR when its group log's append fails with
/// NOT_LEADER_OR_FOLLOWER or KAFKA_STORAGE_ERROR (the client finds its coordinator again).
pub fn unwritten(answer: GroupAdminAnswer) -> GroupAdminAnswer {
    let failed = GroupError::NotCoordinator;
    match answer {
        GroupAdminAnswer::Delete(v) => GroupAdminAnswer::Delete(
            v.into_iter().map(|(id, code)| (id, if code == 0 { failed.code() } else { code })).collect(),
        ),
        GroupAdminAnswer::DeleteOffsets(Ok(_)) => GroupAdminAnswer::DeleteOffsets(Err(failed)),
        other => other,
    }
}

/// OffsetDelete on a consumer group with members: partitions of topics it subscribes to are
/// refused (GROUP_SUBSCRIBED_TO_TOPIC), the others deleted.
fn consumer_delete_offsets(
    g: &mut Group,
    partitions: &[(String, i32)],
    subscribed: &std::collections::BTreeSet<String>,
) -> Result<Vec<(String, i32, Option<GroupError>)>, GroupError> {
    let (refused, free): (Vec<_>, Vec<_>) = partitions.iter().cloned().partition(|(t, _)| subscribed.contains(t));
    let mut out = g.delete_offsets(&free, |_| Some(Vec::new()))?;
    out.extend(refused.into_iter().map(|(t, p)| (t, p, Some(GroupError::GroupSubscribedToTopic))));
    Ok(out)
}
