//! Configs as the Kafka admin APIs see them (DescribeConfigs, AlterConfigs,
//! IncrementalAlterConfigs, ListConfigResources, CreateTopics' configs): what each resource type
//! has and how each is described, checked and changed, as Apache Kafka 4.4 does. One entry type,
//! [`ConfigEntry`], for what DescribeConfigs lists of any resource. Pure, but for `group_store`
//! (the group overrides' file on the shared disk).
//!
//! - `topic`: the 37 topic configs (`table`), their checks, `describe` and `alter`;
//! - `broker`: the broker configs kaas describes (its settings that are Kafka's configs, from
//!   config/settings.rs, and `BROKER_FACTS`);
//! - `group`: the group configs (KIP-848 timers per group) and `group_store`, their file;
//! - `resources`: resource types, names and the BROKER / BROKER_LOGGER changes kaas refuses.

pub mod broker;
pub mod broker_store;
pub mod dynamic;
pub mod group;
pub mod group_store;
pub mod resources;
pub mod shared_file;
pub mod topic;

use std::borrow::Cow;

/// DescribeConfigs ConfigSource ids.
pub const SOURCE_DYNAMIC_TOPIC: i8 = 1;
/// Kafka's DYNAMIC_BROKER_CONFIG: a value set on one broker (`--entity-name N`).
pub const SOURCE_DYNAMIC_BROKER: i8 = 2;
/// Kafka's DYNAMIC_DEFAULT_BROKER_CONFIG: a cluster-wide default (`--entity-default`).
pub const SOURCE_DYNAMIC_DEFAULT_BROKER: i8 = 3;
pub const SOURCE_STATIC_BROKER: i8 = 4;
pub const SOURCE_DEFAULT: i8 = 5;
/// Kafka's ConfigSource.GROUP_CONFIG: a value set on the group.
pub const SOURCE_GROUP: i8 = 8;

/// DescribeConfigs v3+ config types (Kafka's ConfigType ids).
pub const TYPE_BOOLEAN: i8 = 1;
pub const TYPE_STRING: i8 = 2;
pub const TYPE_INT: i8 = 3;
pub const TYPE_SHORT: i8 = 4;
pub const TYPE_LONG: i8 = 5;
pub const TYPE_LIST: i8 = 7;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Synonym {
    pub name: String,
    /// None: Kafka's null.
    pub value: Option<String>,
    pub source: i8,
}

impl Synonym {
    pub fn new(name: impl Into<String>, value: impl Into<String>, source: i8) -> Synonym {
        Synonym { name: name.into(), value: Some(value.into()), source }
    }
}

/// One config of a resource as DescribeConfigs lists it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfigEntry {
    /// Owned for a custom broker config (store::configs::dynamic).
    pub name: Cow<'static, str>,
    /// None: Kafka's null (no value).
    pub value: Option<String>,
    pub source: i8,
    pub config_type: i8,
    /// Whether AlterConfigs can change it on kaas (Kafka's read_only).
    pub read_only: bool,
    /// Most specific first, as Kafka lists them.
    pub synonyms: Vec<Synonym>,
    /// What it means on kaas (DescribeConfigs' documentation).
    pub doc: Cow<'static, str>,
}

impl ConfigEntry {
    /// The entry's value as a string ("" for null), for tests and logs.
    pub fn value_str(&self) -> &str {
        self.value.as_deref().unwrap_or("")
    }
}
