//! The broker's Prometheus metrics (prometheus-client, OpenMetrics text), named as the
//! Prometheus JMX exporter names Kafka's JMX metrics where Kafka has one, `kaas_*` where it has
//! none. Everything on a hot path is an atomic add on a handle its owner keeps: a partition
//! leader holds its topic's counters ([`TopicMeter`]), a connection finds its API's meter by key
//! in a fixed table; nothing is looked up by name per record. Series are bounded: per topic only
//! for topics with a leader here (removed when the topic is deleted), per API only for the API
//! keys kaas decodes. Gauges are kept up to date by their owners, so a scrape reads atomics and
//! never asks an actor. `http` serves them (`metrics_listen`).

pub mod cleaner;
pub mod histogram;
pub mod http;

use std::sync::{Arc, OnceLock};

use kafka_protocol::messages::ApiKey;
use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::registry::{Registry, Unit};

pub use cleaner::CleanerMeter;
pub use histogram::AtomicHistogram;

use crate::store::txn::TxnState;

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct TopicLabels {
    topic: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct RequestLabels {
    request: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct StateLabels {
    state: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct KindLabels {
    kind: String,
}

/// Kafka's `listener` tag of its socket-server metrics.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ListenerLabels {
    listener: String,
}

/// Every transaction state, in the order of [`state_index`].
const TXN_STATES: [TxnState; 8] = [
    TxnState::Empty,
    TxnState::Ongoing,
    TxnState::PrepareCommit,
    TxnState::PrepareAbort,
    TxnState::CompleteCommit,
    TxnState::CompleteAbort,
    TxnState::PrepareEpochFence,
    TxnState::Dead,
];

fn state_index(s: TxnState) -> usize {
    TXN_STATES.iter().position(|x| *x == s).unwrap_or(0)
}

/// API keys are below this (kafka-protocol 0.18 knows keys up to 92).
const API_SLOTS: usize = 128;

/// The counters of one topic, held by each of its partition leaders.
#[derive(Debug, Clone, Default)]
pub struct TopicMeter {
    pub bytes_in: Counter,
    pub messages_in: Counter,
    pub bytes_out: Counter,
}

/// The request count and time of one API.
#[derive(Debug, Clone)]
pub struct ApiMeter {
    pub requests: Counter,
    /// Microseconds in, milliseconds out (Kafka's TotalTimeMs).
    pub total_time: AtomicHistogram,
}

/// Kafka's name of an API in its RequestMetrics (`request="Produce"`): the API's name, and
/// `FetchConsumer` for Fetch (kaas has no follower fetches).
pub fn request_name(key: ApiKey) -> String {
    match key {
        ApiKey::Fetch => "FetchConsumer".to_string(),
        other => format!("{other:?}"),
    }
}

struct Inner {
    registry: Registry,
    bytes_in: Family<TopicLabels, Counter>,
    messages_in: Family<TopicLabels, Counter>,
    bytes_out: Family<TopicLabels, Counter>,
    requests: Family<RequestLabels, Counter>,
    total_time: Family<RequestLabels, AtomicHistogram, fn() -> AtomicHistogram>,
    apis: Vec<OnceLock<ApiMeter>>,
    fsync: AtomicHistogram,
    group_commit_batches: AtomicHistogram,
    group_commit_partitions: AtomicHistogram,
    partitions: Gauge,
    producer_ids: Gauge,
    fetch_copied_reads: Counter,
    connections: Gauge,
    transactions: Vec<Gauge>,
    fenced_producers: Counter,
    failed_authentication: Family<ListenerLabels, Counter>,
    successful_authentication: Family<ListenerLabels, Counter>,
    successful_reauthentication: Family<ListenerLabels, Counter>,
    expired_connections_killed: Family<ListenerLabels, Counter>,
    authorization_denied: Counter,
    txn_shards: Gauge,
    group_coordinators: Gauge,
    cleaner: CleanerMeter,
}

/// The broker's metrics; clones share them.
#[derive(Clone)]
pub struct Metrics(Arc<Inner>);

impl std::fmt::Debug for Metrics {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Metrics")
    }
}

impl Default for Metrics {
    fn default() -> Self {
        Metrics::new()
    }
}

impl Metrics {
    pub fn new() -> Metrics {
        let mut r = Registry::default();
        let topic_family = |r: &mut Registry, name: &str, help: &str| {
            let f = Family::<TopicLabels, Counter>::default();
            r.register(name, help, f.clone());
            f
        };
        let bytes_in = topic_family(
            &mut r,
            "kafka_server_brokertopicmetrics_bytesin",
            "Bytes of record batches appended from producers (BytesInPerSec)",
        );
        let messages_in = topic_family(
            &mut r,
            "kafka_server_brokertopicmetrics_messagesin",
            "Records appended from producers (MessagesInPerSec)",
        );
        let bytes_out = topic_family(
            &mut r,
            "kafka_server_brokertopicmetrics_bytesout",
            "Bytes of record batches read for Fetch responses (BytesOutPerSec)",
        );
        let requests = Family::<RequestLabels, Counter>::default();
        r.register(
            "kafka_network_requestmetrics_requests",
            "Requests answered, per API (RequestsPerSec)",
            requests.clone(),
        );
        let total_time: Family<RequestLabels, AtomicHistogram, fn() -> AtomicHistogram> =
            Family::new_with_constructor(AtomicHistogram::millis);
        r.register(
            "kafka_network_requestmetrics_totaltimems",
            "Milliseconds from a request's decoding until its response is written to the socket (TotalTimeMs)",
            total_time.clone(),
        );
        let fsync = AtomicHistogram::seconds();
        r.register_with_unit(
            "kaas_log_fsync",
            "Duration of each log fsync (fdatasync of a partition, or one syncfs for many) of the group commit (Kafka: LogFlushRateAndTimeMs)",
            Unit::Seconds,
            fsync.clone(),
        );
        let group_commit_batches = AtomicHistogram::sizes();
        r.register(
            "kaas_log_group_commit_batches",
            "Record batches (appends and transaction markers) of one partition made durable by one fsync",
            group_commit_batches.clone(),
        );
        let group_commit_partitions = AtomicHistogram::sizes();
        r.register(
            "kaas_log_group_commit_partitions",
            "Partitions made durable by one fsync call (1, or many for one syncfs)",
            group_commit_partitions.clone(),
        );
        let partitions = Gauge::default();
        r.register("kafka_server_replicamanager_partitioncount", "Partitions this broker serves", partitions.clone());
        r.register(
            "kafka_server_replicamanager_leadercount",
            "Partitions this broker leads (every partition it serves)",
            partitions.clone(),
        );
        let fetch_copied_reads = Counter::default();
        r.register(
            "kaas_fetch_copied_reads",
            "Partition reads of a Fetch copied into memory instead of sent with sendfile, because the open files lent to pending sends (max_open_segment_files) were all out",
            fetch_copied_reads.clone(),
        );
        let producer_ids = Gauge::default();
        r.register(
            "kafka_server_replicamanager_produceridcount",
            "Producer ids with state in the partitions this broker serves, summed over partitions (ProducerIdCount)",
            producer_ids.clone(),
        );
        let connections = Gauge::default();
        r.register(
            "kafka_server_socketservermetrics_connection_count",
            "Open client connections (connection-count)",
            connections.clone(),
        );
        let states = Family::<StateLabels, Gauge>::default();
        let transactions =
            TXN_STATES.iter().map(|s| states.get_or_create_owned(&StateLabels { state: format!("{s:?}") })).collect();
        r.register(
            "kaas_transactions",
            "Transactional ids of the transaction-coordinator shards this broker runs, by state",
            states,
        );
        let fenced_producers = Counter::default();
        r.register(
            "kaas_fenced_producers",
            "Producer epochs this broker's transaction coordinators fenced (an epoch bump of a transactional id: InitProducerId, a timeout, KIP-360)",
            fenced_producers.clone(),
        );
        let by_listener = |r: &mut Registry, name: &str, help: &str| {
            let family = Family::<ListenerLabels, Counter>::default();
            r.register(name, help, family.clone());
            family
        };
        let failed_authentication = by_listener(
            &mut r,
            "kafka_server_socketservermetrics_failed_authentication",
            "Failed authentications and re-authentications: TLS handshakes, SASL exchanges (failed-authentication-total)",
        );
        let successful_authentication = by_listener(
            &mut r,
            "kafka_server_socketservermetrics_successful_authentication",
            "Completed SASL authentications (successful-authentication-total)",
        );
        let successful_reauthentication = by_listener(
            &mut r,
            "kafka_server_socketservermetrics_successful_reauthentication",
            "Completed KIP-368 re-authentications (successful-reauthentication-total)",
        );
        let expired_connections_killed = by_listener(
            &mut r,
            "kafka_server_socketservermetrics_expired_connections_killed",
            "Connections closed because their SASL session expired (expired-connections-killed-count)",
        );
        let authorization_denied = Counter::default();
        r.register(
            "kaas_authorization_denied",
            "Requests (or parts of them) the authorizer denied",
            authorization_denied.clone(),
        );
        let kinds = Family::<KindLabels, Gauge>::default();
        let txn_shards = kinds.get_or_create_owned(&KindLabels { kind: "txn".into() });
        let group_coordinators = kinds.get_or_create_owned(&KindLabels { kind: "group".into() });
        r.register(
            "kaas_coordinator_shards_owned",
            "Coordinator units this broker runs: transaction shards (txn) and the group coordinator (group)",
            kinds,
        );
        let cleaner = CleanerMeter::register(&mut r);
        Metrics(Arc::new(Inner {
            registry: r,
            bytes_in,
            messages_in,
            bytes_out,
            requests,
            total_time,
            apis: (0..API_SLOTS).map(|_| OnceLock::new()).collect(),
            fsync,
            group_commit_batches,
            group_commit_partitions,
            partitions,
            producer_ids,
            fetch_copied_reads,
            connections,
            transactions,
            fenced_producers,
            failed_authentication,
            successful_authentication,
            successful_reauthentication,
            expired_connections_killed,
            authorization_denied,
            txn_shards,
            group_coordinators,
            cleaner,
        }))
    }

    /// The counters of `topic`, created on first use; a leader keeps them for its life.
    pub fn topic(&self, topic: &str) -> TopicMeter {
        let l = TopicLabels { topic: topic.to_string() };
        let i = &self.0;
        TopicMeter {
            bytes_in: i.bytes_in.get_or_create_owned(&l),
            messages_in: i.messages_in.get_or_create_owned(&l),
            bytes_out: i.bytes_out.get_or_create_owned(&l),
        }
    }

    /// Drops a deleted topic's series (leaders still stopping count into detached counters).
    pub fn remove_topic(&self, topic: &str) {
        let l = TopicLabels { topic: topic.to_string() };
        let i = &self.0;
        for f in [&i.bytes_in, &i.messages_in, &i.bytes_out] {
            f.remove(&l);
        }
    }

    /// The meter of `key`, created on its first request; after that a lock-free read.
    pub fn api(&self, key: ApiKey) -> Option<&ApiMeter> {
        let slot = self.0.apis.get(usize::try_from(key as i16).ok()?)?;
        Some(slot.get_or_init(|| {
            let l = RequestLabels { request: request_name(key) };
            ApiMeter {
                requests: self.0.requests.get_or_create_owned(&l),
                total_time: self.0.total_time.get_or_create_owned(&l),
            }
        }))
    }

    pub fn fsync(&self) -> &AtomicHistogram {
        &self.0.fsync
    }

    pub fn group_commit_batches(&self) -> &AtomicHistogram {
        &self.0.group_commit_batches
    }

    pub fn group_commit_partitions(&self) -> &AtomicHistogram {
        &self.0.group_commit_partitions
    }

    pub fn cleaner(&self) -> &CleanerMeter {
        &self.0.cleaner
    }

    pub fn partitions(&self) -> &Gauge {
        &self.0.partitions
    }

    pub fn fetch_copied_reads(&self) -> &Counter {
        &self.0.fetch_copied_reads
    }

    pub fn producer_ids(&self) -> &Gauge {
        &self.0.producer_ids
    }

    pub fn connections(&self) -> &Gauge {
        &self.0.connections
    }

    /// Counts a failed TLS handshake or SASL exchange.
    /// Counts a failed TLS handshake or SASL exchange on `listener`.
    pub fn failed_authentication(&self, listener: &str) {
        Self::count(&self.0.failed_authentication, listener);
    }

    pub fn successful_authentication(&self, listener: &str) {
        Self::count(&self.0.successful_authentication, listener);
    }

    pub fn successful_reauthentication(&self, listener: &str) {
        Self::count(&self.0.successful_reauthentication, listener);
    }

    pub fn expired_connection_killed(&self, listener: &str) {
        Self::count(&self.0.expired_connections_killed, listener);
    }

    fn count(family: &Family<ListenerLabels, Counter>, listener: &str) {
        family.get_or_create(&ListenerLabels { listener: listener.to_string() }).inc();
    }

    /// Counts a request (or a resource of one) the authorizer denied.
    pub fn authorization_denied(&self) {
        self.0.authorization_denied.inc();
    }

    pub fn fenced_producers(&self) -> &Counter {
        &self.0.fenced_producers
    }

    /// A transactional id moved from `from` to `to` (None: not held by this broker).
    pub fn txn_moved(&self, from: Option<TxnState>, to: Option<TxnState>) {
        if from == to {
            return;
        }
        if let Some(s) = from {
            self.0.transactions[state_index(s)].dec();
        }
        if let Some(s) = to {
            self.0.transactions[state_index(s)].inc();
        }
    }

    /// Coordinator units this broker runs now.
    pub fn set_coordinators(&self, txn_shards: usize, group: bool) {
        self.0.txn_shards.set(i64::try_from(txn_shards).unwrap_or(i64::MAX));
        self.0.group_coordinators.set(i64::from(group));
    }

    /// The OpenMetrics text of every metric.
    pub fn encode(&self) -> Result<String, std::fmt::Error> {
        let mut out = String::with_capacity(16 * 1024);
        prometheus_client::encoding::text::encode(&mut out, &self.0.registry)?;
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn line<'a>(text: &'a str, prefix: &str) -> Option<&'a str> {
        text.lines().find(|l| l.starts_with(prefix))
    }

    #[test]
    fn topic_counters_are_shared_and_removed_with_the_topic() {
        let m = Metrics::new();
        let a = m.topic("t");
        m.topic("t").bytes_in.inc_by(7);
        a.bytes_in.inc_by(3);
        let text = m.encode().unwrap();
        assert_eq!(
            line(&text, "kafka_server_brokertopicmetrics_bytesin_total{"),
            Some(r#"kafka_server_brokertopicmetrics_bytesin_total{topic="t"} 10"#)
        );
        m.remove_topic("t");
        let text = m.encode().unwrap();
        assert!(!text.contains(r#"topic="t""#), "{text}");
    }

    #[test]
    fn api_meters_are_named_as_kafka_names_requests() {
        let m = Metrics::new();
        let Some(produce) = m.api(ApiKey::Produce) else { panic!("Produce has a meter") };
        produce.requests.inc();
        produce.total_time.observe(1500);
        m.api(ApiKey::Fetch).map(|f| f.requests.inc());
        let text = m.encode().unwrap();
        assert!(text.contains("kafka_network_requestmetrics_requests_total{request=\"Produce\"} 1"), "{text}");
        assert!(text.contains("kafka_network_requestmetrics_requests_total{request=\"FetchConsumer\"} 1"), "{text}");
        assert!(text.contains("kafka_network_requestmetrics_totaltimems_count{request=\"Produce\"} 1"), "{text}");
        assert!(
            text.contains("kafka_network_requestmetrics_totaltimems_bucket{le=\"2.5\",request=\"Produce\"} 1")
                || text.contains("kafka_network_requestmetrics_totaltimems_bucket{request=\"Produce\",le=\"2.5\"} 1"),
            "{text}"
        );
        assert!(!text.contains("request=\"Metadata\""), "no series for an API not asked yet");
    }

    #[test]
    fn transaction_states_move_between_gauges() {
        let m = Metrics::new();
        m.txn_moved(None, Some(TxnState::Ongoing));
        m.txn_moved(None, Some(TxnState::Ongoing));
        m.txn_moved(Some(TxnState::Ongoing), Some(TxnState::PrepareCommit));
        let text = m.encode().unwrap();
        assert!(text.contains("kaas_transactions{state=\"Ongoing\"} 1"), "{text}");
        assert!(text.contains("kaas_transactions{state=\"PrepareCommit\"} 1"), "{text}");
        m.txn_moved(Some(TxnState::PrepareCommit), None);
        assert!(m.encode().unwrap().contains("kaas_transactions{state=\"PrepareCommit\"} 0"));
    }

    #[test]
    fn units_and_gauges_are_exposed() {
        let m = Metrics::new();
        m.fsync().observe(2000);
        m.partitions().inc();
        m.set_coordinators(3, true);
        let text = m.encode().unwrap();
        assert!(text.contains("kaas_log_fsync_seconds_count 1"), "{text}");
        assert!(text.contains("kafka_server_replicamanager_partitioncount 1"), "{text}");
        assert!(text.contains("kafka_server_replicamanager_leadercount 1"), "{text}");
        assert!(text.contains("kaas_coordinator_shards_owned{kind=\"txn\"} 3"), "{text}");
        assert!(text.contains("kaas_coordinator_shards_owned{kind=\"group\"} 1"), "{text}");
        assert!(text.trim_end().ends_with("# EOF"));
    }
}
