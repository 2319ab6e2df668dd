//! Typed settings: embedded defaults < TOML file < `KAAS_*` environment < command-line flags.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use thiserror::Error;

use crate::store::log::file_cache::FileCache;
use crate::store::log::LogConfig;

mod declare;
mod listeners;
mod settings;

pub use declare::{plain, settings_table, Bounds, Declared, KafkaConfig};
pub use listeners::{parse_listeners, Listener, SecurityProtocol};
pub use settings::{
    BrokerSettings, ClusterSettings, GroupSettings, LogSettings, NetworkSettings, SecuritySettings, Settings,
    TransactionSettings,
};

pub use crate::store::producer_ids::{MAX_NODE_ID, MAX_TXN_SHARDS};

#[derive(Debug, Error)]
pub enum ConfigError {
    #[error("configuration: {0}")]
    Load(#[from] config::ConfigError),
    #[error("invalid setting {0}: {1}")]
    Invalid(&'static str, String),
}

/// `when_fenced`: what a fenced broker does (actors::membership).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum WhenFenced {
    /// Start again in place (the same command line, a new process image and incarnation).
    Rejoin,
    /// Exit with code 75 (EX_TEMPFAIL) for a supervisor to restart.
    Exit,
}

/// Values given on the command line; they win over everything else.
#[derive(Debug, Default, Clone)]
pub struct Overrides {
    pub data_dir: Option<PathBuf>,
    pub listen: Option<String>,
    pub node_id: Option<i32>,
}

impl Settings {
    pub fn load(file: Option<&Path>, overrides: &Overrides) -> Result<Settings, ConfigError> {
        let mut s = Settings::default();
        if let Some(path) = file {
            let source = config::File::from(path).format(config::FileFormat::Toml).required(true);
            let values = config::Config::builder().add_source(source).build()?.cache.into_table()?;
            // Kafka too warns of a config it does not know rather than refusing to start.
            for (key, value) in values {
                if !s.set(&key, value)? {
                    tracing::warn!("{}: {key} is not a kaas setting (docs/configuration.md); ignored", path.display());
                }
            }
        }
        // `KAAS_*` variables of other tools (the tests' KAAS_BIN, ...) are not settings: only
        // the settings' keys are taken.
        let env = config::Environment::with_prefix("KAAS").prefix_separator("_").try_parsing(true);
        for (key, value) in config::Config::builder().add_source(env).build()?.cache.into_table()? {
            s.set(&key, value)?;
        }
        if let Some(d) = &overrides.data_dir {
            s.broker.data_dir = d.clone();
        }
        if let Some(l) = &overrides.listen {
            s.network.listen = l.clone();
        }
        if let Some(n) = overrides.node_id {
            s.broker.node_id = n;
        }
        if s.log.max_partitions == 0 {
            // Older releases documented 0 as "auto".
            s.log.max_partitions = crate::store::topics::DEFAULT_MAX_PARTITIONS;
        }
        s.validate()?;
        Ok(s)
    }

    /// The consumer group protocol's settings (KIP-848).
    pub fn consumer_group_config(&self) -> crate::store::group::consumer::ConsumerConfig {
        use crate::store::group::consumer::{Assignor, ConsumerConfig};
        let g = &self.groups;
        let assignors: Vec<Assignor> =
            g.group_consumer_assignors.iter().filter_map(|n| Assignor::from_name(n)).collect();
        ConsumerConfig {
            heartbeat_interval_ms: g.group_consumer_heartbeat_interval_ms,
            session_timeout_ms: g.group_consumer_session_timeout_ms,
            max_size: g.group_consumer_max_size as usize,
            assignors: if assignors.is_empty() { ConsumerConfig::default().assignors } else { assignors },
        }
    }

    /// Kafka's group.consumer.migration.policy; None when the setting names no policy.
    pub fn migration_policy(&self) -> Option<crate::store::group::MigrationPolicy> {
        crate::store::group::MigrationPolicy::parse(&self.groups.group_consumer_migration_policy)
    }

    /// Each setting within its declared bounds (config/settings.rs), then the rules between
    /// settings.
    fn validate(&self) -> Result<(), ConfigError> {
        self.check_declared()?;
        let (g, c) = (&self.groups, &self.cluster);
        // Kafka's group.consumer.*: intervals of at least 1 ms, the interval below the timeout.
        if g.group_consumer_heartbeat_interval_ms < 1
            || g.group_consumer_session_timeout_ms <= g.group_consumer_heartbeat_interval_ms
        {
            return Err(ConfigError::Invalid(
                "group_consumer_session_timeout_ms",
                format!(
                    "{} (must be above group_consumer_heartbeat_interval_ms {}, which must be >= 1)",
                    g.group_consumer_session_timeout_ms, g.group_consumer_heartbeat_interval_ms
                ),
            ));
        }
        // A broker must renew several times within the two thirds of the timeout it has to
        // prove its own lease fresh.
        if c.broker_heartbeat_interval_ms.saturating_mul(3) > c.broker_session_timeout_ms {
            return Err(ConfigError::Invalid(
                "broker_session_timeout_ms",
                format!(
                    "{} (must be at least 3 x broker_heartbeat_interval_ms {})",
                    c.broker_session_timeout_ms, c.broker_heartbeat_interval_ms
                ),
            ));
        }
        let known = |n: &String| crate::store::group::consumer::Assignor::from_name(n).is_some();
        if g.group_consumer_assignors.is_empty() || !g.group_consumer_assignors.iter().all(known) {
            return Err(ConfigError::Invalid(
                "group_consumer_assignors",
                format!("{:?} (known: uniform, range)", g.group_consumer_assignors),
            ));
        }
        self.validate_security()?;
        let (n, l) = (&self.network, &self.log);
        // A batch must fit in a request, and one request of the largest size in the pool.
        if l.max_message_bytes > n.max_request_bytes {
            let why = format!("{} (must be <= max_request_bytes {})", l.max_message_bytes, n.max_request_bytes);
            return Err(ConfigError::Invalid("max_message_bytes", why));
        }
        at_least("queued_max_request_bytes", n.queued_max_request_bytes, n.max_request_bytes)?;
        // Auto-created topics must fit under an explicit partition limit.
        at_least("max_partitions", i64::from(l.max_partitions), i64::from(l.num_partitions))?;
        Ok(())
    }

    /// The listeners this broker serves: `listeners`, and `listen` as the PLAINTEXT one unless
    /// `listeners` names one (config/listeners.rs). Checked at load.
    pub fn listeners(&self) -> Vec<Listener> {
        let mut out = parse_listeners(&self.security.listeners).unwrap_or_default();
        let has_plaintext = out.iter().any(|l| l.protocol == SecurityProtocol::Plaintext);
        if !has_plaintext && !self.network.listen.is_empty() {
            let (host, port) = host_port(&self.network.listen);
            out.insert(0, Listener { protocol: SecurityProtocol::Plaintext, host, port });
        }
        out
    }

    /// What each listener gives clients: its `advertised_listeners` entry, else (PLAINTEXT)
    /// `advertised_listener`, else its own address (an empty host: this machine's name).
    pub fn advertised_listeners(&self) -> Vec<Listener> {
        let named = parse_listeners(&self.security.advertised_listeners).unwrap_or_default();
        self.listeners()
            .into_iter()
            .map(|l| {
                if let Some(a) = named.iter().find(|a| a.protocol == l.protocol) {
                    return a.clone();
                }
                if let (SecurityProtocol::Plaintext, Some(a)) = (l.protocol, &self.network.advertised_listener) {
                    let (host, port) = host_port(a);
                    return Listener { protocol: l.protocol, host, port };
                }
                if l.host.is_empty() {
                    return Listener { host: this_host(), ..l };
                }
                l
            })
            .collect()
    }

    /// The listener peers reach this broker on: `inter_broker_listener_name`, else PLAINTEXT
    /// when it is served, else the first.
    pub fn inter_broker_listener(&self) -> Option<Listener> {
        let all = self.listeners();
        let named = SecurityProtocol::from_name(&self.security.inter_broker_listener_name);
        let pick = |p: SecurityProtocol| all.iter().find(|l| l.protocol == p).cloned();
        match named {
            Some(p) => pick(p),
            None => pick(SecurityProtocol::Plaintext).or_else(|| all.first().cloned()),
        }
    }

    /// The address peers reach this broker at (its inter-broker listener's advertised
    /// address), as (host, port).
    pub fn advertised(&self) -> (String, i32) {
        let protocol = self.inter_broker_listener().map(|l| l.protocol);
        let all = self.advertised_listeners();
        let l = all.iter().find(|l| Some(l.protocol) == protocol).or(all.first());
        l.map(|l| (l.host.clone(), i32::from(l.port))).unwrap_or_else(|| ("127.0.0.1".into(), 9092))
    }

    /// Listeners and what their protocols need (a certificate for TLS, known mechanisms).
    fn validate_security(&self) -> Result<(), ConfigError> {
        let sec = &self.security;
        let listeners = parse_listeners(&sec.listeners).map_err(|e| ConfigError::Invalid("listeners", e))?;
        let advertised =
            parse_listeners(&sec.advertised_listeners).map_err(|e| ConfigError::Invalid("advertised_listeners", e))?;
        if let Some(a) = advertised.iter().find(|a| !listeners.iter().any(|l| l.protocol == a.protocol)) {
            let why = format!("{a}: no such listener in `listeners`");
            return Err(ConfigError::Invalid("advertised_listeners", why));
        }
        let all = self.listeners();
        if all.is_empty() {
            return Err(ConfigError::Invalid("listeners", "no listener: set `listen` or `listeners`".into()));
        }
        if all.iter().any(|l| l.protocol.tls()) && sec.ssl_keystore_location.is_empty() {
            let why = "an SSL or SASL_SSL listener needs ssl_keystore_location".to_string();
            return Err(ConfigError::Invalid("ssl_keystore_location", why));
        }
        for (name, auth) in
            [("ssl_client_auth", &sec.ssl_client_auth), ("sasl_ssl_client_auth", &sec.sasl_ssl_client_auth)]
        {
            if auth != "none" && sec.ssl_truststore_location.is_empty() {
                let why = format!("{name} = {auth} needs ssl_truststore_location");
                return Err(ConfigError::Invalid("ssl_truststore_location", why));
            }
        }
        let name = &sec.inter_broker_listener_name;
        if !name.is_empty() && !all.iter().any(|l| l.name() == name) {
            let why = format!("{name}: no such listener");
            return Err(ConfigError::Invalid("inter_broker_listener_name", why));
        }
        let inter = self.inter_broker_listener();
        if inter.as_ref().is_some_and(|l| l.protocol.sasl()) && sec.inter_broker_sasl_username.is_empty() {
            let why = "a SASL inter-broker listener needs the user brokers log in as".to_string();
            return Err(ConfigError::Invalid("inter_broker_sasl_username", why));
        }
        let known = ["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"];
        if let Some(m) = sec.sasl_enabled_mechanisms.iter().find(|m| !known.contains(&m.as_str())) {
            let why = format!("{m} (known: {})", known.join(", "));
            return Err(ConfigError::Invalid("sasl_enabled_mechanisms", why));
        }
        if all.iter().any(|l| l.protocol.sasl()) && sec.sasl_enabled_mechanisms.is_empty() {
            let why = "a SASL listener needs at least one mechanism".to_string();
            return Err(ConfigError::Invalid("sasl_enabled_mechanisms", why));
        }
        Ok(())
    }

    /// The broker settings topic configs default to.
    pub fn topic_defaults(&self) -> crate::store::configs::topic::BrokerDefaults {
        let l = &self.log;
        crate::store::configs::topic::BrokerDefaults {
            retention_ms: l.retention_ms,
            retention_bytes: l.retention_bytes,
            segment_bytes: l.segment_bytes,
            max_message_bytes: l.max_message_bytes,
            timestamp_type: l.log_message_timestamp_type.clone(),
            before_max_ms: l.log_message_timestamp_before_max_ms,
            after_max_ms: l.log_message_timestamp_after_max_ms,
        }
    }

    /// The broker's log settings, with its one cache of open segment files.
    pub fn log_config(&self, files: std::sync::Arc<FileCache>) -> LogConfig {
        LogConfig {
            segment_bytes: self.log.segment_bytes,
            segment_ms: crate::store::log::DEFAULT_SEGMENT_MS,
            retention_ms: self.log.retention_ms,
            retention_bytes: self.log.retention_bytes,
            index_interval_bytes: 4096,
            zero_ahead_bytes: self.zero_ahead_bytes(),
            files,
            compaction_defaults: crate::store::cleaner::Compaction {
                min_cleanable_dirty_ratio: 0.5,
                min_compaction_lag_ms: self.log.cleaner_min_compaction_lag_ms,
                max_compaction_lag_ms: self.log.cleaner_max_compaction_lag_ms,
                delete_retention_ms: self.log.cleaner_delete_retention_ms,
            },
            compaction: None,
        }
    }

    /// `zero_ahead_bytes` with `-1` resolved for the data directory's file system.
    pub fn zero_ahead_bytes(&self) -> u64 {
        match u64::try_from(self.log.zero_ahead_bytes) {
            Ok(n) => n,
            Err(_) if crate::store::durable::overwrites_in_place(&self.broker.data_dir) => {
                crate::store::log::DEFAULT_ZERO_AHEAD_BYTES
            }
            Err(_) => 0,
        }
    }

    pub fn threads(n: usize) -> usize {
        if n == 0 {
            std::thread::available_parallelism().map(|n| n.get()).unwrap_or(2)
        } else {
            n
        }
    }
}

/// HOST:PORT as (host, port); the port 9092 when it is missing or not a number.
fn host_port(address: &str) -> (String, u16) {
    match address.rsplit_once(':') {
        Some((host, port)) => (host.to_string(), port.parse().unwrap_or(9092)),
        None => (address.to_string(), 9092),
    }
}

/// This machine's name (what Kafka advertises for a listener without a host).
fn this_host() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|h| h.trim().to_string())
        .ok()
        .filter(|h| !h.is_empty())
        .unwrap_or_else(|| "localhost".into())
}

/// `value` of setting `name` must be at least `min`.
fn at_least<T: PartialOrd + std::fmt::Display>(name: &'static str, value: T, min: T) -> Result<(), ConfigError> {
    if value < min {
        return Err(ConfigError::Invalid(name, format!("{value} (must be >= {min})")));
    }
    Ok(())
}

/// `value` of setting `name` must be one of `choices` (in any case when `any_case`).
fn one_of(name: &'static str, value: &str, choices: &[&str], any_case: bool) -> Result<(), ConfigError> {
    let known = |c: &&str| if any_case { c.eq_ignore_ascii_case(value) } else { *c == value };
    if !choices.iter().any(known) {
        return Err(ConfigError::Invalid(name, format!("{value} (known: {})", choices.join(", "))));
    }
    Ok(())
}

/// `value` of setting `name` must be in `[min, max]`.
fn in_range<T: PartialOrd + std::fmt::Display>(
    name: &'static str,
    value: T,
    min: T,
    max: T,
) -> Result<(), ConfigError> {
    if value < min || value > max {
        return Err(ConfigError::Invalid(name, format!("{value} (must be in [{min}, {max}])")));
    }
    Ok(())
}

#[cfg(test)]
mod tests;
