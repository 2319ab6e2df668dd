//! Topic-level configs a client can set (CreateTopics): names and value ranges checked as Apache
//! Kafka 4.x checks them (its `LogConfig` / `TopicConfig` definitions), and the log settings of a
//! topic derived from them. Pure functions, no I/O.

use std::collections::BTreeMap;

use thiserror::Error;

use super::log::LogConfig;
use crate::error_code::ResponseError;

/// Kafka 4.x `segment.bytes` minimum (KIP-1030 raised it from 14 to 1 MiB).
pub const MIN_SEGMENT_BYTES: i64 = 1024 * 1024;

#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum TopicConfigError {
    /// A name Kafka does not know either (Kafka: "Unknown topic config name").
    #[error("Unknown topic config name: {0}")]
    Unknown(String),
    /// A name Kafka knows but kaas does not implement: refused rather than silently ignored.
    #[error("Topic config {0} is not supported by kaas")]
    Unsupported(String),
    #[error("Invalid value {value} for configuration {name}: {reason}")]
    InvalidValue { name: String, value: String, reason: String },
}

impl TopicConfigError {
    /// Every topic-config failure is INVALID_CONFIG (40) in Kafka's CreateTopics.
    pub fn code(&self) -> i16 {
        ResponseError::InvalidConfig.code()
    }
}

/// The rule of one config: its Java type and validator in Kafka's LogConfig.
#[derive(Debug, Clone, Copy)]
enum Rule {
    /// INT with `atLeast(min)` (Kafka parses with Integer.parseInt, so at most i32::MAX).
    Int { min: i64 },
    /// LONG with `atLeast(min)`.
    Long { min: i64 },
    /// LONG without a validator.
    AnyLong,
    /// STRING with `ValidString.in(...)`.
    OneOf(&'static [&'static str]),
    /// LIST with `ValidList.in(...)`.
    ListOf(&'static [&'static str]),
}

/// The configs kaas implements or accepts, with Kafka 4.x's rule for each.
const SUPPORTED: &[(&str, Rule)] = &[
    ("cleanup.policy", Rule::ListOf(&["compact", "delete"])),
    ("compression.type", Rule::OneOf(&["uncompressed", "zstd", "lz4", "snappy", "gzip", "producer"])),
    ("max.message.bytes", Rule::Int { min: 0 }),
    ("message.timestamp.type", Rule::OneOf(&["CreateTime", "LogAppendTime"])),
    ("min.insync.replicas", Rule::Int { min: 1 }),
    ("retention.bytes", Rule::AnyLong),
    ("retention.ms", Rule::Long { min: -1 }),
    ("segment.bytes", Rule::Int { min: MIN_SEGMENT_BYTES }),
];

/// Every other topic config name of Apache Kafka 4.x (TopicConfig): valid there, not in kaas.
const KAFKA_ONLY: &[&str] = &[
    "compression.gzip.level",
    "compression.lz4.level",
    "compression.zstd.level",
    "delete.retention.ms",
    "file.delete.delay.ms",
    "flush.messages",
    "flush.ms",
    "follower.replication.throttled.replicas",
    "index.interval.bytes",
    "leader.replication.throttled.replicas",
    "local.retention.bytes",
    "local.retention.ms",
    "max.compaction.lag.ms",
    "message.timestamp.after.max.ms",
    "message.timestamp.before.max.ms",
    "min.cleanable.dirty.ratio",
    "min.compaction.lag.ms",
    "preallocate",
    "remote.log.copy.disable",
    "remote.log.delete.on.disable",
    "remote.storage.enable",
    "segment.index.bytes",
    "segment.jitter.ms",
    "segment.ms",
    "unclean.leader.election.enable",
];

fn invalid(name: &str, value: &str, reason: String) -> TopicConfigError {
    TopicConfigError::InvalidValue { name: name.to_string(), value: value.to_string(), reason }
}

/// Checks one value against its rule; returns the value as Kafka stores it (trimmed, as
/// ConfigDef trims before parsing).
fn check(name: &str, rule: Rule, raw: &str) -> Result<String, TopicConfigError> {
    let value = raw.trim();
    match rule {
        Rule::Int { min } => {
            let v: i32 = value.parse().map_err(|_| invalid(name, raw, "Not a number of type INT".into()))?;
            if i64::from(v) < min {
                return Err(invalid(name, raw, format!("Value must be at least {min}")));
            }
        }
        Rule::Long { min } => {
            let v: i64 = value.parse().map_err(|_| invalid(name, raw, "Not a number of type LONG".into()))?;
            if v < min {
                return Err(invalid(name, raw, format!("Value must be at least {min}")));
            }
        }
        Rule::AnyLong => {
            value.parse::<i64>().map_err(|_| invalid(name, raw, "Not a number of type LONG".into()))?;
        }
        Rule::OneOf(allowed) => {
            if !allowed.contains(&value) {
                return Err(invalid(name, raw, format!("String must be one of: {}", allowed.join(", "))));
            }
        }
        Rule::ListOf(allowed) => {
            let items: Vec<&str> = value.split(',').map(str::trim).collect();
            if items.iter().any(|i| !allowed.contains(i)) {
                return Err(invalid(name, raw, format!("String must be one of: {}", allowed.join(", "))));
            }
            return Ok(items.join(","));
        }
    }
    Ok(value.to_string())
}

/// Validates the configs of a CreateTopics topic (entries without a value are skipped, as they
/// set nothing). The first failure is the topic's error, as in Kafka.
pub fn validate(configs: &[(String, Option<String>)]) -> Result<BTreeMap<String, String>, TopicConfigError> {
    let mut out = BTreeMap::new();
    for (name, value) in configs {
        let Some(rule) = SUPPORTED.iter().find(|(n, _)| n == name).map(|(_, r)| *r) else {
            if KAFKA_ONLY.contains(&name.as_str()) {
                return Err(TopicConfigError::Unsupported(name.clone()));
            }
            return Err(TopicConfigError::Unknown(name.clone()));
        };
        if let Some(v) = value {
            out.insert(name.clone(), check(name, rule, v)?);
        }
    }
    Ok(out)
}

/// The log settings of a topic: the broker's, overridden by the topic's own. A stored value that
/// does not pass today's rules (written by an older kaas) is ignored and reported, so a topic
/// file can never stop the broker from starting.
pub fn log_config_for(base: &LogConfig, configs: &BTreeMap<String, String>) -> (LogConfig, Vec<TopicConfigError>) {
    let mut out = base.clone();
    let mut ignored = Vec::new();
    let mut get = |name: &str| -> Option<i64> {
        let raw = configs.get(name)?;
        let rule = SUPPORTED.iter().find(|(n, _)| *n == name).map(|(_, r)| *r)?;
        match check(name, rule, raw) {
            Ok(v) => v.parse().ok(),
            Err(e) => {
                ignored.push(e);
                None
            }
        }
    };
    if let Some(v) = get("retention.ms") {
        out.retention_ms = v;
    }
    if let Some(v) = get("retention.bytes") {
        out.retention_bytes = v;
    }
    if let Some(v) = get("segment.bytes").and_then(|v| u64::try_from(v).ok()) {
        out.segment_bytes = v;
    }
    (out, ignored)
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

    #[test]
    fn min_insync_replicas_is_at_least_one() {
        assert!(one("min.insync.replicas", "1").is_ok());
        assert!(is_invalid_value(one("min.insync.replicas", "0")));
    }

    #[test]
    fn cleanup_policy_is_a_list_of_compact_and_delete() {
        assert_eq!(one("cleanup.policy", "delete , compact").unwrap()["cleanup.policy"], "delete,compact");
        assert!(one("cleanup.policy", "compact").is_ok());
        assert!(is_invalid_value(one("cleanup.policy", "remove")));
        assert!(is_invalid_value(one("cleanup.policy", "delete,shred")));
    }

    #[test]
    fn timestamp_type_and_compression_type_are_enumerations() {
        assert!(one("message.timestamp.type", "LogAppendTime").is_ok());
        assert!(is_invalid_value(one("message.timestamp.type", "logappendtime")));
        assert!(one("compression.type", "zstd").is_ok());
        assert!(is_invalid_value(one("compression.type", "brotli")));
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
        let e = one("segment.ms", "1000").unwrap_err();
        assert_eq!(
            (e.clone(), e.code()),
            (TopicConfigError::Unsupported("segment.ms".into()), ResponseError::InvalidConfig.code())
        );
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
        let stored = BTreeMap::from([("segment.bytes".to_string(), "2097152".to_string())]);
        assert_eq!(log_config_for(&base, &stored).0.segment_bytes, 2_097_152);
    }
}
