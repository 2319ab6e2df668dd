//! Group configs on the wire (store::configs::group): DescribeConfigs of a GROUP lists Kafka 4.4's
//! non-internal group configs for any group name with the broker's values (DEFAULT_CONFIG), an
//! empty name is INVALID_REQUEST; IncrementalAlterConfigs of a group sets and deletes the consumer
//! group timers (GROUP_CONFIG, kept across a restart, applied to the group's heartbeats) and
//! refuses an unknown name, a value out of Kafka's bounds and the configs kaas cannot hold.

use crate::common;

use common::Broker;
use kafka_protocol::messages::describe_configs_request::DescribeConfigsResource;
use kafka_protocol::messages::incremental_alter_configs_request::{AlterConfigsResource, AlterableConfig};
use kafka_protocol::messages::*;
use kafka_protocol::protocol::StrBytes;

const GROUP: i8 = 32;

fn s(v: &str) -> StrBytes {
    StrBytes::from_string(v.to_string())
}

fn describe(c: &mut common::Client, name: &str) -> describe_configs_response::DescribeConfigsResult {
    let mut r = DescribeConfigsResource::default();
    r.resource_type = GROUP;
    r.resource_name = s(name);
    let mut req = DescribeConfigsRequest::default();
    req.resources = vec![r];
    req.include_synonyms = true;
    req.include_documentation = true;
    let mut resp: DescribeConfigsResponse = c.call(ApiKey::DescribeConfigs, 4, req);
    for e in &resp.results[0].configs {
        assert!(e.documentation.as_ref().is_some_and(|d| !d.is_empty()), "{} has documentation", e.name.as_str());
    }
    resp.results.remove(0)
}

fn alter(c: &mut common::Client, name: &str, op: i8) -> (i16, String) {
    alter_to(c, name, op, "50000")
}

fn alter_to(c: &mut common::Client, name: &str, op: i8, value: &str) -> (i16, String) {
    let mut cfg = AlterableConfig::default();
    cfg.name = s(name);
    cfg.config_operation = op;
    cfg.value = Some(s(value));
    let mut r = AlterConfigsResource::default();
    r.resource_type = GROUP;
    r.resource_name = s("g");
    r.configs = vec![cfg];
    let mut req = IncrementalAlterConfigsRequest::default();
    req.resources = vec![r];
    let resp: IncrementalAlterConfigsResponse = c.call(ApiKey::IncrementalAlterConfigs, 1, req);
    let out = &resp.responses[0];
    (out.error_code, out.error_message.as_ref().map(|m| m.to_string()).unwrap_or_default())
}

fn value(r: &describe_configs_response::DescribeConfigsResult, name: &str) -> (Option<String>, i8, usize) {
    let e = r.configs.iter().find(|e| e.name.as_str() == name).expect(name);
    (e.value.as_ref().map(|v| v.to_string()), e.config_source, e.synonyms.len())
}

/// The heartbeat interval a consumer-protocol member of group "g" is told to use.
fn heartbeat_interval(c: &mut common::Client, member: &str) -> i32 {
    let mut req = ConsumerGroupHeartbeatRequest::default();
    req.group_id = GroupId(s("g"));
    req.member_id = s(member);
    req.member_epoch = 0;
    req.rebalance_timeout_ms = 30_000;
    req.subscribed_topic_names = Some(vec![TopicName(s("gc-topic"))]);
    req.topic_partitions = Some(vec![]);
    let resp: ConsumerGroupHeartbeatResponse = c.call(ApiKey::ConsumerGroupHeartbeat, 1, req);
    assert_eq!(resp.error_code, 0, "{:?}", resp.error_message);
    resp.heartbeat_interval_ms
}

#[test]
fn group_configs_default_to_the_brokers_and_the_consumer_timers_can_be_set_per_group() {
    let mut broker = Broker::start_with_env(&[
        ("KAAS_GROUP_CONSUMER_SESSION_TIMEOUT_MS", "30000"),
        ("KAAS_GROUP_CONSUMER_HEARTBEAT_INTERVAL_MS", "3000"),
    ]);
    let mut c = broker.client();
    let r = describe(&mut c, "no-such-group");
    assert_eq!((r.error_code, r.configs.len()), (0, 21), "any group name, known or not");
    let get = |n: &str| r.configs.iter().find(|e| e.name.as_str() == n).expect(n);
    let session = get("consumer.session.timeout.ms");
    assert_eq!(session.value.as_ref().map(|v| v.to_string()).as_deref(), Some("30000"));
    assert_eq!((session.config_source, session.read_only, session.config_type), (5, false, 3));
    assert_eq!(session.synonyms.len(), 1);
    assert_eq!(get("consumer.heartbeat.interval.ms").value.as_ref().map(|v| v.to_string()).as_deref(), Some("3000"));
    assert!(get("streams.assignor.name").value.is_none(), "Kafka's null");

    let r = describe(&mut c, "");
    assert_eq!(r.error_code, 42, "INVALID_REQUEST");
    assert_eq!(r.error_message.as_ref().map(|m| m.to_string()).as_deref(), Some("Group name must not be empty"));

    assert_eq!(alter(&mut c, "session.timeout.ms", 0), (40, "Unknown group config name: session.timeout.ms".into()));
    let (code, msg) = alter(&mut c, "share.session.timeout.ms", 0);
    assert_eq!(code, 40, "INVALID_CONFIG: kaas serves no share groups: {msg}");
    assert_eq!(
        alter_to(&mut c, "consumer.session.timeout.ms", 0, "1000"),
        (40, "consumer.session.timeout.ms must be in the range 30000 to 60000 inclusive.".into())
    );

    // Set on the group: described as GROUP_CONFIG with the broker's value as a synonym, and
    // the group's members are told the group's heartbeat interval.
    assert_eq!(heartbeat_interval(&mut c, "m1"), 3000);
    assert_eq!(alter(&mut c, "consumer.session.timeout.ms", 0), (0, String::new()));
    assert_eq!(alter_to(&mut c, "consumer.heartbeat.interval.ms", 0, "4000"), (0, String::new()));
    assert_eq!(value(&describe(&mut c, "g"), "consumer.session.timeout.ms"), (Some("50000".into()), 8, 2));
    assert_eq!(value(&describe(&mut c, "other"), "consumer.session.timeout.ms"), (Some("30000".into()), 5, 1));
    assert_eq!(heartbeat_interval(&mut c, "m2"), 4000);

    // Durable: the same after a kill -9 and restart; a delete gives the broker's value back.
    broker.crash_and_restart();
    let mut c = broker.client();
    assert_eq!(value(&describe(&mut c, "g"), "consumer.heartbeat.interval.ms"), (Some("4000".into()), 8, 2));
    assert_eq!(heartbeat_interval(&mut c, "m3"), 4000);
    assert_eq!(alter(&mut c, "consumer.heartbeat.interval.ms", 1).0, 0);
    assert_eq!(value(&describe(&mut c, "g"), "consumer.heartbeat.interval.ms"), (Some("3000".into()), 5, 1));
    assert_eq!(heartbeat_interval(&mut c, "m4"), 3000);
    broker.finish();
}
