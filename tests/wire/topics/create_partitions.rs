//! CreatePartitions (key 37) against the real binary: Kafka's answers (INVALID_PARTITIONS,
//! UNKNOWN_TOPIC_OR_PARTITION, INVALID_REPLICA_ASSIGNMENT, INVALID_REQUEST for a repeated topic,
//! POLICY_VIOLATION past `max_partitions`), validate_only changing nothing, new partitions served
//! at once and after a crash, existing partitions and their producers untouched; and in a cluster
//! of two brokers on one disk, the peer learning and serving the partitions placed on it.

use crate::common;

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use common::cluster::{self, wait_for, NOT_LEADER_OR_FOLLOWER, PARTITIONS, TICK, TOPIC};
use common::{batch, create_topic_with as create_topic, Broker, Client};
use kafka_protocol::messages::create_partitions_request::{CreatePartitionsAssignment, CreatePartitionsTopic};
use kafka_protocol::messages::metadata_request::MetadataRequestTopic;
use kafka_protocol::messages::*;

const UNKNOWN_TOPIC_OR_PARTITION: i16 = 3;
const INVALID_PARTITIONS: i16 = 37;
const INVALID_REPLICA_ASSIGNMENT: i16 = 39;
const INVALID_REQUEST: i16 = 42;
const POLICY_VIOLATION: i16 = 44;

fn entry(topic: &str, count: i32, assignments: Option<Vec<Vec<i32>>>) -> CreatePartitionsTopic {
    let mut t = CreatePartitionsTopic::default();
    t.name = cluster::name(topic);
    t.count = count;
    t.assignments = assignments.map(|a| {
        a.into_iter()
            .map(|ids| {
                let mut x = CreatePartitionsAssignment::default();
                x.broker_ids = ids.into_iter().map(BrokerId).collect();
                x
            })
            .collect()
    });
    t
}

/// (topic, error code, error message) of every answer, in answer order.
fn create_partitions(
    c: &mut Client,
    version: i16,
    topics: Vec<CreatePartitionsTopic>,
    validate_only: bool,
) -> Vec<(String, i16, String)> {
    let mut req = CreatePartitionsRequest::default();
    req.topics = topics;
    req.timeout_ms = 30_000;
    req.validate_only = validate_only;
    let resp: CreatePartitionsResponse = c.call(ApiKey::CreatePartitions, version, req);
    resp.results
        .iter()
        .map(|r| {
            (r.name.0.to_string(), r.error_code, r.error_message.as_ref().map(|m| m.to_string()).unwrap_or_default())
        })
        .collect()
}

fn grow(c: &mut Client, topic: &str, count: i32) -> (i16, String) {
    let (_, code, message) = create_partitions(c, 3, vec![entry(topic, count, None)], false).remove(0);
    (code, message)
}

/// partition -> leader of `topic` as `c`'s Metadata says (empty when the topic is unknown).
fn leaders(c: &mut Client, topic: &str) -> BTreeMap<i32, i32> {
    let mut t = MetadataRequestTopic::default();
    t.name = Some(cluster::name(topic));
    let mut req = MetadataRequest::default();
    req.topics = Some(vec![t]);
    req.allow_auto_topic_creation = false;
    let resp: MetadataResponse = c.call(ApiKey::Metadata, 9, req);
    resp.topics
        .iter()
        .filter(|t| t.error_code == 0)
        .flat_map(|t| t.partitions.iter().map(|p| (p.partition_index, p.leader_id.0)))
        .collect()
}

/// (error, base offset) of an idempotent produce of `n` records to `topic`-`partition`.
fn produce(c: &mut Client, topic: &str, partition: i32, pid: i64, seq: i32, n: usize) -> (i16, i64) {
    let resp = common::produce_one(c, 9, None, cluster::name(topic), partition, batch(pid, 0, seq, n, "v"));
    let r = &resp.responses[0].partition_responses[0];
    (r.error_code, r.base_offset)
}

#[test]
fn create_partitions_answers_as_kafka_and_new_partitions_are_served_and_recovered() {
    let mut broker = Broker::start_with_env(&[("KAAS_MAX_PARTITIONS", "6")]);
    let mut c = broker.client();
    create_topic(&mut c, "t", 2);
    create_topic(&mut c, "u", 1);
    // An idempotent producer on partition 0, before the topic grows.
    assert_eq!(produce(&mut c, "t", 0, 42, 0, 3), (0, 0));

    // Not an increase: INVALID_PARTITIONS with Kafka's (KRaft controller's) messages.
    assert_eq!(grow(&mut c, "t", 2), (INVALID_PARTITIONS, "Topic already has 2 partition(s).".into()));
    assert_eq!(
        grow(&mut c, "t", 1),
        (INVALID_PARTITIONS, "The topic t currently has 2 partition(s); 1 would not be an increase.".into())
    );
    // Unknown: no message, as Kafka 4.4 answers.
    assert_eq!(grow(&mut c, "nope", 5), (UNKNOWN_TOPIC_OR_PARTITION, String::new()));
    // Kafka's internal topics (in Metadata, served by the coordinators) have fixed partitions here.
    assert_eq!(grow(&mut c, "__consumer_offsets", 60).0, INVALID_REQUEST);
    assert_eq!(grow(&mut c, "__transaction_state", 60).0, INVALID_REQUEST);
    // A broker that does not exist, and too few assignments: INVALID_REPLICA_ASSIGNMENT.
    let answers = create_partitions(&mut c, 1, vec![entry("t", 3, Some(vec![vec![7]]))], false);
    assert_eq!(answers[0].1, INVALID_REPLICA_ASSIGNMENT, "{answers:?}");
    assert!(answers[0].2.contains("broker 7"), "{answers:?}");
    let answers = create_partitions(&mut c, 0, vec![entry("t", 4, Some(vec![vec![0]]))], false);
    assert_eq!(answers[0].1, INVALID_REPLICA_ASSIGNMENT, "{answers:?}");
    // A repeated topic: INVALID_REQUEST once, and neither entry applied; the other topic is.
    let answers =
        create_partitions(&mut c, 2, vec![entry("t", 3, None), entry("u", 2, None), entry("t", 4, None)], false);
    assert_eq!(answers.len(), 2, "{answers:?}");
    assert_eq!(answers[0], ("t".into(), INVALID_REQUEST, "Duplicate topic name.".into()));
    assert_eq!((answers[1].0.as_str(), answers[1].1), ("u", 0));
    assert_eq!(leaders(&mut c, "t").len(), 2);
    assert_eq!(leaders(&mut c, "u").len(), 2);
    // validate_only: answered as if done, nothing changes.
    let answers = create_partitions(&mut c, 3, vec![entry("t", 4, None)], true);
    assert_eq!(answers[0].1, 0, "{answers:?}");
    assert_eq!(leaders(&mut c, "t").len(), 2, "validate_only changed nothing");
    // max_partitions (6): 4 served, 3 more would pass it (POLICY_VIOLATION, as CreateTopics).
    let (code, message) = grow(&mut c, "t", 5);
    assert_eq!(code, POLICY_VIOLATION, "{message}");
    assert!(message.contains("max_partitions"), "{message}");
    // With the one broker named in the assignment it is honoured.
    let answers = create_partitions(&mut c, 3, vec![entry("t", 4, Some(vec![vec![0], vec![0]]))], false);
    assert_eq!(answers[0].1, 0, "{answers:?}");
    assert_eq!(leaders(&mut c, "t"), BTreeMap::from([(0, 0), (1, 0), (2, 0), (3, 0)]));

    // This connection produced to "t" before: it sees the new partitions at once.
    assert_eq!(produce(&mut c, "t", 3, 43, 0, 2), (0, 0));
    // The existing partition and its producer's state are untouched.
    assert_eq!(produce(&mut c, "t", 0, 42, 3, 1), (0, 3));
    assert_eq!(produce(&mut c, "t", 0, 42, 3, 1), (0, 3), "a retry is still known as a duplicate");
    assert_eq!(log_end(&mut c, "t", 0), 4);

    // A crash: the topic file says 4 partitions, partition 3 has its records.
    broker.crash_and_restart();
    let mut c = broker.client();
    assert_eq!(leaders(&mut c, "t").len(), 4);
    assert_eq!(log_end(&mut c, "t", 3), 2);
    assert_eq!(produce(&mut c, "t", 3, 43, 2, 1), (0, 2), "the new partition's producer state was recovered");
    broker.finish();
}

/// High watermark of `topic`-`partition` (Fetch from offset 0).
fn log_end(c: &mut Client, topic: &str, partition: i32) -> i64 {
    let mut req = ListOffsetsRequest::default();
    req.replica_id = BrokerId(-1);
    let mut p = list_offsets_request::ListOffsetsPartition::default();
    p.partition_index = partition;
    p.timestamp = -1;
    let mut t = list_offsets_request::ListOffsetsTopic::default();
    t.name = cluster::name(topic);
    t.partitions = vec![p];
    req.topics = vec![t];
    let resp: ListOffsetsResponse = c.call(ApiKey::ListOffsets, 5, req);
    let p = &resp.topics[0].partitions[0];
    assert_eq!(p.error_code, 0);
    p.offset
}

#[test]
fn a_peer_learns_and_serves_the_partitions_placed_on_it() {
    let shared = tempfile::tempdir().expect("shared dir");
    let env = [("KAAS_CLUSTER_TICK_MS", TICK)];
    let brokers: Vec<Broker> = (1..=2).map(|id| Broker::start_member(shared.path(), id, &env)).collect();
    let all: BTreeSet<i32> = [1, 2].into();
    wait_for(Duration::from_secs(10), "two live brokers", || {
        (cluster::metadata(&mut brokers[0].client()).0.keys().copied().collect::<BTreeSet<_>>() == all).then_some(())
    });
    cluster::create(&mut brokers[0].client());
    let (ports, before) =
        wait_for(Duration::from_secs(10), "every partition led", || cluster::settled(&brokers[0], &all));
    // Both brokers serve the topic (and cache it per connection) before it grows.
    let mut peer = brokers[1].client();
    assert_eq!(leaders(&mut peer, TOPIC).len(), PARTITIONS as usize);

    let count = PARTITIONS + 6;
    assert_eq!(grow(&mut brokers[0].client(), TOPIC, count), (0, String::new()));
    // Every broker's Metadata shows the new partitions, led by live brokers, within a few ticks.
    let after = wait_for(Duration::from_secs(5), "the new partitions on both brokers", || {
        let seen: Vec<_> = brokers.iter().map(|b| leaders(&mut b.client(), TOPIC)).collect();
        let led = |m: &BTreeMap<i32, i32>| m.len() == count as usize && m.values().all(|l| all.contains(l));
        (seen.iter().all(led) && seen[0] == seen[1]).then(|| seen[0].clone())
    });
    for p in 0..PARTITIONS {
        assert_eq!(after[&p], before[&p], "existing partition {p} did not move");
    }
    let new_leaders: BTreeSet<i32> = (PARTITIONS..count).map(|p| after[&p]).collect();
    assert_eq!(new_leaders, all, "the new partitions are placed on both brokers: {after:?}");
    // Each new partition takes writes at its leader (the peer opened its own), not elsewhere;
    // the peer's connection that had the old count cached is one of them.
    for p in PARTITIONS..count {
        let leader = after[&p];
        let mut at_leader = if leader == 2 { brokers[1].client() } else { Client::connect(ports[&leader]) };
        let accepted = wait_for(Duration::from_secs(5), "the leader serves it", || {
            let r = produce(&mut at_leader, TOPIC, p, 500 + i64::from(p), 0, 1);
            (r.0 == 0).then_some(r)
        });
        assert_eq!(accepted, (0, 0), "partition {p}");
        let other = *all.iter().find(|n| **n != leader).expect("the other broker");
        let refused = produce(&mut Client::connect(ports[&other]), TOPIC, p, 900, 0, 1).0;
        assert_eq!(refused, NOT_LEADER_OR_FOLLOWER, "partition {p} at broker {other}");
    }
    let peer_led = (PARTITIONS..count).find(|p| after[p] == 2).expect("a new partition on the peer");
    assert_eq!(produce(&mut peer, TOPIC, peer_led, 77, 0, 1), (0, 1), "the peer's cached handle was refreshed");
    for b in brokers {
        b.finish();
    }
}
