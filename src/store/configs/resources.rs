//! The resources of AlterConfigs and IncrementalAlterConfigs other than a topic's configs, as
//! Kafka's broker preprocesses them (ConfigAdminManager): duplicate resources, resource types,
//! whose BROKER configs a change names (store::configs::dynamic checks the configs) and
//! BROKER_LOGGER (kaas has no Log4j loggers). Which resources ListConfigResources lists (`listed`). Pure functions, no I/O.

use std::collections::HashMap;

use thiserror::Error;

use super::topic::alter::{check_shape, AlterError, AlterOp, OP_APPEND, OP_SUBTRACT};
use crate::error_code::ResponseError;
use crate::store::topics::is_internal;

/// ConfigResource.Type ids.
pub const RESOURCE_TOPIC: i8 = 2;
pub const RESOURCE_BROKER: i8 = 4;
pub const RESOURCE_BROKER_LOGGER: i8 = 8;
pub const RESOURCE_CLIENT_METRICS: i8 = 16;
pub const RESOURCE_GROUP: i8 = 32;

#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum ResourceError {
    #[error("Each resource must appear at most once.")]
    Duplicate,
    #[error("Unknown resource type {0}")]
    UnknownType(i8),
    #[error("Node id must be an integer, but it is: {0}")]
    NodeIdNotInt(String),
    #[error("Unexpected broker id, expected {expected}, but received {got}")]
    WrongNode { expected: i32, got: String },
    #[error("Broker id must not be empty")]
    EmptyBrokerId,
    #[error("Broker id must be an integer, but it is: {0}")]
    BrokerIdNotInt(String),
    #[error("Unexpected broker id, expected {expected} but received {got}")]
    UnexpectedBroker { expected: i32, got: String },
    #[error("Unexpected broker id, expected {expected} or empty string, but received {got}")]
    UnexpectedBrokerOrDefault { expected: i32, got: String },
    #[error("Default topic resources are not allowed.")]
    DefaultTopic,
    /// Kafka stores its internal topics as logs whose configs can be changed; kaas keeps their
    /// state in the coordinators' databases, where no topic config applies.
    #[error("The configs of internal topic {0} cannot be changed on kaas: it keeps that state in the coordinators' databases, not in a log")]
    InternalTopic(String),
    #[error("Logger {0} does not exist!")]
    NoLogger(String),
    #[error("{0} operation is not allowed for the BROKER_LOGGER resource")]
    LoggerOp(&'static str),
    #[error("{0}")]
    Shape(#[from] AlterError),
}

impl ResourceError {
    pub fn code(&self) -> i16 {
        match self {
            ResourceError::NoLogger(_) => ResponseError::InvalidConfig.code(),
            ResourceError::Shape(e) => e.code(),
            _ => ResponseError::InvalidRequest.code(),
        }
    }
}

/// For each resource, whether another one has the same (type, name): all of them are refused.
pub fn duplicates(keys: &[(i8, String)]) -> Vec<bool> {
    let mut count: HashMap<&(i8, String), usize> = HashMap::new();
    for k in keys {
        *count.entry(k).or_default() += 1;
    }
    keys.iter().map(|k| count[k] > 1).collect()
}

/// A per-broker resource must name this broker.
pub fn check_node(name: &str, node_id: i32) -> Result<(), ResourceError> {
    let id: i32 = name.parse().map_err(|_| ResourceError::NodeIdNotInt(name.to_string()))?;
    if id == node_id {
        Ok(())
    } else {
        Err(ResourceError::WrongNode { expected: node_id, got: name.to_string() })
    }
}

/// Whom a DescribeConfigs of a BROKER resource (`logger` false) or a BROKER_LOGGER one (true)
/// describes, as Kafka's ConfigHelper checks the name: `Some(())` this broker, `None` the cluster
/// default (an empty BROKER name).
pub fn describe_target(name: &str, node_id: i32, logger: bool) -> Result<Option<()>, ResourceError> {
    if name.is_empty() {
        return if logger { Err(ResourceError::EmptyBrokerId) } else { Ok(None) };
    }
    let id: i32 = name.parse().map_err(|_| ResourceError::BrokerIdNotInt(name.to_string()))?;
    match (id == node_id, logger) {
        (true, _) => Ok(Some(())),
        (false, true) => Err(ResourceError::UnexpectedBroker { expected: node_id, got: name.to_string() }),
        (false, false) => Err(ResourceError::UnexpectedBrokerOrDefault { expected: node_id, got: name.to_string() }),
    }
}

/// A topic resource must name a topic, and one whose configs kaas can change (not an internal one).
pub fn check_topic_name(name: &str) -> Result<(), ResourceError> {
    if name.is_empty() {
        Err(ResourceError::DefaultTopic)
    } else if is_internal(name) {
        Err(ResourceError::InternalTopic(name.to_string()))
    } else {
        Ok(())
    }
}

/// Whose configs a BROKER change names: `None` the cluster default (an empty name), else this
/// broker (Kafka's broker checks that the name is its own id before it forwards the change).
pub fn broker_target(node_id: i32, name: &str) -> Result<Option<i32>, ResourceError> {
    if name.is_empty() {
        return Ok(None);
    }
    check_node(name, node_id)?;
    Ok(Some(node_id))
}

/// BROKER_LOGGER: kaas logs through `tracing` (RUST_LOG), with no Log4j loggers to name.
pub fn logger_change(node_id: i32, name: &str, ops: &[AlterOp]) -> Result<(), ResourceError> {
    check_node(name, node_id)?;
    check_shape(ops)?;
    // The first operation decides: every logger name is unknown here.
    match ops.first() {
        None => Ok(()),
        Some(o) if o.op == OP_APPEND => Err(ResourceError::LoggerOp("APPEND")),
        Some(o) if o.op == OP_SUBTRACT => Err(ResourceError::LoggerOp("SUBTRACT")),
        Some(o) => Err(ResourceError::NoLogger(o.name.clone())),
    }
}

/// The types ListConfigResources `version` may ask for, and lists when none is named (Kafka's
/// `ListConfigResourcesRequest.supportedResourceTypes`): v0 was ListClientMetricsResources.
pub fn listable_types(version: i16) -> &'static [i8] {
    if version == 0 {
        &[RESOURCE_CLIENT_METRICS]
    } else {
        &[RESOURCE_TOPIC, RESOURCE_GROUP, RESOURCE_BROKER, RESOURCE_CLIENT_METRICS, RESOURCE_BROKER_LOGGER]
    }
}

/// ListConfigResources: the (name, type) of every config resource of the `requested` types (all
/// listable ones when none is named), in Kafka's order: GROUP, CLIENT_METRICS, BROKER_LOGGER,
/// BROKER, TOPIC. Kafka lists the groups and client-metrics subscriptions that have configs set:
/// `groups` (store::configs::group_store), and kaas has no client-metrics subscriptions. Every live broker is a BROKER and a BROKER_LOGGER
/// resource; every topic, the internal ones included, a TOPIC. A type the version cannot list
/// fails the whole request with UNSUPPORTED_VERSION, as Kafka answers.
pub fn listed(
    version: i16,
    requested: &[i8],
    topics: &[String],
    brokers: &[i32],
    groups: &[String],
) -> Result<Vec<(String, i8)>, ResponseError> {
    let supported = listable_types(version);
    let types = if requested.is_empty() { supported } else { requested };
    if types.iter().any(|t| !supported.contains(t)) {
        return Err(ResponseError::UnsupportedVersion);
    }
    let mut out = Vec::new();
    for t in [RESOURCE_GROUP, RESOURCE_CLIENT_METRICS, RESOURCE_BROKER_LOGGER, RESOURCE_BROKER, RESOURCE_TOPIC] {
        if !types.contains(&t) {
            continue;
        }
        match t {
            RESOURCE_BROKER_LOGGER | RESOURCE_BROKER => out.extend(brokers.iter().map(|b| (b.to_string(), t))),
            RESOURCE_TOPIC => out.extend(topics.iter().map(|n| (n.clone(), t))),
            RESOURCE_GROUP => out.extend(groups.iter().map(|n| (n.clone(), t))),
            _ => {}
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::configs::topic::alter::OP_SET;

    fn op(name: &str, op: i8) -> AlterOp {
        AlterOp { name: name.into(), op, value: Some("1".into()) }
    }

    #[test]
    fn duplicate_resources_are_all_refused() {
        let keys = vec![(2, "a".to_string()), (2, "b".into()), (2, "a".into()), (4, "a".into())];
        assert_eq!(duplicates(&keys), [true, false, true, false]);
        assert_eq!(ResourceError::Duplicate.code(), ResponseError::InvalidRequest.code());
    }

    #[test]
    fn a_broker_resource_must_name_this_broker() {
        assert_eq!(broker_target(1, "2"), Err(ResourceError::WrongNode { expected: 1, got: "2".into() }));
        assert_eq!(broker_target(1, "x"), Err(ResourceError::NodeIdNotInt("x".into())));
        assert_eq!((broker_target(1, "1"), broker_target(1, "")), (Ok(Some(1)), Ok(None)));
        assert_eq!(logger_change(1, "", &[]), Err(ResourceError::NodeIdNotInt(String::new())));
    }

    #[test]
    fn kaas_has_no_log4j_loggers() {
        let e = logger_change(1, "1", &[op("kafka.server", OP_SET)]).unwrap_err();
        assert_eq!(
            (e.code(), e.to_string()),
            (ResponseError::InvalidConfig.code(), "Logger kafka.server does not exist!".into())
        );
        let e = logger_change(1, "1", &[op("kafka.server", OP_APPEND)]).unwrap_err();
        assert_eq!(e.to_string(), "APPEND operation is not allowed for the BROKER_LOGGER resource");
        assert_eq!(logger_change(1, "1", &[]), Ok(()));
    }

    #[test]
    fn a_topic_resource_must_name_a_topic() {
        assert_eq!(check_topic_name(""), Err(ResourceError::DefaultTopic));
        assert_eq!(check_topic_name("t"), Ok(()));
    }

    #[test]
    fn describe_configs_names_this_broker_or_for_broker_the_cluster_default() {
        assert_eq!(describe_target("1", 1, false), Ok(Some(())));
        assert_eq!(describe_target("", 1, false), Ok(None));
        assert_eq!(describe_target("1", 1, true), Ok(Some(())));
        let e = describe_target("2", 1, false).unwrap_err();
        assert_eq!(e.to_string(), "Unexpected broker id, expected 1 or empty string, but received 2");
        assert_eq!(e.code(), ResponseError::InvalidRequest.code());
        let e = describe_target("2", 1, true).unwrap_err();
        assert_eq!(e.to_string(), "Unexpected broker id, expected 1 but received 2");
        assert_eq!(describe_target("", 1, true), Err(ResourceError::EmptyBrokerId));
        assert_eq!(describe_target("x", 1, true), Err(ResourceError::BrokerIdNotInt("x".into())));
    }

    #[test]
    fn internal_topic_configs_cannot_be_changed() {
        let e = check_topic_name("__consumer_offsets").unwrap_err();
        assert_eq!(e.code(), ResponseError::InvalidRequest.code());
        assert!(e.to_string().starts_with("The configs of internal topic __consumer_offsets cannot be changed"));
        assert!(check_topic_name("__transaction_state").is_err());
    }

    fn all_listed(version: i16, requested: &[i8]) -> Result<Vec<(String, i8)>, ResponseError> {
        listed(version, requested, &["__consumer_offsets".to_string(), "t".to_string()], &[1, 2], &[])
    }

    #[test]
    fn list_config_resources_names_every_broker_and_topic_in_kafkas_order() {
        let all = all_listed(1, &[]).unwrap();
        let expected: Vec<(String, i8)> = vec![
            ("1".into(), RESOURCE_BROKER_LOGGER),
            ("2".into(), RESOURCE_BROKER_LOGGER),
            ("1".into(), RESOURCE_BROKER),
            ("2".into(), RESOURCE_BROKER),
            ("__consumer_offsets".into(), RESOURCE_TOPIC),
            ("t".into(), RESOURCE_TOPIC),
        ];
        assert_eq!(all, expected);
        assert_eq!(all_listed(1, &[RESOURCE_TOPIC, RESOURCE_TOPIC]).unwrap().len(), 2, "a type asked twice once");
    }

    #[test]
    fn list_config_resources_lists_the_groups_with_configs_and_no_client_metrics() {
        assert_eq!(all_listed(1, &[RESOURCE_GROUP, RESOURCE_CLIENT_METRICS]), Ok(vec![]));
        let g = listed(1, &[RESOURCE_GROUP], &[], &[1], &["g".to_string()]);
        assert_eq!(g, Ok(vec![("g".to_string(), RESOURCE_GROUP)]));
        assert_eq!(all_listed(0, &[]), Ok(vec![]), "v0 (ListClientMetricsResources)");
    }

    #[test]
    fn list_config_resources_refuses_a_type_it_cannot_list() {
        assert_eq!(all_listed(1, &[RESOURCE_TOPIC, 3]), Err(ResponseError::UnsupportedVersion));
        assert_eq!(all_listed(0, &[RESOURCE_TOPIC]), Err(ResponseError::UnsupportedVersion), "v0: client metrics only");
    }
}
