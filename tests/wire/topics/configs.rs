//! Topic configs over the wire against the real binary: IncrementalAlterConfigs (44) and
//! AlterConfigs (33) with Kafka's error codes and messages, DescribeConfigs with sources and
//! synonyms, configs taking effect at runtime (max.message.bytes, message.timestamp.type,
//! segment.bytes, retention.bytes), surviving a restart, and reaching a peer broker.

use crate::common;

use std::time::Duration;

use bytes::{Bytes, BytesMut};
use common::cluster::wait_for;
use common::{batch, Broker, Client};
use indexmap::IndexMap;
use kafka_protocol::messages::alter_configs_request::{AlterConfigsResource, AlterableConfig as LegacyConfig};
use kafka_protocol::messages::describe_configs_request::DescribeConfigsResource;
use kafka_protocol::messages::incremental_alter_configs_request::{
    AlterConfigsResource as IncResource, AlterableConfig,
};
use kafka_protocol::messages::list_offsets_request::{ListOffsetsPartition, ListOffsetsTopic};
use kafka_protocol::messages::*;
use kafka_protocol::protocol::StrBytes;
use kafka_protocol::records::{Compression, Record, RecordBatchEncoder, RecordEncodeOptions, TimestampType};

const TOPIC: i8 = 2;
const BROKER: i8 = 4;
const BROKER_LOGGER: i8 = 8;
const SET: i8 = 0;
const DELETE: i8 = 1;
const APPEND: i8 = 2;
const UNKNOWN_TOPIC_OR_PARTITION: i16 = 3;
const MESSAGE_TOO_LARGE: i16 = 10;
const INVALID_TIMESTAMP: i16 = 32;
const INVALID_CONFIG: i16 = 40;
const INVALID_REQUEST: i16 = 42;
const INVALID_RECORD: i16 = 87;

fn s(v: &str) -> StrBytes {
    StrBytes::from_string(v.to_string())
}

fn create(c: &mut Client, topic: &str, configs: &[(&str, &str)]) -> i16 {
    use kafka_protocol::messages::create_topics_request::{CreatableTopic, CreatableTopicConfig};
    let mut t = CreatableTopic::default();
    t.name = TopicName(s(topic));
    t.num_partitions = 1;
    t.replication_factor = 1;
    for (k, v) in configs {
        let mut cfg = CreatableTopicConfig::default();
        cfg.name = s(k);
        cfg.value = Some(s(v));
        t.configs.push(cfg);
    }
    let mut req = CreateTopicsRequest::default();
    req.topics = vec![t];
    let resp: CreateTopicsResponse = c.call(ApiKey::CreateTopics, 5, req);
    resp.topics[0].error_code
}

fn resource(kind: i8, name: &str, ops: &[(&str, i8, Option<&str>)]) -> IncResource {
    let mut r = IncResource::default();
    r.resource_type = kind;
    r.resource_name = s(name);
    for (k, op, v) in ops {
        let mut cfg = AlterableConfig::default();
        cfg.name = s(k);
        cfg.config_operation = *op;
        cfg.value = v.map(s);
        r.configs.push(cfg);
    }
    r
}

/// (error code, message) per resource.
fn incremental(c: &mut Client, resources: Vec<IncResource>, validate_only: bool) -> Vec<(i16, String)> {
    let mut req = IncrementalAlterConfigsRequest::default();
    req.resources = resources;
    req.validate_only = validate_only;
    let resp: IncrementalAlterConfigsResponse = c.call(ApiKey::IncrementalAlterConfigs, 1, req);
    resp.responses
        .iter()
        .map(|r| (r.error_code, r.error_message.as_ref().map(|m| m.to_string()).unwrap_or_default()))
        .collect()
}

fn set(c: &mut Client, topic: &str, ops: &[(&str, i8, Option<&str>)]) -> (i16, String) {
    incremental(c, vec![resource(TOPIC, topic, ops)], false).remove(0)
}

/// (value, source, synonym sources) of one topic config, and the number of configs described.
fn describe(c: &mut Client, topic: &str, name: &str) -> (String, i8, Vec<i8>, usize) {
    let mut r = DescribeConfigsResource::default();
    r.resource_type = TOPIC;
    r.resource_name = s(topic);
    let mut req = DescribeConfigsRequest::default();
    req.resources = vec![r];
    req.include_synonyms = true;
    req.include_documentation = true;
    let resp: DescribeConfigsResponse = c.call(ApiKey::DescribeConfigs, 4, req);
    let all = &resp.results[0].configs;
    let e = all.iter().find(|e| e.name.as_str() == name).expect("described");
    assert!(e.documentation.as_ref().is_some_and(|d| !d.is_empty()), "{name} has documentation");
    let value = e.value.as_ref().map(|v| v.to_string()).unwrap_or_default();
    (value, e.config_source, e.synonyms.iter().map(|s| s.source).collect(), all.len())
}

/// One record of `size` value bytes.
fn big_batch(size: usize) -> Bytes {
    let record = Record {
        transactional: false,
        control: false,
        delete_horizon: false,
        partition_leader_epoch: -1,
        producer_id: -1,
        producer_epoch: -1,
        timestamp_type: TimestampType::Creation,
        offset: 0,
        sequence: -1,
        timestamp: now_ms(),
        key: None,
        value: Some(Bytes::from(vec![b'x'; size])),
        headers: IndexMap::new(),
    };
    let mut buf = BytesMut::new();
    let opts = RecordEncodeOptions { version: 2, compression: Compression::None };
    RecordBatchEncoder::encode(&mut buf, &[record], &opts).expect("encode");
    buf.freeze()
}

/// (error code, log append time) of one acks=all Produce v9.
fn produce(c: &mut Client, topic: &str, records: Bytes) -> (i16, i64) {
    let resp = common::produce_one(c, 9, None, TopicName(s(topic)), 0, records);
    let r = &resp.responses[0].partition_responses[0];
    (r.error_code, r.log_append_time_ms)
}

fn log_start(c: &mut Client, topic: &str) -> i64 {
    let mut p = ListOffsetsPartition::default();
    p.timestamp = -2;
    let mut t = ListOffsetsTopic::default();
    t.name = TopicName(s(topic));
    t.partitions = vec![p];
    let mut req = ListOffsetsRequest::default();
    req.replica_id = BrokerId(-1);
    req.topics = vec![t];
    let resp: ListOffsetsResponse = c.call(ApiKey::ListOffsets, 4, req);
    resp.topics[0].partitions[0].offset
}

fn now_ms() -> i64 {
    let since = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default();
    i64::try_from(since.as_millis()).unwrap_or(0)
}

const TWO_MIB: usize = 2 * 1024 * 1024;

#[test]
fn alter_configs_apis_are_advertised() {
    let b = Broker::start();
    let mut c = b.client();
    let resp: ApiVersionsResponse = c.call(ApiKey::ApiVersions, 3, ApiVersionsRequest::default());
    let range =
        |k: ApiKey| resp.api_keys.iter().find(|a| a.api_key == k as i16).map(|a| (a.min_version, a.max_version));
    assert_eq!(range(ApiKey::IncrementalAlterConfigs), Some((0, 1)));
    assert_eq!(range(ApiKey::AlterConfigs), Some((0, 2)));
    b.finish();
}

#[test]
fn max_message_bytes_is_honoured_after_an_alter_and_survives_a_restart() {
    let mut b = Broker::start();
    let mut c = b.client();
    assert_eq!(create(&mut c, "big", &[]), 0);
    assert_eq!(produce(&mut c, "big", big_batch(TWO_MIB)).0, MESSAGE_TOO_LARGE, "default limit is 1 MiB");
    assert_eq!(describe(&mut c, "big", "max.message.bytes").3, 37, "all of Kafka's topic configs");
    assert_eq!(set(&mut c, "big", &[("max.message.bytes", SET, Some("5000000"))]).0, 0);
    assert_eq!(produce(&mut c, "big", big_batch(TWO_MIB)).0, 0, "raised at runtime");
    let (value, source, synonyms, _) = describe(&mut c, "big", "max.message.bytes");
    assert_eq!((value.as_str(), source, synonyms), ("5000000", 1, vec![1, 5]));

    assert_eq!(set(&mut c, "big", &[("max.message.bytes", SET, Some("200"))]).0, 0);
    assert_eq!(produce(&mut c, "big", batch(-1, -1, -1, 20, "lowered")).0, MESSAGE_TOO_LARGE, "lowered at runtime");

    assert_eq!(set(&mut c, "big", &[("max.message.bytes", SET, Some("5000000"))]).0, 0);
    b.crash_and_restart();
    let mut c = b.client();
    assert_eq!(describe(&mut c, "big", "max.message.bytes").0, "5000000", "durable");
    assert_eq!(produce(&mut c, "big", big_batch(TWO_MIB)).0, 0);

    assert_eq!(set(&mut c, "big", &[("max.message.bytes", DELETE, None)]).0, 0);
    let (value, source, _, _) = describe(&mut c, "big", "max.message.bytes");
    assert_eq!((value.as_str(), source), ("1048588", 5), "delete restores the default");
    assert_eq!(produce(&mut c, "big", big_batch(TWO_MIB)).0, MESSAGE_TOO_LARGE);
    b.finish();
}

#[test]
fn a_topic_created_with_a_larger_limit_accepts_larger_batches() {
    let b = Broker::start();
    let mut c = b.client();
    assert_eq!(create(&mut c, "roomy", &[("max.message.bytes", "6000000")]), 0);
    assert_eq!(produce(&mut c, "roomy", big_batch(5 * 1024 * 1024)).0, 0);
    assert_eq!(create(&mut c, "tight", &[("max.message.bytes", "100")]), 0);
    assert_eq!(produce(&mut c, "tight", big_batch(1000)).0, MESSAGE_TOO_LARGE);
    // A compacted topic: every record needs a key (Kafka's LogValidator.validateKey).
    assert_eq!(create(&mut c, "compacted", &[("cleanup.policy", "compact")]), 0);
    assert_eq!(produce(&mut c, "compacted", big_batch(10)).0, INVALID_RECORD, "a record without a key");
    assert_eq!(produce(&mut c, "compacted", batch(-1, -1, -1, 1, "keyed")).0, 0);
    b.finish();
}

#[test]
fn alter_errors_are_kafkas() {
    let b = Broker::start();
    let mut c = b.client();
    assert_eq!(create(&mut c, "t", &[]), 0);
    let one = |c: &mut Client, ops: &[(&str, i8, Option<&str>)]| set(c, "t", ops);
    assert_eq!(
        one(&mut c, &[("foo.bar", SET, Some("1"))]),
        (INVALID_CONFIG, "Unknown topic config name: foo.bar".into())
    );
    assert_eq!(
        one(&mut c, &[("retention.ms", SET, Some("abc"))]),
        (INVALID_CONFIG, "Invalid value abc for configuration retention.ms: Not a number of type LONG".into())
    );
    assert_eq!(one(&mut c, &[("compression.type", SET, Some("brotli"))]).0, INVALID_CONFIG, "not a Kafka codec");
    assert_eq!(one(&mut c, &[("min.insync.replicas", SET, Some("2"))]).0, INVALID_CONFIG, "kaas keeps one copy");
    assert_eq!(
        one(&mut c, &[("retention.ms", APPEND, Some("1"))]),
        (INVALID_CONFIG, "Can't APPEND to key retention.ms because its type is not LIST.".into())
    );
    assert_eq!(
        one(&mut c, &[("retention.ms", SET, Some("1")), ("retention.ms", DELETE, None)]),
        (INVALID_REQUEST, "Error due to duplicate config keys".into())
    );
    assert_eq!(set(&mut c, "nope", &[("retention.ms", SET, Some("1"))]).0, UNKNOWN_TOPIC_OR_PARTITION);
    let dup = incremental(&mut c, vec![resource(TOPIC, "t", &[]), resource(TOPIC, "t", &[])], false);
    assert_eq!(dup.iter().map(|r| r.0).collect::<Vec<_>>(), [INVALID_REQUEST, INVALID_REQUEST]);
    let broker = incremental(&mut c, vec![resource(BROKER, "0", &[("log.dirs", SET, Some("/x"))])], false);
    assert_eq!(broker[0], (INVALID_REQUEST, "Cannot update these configs dynamically: [log.dirs]".into()));
    let logger = incremental(&mut c, vec![resource(BROKER_LOGGER, "0", &[("kaas", SET, Some("DEBUG"))])], false);
    assert_eq!(logger[0].0, INVALID_CONFIG);

    // validate_only checks and changes nothing.
    let checked = incremental(&mut c, vec![resource(TOPIC, "t", &[("retention.ms", SET, Some("5"))])], true);
    assert_eq!(checked[0].0, 0);
    assert_eq!(describe(&mut c, "t", "retention.ms").1, 5);
    b.finish();
}

#[test]
fn alter_configs_replaces_the_whole_set() {
    let b = Broker::start();
    let mut c = b.client();
    assert_eq!(create(&mut c, "t", &[("retention.ms", "1000")]), 0);
    let mut r = AlterConfigsResource::default();
    r.resource_type = TOPIC;
    r.resource_name = s("t");
    let mut cfg = LegacyConfig::default();
    cfg.name = s("segment.bytes");
    cfg.value = Some(s("2097152"));
    r.configs = vec![cfg];
    let mut req = AlterConfigsRequest::default();
    req.resources = vec![r];
    let resp: AlterConfigsResponse = c.call(ApiKey::AlterConfigs, 2, req);
    assert_eq!(resp.responses[0].error_code, 0);
    assert_eq!(describe(&mut c, "t", "segment.bytes").0, "2097152");
    assert_eq!(describe(&mut c, "t", "retention.ms").1, 5, "not in the new set: back to the default");
    b.finish();
}

#[test]
fn timestamp_type_segment_and_retention_take_effect_at_runtime() {
    let env = [("KAAS_RETENTION_MS", "-1"), ("KAAS_RETENTION_CHECK_INTERVAL_MS", "200")];
    let b = Broker::start_with_env(&env);
    let mut c = b.client();
    assert_eq!(create(&mut c, "t", &[]), 0);
    assert_eq!(produce(&mut c, "t", batch(-1, -1, -1, 1, "a")).1, -1, "CreateTime");
    // A batch stamped in 2023: more than a second in the past.
    assert_eq!(set(&mut c, "t", &[("message.timestamp.before.max.ms", SET, Some("1000"))]).0, 0);
    assert_eq!(produce(&mut c, "t", common::old_batch(-1, -1, -1, 1, "old")).0, INVALID_TIMESTAMP);
    assert_eq!(produce(&mut c, "t", big_batch(10)).0, 0, "a record stamped now passes");
    assert_eq!(set(&mut c, "t", &[("message.timestamp.type", SET, Some("LogAppendTime"))]).0, 0);
    assert!(produce(&mut c, "t", batch(-1, -1, -1, 1, "b")).1 > 0, "the broker stamps the append time");

    // 1 MiB segments, then keep at most one byte: every closed segment goes.
    assert_eq!(set(&mut c, "t", &[("segment.bytes", SET, Some("1048576"))]).0, 0);
    for _ in 0..3 {
        assert_eq!(produce(&mut c, "t", big_batch(700 * 1024)).0, 0);
    }
    std::thread::sleep(Duration::from_millis(600));
    assert_eq!(log_start(&mut c, "t"), 0, "nothing removed yet");
    assert_eq!(set(&mut c, "t", &[("retention.bytes", SET, Some("1"))]).0, 0);
    wait_for(Duration::from_secs(10), "retention.bytes applied", || (log_start(&mut c, "t") > 0).then_some(()));
    b.finish();
}

#[test]
fn a_peer_broker_picks_up_an_alter() {
    let shared = tempfile::tempdir().expect("shared dir");
    let env = [("KAAS_CLUSTER_TICK_MS", "200")];
    let brokers: Vec<Broker> = (1..=2).map(|id| Broker::start_member(shared.path(), id, &env)).collect();
    let mut clients: Vec<Client> = brokers.iter().map(Broker::client).collect();
    assert_eq!(create(&mut clients[0], "shared", &[]), 0);
    // The partition's leader: the broker whose Produce does not answer NOT_LEADER_OR_FOLLOWER.
    let leader = wait_for(Duration::from_secs(10), "a leader", || {
        (0..2).find(|i| produce(&mut clients[*i], "shared", batch(-1, -1, -1, 1, "x")).0 == 0)
    });
    let other = 1 - leader;
    assert_eq!(produce(&mut clients[leader], "shared", big_batch(TWO_MIB)).0, MESSAGE_TOO_LARGE);
    assert_eq!(set(&mut clients[other], "shared", &[("max.message.bytes", SET, Some("5000000"))]).0, 0);
    wait_for(Duration::from_secs(5), "the leader honours the peer's alter", || {
        (produce(&mut clients[leader], "shared", big_batch(TWO_MIB)).0 == 0).then_some(())
    });
    assert_eq!(describe(&mut clients[leader], "shared", "max.message.bytes").0, "5000000");
    for b in brokers {
        b.finish();
    }
}
