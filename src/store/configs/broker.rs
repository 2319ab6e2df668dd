//! DescribeConfigs of a BROKER: the Apache Kafka broker configs that have a true value on kaas,
//! each with Kafka's type, its default and the synonyms Kafka lists. Kafka 4.4 has 379 broker
//! configs; most configure machinery kaas does not have (replication, the KRaft
//! controller, quotas, remote storage), so they are left out
//! rather than shown with a value kaas would not honour. What is listed is either a kaas setting
//! that is Kafka's config of that name ([`BrokerSetting`], given by the caller from the settings'
//! declaration, config/settings.rs) or a fact of how kaas works ([`BROKER_FACTS`]: one copy,
//! 50 offsets partitions). As Kafka, a
//! value set in the broker's own configuration is STATIC_BROKER_CONFIG, else DEFAULT_CONFIG;
//! kaas cannot tell a setting left alone from one set to Kafka's default, so a value is static
//! where it differs from Kafka's default. The dynamic values set at runtime go over these
//! (store::configs::dynamic). Pure data, no I/O.

use std::borrow::Cow;

use super::{ConfigEntry, Synonym, SOURCE_DEFAULT, SOURCE_STATIC_BROKER};
use super::{TYPE_BOOLEAN, TYPE_INT, TYPE_LIST, TYPE_SHORT, TYPE_STRING};

/// A broker config that is what kaas does, whatever its settings.
#[derive(Debug, Clone, Copy)]
pub struct BrokerFact {
    pub name: &'static str,
    pub config_type: i8,
    /// Kafka's default; `None` where Kafka has none (null).
    pub kafka_default: Option<&'static str>,
    pub value: &'static str,
    /// What DescribeConfigs returns as its documentation: what it means on kaas.
    pub doc: &'static str,
}

const fn fact(
    name: &'static str,
    config_type: i8,
    kafka_default: Option<&'static str>,
    value: &'static str,
    doc: &'static str,
) -> BrokerFact {
    BrokerFact { name, config_type, kafka_default, value, doc }
}

/// A broker config that is a kaas setting (config/settings.rs declares which), with its value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BrokerSetting {
    pub name: &'static str,
    pub config_type: i8,
    pub kafka_default: Option<&'static str>,
    pub value: String,
    pub doc: String,
}

/// The broker configs that are facts of kaas, by name (Kafka lists them sorted too); the
/// settings that are broker configs come from config/settings.rs.
pub const BROKER_FACTS: &[BrokerFact] = &[
    fact("compression.type", TYPE_STRING, Some("producer"), "producer",
        "The topics' default: batches stored as the producer compressed them (a topic's own compression.type may name a codec).",
    ),
    fact("default.replication.factor", TYPE_INT, Some("1"), "1",
        "kaas keeps one copy of each partition: durability comes from fsync before every acks=all answer, and in a cluster from the shared disk.",
    ),
    fact("delete.topic.enable", TYPE_BOOLEAN, Some("true"), "true",
        "DeleteTopics is always served.",
    ),
    fact("log.cleanup.policy", TYPE_LIST, Some("delete"), "delete",
        "kaas's default cleanup policy: retention deletes whole segments.",
    ),
    fact("min.insync.replicas", TYPE_INT, Some("1"), "1",
        "kaas keeps one copy: an acks=all answer means the batch is fsynced.",
    ),
    fact("offsets.topic.num.partitions", TYPE_INT, Some("50"), "50",
        "The number of __consumer_offsets partitions group ids are spread over.",
    ),
    fact("offsets.topic.replication.factor", TYPE_SHORT, Some("3"), "1",
        "kaas keeps one copy of the group coordinator's state, flushed before it answers.",
    ),
    fact("offsets.topic.segment.bytes", TYPE_INT, Some("104857600"), "104857600",
        "The segment size Kafka uses for __consumer_offsets; kaas keeps group state in its own database.",
    ),
    fact("transaction.state.log.min.isr", TYPE_INT, Some("2"), "1",
        "kaas keeps one copy of the transaction coordinator's state, flushed before it answers.",
    ),
    fact("transaction.state.log.replication.factor", TYPE_SHORT, Some("3"), "1",
        "kaas keeps one copy of the transaction coordinator's state, flushed before it answers.",
    ),
    fact("transaction.state.log.segment.bytes", TYPE_INT, Some("104857600"), "104857600",
        "The segment size Kafka uses for __transaction_state; kaas keeps coordinator state in its own database.",
    ),
    fact("unclean.leader.election.enable", TYPE_BOOLEAN, Some("false"), "false",
        "kaas never elects a leader that could lose acknowledged records.",
    ),
];

/// One broker config as kaas's settings give it: read-only, STATIC_BROKER_CONFIG where it
/// differs from Kafka's default, before DEFAULT_CONFIG where Kafka has a default. Dynamic values
/// go over it (store::configs::dynamic::describe_broker), which also marks the configs that can
/// change at runtime.
fn describe_one(
    name: &'static str,
    config_type: i8,
    kafka_default: Option<&str>,
    value: String,
    doc: Cow<'static, str>,
) -> ConfigEntry {
    let mut synonyms = Vec::new();
    let set = kafka_default != Some(value.as_str());
    if set {
        synonyms.push(Synonym::new(name, value.clone(), SOURCE_STATIC_BROKER));
    }
    if let Some(default) = kafka_default {
        synonyms.push(Synonym::new(name, default, SOURCE_DEFAULT));
    }
    let source = if set { SOURCE_STATIC_BROKER } else { SOURCE_DEFAULT };
    ConfigEntry { name: Cow::Borrowed(name), value: Some(value), source, config_type, read_only: true, synonyms, doc }
}

/// Every broker config kaas describes, sorted by name: the [`BROKER_FACTS`] and the `settings`
/// that are Kafka broker configs.
pub fn describe_broker(settings: Vec<BrokerSetting>) -> Vec<ConfigEntry> {
    let facts = BROKER_FACTS
        .iter()
        .map(|f| describe_one(f.name, f.config_type, f.kafka_default, f.value.to_string(), Cow::Borrowed(f.doc)));
    let set =
        settings.into_iter().map(|s| describe_one(s.name, s.config_type, s.kafka_default, s.value, Cow::Owned(s.doc)));
    let mut all: Vec<ConfigEntry> = facts.chain(set).collect();
    all.sort_by(|a, b| a.name.cmp(&b.name));
    all
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::configs::TYPE_LONG;

    fn find(all: &[ConfigEntry], name: &str) -> ConfigEntry {
        all.iter().find(|e| e.name == name).cloned().unwrap()
    }

    fn setting(name: &'static str, config_type: i8, kafka_default: Option<&'static str>, value: &str) -> BrokerSetting {
        BrokerSetting { name, config_type, kafka_default, value: value.into(), doc: "what it does".into() }
    }

    #[test]
    fn the_facts_are_sorted_by_name_without_duplicates_and_documented() {
        assert!(BROKER_FACTS.windows(2).all(|w| w[0].name < w[1].name));
        assert!(BROKER_FACTS.iter().all(|d| d.doc.len() > 20), "a config without documentation");
    }

    #[test]
    fn a_value_equal_to_kafkas_default_is_default_config() {
        let all = describe_broker(vec![setting("message.max.bytes", TYPE_INT, Some("1048588"), "1048588")]);
        let e = find(&all, "message.max.bytes");
        assert_eq!((e.value_str(), e.source, e.config_type), ("1048588", SOURCE_DEFAULT, TYPE_INT));
        assert_eq!(e.synonyms, vec![Synonym::new(e.name, "1048588", SOURCE_DEFAULT)]);
    }

    #[test]
    fn a_value_other_than_kafkas_default_is_static_broker_config_listed_first() {
        let all = describe_broker(vec![setting("log.segment.bytes", TYPE_INT, Some("1073741824"), "2000000")]);
        let e = find(&all, "log.segment.bytes");
        assert_eq!((e.value_str(), e.source), ("2000000", SOURCE_STATIC_BROKER));
        assert_eq!(e.synonyms.iter().map(|s| s.source).collect::<Vec<_>>(), [SOURCE_STATIC_BROKER, SOURCE_DEFAULT]);
    }

    #[test]
    fn a_config_kafka_has_no_default_for_names_no_default_synonym() {
        let all = describe_broker(vec![setting("log.retention.ms", TYPE_LONG, None, "604800000")]);
        let e = find(&all, "log.retention.ms");
        assert_eq!(e.source, SOURCE_STATIC_BROKER);
        assert_eq!(e.synonyms.len(), 1);
    }

    #[test]
    fn what_kaas_does_is_shown_whatever_the_settings() {
        let all = describe_broker(Vec::new());
        let e = find(&all, "offsets.topic.replication.factor");
        assert_eq!((e.value_str(), e.source, e.config_type), ("1", SOURCE_STATIC_BROKER, TYPE_SHORT));
        assert_eq!(find(&all, "offsets.topic.num.partitions").source, SOURCE_DEFAULT);
        assert_eq!(all.len(), BROKER_FACTS.len());
    }

    #[test]
    fn facts_and_settings_are_listed_together_by_name() {
        let all = describe_broker(vec![setting("auto.create.topics.enable", TYPE_BOOLEAN, Some("true"), "true")]);
        assert!(all.windows(2).all(|w| w[0].name < w[1].name));
        assert_eq!(all[0].name, "auto.create.topics.enable");
    }
}
