//! Typed settings: embedded defaults < TOML file < `KAAS_*` environment < command-line flags.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use thiserror::Error;

use crate::store::log::LogConfig;

#[derive(Debug, Error)]
pub enum ConfigError {
    #[error("configuration: {0}")]
    Load(#[from] config::ConfigError),
    #[error("invalid setting {0}: {1}")]
    Invalid(&'static str, String),
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(default)]
pub struct Settings {
    /// This broker's id (also picks its producer-id range).
    pub node_id: i32,
    pub data_dir: PathBuf,
    /// Address the listener binds, HOST:PORT.
    pub listen: String,
    /// HOST:PORT clients are told to connect to; defaults to `listen`.
    pub advertised_listener: Option<String>,
    /// Largest request frame accepted (Kafka's socket.request.max.bytes).
    pub max_request_bytes: usize,
    /// Largest record batch accepted (Kafka's message.max.bytes).
    pub max_message_bytes: usize,
    /// Cap on one Fetch response (Kafka's fetch.max.bytes), whatever the client asks for.
    pub fetch_max_bytes: usize,
    /// Requests of one connection being worked on at once; reading pauses beyond it.
    pub max_inflight_requests: usize,
    pub auto_create_topics: bool,
    /// Partition count of auto-created topics (Kafka's num.partitions).
    pub num_partitions: i32,
    pub segment_bytes: u64,
    /// -1 keeps data forever.
    pub retention_ms: i64,
    pub retention_bytes: i64,
    pub retention_check_interval_ms: u64,
    pub producer_id_expiration_ms: i64,
    /// Threads serving client connections (0 = one per core).
    pub connection_threads: usize,
    /// Threads running partition-leader actors (0 = one per core).
    pub partition_threads: usize,
    /// Threads issuing fsyncs (group commit).
    pub sync_threads: usize,
    /// Transaction-coordinator shards; a transactional id maps to one by hash. Fixed for the
    /// life of a data dir (each shard has its own database).
    pub txn_shards: usize,
    /// Kafka's transaction.max.timeout.ms.
    pub transaction_max_timeout_ms: i32,
    /// Kafka's transactional.id.expiration.ms.
    pub transactional_id_expiration_ms: i64,
    /// Kafka's transaction.abort.timed.out.transaction.cleanup.interval.ms.
    pub transaction_abort_check_interval_ms: u64,
    /// Kafka's group.initial.rebalance.delay.ms: how long a new group waits for more members.
    pub group_initial_rebalance_delay_ms: u64,
    /// Finalized transaction.version advertised to clients: 1 (legacy) or 2 (KIP-890, the
    /// default of new Apache Kafka 4.x clusters).
    pub transaction_version: i16,
    /// Kafka's log.message.timestamp.type: "CreateTime" or "LogAppendTime" (the broker stamps
    /// its own time on every batch).
    pub log_message_timestamp_type: String,
    /// Kafka's log.message.timestamp.before.max.ms: how far in the past a CreateTime record
    /// may be (default Long.MAX_VALUE, unbounded).
    pub log_message_timestamp_before_max_ms: i64,
    /// Kafka's log.message.timestamp.after.max.ms: how far in the future a CreateTime record
    /// may be (Kafka 4.x default: one hour).
    pub log_message_timestamp_after_max_ms: i64,
}

impl Default for Settings {
    fn default() -> Self {
        Settings {
            node_id: 0,
            data_dir: PathBuf::from("./kaas-data"),
            listen: "127.0.0.1:9092".into(),
            advertised_listener: None,
            max_request_bytes: 100 * 1024 * 1024,
            max_message_bytes: 1_048_588,
            fetch_max_bytes: 57_671_680,
            max_inflight_requests: 64,
            auto_create_topics: true,
            num_partitions: 1,
            segment_bytes: 1 << 30,
            retention_ms: 7 * 24 * 3600 * 1000,
            retention_bytes: -1,
            retention_check_interval_ms: 300_000,
            producer_id_expiration_ms: 86_400_000,
            connection_threads: 0,
            partition_threads: 0,
            sync_threads: 2,
            txn_shards: 4,
            transaction_max_timeout_ms: 900_000,
            transactional_id_expiration_ms: 7 * 24 * 3600 * 1000,
            transaction_abort_check_interval_ms: 10_000,
            transaction_version: 2,
            group_initial_rebalance_delay_ms: 3000,
            log_message_timestamp_type: "CreateTime".into(),
            log_message_timestamp_before_max_ms: i64::MAX,
            log_message_timestamp_after_max_ms: 3_600_000,
        }
    }
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
        let mut builder = config::Config::builder();
        if let Some(path) = file {
            builder = builder.add_source(config::File::from(path).format(config::FileFormat::Toml).required(true));
        }
        builder = builder.add_source(config::Environment::with_prefix("KAAS").prefix_separator("_").try_parsing(true));
        let mut s: Settings = builder.build()?.try_deserialize()?;
        if let Some(d) = &overrides.data_dir {
            s.data_dir = d.clone();
        }
        if let Some(l) = &overrides.listen {
            s.listen = l.clone();
        }
        if let Some(n) = overrides.node_id {
            s.node_id = n;
        }
        s.validate()?;
        Ok(s)
    }

    fn validate(&self) -> Result<(), ConfigError> {
        if self.num_partitions < 1 {
            return Err(ConfigError::Invalid("num_partitions", self.num_partitions.to_string()));
        }
        if self.max_request_bytes < 64 {
            return Err(ConfigError::Invalid("max_request_bytes", self.max_request_bytes.to_string()));
        }
        if self.max_inflight_requests == 0 {
            return Err(ConfigError::Invalid("max_inflight_requests", "0".into()));
        }
        if self.segment_bytes < 1024 {
            return Err(ConfigError::Invalid("segment_bytes", self.segment_bytes.to_string()));
        }
        if self.txn_shards == 0 {
            return Err(ConfigError::Invalid("txn_shards", "0".into()));
        }
        if !(1..=2).contains(&self.transaction_version) {
            return Err(ConfigError::Invalid("transaction_version", self.transaction_version.to_string()));
        }
        // Kafka: ValidString.in("CreateTime", "LogAppendTime"), atLeast(0).
        if !matches!(self.log_message_timestamp_type.as_str(), "CreateTime" | "LogAppendTime") {
            return Err(ConfigError::Invalid("log_message_timestamp_type", self.log_message_timestamp_type.clone()));
        }
        if self.log_message_timestamp_before_max_ms < 0 || self.log_message_timestamp_after_max_ms < 0 {
            return Err(ConfigError::Invalid("log_message_timestamp_*_max_ms", "negative".into()));
        }
        if self.node_id < 0 {
            return Err(ConfigError::Invalid("node_id", self.node_id.to_string()));
        }
        Ok(())
    }

    pub fn advertised(&self) -> (String, i32) {
        let addr = self.advertised_listener.as_deref().unwrap_or(&self.listen);
        match addr.rsplit_once(':') {
            Some((host, port)) => (host.to_string(), port.parse().unwrap_or(9092)),
            None => (addr.to_string(), 9092),
        }
    }

    pub fn log_config(&self) -> LogConfig {
        LogConfig {
            segment_bytes: self.segment_bytes,
            retention_ms: self.retention_ms,
            retention_bytes: self.retention_bytes,
            index_interval_bytes: 4096,
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn file_then_flags_win() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("kaas.toml");
        std::fs::write(&file, "num_partitions = 4\nlisten = \"127.0.0.1:1111\"\n").unwrap();
        let s = Settings::load(Some(&file), &Overrides::default()).unwrap();
        assert_eq!((s.num_partitions, s.listen.as_str()), (4, "127.0.0.1:1111"));
        let o = Overrides { listen: Some("127.0.0.1:2222".into()), ..Overrides::default() };
        let s = Settings::load(Some(&file), &o).unwrap();
        assert_eq!(s.listen, "127.0.0.1:2222");
        assert_eq!(s.advertised(), ("127.0.0.1".to_string(), 2222));
    }

    #[test]
    fn invalid_values_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("kaas.toml");
        std::fs::write(&file, "num_partitions = 0\n").unwrap();
        assert!(Settings::load(Some(&file), &Overrides::default()).is_err());
    }
}
