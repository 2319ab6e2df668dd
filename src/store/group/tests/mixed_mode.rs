//! KIP-848 mixed mode: classic members in a consumer group, the online upgrade and downgrade
//! (Kafka's GroupMetadataManager classicGroup*ToConsumerGroup, convertToConsumerGroup,
//! convertToClassicGroup), one test per rule.

use std::collections::{BTreeMap, BTreeSet};

use uuid::Uuid;

use super::*;
use crate::store::group::consumer::{Assignment, ConsumerGroup, HeartbeatRequest, MemberState, TopicImage, TopicInfo};
use crate::store::group::subscription::{deserialize_assignment, deserialize_subscription, serialize_assignment};

const T: Uuid = Uuid::from_u128(7);

/// A ConsumerProtocol Subscription v1 of topic `t` owning `owned`.
fn sub(owned: &[i32]) -> Vec<u8> {
    let mut m = vec![0, 1, 0, 0, 0, 1, 0, 1, b't', 0xff, 0xff, 0xff, 0xff];
    if owned.is_empty() {
        m.extend_from_slice(&0i32.to_be_bytes());
    } else {
        m.extend_from_slice(&1i32.to_be_bytes());
        m.extend_from_slice(&[0, 1, b't']);
        m.extend_from_slice(&(owned.len() as i32).to_be_bytes());
        owned.iter().for_each(|p| m.extend_from_slice(&p.to_be_bytes()));
    }
    m
}

fn groups(policy: MigrationPolicy) -> Groups {
    let mut gs = Groups::new(GroupConfig { migration_policy: policy, ..cfg(100) });
    let topics = BTreeMap::from([("t".to_string(), TopicInfo { id: T, partitions: 4 })]);
    gs.set_topics(TopicImage { topics, ..Default::default() });
    gs
}

fn consumer_join(gs: &mut Groups, now: u64, member: &str) -> i32 {
    let req = HeartbeatRequest {
        version: 1,
        member_id: member.into(),
        rebalance_timeout_ms: 30_000,
        subscribed_topic_names: Some(vec!["t".into()]),
        owned: Some(Assignment::new()),
        ..Default::default()
    };
    gs.consumer_heartbeat(now, "g", req, || unreachable!()).expect("joined").member_epoch
}

fn consumer_leave(gs: &mut Groups, now: u64, member: &str) {
    let req = HeartbeatRequest { version: 1, member_id: member.into(), member_epoch: -1, ..Default::default() };
    gs.consumer_heartbeat(now, "g", req, || unreachable!()).expect("left");
}

fn classic_join(gs: &mut Groups, now: u64, member: &str, owned: &[i32]) -> JoinResponse {
    let out = gs.call(now, 1, "g", GroupOp::Join(jreq(3, member, None, &sub(owned))), || "new".into());
    join_resp(&out, 1)
}

fn classic_sync(gs: &mut Groups, now: u64, member: &str, generation: i32) -> SyncResponse {
    let out = gs.call(now, 2, "g", GroupOp::Sync(sreq(generation, member, None, &[])), || unreachable!());
    sync_resp(&out, 2)
}

fn classic_heartbeat(gs: &mut Groups, now: u64, member: &str, generation: i32) -> Option<GroupError> {
    let op = GroupOp::Heartbeat { generation_id: generation, member_id: member.into(), group_instance_id: None };
    match &gs.call(now, 3, "g", op, || unreachable!())[0].response {
        Response::Heartbeat(e) => *e,
        r => panic!("{r:?}"),
    }
}

fn partitions(assignment: &[u8]) -> BTreeSet<i32> {
    let a = deserialize_assignment(assignment).expect("a ConsumerProtocol Assignment");
    a.into_iter().filter(|(t, _)| t == "t").flat_map(|(_, ps)| ps).collect()
}

fn cg(gs: &Groups) -> &ConsumerGroup {
    gs.consumer_group("g").expect("a consumer group")
}

/// A consumer group with consumer member "a" and classic member "c-new" synced.
fn mixed_group(policy: MigrationPolicy) -> (Groups, i32) {
    let mut gs = groups(policy);
    consumer_join(&mut gs, 0, "a");
    let j = classic_join(&mut gs, 0, "", &[]);
    assert_eq!(j.member_id, "c-new");
    (gs, j.generation_id)
}

#[test]
fn mixed_a_classic_member_joins_with_its_subscription_and_gets_a_server_side_assignment() {
    let (mut gs, generation) = mixed_group(MigrationPolicy::Bidirectional);
    let m = cg(&gs).member("c-new").expect("member").clone();
    assert_eq!((m.subscribed_topic_names.clone(), m.uses_classic_protocol()), (vec!["t".to_string()], true));
    assert_eq!(generation, m.member_epoch, "generation = member epoch");
    let j = classic_join(&mut gs, 0, "c-new", &[]);
    assert_eq!((j.protocol_type.as_deref(), j.protocol_name.as_deref()), (Some("consumer"), Some("range")));
    assert_eq!((j.leader.as_str(), j.members.len(), j.skip_assignment), ("", 0, false), "no leader: server-side");
    // Its target is half the partitions; "a" still owns them, so it waits for their release.
    assert_eq!(cg(&gs).target_of("c-new").map(|t| t[&T].len()), Some(2));
    let s = classic_sync(&mut gs, 0, "c-new", j.generation_id);
    assert_eq!(s.error, None);
    let assigned: BTreeSet<i32> =
        cg(&gs).member("c-new").map(|m| m.assigned.get(&T).cloned().unwrap_or_default()).unwrap_or_default();
    assert_eq!(
        partitions(&s.assignment),
        assigned,
        "SyncGroup answers its assignment as a ConsumerProtocol Assignment"
    );
}

#[test]
fn mixed_a_join_without_member_id_from_v4_gets_member_id_required() {
    let mut gs = groups(MigrationPolicy::Bidirectional);
    consumer_join(&mut gs, 0, "a");
    let out = gs.call(0, 1, "g", GroupOp::Join(jreq(4, "", None, &sub(&[]))), || "new".into());
    let j = join_resp(&out, 1);
    assert_eq!((j.error, j.member_id.as_str()), (Some(GroupError::MemberIdRequired), "c-new"));
    assert!(cg(&gs).member("c-new").is_none());
}

#[test]
fn mixed_a_member_of_another_protocol_type_is_inconsistent_group_protocol() {
    let mut gs = groups(MigrationPolicy::Bidirectional);
    consumer_join(&mut gs, 0, "a");
    let req = JoinRequest { protocol_type: "connect".into(), ..jreq(3, "", None, &sub(&[])) };
    let out = gs.call(0, 1, "g", GroupOp::Join(req), || "new".into());
    assert_eq!(join_resp(&out, 1).error, Some(GroupError::InconsistentGroupProtocol));
}

/// [`mixed_group`] once "a" released the classic member's target and it rejoined: both Stable.
fn settled_mixed_group() -> (Groups, i32) {
    let (mut gs, _) = mixed_group(MigrationPolicy::Bidirectional);
    // "a" heartbeats twice: told to revoke half, then it has.
    for _ in 0..2 {
        let owned = cg(&gs).member("a").map(|m| m.assigned.clone()).unwrap_or_default();
        let beat = HeartbeatRequest {
            version: 1,
            member_id: "a".into(),
            member_epoch: cg(&gs).member("a").map_or(0, |m| m.member_epoch),
            rebalance_timeout_ms: -1,
            owned: Some(owned),
            ..Default::default()
        };
        gs.consumer_heartbeat(0, "g", beat, || unreachable!()).expect("heartbeat");
    }
    let j = classic_join(&mut gs, 0, "c-new", &[]);
    let m = cg(&gs).member("c-new").cloned().expect("member");
    assert_eq!((m.state, m.assigned.get(&T).map(BTreeSet::len)), (MemberState::Stable, Some(2)));
    (gs, j.generation_id)
}

#[test]
fn mixed_heartbeat_answers_rebalance_in_progress_once_the_group_epoch_moved() {
    let (mut gs, generation) = settled_mixed_group();
    assert_eq!(classic_heartbeat(&mut gs, 0, "c-new", generation), None);
    assert_eq!(classic_heartbeat(&mut gs, 0, "c-new", generation - 1), Some(GroupError::IllegalGeneration));
    consumer_join(&mut gs, 0, "b");
    assert_eq!(classic_heartbeat(&mut gs, 0, "c-new", generation), Some(GroupError::RebalanceInProgress));
    assert_eq!(classic_sync(&mut gs, 0, "c-new", generation).error, Some(GroupError::RebalanceInProgress));
    assert_eq!(classic_heartbeat(&mut gs, 0, "zzz", 1), Some(GroupError::UnknownMemberId));
    assert_eq!(classic_heartbeat(&mut gs, 0, "a", 1), Some(GroupError::UnknownMemberId), "not a classic member");
}

#[test]
fn mixed_a_classic_member_that_still_owns_partitions_to_revoke_revokes_them_first() {
    let (mut gs, generation) = settled_mixed_group();
    let owned: Vec<i32> = cg(&gs).member("c-new").map(|m| m.assigned[&T].iter().copied().collect()).unwrap_or_default();
    consumer_join(&mut gs, 0, "b");
    // Cooperative: it rejoins still owning its partitions; one goes to "b".
    let j = classic_join(&mut gs, 0, "c-new", &owned);
    let m = cg(&gs).member("c-new").cloned().expect("member");
    assert_eq!((j.generation_id, m.state), (generation, MemberState::UnrevokedPartitions), "keeps its epoch");
    let s = classic_sync(&mut gs, 0, "c-new", generation);
    assert_eq!(s.error, None, "no REBALANCE_IN_PROGRESS while it revokes");
    assert_eq!(partitions(&s.assignment).len(), 1, "the kept partitions only");
    assert_eq!(classic_heartbeat(&mut gs, 0, "c-new", generation), Some(GroupError::RebalanceInProgress));
    let kept: Vec<i32> = partitions(&s.assignment).into_iter().collect();
    let j = classic_join(&mut gs, 0, "c-new", &kept);
    assert_eq!(j.generation_id, cg(&gs).group_epoch(), "revoked: the new epoch");
}

#[test]
fn mixed_leave_group_removes_a_classic_member() {
    let (mut gs, _) = mixed_group(MigrationPolicy::Bidirectional);
    let epoch = cg(&gs).group_epoch();
    let leave = GroupOp::Leave(vec![
        LeaveMember { member_id: "c-new".into(), group_instance_id: None },
        LeaveMember { member_id: "a".into(), group_instance_id: None },
    ]);
    let out = gs.call(0, 4, "g", leave, || unreachable!());
    let Response::Leave(r) = &out[0].response else { panic!("{out:?}") };
    let errors: Vec<_> = r.members.iter().map(|m| m.error).collect();
    assert_eq!(errors, [None, Some(GroupError::UnknownMemberId)], "a consumer-protocol member cannot LeaveGroup");
    assert!(cg(&gs).member("c-new").is_none());
    assert_eq!(cg(&gs).group_epoch(), epoch + 1);
}

#[test]
fn mixed_the_session_timeout_of_a_classic_member_is_its_join_groups() {
    let (mut gs, _) = mixed_group(MigrationPolicy::Disabled);
    consumer_join(&mut gs, 9_000, "a"); // "a" keeps its session (45 s) alive
    assert!(gs.consumer_tick(9_999).is_empty());
    assert_eq!(gs.consumer_tick(10_000), vec!["g".to_string()], "jreq's session timeout is 10 s");
    assert!(cg(&gs).member("c-new").is_none() && cg(&gs).member("a").is_some());
}

#[test]
fn mixed_a_classic_member_that_does_not_sync_within_its_rebalance_timeout_is_removed() {
    let (mut gs, generation) = mixed_group(MigrationPolicy::Disabled);
    // It heartbeats (its session lives) but never syncs: jreq's rebalance timeout is 30 s.
    for now in [8_000, 16_000, 24_000] {
        let _ = classic_heartbeat(&mut gs, now, "c-new", generation);
    }
    assert!(gs.consumer_tick(29_999).is_empty());
    assert_eq!(gs.consumer_tick(30_000), vec!["g".to_string()]);
    assert!(cg(&gs).member("c-new").is_none() && cg(&gs).member("a").is_some());
}

#[test]
fn mixed_a_classic_member_that_syncs_is_not_held_to_the_sync_timeout() {
    let (mut gs, generation) = settled_mixed_group();
    assert_eq!(classic_sync(&mut gs, 0, "c-new", generation).error, None);
    for now in [8_000, 16_000, 24_000, 32_000] {
        assert_eq!(classic_heartbeat(&mut gs, now, "c-new", generation), None);
    }
    assert!(gs.consumer_tick(32_000).is_empty());
    assert!(cg(&gs).member("c-new").is_some());
}

/// The settled mixed group, synced, then consumer member "b" joins at 1 s: "c-new" is told to
/// rejoin by its heartbeat at 2 s.
fn told_to_rejoin() -> (Groups, i32) {
    let (mut gs, generation) = settled_mixed_group();
    assert_eq!(classic_sync(&mut gs, 0, "c-new", generation).error, None);
    consumer_join(&mut gs, 1_000, "b");
    assert_eq!(classic_heartbeat(&mut gs, 2_000, "c-new", generation), Some(GroupError::RebalanceInProgress));
    (gs, generation)
}

#[test]
fn mixed_a_classic_member_told_to_rejoin_is_removed_unless_it_rejoins_within_its_rebalance_timeout() {
    let (mut gs, generation) = told_to_rejoin();
    // Heartbeats keep its session but do not move the join timer (set if absent).
    for now in [10_000, 20_000, 30_000] {
        assert_eq!(classic_heartbeat(&mut gs, now, "c-new", generation), Some(GroupError::RebalanceInProgress));
    }
    assert!(gs.consumer_tick(31_999).is_empty());
    assert_eq!(gs.consumer_tick(32_000), vec!["g".to_string()]);
    assert!(cg(&gs).member("c-new").is_none());
}

#[test]
fn mixed_a_classic_member_that_rejoins_in_time_stays() {
    let (mut gs, _) = told_to_rejoin();
    let owned: Vec<i32> = cg(&gs).member("c-new").map(|m| m.assigned[&T].iter().copied().collect()).unwrap_or_default();
    let j = classic_join(&mut gs, 20_000, "c-new", &owned);
    assert_eq!(classic_sync(&mut gs, 21_000, "c-new", j.generation_id).error, None);
    let _ = classic_heartbeat(&mut gs, 28_000, "c-new", j.generation_id);
    assert!(gs.consumer_tick(32_000).is_empty());
    assert!(cg(&gs).member("c-new").is_some());
}

fn static_consumer_join(gs: &mut Groups, now: u64, member: &str, instance: &str) -> Result<i32, String> {
    let req = HeartbeatRequest {
        version: 1,
        member_id: member.into(),
        instance_id: Some(instance.into()),
        rebalance_timeout_ms: 30_000,
        subscribed_topic_names: Some(vec!["t".into()]),
        owned: Some(Assignment::new()),
        ..Default::default()
    };
    gs.consumer_heartbeat(now, "g", req, || unreachable!()).map(|r| r.member_epoch).map_err(|e| format!("{e:?}"))
}

fn static_classic_join(gs: &mut Groups, now: u64, instance: &str) -> JoinResponse {
    let out = gs.call(now, 1, "g", GroupOp::Join(jreq(5, "", Some(instance), &sub(&[]))), || "new2".into());
    join_resp(&out, 1)
}

#[test]
fn static_a_classic_member_replaces_the_last_consumer_protocol_member_and_the_group_downgrades() {
    let mut gs = groups(MigrationPolicy::Bidirectional);
    static_consumer_join(&mut gs, 0, "a", "i1").expect("joined");
    classic_join(&mut gs, 0, "", &[]);
    // The instance restarts with the classic protocol: it replaces "a", no consumer-protocol
    // member is left, so the group becomes a classic group of "c-new" and the newcomer.
    let j = static_classic_join(&mut gs, 1_000, "i1");
    assert_eq!((j.error, j.member_id.as_str()), (None, "c-new2"));
    assert_eq!(gs.group_type("g"), GroupType::Classic);
    let g = gs.get("g").expect("a classic group");
    let mut ids: Vec<&str> = g.members().iter().map(|m| m.member_id.as_str()).collect();
    ids.sort();
    assert_eq!(ids, ["c-new", "c-new2"]);
    assert_eq!(g.state(), PreparingRebalance, "its members rejoin");
}

#[test]
fn static_a_classic_member_replaces_a_consumer_protocol_member_without_downgrade_when_disabled() {
    let mut gs = groups(MigrationPolicy::Upgrade);
    static_consumer_join(&mut gs, 0, "a", "i1").expect("joined");
    let j = static_classic_join(&mut gs, 1_000, "i1");
    assert_eq!(j.error, None, "not UNKNOWN_MEMBER_ID: the instance is replaced whatever its protocol");
    assert_eq!(gs.group_type("g"), GroupType::Consumer);
    let g = cg(&gs);
    assert!(g.member("a").is_none());
    let m = g.member("c-new2").expect("the replacement");
    assert_eq!((m.instance_id.as_deref(), m.uses_classic_protocol()), (Some("i1"), true));
}

#[test]
fn static_a_consumer_protocol_member_replaces_a_classic_static_member() {
    let mut gs = groups(MigrationPolicy::Bidirectional);
    consumer_join(&mut gs, 0, "a");
    let j = static_classic_join(&mut gs, 0, "i1");
    assert_eq!(j.error, None);
    // The same instance comes back on the consumer protocol: no UNRELEASED_INSTANCE_ID (that is
    // only for an instance held by a live consumer-protocol member).
    static_consumer_join(&mut gs, 1_000, "b", "i1").expect("replaces the classic member");
    let g = cg(&gs);
    assert!(g.member("c-new2").is_none());
    let m = g.member("b").expect("the replacement");
    assert_eq!((m.instance_id.as_deref(), m.uses_classic_protocol()), (Some("i1"), false));
    assert_eq!(m.classic_sync_deadline_ms, None, "no classic timers on a consumer-protocol member");
    // A second live consumer-protocol member cannot take it.
    assert!(static_consumer_join(&mut gs, 2_000, "c", "i1").unwrap_err().contains("UnreleasedInstanceId"));
}

/// A Stable classic group of two members, generation 1, with the leader's assignments.
fn classic_group(gs: &mut Groups) {
    for (token, id) in [(1, "m1"), (2, "m2")] {
        gs.call(0, token, "g", GroupOp::Join(jreq(3, "", None, &sub(&[]))), || id.to_string());
    }
    gs.tick(100);
    gs.tick(200);
    let a1 = serialize_assignment(&[("t".into(), vec![0, 1])]);
    let a2 = serialize_assignment(&[("t".into(), vec![2, 3])]);
    gs.call(200, 5, "g", GroupOp::Sync(sreq(1, "c-m2", None, &[])), || unreachable!());
    let sync = sreq(1, "c-m1", None, &[("c-m1", &a1), ("c-m2", &a2)]);
    let out = gs.call(200, 6, "g", GroupOp::Sync(sync), || unreachable!());
    assert_eq!(out.len(), 2);
    assert_eq!(gs.get("g").map(|g| (g.state(), g.generation_id())), Some((Stable, 1)));
}

#[test]
fn rule_2_the_upgrade_keeps_the_classic_members_with_their_assignments_then_adds_the_new_member() {
    let mut gs = groups(MigrationPolicy::Upgrade);
    classic_group(&mut gs);
    let epoch = consumer_join(&mut gs, 0, "a");
    assert_eq!(gs.group_type("g"), GroupType::Consumer);
    let g = cg(&gs);
    assert_eq!((g.group_epoch(), epoch), (2, 2), "epoch = generation 1, bumped by the join");
    for (id, parts) in [("c-m1", [0, 1]), ("c-m2", [2, 3])] {
        let m = g.member(id).expect("kept");
        assert_eq!((m.member_epoch, m.uses_classic_protocol()), (1, true));
        assert_eq!(m.assigned[&T], parts.into_iter().collect::<BTreeSet<i32>>());
    }
    // They rejoin (heartbeat: REBALANCE_IN_PROGRESS), revoke (eager) and get their new target.
    assert_eq!(classic_heartbeat(&mut gs, 0, "c-m1", 1), Some(GroupError::RebalanceInProgress));
    let j = classic_join(&mut gs, 0, "c-m1", &[]);
    assert_eq!(j.generation_id, 2);
    assert_eq!(gs.get("g").map(|g| g.members().len()), Some(0), "the classic entry keeps only offsets");
}

#[test]
fn rule_2_the_upgrade_answers_parked_classic_requests_with_rebalance_in_progress() {
    let mut gs = groups(MigrationPolicy::Bidirectional);
    classic_group(&mut gs);
    gs.call(0, 7, "g", GroupOp::Join(jreq(3, "c-m1", None, &sub(&[]))), || unreachable!());
    consumer_join(&mut gs, 0, "a");
    let answers = gs.take_answers();
    assert_eq!(join_resp(&answers, 7).error, Some(GroupError::RebalanceInProgress));
}

#[test]
fn rule_2_a_malformed_embedded_protocol_is_not_upgraded() {
    let mut gs = groups(MigrationPolicy::Bidirectional);
    gs.call(0, 1, "g", GroupOp::Join(jreq(3, "", None, b"junk")), || "m1".into());
    let req = HeartbeatRequest {
        version: 1,
        member_id: "a".into(),
        rebalance_timeout_ms: 30_000,
        subscribed_topic_names: Some(vec!["t".into()]),
        owned: Some(Assignment::new()),
        ..Default::default()
    };
    let e = gs.consumer_heartbeat(0, "g", req, || unreachable!()).expect_err("refused");
    assert_eq!(e.code(), GroupError::GroupIdNotFound.code());
    assert_eq!(gs.group_type("g"), GroupType::Classic);
}

#[test]
fn rule_5_the_group_downgrades_when_the_last_consumer_member_leaves() {
    let mut gs = groups(MigrationPolicy::Bidirectional);
    classic_group(&mut gs);
    consumer_join(&mut gs, 0, "a");
    let epoch = cg(&gs).group_epoch();
    consumer_leave(&mut gs, 0, "a");
    assert_eq!(gs.group_type("g"), GroupType::Classic);
    let g = gs.get("g").expect("classic");
    assert_eq!((g.state(), g.generation_id(), g.protocol_name()), (PreparingRebalance, epoch, Some("range")));
    let ids: Vec<&str> = g.members().iter().map(|m| m.member_id.as_str()).collect();
    assert_eq!(ids, ["c-m1", "c-m2"]);
    assert_eq!(partitions(&g.members()[0].assignment), BTreeSet::from([0, 1]), "assignment kept");
    // The generation is the epoch before the leave: the members' heartbeats tell them to rejoin.
    assert_eq!(classic_heartbeat(&mut gs, 0, "c-m1", epoch), Some(GroupError::RebalanceInProgress));
}

#[test]
fn rule_5_no_downgrade_when_the_policy_disables_it() {
    let mut gs = groups(MigrationPolicy::Upgrade);
    classic_group(&mut gs);
    consumer_join(&mut gs, 0, "a");
    consumer_leave(&mut gs, 0, "a");
    assert_eq!(gs.group_type("g"), GroupType::Consumer);
    assert_eq!(cg(&gs).members().len(), 2);
}

#[test]
fn rule_5_the_session_expiry_of_the_last_consumer_member_downgrades_too() {
    let mut gs = groups(MigrationPolicy::Bidirectional);
    classic_group(&mut gs);
    consumer_join(&mut gs, 0, "a");
    for id in ["c-m1", "c-m2"] {
        classic_heartbeat(&mut gs, 44_000, id, 1);
    }
    assert_eq!(gs.consumer_tick(45_000), vec!["g".to_string()]);
    assert_eq!(gs.group_type("g"), GroupType::Classic);
}

#[test]
fn offsets_a_classic_member_commits_with_its_member_epoch_as_generation() {
    let (mut gs, generation) = mixed_group(MigrationPolicy::Bidirectional);
    let commit = |gs: &mut Groups, generation: i32| {
        gs.commit_offsets(0, "g", generation, "c-new", None, vec![oc("t", 0, 5)], None)
    };
    assert_eq!(commit(&mut gs, generation), Ok(()));
    assert_eq!(commit(&mut gs, generation + 1), Err(GroupError::IllegalGeneration), "Kafka's validateMemberEpoch");
    let txn = gs.commit_offsets(0, "g", generation + 1, "c-new", None, vec![oc("t", 0, 5)], Some((1, 0)));
    assert_eq!(txn, Err(GroupError::IllegalGeneration));
    let consumer = gs.commit_offsets(0, "g", 99, "a", None, vec![oc("t", 0, 5)], None);
    assert_eq!(consumer, Err(GroupError::StaleMemberEpoch), "a consumer-protocol member keeps STALE_MEMBER_EPOCH");
}

#[test]
fn consumer_protocol_subscription_and_assignment_are_read_as_kafka_writes_them() {
    let s = deserialize_subscription(&sub(&[1, 3])).expect("v1");
    assert_eq!((s.topics, s.owned_partitions), (vec!["t".to_string()], vec![("t".to_string(), vec![1, 3])]));
    let mut v3 = vec![0, 3, 0, 0, 0, 0, 0xff, 0xff, 0xff, 0xff, 0, 0, 0, 0, 0, 0, 0, 5, 0, 2, b'r', b'1'];
    assert_eq!(deserialize_subscription(&v3).map(|s| s.rack_id), Ok(Some("r1".to_string())));
    v3.truncate(v3.len() - 1);
    assert!(deserialize_subscription(&v3).is_err(), "truncated");
    assert!(deserialize_subscription(&[0, 0, 0x7f, 0xff, 0xff, 0xff]).is_err(), "a count past the bytes");
    let a = serialize_assignment(&[("t".into(), vec![0, 2])]);
    assert_eq!(deserialize_assignment(&a), Ok(vec![("t".to_string(), vec![0, 2])]));
    assert_eq!(deserialize_assignment(&[]), Ok(vec![]));
}
