//! Dynamic broker configs: what `kafka-configs --entity-type brokers --alter` (AlterConfigs and
//! IncrementalAlterConfigs of a BROKER resource) sets at runtime, for one broker (`--entity-name
//! N`, Kafka's DYNAMIC_BROKER_CONFIG) or as the cluster default (`--entity-default`, an empty
//! name: DYNAMIC_DEFAULT_BROKER_CONFIG). Checked as Apache Kafka 4.4's broker checks them
//! (DynamicBrokerConfig.validateConfigs: static configs first, then types, then configs it takes
//! per broker only), then by what kaas does with each (`table::Effect`): the log defaults become
//! the defaults of every topic without its own value (`topic_layer`), configs of machinery kaas
//! does not have are stored, kaas's own start-time settings are refused as static. A name Kafka
//! does not know is a custom config, stored and ignored, as in Kafka. Pure, no I/O; the file is
//! store::configs::broker_store.

pub mod table;

use std::borrow::Cow;
use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use thiserror::Error;

use super::topic::alter::{apply_ops, check_shape, AlterError, AlterOp, OP_APPEND, OP_DELETE};
use super::topic::table::{ConfigDef, Honour, Kind};
use super::topic::{self as topic_config, check_value, TopicConfigError};
use super::{ConfigEntry, Synonym, SOURCE_DEFAULT, SOURCE_DYNAMIC_BROKER, SOURCE_DYNAMIC_DEFAULT_BROKER};
use crate::error_code::ResponseError;
use table::{DynamicDef, Effect, DYNAMIC_CONFIGS};

/// A resource's dynamic configs, by name.
pub type ConfigMap = BTreeMap<String, String>;

/// The most configs one BROKER resource (a broker, or the cluster default) holds on kaas.
pub const MAX_CONFIGS_PER_RESOURCE: usize = 1000;
/// The longest config name kaas stores (Kafka has no bound; its own are under 80 bytes).
pub const MAX_NAME_BYTES: usize = 255;

/// The cluster-wide dynamic defaults a new Apache Kafka 4.4 cluster has: its controller records
/// `min.insync.replicas` at bootstrap (KIP-966, eligible leader replicas), so brokers and topics
/// describe it as DYNAMIC_DEFAULT_BROKER_CONFIG (checked against Kafka 4.4: `kafka-configs
/// --entity-type brokers --entity-default --describe`). kaas's value is the same, 1.
pub const CLUSTER_DEFAULTS: &[(&str, &str)] = &[("min.insync.replicas", "1")];

/// Every broker's dynamic configs, as the file on the shared disk holds them.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct DynamicConfigs {
    /// The cluster default (an empty BROKER name).
    #[serde(default)]
    pub cluster: ConfigMap,
    /// Per broker, by node id (a string: JSON keys are).
    #[serde(default)]
    pub brokers: BTreeMap<String, ConfigMap>,
}

impl DynamicConfigs {
    /// The cluster default with the values every cluster has ([`CLUSTER_DEFAULTS`]).
    pub fn cluster_view(&self) -> ConfigMap {
        let mut out = self.cluster.clone();
        for (name, value) in CLUSTER_DEFAULTS {
            out.entry(name.to_string()).or_insert_with(|| value.to_string());
        }
        out
    }

    /// Broker `node`'s own configs.
    pub fn broker(&self, node: i32) -> ConfigMap {
        self.brokers.get(&node.to_string()).cloned().unwrap_or_default()
    }

    /// The resource's configs: the cluster default (`None`) or broker `node`'s.
    pub fn resource(&self, node: Option<i32>) -> ConfigMap {
        match node {
            None => self.cluster.clone(),
            Some(n) => self.broker(n),
        }
    }

    /// Sets the resource's configs (an empty set removes a broker's entry).
    pub fn set_resource(&mut self, node: Option<i32>, configs: ConfigMap) {
        match node {
            None => self.cluster = configs,
            Some(n) if configs.is_empty() => {
                self.brokers.remove(&n.to_string());
            }
            Some(n) => {
                self.brokers.insert(n.to_string(), configs);
            }
        }
    }

    /// The topic-config defaults broker `node` gives every topic without its own value: each
    /// log config's topic synonym, the broker's own value over the cluster default (Kafka's
    /// order), as topic configs (store::configs::topic) read them.
    pub fn topic_layer(&self, node: i32) -> ConfigMap {
        let mut out = ConfigMap::new();
        for (name, value) in self.cluster.iter().chain(self.broker(node).iter()) {
            if let Some((topic, value)) = as_topic(name, value) {
                out.insert(topic.to_string(), value);
            }
        }
        out
    }
}

/// The topic config dynamic broker config `name` defaults, and the value it gives it: Kafka
/// turns a negative `log.retention.ms` into `retention.ms` -1 (keep forever).
pub fn as_topic(name: &str, value: &str) -> Option<(&'static str, String)> {
    let Effect::Topic(topic) = table::find(name)?.effect else { return None };
    let value = match (topic, value.parse::<i64>()) {
        ("retention.ms", Ok(v)) if v < 0 => "-1".to_string(),
        _ => value.to_string(),
    };
    Some((topic, value))
}

#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum DynamicError {
    /// Kafka's message for a static config (and kaas's own start-time settings).
    #[error("Cannot update these configs dynamically: [{}]", .0.join(", "))]
    NotDynamic(Vec<String>),
    #[error("Cannot update these configs at default cluster level, broker id must be specified: [{}]", .0.join(", "))]
    PerBroker(Vec<String>),
    /// A value Kafka's ConfigDef refuses (its message).
    #[error("{0}")]
    Invalid(TopicConfigError),
    /// A valid Kafka value kaas cannot honour.
    #[error("{0}")]
    Unsupported(TopicConfigError),
    #[error("Broker-level min.insync.replicas cannot be altered while ELR is enabled.")]
    BrokerMinInsyncReplicas,
    #[error("Config value {op} is not allowed for config key: {name}")]
    NotList { op: &'static str, name: String },
    #[error("{0}")]
    Shape(AlterError),
    #[error("kaas stores at most {MAX_CONFIGS_PER_RESOURCE} dynamic configs per broker resource")]
    TooMany,
    #[error("kaas stores config names of at most {MAX_NAME_BYTES} bytes")]
    NameTooLong,
}

impl DynamicError {
    pub fn code(&self) -> i16 {
        match self {
            DynamicError::Unsupported(_) | DynamicError::BrokerMinInsyncReplicas | DynamicError::NotList { .. } => {
                ResponseError::InvalidConfig.code()
            }
            DynamicError::Shape(e) => e.code(),
            DynamicError::TooMany => ResponseError::PolicyViolation.code(),
            _ => ResponseError::InvalidRequest.code(),
        }
    }
}

/// The topic-config shape of a broker config, for `check_value` (Kafka's ConfigDef messages).
fn as_config_def(d: &DynamicDef) -> ConfigDef {
    ConfigDef {
        name: d.name,
        kind: d.kind,
        valid: d.valid,
        default: d.default.unwrap_or(""),
        synonym: None,
        honour: Honour::Yes,
        doc: "",
    }
}

/// Kafka's static broker configs, kaas's start-time ones and per-listener overrides (kaas
/// changes no listener at runtime).
fn is_static(name: &str) -> bool {
    match table::find(name) {
        Some(d) => d.effect == Effect::Static,
        None => table::is_kafka_static(name) || name.starts_with("listener.name."),
    }
}

/// One set value checked: Kafka's type and validator, then what kaas honours. Returns it as
/// stored.
fn check_one(name: &str, raw: &str, per_broker: bool) -> Result<String, DynamicError> {
    let Some(d) = table::find(name) else {
        // A custom config: stored as given (bounded), as Kafka stores it.
        return if raw.len() > topic_config::MAX_VALUE_BYTES {
            Err(DynamicError::Invalid(TopicConfigError::InvalidValue {
                name: name.to_string(),
                value: "(too long)".into(),
                reason: format!("kaas stores values of at most {} bytes", topic_config::MAX_VALUE_BYTES),
            }))
        } else {
            Ok(raw.to_string())
        };
    };
    let value = check_value(&as_config_def(d), raw).map_err(DynamicError::Invalid)?;
    match d.effect {
        Effect::Fixed(only) if value != only => Err(DynamicError::Unsupported(TopicConfigError::Unsupported {
            name: name.to_string(),
            value,
            supported: format!("'{only}'"),
        })),
        // Kafka 4.4 refuses it per broker while eligible leader replicas are on, as they are.
        Effect::Topic("min.insync.replicas") if per_broker => Err(DynamicError::BrokerMinInsyncReplicas),
        Effect::Topic(_) => {
            let (topic, topic_value) = as_topic(name, &value).unwrap_or(("", value.clone()));
            topic_config::check(topic, &topic_value).map_err(|e| rename(e, name))?;
            Ok(value)
        }
        _ => Ok(value),
    }
}

/// A topic config's refusal, as the broker config's.
fn rename(e: TopicConfigError, name: &str) -> DynamicError {
    match e {
        TopicConfigError::Unsupported { value, supported, .. } => {
            DynamicError::Unsupported(TopicConfigError::Unsupported { name: name.to_string(), value, supported })
        }
        TopicConfigError::InvalidValue { value, reason, .. } => {
            DynamicError::Invalid(TopicConfigError::InvalidValue { name: name.to_string(), value, reason })
        }
        other => DynamicError::Invalid(other),
    }
}

/// A BROKER resource's configs after a change: `current` with `ops` applied (`replace`: the
/// ops are the whole new set, AlterConfigs), for one broker (`per_broker`) or the cluster
/// default. Checked in Kafka's order: the request's shape, static configs, values, configs
/// Kafka takes per broker only; then kaas's bounds.
pub fn alter(current: &ConfigMap, ops: &[AlterOp], replace: bool, per_broker: bool) -> Result<ConfigMap, DynamicError> {
    check_shape(ops).map_err(DynamicError::Shape)?;
    let set: Vec<&AlterOp> = ops.iter().filter(|o| o.op != OP_DELETE).collect();
    if set.iter().any(|o| o.name.len() > MAX_NAME_BYTES) {
        return Err(DynamicError::NameTooLong);
    }
    let fixed: Vec<String> = set.iter().filter(|o| is_static(&o.name)).map(|o| o.name.clone()).collect();
    if !fixed.is_empty() {
        return Err(DynamicError::NotDynamic(fixed));
    }
    let mut out = if replace { ConfigMap::new() } else { current.clone() };
    apply_ops(&mut out, ops, |name, op| {
        let def = table::find(name).filter(|d| d.kind == Kind::List);
        let op = if op == OP_APPEND { "append" } else { "subtract" };
        def.map(|d| d.default.unwrap_or("")).ok_or_else(|| DynamicError::NotList { op, name: name.to_string() })
    })?;
    for o in &set {
        if let Some(raw) = out.get(&o.name).cloned() {
            let checked = check_one(&o.name, &raw, per_broker)?;
            out.insert(o.name.clone(), checked);
        }
    }
    let only_per_broker: Vec<String> = set
        .iter()
        .filter(|o| !per_broker && table::find(&o.name).is_some_and(|d| d.per_broker))
        .map(|o| o.name.clone())
        .collect();
    if !only_per_broker.is_empty() {
        return Err(DynamicError::PerBroker(only_per_broker));
    }
    if out.len() > MAX_CONFIGS_PER_RESOURCE && out.len() > current.len() {
        return Err(DynamicError::TooMany);
    }
    Ok(out)
}

/// What a dynamic config means on kaas (DescribeConfigs' documentation).
pub fn doc(d: &DynamicDef) -> Cow<'static, str> {
    match d.effect {
        Effect::Topic(t) => Cow::Owned(format!(
            "The default of topic config {t} for every topic without its own value; changed at runtime."
        )),
        Effect::Stored(why) => Cow::Borrowed(why.why()),
        Effect::Static => {
            Cow::Borrowed("kaas reads this at start, from its configuration file; not changed at runtime.")
        }
        Effect::Fixed(v) => Cow::Owned(format!("kaas always does {v}; only that value is taken.")),
    }
}

/// A dynamic value's entry where the broker describes none of its own: Kafka's type and
/// default, or for a custom config no value and no type (Kafka shows it so).
fn extra_entry(name: &str, value: &str, source: i8) -> ConfigEntry {
    let name: Cow<'static, str> = Cow::Owned(name.to_string());
    match table::find(&name) {
        Some(d) => {
            let mut synonyms = vec![Synonym::new(name.to_string(), value, source)];
            if let Some(default) = d.default.filter(|_| source != SOURCE_DYNAMIC_DEFAULT_BROKER) {
                synonyms.push(Synonym::new(d.name, default, SOURCE_DEFAULT));
            }
            ConfigEntry {
                name,
                value: Some(value.to_string()),
                source,
                config_type: d.kind as i8,
                read_only: d.effect == Effect::Static,
                synonyms,
                doc: doc(d),
            }
        }
        None => ConfigEntry {
            name: name.clone(),
            value: None,
            source,
            config_type: 0,
            read_only: true,
            synonyms: vec![Synonym { name: name.to_string(), value: None, source }],
            doc: Cow::Borrowed("A custom config: stored and described, no effect on kaas."),
        },
    }
}

/// DescribeConfigs of the cluster default (a BROKER resource with an empty name): its values.
pub fn describe_cluster(all: &DynamicConfigs) -> Vec<ConfigEntry> {
    all.cluster_view()
        .iter()
        .map(|(name, value)| {
            let mut e = extra_entry(name, value, SOURCE_DYNAMIC_DEFAULT_BROKER);
            e.synonyms.truncate(1);
            e
        })
        .collect()
}

/// DescribeConfigs of broker `node`: `base` (its static configs, store::configs::broker) with
/// the dynamic values over them, its own before the cluster's, as Kafka lists synonyms; the
/// dynamic values of configs `base` does not list are added. Sorted by name.
pub fn describe_broker(base: Vec<ConfigEntry>, all: &DynamicConfigs, node: i32) -> Vec<ConfigEntry> {
    let (own, cluster) = (all.broker(node), all.cluster_view());
    let mut out: Vec<ConfigEntry> = base
        .into_iter()
        .map(|mut e| {
            if let Some(d) = table::find(&e.name) {
                e.read_only = d.effect == Effect::Static;
            }
            let mut dynamic = Vec::new();
            for (values, source) in [(&own, SOURCE_DYNAMIC_BROKER), (&cluster, SOURCE_DYNAMIC_DEFAULT_BROKER)] {
                if let Some(v) = values.get(e.name.as_ref()) {
                    dynamic.push(Synonym::new(e.name.to_string(), v.clone(), source));
                }
            }
            if let Some(first) = dynamic.first() {
                (e.value, e.source) = (first.value.clone(), first.source);
                dynamic.append(&mut e.synonyms);
                e.synonyms = dynamic;
            }
            e
        })
        .collect();
    for (values, source) in [(&own, SOURCE_DYNAMIC_BROKER), (&cluster, SOURCE_DYNAMIC_DEFAULT_BROKER)] {
        for (name, value) in values {
            if out.iter().any(|e| e.name == name.as_str()) {
                continue;
            }
            let mut e = extra_entry(name, value, source);
            if source == SOURCE_DYNAMIC_BROKER {
                if let Some(v) = cluster.get(name) {
                    e.synonyms.insert(1, Synonym::new(name.clone(), v.clone(), SOURCE_DYNAMIC_DEFAULT_BROKER));
                }
            }
            out.push(e);
        }
    }
    // The configs kaas stores without effect, at Kafka's default while unset, so that a value
    // deleted shows as DEFAULT_CONFIG, as on Kafka.
    for d in DYNAMIC_CONFIGS.iter().filter(|d| matches!(d.effect, Effect::Stored(_))) {
        if !out.iter().any(|e| e.name == d.name) {
            let synonyms = d.default.map(|v| Synonym::new(d.name, v, SOURCE_DEFAULT)).into_iter().collect();
            out.push(ConfigEntry {
                name: Cow::Borrowed(d.name),
                value: d.default.map(str::to_string),
                source: SOURCE_DEFAULT,
                config_type: d.kind as i8,
                read_only: false,
                synonyms,
                doc: doc(d),
            });
        }
    }
    out.sort_by(|a, b| a.name.cmp(&b.name));
    out
}

/// The dynamic values behind topic config `topic` on broker `node`: the broker config's name and
/// its own and cluster values (as set, before `as_topic`).
pub fn topic_synonyms(all: &DynamicConfigs, node: i32, topic: &str) -> Vec<Synonym> {
    let Some(d) = table::for_topic(topic) else { return Vec::new() };
    let (own, cluster) = (all.broker(node), all.cluster_view());
    [(&own, SOURCE_DYNAMIC_BROKER), (&cluster, SOURCE_DYNAMIC_DEFAULT_BROKER)]
        .into_iter()
        .filter_map(|(values, source)| values.get(d.name).map(|v| Synonym::new(d.name, v.clone(), source)))
        .collect()
}

#[cfg(test)]
mod tests;
