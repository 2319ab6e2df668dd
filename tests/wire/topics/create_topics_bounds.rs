//! Topic creation against the real binary: partition counts bounded as Apache Kafka bounds them
//! (POLICY_VIOLATION, INVALID_PARTITIONS) and by `max_partitions`; creation all or nothing when
//! partitions cannot be opened; far more partitions than open files; a broker that always starts
//! again; topic configs range-checked (INVALID_CONFIG).

use crate::common;

use common::{batch, Broker, Client};
use kafka_protocol::messages::create_topics_request::{CreatableTopic, CreatableTopicConfig};
use kafka_protocol::messages::metadata_request::MetadataRequestTopic;
use kafka_protocol::messages::*;
use kafka_protocol::protocol::StrBytes;

const POLICY_VIOLATION: i16 = 44;
const INVALID_PARTITIONS: i16 = 37;
const INVALID_CONFIG: i16 = 40;
const KAFKA_STORAGE_ERROR: i16 = 56;
const UNKNOWN_TOPIC_OR_PARTITION: i16 = 3;

fn name(s: &str) -> TopicName {
    TopicName(StrBytes::from_string(s.to_string()))
}

fn topic(n: &str, partitions: i32, configs: &[(&str, &str)]) -> CreatableTopic {
    let mut t = CreatableTopic::default();
    t.name = name(n);
    t.num_partitions = partitions;
    t.replication_factor = 1;
    t.configs = configs
        .iter()
        .map(|(k, v)| {
            let mut c = CreatableTopicConfig::default();
            c.name = StrBytes::from_string(k.to_string());
            c.value = Some(StrBytes::from_string(v.to_string()));
            c
        })
        .collect();
    t
}

/// (error code, error message) of every topic, in request order.
fn create_all(c: &mut Client, topics: Vec<CreatableTopic>, validate_only: bool) -> Vec<(i16, String)> {
    let mut req = CreateTopicsRequest::default();
    req.topics = topics;
    req.timeout_ms = 30_000;
    req.validate_only = validate_only;
    let resp: CreateTopicsResponse = c.call(ApiKey::CreateTopics, 5, req);
    resp.topics
        .iter()
        .map(|t| (t.error_code, t.error_message.as_ref().map(|m| m.to_string()).unwrap_or_default()))
        .collect()
}

pub(super) fn create(c: &mut Client, n: &str, partitions: i32, configs: &[(&str, &str)]) -> (i16, String) {
    create_all(c, vec![topic(n, partitions, configs)], false).remove(0)
}

/// (error code, base offset) of one non-idempotent single-record produce.
pub(super) fn produce(c: &mut Client, t: &str, partition: i32) -> (i16, i64) {
    let resp = common::produce_one(c, 9, None, name(t), partition, batch(-1, -1, -1, 1, "v"));
    let r = &resp.responses[0].partition_responses[0];
    (r.error_code, r.base_offset)
}

/// Topic error code of a Metadata request for one topic.
pub(super) fn metadata(c: &mut Client, t: &str, auto_create: bool) -> i16 {
    let mut mt = MetadataRequestTopic::default();
    mt.name = Some(name(t));
    let mut req = MetadataRequest::default();
    req.topics = Some(vec![mt]);
    req.allow_auto_topic_creation = auto_create;
    let resp: MetadataResponse = c.call(ApiKey::Metadata, 9, req);
    resp.topics[0].error_code
}

/// Is anything of topic `t` on disk (its topic file or a partition directory)?
fn on_disk(b: &Broker, t: &str) -> Vec<String> {
    let mut found = Vec::new();
    let file = b.data_dir().join("__cluster").join("topics").join(format!("{t}.json"));
    if file.exists() {
        found.push(file.display().to_string());
    }
    if let Ok(dirs) = std::fs::read_dir(b.data_dir().join("topics")) {
        for d in dirs.flatten() {
            let n = d.file_name().to_string_lossy().into_owned();
            if n.strip_prefix(t)
                .and_then(|r| r.strip_prefix('-'))
                .is_some_and(|r| r.bytes().all(|x| x.is_ascii_digit()))
            {
                found.push(n);
            }
        }
    }
    found
}

#[test]
fn too_many_partitions_get_kafkas_error_codes_and_the_broker_restarts_and_serves() {
    let mut broker = Broker::start_with_env(&[("KAAS_MAX_PARTITIONS", "50")]);
    let mut c = broker.client();
    // Kafka's controller: one request writes at most 10,000 records.
    let (code, msg) = create(&mut c, "huge", 1_000_000, &[]);
    assert_eq!((code, msg.as_str()), (POLICY_VIOLATION, "Unable to perform excessively large batch operation."));
    // ... and the whole request fails, even the topic that would fit alone.
    let both = create_all(&mut c, vec![topic("half-a", 5_000, &[]), topic("half-b", 5_001, &[])], false);
    assert_eq!(both.iter().map(|r| r.0).collect::<Vec<_>>(), [POLICY_VIOLATION, POLICY_VIOLATION]);
    assert!(both[0].1.contains("excessively large batch"), "{both:?}");
    assert_eq!(create(&mut c, "zero", 0, &[]).0, INVALID_PARTITIONS);
    assert_eq!(create(&mut c, "t40", 40, &[]).0, 0);
    // The broker-wide limit counts what exists; validate_only is answered the same way.
    let (code, msg) = create(&mut c, "t11", 11, &[]);
    assert_eq!(code, POLICY_VIOLATION, "{msg}");
    assert!(msg.contains("max_partitions = 50"), "{msg}");
    assert_eq!(create_all(&mut c, vec![topic("t11", 11, &[])], true)[0].0, POLICY_VIOLATION);
    assert_eq!(create(&mut c, "t10", 10, &[]).0, 0);
    // Auto-creation through Metadata obeys the same limit.
    assert_eq!(metadata(&mut c, "auto", true), POLICY_VIOLATION);
    for t in ["huge", "half-a", "half-b", "zero", "t11", "auto"] {
        assert_eq!(on_disk(&broker, t), Vec::<String>::new(), "{t} left something behind");
    }
    assert_eq!(produce(&mut c, "t40", 39), (0, 0));

    broker.crash_and_restart();
    let mut c = broker.client();
    assert_eq!(produce(&mut c, "t40", 39), (0, 1));
    assert_eq!(produce(&mut c, "t10", 9), (0, 0));
    assert_eq!(metadata(&mut c, "huge", false), UNKNOWN_TOPIC_OR_PARTITION);
}

#[test]
fn a_creation_whose_partitions_cannot_all_open_leaves_nothing_and_the_broker_restarts() {
    let mut broker = Broker::start();
    // Partition 7's directory cannot be made: a file stands in its place.
    let blocker = broker.data_dir().join("topics").join("wide-7");
    std::fs::create_dir_all(blocker.parent().unwrap()).unwrap();
    std::fs::write(&blocker, b"not a directory").unwrap();
    let mut c = broker.client();
    let (code, msg) = create(&mut c, "wide", 40, &[]);
    assert_eq!(code, KAFKA_STORAGE_ERROR, "{msg}");
    assert!(msg.contains("was not created"), "{msg}");
    assert_eq!(on_disk(&broker, "wide"), vec!["wide-7".to_string()], "only the blocker stays");
    assert_eq!(metadata(&mut c, "wide", false), UNKNOWN_TOPIC_OR_PARTITION);
    // Nothing of partitions 0..7 stayed: without the blocker, it is created.
    std::fs::remove_file(&blocker).unwrap();
    assert_eq!(create(&mut c, "wide", 40, &[]).0, 0);
    assert_eq!(produce(&mut c, "wide", 39), (0, 0));
    assert!(broker.log().contains("creation rolled back"), "{}", broker.log());

    broker.crash_and_restart();
    let mut c = broker.client();
    assert_eq!(produce(&mut c, "wide", 39), (0, 1));
}

#[test]
fn a_broker_serves_far_more_partitions_than_it_may_open_files() {
    // 512 open files: the segment-file cache keeps 128 open; each partition is opened on use.
    let mut broker = Broker::start_with_nofile(&[("KAAS_MAX_PARTITIONS", "2000")], 512);
    let mut c = broker.client();
    assert_eq!(create(&mut c, "wide", 1000, &[]).0, 0);
    for p in 0..1000 {
        assert_eq!(produce(&mut c, "wide", p), (0, 0), "partition {p}");
    }
    broker.crash_and_restart();
    let mut c = broker.client();
    for p in (0..1000).rev() {
        assert_eq!(produce(&mut c, "wide", p), (0, 1), "partition {p} after the restart");
    }
    let open = std::fs::read_dir(format!("/proc/{}/fd", broker.pid())).unwrap().count();
    assert!(open < 512, "{open} open files");
}

#[test]
fn segment_bytes_out_of_kafkas_range_is_invalid_config() {
    let broker = Broker::start();
    let mut c = broker.client();
    for bad in ["0", "1000000000000", "2147483648", "1048575", "ten"] {
        let (code, msg) = create(&mut c, "seg", 1, &[("segment.bytes", bad)]);
        assert_eq!(code, INVALID_CONFIG, "segment.bytes={bad}: {msg}");
        assert_eq!(create_all(&mut c, vec![topic("seg", 1, &[("segment.bytes", bad)])], true)[0].0, INVALID_CONFIG);
    }
    assert_eq!(create(&mut c, "seg", 1, &[("retention.ms", "-2")]).0, INVALID_CONFIG);
    assert_eq!(create(&mut c, "seg", 1, &[("cleanup.policy", "shred")]).0, INVALID_CONFIG);
    assert_eq!(create(&mut c, "seg", 1, &[("segment.byte", "1048576")]).0, INVALID_CONFIG);
    assert_eq!(on_disk(&broker, "seg"), Vec::<String>::new());
    assert_eq!(create(&mut c, "seg", 1, &[("segment.bytes", "1048576")]).0, 0);
    assert_eq!(produce(&mut c, "seg", 0), (0, 0));
}

#[test]
fn a_topic_file_past_the_limit_from_an_older_kaas_does_not_stop_start_up() {
    let mut broker = Broker::start_with_env(&[("KAAS_MAX_PARTITIONS", "20")]);
    broker.allow_log_errors("partitions past the broker's max_partitions");
    let mut c = broker.client();
    assert_eq!(create(&mut c, "old", 2, &[]).0, 0);
    assert_eq!(produce(&mut c, "old", 1), (0, 0));
    // What an older kaas saved for `CreateTopics(1,000,000 partitions, segment.bytes = 0)`.
    let file = broker.data_dir().join("__cluster").join("topics").join("old.json");
    let mut meta: serde_json::Value = serde_json::from_slice(&std::fs::read(&file).unwrap()).unwrap();
    meta["partitions"] = 1_000_000.into();
    meta["configs"] = serde_json::json!({"segment.bytes": "0"});
    std::fs::write(&file, serde_json::to_vec(&meta).unwrap()).unwrap();

    broker.crash_and_restart();
    let mut c = broker.client();
    assert_eq!(produce(&mut c, "old", 1), (0, 1));
    assert_eq!(produce(&mut c, "old", 19), (0, 0));
    assert_eq!(produce(&mut c, "old", 20).0, UNKNOWN_TOPIC_OR_PARTITION);
    // Metadata announces the partitions served, not the million in the file.
    let mut mt = MetadataRequestTopic::default();
    mt.name = Some(name("old"));
    let mut req = MetadataRequest::default();
    req.topics = Some(vec![mt]);
    let resp: MetadataResponse = c.call(ApiKey::Metadata, 9, req);
    assert_eq!(resp.topics[0].partitions.len(), 20);
    let log = broker.log();
    assert!(log.contains("partitions past the broker's max_partitions are not served"), "{log}");
    assert!(log.contains("stored topic config ignored"), "{log}");
}
