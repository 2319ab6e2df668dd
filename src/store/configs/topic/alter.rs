//! AlterConfigs and IncrementalAlterConfigs on a topic's config set, as Kafka's controller
//! applies them (ConfigurationControlManager): the request's shape first (INVALID_REQUEST), then
//! the operations, then the whole resulting set is validated (INVALID_CONFIG).

use std::collections::{BTreeMap, BTreeSet};

use thiserror::Error;

use super::{table, validate_set, TopicConfigError};
use crate::error_code::ResponseError;

/// IncrementalAlterConfigs operation ids (AlterConfigOp.OpType).
pub const OP_SET: i8 = 0;
pub const OP_DELETE: i8 = 1;
pub const OP_APPEND: i8 = 2;
pub const OP_SUBTRACT: i8 = 3;

/// One requested change (for AlterConfigs, every entry is a SET).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AlterOp {
    pub name: String,
    pub op: i8,
    pub value: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum AlterError {
    #[error("Error due to duplicate config keys")]
    DuplicateKeys,
    #[error("Null value not supported for : {}", .0.join(", "))]
    NullValues(Vec<String>),
    #[error("Unknown operations type {0}")]
    UnknownOp(i8),
    #[error("Can't {op} to key {name} because its type is not LIST.")]
    NotList { op: &'static str, name: String },
    #[error("{0}")]
    Config(#[from] TopicConfigError),
}

impl AlterError {
    pub fn code(&self) -> i16 {
        match self {
            AlterError::DuplicateKeys | AlterError::NullValues(_) | AlterError::UnknownOp(_) => {
                ResponseError::InvalidRequest.code()
            }
            AlterError::NotList { .. } | AlterError::Config(_) => ResponseError::InvalidConfig.code(),
        }
    }
}

/// Kafka's preprocessing of one resource: no name twice, a value for everything but DELETE,
/// known operations.
pub fn check_shape(ops: &[AlterOp]) -> Result<(), AlterError> {
    let mut seen = BTreeSet::new();
    if !ops.iter().all(|o| seen.insert(o.name.as_str())) {
        return Err(AlterError::DuplicateKeys);
    }
    let nulls: Vec<String> =
        ops.iter().filter(|o| o.op != OP_DELETE && o.value.is_none()).map(|o| o.name.clone()).collect();
    if !nulls.is_empty() {
        return Err(AlterError::NullValues(nulls));
    }
    match ops.iter().find(|o| !(OP_SET..=OP_SUBTRACT).contains(&o.op)) {
        Some(o) => Err(AlterError::UnknownOp(o.op)),
        None => Ok(()),
    }
}

fn parts(value: &str) -> Vec<String> {
    value.split(',').map(str::trim).filter(|s| !s.is_empty()).map(str::to_string).collect()
}

/// APPEND (`op`) or SUBTRACT the comma-separated `items` to or from the list `start`, as
/// Kafka's IncrementalAlterConfigs does: an item appended once, every copy subtracted.
pub fn list_op(start: &str, op: i8, items: &str) -> String {
    let mut list = parts(start);
    for item in items.split(',') {
        if op == OP_APPEND && !list.iter().any(|x| x == item) {
            list.push(item.to_string());
        } else if op == OP_SUBTRACT {
            list.retain(|x| x != item);
        }
    }
    list.join(",")
}

/// Applies `ops` to `configs` in order; APPEND and SUBTRACT start from the config's value, or
/// from `list_default(name, op)` without one, whose error refuses a config that is not a list.
pub fn apply_ops<E>(
    configs: &mut BTreeMap<String, String>,
    ops: &[AlterOp],
    list_default: impl Fn(&str, i8) -> Result<&'static str, E>,
) -> Result<(), E> {
    for o in ops {
        let value = o.value.clone().unwrap_or_default();
        match o.op {
            OP_SET => {
                configs.insert(o.name.clone(), value);
            }
            OP_DELETE => {
                configs.remove(&o.name);
            }
            op => {
                let default = list_default(&o.name, op)?;
                let list = list_op(configs.get(&o.name).map_or(default, String::as_str), op, &value);
                configs.insert(o.name.clone(), list);
            }
        }
    }
    Ok(())
}

/// IncrementalAlterConfigs: `current` with `ops` applied, validated. APPEND and SUBTRACT start
/// from Kafka's default when the topic has no value of its own.
pub fn apply_incremental(
    current: &BTreeMap<String, String>,
    ops: &[AlterOp],
) -> Result<BTreeMap<String, String>, AlterError> {
    check_shape(ops)?;
    let mut out = current.clone();
    apply_ops(&mut out, ops, |name, op| {
        let def = table::find(name).filter(|d| d.kind == table::Kind::List);
        let op = if op == OP_APPEND { "APPEND" } else { "SUBTRACT" };
        def.map(|d| d.default).ok_or_else(|| AlterError::NotList { op, name: name.to_string() })
    })?;
    Ok(validate_set(&out)?)
}

/// AlterConfigs: the topic's configs become exactly `entries`, validated.
pub fn replace_all(entries: &[(String, Option<String>)]) -> Result<BTreeMap<String, String>, AlterError> {
    let ops: Vec<AlterOp> =
        entries.iter().map(|(n, v)| AlterOp { name: n.clone(), op: OP_SET, value: v.clone() }).collect();
    check_shape(&ops)?;
    apply_incremental(&BTreeMap::new(), &ops)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn op(name: &str, op: i8, value: Option<&str>) -> AlterOp {
        AlterOp { name: name.into(), op, value: value.map(str::to_string) }
    }

    fn map(kv: &[(&str, &str)]) -> BTreeMap<String, String> {
        kv.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect()
    }

    #[test]
    fn set_overrides_and_delete_restores_the_default() {
        let cur = map(&[("retention.ms", "1000")]);
        let out = apply_incremental(&cur, &[op("max.message.bytes", OP_SET, Some("5000000"))]).unwrap();
        assert_eq!(out, map(&[("retention.ms", "1000"), ("max.message.bytes", "5000000")]));
        let out = apply_incremental(&out, &[op("retention.ms", OP_DELETE, None)]).unwrap();
        assert_eq!(out, map(&[("max.message.bytes", "5000000")]));
    }

    #[test]
    fn deleting_a_config_that_is_not_set_is_a_no_op() {
        assert_eq!(apply_incremental(&BTreeMap::new(), &[op("segment.ms", OP_DELETE, None)]), Ok(BTreeMap::new()));
    }

    #[test]
    fn duplicate_keys_are_invalid_request() {
        let e = check_shape(&[op("retention.ms", OP_SET, Some("1")), op("retention.ms", OP_DELETE, None)]).unwrap_err();
        assert_eq!(
            (e.code(), e.to_string().as_str()),
            (ResponseError::InvalidRequest.code(), "Error due to duplicate config keys")
        );
    }

    #[test]
    fn null_values_outside_delete_are_invalid_request() {
        let e = check_shape(&[op("retention.ms", OP_SET, None), op("segment.ms", OP_DELETE, None)]).unwrap_err();
        assert_eq!(e, AlterError::NullValues(vec!["retention.ms".into()]));
        assert_eq!(e.to_string(), "Null value not supported for : retention.ms");
        assert_eq!(e.code(), ResponseError::InvalidRequest.code());
    }

    #[test]
    fn unknown_operations_are_invalid_request() {
        assert_eq!(check_shape(&[op("retention.ms", 7, Some("1"))]), Err(AlterError::UnknownOp(7)));
    }

    #[test]
    fn append_and_subtract_only_apply_to_lists() {
        let e = apply_incremental(&BTreeMap::new(), &[op("retention.ms", OP_APPEND, Some("1"))]).unwrap_err();
        assert_eq!(e.to_string(), "Can't APPEND to key retention.ms because its type is not LIST.");
        assert_eq!(e.code(), ResponseError::InvalidConfig.code());
    }

    #[test]
    fn append_starts_from_kafkas_default_and_subtract_removes() {
        // cleanup.policy defaults to delete: appending delete changes nothing, appending compact
        // gives both, subtracting delete leaves an empty list (Kafka 4.4, KIP-1161: nothing is
        // ever removed).
        let out = apply_incremental(&BTreeMap::new(), &[op("cleanup.policy", OP_APPEND, Some("delete"))]).unwrap();
        assert_eq!(out, map(&[("cleanup.policy", "delete")]));
        let both = apply_incremental(&BTreeMap::new(), &[op("cleanup.policy", OP_APPEND, Some("compact"))]).unwrap();
        assert_eq!(both, map(&[("cleanup.policy", "delete,compact")]));
        let none = apply_incremental(&out, &[op("cleanup.policy", OP_SUBTRACT, Some("delete"))]).unwrap();
        assert_eq!(none, map(&[("cleanup.policy", "")]));
    }

    #[test]
    fn the_resulting_set_is_validated_with_kafkas_messages() {
        let e = apply_incremental(&BTreeMap::new(), &[op("foo.bar", OP_SET, Some("1"))]).unwrap_err();
        assert_eq!(e.to_string(), "Unknown topic config name: foo.bar");
        let e = apply_incremental(&BTreeMap::new(), &[op("retention.ms", OP_SET, Some("abc"))]).unwrap_err();
        assert_eq!(e.to_string(), "Invalid value abc for configuration retention.ms: Not a number of type LONG");
        assert_eq!(e.code(), ResponseError::InvalidConfig.code());
    }

    #[test]
    fn replace_all_keeps_only_the_given_configs() {
        assert_eq!(replace_all(&[("retention.ms".into(), Some("5".into()))]), Ok(map(&[("retention.ms", "5")])));
        assert_eq!(replace_all(&[]), Ok(BTreeMap::new()));
        assert_eq!(
            replace_all(&[("retention.ms".into(), None)]),
            Err(AlterError::NullValues(vec!["retention.ms".into()]))
        );
    }
}
