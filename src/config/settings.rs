//! Every kaas setting, declared once: its key, type, default, bounds, description (the settings
//! table of docs/configuration.md is made from it) and the Kafka broker configs it is
//! (DescribeConfigs lists them). Keys are flat in the TOML file and as `KAAS_<KEY>` variables;
//! the sections only group them in code (`settings.log.segment_bytes`). Rules between settings
//! are in `Settings::validate` (config/mod.rs). A new setting is one entry here.

use std::path::PathBuf;

use super::declare::{settings, Bounds, Declared, KafkaConfig, KafkaValue};
use super::{at_least, in_range, one_of, ConfigError, WhenFenced, MAX_NODE_ID, MAX_TXN_SHARDS};
use crate::store::configs::topic::MIN_SEGMENT_BYTES;
use crate::store::topics::DEFAULT_MAX_PARTITIONS;

/// Kafka's INT settings are at most this.
const INT_MAX: usize = i32::MAX as usize;

/// Kafka's form of a listener list.
fn kafka_listeners(list: Vec<super::Listener>) -> String {
    list.iter().map(|l| l.to_string()).collect::<Vec<_>>().join(",")
}

settings! {
    /// Who this broker is and how it runs.
    broker: BrokerSettings {
        /// Broker id; also selects this broker's producer-id range (each broker owns 2^40 ids,
        /// below the transaction shards' ranges).
        node_id: i32 = 0, range 0, MAX_NODE_ID,
            kafka "broker.id" TYPE_INT Some("-1"),
            kafka "node.id" TYPE_INT None;
        /// Where everything lives (see [ARCHITECTURE.md, "On-disk layout"](../ARCHITECTURE.md#on-disk-layout)).
        data_dir: PathBuf = PathBuf::from("./kaas-data"),
            kafka "log.dirs" TYPE_LIST None => |s| s.broker.data_dir.join("topics").to_string_lossy().into_owned();
        /// Threads serving client connections; `0`: one per core.
        connection_threads: usize = 0;
        /// Threads running the partition-leader actors; `0`: one per core.
        partition_threads: usize = 0;
        /// HOST:PORT of the Prometheus endpoint (`GET /metrics`, see
        /// [operations.md, "Metrics"](operations.md#metrics)); empty serves none.
        /// `KAAS_METRICS_LISTEN=127.0.0.1:9404` turns it on. An address that cannot be bound
        /// stops the broker at start.
        metrics_listen: String = String::new();
    }

    /// Listening, connections, requests and what one answer may hold.
    network: NetworkSettings {
        /// Address the PLAINTEXT listener binds, HOST:PORT, unless `listeners` names a PLAINTEXT
        /// listener; empty: none.
        listen: String = "127.0.0.1:9092".into();
        /// HOST:PORT the PLAINTEXT listener gives clients in Metadata and FindCoordinator
        /// answers; none: `listen`.
        advertised_listener: Option<String> = None;
        /// Largest request frame (Kafka's `socket.request.max.bytes`); a longer frame closes the
        /// connection.
        max_request_bytes: usize = 100 * 1024 * 1024, range 64, INT_MAX,
            kafka "socket.request.max.bytes" TYPE_INT Some("104857600");
        /// Requests of one connection worked on at once; reading pauses beyond it.
        max_inflight_requests: usize = 64, at_least 1;
        /// Kafka's `max.connections`: client connections beyond it are closed at once (Kafka's
        /// default is unlimited).
        max_connections: usize = 10_000, at_least 1,
            kafka "max.connections" TYPE_INT Some("2147483647");
        /// Kafka's `max.connections.per.ip`.
        max_connections_per_ip: usize = 10_000, at_least 1,
            kafka "max.connections.per.ip" TYPE_INT Some("2147483647");
        /// Kafka's `connections.max.idle.ms`: a connection with nothing in flight is closed after
        /// this.
        connections_max_idle_ms: u64 = 600_000,
            kafka "connections.max.idle.ms" TYPE_LONG Some("600000");
        /// Kafka's `queued.max.request.bytes`: bytes of requests read and not yet answered,
        /// broker-wide; a connection waits (stops reading) beyond it. Must be at least
        /// `max_request_bytes` (Kafka's default is unlimited).
        queued_max_request_bytes: usize = 512 * 1024 * 1024,
            kafka "queued.max.request.bytes" TYPE_LONG Some("-1");
        /// Bytes of fetched records not yet sent, broker-wide, from the read until the client
        /// has taken them off the socket; beyond it fetches answer without data after their
        /// `max_wait_ms` until bytes come back. Records are sent with sendfile straight from the
        /// segment files (only a range above 64 MiB is read into memory), so this bounds what
        /// slow consumers keep in flight rather than memory. Kafka has no such setting.
        queued_max_response_bytes: usize = 512 * 1024 * 1024, at_least 1024;
        /// Kafka's `fetch.max.bytes`: the cap on one Fetch answer, whatever the client asks for.
        fetch_max_bytes: usize = 57_671_680, range 1024, INT_MAX,
            kafka "fetch.max.bytes" TYPE_INT Some("57671680");
        /// Kafka's `max.incremental.fetch.session.cache.slots`: KIP-227 incremental fetch
        /// sessions kept broker-wide (`0`: none, every fetch is a full one). A full cache gives a
        /// new session only by evicting one as Kafka does (one unused for 120 s, or a smaller one
        /// older than that); sessions unused for 120 s are dropped. All sessions together cache
        /// at most 200,000 partitions (about 30 MiB): a session that would pass it is not
        /// created, or is closed (FETCH_SESSION_ID_NOT_FOUND, the client starts over).
        max_incremental_fetch_session_cache_slots: usize = 1000,
            kafka "max.incremental.fetch.session.cache.slots" TYPE_INT Some("1000");
    }

    /// Topics, partition logs, retention and durability.
    log: LogSettings {
        /// Create a topic a Metadata request names and allows to create (a Produce to an unknown topic is UNKNOWN_TOPIC_OR_PARTITION, as in Kafka).
        auto_create_topics: bool = true,
            kafka "auto.create.topics.enable" TYPE_BOOLEAN Some("true");
        /// Kafka's `num.partitions`: partitions of auto-created topics.
        num_partitions: i32 = 1, at_least 1,
            kafka "num.partitions" TYPE_INT Some("1");
        /// Partitions this broker serves, all topics together; a CreateTopics or auto-creation
        /// beyond it is refused with POLICY_VIOLATION (44). Partitions hold no open file (see
        /// `max_open_segment_files`), so this bounds memory (about 5 KiB per idle partition).
        /// `0` is the default. Kafka has no such setting (KIP-578 was not adopted).
        max_partitions: u32 = DEFAULT_MAX_PARTITIONS;
        /// Segment files open at once, all partitions together: a least-recently-used cache, the
        /// others are opened on use. As many again may be held open by Fetch answers waiting to
        /// be sent with sendfile; past that, a partition's records are copied into the answer
        /// (`kaas_fetch_copied_reads`), so a fetch of thousands of partitions never runs out of
        /// descriptors. `0`: a quarter of the open-file limit (kaas raises its soft `nofile` to
        /// the hard limit at start).
        max_open_segment_files: usize = 0;
        /// Kafka's `log.segment.bytes`: a partition's active segment is rolled once it would grow
        /// past this.
        segment_bytes: u64 = 1 << 30, range MIN_SEGMENT_BYTES as u64, i32::MAX as u64,
            kafka "log.segment.bytes" TYPE_INT Some("1073741824");
        /// Bytes of zeros written into a partition's active segment ahead of its appends (half
        /// of them at a time), so that an fsync covers blocks already written instead of growing
        /// the file: on ext4 an fsync that grows a file also commits the file system's journal,
        /// about twice the time and CPU of one that does not (docs/performance.md). Never more
        /// than the segment holds (rounded up to a 4 KiB block), nor past `segment_bytes`. A
        /// segment file may so end in zeros past its last batch: opening the log ignores them; a
        /// rolled segment and, at a clean stop, the active one are cut to their last batch; a
        /// file sealed by a takeover (a restart after a crash) keeps them. `0`: segments grow
        /// with each append. `-1` (the default): 524288 (512 KiB) when the data directory is on
        /// ext4 or XFS, else `0` (btrfs copies on write anyway; on JuiceFS zeros ahead made each
        /// fsync slower here; on NFS and CephFS they would cross the network). Kafka's
        /// `log.preallocate` (off by default) preallocates a whole segment, for Windows.
        zero_ahead_bytes: i64 = -1, range -1, 1 << 30;
        /// Kafka's `log.retention.ms`: whole segments whose newest record is older than this are
        /// deleted, the active one too (a new empty one is rolled at the log end, as Kafka does),
        /// so an idle partition's records expire; idempotent producers' state stays until
        /// `producer_id_expiration_ms`. `-1`: kept forever.
        retention_ms: i64 = 7 * 24 * 3600 * 1000, at_least -1,
            kafka "log.retention.ms" TYPE_LONG None;
        /// Kafka's `log.retention.bytes`: the size a partition's log is cut back to by deleting
        /// its oldest segments; `-1`: no limit.
        retention_bytes: i64 = -1,
            kafka "log.retention.bytes" TYPE_LONG Some("-1");
        /// Kafka's `log.retention.check.interval.ms`: how often retention and producer-state
        /// expiry run.
        retention_check_interval_ms: u64 = 300_000, at_least 1,
            kafka "log.retention.check.interval.ms" TYPE_LONG Some("300000");
        /// Kafka's `log.cleaner.enable`: the log cleaner compacts `cleanup.policy=compact`
        /// topics (docs/compaction.md). Off: compacted topics keep every record.
        cleaner_enable: bool = true,
            kafka "log.cleaner.enable" TYPE_BOOLEAN Some("true");
        /// Kafka's `log.cleaner.threads`: passes that run at once, each on its own thread.
        cleaner_threads: usize = 1, range 1, 64,
            kafka "log.cleaner.threads" TYPE_INT Some("1");
        /// Kafka's `log.cleaner.dedupe.buffer.size`: memory for the key maps of all cleaner
        /// threads together (24 bytes a key); a log with more keys is cleaned in several passes.
        cleaner_dedupe_buffer_size: usize = 128 << 20, range 1 << 10, 1usize << 34,
            kafka "log.cleaner.dedupe.buffer.size" TYPE_LONG Some("134217728");
        /// Kafka's `log.cleaner.io.max.bytes.per.second`: bytes the cleaner threads read and
        /// write per second, all together; `0`: no limit (Kafka's default, Double.MAX_VALUE).
        cleaner_io_max_bytes_per_second: u64 = 0,
            kafka "log.cleaner.io.max.bytes.per.second" TYPE_LONG None => |s| {
                if s.log.cleaner_io_max_bytes_per_second == 0 {
                    "1.7976931348623157E308".to_string()
                } else {
                    s.log.cleaner_io_max_bytes_per_second.to_string()
                }
            };
        /// Kafka's `log.cleaner.backoff.ms`: how long a cleaner thread sleeps when no log needs
        /// cleaning.
        cleaner_backoff_ms: u64 = 15_000, at_least 1,
            kafka "log.cleaner.backoff.ms" TYPE_LONG Some("15000");
        /// Kafka's `log.cleaner.delete.retention.ms`: the default of the topic config
        /// `delete.retention.ms` (how long tombstones and transaction markers stay after they
        /// were first cleaned).
        cleaner_delete_retention_ms: i64 = 86_400_000, at_least 0,
            kafka "log.cleaner.delete.retention.ms" TYPE_LONG Some("86400000");
        /// Kafka's `log.cleaner.min.compaction.lag.ms`: the default of `min.compaction.lag.ms`.
        cleaner_min_compaction_lag_ms: i64 = 0, at_least 0,
            kafka "log.cleaner.min.compaction.lag.ms" TYPE_LONG Some("0");
        /// Kafka's `log.cleaner.max.compaction.lag.ms`: the default of `max.compaction.lag.ms`.
        cleaner_max_compaction_lag_ms: i64 = i64::MAX, at_least 1,
            kafka "log.cleaner.max.compaction.lag.ms" TYPE_LONG Some("9223372036854775807");
        /// Kafka's `message.max.bytes`: the largest record batch (MESSAGE_TOO_LARGE beyond),
        /// unless the topic's `max.message.bytes` says otherwise. At most `max_request_bytes`.
        max_message_bytes: usize = 1_048_588, range 0, INT_MAX,
            kafka "message.max.bytes" TYPE_INT Some("1048588");
        /// Kafka's `log.message.timestamp.type`: `LogAppendTime` stamps the broker's time on
        /// every batch and answers it as `log_append_time`.
        log_message_timestamp_type: String = "CreateTime".into(), one_of ["CreateTime", "LogAppendTime"],
            kafka "log.message.timestamp.type" TYPE_STRING Some("CreateTime");
        /// Kafka's `log.message.timestamp.before.max.ms`: how far in the past a CreateTime record
        /// may be (INVALID_TIMESTAMP, 32, beyond).
        log_message_timestamp_before_max_ms: i64 = i64::MAX, at_least 0,
            kafka "log.message.timestamp.before.max.ms" TYPE_LONG Some("9223372036854775807");
        /// Kafka's `log.message.timestamp.after.max.ms`: how far in the future a CreateTime
        /// record may be (INVALID_TIMESTAMP, 32, beyond).
        log_message_timestamp_after_max_ms: i64 = 3_600_000, at_least 0,
            kafka "log.message.timestamp.after.max.ms" TYPE_LONG Some("3600000");
        /// Threads issuing fsyncs (group commit).
        sync_threads: usize = 2, at_least 1;
        /// fsyncs one partition may have in flight at once (appends go on into the page cache
        /// while any run; each is acknowledged once every sync asked for before its own has
        /// finished). `1` by default: on the 2-core development machine (ext4, virtio) `2` and
        /// `3` made 50-90% more fsyncs for no more records/s at one partition, whose fsyncs were
        /// in flight only half of the time (docs/performance.md). More than `sync_threads`
        /// gains nothing.
        partition_syncs_in_flight: usize = 1, at_least 1;
        /// When this many partitions wait for an fsync at once, one `syncfs` of the data
        /// directory's file system makes them all durable (one device flush instead of one per
        /// partition); `0`: an fsync per partition always. Not used on FUSE file systems, whose
        /// syncfs may not flush. Lower it (to 2) when the data directory has a file system of
        /// its own: at a fixed 20,000 records/s over 16 partitions it cut kaas's CPU by about 13%
        /// here. Keep it high when other busy writers share the file system: every syncfs
        /// flushes their dirty data too.
        group_commit_min_partitions: usize = 8;
        /// **Test hook that breaks durability**: the log is never fdatasynced but acks are still
        /// sent (an ERROR is logged at start). It exists only so the power-loss test
        /// (tests/interop/python/test_crash_consistency.py) can show it catches a lost fsync;
        /// never set it otherwise.
        debug_skip_fsync: bool = false;
    }

    /// Producer ids and the transaction coordinator.
    transactions: TransactionSettings {
        /// Kafka's `producer.id.expiration.ms`: a producer id with no open transaction that has
        /// not written to a partition for this long is forgotten there.
        producer_id_expiration_ms: i64 = 86_400_000, at_least 1,
            kafka "producer.id.expiration.ms" TYPE_INT Some("86400000");
        /// Transaction-coordinator shards; a transactional id maps to one by hash. Fixed for the
        /// life of a data dir (each shard has its own database and producer-id range).
        txn_shards: usize = 4, range 1, MAX_TXN_SHARDS,
            kafka "transaction.state.log.num.partitions" TYPE_INT Some("50");
        /// Kafka's `transaction.max.timeout.ms`: the longest transaction timeout InitProducerId
        /// accepts.
        transaction_max_timeout_ms: i32 = 900_000, at_least 1,
            kafka "transaction.max.timeout.ms" TYPE_INT Some("900000");
        /// Kafka's `transactional.id.expiration.ms`: a transactional id with no transaction for
        /// this long is forgotten by its coordinator.
        transactional_id_expiration_ms: i64 = 7 * 24 * 3600 * 1000, at_least 1,
            kafka "transactional.id.expiration.ms" TYPE_INT Some("604800000");
        /// Kafka's `transaction.abort.timed.out.transaction.cleanup.interval.ms`: how often
        /// transactions past their timeout are aborted.
        transaction_abort_check_interval_ms: u64 = 10_000,
            kafka "transaction.abort.timed.out.transaction.cleanup.interval.ms" TYPE_INT Some("10000");
        /// Finalized `transaction.version`: `2` is KIP-890 (TV2) for Java 4.x and franz-go
        /// clients, `1` keeps them on the legacy protocol.
        transaction_version: i16 = 2, range 1, 2;
        /// Highest WriteTxnMarkers version this broker advertises, accepts and sends to peer
        /// brokers: `2` carries KIP-1228's TransactionVersion per marker; `1` advertises only v1
        /// (a v2 request is refused like any unsupported version: the connection is closed) and
        /// makes this broker's coordinators send v1, so peers validate its markers the legacy
        /// way (eos-rules 43).
        write_txn_markers_max_version: i16 = 2, range 1, 2;
    }

    /// Consumer groups and their committed offsets.
    groups: GroupSettings {
        /// Kafka's `group.initial.rebalance.delay.ms`: how long the first rebalance of an empty
        /// classic group waits for more members to join.
        group_initial_rebalance_delay_ms: u64 = 3000,
            kafka "group.initial.rebalance.delay.ms" TYPE_INT Some("3000");
        /// Finalized `group.version`: `1` serves the KIP-848 consumer group protocol
        /// (ConsumerGroupHeartbeat, ConsumerGroupDescribe) as Apache Kafka 4.x does; `0` hides
        /// and refuses them.
        group_version: i16 = 1, range 0, 1;
        /// Kafka's `group.consumer.heartbeat.interval.ms`: how often a consumer-protocol member
        /// is told to heartbeat.
        group_consumer_heartbeat_interval_ms: i32 = 5000,
            kafka "group.consumer.heartbeat.interval.ms" TYPE_INT Some("5000");
        /// Kafka's `group.consumer.session.timeout.ms`: a consumer-protocol member that stops
        /// heartbeating this long is removed and its partitions reassigned. Above
        /// `group_consumer_heartbeat_interval_ms`.
        group_consumer_session_timeout_ms: i32 = 45_000,
            kafka "group.consumer.session.timeout.ms" TYPE_INT Some("45000");
        /// Kafka's `group.consumer.max.size` (Kafka's default: 2147483647): members of one
        /// consumer group; a join beyond it gets GROUP_MAX_SIZE_REACHED. kaas bounds it so a
        /// client cannot make it hold unbounded members.
        group_consumer_max_size: u32 = 10_000, at_least 1,
            kafka "group.consumer.max.size" TYPE_INT Some("2147483647");
        /// Kafka's `group.consumer.assignors`: the server-side assignors (`uniform`, `range`),
        /// the first the default; a client picks another with `group.remote.assignor`.
        group_consumer_assignors: Vec<String> = vec!["uniform".into(), "range".into()],
            kafka "group.consumer.assignors" TYPE_LIST Some("uniform,range");
        /// Kafka's `group.consumer.migration.policy` (KIP-848 online migration). As in Kafka, an
        /// Empty group changes protocol whatever the policy (offsets kept); a classic group with
        /// members is converted online (upgrade) only when the policy allows it, and a consumer
        /// group whose last consumer-protocol member left becomes classic (downgrade) only when
        /// the policy allows it (see [compatibility.md, "Consumer groups"](compatibility.md#consumer-groups)).
        group_consumer_migration_policy: String = "bidirectional".into(),
            one_of_any_case ["bidirectional", "upgrade", "downgrade", "disabled"],
            kafka "group.consumer.migration.policy" TYPE_STRING Some("bidirectional")
                => |s| s.groups.group_consumer_migration_policy.to_ascii_lowercase();
        /// Kafka's `offsets.retention.minutes`: committed offsets of an Empty group expire this
        /// long after their commit; a group left with nothing is forgotten.
        offsets_retention_minutes: u64 = 10_080,
            kafka "offsets.retention.minutes" TYPE_INT Some("10080");
        /// Kafka's `offsets.retention.check.interval.ms`: how often expired committed offsets are
        /// removed.
        offsets_retention_check_interval_ms: u64 = 600_000,
            kafka "offsets.retention.check.interval.ms" TYPE_LONG Some("600000");
    }

    /// Listeners, TLS and SASL (docs/security.md).
    security: SecuritySettings {
        /// Listeners as Kafka writes them, `NAME://HOST:PORT` separated by commas, each name one
        /// of PLAINTEXT, SSL, SASL_PLAINTEXT, SASL_SSL (its security protocol) and at most once;
        /// an empty host binds every interface. A PLAINTEXT listener named here replaces `listen`.
        listeners: String = String::new(),
            kafka "listeners" TYPE_LIST Some("PLAINTEXT://:9092") => |s| kafka_listeners(s.listeners());
        /// Kafka's `advertised.listeners`: what each listener gives clients in Metadata and
        /// FindCoordinator answers (`NAME://HOST:PORT`, by listener name); a listener not named
        /// here gives its own address (the PLAINTEXT one `advertised_listener`).
        advertised_listeners: String = String::new(),
            kafka "advertised.listeners" TYPE_LIST None => |s| kafka_listeners(s.advertised_listeners());
        /// PEM file with this broker's certificate chain and its private key (unencrypted), for
        /// the SSL and SASL_SSL listeners (Kafka's `ssl.keystore.location` with
        /// `ssl.keystore.type=PEM`). Read again on SIGHUP.
        ssl_keystore_location: String = String::new(),
            kafka "ssl.keystore.location" TYPE_STRING None;
        /// PEM file with the CA certificates that sign client certificates
        /// (`ssl.truststore.location`).
        ssl_truststore_location: String = String::new(),
            kafka "ssl.truststore.location" TYPE_STRING None;
        /// Kafka's `ssl.client.auth`: whether TLS clients present a certificate, checked against
        /// `ssl_truststore_location`; on an SSL listener its subject is the principal
        /// (`User:CN=...`), without one the principal is ANONYMOUS.
        ssl_client_auth: String = "none".into(), one_of ["none", "requested", "required"],
            kafka "ssl.client.auth" TYPE_STRING Some("none");
        /// `ssl.client.auth` of the SASL_SSL listener, Kafka's
        /// `listener.name.sasl_ssl.ssl.client.auth`: since KIP-684 a SASL_SSL listener does not
        /// take `ssl_client_auth` (its clients authenticate with SASL), only its own setting.
        sasl_ssl_client_auth: String = "none".into(), one_of ["none", "requested", "required"];
        /// Kafka's `sasl.enabled.mechanisms` of the SASL listeners: `PLAIN`, `SCRAM-SHA-256`,
        /// `SCRAM-SHA-512`.
        sasl_enabled_mechanisms: Vec<String> = vec!["SCRAM-SHA-512".into(), "SCRAM-SHA-256".into(), "PLAIN".into()],
            kafka "sasl.enabled.mechanisms" TYPE_LIST Some("GSSAPI");
        /// The users SASL/PLAIN accepts and their passwords, a TOML table (`alice = "secret"`),
        /// as Kafka's PlainLoginModule `user_alice="secret"`. Use PLAIN over TLS only.
        sasl_plain_users: std::collections::BTreeMap<String, String> = Default::default();
        /// SCRAM users (a TOML table of user and password) written to the shared disk, salted,
        /// when the cluster's credentials file does not exist yet (the first start), as Kafka's
        /// `kafka-storage format --add-scram`; for both SCRAM mechanisms.
        scram_users_at_first_start: std::collections::BTreeMap<String, String> = Default::default();
        /// Kafka's `inter.broker.listener.name`: the listener peer brokers reach this one on (the
        /// address it registers for them, and the security of the links it opens to them);
        /// empty: PLAINTEXT when it is served, else the first listener.
        inter_broker_listener_name: String = String::new(),
            kafka "inter.broker.listener.name" TYPE_STRING None => |s| {
                s.inter_broker_listener().map(|l| l.name().to_string()).unwrap_or_default()
            };
        /// Kafka's `sasl.mechanism.inter.broker.protocol`: how a broker logs in to its peers'
        /// inter-broker listener when it has SASL (`PLAIN`, `SCRAM-SHA-256`, `SCRAM-SHA-512`).
        inter_broker_sasl_mechanism: String = "PLAIN".into(), one_of ["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"],
            kafka "sasl.mechanism.inter.broker.protocol" TYPE_STRING Some("GSSAPI");
        /// The user a broker logs in to its peers as (the JAAS username of Kafka's inter-broker
        /// listener); make it a super user, or give it CLUSTER_ACTION on the cluster.
        inter_broker_sasl_username: String = String::new();
        /// Its password.
        inter_broker_sasl_password: String = String::new();
        /// `standard` turns on the authorizer (Kafka's
        /// `authorizer.class.name=org.apache.kafka.metadata.authorizer.StandardAuthorizer`):
        /// every request is checked against the ACLs (CreateAcls, `kafka-acls`); empty: none, every
        /// client may do everything.
        authorizer: String = String::new(), one_of ["", "standard"],
            kafka "authorizer.class.name" TYPE_STRING Some("") => |s| {
                if s.security.authorizer == "standard" {
                    "org.apache.kafka.metadata.authorizer.StandardAuthorizer".to_string()
                } else {
                    String::new()
                }
            };
        /// Kafka's `super.users`: principals the authorizer allows everything (`User:admin`).
        super_users: Vec<String> = Vec::new(),
            kafka "super.users" TYPE_STRING Some("") => |s| s.security.super_users.join(";");
        /// Kafka's `allow.everyone.if.no.acl.found`: whether a resource no ACL names is open to
        /// every principal (false: only super users may use it).
        allow_everyone_if_no_acl_found: bool = false;
        /// Kafka's `connection.failed.authentication.delay.ms`: a failed authentication is
        /// answered this long after it failed, and the connection closed.
        connection_failed_authentication_delay_ms: u64 = 100,
            kafka "connection.failed.authentication.delay.ms" TYPE_INT Some("100");
        /// Kafka's `connections.max.reauth.ms` (KIP-368): a SASL session lasts this long; the
        /// client is told so and re-authenticates on its open connection before it ends, or the
        /// connection is closed at its next request. 0: sessions do not end.
        connections_max_reauth_ms: u64 = 0,
            kafka "connections.max.reauth.ms" TYPE_LONG Some("0");
    }

    /// Brokers sharing one data directory (docs/cluster.md).
    cluster: ClusterSettings {
        /// How often a broker reads which brokers sharing the data directory are live and takes
        /// over or hands back partitions and the coordinators; a dead broker's share is served
        /// again about this long after its process is gone.
        cluster_tick_ms: u64 = 500;
        /// Kafka's `broker.session.timeout.ms` (9000 there): a broker whose heartbeat has not
        /// moved for this long, on the observer's own clock, is no longer live, and its
        /// partitions and coordinators move (a paused or stuck broker). A broker that could not
        /// renew its own heartbeat within two thirds of it answers for nothing it leads until it
        /// renews. At least 3 x `broker_heartbeat_interval_ms`.
        broker_session_timeout_ms: u64 = 6_000,
            kafka "broker.session.timeout.ms" TYPE_INT Some("9000");
        /// Kafka's `broker.heartbeat.interval.ms`: how often a broker renews (writes and fsyncs)
        /// its heartbeat file `__cluster/brokers/<id>.alive`.
        broker_heartbeat_interval_ms: u64 = 1_000, at_least 1,
            kafka "broker.heartbeat.interval.ms" TYPE_INT Some("2000");
        /// What a broker does once it finds itself fenced (its peers took over what it served
        /// while it stalled or was cut off from the disk): `rejoin` re-executes itself in place
        /// and joins as a new incarnation (as a fenced Kafka broker registers again); `exit`
        /// exits with code 75 (EX_TEMPFAIL) for a supervisor to restart. Not a Kafka setting.
        when_fenced: WhenFenced = WhenFenced::Rejoin;
        /// How often the other brokers' producer-fence files on the shared disk
        /// (`__cluster/producer_fences/from-<node>.json`) are read and their fences applied
        /// here. Polling, because inotify does not see another NFS client's writes; below 10 ms
        /// the poll would mostly re-read unchanged files. Kafka has no such setting.
        fence_poll_interval_ms: u64 = 2000, at_least 10;
    }
}
