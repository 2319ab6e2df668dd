//! DescribeConfigs of a BROKER: the Apache Kafka broker configs that have a true value on kaas,
//! each with Kafka's type, its default and the synonyms Kafka lists. Kafka 4.4 has 379 broker
//! configs; most configure machinery kaas does not have (replication, the KRaft
//! controller, the log cleaner's tuning, SASL/SSL, quotas, remote storage), so they are left out
//! rather than shown with a value kaas would not honour. What is listed is either a kaas setting
//! that is Kafka's config of that name (`Kaas::Setting`, the value given by the caller) or a fact
//! of how kaas works (`Kaas::Is`: one copy, no compaction, 50 offsets partitions). As Kafka, a
//! value set in the broker's own configuration is STATIC_BROKER_CONFIG, else DEFAULT_CONFIG;
//! kaas cannot tell a setting left alone from one set to Kafka's default, so a value is static
//! where it differs from Kafka's default. kaas changes none at runtime, so all are read-only.
//! Pure data, no I/O.

use std::collections::BTreeMap;

use super::topic_config::describe::{Synonym, SOURCE_DEFAULT, SOURCE_STATIC_BROKER};

/// DescribeConfigs v3+ config types (Kafka's ConfigType ids).
pub const TYPE_BOOLEAN: i8 = 1;
pub const TYPE_STRING: i8 = 2;
pub const TYPE_INT: i8 = 3;
pub const TYPE_SHORT: i8 = 4;
pub const TYPE_LONG: i8 = 5;
pub const TYPE_LIST: i8 = 7;

/// Where kaas's value comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kaas {
    /// A kaas setting that is this Kafka config.
    Setting,
    /// What kaas does, whatever its settings.
    Is(&'static str),
}

#[derive(Debug, Clone, Copy)]
pub struct BrokerConfigDef {
    pub name: &'static str,
    pub config_type: i8,
    /// Kafka's default; `None` where Kafka has none (null).
    pub kafka_default: Option<&'static str>,
    pub kaas: Kaas,
    /// What DescribeConfigs returns as its documentation: what it means on kaas.
    pub doc: &'static str,
}

const fn def(
    name: &'static str,
    config_type: i8,
    kafka_default: Option<&'static str>,
    kaas: Kaas,
    doc: &'static str,
) -> BrokerConfigDef {
    BrokerConfigDef { name, config_type, kafka_default, kaas, doc }
}

use Kaas::{Is, Setting};

/// The broker configs kaas describes, by name (Kafka lists them sorted too).
pub const BROKER_CONFIGS: &[BrokerConfigDef] = &[
    def("advertised.listeners", TYPE_LIST, None, Setting,
        "The address this broker gives clients in Metadata and FindCoordinator answers (kaas: advertised_listener, else the listen address).",
    ),
    def("auto.create.topics.enable", TYPE_BOOLEAN, Some("true"), Setting,
        "Whether a Metadata or Produce request for an unknown topic creates it with num.partitions partitions.",
    ),
    def("broker.heartbeat.interval.ms", TYPE_INT, Some("2000"), Setting,
        "How often a broker renews its heartbeat on the shared disk.",
    ),
    def("broker.id", TYPE_INT, Some("-1"), Setting,
        "This broker's id in the cluster (kaas: node_id).",
    ),
    def("broker.session.timeout.ms", TYPE_INT, Some("9000"), Setting,
        "A broker whose heartbeat has not moved for this long is no longer live: its partitions and coordinators move to the others.",
    ),
    def("compression.type", TYPE_STRING, Some("producer"), Is("producer"),
        "kaas stores every batch as the producer compressed it.",
    ),
    def("connections.max.idle.ms", TYPE_LONG, Some("600000"), Setting,
        "A connection with no request for this long is closed.",
    ),
    def("default.replication.factor", TYPE_INT, Some("1"), Is("1"),
        "kaas keeps one copy of each partition: durability comes from fsync before every acks=all answer, and in a cluster from the shared disk.",
    ),
    def("delete.topic.enable", TYPE_BOOLEAN, Some("true"), Is("true"),
        "DeleteTopics is always served.",
    ),
    def("fetch.max.bytes", TYPE_INT, Some("57671680"), Setting,
        "The most bytes one Fetch answer holds across all its partitions.",
    ),
    def("group.consumer.assignors", TYPE_LIST, Some("uniform,range"), Setting,
        "The server-side assignors a consumer-protocol (KIP-848) group may use; the first is the default.",
    ),
    def("group.consumer.heartbeat.interval.ms", TYPE_INT, Some("5000"), Setting,
        "How often a consumer-protocol member is told to heartbeat.",
    ),
    def("group.consumer.max.size", TYPE_INT, Some("2147483647"), Setting,
        "The most members a consumer-protocol group may have.",
    ),
    def("group.consumer.migration.policy", TYPE_STRING, Some("bidirectional"), Setting,
        "Whether classic groups are converted to consumer-protocol groups and back when a member of the other protocol joins (bidirectional, upgrade, downgrade, disabled).",
    ),
    def("group.consumer.session.timeout.ms", TYPE_INT, Some("45000"), Setting,
        "A consumer-protocol member without a heartbeat for this long is removed from its group.",
    ),
    def("group.initial.rebalance.delay.ms", TYPE_INT, Some("3000"), Setting,
        "How long the first rebalance of an empty classic group waits for more members to join.",
    ),
    def("listeners", TYPE_LIST, Some("PLAINTEXT://:9092"), Setting,
        "The address and port this broker listens on for clients (kaas: listen).",
    ),
    def("log.cleaner.enable", TYPE_BOOLEAN, Some("true"), Is("false"),
        "kaas has no log cleaner: compacted topics keep every record.",
    ),
    def("log.cleanup.policy", TYPE_LIST, Some("delete"), Is("delete"),
        "kaas's default cleanup policy: retention deletes whole segments.",
    ),
    def("log.dirs", TYPE_LIST, None, Setting,
        "The directory the partitions' segment files are kept in (kaas: data_dir/topics).",
    ),
    def("log.message.timestamp.after.max.ms", TYPE_LONG, Some("3600000"), Setting,
        "How far in the future a record's CreateTime may be before the batch is refused with INVALID_TIMESTAMP.",
    ),
    def("log.message.timestamp.before.max.ms", TYPE_LONG, Some("9223372036854775807"), Setting,
        "How far in the past a record's CreateTime may be before the batch is refused with INVALID_TIMESTAMP.",
    ),
    def("log.message.timestamp.type", TYPE_STRING, Some("CreateTime"), Setting,
        "Whether records keep the producer's CreateTime or get the broker's LogAppendTime.",
    ),
    def("log.retention.bytes", TYPE_LONG, Some("-1"), Setting,
        "The size a partition's log is cut back to by deleting its oldest segments (-1: no limit).",
    ),
    def("log.retention.check.interval.ms", TYPE_LONG, Some("300000"), Setting,
        "How often retention and producer-state expiry run.",
    ),
    def("log.retention.ms", TYPE_LONG, None, Setting,
        "Segments whose newest record is older than this are deleted, the active one too (-1: kept forever).",
    ),
    def("log.segment.bytes", TYPE_INT, Some("1073741824"), Setting,
        "A partition's active segment is rolled once it would grow past this size.",
    ),
    def("max.connections", TYPE_INT, Some("2147483647"), Setting,
        "The most client connections this broker accepts at once.",
    ),
    def("max.connections.per.ip", TYPE_INT, Some("2147483647"), Setting,
        "The most client connections this broker accepts from one address.",
    ),
    def("max.incremental.fetch.session.cache.slots", TYPE_INT, Some("1000"), Setting,
        "The most incremental fetch sessions (KIP-227) this broker keeps.",
    ),
    def("message.max.bytes", TYPE_INT, Some("1048588"), Setting,
        "The largest record batch a Produce may carry, unless the topic's max.message.bytes says otherwise.",
    ),
    def("min.insync.replicas", TYPE_INT, Some("1"), Is("1"),
        "kaas keeps one copy: an acks=all answer means the batch is fsynced.",
    ),
    def("node.id", TYPE_INT, None, Setting,
        "This broker's id in the cluster (kaas: node_id).",
    ),
    def("num.partitions", TYPE_INT, Some("1"), Setting,
        "The partitions of an auto-created topic.",
    ),
    def("offsets.retention.check.interval.ms", TYPE_LONG, Some("600000"), Setting,
        "How often expired committed offsets are removed.",
    ),
    def("offsets.retention.minutes", TYPE_INT, Some("10080"), Setting,
        "Committed offsets of an empty group expire this long after their commit.",
    ),
    def("offsets.topic.num.partitions", TYPE_INT, Some("50"), Is("50"),
        "The number of __consumer_offsets partitions group ids are spread over.",
    ),
    def("offsets.topic.replication.factor", TYPE_SHORT, Some("3"), Is("1"),
        "kaas keeps one copy of the group coordinator's state, flushed before it answers.",
    ),
    def("offsets.topic.segment.bytes", TYPE_INT, Some("104857600"), Is("104857600"),
        "The segment size Kafka uses for __consumer_offsets; kaas keeps group state in its own database.",
    ),
    def("producer.id.expiration.ms", TYPE_INT, Some("86400000"), Setting,
        "A producer id with no open transaction that has not written to a partition for this long is forgotten there.",
    ),
    def("queued.max.request.bytes", TYPE_LONG, Some("-1"), Setting,
        "The most bytes of requests read and not yet answered (-1: no limit).",
    ),
    def("socket.request.max.bytes", TYPE_INT, Some("104857600"), Setting,
        "The largest request frame accepted; a larger one closes the connection.",
    ),
    def("transaction.abort.timed.out.transaction.cleanup.interval.ms", TYPE_INT, Some("10000"), Setting,
        "How often the transaction coordinator aborts transactions past their timeout.",
    ),
    def("transaction.max.timeout.ms", TYPE_INT, Some("900000"), Setting,
        "The longest transaction timeout InitProducerId accepts.",
    ),
    def("transaction.state.log.min.isr", TYPE_INT, Some("2"), Is("1"),
        "kaas keeps one copy of the transaction coordinator's state, flushed before it answers.",
    ),
    def("transaction.state.log.num.partitions", TYPE_INT, Some("50"), Setting,
        "The number of transaction coordinator shards transactional ids are spread over.",
    ),
    def("transaction.state.log.replication.factor", TYPE_SHORT, Some("3"), Is("1"),
        "kaas keeps one copy of the transaction coordinator's state, flushed before it answers.",
    ),
    def("transaction.state.log.segment.bytes", TYPE_INT, Some("104857600"), Is("104857600"),
        "The segment size Kafka uses for __transaction_state; kaas keeps coordinator state in its own database.",
    ),
    def("transactional.id.expiration.ms", TYPE_INT, Some("604800000"), Setting,
        "A transactional id with no transaction for this long is forgotten by its coordinator.",
    ),
    def("unclean.leader.election.enable", TYPE_BOOLEAN, Some("false"), Is("false"),
        "kaas never elects a leader that could lose acknowledged records.",
    ),
];

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BrokerEntry {
    pub name: &'static str,
    pub value: String,
    pub source: i8,
    pub config_type: i8,
    /// STATIC_BROKER_CONFIG (when set) before DEFAULT_CONFIG (when Kafka has a default).
    pub synonyms: Vec<Synonym>,
    pub doc: &'static str,
}

fn describe_one(d: &BrokerConfigDef, value: String) -> BrokerEntry {
    let mut synonyms = Vec::new();
    let set = d.kafka_default != Some(value.as_str());
    if set {
        synonyms.push(Synonym { name: d.name.into(), value: value.clone(), source: SOURCE_STATIC_BROKER });
    }
    if let Some(default) = d.kafka_default {
        synonyms.push(Synonym { name: d.name.into(), value: default.into(), source: SOURCE_DEFAULT });
    }
    let source = if set { SOURCE_STATIC_BROKER } else { SOURCE_DEFAULT };
    BrokerEntry { name: d.name, value, source, config_type: d.config_type, synonyms, doc: d.doc }
}

/// Every broker config of [`BROKER_CONFIGS`] with kaas's value; `settings` gives the value of each
/// `Kaas::Setting` by name (one it lacks is left out rather than guessed).
pub fn describe_broker(settings: &BTreeMap<&str, String>) -> Vec<BrokerEntry> {
    BROKER_CONFIGS
        .iter()
        .filter_map(|d| {
            let value = match d.kaas {
                Kaas::Is(v) => v.to_string(),
                Kaas::Setting => settings.get(d.name)?.clone(),
            };
            Some(describe_one(d, value))
        })
        .collect()
}

/// The names of the `Kaas::Setting` rows: what the caller must give values for.
pub fn setting_names() -> impl Iterator<Item = &'static str> {
    BROKER_CONFIGS.iter().filter(|d| d.kaas == Kaas::Setting).map(|d| d.name)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn find(all: &[BrokerEntry], name: &str) -> BrokerEntry {
        all.iter().find(|e| e.name == name).cloned().unwrap()
    }

    #[test]
    fn the_table_is_sorted_by_name_without_duplicates() {
        assert!(BROKER_CONFIGS.windows(2).all(|w| w[0].name < w[1].name));
    }

    #[test]
    fn every_config_is_documented() {
        assert!(BROKER_CONFIGS.iter().all(|d| d.doc.len() > 20), "a config without documentation");
    }

    #[test]
    fn a_value_equal_to_kafkas_default_is_default_config() {
        let settings = BTreeMap::from([("message.max.bytes", "1048588".to_string())]);
        let e = find(&describe_broker(&settings), "message.max.bytes");
        assert_eq!((e.value.as_str(), e.source, e.config_type), ("1048588", SOURCE_DEFAULT, TYPE_INT));
        assert_eq!(e.synonyms, vec![Synonym { name: e.name.into(), value: "1048588".into(), source: SOURCE_DEFAULT }]);
    }

    #[test]
    fn a_value_other_than_kafkas_default_is_static_broker_config_listed_first() {
        let settings = BTreeMap::from([("log.segment.bytes", "2000000".to_string())]);
        let e = find(&describe_broker(&settings), "log.segment.bytes");
        assert_eq!((e.value.as_str(), e.source), ("2000000", SOURCE_STATIC_BROKER));
        assert_eq!(e.synonyms.iter().map(|s| s.source).collect::<Vec<_>>(), [SOURCE_STATIC_BROKER, SOURCE_DEFAULT]);
    }

    #[test]
    fn a_config_kafka_has_no_default_for_names_no_default_synonym() {
        let settings = BTreeMap::from([("log.retention.ms", "604800000".to_string())]);
        let e = find(&describe_broker(&settings), "log.retention.ms");
        assert_eq!(e.source, SOURCE_STATIC_BROKER);
        assert_eq!(e.synonyms.len(), 1);
    }

    #[test]
    fn what_kaas_does_is_shown_whatever_the_settings() {
        let all = describe_broker(&BTreeMap::new());
        let e = find(&all, "offsets.topic.replication.factor");
        assert_eq!((e.value.as_str(), e.source, e.config_type), ("1", SOURCE_STATIC_BROKER, TYPE_SHORT));
        assert_eq!(find(&all, "log.cleaner.enable").value, "false", "kaas does not compact");
        assert_eq!(find(&all, "offsets.topic.num.partitions").source, SOURCE_DEFAULT);
        assert!(all.iter().all(|e| BROKER_CONFIGS.iter().any(|d| d.name == e.name && matches!(d.kaas, Kaas::Is(_)))));
    }

    #[test]
    fn a_setting_without_a_value_is_left_out() {
        assert!(describe_broker(&BTreeMap::new()).iter().all(|e| e.name != "message.max.bytes"));
        assert!(setting_names().any(|n| n == "message.max.bytes"));
        assert!(setting_names().all(|n| n != "log.cleaner.enable"));
    }
}
