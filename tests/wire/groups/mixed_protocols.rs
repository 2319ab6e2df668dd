//! KIP-848 mixed mode on the wire, against the real binary (store::group::mixed,
//! store::group::consumer::classic): a classic member inside a consumer group (JoinGroup with
//! MEMBER_ID_REQUIRED, a server-side assignment answered by SyncGroup as a ConsumerProtocol
//! Assignment, Heartbeat's REBALANCE_IN_PROGRESS, OffsetCommit with generation = member epoch,
//! LeaveGroup), the online upgrade of a classic group with a member, and the downgrade when the
//! consumer-protocol member leaves.

use crate::common;

use common::groups::{classic_leave, consumer_leave, group_type, join_request, start_with_topic, str_bytes as s};
use common::{Broker, Client};
use kafka_protocol::messages::consumer_group_heartbeat_request::TopicPartitions;
use kafka_protocol::messages::sync_group_request::SyncGroupRequestAssignment;
use kafka_protocol::messages::*;

const TOPIC: &str = "tmix";
const ILLEGAL_GENERATION: i16 = 22;
const REBALANCE_IN_PROGRESS: i16 = 27;
const MEMBER_ID_REQUIRED: i16 = 79;

fn start() -> (Broker, Client) {
    start_with_topic(&[("KAAS_GROUP_INITIAL_REBALANCE_DELAY_MS", "0")], TOPIC)
}

/// A ConsumerProtocol Subscription v1 of TOPIC owning nothing (as an eager consumer rejoins).
fn subscription() -> Vec<u8> {
    let mut m = vec![0, 1, 0, 0, 0, 1];
    m.extend_from_slice(&(TOPIC.len() as i16).to_be_bytes());
    m.extend_from_slice(TOPIC.as_bytes());
    m.extend_from_slice(&[0xff, 0xff, 0xff, 0xff, 0, 0, 0, 0]);
    m
}

/// A ConsumerProtocol Assignment of TOPIC's `partitions`.
fn assignment(partitions: &[i32]) -> Vec<u8> {
    let mut m = vec![0, 3, 0, 0, 0, 1];
    m.extend_from_slice(&(TOPIC.len() as i16).to_be_bytes());
    m.extend_from_slice(TOPIC.as_bytes());
    m.extend_from_slice(&(partitions.len() as i32).to_be_bytes());
    partitions.iter().for_each(|p| m.extend_from_slice(&p.to_be_bytes()));
    m.extend_from_slice(&[0xff, 0xff, 0xff, 0xff]);
    m
}

/// The partitions of TOPIC in a ConsumerProtocol Assignment.
fn partitions(a: &[u8]) -> Vec<i32> {
    if a.is_empty() {
        return Vec::new();
    }
    let n = i32::from_be_bytes([a[2], a[3], a[4], a[5]]);
    let mut pos = 6;
    let mut out = Vec::new();
    for _ in 0..n {
        let len = i16::from_be_bytes([a[pos], a[pos + 1]]) as usize;
        let topic = String::from_utf8(a[pos + 2..pos + 2 + len].to_vec()).expect("utf8");
        pos += 2 + len;
        let k = i32::from_be_bytes([a[pos], a[pos + 1], a[pos + 2], a[pos + 3]]);
        pos += 4;
        for _ in 0..k {
            let p = i32::from_be_bytes([a[pos], a[pos + 1], a[pos + 2], a[pos + 3]]);
            pos += 4;
            if topic == TOPIC {
                out.push(p);
            }
        }
    }
    out
}

fn join(c: &mut Client, group: &str, version: i16, member: &str) -> JoinGroupResponse {
    c.call(ApiKey::JoinGroup, version, join_request(group, member, "consumer", subscription()))
}

fn sync(
    c: &mut Client,
    group: &str,
    member: &str,
    generation: i32,
    assignments: &[(&str, Vec<u8>)],
) -> SyncGroupResponse {
    let mut req = SyncGroupRequest::default();
    req.group_id = GroupId(s(group));
    req.generation_id = generation;
    req.member_id = s(member);
    req.protocol_type = Some(s("consumer"));
    req.protocol_name = Some(s("range"));
    for (m, a) in assignments {
        let mut x = SyncGroupRequestAssignment::default();
        x.member_id = s(m);
        x.assignment = a.clone().into();
        req.assignments.push(x);
    }
    c.call(ApiKey::SyncGroup, 5, req)
}

fn heartbeat(c: &mut Client, group: &str, member: &str, generation: i32) -> i16 {
    let mut req = HeartbeatRequest::default();
    req.group_id = GroupId(s(group));
    req.member_id = s(member);
    req.generation_id = generation;
    let resp: HeartbeatResponse = c.call(ApiKey::Heartbeat, 4, req);
    resp.error_code
}

fn commit(c: &mut Client, group: &str, member: &str, generation: i32, offset: i64) -> i16 {
    common::groups::commit(c, group, TOPIC, member, generation, offset)
}

/// A ConsumerGroupHeartbeat: a join (epoch 0) or a heartbeat owning `owned` of TOPIC.
fn consumer_beat(c: &mut Client, group: &str, member: &str, epoch: i32, owned: &[i32]) -> (i32, Option<Vec<i32>>) {
    let mut req = ConsumerGroupHeartbeatRequest::default();
    req.group_id = GroupId(s(group));
    req.member_id = s(member);
    req.member_epoch = epoch;
    req.rebalance_timeout_ms = if epoch == 0 { 30_000 } else { -1 };
    if epoch == 0 {
        req.subscribed_topic_names = Some(vec![TopicName(s(TOPIC))]);
    }
    let topic_id = topic_id(c);
    let mut tp = TopicPartitions::default();
    tp.topic_id = topic_id;
    tp.partitions = owned.to_vec();
    req.topic_partitions = Some(if owned.is_empty() { vec![] } else { vec![tp] });
    let resp: ConsumerGroupHeartbeatResponse = c.call(ApiKey::ConsumerGroupHeartbeat, 1, req);
    assert_eq!(resp.error_code, 0, "{:?}", resp.error_message);
    let assigned = resp.assignment.map(|a| {
        let mut v: Vec<i32> = a.topic_partitions.iter().flat_map(|t| t.partitions.clone()).collect();
        v.sort();
        v
    });
    (resp.member_epoch, assigned)
}

fn topic_id(c: &mut Client) -> uuid::Uuid {
    let mut t = metadata_request::MetadataRequestTopic::default();
    t.name = Some(TopicName(s(TOPIC)));
    let mut req = MetadataRequest::default();
    req.topics = Some(vec![t]);
    let resp: MetadataResponse = c.call(ApiKey::Metadata, 12, req);
    resp.topics[0].topic_id
}

#[test]
fn a_classic_member_is_served_inside_a_consumer_group() {
    let (broker, mut c) = start();
    let (epoch, assigned) = consumer_beat(&mut c, "g1", "kip-a", 0, &[]);
    assert_eq!((epoch, assigned), (1, Some(vec![0, 1])));

    // JoinGroup v7 without member id: MEMBER_ID_REQUIRED (KIP-394), then the join.
    let j = join(&mut c, "g1", 7, "");
    assert_eq!(j.error_code, MEMBER_ID_REQUIRED);
    let member = j.member_id.to_string();
    let j = join(&mut c, "g1", 7, &member);
    assert_eq!(j.error_code, 0);
    assert_eq!(j.generation_id, 2, "generation = its member epoch: the join bumped the group epoch");
    assert_eq!(j.protocol_type.as_ref().map(|p| p.to_string()).as_deref(), Some("consumer"));
    assert_eq!(j.protocol_name.as_ref().map(|p| p.to_string()).as_deref(), Some("range"));
    assert!(j.leader.is_empty() && j.members.is_empty(), "the assignment is the server's");
    assert_eq!(group_type(&mut c, "g1"), "consumer");

    // Its partition is still kip-a's: nothing yet, and the heartbeat waits.
    let sy = sync(&mut c, "g1", &member, 2, &[]);
    assert_eq!((sy.error_code, partitions(&sy.assignment)), (0, vec![]));
    assert_eq!(heartbeat(&mut c, "g1", &member, 2), 0);
    // kip-a revokes one partition...
    let (epoch, assigned) = consumer_beat(&mut c, "g1", "kip-a", 1, &[0, 1]);
    let kept = assigned.expect("told what it keeps");
    assert_eq!((epoch, kept.len()), (1, 1));
    assert_eq!(consumer_beat(&mut c, "g1", "kip-a", 1, &kept).0, 2);
    // ...so the classic member is told to rejoin, and gets it.
    assert_eq!(heartbeat(&mut c, "g1", &member, 2), REBALANCE_IN_PROGRESS);
    let j = join(&mut c, "g1", 7, &member);
    assert_eq!((j.error_code, j.generation_id), (0, 2));
    let sy = sync(&mut c, "g1", &member, 2, &[]);
    let mine = partitions(&sy.assignment);
    assert_eq!(mine.len(), 1);
    assert!(!kept.contains(&mine[0]));
    assert_eq!(heartbeat(&mut c, "g1", &member, 2), 0);

    // Its commits carry generation = member epoch.
    assert_eq!(commit(&mut c, "g1", &member, 2, 9), 0);
    assert_eq!(commit(&mut c, "g1", &member, 1, 9), ILLEGAL_GENERATION);

    // A new consumer-protocol member: the classic member must rejoin.
    consumer_beat(&mut c, "g1", "kip-b", 0, &[]);
    assert_eq!(heartbeat(&mut c, "g1", &member, 2), REBALANCE_IN_PROGRESS);

    // LeaveGroup removes it; the group stays a consumer group (kip-a, kip-b).
    classic_leave(&mut c, "g1", &member);
    assert_eq!(heartbeat(&mut c, "g1", &member, 2), 25, "UNKNOWN_MEMBER_ID once gone");
    assert_eq!(group_type(&mut c, "g1"), "consumer");
    broker.finish();
}

#[test]
fn a_classic_group_upgrades_online_and_downgrades_when_the_consumer_member_leaves() {
    let (broker, mut c) = start();
    let j = join(&mut c, "g2", 3, "");
    assert_eq!((j.error_code, j.generation_id), (0, 1));
    let member = j.member_id.to_string();
    let sy = sync(&mut c, "g2", &member, 1, &[(&member, assignment(&[0, 1]))]);
    assert_eq!((sy.error_code, partitions(&sy.assignment)), (0, vec![0, 1]));
    assert_eq!(commit(&mut c, "g2", &member, 1, 5), 0);

    // Upgrade: the classic member stays with its assignment (epoch 1); the new member is added.
    let (epoch, _) = consumer_beat(&mut c, "g2", "kip-b", 0, &[]);
    assert_eq!(epoch, 2);
    assert_eq!(group_type(&mut c, "g2"), "consumer");
    assert_eq!(commit(&mut c, "g2", &member, 1, 6), 0, "its generation is its member epoch");
    assert_eq!(heartbeat(&mut c, "g2", &member, 1), REBALANCE_IN_PROGRESS);
    // It rejoins (having revoked, as an eager consumer) and gets its share.
    let j = join(&mut c, "g2", 3, &member);
    assert_eq!((j.error_code, j.generation_id), (0, 2));
    let mine = partitions(&sync(&mut c, "g2", &member, 2, &[]).assignment);
    assert_eq!(mine.len(), 1);
    let (_, theirs) = consumer_beat(&mut c, "g2", "kip-b", 2, &[]);
    let theirs = theirs.expect("kip-b's partition");
    assert_eq!(theirs.len(), 1);
    assert_ne!(theirs, mine);

    // Downgrade: kip-b leaves; a classic group again at generation 2, rebalancing.
    consumer_leave(&mut c, "g2", "kip-b");
    assert_eq!(group_type(&mut c, "g2"), "classic");
    assert_eq!(heartbeat(&mut c, "g2", &member, 2), REBALANCE_IN_PROGRESS);
    let j = join(&mut c, "g2", 3, &member);
    assert_eq!((j.error_code, j.generation_id, j.leader.to_string()), (0, 3, member.clone()));
    assert_eq!(sync(&mut c, "g2", &member, 3, &[(&member, assignment(&[0, 1]))]).error_code, 0);
    assert_eq!(heartbeat(&mut c, "g2", &member, 3), 0);
    assert_eq!(commit(&mut c, "g2", &member, 3, 7), 0);
    broker.finish();
}

#[test]
fn a_classic_member_that_does_not_rejoin_when_told_is_removed_after_its_rebalance_timeout() {
    let (broker, mut c) = start();
    consumer_beat(&mut c, "g3", "kip-a", 0, &[]);
    let mut req = join_request("g3", "", "consumer", subscription());
    req.rebalance_timeout_ms = 1_500;
    let j: JoinGroupResponse = c.call(ApiKey::JoinGroup, 3, req);
    assert_eq!(j.error_code, 0);
    let member = j.member_id.to_string();
    assert_eq!(sync(&mut c, "g3", &member, j.generation_id, &[]).error_code, 0);
    // A new member: the classic member is told to rejoin, and only heartbeats (its 10 s
    // session stays alive); Apache Kafka removes it after its rebalance timeout.
    consumer_beat(&mut c, "g3", "kip-b", 0, &[]);
    let told = std::time::Instant::now();
    assert_eq!(heartbeat(&mut c, "g3", &member, j.generation_id), REBALANCE_IN_PROGRESS);
    let gone = loop {
        std::thread::sleep(std::time::Duration::from_millis(200));
        let e = heartbeat(&mut c, "g3", &member, j.generation_id);
        if e != REBALANCE_IN_PROGRESS {
            break e;
        }
        assert!(told.elapsed() < std::time::Duration::from_secs(8), "still a member long after its rebalance timeout");
    };
    assert_eq!(gone, 25, "UNKNOWN_MEMBER_ID: removed");
    assert!(told.elapsed() >= std::time::Duration::from_millis(1_400), "not before its rebalance timeout");
    broker.finish();
}

#[test]
fn a_static_member_coming_back_on_the_classic_protocol_replaces_itself_and_the_group_downgrades() {
    let (broker, mut c) = start();
    let mut req = ConsumerGroupHeartbeatRequest::default();
    req.group_id = GroupId(s("g4"));
    req.member_id = s("kip-static");
    req.instance_id = Some(s("instance-1"));
    req.member_epoch = 0;
    req.rebalance_timeout_ms = 30_000;
    req.subscribed_topic_names = Some(vec![TopicName(s(TOPIC))]);
    req.topic_partitions = Some(vec![]);
    let resp: ConsumerGroupHeartbeatResponse = c.call(ApiKey::ConsumerGroupHeartbeat, 1, req);
    assert_eq!((resp.error_code, resp.member_epoch), (0, 1));
    assert_eq!(group_type(&mut c, "g4"), "consumer");
    // The same instance restarts as a classic consumer: it takes the instance's place (Apache
    // Kafka's static member replacement, whatever protocol the earlier member used); no member
    // of the consumer protocol is left, so the group becomes a classic group.
    let mut join = join_request("g4", "", "consumer", subscription());
    join.group_instance_id = Some(s("instance-1"));
    let j: JoinGroupResponse = c.call(ApiKey::JoinGroup, 5, join);
    assert_eq!(j.error_code, 0);
    assert_ne!(j.member_id.to_string(), "kip-static");
    assert_eq!(group_type(&mut c, "g4"), "classic");
    broker.finish();
}
