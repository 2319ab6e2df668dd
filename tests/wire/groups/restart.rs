//! Group restarts through the real binary: a classic group's membership is kept across a restart of
//! its coordinator (store::group::stored), clean (SIGTERM) or not (kill -9): its member's
//! Heartbeat, SyncGroup and OffsetCommit at its generation go on without a rebalance, its static
//! id and assignment are kept, and a member that never comes back is removed after its session
//! timeout counted from the restart. A consumer-protocol group (KIP-848) keeps its members,
//! epochs and assignments the same way (store::group::consumer::stored).

use crate::common;

use std::time::{Duration, Instant};

use common::groups::{join_request, start_with_topic, str_bytes as s};
use common::{Broker, Client};
use kafka_protocol::messages::sync_group_request::SyncGroupRequestAssignment;
use kafka_protocol::messages::*;
use uuid::Uuid;

const TOPIC: &str = "trestart";
const UNKNOWN_MEMBER_ID: i16 = 25;
const REBALANCE_IN_PROGRESS: i16 = 27;

fn start() -> (Broker, Client) {
    start_with_topic(&[("KAAS_GROUP_INITIAL_REBALANCE_DELAY_MS", "0")], TOPIC)
}

/// JoinGroup v5 (static id `instance`) and the leader's SyncGroup giving itself `assignment`.
fn join_and_sync(c: &mut Client, group: &str, instance: &str, assignment: &[u8]) -> (String, i32) {
    let mut join = join_request(group, "", "consumer", b"subscription".to_vec());
    join.group_instance_id = Some(s(instance));
    let j: JoinGroupResponse = c.call(ApiKey::JoinGroup, 5, join);
    assert_eq!(j.error_code, 0);
    let member = j.member_id.to_string();
    let (code, got) = sync(c, group, &member, instance, j.generation_id, Some(assignment));
    assert_eq!((code, got.as_slice()), (0, assignment));
    (member, j.generation_id)
}

/// SyncGroup v5 (`assignment`: the leader's, for itself): (error, the member's assignment).
fn sync(
    c: &mut Client,
    group: &str,
    member: &str,
    instance: &str,
    generation: i32,
    assignment: Option<&[u8]>,
) -> (i16, Vec<u8>) {
    let mut req = SyncGroupRequest::default();
    req.group_id = GroupId(s(group));
    req.generation_id = generation;
    req.member_id = s(member);
    req.group_instance_id = Some(s(instance));
    req.protocol_type = Some(s("consumer"));
    req.protocol_name = Some(s("range"));
    if let Some(a) = assignment {
        let mut x = SyncGroupRequestAssignment::default();
        x.member_id = s(member);
        x.assignment = a.to_vec().into();
        req.assignments.push(x);
    }
    let resp: SyncGroupResponse = c.call(ApiKey::SyncGroup, 5, req);
    (resp.error_code, resp.assignment.to_vec())
}

fn heartbeat(c: &mut Client, group: &str, member: &str, instance: &str, generation: i32) -> i16 {
    let mut req = HeartbeatRequest::default();
    req.group_id = GroupId(s(group));
    req.member_id = s(member);
    req.group_instance_id = Some(s(instance));
    req.generation_id = generation;
    let resp: HeartbeatResponse = c.call(ApiKey::Heartbeat, 4, req);
    resp.error_code
}

/// The group's state and member ids as DescribeGroups v5 answers.
fn describe(c: &mut Client, group: &str) -> (String, Vec<String>) {
    let mut req = DescribeGroupsRequest::default();
    req.groups = vec![GroupId(s(group))];
    let resp: DescribeGroupsResponse = c.call(ApiKey::DescribeGroups, 5, req);
    let g = &resp.groups[0];
    (g.group_state.to_string(), g.members.iter().map(|m| m.member_id.to_string()).collect())
}

/// The member goes on after a restart exactly as before it.
fn goes_on(c: &mut Client, member: &str, generation: i32, offset: i64) {
    assert_eq!(heartbeat(c, "g", member, "i-1", generation), 0, "no rebalance, no UNKNOWN_MEMBER_ID");
    assert_eq!(sync(c, "g", member, "i-1", generation, None), (0, b"p0".to_vec()), "its assignment is kept");
    assert_eq!(common::groups::commit(c, "g", TOPIC, member, generation, offset), 0);
    assert_eq!(describe(c, "g"), ("Stable".to_string(), vec![member.to_string()]));
}

#[test]
fn a_stable_group_goes_on_after_a_clean_restart_and_after_kill_9() {
    let (mut broker, mut c) = start();
    let (member, generation) = join_and_sync(&mut c, "g", "i-1", b"p0");
    assert_eq!(common::groups::commit(&mut c, "g", TOPIC, &member, generation, 5), 0);

    broker.stop_clean(Duration::from_secs(15));
    broker.restart_in_place();
    goes_on(&mut broker.client(), &member, generation, 6);

    broker.crash_and_restart();
    goes_on(&mut broker.client(), &member, generation, 7);
    broker.finish();
}

#[test]
fn a_member_that_does_not_come_back_is_removed_a_session_timeout_after_the_restart() {
    let (mut broker, mut c) = start();
    let (member, generation) = join_and_sync(&mut c, "g", "i-1", b"p0");
    broker.crash_and_restart();
    let mut c = broker.client();
    let restarted = Instant::now();
    assert_eq!(describe(&mut c, "g").0, "Stable");
    // join_request's session timeout is 10 s: the member is kept until then, then removed.
    while describe(&mut c, "g").0 == "Stable" {
        assert!(restarted.elapsed() < Duration::from_secs(20), "the silent member was never removed");
        std::thread::sleep(Duration::from_millis(200));
    }
    assert!(
        restarted.elapsed() >= Duration::from_secs(9),
        "removed after {:?}, before its session",
        restarted.elapsed()
    );
    let late = heartbeat(&mut c, "g", &member, "i-1", generation);
    assert!(matches!(late, UNKNOWN_MEMBER_ID | REBALANCE_IN_PROGRESS), "{late}");
    broker.finish();
}

/// ConsumerGroupHeartbeat v1: a join (`epoch` 0, subscribing to TOPIC) or a heartbeat owning
/// `owned` partitions of TOPIC's id. Returns the answer.
fn consumer_beat(
    c: &mut Client,
    member: &str,
    epoch: i32,
    owned: Option<(Uuid, Vec<i32>)>,
) -> ConsumerGroupHeartbeatResponse {
    let mut req = ConsumerGroupHeartbeatRequest::default();
    req.group_id = GroupId(s("cg"));
    req.member_id = s(member);
    req.member_epoch = epoch;
    if epoch == 0 {
        req.rebalance_timeout_ms = 30_000;
        req.subscribed_topic_names = Some(vec![TopicName(s(TOPIC))]);
        req.topic_partitions = Some(vec![]);
    } else {
        req.rebalance_timeout_ms = -1;
        let mut tp = consumer_group_heartbeat_request::TopicPartitions::default();
        if let Some((id, parts)) = owned {
            tp.topic_id = id;
            tp.partitions = parts;
            req.topic_partitions = Some(vec![tp]);
        }
    }
    c.call(ApiKey::ConsumerGroupHeartbeat, 1, req)
}

#[test]
fn a_consumer_protocol_group_goes_on_after_kill_9() {
    let (mut broker, mut c) = start();
    let mut joined = consumer_beat(&mut c, "m-1", 0, None);
    // The assignment may come on the next heartbeat.
    while joined.assignment.is_none() {
        joined = consumer_beat(&mut c, "m-1", joined.member_epoch, None);
    }
    assert_eq!(joined.error_code, 0);
    let a = joined.assignment.clone().unwrap();
    let owned = (a.topic_partitions[0].topic_id, a.topic_partitions[0].partitions.clone());
    assert_eq!(owned.1.len(), 2, "alone, it owns both partitions");
    let epoch = joined.member_epoch;
    let settled = consumer_beat(&mut c, "m-1", epoch, Some(owned.clone()));
    assert_eq!((settled.error_code, settled.member_epoch), (0, epoch));

    broker.crash_and_restart();
    let mut c = broker.client();
    let after = consumer_beat(&mut c, "m-1", epoch, Some(owned.clone()));
    assert_eq!(
        (after.error_code, after.member_epoch),
        (0, epoch),
        "the member goes on at its epoch (not UNKNOWN_MEMBER_ID): {:?}",
        after.error_message
    );
    let kept = |r: &ConsumerGroupHeartbeatResponse| {
        r.assignment
            .as_ref()
            .is_none_or(|a| a.topic_partitions.iter().all(|t| (t.topic_id, t.partitions.clone()) == owned))
    };
    // Not told to give its partitions up: the coordinator read back knew the topic (with an
    // empty topic image the first heartbeat bumped the group epoch and revoked everything).
    assert!(kept(&after), "its assignment is kept: {:?}", after.assignment);
    assert_eq!(common::groups::commit(&mut c, "cg", TOPIC, "m-1", epoch, 3), 0, "OffsetCommit at its member epoch");
    // Past the coordinator's next topic refresh, still the same epoch and partitions.
    std::thread::sleep(Duration::from_millis(1500));
    let later = consumer_beat(&mut c, "m-1", epoch, Some(owned.clone()));
    assert_eq!((later.error_code, later.member_epoch), (0, epoch));
    assert!(kept(&later), "{:?}", later.assignment);
    broker.finish();
}
