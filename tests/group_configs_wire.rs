//! Group configs on the wire (store::group_config): DescribeConfigs of a GROUP lists Kafka 4.4's
//! non-internal group configs for any group name with the broker's values (DEFAULT_CONFIG), an
//! empty name is INVALID_REQUEST; IncrementalAlterConfigs of a group refuses an unknown name with
//! Kafka's message and a set (kaas keeps no per-group configs), and takes a delete.

mod common;

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
    let mut resp: DescribeConfigsResponse = c.call(ApiKey::DescribeConfigs, 4, req);
    resp.results.remove(0)
}

fn alter(c: &mut common::Client, name: &str, op: i8) -> (i16, String) {
    let mut cfg = AlterableConfig::default();
    cfg.name = s(name);
    cfg.config_operation = op;
    cfg.value = Some(s("50000"));
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

#[test]
fn group_configs_are_the_brokers_and_cannot_be_set() {
    let broker = Broker::start_with_env(&[
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
    let (code, msg) = alter(&mut c, "consumer.session.timeout.ms", 0);
    assert_eq!(code, 40, "INVALID_CONFIG: {msg}");
    assert_eq!(alter(&mut c, "consumer.session.timeout.ms", 1).0, 0, "a delete is a no-op");
    broker.finish();
}
