//! The admin surface over the wire against the real binary: Kafka's internal topics in
//! Metadata, ApiVersions v4, ListOffsets v8+ specials, DescribeQuorum on a shared-disk cluster,
//! ListConfigResources, DescribeConfigs of the internal topics and of a broker.

use crate::common;

use common::{batch, create_topic, Broker, Client};
use kafka_protocol::messages::create_topics_request::CreatableTopic;
use kafka_protocol::messages::list_offsets_request::{ListOffsetsPartition, ListOffsetsTopic};
use kafka_protocol::messages::metadata_request::MetadataRequestTopic;
use kafka_protocol::messages::*;
use kafka_protocol::protocol::StrBytes;

fn name(s: &str) -> TopicName {
    TopicName(StrBytes::from_string(s.to_string()))
}

fn metadata(c: &mut Client, topics: Option<&[&str]>) -> MetadataResponse {
    let mut req = MetadataRequest::default();
    req.allow_auto_topic_creation = true;
    req.topics = topics.map(|t| {
        t.iter()
            .map(|n| {
                let mut m = MetadataRequestTopic::default();
                m.name = Some(name(n));
                m
            })
            .collect()
    });
    c.call(ApiKey::Metadata, 12, req)
}

/// The error code of one Produce v9 (acks=all) of `records` to partition 0 of `topic`.
fn produce(c: &mut Client, topic: &str, records: bytes::Bytes) -> i16 {
    let resp = common::produce_one(c, 9, None, name(topic), 0, records);
    resp.responses[0].partition_responses[0].error_code
}

/// (name, is_internal, partitions, partitions with a leader)
fn internal_view(resp: &MetadataResponse) -> Vec<(String, bool, usize, usize)> {
    resp.topics
        .iter()
        .filter(|t| t.name.as_ref().is_some_and(|n| n.0.starts_with("__")))
        .map(|t| {
            let led = t.partitions.iter().filter(|p| p.leader_id.0 >= 0).count();
            (t.name.as_ref().map(|n| n.0.to_string()).unwrap_or_default(), t.is_internal, t.partitions.len(), led)
        })
        .collect()
}

#[test]
fn internal_topics_are_listed_as_kafka_lists_them_and_never_made_into_logs() {
    let broker = Broker::start_with_env(&[("KAAS_TXN_SHARDS", "4")]);
    let mut c = broker.client();
    create_topic(&mut c, "plain");
    let expected =
        vec![("__consumer_offsets".to_string(), true, 50, 50), ("__transaction_state".to_string(), true, 4, 4)];
    let all = metadata(&mut c, None);
    assert_eq!(internal_view(&all), expected);
    let plain = all.topics.iter().find(|t| t.name.as_ref().is_some_and(|n| n.0.as_str() == "plain")).expect("plain");
    assert!(!plain.is_internal);
    // Asked by name with auto-creation allowed: the internal entry, not a new topic.
    let by_name = metadata(&mut c, Some(&["__consumer_offsets", "__transaction_state"]));
    assert_eq!(internal_view(&by_name), expected);
    assert!(by_name.topics.iter().all(|t| t.error_code == 0 && !t.topic_id.is_nil()));
    assert_eq!(by_name.topics[0].topic_id, all.topics.iter().find(|t| t.is_internal).expect("internal").topic_id);

    // CreateTopics: they exist already (Kafka, once a group or transaction ran).
    let mut t = CreatableTopic::default();
    t.name = name("__consumer_offsets");
    t.num_partitions = 3;
    t.replication_factor = 1;
    let mut req = CreateTopicsRequest::default();
    req.topics = vec![t];
    let resp: CreateTopicsResponse = c.call(ApiKey::CreateTopics, 5, req);
    assert_eq!(resp.topics[0].error_code, 36, "TOPIC_ALREADY_EXISTS");

    // Produce: Kafka refuses appends to internal topics with INVALID_TOPIC_EXCEPTION.
    assert_eq!(produce(&mut c, "__consumer_offsets", batch(-1, -1, -1, 1, "x")), 17);

    let dirs: Vec<String> = std::fs::read_dir(broker.data_dir().join("topics"))
        .expect("topics dir")
        .filter_map(|e| e.ok().map(|e| e.file_name().to_string_lossy().into_owned()))
        .collect();
    assert!(dirs.iter().all(|d| !d.starts_with("__")), "no log was made for an internal topic: {dirs:?}");
    broker.finish();
}

#[test]
fn list_offsets_v11_answers_the_kip_1005_and_kip_1023_specials() {
    let broker = Broker::start();
    let mut c = broker.client();
    create_topic(&mut c, "lo");
    assert_eq!(produce(&mut c, "lo", batch(900, 0, 0, 5, "x")), 0);

    let list = |c: &mut Client, timestamp: i64| {
        let mut lp = ListOffsetsPartition::default();
        lp.partition_index = 0;
        lp.timestamp = timestamp;
        lp.current_leader_epoch = -1;
        let mut lt = ListOffsetsTopic::default();
        lt.name = name("lo");
        lt.partitions = vec![lp];
        let mut req = ListOffsetsRequest::default();
        req.replica_id = BrokerId(-1);
        req.topics = vec![lt];
        req.timeout_ms = 5_000;
        let resp: ListOffsetsResponse = c.call(ApiKey::ListOffsets, 11, req);
        let r = &resp.topics[0].partitions[0];
        (r.error_code, r.offset, r.leader_epoch)
    };
    assert_eq!(list(&mut c, -1), (0, 5, 0), "latest");
    assert_eq!(list(&mut c, -2), (0, 0, 0), "earliest");
    assert_eq!(list(&mut c, -4), (0, 0, 0), "earliest-local: the log start, nothing is tiered");
    assert_eq!(list(&mut c, -5), (0, -1, -1), "latest-tiered: none, as Kafka without remote storage");
    assert_eq!(list(&mut c, -6), (0, -1, -1), "earliest-pending-upload (v11): none, as Kafka without remote storage");
    let (code, offset, _) = list(&mut c, -3);
    assert_eq!((code, offset), (0, 4), "max-timestamp: the last record here");
    broker.finish();
}

#[test]
fn api_versions_v4_is_answered_in_v4() {
    let broker = Broker::start();
    let mut c = broker.client();
    let mut req = ApiVersionsRequest::default();
    req.client_software_name = StrBytes::from_static_str("kaas-test");
    req.client_software_version = StrBytes::from_static_str("1");
    let resp: ApiVersionsResponse = c.call(ApiKey::ApiVersions, 4, req.clone());
    assert_eq!(resp.error_code, 0);
    let own = resp.api_keys.iter().find(|k| k.api_key == ApiKey::ApiVersions as i16).expect("ApiVersions");
    assert_eq!((own.min_version, own.max_version), (0, 4));
    let tv = |r: &ApiVersionsResponse| {
        r.supported_features.iter().find(|f| f.name.as_str() == "transaction.version").map(|f| f.min_version)
    };
    assert_eq!(tv(&resp), Some(0), "v4 carries a supported level 0 as it is");
    let v3: ApiVersionsResponse = c.call(ApiKey::ApiVersions, 3, req);
    assert_eq!(tv(&v3), Some(1), "before v4 Kafka reports 1 for 0 (KAFKA-17011)");
    broker.finish();
}

#[test]
fn describe_topic_partitions_pages_with_a_cursor() {
    use kafka_protocol::messages::describe_topic_partitions_request::{Cursor, TopicRequest};
    let broker = Broker::start();
    let mut c = broker.client();
    common::create_topic_with(&mut c, "dtp-a", 3);
    common::create_topic_with(&mut c, "dtp-b", 2);
    let ask = |c: &mut Client, cursor: Option<(&str, i32)>| {
        let mut req = DescribeTopicPartitionsRequest::default();
        req.topics = ["dtp-b", "dtp-a", "nope"]
            .iter()
            .map(|n| {
                let mut t = TopicRequest::default();
                t.name = name(n);
                t
            })
            .collect();
        req.response_partition_limit = 4;
        req.cursor = cursor.map(|(t, p)| {
            let mut cur = Cursor::default();
            cur.topic_name = name(t);
            cur.partition_index = p;
            cur
        });
        let resp: DescribeTopicPartitionsResponse = c.call(ApiKey::DescribeTopicPartitions, 0, req);
        let topics: Vec<(String, i16, Vec<i32>)> = resp
            .topics
            .iter()
            .map(|t| {
                let n = t.name.as_ref().map(|n| n.0.to_string()).unwrap_or_default();
                (n, t.error_code, t.partitions.iter().map(|p| p.partition_index).collect())
            })
            .collect();
        (topics, resp.next_cursor.map(|c| (c.topic_name.0.to_string(), c.partition_index)))
    };
    let (first, next) = ask(&mut c, None);
    assert_eq!(
        first,
        vec![("dtp-a".into(), 0, vec![0, 1, 2]), ("dtp-b".into(), 0, vec![0]), ("nope".into(), 3, vec![])]
    );
    assert_eq!(next, Some(("dtp-b".to_string(), 1)));
    let (second, next) = ask(&mut c, Some(("dtp-b", 1)));
    assert_eq!(second, vec![("dtp-b".into(), 0, vec![1]), ("nope".into(), 3, vec![])]);
    assert_eq!(next, None);
    let (refused, _) = ask(&mut c, Some(("dtp-z", 0)));
    assert!(refused.iter().all(|(_, code, _)| *code == 42), "a cursor outside the topics asked: {refused:?}");
    broker.finish();
}

/// (top-level error, leader, epoch, high watermark, voter ids, observers, node ports) of a
/// DescribeQuorum for the metadata partition.
type QuorumView = (i16, i32, i32, i64, Vec<i32>, usize, Vec<(i32, u16)>);

fn describe_quorum(c: &mut Client, version: i16, topic: &str, partition: i32) -> DescribeQuorumResponse {
    use kafka_protocol::messages::describe_quorum_request::{PartitionData, TopicData};
    let mut p = PartitionData::default();
    p.partition_index = partition;
    let mut t = TopicData::default();
    t.topic_name = name(topic);
    t.partitions = vec![p];
    let mut req = DescribeQuorumRequest::default();
    req.topics = vec![t];
    c.call(ApiKey::DescribeQuorum, version, req)
}

fn quorum_view(c: &mut Client) -> QuorumView {
    let resp = describe_quorum(c, 2, "__cluster_metadata", 0);
    let t = &resp.topics[0];
    assert_eq!((resp.topics.len(), t.topic_name.0.as_str(), t.partitions.len()), (1, "__cluster_metadata", 1));
    let p = &t.partitions[0];
    assert_eq!((p.partition_index, p.error_code), (0, 0));
    assert!(p.current_voters.iter().all(|v| v.log_end_offset == p.high_watermark), "no voter lags");
    let nodes = resp.nodes.iter().map(|n| (n.node_id.0, n.listeners.first().map_or(0, |l| l.port))).collect();
    (
        resp.error_code,
        p.leader_id.0,
        p.leader_epoch,
        p.high_watermark,
        p.current_voters.iter().map(|v| v.replica_id.0).collect(),
        p.observers.len(),
        nodes,
    )
}

#[test]
fn describe_quorum_names_the_live_brokers_as_voters_led_by_the_controller() {
    use common::cluster::{wait_for, TICK};
    use std::time::Duration;
    let shared = tempfile::tempdir().expect("shared dir");
    let env = [("KAAS_CLUSTER_TICK_MS", TICK)];
    let mut brokers: Vec<Broker> = (1..=2).map(|id| Broker::start_member(shared.path(), id, &env)).collect();
    let ports: Vec<(i32, u16)> = brokers.iter().map(|b| (b.node_id, b.port)).collect();
    let both = (0, 1, 0, -1, vec![1, 2], 0, ports.clone());
    // Each broker answers itself (no forwarding) and both describe the same quorum.
    for b in &brokers {
        let mut c = b.client();
        wait_for(Duration::from_secs(10), "both brokers in the quorum", || (quorum_view(&mut c) == both).then_some(()));
    }
    // v0 carries no nodes; the rest is the same.
    let v0 = describe_quorum(&mut brokers[1].client(), 0, "__cluster_metadata", 0);
    assert_eq!((v0.error_code, v0.topics[0].partitions[0].leader_id.0, v0.nodes.len()), (0, 1, 0));
    // Anything but the metadata partition: UNKNOWN_TOPIC_OR_PARTITION per partition, as Kafka.
    for (topic, partition) in [("__cluster_metadata", 1), ("other", 0)] {
        let resp = describe_quorum(&mut brokers[0].client(), 2, topic, partition);
        let p = &resp.topics[0].partitions[0];
        assert_eq!((resp.error_code, resp.topics[0].topic_name.0.as_str(), p.partition_index), (0, topic, partition));
        assert_eq!(p.error_code, 3, "{topic}-{partition}");
    }
    // The leader dies: the survivor leads a quorum of one.
    brokers[0].kill();
    let mut c = brokers[1].client();
    let alone = (0, 2, 0, -1, vec![2], 0, vec![ports[1]]);
    wait_for(Duration::from_secs(10), "the survivor alone", || (quorum_view(&mut c) == alone).then_some(()));
    brokers.remove(1).finish();
}

fn list_config_resources(c: &mut Client, version: i16, types: &[i8]) -> (i16, Vec<(String, i8)>) {
    let mut req = ListConfigResourcesRequest::default();
    req.resource_types = types.to_vec();
    let resp: ListConfigResourcesResponse = c.call(ApiKey::ListConfigResources, version, req);
    let listed = resp.config_resources.iter().map(|r| (r.resource_name.to_string(), r.resource_type)).collect();
    (resp.error_code, listed)
}

#[test]
fn list_config_resources_lists_brokers_and_topics_and_refuses_unknown_types() {
    let broker = Broker::start();
    let mut c = broker.client();
    create_topic(&mut c, "listed");
    let topics = |v: &[(String, i8)]| v.iter().filter(|(_, t)| *t == 2).map(|(n, _)| n.clone()).collect::<Vec<_>>();
    let (code, all) = list_config_resources(&mut c, 1, &[]);
    assert_eq!(code, 0);
    assert_eq!(topics(&all), ["__consumer_offsets", "__transaction_state", "listed"]);
    let node = broker.node_id.to_string();
    assert!(all.contains(&(node.clone(), 4)) && all.contains(&(node.clone(), 8)), "BROKER and BROKER_LOGGER: {all:?}");
    assert_eq!(all.len(), 5, "no groups or client-metrics configs: {all:?}");
    assert_eq!(list_config_resources(&mut c, 1, &[4]), (0, vec![(node, 4)]));
    assert_eq!(list_config_resources(&mut c, 1, &[32, 16]), (0, vec![]));
    // A type Kafka cannot list fails the request with UNSUPPORTED_VERSION (35).
    assert_eq!(list_config_resources(&mut c, 1, &[2, 3]), (35, vec![]));
    // v0 is ListClientMetricsResources: client-metrics subscriptions only, of which kaas has none.
    assert_eq!(list_config_resources(&mut c, 0, &[]), (0, vec![]));
    broker.finish();
}

fn describe_topic_configs(c: &mut Client, topic: &str) -> (i16, Vec<(String, String, i8)>) {
    use kafka_protocol::messages::describe_configs_request::DescribeConfigsResource;
    let mut r = DescribeConfigsResource::default();
    r.resource_type = 2;
    r.resource_name = StrBytes::from_string(topic.to_string());
    r.configuration_keys = None;
    let mut req = DescribeConfigsRequest::default();
    req.resources = vec![r];
    let resp: DescribeConfigsResponse = c.call(ApiKey::DescribeConfigs, 4, req);
    let res = &resp.results[0];
    let configs = res
        .configs
        .iter()
        .map(|e| (e.name.to_string(), e.value.as_ref().map(|v| v.to_string()).unwrap_or_default(), e.config_source))
        .collect();
    (res.error_code, configs)
}

#[test]
fn internal_topics_describe_the_configs_kafka_creates_them_with_and_refuse_changes() {
    use kafka_protocol::messages::incremental_alter_configs_request::{AlterConfigsResource, AlterableConfig};
    let broker = Broker::start();
    let mut c = broker.client();
    let own = |configs: &[(String, String, i8)]| {
        let mut own: Vec<(String, String)> =
            configs.iter().filter(|(_, _, src)| *src == 1).map(|(n, v, _)| (n.clone(), v.clone())).collect();
        own.sort();
        own
    };
    let (code, offsets) = describe_topic_configs(&mut c, "__consumer_offsets");
    assert_eq!(code, 0);
    let pair = |n: &str, v: &str| (n.to_string(), v.to_string());
    assert_eq!(
        own(&offsets),
        [pair("cleanup.policy", "compact"), pair("compression.type", "producer"), pair("segment.bytes", "104857600")]
    );
    assert!(offsets.len() > 30, "every topic config, the rest defaults: {}", offsets.len());
    let (code, txn) = describe_topic_configs(&mut c, "__transaction_state");
    assert_eq!(code, 0);
    assert_eq!(
        own(&txn),
        [
            pair("cleanup.policy", "compact"),
            pair("compression.type", "uncompressed"),
            pair("min.insync.replicas", "1"),
            pair("segment.bytes", "104857600"),
            pair("unclean.leader.election.enable", "false"),
        ]
    );
    assert_eq!(describe_topic_configs(&mut c, "nope").0, 3, "an unknown topic is still unknown");

    let mut cfg = AlterableConfig::default();
    cfg.name = StrBytes::from_static_str("retention.ms");
    cfg.config_operation = 0;
    cfg.value = Some(StrBytes::from_static_str("1000"));
    let mut res = AlterConfigsResource::default();
    res.resource_type = 2;
    res.resource_name = StrBytes::from_static_str("__consumer_offsets");
    res.configs = vec![cfg];
    let mut req = IncrementalAlterConfigsRequest::default();
    req.resources = vec![res];
    let resp: IncrementalAlterConfigsResponse = c.call(ApiKey::IncrementalAlterConfigs, 1, req);
    let r = &resp.responses[0];
    assert_eq!(r.error_code, 42, "INVALID_REQUEST: {:?}", r.error_message);
    assert!(r.error_message.as_ref().is_some_and(|m| m.contains("internal topic __consumer_offsets")));
    assert_eq!(own(&describe_topic_configs(&mut c, "__consumer_offsets").1).len(), 3, "unchanged");
    broker.finish();
}

/// (error, message, [(name, value, source, read_only, synonym sources)]) of one BROKER resource.
type BrokerView = (i16, Option<String>, Vec<(String, String, i8, bool, Vec<i8>)>);

fn describe_broker(c: &mut Client, name: &str) -> BrokerView {
    use kafka_protocol::messages::describe_configs_request::DescribeConfigsResource;
    let mut r = DescribeConfigsResource::default();
    r.resource_type = 4;
    r.resource_name = StrBytes::from_string(name.to_string());
    r.configuration_keys = None;
    let mut req = DescribeConfigsRequest::default();
    req.resources = vec![r];
    req.include_synonyms = true;
    req.include_documentation = true;
    let resp: DescribeConfigsResponse = c.call(ApiKey::DescribeConfigs, 4, req);
    let res = &resp.results[0];
    for e in &res.configs {
        assert!(e.documentation.as_ref().is_some_and(|d| !d.is_empty()), "{} has documentation", e.name.as_str());
    }
    let configs = res
        .configs
        .iter()
        .map(|e| {
            let value = e.value.as_ref().map(|v| v.to_string()).unwrap_or_default();
            (e.name.to_string(), value, e.config_source, e.read_only, e.synonyms.iter().map(|s| s.source).collect())
        })
        .collect();
    (res.error_code, res.error_message.as_ref().map(|m| m.to_string()), configs)
}

#[test]
fn a_broker_describes_the_kafka_configs_it_has_a_true_value_for() {
    let broker = Broker::start_with_env(&[("KAAS_TXN_SHARDS", "4")]);
    let mut c = broker.client();
    let (code, _, configs) = describe_broker(&mut c, &broker.node_id.to_string());
    assert_eq!(code, 0);
    let find = |n: &str| configs.iter().find(|e| e.0 == n).cloned().unwrap_or_else(|| panic!("{n} described"));
    // A kaas setting at Kafka's default: DEFAULT_CONFIG (5); a dynamic config, so not read-only.
    assert_eq!(find("message.max.bytes"), ("message.max.bytes".into(), "1048588".into(), 5, false, vec![5]));
    // A kaas setting read at start only: read-only.
    assert!(find("max.connections").3, "max.connections is read-only on kaas");
    // One that differs, and what kaas does whatever its settings: STATIC_BROKER_CONFIG (4) first.
    assert_eq!(find("transaction.state.log.num.partitions").1, "4");
    assert_eq!(find("transaction.state.log.num.partitions").4, vec![4, 5]);
    assert_eq!(
        (find("offsets.topic.replication.factor").1, find("offsets.topic.replication.factor").2),
        ("1".into(), 4)
    );
    assert_eq!(find("log.cleaner.enable").1, "true");
    assert_eq!(find("listeners").1, format!("PLAINTEXT://127.0.0.1:{}", broker.port));
    assert_eq!(find("broker.id").1, broker.node_id.to_string());
    assert!(configs.len() > 40, "{} configs", configs.len());
    // The cluster default: the dynamic defaults a new Kafka 4.4 cluster has (KIP-966's
    // min.insync.replicas, recorded at bootstrap), writable there, hence not read-only.
    assert_eq!(
        describe_broker(&mut c, ""),
        (0, Some(String::new()), vec![("min.insync.replicas".to_string(), "1".to_string(), 3, false, vec![3])])
    );
    let (code, message, configs) = describe_broker(&mut c, "99");
    assert_eq!((code, configs.len()), (42, 0));
    let expected = format!("Unexpected broker id, expected {} or empty string, but received 99", broker.node_id);
    assert_eq!(message.as_deref(), Some(expected.as_str()));
    broker.finish();
}
