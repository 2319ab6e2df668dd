use super::*;
use crate::store::configs::topic::alter::OP_SET;
use crate::store::configs::topic::alter::OP_SUBTRACT;
use crate::store::configs::TYPE_INT;

fn op(name: &str, op: i8, value: Option<&str>) -> AlterOp {
    AlterOp { name: name.into(), op, value: value.map(str::to_string) }
}

fn set(name: &str, value: &str) -> AlterOp {
    op(name, OP_SET, Some(value))
}

fn map(kv: &[(&str, &str)]) -> ConfigMap {
    kv.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect()
}

#[test]
fn a_static_kafka_config_cannot_be_updated_dynamically() {
    let e = alter(
        &ConfigMap::new(),
        &[set("log.dirs", "/x"), set("background.threads", "9"), set("node.id", "3")],
        false,
        true,
    )
    .unwrap_err();
    assert_eq!(e.to_string(), "Cannot update these configs dynamically: [log.dirs, node.id]");
    assert_eq!(e.code(), ResponseError::InvalidRequest.code());
    // Kafka 4.4 refuses the hours and minutes forms too: only log.retention.ms is dynamic.
    assert!(matches!(
        alter(&ConfigMap::new(), &[set("log.retention.minutes", "5")], false, false),
        Err(DynamicError::NotDynamic(_))
    ));
    assert_eq!(alter(&ConfigMap::new(), &[op("log.dirs", OP_DELETE, None)], false, true), Ok(ConfigMap::new()));
}

#[test]
fn kaas_start_time_settings_and_listener_security_are_static() {
    for name in ["max.connections", "ssl.client.auth", "sasl.enabled.mechanisms", "producer.id.expiration.ms"] {
        let e = alter(&ConfigMap::new(), &[set(name, "1")], false, true).unwrap_err();
        assert_eq!(e, DynamicError::NotDynamic(vec![name.to_string()]), "{name}");
    }
    let e = alter(&ConfigMap::new(), &[set("listener.name.plaintext.max.connections", "100")], false, true);
    assert!(matches!(e, Err(DynamicError::NotDynamic(_))));
}

#[test]
fn a_custom_config_is_stored_as_given() {
    let out = alter(&ConfigMap::new(), &[set("foo.bar", " 1 ")], false, false).unwrap();
    assert_eq!(out, map(&[("foo.bar", " 1 ")]));
}

#[test]
fn a_value_kafka_refuses_is_invalid_request_with_kafkas_message() {
    let e = alter(&ConfigMap::new(), &[set("log.retention.ms", "abc")], false, true).unwrap_err();
    assert_eq!(e.to_string(), "Invalid value abc for configuration log.retention.ms: Not a number of type LONG");
    assert_eq!(e.code(), ResponseError::InvalidRequest.code());
    let e = alter(&ConfigMap::new(), &[set("background.threads", "0")], false, true).unwrap_err();
    assert_eq!(e.to_string(), "Invalid value 0 for configuration background.threads: Value must be at least 1");
    let e = alter(&ConfigMap::new(), &[set("log.segment.bytes", "1000")], false, false).unwrap_err();
    assert_eq!(e.to_string(), "Invalid value 1000 for configuration log.segment.bytes: Value must be at least 1048576");
    let e = alter(&ConfigMap::new(), &[set("log.cleanup.policy", "foo")], false, true).unwrap_err();
    assert_eq!(
        e.to_string(),
        "Invalid value foo for configuration log.cleanup.policy: String must be one of: compact, delete"
    );
}

#[test]
fn a_per_broker_config_is_refused_as_the_cluster_default() {
    let ops = [set("sasl.kerberos.min.time.before.relogin", "58000")];
    let e = alter(&ConfigMap::new(), &ops, false, false).unwrap_err();
    assert_eq!(
        e.to_string(),
        "Cannot update these configs at default cluster level, broker id must be specified: [sasl.kerberos.min.time.before.relogin]"
    );
    assert_eq!(e.code(), ResponseError::InvalidRequest.code());
    assert_eq!(
        alter(&ConfigMap::new(), &ops, false, true),
        Ok(map(&[("sasl.kerberos.min.time.before.relogin", "58000")]))
    );
}

#[test]
fn a_topic_default_kaas_cannot_honour_is_invalid_config() {
    let e = alter(&ConfigMap::new(), &[set("log.preallocate", "true")], false, false).unwrap_err();
    assert_eq!(e.code(), ResponseError::InvalidConfig.code());
    assert!(
        e.to_string().starts_with("Invalid value true for configuration log.preallocate: kaas supports only"),
        "{e}"
    );
    let e = alter(&ConfigMap::new(), &[set("min.insync.replicas", "2")], false, false).unwrap_err();
    assert_eq!(e.code(), ResponseError::InvalidConfig.code());
    assert_eq!(
        alter(&ConfigMap::new(), &[set("min.insync.replicas", "1")], false, false),
        Ok(map(&[("min.insync.replicas", "1")]))
    );
}

#[test]
fn broker_level_min_insync_replicas_is_refused_as_kafka_with_elr() {
    let e = alter(&ConfigMap::new(), &[set("min.insync.replicas", "1")], false, true).unwrap_err();
    assert_eq!(e, DynamicError::BrokerMinInsyncReplicas);
    assert_eq!(e.code(), ResponseError::InvalidConfig.code());
}

#[test]
fn only_what_kaas_always_does_is_taken_for_a_fixed_config() {
    let name = "transaction.partition.verification.enable";
    assert!(alter(&ConfigMap::new(), &[set(name, "true")], false, false).is_ok());
    let e = alter(&ConfigMap::new(), &[set(name, "false")], false, false).unwrap_err();
    assert_eq!(e.code(), ResponseError::InvalidConfig.code());
}

#[test]
fn append_and_subtract_start_from_kafkas_default() {
    let out = alter(&ConfigMap::new(), &[op("log.cleanup.policy", OP_APPEND, Some("compact"))], false, true).unwrap();
    assert_eq!(out, map(&[("log.cleanup.policy", "delete,compact")]));
    let out = alter(&out, &[op("log.cleanup.policy", OP_SUBTRACT, Some("compact"))], false, true).unwrap();
    assert_eq!(out, map(&[("log.cleanup.policy", "delete")]));
}

#[test]
fn append_to_a_config_that_is_not_a_list_is_invalid_config() {
    let e = alter(&ConfigMap::new(), &[op("background.threads", OP_APPEND, Some("5"))], false, true).unwrap_err();
    assert_eq!(e.to_string(), "Config value append is not allowed for config key: background.threads");
    assert_eq!(e.code(), ResponseError::InvalidConfig.code());
}

#[test]
fn replace_sets_the_whole_set() {
    let current = map(&[("background.threads", "9"), ("log.retention.ms", "1000")]);
    let out = alter(&current, &[set("log.retention.ms", "5000")], true, true).unwrap();
    assert_eq!(out, map(&[("log.retention.ms", "5000")]));
    let out = alter(&current, &[op("log.retention.ms", OP_DELETE, None)], false, true).unwrap();
    assert_eq!(out, map(&[("background.threads", "9")]));
}

#[test]
fn a_resource_holds_a_bounded_number_of_configs_with_bounded_names() {
    let full: ConfigMap = (0..MAX_CONFIGS_PER_RESOURCE).map(|i| (format!("custom.{i}"), "1".to_string())).collect();
    assert_eq!(alter(&full, &[set("one.more", "1")], false, true), Err(DynamicError::TooMany));
    assert!(alter(&full, &[set("custom.1", "2")], false, true).is_ok(), "changing one that is set stays allowed");
    let long = "x".repeat(MAX_NAME_BYTES + 1);
    assert_eq!(alter(&ConfigMap::new(), &[set(&long, "1")], false, true), Err(DynamicError::NameTooLong));
    let e = alter(&ConfigMap::new(), &[set("foo", &"v".repeat(2000))], false, true).unwrap_err();
    assert_eq!(e.code(), ResponseError::InvalidRequest.code());
}

#[test]
fn the_broker_value_is_the_topic_default_over_the_cluster_one() {
    let mut all = DynamicConfigs {
        cluster: map(&[("log.retention.ms", "3600000"), ("message.max.bytes", "2000000"), ("background.threads", "9")]),
        ..Default::default()
    };
    all.brokers.insert("1".into(), map(&[("log.retention.ms", "-5"), ("log.cleanup.policy", "delete,compact")]));
    let layer = all.topic_layer(1);
    assert_eq!(
        layer,
        map(&[("retention.ms", "-1"), ("max.message.bytes", "2000000"), ("cleanup.policy", "delete,compact")])
    );
    assert_eq!(all.topic_layer(2), map(&[("retention.ms", "3600000"), ("max.message.bytes", "2000000")]));
}

#[test]
fn a_broker_describes_its_dynamic_values_over_its_settings() {
    let mut all =
        DynamicConfigs { cluster: map(&[("message.max.bytes", "2000000"), ("foo.baz", "1")]), ..Default::default() };
    all.brokers.insert("1".into(), map(&[("message.max.bytes", "3000000"), ("background.threads", "9")]));
    let base = vec![ConfigEntry {
        name: Cow::Borrowed("message.max.bytes"),
        value: Some("1048588".into()),
        source: SOURCE_DEFAULT,
        config_type: TYPE_INT,
        read_only: true,
        synonyms: vec![Synonym::new("message.max.bytes", "1048588", SOURCE_DEFAULT)],
        doc: Cow::Borrowed("doc"),
    }];
    let out = describe_broker(base, &all, 1);
    let find = |name: &str| out.iter().find(|e| e.name == name).cloned().unwrap();
    let names: Vec<&str> = out.iter().map(|e| e.name.as_ref()).collect();
    assert!(names.windows(2).all(|w| w[0] < w[1]), "sorted");
    let m = &find("message.max.bytes");
    assert_eq!((m.value_str(), m.source, m.read_only), ("3000000", SOURCE_DYNAMIC_BROKER, false));
    let sources: Vec<i8> = m.synonyms.iter().map(|s| s.source).collect();
    assert_eq!(sources, [SOURCE_DYNAMIC_BROKER, SOURCE_DYNAMIC_DEFAULT_BROKER, SOURCE_DEFAULT]);
    let b = find("background.threads");
    assert_eq!((b.value_str(), b.source, b.read_only), ("9", SOURCE_DYNAMIC_BROKER, false));
    // A custom config: no value and no type, as Kafka describes one.
    let f = find("foo.baz");
    assert_eq!((f.value.clone(), f.config_type, f.read_only), (None, 0, true));
    assert_eq!(find("min.insync.replicas").source, SOURCE_DYNAMIC_DEFAULT_BROKER);
    // Broker 2 has no value of its own: Kafka's default of a config kaas stores without effect.
    let other = describe_broker(Vec::new(), &all, 2);
    let b = other.iter().find(|e| e.name == "background.threads").unwrap();
    assert_eq!((b.value_str(), b.source), ("10", SOURCE_DEFAULT));
    assert!(other.iter().all(|e| e.name != "message.max.bytes" || e.source == SOURCE_DYNAMIC_DEFAULT_BROKER));
}

#[test]
fn the_cluster_default_lists_its_values_and_min_insync_replicas() {
    let all = DynamicConfigs { cluster: map(&[("log.retention.ms", "3600000")]), ..Default::default() };
    let out = describe_cluster(&all);
    let shown: Vec<(&str, &str, i8)> = out.iter().map(|e| (e.name.as_ref(), e.value_str(), e.source)).collect();
    assert_eq!(shown, [("log.retention.ms", "3600000", 3), ("min.insync.replicas", "1", 3)]);
    assert!(out.iter().all(|e| e.synonyms.len() == 1));
}
