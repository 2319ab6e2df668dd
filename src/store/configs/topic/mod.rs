//! Topic-level configs a client can set (CreateTopics, AlterConfigs, IncrementalAlterConfigs):
//! names and values checked as Apache Kafka 4.4 checks them (its `LogConfig` definitions, see
//! `table`), refused with INVALID_CONFIG where kaas cannot honour a value, and the settings a
//! topic's configs give its log and its Produce checks. Pure functions, no I/O.

pub mod alter;
pub mod describe;
pub mod table;

use std::collections::BTreeMap;

use thiserror::Error;

use crate::error_code::ResponseError;
use crate::store::cleaner::Compaction;
use crate::store::log::LogConfig;
use crate::store::recompress::Compression;
use crate::store::validate::TimestampPolicy;
use table::{ConfigDef, Honour, Kind, Valid};

/// Kafka 4.x `segment.bytes` minimum (KIP-1030 raised it from 14 to 1 MiB).
pub const MIN_SEGMENT_BYTES: i64 = 1024 * 1024;

/// The longest config value kaas stores (Kafka has no bound; every honoured value is short).
pub const MAX_VALUE_BYTES: usize = 1024;

#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum TopicConfigError {
    /// A name Kafka does not know either (Kafka's message).
    #[error("Unknown topic config name: {0}")]
    Unknown(String),
    /// A valid Kafka value kaas cannot honour: refused rather than silently ignored.
    #[error("Invalid value {value} for configuration {name}: kaas supports only {supported}")]
    Unsupported { name: String, value: String, supported: String },
    #[error("Invalid value {value} for configuration {name}: {reason}")]
    InvalidValue { name: String, value: String, reason: String },
    /// Two configs that contradict each other (Kafka's LogConfig.validateValues).
    #[error("conflict topic config setting min.compaction.lag.ms ({min}) > max.compaction.lag.ms ({max})")]
    CompactionLag { min: i64, max: i64 },
}

impl TopicConfigError {
    /// Every topic-config failure is INVALID_CONFIG (40) in Kafka.
    pub fn code(&self) -> i16 {
        ResponseError::InvalidConfig.code()
    }
}

/// The broker-wide settings that give a topic config its default (kaas's static broker config).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BrokerDefaults {
    pub retention_ms: i64,
    pub retention_bytes: i64,
    pub segment_bytes: u64,
    pub max_message_bytes: usize,
    pub timestamp_type: String,
    pub before_max_ms: i64,
    pub after_max_ms: i64,
}

impl Default for BrokerDefaults {
    /// Kafka 4.4's defaults.
    fn default() -> Self {
        BrokerDefaults {
            retention_ms: 604_800_000,
            retention_bytes: -1,
            segment_bytes: 1 << 30,
            max_message_bytes: 1_048_588,
            timestamp_type: "CreateTime".into(),
            before_max_ms: i64::MAX,
            after_max_ms: 3_600_000,
        }
    }
}

impl BrokerDefaults {
    /// kaas's broker setting behind topic config `name`, if kaas has one.
    pub fn value(&self, name: &str) -> Option<String> {
        Some(match name {
            "retention.ms" => self.retention_ms.to_string(),
            "retention.bytes" => self.retention_bytes.to_string(),
            "segment.bytes" => self.segment_bytes.to_string(),
            "max.message.bytes" => self.max_message_bytes.to_string(),
            "message.timestamp.type" => self.timestamp_type.clone(),
            "message.timestamp.before.max.ms" => self.before_max_ms.to_string(),
            "message.timestamp.after.max.ms" => self.after_max_ms.to_string(),
            _ => return None,
        })
    }
}

/// What Produce checks per topic: its batch size limit and timestamp rules.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ProduceLimits {
    pub max_message_bytes: usize,
    pub timestamp: TimestampPolicy,
    /// compression.type (with its level): None for `producer`, batches stored as sent.
    pub compression: Option<Compression>,
    /// cleanup.policy holds `delete`: DeleteRecords may delete (not Produce's, but the same
    /// effective configs decide it).
    pub deletes: bool,
}

fn invalid(name: &str, value: &str, reason: String) -> TopicConfigError {
    TopicConfigError::InvalidValue { name: name.to_string(), value: value.to_string(), reason }
}

/// Java prints a double with at least one decimal ("2.0"), and Kafka's message shows it so.
fn java_double(v: f64) -> String {
    if v.fract() == 0.0 && v.abs() < 1e15 {
        format!("{v:.1}")
    } else {
        v.to_string()
    }
}

fn check_range(def: &ConfigDef, shown: &str, v: f64) -> Result<(), TopicConfigError> {
    let reason = match def.valid {
        Valid::AtLeast(min) if v < min as f64 => format!("Value must be at least {min}"),
        Valid::Between(min, _) if v < min as f64 => format!("Value must be at least {min}"),
        Valid::Between(_, max) if v > max as f64 => format!("Value must be no more than {max}"),
        Valid::GzipLevel if !(v == -1.0 || (1.0..=9.0).contains(&v)) => {
            "Value must be between 1 and 9 or equal to -1".to_string()
        }
        _ => return Ok(()),
    };
    Err(invalid(def.name, shown, reason))
}

fn check_list(def: &ConfigDef, value: &str) -> Result<String, TopicConfigError> {
    let items: Vec<&str> = if value.is_empty() { Vec::new() } else { value.split(',').map(str::trim).collect() };
    match def.valid {
        Valid::ListOf(allowed) if items.iter().any(|i| !allowed.contains(i)) => {
            return Err(invalid(def.name, value, format!("String must be one of: {}", allowed.join(", "))));
        }
        Valid::Replicas => {
            let pair =
                |i: &str| i.split_once(':').is_some_and(|(p, b)| p.parse::<u32>().is_ok() && b.parse::<u32>().is_ok());
            if !(items == ["*"] || items.iter().all(|i| pair(i))) {
                let reason = format!(
                    "{} must be the literal '*' or a list of replicas in the following format: \
                     [partitionId]:[brokerId],[partitionId]:[brokerId],...",
                    def.name
                );
                return Err(invalid(def.name, &format!("[{}]", items.join(", ")), reason));
            }
        }
        _ => {}
    }
    Ok(items.join(","))
}

/// Checks a value against Kafka's type and validator; returns it as kaas stores it (trimmed,
/// as ConfigDef trims before parsing; numbers and booleans in canonical form).
pub fn check_value(def: &ConfigDef, raw: &str) -> Result<String, TopicConfigError> {
    if raw.len() > MAX_VALUE_BYTES {
        return Err(invalid(def.name, "(too long)", format!("kaas stores values of at most {MAX_VALUE_BYTES} bytes")));
    }
    let value = raw.trim();
    let not_a = |t: &str| invalid(def.name, raw, format!("Not a number of type {t}"));
    match def.kind {
        Kind::Int => {
            let v: i32 = value.parse().map_err(|_| not_a("INT"))?;
            check_range(def, &v.to_string(), f64::from(v))?;
            Ok(v.to_string())
        }
        Kind::Short => {
            let v: i16 = value.parse().map_err(|_| not_a("SHORT"))?;
            check_range(def, &v.to_string(), f64::from(v))?;
            Ok(v.to_string())
        }
        Kind::Long => {
            let v: i64 = value.parse().map_err(|_| not_a("LONG"))?;
            check_range(def, &v.to_string(), v as f64)?;
            Ok(v.to_string())
        }
        Kind::Double => {
            let v: f64 = value.parse().ok().filter(|v: &f64| v.is_finite()).ok_or_else(|| not_a("DOUBLE"))?;
            check_range(def, &java_double(v), v)?;
            Ok(value.to_string())
        }
        Kind::Bool => match value.to_ascii_lowercase().as_str() {
            b @ ("true" | "false") => Ok(b.to_string()),
            _ => Err(invalid(def.name, raw, "Expected value to be either true or false".into())),
        },
        Kind::Str | Kind::Class | Kind::Password => match def.valid {
            Valid::OneOf(allowed) if !allowed.contains(&value) => {
                Err(invalid(def.name, raw, format!("String must be one of: {}", allowed.join(", "))))
            }
            _ => Ok(value.to_string()),
        },
        Kind::List => check_list(def, value),
    }
}

/// The values kaas honours of `def` (None: all valid values).
fn supported(def: &ConfigDef) -> Option<Vec<String>> {
    match def.honour {
        Honour::Yes => None,
        Honour::Only(values) => Some(values.iter().map(|v| v.to_string()).collect()),
        Honour::DefaultOnly => Some(vec![check_value(def, def.default).unwrap_or_else(|_| def.default.to_string())]),
    }
}

/// Checks one config: a name Kafka knows, a value Kafka accepts, a value kaas honours.
pub fn check(name: &str, raw: &str) -> Result<String, TopicConfigError> {
    let def = table::find(name).ok_or_else(|| TopicConfigError::Unknown(name.to_string()))?;
    let value = check_value(def, raw)?;
    match supported(def) {
        Some(ok) if !ok.contains(&value) => Err(TopicConfigError::Unsupported {
            name: name.to_string(),
            value,
            supported: ok.iter().map(|v| format!("'{v}'")).collect::<Vec<_>>().join(", "),
        }),
        _ => Ok(value),
    }
}

/// Validates a topic's whole config set (unknown names first, as Kafka's LogConfig.validate);
/// returns it as stored.
pub fn validate_set(configs: &BTreeMap<String, String>) -> Result<BTreeMap<String, String>, TopicConfigError> {
    if let Some(name) = configs.keys().find(|n| table::find(n).is_none()) {
        return Err(TopicConfigError::Unknown(name.clone()));
    }
    let checked: BTreeMap<String, String> =
        configs.iter().map(|(n, v)| Ok((n.clone(), check(n, v)?))).collect::<Result<_, _>>()?;
    // Kafka's LogConfig.validateValues: the compaction lags may not contradict each other.
    let lag = |name: &str, default: i64| checked.get(name).and_then(|v| v.parse::<i64>().ok()).unwrap_or(default);
    let (min, max) = (lag("min.compaction.lag.ms", 0), lag("max.compaction.lag.ms", i64::MAX));
    if min > max {
        return Err(TopicConfigError::CompactionLag { min, max });
    }
    Ok(checked)
}

/// Validates the configs of a CreateTopics topic (entries without a value are skipped, as they
/// set nothing). The first failure is the topic's error, as in Kafka.
pub fn validate(configs: &[(String, Option<String>)]) -> Result<BTreeMap<String, String>, TopicConfigError> {
    if let Some((name, _)) = configs.iter().find(|(n, _)| table::find(n).is_none()) {
        return Err(TopicConfigError::Unknown(name.clone()));
    }
    let set = configs.iter().filter_map(|(n, v)| Some((n.clone(), v.clone()?))).collect();
    validate_set(&set)
}

/// A stored value of `name` that passes today's rules, parsed; a failing one (written by an older
/// kaas) is reported in `ignored` and the broker's setting stays, so a topic file can never stop
/// the broker from starting.
fn stored<T: std::str::FromStr>(
    configs: &BTreeMap<String, String>,
    name: &str,
    ignored: &mut Vec<TopicConfigError>,
) -> Option<T> {
    let raw = configs.get(name)?;
    match check(name, raw) {
        Ok(v) => v.parse().ok(),
        Err(e) => {
            ignored.push(e);
            None
        }
    }
}

/// The log settings of a topic: the broker's, overridden by the topic's own.
pub fn log_config_for(base: &LogConfig, configs: &BTreeMap<String, String>) -> (LogConfig, Vec<TopicConfigError>) {
    let mut out = base.clone();
    let mut ignored = Vec::new();
    if let Some(v) = stored(configs, "retention.ms", &mut ignored) {
        out.retention_ms = v;
    }
    if let Some(v) = stored(configs, "retention.bytes", &mut ignored) {
        out.retention_bytes = v;
    }
    if let Some(v) = stored(configs, "segment.bytes", &mut ignored) {
        out.segment_bytes = v;
    }
    if let Some(v) = stored(configs, "segment.ms", &mut ignored) {
        out.segment_ms = v;
    }
    if let Some(v) = stored(configs, "index.interval.bytes", &mut ignored) {
        out.index_interval_bytes = v;
    }
    if is_compacted(configs) {
        let d = base.compaction_defaults;
        out.compaction = Some(Compaction {
            min_cleanable_dirty_ratio: stored(configs, "min.cleanable.dirty.ratio", &mut ignored)
                .unwrap_or(d.min_cleanable_dirty_ratio),
            min_compaction_lag_ms: stored(configs, "min.compaction.lag.ms", &mut ignored)
                .unwrap_or(d.min_compaction_lag_ms),
            max_compaction_lag_ms: stored(configs, "max.compaction.lag.ms", &mut ignored)
                .unwrap_or(d.max_compaction_lag_ms),
            delete_retention_ms: stored(configs, "delete.retention.ms", &mut ignored).unwrap_or(d.delete_retention_ms),
        });
    } else {
        out.compaction = None;
    }
    // Kafka: retention.ms and retention.bytes delete segments only under a cleanup.policy
    // holding `delete`; a compact-only topic keeps them (its cleaner removes superseded keys).
    if !deletes_by_retention(configs) {
        (out.retention_ms, out.retention_bytes) = (-1, -1);
    }
    (out, ignored)
}

/// The topic's cleanup.policy (Kafka's default `delete`) as its list of policies.
fn cleanup_policies(configs: &BTreeMap<String, String>) -> Vec<&str> {
    match configs.get("cleanup.policy").filter(|v| check("cleanup.policy", v).is_ok()) {
        Some(v) => v.split(',').map(str::trim).filter(|p| !p.is_empty()).collect(),
        None => vec!["delete"],
    }
}

/// cleanup.policy holds `compact`: every record needs a key.
pub fn is_compacted(configs: &BTreeMap<String, String>) -> bool {
    cleanup_policies(configs).contains(&"compact")
}

/// cleanup.policy holds `delete`: retention removes old segments (and DeleteRecords may).
pub fn deletes_by_retention(configs: &BTreeMap<String, String>) -> bool {
    cleanup_policies(configs).contains(&"delete")
}

/// What Produce checks on a topic: the broker's settings, overridden by the topic's own.
pub fn produce_limits(defaults: &BrokerDefaults, configs: &BTreeMap<String, String>) -> ProduceLimits {
    let mut ignored = Vec::new();
    let timestamp_type: String =
        stored(configs, "message.timestamp.type", &mut ignored).unwrap_or_else(|| defaults.timestamp_type.clone());
    ProduceLimits {
        deletes: deletes_by_retention(configs),
        max_message_bytes: stored(configs, "max.message.bytes", &mut ignored).unwrap_or(defaults.max_message_bytes),
        compression: Compression::from_config(
            &stored::<String>(configs, "compression.type", &mut ignored).unwrap_or_else(|| "producer".into()),
            stored(configs, "compression.gzip.level", &mut ignored).unwrap_or(-1),
            stored(configs, "compression.lz4.level", &mut ignored).unwrap_or(9),
            stored(configs, "compression.zstd.level", &mut ignored).unwrap_or(3),
        ),
        timestamp: TimestampPolicy {
            compacted: is_compacted(configs),
            log_append_time: timestamp_type == "LogAppendTime",
            before_max_ms: stored(configs, "message.timestamp.before.max.ms", &mut ignored)
                .unwrap_or(defaults.before_max_ms),
            after_max_ms: stored(configs, "message.timestamp.after.max.ms", &mut ignored)
                .unwrap_or(defaults.after_max_ms),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn one(name: &str, value: &str) -> Result<BTreeMap<String, String>, TopicConfigError> {
        validate(&[(name.to_string(), Some(value.to_string()))])
    }

    fn is_invalid_value(r: Result<BTreeMap<String, String>, TopicConfigError>) -> bool {
        matches!(r, Err(TopicConfigError::InvalidValue { .. }))
    }

    #[test]
    fn segment_bytes_must_be_at_least_one_mebibyte() {
        assert!(is_invalid_value(one("segment.bytes", "0")));
        assert!(is_invalid_value(one("segment.bytes", "14")));
        assert!(is_invalid_value(one("segment.bytes", "1048575")));
        assert!(one("segment.bytes", "1048576").is_ok());
    }

    #[test]
    fn segment_bytes_must_fit_an_int() {
        assert!(one("segment.bytes", "2147483647").is_ok());
        assert!(is_invalid_value(one("segment.bytes", "2147483648")));
        assert!(is_invalid_value(one("segment.bytes", "1000000000000")));
    }

    #[test]
    fn retention_ms_is_at_least_minus_one() {
        assert!(one("retention.ms", "-1").is_ok());
        assert!(one("retention.ms", "9223372036854775807").is_ok());
        assert!(is_invalid_value(one("retention.ms", "-2")));
        assert!(is_invalid_value(one("retention.ms", "9223372036854775808")));
    }

    #[test]
    fn retention_bytes_is_any_long() {
        assert!(one("retention.bytes", "-5").is_ok());
        assert!(one("retention.bytes", "1000000000000").is_ok());
        assert!(is_invalid_value(one("retention.bytes", "1e9")));
    }

    #[test]
    fn max_message_bytes_is_a_non_negative_int() {
        assert!(one("max.message.bytes", "0").is_ok());
        assert!(is_invalid_value(one("max.message.bytes", "-1")));
        assert!(is_invalid_value(one("max.message.bytes", "4294967296")));
    }

    fn is_unsupported(r: Result<BTreeMap<String, String>, TopicConfigError>) -> bool {
        matches!(r, Err(TopicConfigError::Unsupported { .. }))
    }

    #[test]
    fn min_insync_replicas_is_at_least_one_and_kaas_keeps_one_copy() {
        assert!(one("min.insync.replicas", "1").is_ok());
        assert!(is_invalid_value(one("min.insync.replicas", "0")));
        assert!(is_unsupported(one("min.insync.replicas", "2")));
    }

    #[test]
    fn a_min_compaction_lag_above_the_max_is_a_conflict_as_in_kafka() {
        let set = |min: &str, max: &str| {
            validate_set(&BTreeMap::from([
                ("min.compaction.lag.ms".to_string(), min.to_string()),
                ("max.compaction.lag.ms".to_string(), max.to_string()),
            ]))
        };
        let e = set("5000", "1000").unwrap_err();
        assert_eq!(
            e.to_string(),
            "conflict topic config setting min.compaction.lag.ms (5000) > max.compaction.lag.ms (1000)"
        );
        assert_eq!(e.code(), 40);
        assert!(set("1000", "1000").is_ok());
        let (log, _) = log_config_for(
            &LogConfig::default(),
            &BTreeMap::from([
                ("cleanup.policy".to_string(), "compact".to_string()),
                ("max.compaction.lag.ms".to_string(), "60000".to_string()),
                ("delete.retention.ms".to_string(), "5".to_string()),
            ]),
        );
        let c = log.compaction.expect("compacted");
        assert_eq!((c.max_compaction_lag_ms, c.delete_retention_ms, c.min_cleanable_dirty_ratio), (60_000, 5, 0.5));
        assert!(log_config_for(&LogConfig::default(), &BTreeMap::new()).0.compaction.is_none());
    }

    #[test]
    fn cleanup_policy_is_a_list_of_compact_and_delete() {
        assert!(is_invalid_value(one("cleanup.policy", "remove")));
        assert!(is_invalid_value(one("cleanup.policy", "delete,shred")));
        assert_eq!(one("cleanup.policy", " delete ").unwrap()["cleanup.policy"], "delete");
    }

    #[test]
    fn cleanup_policy_compact_is_accepted_and_stops_retention_unless_delete_is_listed_too() {
        let compact = one("cleanup.policy", "compact").unwrap();
        assert!(is_compacted(&compact) && !deletes_by_retention(&compact));
        let (log, _) = log_config_for(&LogConfig::default(), &compact);
        assert_eq!((log.retention_ms, log.retention_bytes), (-1, -1), "a compact-only topic keeps its segments");
        let both = one("cleanup.policy", "delete , compact").unwrap();
        assert!(is_compacted(&both) && deletes_by_retention(&both));
        let (log, _) = log_config_for(&LogConfig::default(), &both);
        assert_eq!(log.retention_ms, LogConfig::default().retention_ms);
        assert!(!is_compacted(&BTreeMap::new()) && deletes_by_retention(&BTreeMap::new()), "Kafka's default: delete");
        assert!(produce_limits(&BrokerDefaults::default(), &compact).timestamp.compacted);
        // Kafka 4.4 (KIP-1161): an empty list neither deletes nor compacts.
        let none = one("cleanup.policy", "").unwrap();
        assert!(!is_compacted(&none) && !deletes_by_retention(&none));
    }

    #[test]
    fn timestamp_type_and_compression_type_are_enumerations() {
        assert!(one("message.timestamp.type", "LogAppendTime").is_ok());
        assert!(is_invalid_value(one("message.timestamp.type", "logappendtime")));
        assert!(one("compression.type", "producer").is_ok());
        assert!(is_invalid_value(one("compression.type", "brotli")));
    }

    #[test]
    fn compression_type_and_levels_reach_the_produce_path() {
        let configs = BTreeMap::from([
            ("compression.type".to_string(), "zstd".to_string()),
            ("compression.zstd.level".to_string(), "7".to_string()),
        ]);
        let limits = produce_limits(&BrokerDefaults::default(), &configs);
        assert_eq!(limits.compression, Some(Compression { codec: crate::store::records::CODEC_ZSTD, level: 7 }));
        assert_eq!(produce_limits(&BrokerDefaults::default(), &BTreeMap::new()).compression, None, "producer");
        assert!(one("compression.type", "lz4").is_ok());
        assert!(is_invalid_value(one("compression.zstd.level", "23")));
    }

    #[test]
    fn configs_kaas_does_not_implement_are_accepted_at_kafkas_default_only() {
        assert!(one("segment.jitter.ms", "0").is_ok());
        assert!(one("preallocate", "FALSE").is_ok());
        assert!(is_unsupported(one("preallocate", "true")));
        assert!(is_unsupported(one("remote.storage.enable", "true")));
        assert!(one("follower.replication.throttled.replicas", "").is_ok());
    }

    #[test]
    fn flush_intervals_are_honoured_by_fsync_before_every_ack() {
        assert!(one("flush.messages", "1").is_ok());
        assert!(one("flush.ms", "1000").is_ok());
        assert!(is_invalid_value(one("flush.messages", "0")));
    }

    #[test]
    fn validators_give_kafkas_messages() {
        let msg = |n: &str, v: &str| one(n, v).unwrap_err().to_string();
        assert_eq!(
            msg("min.cleanable.dirty.ratio", "2"),
            "Invalid value 2.0 for configuration min.cleanable.dirty.ratio: Value must be no more than 1"
        );
        assert_eq!(
            msg("compression.gzip.level", "-3"),
            "Invalid value -3 for configuration compression.gzip.level: Value must be between 1 and 9 or equal to -1"
        );
        assert_eq!(
            msg("preallocate", "yes"),
            "Invalid value yes for configuration preallocate: Expected value to be either true or false"
        );
        assert_eq!(
            msg("segment.bytes", "10"),
            "Invalid value 10 for configuration segment.bytes: Value must be at least 1048576"
        );
        assert_eq!(
            msg("compression.lz4.level", "-3"),
            "Invalid value -3 for configuration compression.lz4.level: Value must be at least 1"
        );
        assert!(msg("leader.replication.throttled.replicas", "-3").starts_with(
            "Invalid value [-3] for configuration leader.replication.throttled.replicas: \
             leader.replication.throttled.replicas must be the literal '*'"
        ));
    }

    #[test]
    fn values_longer_than_the_bound_are_invalid_config() {
        let long = "1".repeat(MAX_VALUE_BYTES + 1);
        assert!(is_invalid_value(one("retention.ms", &long)));
    }

    #[test]
    fn unknown_names_are_reported_before_bad_values() {
        let set = BTreeMap::from([("a.unknown".to_string(), "1".to_string()), ("retention.ms".into(), "x".into())]);
        assert_eq!(validate_set(&set), Err(TopicConfigError::Unknown("a.unknown".into())));
    }

    #[test]
    fn topic_values_override_the_broker_for_produce() {
        let d = BrokerDefaults::default();
        assert_eq!(produce_limits(&d, &BTreeMap::new()).max_message_bytes, 1_048_588);
        let set = BTreeMap::from([
            ("max.message.bytes".to_string(), "5000000".to_string()),
            ("message.timestamp.type".into(), "LogAppendTime".into()),
            ("message.timestamp.after.max.ms".into(), "10".into()),
        ]);
        let l = produce_limits(&d, &set);
        assert_eq!((l.max_message_bytes, l.timestamp.log_append_time, l.timestamp.after_max_ms), (5_000_000, true, 10));
        assert_eq!(l.timestamp.before_max_ms, i64::MAX);
    }

    #[test]
    fn non_numeric_values_are_invalid_config() {
        for name in ["segment.bytes", "retention.ms", "retention.bytes", "max.message.bytes"] {
            let e = one(name, "ten").unwrap_err();
            assert_eq!(e.code(), ResponseError::InvalidConfig.code(), "{name}");
        }
        assert!(one("segment.bytes", " 1048576 ").is_ok(), "Kafka trims values before parsing");
    }

    #[test]
    fn unknown_config_names_are_invalid_config() {
        assert_eq!(one("segment.byte", "1"), Err(TopicConfigError::Unknown("segment.byte".into())));
        assert_eq!(one("segment.byte", "1").unwrap_err().code(), ResponseError::InvalidConfig.code());
    }

    #[test]
    fn kafka_configs_kaas_does_not_implement_are_refused() {
        let e = one("segment.jitter.ms", "1000").unwrap_err();
        assert!(matches!(&e, TopicConfigError::Unsupported { name, .. } if name == "segment.jitter.ms"));
        assert_eq!(e.code(), ResponseError::InvalidConfig.code());
    }

    #[test]
    fn entries_without_a_value_set_nothing() {
        assert!(validate(&[("retention.ms".into(), None)]).unwrap().is_empty());
    }

    #[test]
    fn stored_values_that_fail_the_rules_fall_back_to_the_broker_setting() {
        let base = LogConfig::default();
        let stored = BTreeMap::from([
            ("segment.bytes".to_string(), "1000000000000".to_string()),
            ("retention.ms".to_string(), "60000".to_string()),
        ]);
        let (cfg, ignored) = log_config_for(&base, &stored);
        assert_eq!((cfg.segment_bytes, cfg.retention_ms), (base.segment_bytes, 60000));
        assert_eq!(ignored.len(), 1);
        let stored = BTreeMap::from([
            ("segment.bytes".to_string(), "2097152".to_string()),
            ("index.interval.bytes".to_string(), "100".to_string()),
        ]);
        let cfg = log_config_for(&base, &stored).0;
        assert_eq!((cfg.segment_bytes, cfg.index_interval_bytes), (2_097_152, 100));
    }
}
