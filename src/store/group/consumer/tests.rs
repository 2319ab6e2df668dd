//! Unit tests of the consumer group protocol, one per rule.

use std::collections::{BTreeMap, BTreeSet};

use uuid::Uuid;

use super::*;
use crate::store::group::{GroupConfig, GroupError, GroupOp, Groups, OffsetCommit};

const T: Uuid = Uuid::from_u128(1);
const U: Uuid = Uuid::from_u128(2);

fn image(parts: i32) -> TopicImage {
    let mut topics = BTreeMap::new();
    topics.insert("t".to_string(), TopicInfo { id: T, partitions: parts });
    topics.insert("u".to_string(), TopicInfo { id: U, partitions: 2 });
    TopicImage { topics, ..Default::default() }
}

fn groups(parts: i32) -> Groups {
    let mut g = Groups::new(GroupConfig::default());
    g.set_topics(image(parts));
    g
}

fn join(member: &str, topics: &[&str]) -> HeartbeatRequest {
    HeartbeatRequest {
        version: 1,
        member_id: member.into(),
        member_epoch: 0,
        rebalance_timeout_ms: 30_000,
        subscribed_topic_names: Some(topics.iter().map(|t| t.to_string()).collect()),
        owned: Some(Assignment::new()),
        ..Default::default()
    }
}

fn beat(member: &str, epoch: i32, owned: &Assignment) -> HeartbeatRequest {
    HeartbeatRequest {
        version: 1,
        member_id: member.into(),
        member_epoch: epoch,
        rebalance_timeout_ms: -1,
        owned: Some(owned.clone()),
        ..Default::default()
    }
}

fn parts(a: &Option<Assignment>) -> BTreeSet<i32> {
    a.as_ref().and_then(|a| a.get(&T)).cloned().unwrap_or_default()
}

fn hb(g: &mut Groups, now: u64, req: HeartbeatRequest) -> Result<HeartbeatResponse, ConsumerError> {
    g.consumer_heartbeat(now, "g", req, || "generated".to_string())
}

fn owned(ps: &BTreeSet<i32>) -> Assignment {
    Assignment::from([(T, ps.clone())])
}

#[test]
fn join_alone_gets_every_partition_and_the_group_epoch() {
    let mut g = groups(6);
    let r = hb(&mut g, 0, join("a", &["t"])).unwrap();
    assert_eq!(r.member_id, "a");
    assert_eq!(r.member_epoch, 1);
    assert_eq!(r.heartbeat_interval_ms, 5000);
    assert_eq!(parts(&r.assignment), (0..6).collect());
    let cg = g.consumer_group("g").unwrap();
    assert_eq!((cg.group_epoch(), cg.assignment_epoch()), (1, 1));
    assert_eq!(cg.state(), ConsumerGroupState::Stable);
}

#[test]
fn second_member_causes_revocation_first_then_assignment() {
    let mut g = groups(6);
    let a = hb(&mut g, 0, join("a", &["t"])).unwrap();
    let a_all = parts(&a.assignment);
    // b joins: its target partitions are still a's, so it gets nothing yet, at epoch 2.
    let b = hb(&mut g, 1, join("b", &["t"])).unwrap();
    assert_eq!(b.member_epoch, 2);
    assert!(parts(&b.assignment).is_empty(), "unreleased partitions are not given: {b:?}");
    assert_eq!(g.consumer_group("g").unwrap().state(), ConsumerGroupState::Reconciling);
    // a heartbeats: it must revoke half, and stays at epoch 1 until it does.
    let a2 = hb(&mut g, 2, beat("a", 1, &owned(&a_all))).unwrap();
    assert_eq!(a2.member_epoch, 1);
    let a_keep = parts(&a2.assignment);
    assert_eq!(a_keep.len(), 3);
    // b is still waiting while a owns them.
    let b2 = hb(&mut g, 3, beat("b", 2, &Assignment::new())).unwrap();
    assert!(b2.assignment.is_none() || parts(&b2.assignment).is_empty());
    // a acknowledges the revocation: epoch 2.
    let a3 = hb(&mut g, 4, beat("a", 1, &owned(&a_keep))).unwrap();
    assert_eq!(a3.member_epoch, 2);
    // now b gets the released partitions.
    let b3 = hb(&mut g, 5, beat("b", 2, &Assignment::new())).unwrap();
    let b_got = parts(&b3.assignment);
    assert_eq!(b_got.len(), 3);
    assert!(b_got.is_disjoint(&a_keep));
    let b4 = hb(&mut g, 6, beat("b", 2, &owned(&b_got))).unwrap();
    assert_eq!(b4.assignment, None, "no assignment when nothing changed");
    assert_eq!(g.consumer_group("g").unwrap().state(), ConsumerGroupState::Stable);
}

#[test]
fn greater_member_epoch_is_fenced() {
    let mut g = groups(2);
    hb(&mut g, 0, join("a", &["t"])).unwrap();
    let e = hb(&mut g, 1, beat("a", 5, &Assignment::new())).unwrap_err();
    assert_eq!(e.code(), 110);
}

#[test]
fn smaller_epoch_is_fenced_unless_previous_with_a_subset() {
    let mut g = groups(2);
    hb(&mut g, 0, join("a", &["t"])).unwrap(); // epoch 1, previous 0
                                               // epoch 0 is not a join here (join has epoch 0 and empty owned: it is a rejoin, accepted);
                                               // a leftover epoch below previous is fenced.
    hb(&mut g, 1, join("b", &["t"])).unwrap(); // group epoch 2
    let a = hb(&mut g, 2, beat("a", 1, &owned(&BTreeSet::from([0, 1])))).unwrap();
    let keep = parts(&a.assignment);
    let a2 = hb(&mut g, 3, beat("a", 1, &owned(&keep))).unwrap();
    assert_eq!(a2.member_epoch, 2);
    // The answer with epoch 2 was lost: epoch 1 (previous) with a subset is accepted.
    assert!(hb(&mut g, 4, beat("a", 1, &owned(&keep))).is_ok());
    // With a partition it is not assigned: fenced.
    let e = hb(&mut g, 5, beat("a", 1, &owned(&BTreeSet::from([0, 1])))).unwrap_err();
    assert_eq!(e.code(), 110);
}

#[test]
fn heartbeat_of_an_unknown_member_is_unknown_member_id() {
    let mut g = groups(2);
    hb(&mut g, 0, join("a", &["t"])).unwrap();
    assert_eq!(hb(&mut g, 1, beat("zz", 1, &Assignment::new())).unwrap_err().code(), 25);
}

#[test]
fn heartbeat_to_an_unknown_group_is_group_id_not_found() {
    let mut g = groups(2);
    assert_eq!(hb(&mut g, 1, beat("a", 1, &Assignment::new())).unwrap_err().code(), 69);
}

#[test]
fn leave_removes_the_member_and_frees_its_partitions() {
    let mut g = groups(4);
    hb(&mut g, 0, join("a", &["t"])).unwrap();
    let mut leave = beat("a", LEAVE_EPOCH, &Assignment::new());
    leave.owned = None;
    let r = hb(&mut g, 1, leave).unwrap();
    assert_eq!(r.member_epoch, -1);
    let cg = g.consumer_group("g").unwrap();
    assert!(cg.is_empty());
    assert_eq!(cg.group_epoch(), 2);
    assert_eq!(cg.partition_epoch(T, 0), -1);
    assert_eq!(cg.state(), ConsumerGroupState::Empty);
}

#[test]
fn remaining_member_takes_the_partitions_of_one_that_left() {
    let mut g = groups(4);
    hb(&mut g, 0, join("a", &["t"])).unwrap();
    hb(&mut g, 0, join("b", &["t"])).unwrap();
    let a = hb(&mut g, 1, beat("a", 1, &owned(&(0..4).collect()))).unwrap();
    let keep = parts(&a.assignment);
    hb(&mut g, 2, beat("a", 1, &owned(&keep))).unwrap();
    hb(&mut g, 3, beat("b", 2, &Assignment::new())).unwrap();
    let mut leave = beat("b", LEAVE_EPOCH, &Assignment::new());
    leave.owned = None;
    hb(&mut g, 4, leave).unwrap();
    let a2 = hb(&mut g, 5, beat("a", 2, &owned(&keep))).unwrap();
    assert_eq!(a2.member_epoch, 3);
    assert_eq!(parts(&a2.assignment), (0..4).collect());
}

#[test]
fn session_timeout_removes_a_silent_member() {
    let mut g = groups(2);
    hb(&mut g, 0, join("a", &["t"])).unwrap();
    assert!(g.consumer_tick(44_999).is_empty());
    assert_eq!(g.consumer_tick(45_000), vec!["g".to_string()]);
    assert!(g.consumer_group("g").unwrap().is_empty());
    assert_eq!(hb(&mut g, 45_001, beat("a", 1, &Assignment::new())).unwrap_err().code(), 25);
}

#[test]
fn rebalance_timeout_removes_a_member_that_does_not_revoke() {
    let mut g = groups(2);
    hb(&mut g, 0, join("a", &["t"])).unwrap();
    hb(&mut g, 0, join("b", &["t"])).unwrap();
    hb(&mut g, 100, beat("a", 1, &owned(&BTreeSet::from([0, 1])))).unwrap(); // must revoke one
    g.consumer_heartbeat(20_000, "g", beat("b", 2, &Assignment::new()), String::new).unwrap();
    assert!(g.consumer_tick(30_099).is_empty());
    // a keeps heartbeating without revoking: its rebalance timeout (30 s) fences it.
    hb(&mut g, 30_000, beat("a", 1, &owned(&BTreeSet::from([0, 1])))).unwrap();
    assert_eq!(g.consumer_tick(30_100), vec!["g".to_string()]);
    assert!(g.consumer_group("g").unwrap().member("a").is_none());
}

#[test]
fn join_without_subscription_is_invalid_request() {
    let mut g = groups(2);
    let mut r = join("a", &[]);
    r.subscribed_topic_names = Some(vec![]);
    assert_eq!(hb(&mut g, 0, r).unwrap_err().code(), 42);
    let mut r = join("a", &["t"]);
    r.rebalance_timeout_ms = -1;
    assert_eq!(hb(&mut g, 0, r).unwrap_err().code(), 42);
    let mut r = join("a", &["t"]);
    r.owned = None;
    assert_eq!(hb(&mut g, 0, r).unwrap_err().code(), 42);
    let mut r = join("a", &["t"]);
    r.member_epoch = -3;
    assert_eq!(hb(&mut g, 0, r).unwrap_err().code(), 42);
}

#[test]
fn member_id_is_required_from_v1_and_generated_for_a_v0_join() {
    let mut g = groups(2);
    assert_eq!(hb(&mut g, 0, join("", &["t"])).unwrap_err().code(), 42);
    let mut r = join("", &["t"]);
    r.version = 0;
    assert_eq!(hb(&mut g, 0, r).unwrap().member_id, "generated");
}

#[test]
fn unsupported_assignor_is_refused() {
    let mut g = groups(2);
    let mut r = join("a", &["t"]);
    r.server_assignor = Some("sticky".into());
    assert_eq!(hb(&mut g, 0, r).unwrap_err().code(), 112);
}

#[test]
fn invalid_regex_is_invalid_regular_expression() {
    let mut g = groups(2);
    let mut r = join("a", &[]);
    r.subscribed_topic_names = None;
    r.subscribed_topic_regex = Some("(".into());
    assert_eq!(hb(&mut g, 0, r).unwrap_err().code(), 128);
}

#[test]
fn regex_subscription_assigns_matching_topics() {
    let mut g = groups(2);
    let mut r = join("a", &[]);
    r.subscribed_topic_names = None;
    r.subscribed_topic_regex = Some("t|u".into());
    let got = hb(&mut g, 0, r).unwrap().assignment.unwrap();
    assert_eq!(got.keys().copied().collect::<Vec<_>>(), vec![T, U]);
}

#[test]
fn regex_subscription_resolves_to_the_topics_the_member_may_describe() {
    use crate::store::auth::acl::{self, AclBinding, Acls, SharedAcls};
    let grant = |topic: &str| AclBinding {
        resource_type: acl::RESOURCE_TOPIC,
        name: topic.into(),
        pattern_type: acl::PATTERN_LITERAL,
        principal: "User:alice".into(),
        host: acl::WILDCARD.into(),
        operation: acl::OP_READ,
        permission: acl::PERMISSION_ALLOW,
    };
    let acls = SharedAcls::new(Acls { bindings: vec![grant("t")], super_users: vec![], allow_if_no_acl: false });
    let mut g = Groups::new(GroupConfig { acls: Some(acls.clone()), ..GroupConfig::default() });
    g.set_topics(image(2));
    let mut r = join("a", &[]);
    r.subscribed_topic_names = None;
    r.subscribed_topic_regex = Some("t|u".into());
    r.principal = "User:alice".into();
    // READ on t implies DESCRIBE; u is not hers to see.
    let got = hb(&mut g, 0, r).unwrap().assignment.unwrap();
    assert_eq!(got.keys().copied().collect::<Vec<_>>(), vec![T]);
    // Granted u later: the next metadata refresh bumps the group and assigns it too.
    acls.replace_bindings(vec![grant("t"), grant("u")]);
    assert_eq!(g.set_topics(image(2)), vec!["g".to_string()]);
    let mut beat = beat("a", 1, &owned(&BTreeSet::from([0, 1])));
    beat.principal = "User:alice".into();
    let got = hb(&mut g, 1, beat).unwrap().assignment.unwrap();
    assert_eq!(got.keys().copied().collect::<Vec<_>>(), vec![T, U]);
}

#[test]
fn group_max_size_is_enforced() {
    let mut cfg = GroupConfig::default();
    cfg.consumer.max_size = 1;
    let mut g = Groups::new(cfg);
    g.set_topics(image(2));
    hb(&mut g, 0, join("a", &["t"])).unwrap();
    assert_eq!(hb(&mut g, 0, join("b", &["t"])).unwrap_err().code(), 81);
}

#[test]
fn classic_group_in_use_is_not_a_consumer_group() {
    use crate::store::group::JoinRequest;
    let mut g = groups(2);
    let req = JoinRequest {
        version: 3,
        member_id: String::new(),
        group_instance_id: None,
        client_id: "c".into(),
        client_host: "h".into(),
        session_timeout_ms: 10_000,
        rebalance_timeout_ms: 10_000,
        protocol_type: "consumer".into(),
        protocols: vec![("range".into(), vec![])],
    };
    g.call(0, 1, "g", GroupOp::Join(req), || "x".into());
    assert_eq!(hb(&mut g, 0, join("a", &["t"])).unwrap_err().code(), 69);
}

#[test]
fn classic_join_of_another_protocol_type_on_a_consumer_group_with_members_is_inconsistent_group_protocol() {
    use crate::store::group::{JoinRequest, Response};
    let mut g = groups(2);
    hb(&mut g, 0, join("a", &["t"])).unwrap();
    let req = JoinRequest {
        version: 9,
        member_id: String::new(),
        group_instance_id: None,
        client_id: "c".into(),
        client_host: "h".into(),
        session_timeout_ms: 10_000,
        rebalance_timeout_ms: 10_000,
        protocol_type: "connect".into(),
        protocols: vec![("range".into(), vec![])],
    };
    let out = g.call(0, 7, "g", GroupOp::Join(req), || "x".into());
    match &out[0].response {
        Response::Join(j) => assert_eq!(j.error, Some(GroupError::InconsistentGroupProtocol)),
        r => panic!("{r:?}"),
    }
}

fn commit() -> Vec<OffsetCommit> {
    vec![OffsetCommit { topic: "t".into(), partition: 0, offset: 5, leader_epoch: -1, metadata: String::new() }]
}

#[test]
fn offset_commit_needs_the_current_member_epoch() {
    let mut g = groups(2);
    hb(&mut g, 0, join("a", &["t"])).unwrap();
    assert_eq!(g.commit_offsets(0, "g", 0, "a", None, commit(), None), Err(GroupError::StaleMemberEpoch));
    assert_eq!(g.commit_offsets(0, "g", 1, "b", None, commit(), None), Err(GroupError::UnknownMemberId));
    assert_eq!(g.commit_offsets(0, "g", 1, "a", None, commit(), None), Ok(()));
    let f = g.fetch_offsets("g", None, false, Some(("a", 1))).unwrap();
    assert_eq!(f[0].offset, 5);
    assert_eq!(g.fetch_offsets("g", None, false, Some(("a", 0))).unwrap_err(), GroupError::StaleMemberEpoch);
    assert!(g.fetch_offsets("g", None, false, Some(("", -1))).is_ok());
}

fn commit_of(topic: &str, partitions: &BTreeSet<i32>) -> Vec<OffsetCommit> {
    partitions
        .iter()
        .map(|&p| OffsetCommit {
            topic: topic.into(),
            partition: p,
            offset: 5,
            leader_epoch: -1,
            metadata: String::new(),
        })
        .collect()
}

/// Kafka 4.4 (KIP-1251): a commit with an older member epoch, sent before the member's last
/// reconciliation reached it, commits the partitions it has held since that epoch or before.
#[test]
fn an_older_member_epoch_commits_only_partitions_held_since_then() {
    let mut g = groups(6);
    let a = hb(&mut g, 0, join("a", &["t"])).unwrap();
    let a_all = parts(&a.assignment);
    hb(&mut g, 1, join("b", &["t"])).unwrap();
    let a_keep = parts(&hb(&mut g, 2, beat("a", 1, &owned(&a_all))).unwrap().assignment);
    assert_eq!(hb(&mut g, 3, beat("a", 1, &owned(&a_keep))).unwrap().member_epoch, 2);
    let b_got = parts(&hb(&mut g, 4, beat("b", 2, &Assignment::new())).unwrap().assignment);
    assert_eq!(b_got.len(), 3);
    // a is at epoch 2 and has held a_keep since epoch 1.
    assert_eq!(g.commit_offsets(0, "g", 1, "a", None, commit_of("t", &a_keep), None), Ok(()));
    assert_eq!(g.commit_offsets(0, "g", 2, "a", None, commit_of("t", &a_keep), None), Ok(()));
    // A partition it gave up, one of a topic it does not hold, a topic that does not exist:
    // the whole commit is refused.
    let mut with_revoked = a_keep.clone();
    with_revoked.insert(*b_got.first().unwrap());
    let stale = Err(GroupError::StaleMemberEpoch);
    assert_eq!(g.commit_offsets(0, "g", 1, "a", None, commit_of("t", &with_revoked), None), stale);
    assert_eq!(g.commit_offsets(0, "g", 1, "a", None, commit_of("u", &BTreeSet::from([0])), None), stale);
    assert_eq!(g.commit_offsets(0, "g", 1, "a", None, commit_of("gone", &BTreeSet::from([0])), None), stale);
    // b was given its partitions at epoch 2: epoch 1 is older than that; 3 is newer than b's.
    assert_eq!(g.commit_offsets(0, "g", 1, "b", None, commit_of("t", &b_got), None), stale);
    assert_eq!(g.commit_offsets(0, "g", 3, "b", None, commit_of("t", &b_got), None), stale);
    assert_eq!(g.commit_offsets(0, "g", 2, "b", None, commit_of("t", &b_got), None), Ok(()));
    // TxnOffsetCommit: the same rule, ILLEGAL_GENERATION for a refusal.
    assert_eq!(g.commit_offsets(0, "g", 1, "a", None, commit_of("t", &a_keep), Some((7, 0))), Ok(()));
    let txn = g.commit_offsets(0, "g", 1, "b", None, commit_of("t", &b_got), Some((8, 0)));
    assert_eq!(txn, Err(GroupError::IllegalGeneration));
}

#[test]
fn assignment_epochs_follow_the_reconciliation() {
    let mut g = groups(6);
    let a_all = parts(&hb(&mut g, 0, join("a", &["t"])).unwrap().assignment);
    hb(&mut g, 1, join("b", &["t"])).unwrap();
    let a_keep = parts(&hb(&mut g, 2, beat("a", 1, &owned(&a_all))).unwrap().assignment);
    let since = |g: &Groups, m: &str, p: i32| g.consumer_group("g").unwrap().member(m).unwrap().held_since(T, p);
    // Pending revocation: still held, since epoch 1.
    let revoking: Vec<i32> = a_all.difference(&a_keep).copied().collect();
    assert!(revoking.iter().all(|&p| since(&g, "a", p) == Some(1)));
    hb(&mut g, 3, beat("a", 1, &owned(&a_keep))).unwrap();
    assert!(revoking.iter().all(|&p| since(&g, "a", p).is_none()), "revoked: no longer held");
    assert!(a_keep.iter().all(|&p| since(&g, "a", p) == Some(1)), "kept at epoch 2: still since 1");
    let b_got = parts(&hb(&mut g, 4, beat("b", 2, &Assignment::new())).unwrap().assignment);
    assert!(b_got.iter().all(|&p| since(&g, "b", p) == Some(2)));
}

#[test]
fn txn_offset_commit_with_a_stale_epoch_is_illegal_generation() {
    let mut g = groups(2);
    hb(&mut g, 0, join("a", &["t"])).unwrap();
    assert_eq!(g.commit_offsets(0, "g", 0, "a", None, commit(), Some((7, 0))), Err(GroupError::IllegalGeneration));
    assert_eq!(g.commit_offsets(0, "g", 1, "a", None, commit(), Some((7, 0))), Ok(()));
    assert_eq!(g.commit_offsets(0, "g", -1, "", None, commit(), Some((8, 0))), Err(GroupError::UnknownMemberId));
}

#[test]
fn commit_without_member_is_accepted_only_by_an_empty_group() {
    let mut g = groups(2);
    hb(&mut g, 0, join("a", &["t"])).unwrap();
    assert_eq!(g.commit_offsets(0, "g", -1, "", None, commit(), None), Err(GroupError::UnknownMemberId));
    g.consumer_tick(100_000);
    assert_eq!(g.commit_offsets(0, "g", -1, "", None, commit(), None), Ok(()));
}

#[test]
fn new_partitions_bump_the_group_epoch() {
    let mut g = groups(2);
    hb(&mut g, 0, join("a", &["t"])).unwrap();
    assert_eq!(g.set_topics(image(4)), vec!["g".to_string()]);
    assert_eq!(g.consumer_group("g").unwrap().group_epoch(), 2);
    let r = hb(&mut g, 1, beat("a", 1, &owned(&BTreeSet::from([0, 1])))).unwrap();
    assert_eq!((r.member_epoch, parts(&r.assignment)), (2, (0..4).collect()));
    assert!(g.set_topics(image(4)).is_empty(), "no change, no bump");
}

#[test]
fn static_member_instance_held_by_another_is_unreleased_instance_id() {
    let mut g = groups(2);
    let mut a = join("a", &["t"]);
    a.instance_id = Some("i".into());
    hb(&mut g, 0, a).unwrap();
    let mut b = join("b", &["t"]);
    b.instance_id = Some("i".into());
    assert_eq!(hb(&mut g, 0, b.clone()).unwrap_err().code(), 111);
    // a leaves for a while (-2): b takes its place and its partitions.
    let mut leave = beat("a", LEAVE_STATIC_EPOCH, &Assignment::new());
    leave.instance_id = Some("i".into());
    assert_eq!(hb(&mut g, 1, leave).unwrap().member_epoch, -2);
    let epoch = g.consumer_group("g").unwrap().group_epoch();
    let r = hb(&mut g, 2, b).unwrap();
    assert_eq!(parts(&r.assignment), BTreeSet::from([0, 1]));
    assert!(g.consumer_group("g").unwrap().member("a").is_none());
    // Same subscription: no group epoch bump, the replacement gets a's epoch and assignment.
    assert_eq!((g.consumer_group("g").unwrap().group_epoch(), r.member_epoch), (epoch, epoch));
}

#[test]
fn a_heartbeat_without_instance_id_keeps_the_member_static() {
    let mut g = groups(2);
    let mut a = join("a", &["t"]);
    a.instance_id = Some("i".into());
    let r = hb(&mut g, 0, a).unwrap();
    // A keepalive leaves the instance id out (null: unchanged since the last heartbeat).
    hb(&mut g, 1, beat("a", r.member_epoch, &owned(&parts(&r.assignment)))).unwrap();
    assert_eq!(g.consumer_group("g").unwrap().member("a").unwrap().instance_id.as_deref(), Some("i"));
    // So it can still leave for a while with its instance, and be replaced by it.
    let mut leave = beat("a", LEAVE_STATIC_EPOCH, &Assignment::new());
    leave.instance_id = Some("i".into());
    assert_eq!(hb(&mut g, 2, leave).unwrap().member_epoch, -2);
    let mut b = join("b", &["t"]);
    b.instance_id = Some("i".into());
    assert_eq!(parts(&hb(&mut g, 3, b).unwrap().assignment), BTreeSet::from([0, 1]));
}

#[test]
fn static_replacement_with_another_subscription_bumps_the_group_epoch() {
    let mut g = groups(2);
    let mut a = join("a", &["t"]);
    a.instance_id = Some("i".into());
    hb(&mut g, 0, a).unwrap();
    let mut leave = beat("a", LEAVE_STATIC_EPOCH, &Assignment::new());
    leave.instance_id = Some("i".into());
    hb(&mut g, 1, leave).unwrap();
    let epoch = g.consumer_group("g").unwrap().group_epoch();
    let mut b = join("b", &["t", "u"]);
    b.instance_id = Some("i".into());
    hb(&mut g, 2, b).unwrap();
    assert_eq!(g.consumer_group("g").unwrap().group_epoch(), epoch + 1);
}

#[test]
fn uniform_assignor_balances_and_keeps_partitions_where_they_are() {
    let img = image(7);
    let subs: BTreeMap<String, BTreeSet<String>> =
        ["a", "b", "c"].iter().map(|m| (m.to_string(), BTreeSet::from(["t".to_string()]))).collect();
    let first = Assignor::Uniform.assign(&subs, &img, &BTreeMap::new());
    let counts: Vec<usize> = first.values().map(|a| a.get(&T).map_or(0, |s| s.len())).collect();
    assert_eq!(counts.iter().sum::<usize>(), 7);
    assert!(counts.iter().max().unwrap() - counts.iter().min().unwrap() <= 1, "{counts:?}");
    // A fourth member: the others keep all but what moves to it.
    let mut subs4 = subs.clone();
    subs4.insert("d".into(), BTreeSet::from(["t".to_string()]));
    let second = Assignor::Uniform.assign(&subs4, &img, &first);
    for m in ["a", "b", "c"] {
        let before = &first[m][&T];
        let after = second[m].get(&T).cloned().unwrap_or_default();
        assert!(after.is_subset(before), "{m}: {before:?} -> {after:?}");
    }
    assert!(!second["d"].get(&T).cloned().unwrap_or_default().is_empty());
}

#[test]
fn uniform_assignor_gives_only_subscribed_topics() {
    let img = image(2);
    let mut subs = BTreeMap::new();
    subs.insert("a".to_string(), BTreeSet::from(["t".to_string()]));
    subs.insert("b".to_string(), BTreeSet::from(["u".to_string()]));
    let out = Assignor::Uniform.assign(&subs, &img, &BTreeMap::new());
    assert_eq!(out["a"].keys().copied().collect::<Vec<_>>(), vec![T]);
    assert_eq!(out["b"].keys().copied().collect::<Vec<_>>(), vec![U]);
}

#[test]
fn range_assignor_gives_contiguous_ranges_in_member_order() {
    let img = image(7);
    let subs: BTreeMap<String, BTreeSet<String>> =
        ["a", "b", "c"].iter().map(|m| (m.to_string(), BTreeSet::from(["t".to_string()]))).collect();
    let out = Assignor::Range.assign(&subs, &img, &BTreeMap::new());
    assert_eq!(out["a"][&T], BTreeSet::from([0, 1, 2]));
    assert_eq!(out["b"][&T], BTreeSet::from([3, 4]));
    assert_eq!(out["c"][&T], BTreeSet::from([5, 6]));
}

#[test]
fn client_picks_the_assignor_with_server_assignor() {
    let mut g = groups(4);
    let mut r = join("a", &["t"]);
    r.server_assignor = Some("range".into());
    hb(&mut g, 0, r).unwrap();
    assert_eq!(g.consumer_describe("g").unwrap().assignor, "range");
}

#[test]
fn describe_of_a_classic_or_unknown_group_is_group_id_not_found() {
    let g = groups(2);
    assert_eq!(g.consumer_describe("nope").unwrap_err().code(), 69);
}

/// The group as a new coordinator reads it back at `now` (through the JSON written to sled).
fn reloaded(g: &Groups, now: u64) -> Groups {
    let json = serde_json::to_vec(&g.snapshot("g").expect("kept")).unwrap();
    let mut back = groups(6);
    back.restore("g".into(), serde_json::from_slice(&json).unwrap(), now);
    back
}

#[test]
fn a_consumer_group_read_back_keeps_its_members_epochs_and_assignments() {
    let mut g = groups(6);
    let a = hb(&mut g, 0, join("a", &["t"])).unwrap();
    let a_parts = parts(&a.assignment);
    let b = hb(&mut g, 1, join("b", &["t"])).unwrap();
    // a revokes what b is to get; b then gets it.
    let a2 = hb(&mut g, 2, beat("a", a.member_epoch, &owned(&a_parts))).unwrap();
    let a_kept = parts(&a2.assignment);
    let a3 = hb(&mut g, 3, beat("a", a2.member_epoch, &owned(&a_kept))).unwrap();
    let b2 = hb(&mut g, 4, beat("b", b.member_epoch, &Assignment::new())).unwrap();
    let before = g.consumer_group("g").unwrap().clone();

    let mut back = reloaded(&g, 100_000);
    let cg = back.consumer_group("g").unwrap();
    assert_eq!((cg.group_epoch(), cg.assignment_epoch()), (before.group_epoch(), before.assignment_epoch()));
    assert_eq!(cg.members(), &{
        let mut m = before.members().clone();
        for (_, x) in m.iter_mut() {
            x.session_deadline_ms = cg.member(&x.member_id).unwrap().session_deadline_ms;
            x.rebalance_deadline_ms = cg.member(&x.member_id).unwrap().rebalance_deadline_ms;
        }
        m
    });
    // Both go on at their member epochs: no UNKNOWN_MEMBER_ID, no FENCED_MEMBER_EPOCH.
    let a4 = hb(&mut back, 100_001, beat("a", a3.member_epoch, &owned(&a_kept))).unwrap();
    assert_eq!(a4.member_epoch, a3.member_epoch);
    let b_parts = parts(&b2.assignment);
    let b3 = hb(&mut back, 100_002, beat("b", b2.member_epoch, &owned(&b_parts))).unwrap();
    assert!(b3.member_epoch >= b2.member_epoch);
}

#[test]
fn the_sessions_of_a_consumer_group_read_back_start_at_the_load() {
    let mut g = groups(6);
    hb(&mut g, 0, join("a", &["t"])).unwrap();
    let mut back = reloaded(&g, 1_000_000); // long after a's last heartbeat (t=0)
    assert!(back.consumer_tick(1_000_000 + 44_999).is_empty(), "45 s session from the load");
    assert_eq!(back.consumer_tick(1_000_000 + 45_001), vec!["g".to_string()]);
    assert!(back.consumer_group("g").unwrap().members().is_empty());
}

#[test]
fn what_a_consumer_group_keeps_changes_with_epochs_and_assignments_not_with_sessions() {
    let mut g = groups(6);
    let a = hb(&mut g, 0, join("a", &["t"])).unwrap();
    let digest = g.consumer_digest("g");
    hb(&mut g, 5_000, beat("a", a.member_epoch, &owned(&parts(&a.assignment)))).unwrap();
    assert_eq!(g.consumer_digest("g"), digest, "a heartbeat that only renews the session");
    hb(&mut g, 5_001, join("b", &["t"])).unwrap();
    assert_ne!(g.consumer_digest("g"), digest, "a member joined");
}

#[test]
fn a_consumer_group_read_back_while_reconciling_finishes_the_revocation_after_the_load() {
    let mut g = groups(6);
    let a = hb(&mut g, 0, join("a", &["t"])).unwrap();
    let a_parts = parts(&a.assignment);
    let b = hb(&mut g, 1, join("b", &["t"])).unwrap();
    assert!(parts(&b.assignment).is_empty(), "b waits for what a must give up");
    let a2 = hb(&mut g, 2, beat("a", a.member_epoch, &owned(&a_parts))).unwrap();
    let a_kept = parts(&a2.assignment);
    assert!(a_kept.len() < a_parts.len(), "a is told to revoke");

    // The coordinator restarts while a still owns what it must give up.
    let mut back = reloaded(&g, 100_000);
    let state = |g: &Groups, m: &str| g.consumer_group("g").unwrap().member(m).unwrap().state;
    assert_eq!(state(&back, "a"), MemberState::UnrevokedPartitions);
    assert_eq!(
        back.consumer_group("g").unwrap().member("a").unwrap().rebalance_deadline_ms,
        Some(100_000 + 30_000),
        "its rebalance timeout starts again at the load"
    );
    // a revokes, moves on to the new epoch; b then gets the revoked partitions.
    let a3 = hb(&mut back, 100_001, beat("a", a2.member_epoch, &owned(&a_kept))).unwrap();
    assert!(a3.member_epoch > a.member_epoch);
    assert_eq!(state(&back, "a"), MemberState::Stable);
    let b2 = hb(&mut back, 100_002, beat("b", b.member_epoch, &Assignment::new())).unwrap();
    let b_parts = parts(&b2.assignment);
    assert_eq!(b_parts.len() + a_kept.len(), 6);
    assert!(b_parts.is_disjoint(&a_kept));
}
