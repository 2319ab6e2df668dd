//! DeleteRecords (key 21, KIP-107) against the real binary: the per-partition answers, the new
//! log start in Fetch / ListOffsets / Produce, a fetch below it, the segment below it gone, and
//! all of it after kill -9 and a restart; in a shared-disk cluster, NOT_LEADER_OR_FOLLOWER away
//! from the leader and the new start kept by the broker that takes the partition over.

use crate::common;

use std::collections::BTreeSet;
use std::time::Duration;

use bytes::Bytes;
use common::cluster::{self, metadata, settled, wait_for, TICK, TOPIC};
use common::{batch, Broker, Client};
use kafka_protocol::messages::create_topics_request::{CreatableTopic, CreatableTopicConfig};
use kafka_protocol::messages::delete_records_request::{DeleteRecordsPartition, DeleteRecordsTopic};
use kafka_protocol::messages::fetch_request::{FetchPartition, FetchTopic};
use kafka_protocol::messages::list_offsets_request::{ListOffsetsPartition, ListOffsetsTopic};
use kafka_protocol::messages::*;
use kafka_protocol::protocol::StrBytes;

const NONE: i16 = 0;
const OFFSET_OUT_OF_RANGE: i16 = 1;
const UNKNOWN_TOPIC_OR_PARTITION: i16 = 3;
const INVALID_TOPIC_EXCEPTION: i16 = 17;
const POLICY_VIOLATION: i16 = 44;

fn name(s: &str) -> TopicName {
    TopicName(StrBytes::from_string(s.to_string()))
}

fn create(c: &mut Client, topic: &str, configs: &[(&str, &str)]) {
    let mut t = CreatableTopic::default();
    t.name = name(topic);
    t.num_partitions = 1;
    t.replication_factor = 1;
    for (k, v) in configs {
        let mut cfg = CreatableTopicConfig::default();
        cfg.name = StrBytes::from_string(k.to_string());
        cfg.value = Some(StrBytes::from_string(v.to_string()));
        t.configs.push(cfg);
    }
    let mut req = CreateTopicsRequest::default();
    req.topics = vec![t];
    req.timeout_ms = 30_000;
    let resp: CreateTopicsResponse = c.call(ApiKey::CreateTopics, 5, req);
    assert_eq!(resp.topics[0].error_code, 0);
}

/// (error code, log start offset) of one produce to partition 0.
fn produce(c: &mut Client, topic: &str, records: Bytes) -> (i16, i64) {
    let resp = common::produce_one(c, 9, None, name(topic), 0, records);
    let p = &resp.responses[0].partition_responses[0];
    (p.error_code, p.log_start_offset)
}

/// (topic, partition, offset) -> (partition, error code, low watermark) per answer, in order.
fn delete_records(c: &mut Client, version: i16, wanted: &[(&str, i32, i64)]) -> Vec<(String, i32, i16, i64)> {
    let mut req = DeleteRecordsRequest::default();
    req.timeout_ms = 30_000;
    for (topic, partition, offset) in wanted {
        let mut p = DeleteRecordsPartition::default();
        p.partition_index = *partition;
        p.offset = *offset;
        let mut t = DeleteRecordsTopic::default();
        t.name = name(topic);
        t.partitions = vec![p];
        req.topics.push(t);
    }
    let resp: DeleteRecordsResponse = c.call(ApiKey::DeleteRecords, version, req);
    resp.topics
        .iter()
        .flat_map(|t| {
            t.partitions.iter().map(|p| (t.name.0.to_string(), p.partition_index, p.error_code, p.low_watermark))
        })
        .collect()
}

fn earliest(c: &mut Client, topic: &str) -> i64 {
    let mut p = ListOffsetsPartition::default();
    p.partition_index = 0;
    p.timestamp = -2;
    p.current_leader_epoch = -1;
    let mut t = ListOffsetsTopic::default();
    t.name = name(topic);
    t.partitions = vec![p];
    let mut req = ListOffsetsRequest::default();
    req.replica_id = BrokerId(-1);
    req.topics = vec![t];
    let resp: ListOffsetsResponse = c.call(ApiKey::ListOffsets, 7, req);
    let p = &resp.topics[0].partitions[0];
    assert_eq!(p.error_code, NONE);
    p.offset
}

/// (error code, log start offset, base offset of the first batch returned) of a fetch at `offset`.
fn fetch(c: &mut Client, topic: &str, offset: i64) -> (i16, i64, Option<i64>) {
    let mut p = FetchPartition::default();
    p.partition = 0;
    p.fetch_offset = offset;
    p.partition_max_bytes = 4 << 20;
    p.log_start_offset = -1;
    p.current_leader_epoch = -1;
    let mut t = FetchTopic::default();
    t.topic = name(topic);
    t.partitions = vec![p];
    let mut req = FetchRequest::default();
    req.replica_id = BrokerId(-1);
    req.max_wait_ms = 0;
    req.min_bytes = 0;
    req.max_bytes = 8 << 20;
    req.session_epoch = -1;
    req.topics = vec![t];
    let resp: FetchResponse = c.call(ApiKey::Fetch, 12, req);
    let p = &resp.responses[0].partitions[0];
    // The batch's base offset: the first 8 bytes of the records.
    let base = p.records.as_ref().filter(|r| r.len() >= 8).map(|r| i64::from_be_bytes(r[..8].try_into().unwrap()));
    (p.error_code, p.log_start_offset, base)
}

fn segment_files(broker: &Broker, topic: &str) -> Vec<String> {
    let dir = broker.data_dir().join("topics").join(format!("{topic}-0"));
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".log"))
        .collect();
    names.sort();
    names
}

#[test]
fn delete_records_moves_the_log_start_durably() {
    let mut broker = Broker::start();
    let mut c = broker.client();
    let resp: ApiVersionsResponse = c.call(ApiKey::ApiVersions, 3, ApiVersionsRequest::default());
    let k = resp.api_keys.iter().find(|k| k.api_key == ApiKey::DeleteRecords as i16).expect("DeleteRecords listed");
    assert_eq!((k.min_version, k.max_version), (0, 2));

    // 1 MiB segments (Kafka's minimum) and 200 kB records: offsets 0-4 in the first segment.
    create(&mut c, "dr", &[("segment.bytes", "1048576")]);
    // Records of a compacted topic cannot be deleted (Kafka: POLICY_VIOLATION).
    create(&mut c, "dr-compact", &[("cleanup.policy", "compact")]);
    assert_eq!(produce(&mut c, "dr-compact", batch(-1, -1, -1, 1, "k")), (NONE, 0));
    assert_eq!(
        delete_records(&mut c, 2, &[("dr-compact", 0, 1)])[0],
        ("dr-compact".to_string(), 0, POLICY_VIOLATION, -1)
    );
    let big = "x".repeat(200_000);
    for _ in 0..8 {
        assert_eq!(produce(&mut c, "dr", batch(-1, -1, -1, 1, &big)), (NONE, 0));
    }
    assert_eq!(segment_files(&broker, "dr").len(), 2);

    let answers =
        delete_records(&mut c, 2, &[("dr", 0, 6), ("dr", 7, 1), ("nope", 0, 1), ("__consumer_offsets", 0, 0)]);
    assert_eq!(
        answers,
        vec![
            ("dr".to_string(), 0, NONE, 6),
            ("dr".to_string(), 7, UNKNOWN_TOPIC_OR_PARTITION, -1),
            ("nope".to_string(), 0, UNKNOWN_TOPIC_OR_PARTITION, -1),
            ("__consumer_offsets".to_string(), 0, INVALID_TOPIC_EXCEPTION, -1),
        ]
    );
    // Above the high watermark (8), or negative other than -1: out of range. Below the start:
    // nothing moves, the answer is the start (v0 is the same request).
    assert_eq!(delete_records(&mut c, 2, &[("dr", 0, 9)])[0], ("dr".to_string(), 0, OFFSET_OUT_OF_RANGE, -1));
    assert_eq!(delete_records(&mut c, 2, &[("dr", 0, -2)])[0], ("dr".to_string(), 0, OFFSET_OUT_OF_RANGE, -1));
    assert_eq!(delete_records(&mut c, 0, &[("dr", 0, 3)])[0], ("dr".to_string(), 0, NONE, 6));

    // The segment wholly below 6 is gone; the one holding 6 stays.
    assert_eq!(segment_files(&broker, "dr"), vec![format!("{:020}.log", 5)]);
    let check = |c: &mut Client, start: i64| {
        assert_eq!(earliest(c, "dr"), start);
        assert_eq!(fetch(c, "dr", start - 1), (OFFSET_OUT_OF_RANGE, start, None));
        let (code, log_start, _) = fetch(c, "dr", start);
        assert_eq!((code, log_start), (NONE, start));
    };
    check(&mut c, 6);
    assert_eq!(fetch(&mut c, "dr", 6).2, Some(6));
    assert_eq!(produce(&mut c, "dr", batch(-1, -1, -1, 1, "small")), (NONE, 6));

    // Durable: kill -9 right after the answer, then a restart.
    broker.crash_and_restart();
    let mut c = broker.client();
    check(&mut c, 6);
    // -1: everything below the high watermark (9).
    assert_eq!(delete_records(&mut c, 1, &[("dr", 0, -1)])[0], ("dr".to_string(), 0, NONE, 9));
    broker.crash_and_restart();
    let mut c = broker.client();
    check(&mut c, 9);
    assert_eq!(produce(&mut c, "dr", batch(-1, -1, -1, 1, "after")), (NONE, 9));
    broker.finish();
}

#[test]
fn in_a_cluster_only_the_leader_deletes_and_a_takeover_keeps_the_new_start() {
    let shared = tempfile::tempdir().expect("shared dir");
    let env = [("KAAS_CLUSTER_TICK_MS", TICK)];
    let mut brokers: Vec<Broker> = (1..=2).map(|id| Broker::start_member(shared.path(), id, &env)).collect();
    let all: BTreeSet<i32> = [1, 2].into();
    wait_for(Duration::from_secs(10), "two live brokers", || {
        (metadata(&mut brokers[0].client()).0.keys().copied().collect::<BTreeSet<_>>() == all).then_some(())
    });
    cluster::create(&mut brokers[0].client());
    let (ports, leaders) = wait_for(Duration::from_secs(10), "every partition led", || settled(&brokers[0], &all));
    let leader = leaders[&0];
    let other = if leader == 1 { 2 } else { 1 };
    let mut at_leader = Client::connect(ports[&leader]);
    assert_eq!(cluster::produce(&mut at_leader, 0, batch(5000, 0, 0, 3, "c")), (NONE, 0));

    let mut at_other = Client::connect(ports[&other]);
    assert_eq!(delete_records(&mut at_other, 2, &[(TOPIC, 0, 2)])[0], (TOPIC.to_string(), 0, 6, -1));
    assert_eq!(delete_records(&mut at_leader, 2, &[(TOPIC, 0, 2)])[0], (TOPIC.to_string(), 0, NONE, 2));

    // The leader dies at once; the other broker takes partition 0 over from the shared disk.
    brokers[(leader - 1) as usize].kill();
    let live: BTreeSet<i32> = [other].into();
    let survivor = &brokers[(other - 1) as usize];
    wait_for(Duration::from_secs(20), "partition 0 taken over", || settled(survivor, &live));
    let mut c = Client::connect(ports[&other]);
    wait_for(Duration::from_secs(10), "partition 0 served", || (fetch(&mut c, TOPIC, 2).0 == NONE).then_some(()));
    assert_eq!(earliest(&mut c, TOPIC), 2);
    assert_eq!(fetch(&mut c, TOPIC, 1), (OFFSET_OUT_OF_RANGE, 2, None));
    assert_eq!(fetch(&mut c, TOPIC, 2).2, Some(0), "the batch holding offset 2 starts at 0");
}
