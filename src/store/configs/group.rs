//! Group configs (Kafka's GroupConfig, KIP-848 / KIP-932 / KIP-1071): what DescribeConfigs of a
//! GROUP resource lists and what IncrementalAlterConfigs / AlterConfigs of one answer.
//!
//! Kafka 4.4 lists every non-internal config of its GroupConfig for any group name, known or not
//! (ConfigHelper does not look the group up), an empty name being INVALID_REQUEST "Group name must
//! not be empty". A config no group overrides has the DEFAULT_CONFIG source and the broker's
//! value; an override the GROUP_CONFIG source. kaas keeps per-group overrides of the consumer
//! group protocol's timers, `consumer.session.timeout.ms` and `consumer.heartbeat.interval.ms`
//! (store::configs::group_store keeps them on the shared disk; the group coordinator applies them
//! at the next heartbeat), validated as Kafka's GroupConfig.validate does against the broker's
//! bounds. `consumer.assignment.interval.ms` is 0 because kaas computes a new target assignment in
//! the heartbeat that bumps the group epoch, and the share and streams group configs are Kafka's
//! defaults (kaas has neither kind of group): setting any of those is INVALID_CONFIG, as kaas
//! could not honour it; an unknown name is INVALID_CONFIG with Kafka's message
//! (GroupConfig.validateNames). Pure data, no I/O.

use std::collections::BTreeMap;

use thiserror::Error;

use super::topic::alter::{check_shape, AlterError, AlterOp, OP_APPEND, OP_DELETE, OP_SUBTRACT};
use super::{ConfigEntry, Synonym, SOURCE_DEFAULT, SOURCE_GROUP};
use super::{TYPE_BOOLEAN, TYPE_INT, TYPE_LIST, TYPE_LONG, TYPE_STRING};
use crate::error_code::ResponseError;

/// The documentation DescribeConfigs gives a group config: what it means on kaas.
pub fn group_doc(name: &str) -> &'static str {
    match name {
        SESSION_TIMEOUT => "A consumer-protocol member of this group without a heartbeat for this long is removed.",
        HEARTBEAT_INTERVAL => "How often a consumer-protocol member of this group is told to heartbeat.",
        "consumer.assignment.interval.ms" => {
            "kaas computes a consumer group's assignment at once, on the heartbeat that needs it."
        }
        "errors.deadletterqueue.topic.name" | "errors.deadletterqueue.copy.record.enable" => {
            "For streams groups' dead letter queue; kaas serves no streams groups."
        }
        n if n.starts_with("share.") => {
            "For share groups (KIP-932); kaas serves no share groups, so this is Kafka's default."
        }
        n if n.starts_with("streams.") => {
            "For streams groups (KIP-1071); kaas serves no streams groups, so this is Kafka's default."
        }
        _ => "",
    }
}

/// The group configs kaas stores per group.
pub const SESSION_TIMEOUT: &str = "consumer.session.timeout.ms";
pub const HEARTBEAT_INTERVAL: &str = "consumer.heartbeat.interval.ms";

/// One group's overrides as stored: config name -> value.
pub type GroupOverrides = BTreeMap<String, String>;

/// At most this many groups have overrides (the store is one file, read whole).
pub const MAX_GROUPS_WITH_CONFIGS: usize = 1000;

/// Kafka 4.4's defaults of group.consumer.{min,max}.session.timeout.ms and
/// group.consumer.{min,max}.heartbeat.interval.ms. kaas has no such settings: these bounds,
/// widened to hold the broker's own values (which Kafka requires to lie within them).
const SESSION_BOUNDS: (i32, i32) = (45_000, 60_000);
const HEARTBEAT_BOUNDS: (i32, i32) = (5000, 15_000);

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
    #[error("{0} cannot be set on kaas: it keeps only consumer.session.timeout.ms and consumer.heartbeat.interval.ms per group")]
    NotStored(String),
    #[error("Can't {op} to key {name} because its type is not LIST.")]
    NotList { op: &'static str, name: String },
    #[error("Invalid value {value} for configuration {name}: Not a number of type INT")]
    NotAnInt { name: String, value: String },
    /// Kafka's GroupConfig.validateIntRange.
    #[error("{name} must be in the range {min} to {max} inclusive.")]
    OutOfRange { name: &'static str, min: i32, max: i32 },
    /// Kafka's GroupConfig.validateSessionExceedsHeartbeat.
    #[error("consumer.session.timeout.ms must be greater than consumer.heartbeat.interval.ms")]
    SessionNotAboveHeartbeat,
    #[error("kaas keeps the configs of at most 1000 groups")]
    TooManyGroups,
    #[error("{0}")]
    Shape(#[from] AlterError),
}

impl GroupConfigError {
    pub fn code(&self) -> i16 {
        match self {
            GroupConfigError::EmptyName => ResponseError::InvalidRequest.code(),
            GroupConfigError::Shape(e) => e.code(),
            GroupConfigError::TooManyGroups => ResponseError::PolicyViolation.code(),
            _ => ResponseError::InvalidConfig.code(),
        }
    }
}

/// The effective (session timeout, heartbeat interval) of a group: its overrides, else the
/// broker's.
pub fn consumer_timers(overrides: Option<&GroupOverrides>, defaults: GroupDefaults) -> (i32, i32) {
    let get = |name: &str| overrides.and_then(|o| o.get(name)).and_then(|v| v.parse::<i32>().ok());
    (
        get(SESSION_TIMEOUT).unwrap_or(defaults.consumer_session_timeout_ms),
        get(HEARTBEAT_INTERVAL).unwrap_or(defaults.consumer_heartbeat_interval_ms),
    )
}

fn widened((min, max): (i32, i32), own: i32) -> (i32, i32) {
    (min.min(own), max.max(own))
}

/// Whether `name` is one of Kafka's group configs (internal ones included).
pub fn is_group_config(name: &str) -> bool {
    name == "consumer.session.timeout.ms"
        || name == "consumer.heartbeat.interval.ms"
        || FIXED.iter().any(|(n, _, _)| *n == name)
        || INTERNAL.iter().any(|(n, _)| *n == name)
}

/// One group config: not read-only (Kafka can change it), its synonyms as Kafka's
/// createGroupConfigEntry lists them: the group's value, then the broker's under an override.
fn group_entry(name: &'static str, value: Option<String>, config_type: i8, broker: Option<String>) -> ConfigEntry {
    let source = if broker.is_some() { SOURCE_GROUP } else { SOURCE_DEFAULT };
    let mut synonyms = vec![Synonym { name: name.into(), value: value.clone(), source }];
    if let Some(b) = broker {
        synonyms.push(Synonym::new(name, b, SOURCE_DEFAULT));
    }
    let doc = group_doc(name).into();
    ConfigEntry { name: name.into(), value, source, config_type, read_only: false, synonyms, doc }
}

/// DescribeConfigs of group `name` with its `overrides`: every non-internal group config.
pub fn describe_group(
    name: &str,
    defaults: GroupDefaults,
    overrides: Option<&GroupOverrides>,
) -> Result<Vec<ConfigEntry>, GroupConfigError> {
    if name.is_empty() {
        return Err(GroupConfigError::EmptyName);
    }
    let stored = |name: &'static str, default: i32| match overrides.and_then(|o| o.get(name)) {
        Some(v) => group_entry(name, Some(v.clone()), TYPE_INT, Some(default.to_string())),
        None => group_entry(name, Some(default.to_string()), TYPE_INT, None),
    };
    let mut out = vec![
        stored(SESSION_TIMEOUT, defaults.consumer_session_timeout_ms),
        stored(HEARTBEAT_INTERVAL, defaults.consumer_heartbeat_interval_ms),
    ];
    out.extend(FIXED.iter().map(|(n, t, v)| group_entry(n, v.map(str::to_string), *t, None)));
    Ok(out)
}

/// IncrementalAlterConfigs (`replace` false) or AlterConfigs (`replace`: the ops, all SETs, are
/// the group's whole set) of group `name`, whose overrides are `current`: the new overrides.
pub fn alter_group(
    name: &str,
    ops: &[AlterOp],
    replace: bool,
    current: &GroupOverrides,
    defaults: GroupDefaults,
) -> Result<GroupOverrides, GroupConfigError> {
    if name.is_empty() {
        return Err(GroupConfigError::EmptyName);
    }
    check_shape(ops)?;
    if let Some(o) = ops.iter().find(|o| !is_group_config(&o.name)) {
        return Err(GroupConfigError::UnknownName(o.name.clone()));
    }
    let mut next = if replace { GroupOverrides::new() } else { current.clone() };
    for o in ops {
        let stored = o.name == SESSION_TIMEOUT || o.name == HEARTBEAT_INTERVAL;
        match (o.op, &o.value) {
            (OP_DELETE, _) => {
                next.remove(&o.name);
            }
            (OP_APPEND | OP_SUBTRACT, _) if stored => {
                let op = if o.op == OP_APPEND { "APPEND" } else { "SUBTRACT" };
                return Err(GroupConfigError::NotList { op, name: o.name.clone() });
            }
            (_, Some(v)) if stored => {
                let v = v.trim();
                if v.parse::<i32>().is_err() {
                    return Err(GroupConfigError::NotAnInt { name: o.name.clone(), value: v.to_string() });
                }
                next.insert(o.name.clone(), v.to_string());
            }
            _ => return Err(GroupConfigError::NotStored(o.name.clone())),
        }
    }
    // Kafka's GroupConfig.validateValues, on the values the group would have.
    let (session, heartbeat) = consumer_timers(Some(&next), defaults);
    let checks = [
        (HEARTBEAT_INTERVAL, heartbeat, widened(HEARTBEAT_BOUNDS, defaults.consumer_heartbeat_interval_ms)),
        (SESSION_TIMEOUT, session, widened(SESSION_BOUNDS, defaults.consumer_session_timeout_ms)),
    ];
    for (name, value, (min, max)) in checks {
        if !(min..=max).contains(&value) {
            return Err(GroupConfigError::OutOfRange { name, min, max });
        }
    }
    if session <= heartbeat {
        return Err(GroupConfigError::SessionNotAboveHeartbeat);
    }
    Ok(next)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::configs::topic::alter::OP_SET;

    const DEFAULTS: GroupDefaults =
        GroupDefaults { consumer_session_timeout_ms: 45_000, consumer_heartbeat_interval_ms: 5000 };

    fn op(name: &str, op: i8, value: &str) -> AlterOp {
        AlterOp { name: name.into(), op, value: (op != OP_DELETE).then(|| value.to_string()) }
    }

    fn alter(name: &str, ops: &[AlterOp]) -> Result<GroupOverrides, GroupConfigError> {
        alter_group(name, ops, false, &GroupOverrides::new(), DEFAULTS)
    }

    #[test]
    fn a_group_describes_kafkas_non_internal_group_configs_with_the_brokers_values() {
        let d = GroupDefaults { consumer_session_timeout_ms: 30_000, consumer_heartbeat_interval_ms: 3000 };
        let all = describe_group("any-group", d, None).unwrap();
        assert_eq!(all.len(), 21, "Kafka 4.4: 27 group configs, 6 of them internal");
        assert!(all.iter().all(|e| e.source == SOURCE_DEFAULT));
        let get = |n: &str| all.iter().find(|e| e.name == n).and_then(|e| e.value.clone());
        assert_eq!(get("consumer.session.timeout.ms").as_deref(), Some("30000"));
        assert_eq!(get("consumer.heartbeat.interval.ms").as_deref(), Some("3000"));
        assert_eq!(get("streams.assignor.name"), None, "Kafka's null");
        assert!(all.iter().all(|e| !INTERNAL.iter().any(|(n, _)| *n == e.name)));
    }

    #[test]
    fn an_override_is_described_with_the_group_config_source_and_the_brokers_value_beside_it() {
        let o = GroupOverrides::from([(SESSION_TIMEOUT.to_string(), "50000".to_string())]);
        let all = describe_group("g", DEFAULTS, Some(&o)).unwrap();
        let e = all.iter().find(|e| e.name == SESSION_TIMEOUT).unwrap();
        assert_eq!((e.value.as_deref(), e.source), (Some("50000"), SOURCE_GROUP));
        let synonyms: Vec<_> = e.synonyms.iter().map(|s| (s.value.as_deref(), s.source)).collect();
        assert_eq!(synonyms, [(Some("50000"), SOURCE_GROUP), (Some("45000"), SOURCE_DEFAULT)]);
        assert_eq!(consumer_timers(Some(&o), DEFAULTS), (50_000, 5000));
    }

    #[test]
    fn a_group_config_of_an_empty_group_name_is_invalid_request() {
        let e = describe_group("", DEFAULTS, None).unwrap_err();
        assert_eq!(
            (e.code(), e.to_string()),
            (ResponseError::InvalidRequest.code(), "Group name must not be empty".into())
        );
        assert_eq!(alter_group("", &[], false, &GroupOverrides::new(), DEFAULTS), Err(GroupConfigError::EmptyName));
    }

    #[test]
    fn an_unknown_group_config_name_is_invalid_config_with_kafkas_message() {
        let e = alter("g", &[op("session.timeout.ms", OP_SET, "1")]).unwrap_err();
        assert_eq!(
            (e.code(), e.to_string()),
            (ResponseError::InvalidConfig.code(), "Unknown group config name: session.timeout.ms".into())
        );
    }

    #[test]
    fn the_consumer_timers_are_set_and_deleted_per_group() {
        let set = alter("g", &[op(SESSION_TIMEOUT, OP_SET, "50000"), op(HEARTBEAT_INTERVAL, OP_SET, "6000")]).unwrap();
        assert_eq!(consumer_timers(Some(&set), DEFAULTS), (50_000, 6000));
        let deleted = alter_group("g", &[op(HEARTBEAT_INTERVAL, OP_DELETE, "")], false, &set, DEFAULTS).unwrap();
        assert_eq!(deleted, GroupOverrides::from([(SESSION_TIMEOUT.to_string(), "50000".to_string())]));
        // AlterConfigs replaces the whole set.
        let replaced = alter_group("g", &[op(HEARTBEAT_INTERVAL, OP_SET, "7000")], true, &set, DEFAULTS).unwrap();
        assert_eq!(replaced, GroupOverrides::from([(HEARTBEAT_INTERVAL.to_string(), "7000".to_string())]));
    }

    #[test]
    fn group_timers_are_validated_as_kafkas_group_config() {
        let e = alter("g", &[op(SESSION_TIMEOUT, OP_SET, "1000")]).unwrap_err();
        assert_eq!(e.to_string(), "consumer.session.timeout.ms must be in the range 45000 to 60000 inclusive.");
        let e = alter("g", &[op(HEARTBEAT_INTERVAL, OP_SET, "20000")]).unwrap_err();
        assert_eq!(e.to_string(), "consumer.heartbeat.interval.ms must be in the range 5000 to 15000 inclusive.");
        let e = alter("g", &[op(SESSION_TIMEOUT, OP_SET, "abc")]).unwrap_err();
        assert_eq!(
            e.to_string(),
            "Invalid value abc for configuration consumer.session.timeout.ms: Not a number of type INT"
        );
        let e = alter("g", &[op(SESSION_TIMEOUT, OP_APPEND, "1")]).unwrap_err();
        assert_eq!(e.to_string(), "Can't APPEND to key consumer.session.timeout.ms because its type is not LIST.");
        assert!(e.code() == ResponseError::InvalidConfig.code());
        // A broker configured below Kafka's bounds widens them to its own values.
        let low = GroupDefaults { consumer_session_timeout_ms: 3000, consumer_heartbeat_interval_ms: 500 };
        let e = alter_group("g", &[op(HEARTBEAT_INTERVAL, OP_SET, "3000")], false, &GroupOverrides::new(), low)
            .unwrap_err();
        assert_eq!(e, GroupConfigError::SessionNotAboveHeartbeat);
        assert!(alter_group("g", &[op(SESSION_TIMEOUT, OP_SET, "4000")], false, &GroupOverrides::new(), low).is_ok());
    }

    #[test]
    fn kaas_refuses_to_set_the_group_configs_it_cannot_hold_and_deleting_one_is_a_no_op() {
        let e = alter("g", &[op("share.session.timeout.ms", OP_SET, "50000")]).unwrap_err();
        assert_eq!(e.code(), ResponseError::InvalidConfig.code());
        assert!(e.to_string().starts_with("share.session.timeout.ms cannot be set on kaas"));
        assert_eq!(alter("g", &[op("consumer.assignment.interval.ms", OP_DELETE, "")]), Ok(GroupOverrides::new()));
        assert_eq!(alter("g", &[op("consumer.assignor.offload.enable", OP_DELETE, "")]), Ok(GroupOverrides::new()));
    }
}
