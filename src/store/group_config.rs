//! Group configs (Kafka's GroupConfig, KIP-848 / KIP-932 / KIP-1071): what DescribeConfigs of a
//! GROUP resource lists and what IncrementalAlterConfigs / AlterConfigs of one answer.
//!
//! Kafka 4.4 lists every non-internal config of its GroupConfig for any group name, known or not
//! (ConfigHelper does not look the group up), an empty name being INVALID_REQUEST "Group name must
//! not be empty". A config no group overrides has the DEFAULT_CONFIG source and the broker's
//! value. kaas keeps no per-group overrides: every value is the broker's (`consumer.*` from the
//! `group_consumer_*` settings, `consumer.assignment.interval.ms` 0 because kaas computes a new
//! target assignment in the heartbeat that bumps the group epoch), and the share and streams
//! group configs are Kafka's defaults (kaas has neither kind of group). A change is refused with
//! INVALID_CONFIG: an unknown name with Kafka's message (GroupConfig.validateNames), a known one
//! because kaas cannot hold it; deleting a config is a no-op, as nothing is set.
//! Pure data, no I/O.

use thiserror::Error;

use super::broker_config::{TYPE_BOOLEAN, TYPE_INT, TYPE_LIST, TYPE_LONG, TYPE_STRING};
use super::topic_config::alter::{check_shape, AlterError, AlterOp, OP_DELETE};
use super::topic_config::describe::SOURCE_DEFAULT;
use crate::error_code::ResponseError;

/// One config of a group as DescribeConfigs gives it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GroupEntry {
    pub name: &'static str,
    /// None: Kafka's null (no value).
    pub value: Option<String>,
    pub config_type: i8,
    pub source: i8,
}

/// The broker settings the group configs take their values from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct GroupDefaults {
    /// group.consumer.session.timeout.ms
    pub consumer_session_timeout_ms: i32,
    /// group.consumer.heartbeat.interval.ms
    pub consumer_heartbeat_interval_ms: i32,
}

/// Kafka 4.4's group configs that are not internal, in Kafka's order, with kaas's value or
/// (`None` in the second field) the one Kafka's default gives.
const FIXED: &[(&str, i8, Option<&str>)] = &[
    ("consumer.assignment.interval.ms", TYPE_INT, Some("0")),
    ("share.session.timeout.ms", TYPE_INT, Some("45000")),
    ("share.heartbeat.interval.ms", TYPE_INT, Some("5000")),
    ("share.record.lock.duration.ms", TYPE_INT, Some("30000")),
    ("share.delivery.count.limit", TYPE_INT, Some("5")),
    ("share.partition.max.record.locks", TYPE_INT, Some("2000")),
    ("share.auto.offset.reset", TYPE_STRING, Some("latest")),
    ("share.isolation.level", TYPE_STRING, Some("read_uncommitted")),
    ("share.renew.acknowledge.enable", TYPE_BOOLEAN, Some("true")),
    ("share.assignment.interval.ms", TYPE_INT, Some("1000")),
    ("streams.session.timeout.ms", TYPE_INT, Some("45000")),
    ("streams.heartbeat.interval.ms", TYPE_INT, Some("5000")),
    ("streams.num.standby.replicas", TYPE_INT, Some("0")),
    ("streams.initial.rebalance.delay.ms", TYPE_INT, Some("3000")),
    ("streams.assignment.interval.ms", TYPE_INT, Some("1000")),
    ("streams.rack.aware.assignment.tags", TYPE_LIST, Some("")),
    ("streams.assignor.name", TYPE_STRING, None),
    ("errors.deadletterqueue.topic.name", TYPE_STRING, Some("")),
    ("errors.deadletterqueue.copy.record.enable", TYPE_BOOLEAN, Some("false")),
];

/// Kafka 4.4's internal group configs: valid names, never described.
const INTERNAL: &[(&str, i8)] = &[
    ("consumer.assignor.offload.enable", TYPE_BOOLEAN),
    ("share.assignor.offload.enable", TYPE_BOOLEAN),
    ("streams.assignor.offload.enable", TYPE_BOOLEAN),
    ("streams.task.offset.interval.ms", TYPE_INT),
    ("streams.num.warmup.replicas", TYPE_INT),
    ("streams.acceptable.recovery.lag", TYPE_LONG),
];

#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum GroupConfigError {
    #[error("Group name must not be empty")]
    EmptyName,
    /// Kafka's GroupConfig.validateNames.
    #[error("Unknown group config name: {0}")]
    UnknownName(String),
    #[error("{0} cannot be set on kaas: it keeps no per-group configs, every group uses the broker's settings")]
    NotStored(String),
    #[error("{0}")]
    Shape(#[from] AlterError),
}

impl GroupConfigError {
    pub fn code(&self) -> i16 {
        match self {
            GroupConfigError::EmptyName => ResponseError::InvalidRequest.code(),
            GroupConfigError::Shape(e) => e.code(),
            _ => ResponseError::InvalidConfig.code(),
        }
    }
}

/// Whether `name` is one of Kafka's group configs (internal ones included).
pub fn is_group_config(name: &str) -> bool {
    name == "consumer.session.timeout.ms"
        || name == "consumer.heartbeat.interval.ms"
        || FIXED.iter().any(|(n, _, _)| *n == name)
        || INTERNAL.iter().any(|(n, _)| *n == name)
}

/// DescribeConfigs of group `name`: every non-internal group config, DEFAULT_CONFIG.
pub fn describe_group(name: &str, defaults: GroupDefaults) -> Result<Vec<GroupEntry>, GroupConfigError> {
    if name.is_empty() {
        return Err(GroupConfigError::EmptyName);
    }
    let entry =
        |name, value: Option<String>, config_type| GroupEntry { name, value, config_type, source: SOURCE_DEFAULT };
    let mut out = vec![
        entry("consumer.session.timeout.ms", Some(defaults.consumer_session_timeout_ms.to_string()), TYPE_INT),
        entry("consumer.heartbeat.interval.ms", Some(defaults.consumer_heartbeat_interval_ms.to_string()), TYPE_INT),
    ];
    out.extend(FIXED.iter().map(|(n, t, v)| entry(n, v.map(str::to_string), *t)));
    Ok(out)
}

/// IncrementalAlterConfigs (and AlterConfigs, as SETs) of group `name`.
pub fn alter_group(name: &str, ops: &[AlterOp]) -> Result<(), GroupConfigError> {
    if name.is_empty() {
        return Err(GroupConfigError::EmptyName);
    }
    check_shape(ops)?;
    if let Some(o) = ops.iter().find(|o| !is_group_config(&o.name)) {
        return Err(GroupConfigError::UnknownName(o.name.clone()));
    }
    match ops.iter().find(|o| o.op != OP_DELETE) {
        Some(o) => Err(GroupConfigError::NotStored(o.name.clone())),
        None => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::topic_config::alter::OP_SET;

    const DEFAULTS: GroupDefaults =
        GroupDefaults { consumer_session_timeout_ms: 45_000, consumer_heartbeat_interval_ms: 5000 };

    fn op(name: &str, op: i8) -> AlterOp {
        AlterOp { name: name.into(), op, value: Some("1".into()) }
    }

    #[test]
    fn a_group_describes_kafkas_non_internal_group_configs_with_the_brokers_values() {
        let d = GroupDefaults { consumer_session_timeout_ms: 30_000, consumer_heartbeat_interval_ms: 3000 };
        let all = describe_group("any-group", d).unwrap();
        assert_eq!(all.len(), 21, "Kafka 4.4: 27 group configs, 6 of them internal");
        assert!(all.iter().all(|e| e.source == SOURCE_DEFAULT));
        let get = |n: &str| all.iter().find(|e| e.name == n).and_then(|e| e.value.clone());
        assert_eq!(get("consumer.session.timeout.ms").as_deref(), Some("30000"));
        assert_eq!(get("consumer.heartbeat.interval.ms").as_deref(), Some("3000"));
        assert_eq!(get("streams.assignor.name"), None, "Kafka's null");
        assert!(all.iter().all(|e| !INTERNAL.iter().any(|(n, _)| *n == e.name)));
    }

    #[test]
    fn a_group_config_of_an_empty_group_name_is_invalid_request() {
        let e = describe_group("", DEFAULTS).unwrap_err();
        assert_eq!(
            (e.code(), e.to_string()),
            (ResponseError::InvalidRequest.code(), "Group name must not be empty".into())
        );
        assert_eq!(alter_group("", &[]), Err(GroupConfigError::EmptyName));
    }

    #[test]
    fn an_unknown_group_config_name_is_invalid_config_with_kafkas_message() {
        let e = alter_group("g", &[op("session.timeout.ms", OP_SET)]).unwrap_err();
        assert_eq!(
            (e.code(), e.to_string()),
            (ResponseError::InvalidConfig.code(), "Unknown group config name: session.timeout.ms".into())
        );
    }

    #[test]
    fn kaas_refuses_to_set_a_group_config_and_deleting_one_is_a_no_op() {
        let e = alter_group("g", &[op("consumer.session.timeout.ms", OP_SET)]).unwrap_err();
        assert_eq!(e.code(), ResponseError::InvalidConfig.code());
        assert!(e.to_string().starts_with("consumer.session.timeout.ms cannot be set on kaas"));
        assert_eq!(alter_group("g", &[op("consumer.session.timeout.ms", OP_DELETE)]), Ok(()));
        assert_eq!(alter_group("g", &[op("consumer.assignor.offload.enable", OP_DELETE)]), Ok(()), "an internal name");
    }
}
