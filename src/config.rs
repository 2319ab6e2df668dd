//! Typed settings: embedded defaults < TOML file < `KAAS_*` environment < command-line flags.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use thiserror::Error;

use crate::store::log::file_cache::FileCache;
use crate::store::log::LogConfig;
use crate::store::topic_config::MIN_SEGMENT_BYTES;

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
    /// Partitions this broker serves at most, all topics together; creations beyond it are
    /// refused with POLICY_VIOLATION. Partitions hold no open file; this bounds their memory.
    /// 0 means the default.
    pub max_partitions: u32,
    /// Segment files kept open at once, all partitions together (a least-recently-used cache;
    /// the others are opened on use). 0 = auto: a quarter of the open-file limit.
    pub max_open_segment_files: usize,
    /// Kafka's log.segment.bytes: [1 MiB, i32::MAX] as in Kafka 4.x.
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
    /// Partitions waiting for an fsync at once from which one syncfs of the data directory's
    /// file system makes them all durable instead of an fsync each (0: never).
    pub group_commit_min_partitions: usize,
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
    /// Finalized group.version advertised to clients: 1 (the default of Apache Kafka 4.x) serves
    /// the consumer group protocol (KIP-848); 0 hides ConsumerGroupHeartbeat/Describe.
    pub group_version: i16,
    /// Highest WriteTxnMarkers version this broker advertises, accepts and sends to peers:
    /// 2 carries KIP-1228's TransactionVersion per marker, 1 is the legacy request (eos-rules 43).
    pub write_txn_markers_max_version: i16,
    /// Kafka's max.connections: open client connections; beyond it new ones are closed at once.
    pub max_connections: usize,
    /// Kafka's max.connections.per.ip.
    pub max_connections_per_ip: usize,
    /// Kafka's connections.max.idle.ms: a connection with nothing in flight is closed after this.
    pub connections_max_idle_ms: u64,
    /// Kafka's queued.max.request.bytes: bytes of requests read and not yet answered, broker-wide;
    /// readers wait beyond it. Must hold at least one max_request_bytes frame.
    pub queued_max_request_bytes: usize,
    /// Bytes of fetched records not yet sent, broker-wide, from the read until they are written
    /// to the socket (protocol::response_budget). Kafka has no such setting.
    pub queued_max_response_bytes: usize,
    /// Kafka's max.incremental.fetch.session.cache.slots: KIP-227 fetch sessions kept
    /// broker-wide (protocol::fetch_session); 0 = none, every fetch is a full one.
    pub max_incremental_fetch_session_cache_slots: usize,
    /// How often a broker reads which brokers sharing the data directory are live and takes or
    /// hands over partitions and the coordinators (actors::membership). A dead broker's share
    /// is taken over within about this long after the kernel releases its locks.
    pub cluster_tick_ms: u64,
    /// Kafka's broker.session.timeout.ms: a peer whose heartbeat has not moved for this long
    /// (on the observer's own clock) is not live, and its share moves (store::cluster::liveness).
    /// A broker that cannot renew its own within two thirds of it stops answering for what it
    /// leads until it does.
    pub broker_session_timeout_ms: u64,
    /// Kafka's broker.heartbeat.interval.ms: how often a broker renews its heartbeat file.
    pub broker_heartbeat_interval_ms: u64,
    /// What a broker does once it finds itself fenced (its peers took over what it served
    /// while it was stalled or cut off from the disk): `rejoin` starts it again in place as a
    /// new incarnation (as a fenced Kafka broker registers again), `exit` stops it with code 75
    /// for a supervisor to restart. Not a Kafka setting.
    pub when_fenced: WhenFenced,
    /// Kafka's group.consumer.heartbeat.interval.ms (KIP-848 consumer groups).
    pub group_consumer_heartbeat_interval_ms: i32,
    /// Kafka's group.consumer.session.timeout.ms: a member silent this long is removed.
    pub group_consumer_session_timeout_ms: i32,
    /// Kafka's group.consumer.max.size. Kafka's default is 2147483647; kaas bounds the members
    /// one group may hold (memory) at 10,000 by default.
    pub group_consumer_max_size: u32,
    /// Kafka's group.consumer.assignors: `uniform` and/or `range`, the first the default.
    pub group_consumer_assignors: Vec<String>,
    /// Kafka's group.consumer.migration.policy (KIP-848 online migration): `bidirectional`,
    /// `upgrade`, `downgrade` or `disabled` (store::group::migration).
    pub group_consumer_migration_policy: String,
    /// Kafka's offsets.retention.minutes: committed offsets of an Empty group expire after this.
    pub offsets_retention_minutes: u64,
    /// Kafka's offsets.retention.check.interval.ms.
    pub offsets_retention_check_interval_ms: u64,
    /// TEST HOOK THAT BREAKS DURABILITY: the partition syncer skips the fdatasync of the log and
    /// still answers as if it had synced, so acks=all no longer means on disk. Only for showing
    /// that the crash-consistency test (tests/interop/python/test_crash_consistency.py) sees a
    /// lost fsync. Never set it otherwise; kaas logs an ERROR at startup when it is set.
    pub debug_skip_fsync: bool,
    /// Kafka's log.message.timestamp.type: "CreateTime" or "LogAppendTime" (the broker stamps
    /// its own time on every batch).
    pub log_message_timestamp_type: String,
    /// Kafka's log.message.timestamp.before.max.ms: how far in the past a CreateTime record
    /// may be (default Long.MAX_VALUE, unbounded).
    pub log_message_timestamp_before_max_ms: i64,
    /// Kafka's log.message.timestamp.after.max.ms: how far in the future a CreateTime record
    /// may be (Kafka 4.x default: one hour).
    pub log_message_timestamp_after_max_ms: i64,
    /// How often the peers' producer-fence files on the shared disk are read (FenceWatcher).
    /// Polling, because inotify does not see another NFS client's writes. Kafka has no such
    /// setting.
    pub fence_poll_interval_ms: u64,
    /// HOST:PORT of the Prometheus endpoint (`GET /metrics`); empty (the default) = off.
    pub metrics_listen: String,
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
            max_partitions: crate::store::topics::DEFAULT_MAX_PARTITIONS,
            max_open_segment_files: 0,
            segment_bytes: 1 << 30,
            retention_ms: 7 * 24 * 3600 * 1000,
            retention_bytes: -1,
            retention_check_interval_ms: 300_000,
            producer_id_expiration_ms: 86_400_000,
            connection_threads: 0,
            partition_threads: 0,
            sync_threads: 2,
            group_commit_min_partitions: 8,
            txn_shards: 4,
            transaction_max_timeout_ms: 900_000,
            transactional_id_expiration_ms: 7 * 24 * 3600 * 1000,
            transaction_abort_check_interval_ms: 10_000,
            transaction_version: 2,
            group_version: 1,
            write_txn_markers_max_version: 2,
            group_initial_rebalance_delay_ms: 3000,
            max_connections: 10_000,
            max_connections_per_ip: 10_000,
            connections_max_idle_ms: 600_000,
            queued_max_request_bytes: 512 * 1024 * 1024,
            queued_max_response_bytes: 512 * 1024 * 1024,
            max_incremental_fetch_session_cache_slots: 1000,
            cluster_tick_ms: 500,
            broker_session_timeout_ms: 6_000,
            broker_heartbeat_interval_ms: 1_000,
            when_fenced: WhenFenced::Rejoin,
            group_consumer_heartbeat_interval_ms: 5000,
            group_consumer_session_timeout_ms: 45_000,
            group_consumer_max_size: 10_000,
            group_consumer_assignors: vec!["uniform".into(), "range".into()],
            group_consumer_migration_policy: "bidirectional".into(),
            offsets_retention_minutes: 10_080,
            offsets_retention_check_interval_ms: 600_000,
            debug_skip_fsync: false,
            log_message_timestamp_type: "CreateTime".into(),
            log_message_timestamp_before_max_ms: i64::MAX,
            log_message_timestamp_after_max_ms: 3_600_000,
            fence_poll_interval_ms: 2000,
            metrics_listen: String::new(),
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
        if s.max_partitions == 0 {
            // Older releases documented 0 as "auto".
            s.max_partitions = crate::store::topics::DEFAULT_MAX_PARTITIONS;
        }
        s.validate()?;
        Ok(s)
    }

    /// The consumer group protocol's settings (KIP-848).
    pub fn consumer_group_config(&self) -> crate::store::group::consumer::ConsumerConfig {
        use crate::store::group::consumer::{Assignor, ConsumerConfig};
        let assignors: Vec<Assignor> =
            self.group_consumer_assignors.iter().filter_map(|n| Assignor::from_name(n)).collect();
        ConsumerConfig {
            heartbeat_interval_ms: self.group_consumer_heartbeat_interval_ms,
            session_timeout_ms: self.group_consumer_session_timeout_ms,
            max_size: self.group_consumer_max_size as usize,
            assignors: if assignors.is_empty() { ConsumerConfig::default().assignors } else { assignors },
        }
    }

    /// Kafka's group.consumer.migration.policy; None when the setting names no policy.
    pub fn migration_policy(&self) -> Option<crate::store::group::MigrationPolicy> {
        crate::store::group::MigrationPolicy::parse(&self.group_consumer_migration_policy)
    }

    fn validate(&self) -> Result<(), ConfigError> {
        // Kafka's group.consumer.*: intervals of at least 1 ms, the interval below the timeout,
        // known assignors.
        if self.group_consumer_heartbeat_interval_ms < 1
            || self.group_consumer_session_timeout_ms <= self.group_consumer_heartbeat_interval_ms
        {
            return Err(ConfigError::Invalid(
                "group_consumer_session_timeout_ms",
                format!(
                    "{} (must be above group_consumer_heartbeat_interval_ms {}, which must be >= 1)",
                    self.group_consumer_session_timeout_ms, self.group_consumer_heartbeat_interval_ms
                ),
            ));
        }
        // A broker must renew several times within the two thirds of the timeout it has to
        // prove its own lease fresh.
        if self.broker_heartbeat_interval_ms < 1
            || self.broker_heartbeat_interval_ms.saturating_mul(3) > self.broker_session_timeout_ms
        {
            return Err(ConfigError::Invalid(
                "broker_session_timeout_ms",
                format!(
                    "{} (must be at least 3 x broker_heartbeat_interval_ms {}, which must be >= 1)",
                    self.broker_session_timeout_ms, self.broker_heartbeat_interval_ms
                ),
            ));
        }
        at_least("group_consumer_max_size", self.group_consumer_max_size, 1)?;
        let known = |n: &String| crate::store::group::consumer::Assignor::from_name(n).is_some();
        if self.group_consumer_assignors.is_empty() || !self.group_consumer_assignors.iter().all(known) {
            return Err(ConfigError::Invalid(
                "group_consumer_assignors",
                format!("{:?} (known: uniform, range)", self.group_consumer_assignors),
            ));
        }
        if self.migration_policy().is_none() {
            return Err(ConfigError::Invalid(
                "group_consumer_migration_policy",
                format!(
                    "{} (known: bidirectional, upgrade, downgrade, disabled)",
                    self.group_consumer_migration_policy
                ),
            ));
        }
        // Kafka's bounds where Kafka has the setting (an INT is at most i32::MAX).
        let int_max = i32::MAX as usize;
        at_least("num_partitions", self.num_partitions, 1)?;
        in_range("max_request_bytes", self.max_request_bytes, 64, int_max)?;
        at_least("max_inflight_requests", self.max_inflight_requests, 1)?;
        // Kafka 4.x's log.segment.bytes: an INT, at least 1 MiB.
        in_range("segment_bytes", self.segment_bytes, MIN_SEGMENT_BYTES as u64, i32::MAX as u64)?;
        // Kafka's log.retention.ms: -1 keeps for ever.
        at_least("retention_ms", self.retention_ms, -1)?;
        // Kafka's message.max.bytes is an INT; a batch must also fit in a request.
        in_range("max_message_bytes", self.max_message_bytes, 0, self.max_request_bytes.min(int_max))?;
        at_least("queued_max_response_bytes", self.queued_max_response_bytes, 1024)?;
        // Kafka's fetch.max.bytes: at least 1024, an INT.
        in_range("fetch_max_bytes", self.fetch_max_bytes, 1024, int_max)?;
        // Kafka's log.retention.check.interval.ms, producer.id.expiration.ms,
        // transaction.max.timeout.ms, transactional.id.expiration.ms: at least 1.
        at_least("retention_check_interval_ms", self.retention_check_interval_ms, 1)?;
        at_least("producer_id_expiration_ms", self.producer_id_expiration_ms, 1)?;
        at_least("transaction_max_timeout_ms", self.transaction_max_timeout_ms, 1)?;
        at_least("transactional_id_expiration_ms", self.transactional_id_expiration_ms, 1)?;
        at_least("sync_threads", self.sync_threads, 1)?;
        // Auto-created topics must fit under an explicit partition limit.
        at_least("max_partitions", i64::from(self.max_partitions), i64::from(self.num_partitions))?;
        in_range("txn_shards", self.txn_shards, 1, MAX_TXN_SHARDS)?;
        in_range("group_version", self.group_version, 0, 1)?;
        in_range("transaction_version", self.transaction_version, 1, 2)?;
        in_range("write_txn_markers_max_version", self.write_txn_markers_max_version, 1, 2)?;
        // Each broker owns a 2^40 producer-id range below the transaction shards' ranges at 2^50.
        in_range("node_id", self.node_id, 0, MAX_NODE_ID)?;
        at_least("max_connections", self.max_connections, 1)?;
        at_least("max_connections_per_ip", self.max_connections_per_ip, 1)?;
        // One request of the largest size must fit in the pool.
        at_least("queued_max_request_bytes", self.queued_max_request_bytes, self.max_request_bytes)?;
        // Kafka: ValidString.in("CreateTime", "LogAppendTime"), atLeast(0).
        if !matches!(self.log_message_timestamp_type.as_str(), "CreateTime" | "LogAppendTime") {
            let why = format!("{} (known: CreateTime, LogAppendTime)", self.log_message_timestamp_type);
            return Err(ConfigError::Invalid("log_message_timestamp_type", why));
        }
        at_least("log_message_timestamp_before_max_ms", self.log_message_timestamp_before_max_ms, 0)?;
        at_least("log_message_timestamp_after_max_ms", self.log_message_timestamp_after_max_ms, 0)?;
        // Below this the poll would mostly re-read unchanged files.
        at_least("fence_poll_interval_ms", self.fence_poll_interval_ms, 10)?;
        Ok(())
    }

    pub fn advertised(&self) -> (String, i32) {
        let addr = self.advertised_listener.as_deref().unwrap_or(&self.listen);
        match addr.rsplit_once(':') {
            Some((host, port)) => (host.to_string(), port.parse().unwrap_or(9092)),
            None => (addr.to_string(), 9092),
        }
    }

    /// The broker settings topic configs default to.
    pub fn topic_defaults(&self) -> crate::store::topic_config::BrokerDefaults {
        crate::store::topic_config::BrokerDefaults {
            retention_ms: self.retention_ms,
            retention_bytes: self.retention_bytes,
            segment_bytes: self.segment_bytes,
            max_message_bytes: self.max_message_bytes,
            timestamp_type: self.log_message_timestamp_type.clone(),
            before_max_ms: self.log_message_timestamp_before_max_ms,
            after_max_ms: self.log_message_timestamp_after_max_ms,
        }
    }

    /// The broker's log settings, with its one cache of open segment files.
    pub fn log_config(&self, files: std::sync::Arc<FileCache>) -> LogConfig {
        LogConfig {
            segment_bytes: self.segment_bytes,
            retention_ms: self.retention_ms,
            retention_bytes: self.retention_bytes,
            index_interval_bytes: 4096,
            files,
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

/// `value` of setting `name` must be at least `min`.
fn at_least<T: PartialOrd + std::fmt::Display>(name: &'static str, value: T, min: T) -> Result<(), ConfigError> {
    if value < min {
        return Err(ConfigError::Invalid(name, format!("{value} (must be >= {min})")));
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

    fn load_toml(text: &str) -> Result<Settings, ConfigError> {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("kaas.toml");
        std::fs::write(&file, text).unwrap();
        Settings::load(Some(&file), &Overrides::default())
    }

    fn refused(text: &str, setting: &str) -> bool {
        matches!(load_toml(text), Err(ConfigError::Invalid(name, _)) if name == setting)
    }

    #[test]
    fn when_fenced_is_rejoin_or_exit() {
        assert_eq!(load_toml("").unwrap().when_fenced, WhenFenced::Rejoin);
        assert_eq!(load_toml("when_fenced = \"exit\"\n").unwrap().when_fenced, WhenFenced::Exit);
        assert!(load_toml("when_fenced = \"restart\"\n").is_err());
    }

    /// The backticked words of a table cell.
    fn backticked(cell: &str) -> Vec<&str> {
        cell.split('`').skip(1).step_by(2).collect()
    }

    /// How docs/configuration.md writes a default.
    fn as_documented(v: &serde_json::Value) -> String {
        match v {
            serde_json::Value::String(s) if s.is_empty() => "\"\"".to_string(),
            serde_json::Value::String(s) => s.clone(),
            serde_json::Value::Array(items) => {
                format!("[{}]", items.iter().map(|i| i.to_string()).collect::<Vec<_>>().join(", "))
            }
            other => other.to_string(),
        }
    }

    /// docs/configuration.md's settings table names every setting, no other, each with the
    /// default `Settings::default()` has (a row whose default is not code, "= `listen`", says
    /// how it is derived).
    #[test]
    fn the_documented_settings_are_the_settings() {
        let doc = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/configuration.md")).unwrap();
        let table = doc.split("\n## Settings\n").nth(1).unwrap().split("\n## ").next().unwrap();
        let defaults = serde_json::to_value(Settings::default()).unwrap();
        let fields = defaults.as_object().unwrap();
        let mut documented = std::collections::BTreeSet::new();
        for row in table.lines().filter(|l| l.starts_with("| `")) {
            let cells: Vec<&str> = row.split('|').map(str::trim).collect();
            for key in backticked(cells[1]) {
                let value = fields.get(key).unwrap_or_else(|| panic!("documented setting {key} does not exist"));
                if cells[2].starts_with('`') {
                    assert_eq!(backticked(cells[2])[0], as_documented(value), "the documented default of {key}");
                }
                documented.insert(key.to_string());
            }
        }
        let settings: std::collections::BTreeSet<String> = fields.keys().cloned().collect();
        assert_eq!(documented, settings, "settings missing from docs/configuration.md");
    }

    #[test]
    fn invalid_values_are_refused() {
        assert!(refused("num_partitions = 0\n", "num_partitions"));
    }

    #[test]
    fn segment_bytes_is_within_kafkas_range() {
        assert!(refused("segment_bytes = 0\n", "segment_bytes"));
        assert!(refused("segment_bytes = 1048575\n", "segment_bytes"));
        assert!(refused("segment_bytes = 1000000000000\n", "segment_bytes"));
        assert!(refused("segment_bytes = 2147483648\n", "segment_bytes"));
        assert_eq!(load_toml("segment_bytes = 2147483647\n").unwrap().segment_bytes, 2_147_483_647);
        assert!(load_toml("segment_bytes = 1048576\n").is_ok());
    }

    #[test]
    fn retention_ms_is_at_least_minus_one() {
        assert!(refused("retention_ms = -2\n", "retention_ms"));
        assert!(load_toml("retention_ms = -1\n").is_ok());
    }

    #[test]
    fn max_message_bytes_fits_in_a_request() {
        assert!(refused("max_message_bytes = 200000000\n", "max_message_bytes"));
        assert!(load_toml("max_message_bytes = 104857600\n").is_ok());
    }

    #[test]
    fn request_and_fetch_sizes_fit_an_int() {
        assert!(refused("max_request_bytes = 4294967296\n", "max_request_bytes"));
        assert!(refused("fetch_max_bytes = 1023\n", "fetch_max_bytes"));
        assert!(refused("queued_max_response_bytes = 1023\n", "queued_max_response_bytes"));
        assert!(refused("fetch_max_bytes = 4294967296\n", "fetch_max_bytes"));
    }

    #[test]
    fn intervals_and_expirations_are_positive() {
        assert!(refused("retention_check_interval_ms = 0\n", "retention_check_interval_ms"));
        assert!(refused("producer_id_expiration_ms = 0\n", "producer_id_expiration_ms"));
        assert!(refused("transaction_max_timeout_ms = 0\n", "transaction_max_timeout_ms"));
        assert!(refused("transactional_id_expiration_ms = 0\n", "transactional_id_expiration_ms"));
        assert!(refused("sync_threads = 0\n", "sync_threads"));
        assert!(refused("fence_poll_interval_ms = 9\n", "fence_poll_interval_ms"));
        assert_eq!(load_toml("fence_poll_interval_ms = 10\n").unwrap().fence_poll_interval_ms, 10);
        assert_eq!(load_toml("").unwrap().fence_poll_interval_ms, 2000);
    }

    #[test]
    fn an_explicit_partition_limit_must_hold_an_auto_created_topic() {
        assert!(refused("max_partitions = 2\nnum_partitions = 3\n", "max_partitions"));
        assert!(load_toml("max_partitions = 3\nnum_partitions = 3\n").is_ok());
        assert_eq!(load_toml("").unwrap().max_partitions, 200_000);
        assert_eq!(load_toml("max_partitions = 0\n").unwrap().max_partitions, 200_000, "0 is the default");
    }

    #[test]
    fn write_txn_markers_max_version_is_1_or_2() {
        assert_eq!(load_toml("").unwrap().write_txn_markers_max_version, 2);
        assert_eq!(load_toml("write_txn_markers_max_version = 1\n").unwrap().write_txn_markers_max_version, 1);
        assert!(refused("write_txn_markers_max_version = 0\n", "write_txn_markers_max_version"));
        assert!(refused("write_txn_markers_max_version = 3\n", "write_txn_markers_max_version"));
    }

    #[test]
    fn the_metrics_endpoint_is_off_unless_set() {
        assert_eq!(load_toml("").unwrap().metrics_listen, "");
        assert_eq!(load_toml("metrics_listen = \"127.0.0.1:9404\"\n").unwrap().metrics_listen, "127.0.0.1:9404");
    }

    #[test]
    fn group_commit_starts_at_eight_partitions_unless_set() {
        assert_eq!(load_toml("").unwrap().group_commit_min_partitions, 8);
        assert_eq!(load_toml("group_commit_min_partitions = 2\n").unwrap().group_commit_min_partitions, 2);
        assert_eq!(load_toml("group_commit_min_partitions = 0\n").unwrap().group_commit_min_partitions, 0);
    }

    #[test]
    fn debug_skip_fsync_is_off_unless_set() {
        assert!(!Settings::default().debug_skip_fsync);
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("kaas.toml");
        std::fs::write(&file, "debug_skip_fsync = true\n").unwrap();
        assert!(Settings::load(Some(&file), &Overrides::default()).unwrap().debug_skip_fsync);
    }
}
