//! DescribeConfigs of a topic: every Kafka topic config with its value, source and synonyms, as
//! Kafka 4.4 answers (a topic's own value, else kaas's broker setting, else Kafka's default).

use std::collections::BTreeMap;

use std::borrow::Cow;

use super::super::dynamic::{as_topic, topic_synonyms, DynamicConfigs};
use super::super::{ConfigEntry, Synonym, SOURCE_DEFAULT, SOURCE_DYNAMIC_TOPIC, SOURCE_STATIC_BROKER};
use super::table::{self, ConfigDef};
use super::{check_value, BrokerDefaults};

fn same(def: &ConfigDef, a: &str, b: &str) -> bool {
    a == b || check_value(def, a).ok() == check_value(def, b).ok()
}

/// One topic config, from the most specific source, as Kafka lists synonyms: the topic's own
/// value, the broker's dynamic value, the cluster's dynamic default (`dynamic`, in that order),
/// kaas's setting, Kafka's default.
fn describe_one(
    def: &'static ConfigDef,
    defaults: &BrokerDefaults,
    dynamic: Vec<Synonym>,
    topic_value: Option<&String>,
) -> ConfigEntry {
    let mut synonyms = Vec::new();
    if let Some(v) = topic_value {
        synonyms.push(Synonym::new(def.name, v.clone(), SOURCE_DYNAMIC_TOPIC));
    }
    // The topic's value from a dynamic broker config (store::configs::dynamic::as_topic).
    let from_dynamic = dynamic.first().map(|s| (as_topic(&s.name, s.value.as_deref().unwrap_or("")), s.source));
    synonyms.extend(dynamic);
    // kaas's own setting shows as a static broker config where it differs from Kafka's default.
    let broker = defaults.value(def.name).filter(|v| !same(def, v, def.default));
    if let Some(v) = &broker {
        let name = def.synonym.unwrap_or(def.name).to_string();
        synonyms.push(Synonym::new(name, v.clone(), SOURCE_STATIC_BROKER));
    }
    // Kafka's retention.ms default derives from log.retention.hours, so it names no synonym.
    if let Some(name) = def.synonym.filter(|_| def.name != "retention.ms") {
        synonyms.push(Synonym::new(name, def.default, SOURCE_DEFAULT));
    }
    let (value, source) = match (topic_value, from_dynamic, broker) {
        (Some(v), _, _) => (v.clone(), SOURCE_DYNAMIC_TOPIC),
        (None, Some((Some((_, v)), source)), _) => (v, source),
        (None, _, Some(v)) => (v, SOURCE_STATIC_BROKER),
        (None, _, None) => (def.default.to_string(), SOURCE_DEFAULT),
    };
    ConfigEntry {
        name: Cow::Borrowed(def.name),
        value: Some(value),
        source,
        config_type: def.kind as i8,
        read_only: false,
        synonyms,
        doc: Cow::Borrowed(def.doc),
    }
}

/// The configs Apache Kafka gives its internal topics when it creates them, which it then
/// describes as the topic's own (DYNAMIC_TOPIC_CONFIG): `__consumer_offsets` from the group
/// coordinator (compact, producer compression, `offsets.topic.segment.bytes`),
/// `__transaction_state` from the transaction coordinator (compact, uncompressed, no unclean
/// election, `transaction.state.log.segment.bytes` and `.min.isr`). The segment sizes are Kafka's
/// defaults; the minimum in-sync replicas is 1, what Kafka's single-copy setups set and what
/// kaas keeps (one copy). kaas stores this state in sled, which keeps the latest value of each
/// key as compaction does. `None` for any other topic.
pub fn internal_topic_configs(name: &str) -> Option<BTreeMap<String, String>> {
    let configs: &[(&str, &str)] = match name {
        "__consumer_offsets" => {
            &[("cleanup.policy", "compact"), ("compression.type", "producer"), ("segment.bytes", "104857600")]
        }
        "__transaction_state" => &[
            ("cleanup.policy", "compact"),
            ("compression.type", "uncompressed"),
            ("min.insync.replicas", "1"),
            ("segment.bytes", "104857600"),
            ("unclean.leader.election.enable", "false"),
        ],
        _ => return None,
    };
    Some(configs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect())
}

/// Every topic config of Kafka, in its order, for a topic led by broker `node` (whose dynamic
/// configs apply to it).
pub fn describe_topic(
    defaults: &BrokerDefaults,
    (dynamic, node): (&DynamicConfigs, i32),
    configs: &BTreeMap<String, String>,
) -> Vec<ConfigEntry> {
    table::TOPIC_CONFIGS
        .iter()
        .map(|d| describe_one(d, defaults, topic_synonyms(dynamic, node, d.name), configs.get(d.name)))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::configs::{SOURCE_DYNAMIC_BROKER, SOURCE_DYNAMIC_DEFAULT_BROKER};

    #[test]
    fn a_dynamic_broker_value_is_the_default_of_topics_without_their_own() {
        let mut dynamic = DynamicConfigs::default();
        dynamic.cluster.insert("log.retention.ms".into(), "3600000".into());
        dynamic.brokers.insert("1".into(), BTreeMap::from([("log.retention.ms".into(), "-5".into())]));
        dynamic.cluster.insert("log.cleanup.policy".into(), "compact".into());
        let all = describe_topic(&BrokerDefaults::default(), (&dynamic, 1), &BTreeMap::new());
        let d = find(&all, "retention.ms");
        // Kafka turns a negative log.retention.ms into -1 and shows the values as set.
        assert_eq!((d.value_str(), d.source), ("-1", SOURCE_DYNAMIC_BROKER));
        assert_eq!(
            d.synonyms,
            vec![
                Synonym::new("log.retention.ms", "-5", SOURCE_DYNAMIC_BROKER),
                Synonym::new("log.retention.ms", "3600000", SOURCE_DYNAMIC_DEFAULT_BROKER),
            ]
        );
        let c = find(&all, "cleanup.policy");
        assert_eq!((c.value_str(), c.source), ("compact", SOURCE_DYNAMIC_DEFAULT_BROKER));
        let other = describe_topic(&BrokerDefaults::default(), (&dynamic, 2), &BTreeMap::new());
        assert_eq!(find(&other, "retention.ms").value_str(), "3600000", "broker 2 has no value of its own");
        let own = BTreeMap::from([("retention.ms".to_string(), "5".to_string())]);
        let t = describe_topic(&BrokerDefaults::default(), (&dynamic, 1), &own);
        assert_eq!((find(&t, "retention.ms").value_str(), find(&t, "retention.ms").synonyms.len()), ("5", 3));
    }

    #[test]
    fn min_insync_replicas_is_a_cluster_default_as_on_a_new_kafka_cluster() {
        let all = describe_topic(&BrokerDefaults::default(), (&DynamicConfigs::default(), 1), &BTreeMap::new());
        let d = find(&all, "min.insync.replicas");
        assert_eq!((d.value_str(), d.source), ("1", SOURCE_DYNAMIC_DEFAULT_BROKER));
        let sources: Vec<i8> = d.synonyms.iter().map(|s| s.source).collect();
        assert_eq!(sources, [SOURCE_DYNAMIC_DEFAULT_BROKER, SOURCE_DEFAULT]);
    }

    fn find<'a>(all: &'a [ConfigEntry], name: &str) -> &'a ConfigEntry {
        all.iter().find(|d| d.name == name).unwrap()
    }

    #[test]
    fn unset_configs_are_kafkas_defaults_with_the_broker_synonym() {
        let all = describe_topic(&BrokerDefaults::default(), (&DynamicConfigs::default(), 1), &BTreeMap::new());
        assert_eq!(all.len(), 37);
        let d = find(&all, "max.message.bytes");
        assert_eq!((d.value_str(), d.source, d.config_type), ("1048588", SOURCE_DEFAULT, 3));
        assert_eq!(d.synonyms, vec![Synonym::new("message.max.bytes", "1048588", SOURCE_DEFAULT)]);
        assert!(find(&all, "retention.ms").synonyms.is_empty());
    }

    #[test]
    fn a_topic_value_is_dynamic_topic_config_listed_first() {
        let set = BTreeMap::from([("max.message.bytes".to_string(), "3000000".to_string())]);
        let d = find(
            &describe_topic(&BrokerDefaults::default(), (&DynamicConfigs::default(), 1), &set),
            "max.message.bytes",
        )
        .clone();
        assert_eq!((d.value_str(), d.source), ("3000000", SOURCE_DYNAMIC_TOPIC));
        assert_eq!(d.synonyms.iter().map(|s| s.source).collect::<Vec<_>>(), [SOURCE_DYNAMIC_TOPIC, SOURCE_DEFAULT]);
    }

    #[test]
    fn a_broker_setting_other_than_kafkas_default_is_static_broker_config() {
        let defaults = BrokerDefaults { retention_ms: 1000, ..BrokerDefaults::default() };
        let d =
            find(&describe_topic(&defaults, (&DynamicConfigs::default(), 1), &BTreeMap::new()), "retention.ms").clone();
        assert_eq!((d.value_str(), d.source), ("1000", SOURCE_STATIC_BROKER));
        assert_eq!(d.synonyms, vec![Synonym::new("log.retention.ms", "1000", SOURCE_STATIC_BROKER)]);
    }

    #[test]
    fn internal_topics_show_the_configs_kafka_creates_them_with() {
        let offsets = internal_topic_configs("__consumer_offsets").unwrap();
        let all = describe_topic(&BrokerDefaults::default(), (&DynamicConfigs::default(), 1), &offsets);
        let shown = |all: &[ConfigEntry], n: &str| (find(all, n).value_str().to_string(), find(all, n).source);
        assert_eq!(shown(&all, "cleanup.policy"), ("compact".into(), SOURCE_DYNAMIC_TOPIC));
        assert_eq!(shown(&all, "compression.type"), ("producer".into(), SOURCE_DYNAMIC_TOPIC));
        assert_eq!(shown(&all, "segment.bytes"), ("104857600".into(), SOURCE_DYNAMIC_TOPIC));
        assert_eq!(shown(&all, "retention.ms").1, SOURCE_DEFAULT, "the rest as any topic");
        let txn = internal_topic_configs("__transaction_state").unwrap();
        let all = describe_topic(&BrokerDefaults::default(), (&DynamicConfigs::default(), 1), &txn);
        assert_eq!(shown(&all, "compression.type"), ("uncompressed".into(), SOURCE_DYNAMIC_TOPIC));
        assert_eq!(shown(&all, "unclean.leader.election.enable"), ("false".into(), SOURCE_DYNAMIC_TOPIC));
        assert_eq!(shown(&all, "min.insync.replicas"), ("1".into(), SOURCE_DYNAMIC_TOPIC));
        assert!(txn.keys().all(|k| table::TOPIC_CONFIGS.iter().any(|d| d.name == k)), "all are Kafka topic configs");
        assert_eq!(internal_topic_configs("plain"), None);
    }
}
