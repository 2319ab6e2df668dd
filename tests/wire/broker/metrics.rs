//! The Prometheus endpoint of the real binary, scraped with a real HTTP client (ureq): after
//! produces, a fetch and a transaction the counters hold exactly what the client did; a deleted
//! topic's series go; on two brokers sharing a disk the partition and coordinator gauges follow
//! what each runs through a takeover and a hand-back; the endpoint is off unless
//! `metrics_listen` is set; a bad address stops the broker at start.

use crate::common;

use std::collections::BTreeSet;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use bytes::Bytes;
use common::fetch::fetch_request;
use common::txn::{self, topic_name as name};
use common::{batch, create_topic, create_topic_with, free_port, txn_batch, Broker, Client};
use kafka_protocol::messages::*;

const TOPIC: &str = "metered";
const TXN: &str = "metered-txn";

fn agent() -> ureq::Agent {
    ureq::Agent::config_builder().timeout_global(Some(Duration::from_secs(10))).build().into()
}

/// GET http://127.0.0.1:port/path: (status, content type, body).
fn get(port: u16, path: &str) -> (u16, String, String) {
    let config =
        ureq::Agent::config_builder().timeout_global(Some(Duration::from_secs(10))).http_status_as_error(false).build();
    let agent: ureq::Agent = config.into();
    let mut resp = agent.get(&format!("http://127.0.0.1:{port}{path}")).call().expect("HTTP GET");
    let status = resp.status().as_u16();
    let content_type = resp.headers().get("content-type").and_then(|v| v.to_str().ok()).unwrap_or_default().to_string();
    let body = resp.body_mut().read_to_string().expect("body");
    (status, content_type, body)
}

fn scrape(port: u16) -> String {
    agent()
        .get(&format!("http://127.0.0.1:{port}/metrics"))
        .call()
        .expect("scrape")
        .body_mut()
        .read_to_string()
        .expect("scrape body")
}

/// The value of the sample `series` (name and labels exactly as exposed), if present.
fn value(text: &str, series: &str) -> Option<f64> {
    text.lines().find_map(|l| l.strip_prefix(series)?.strip_prefix(' ')?.trim().parse().ok())
}

/// Scrapes until `check` holds, for up to 10 s (a request is counted once its response is
/// written, which may be just after the client read it); returns the last scrape.
fn scrape_until(port: u16, what: &str, check: impl Fn(&str) -> bool) -> String {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let text = scrape(port);
        if check(&text) {
            return text;
        }
        assert!(Instant::now() < deadline, "{what} never held; last scrape:\n{text}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn produce(c: &mut Client, records: Bytes, transactional: bool) {
    assert_eq!(txn::produce(c, transactional.then_some(TXN), TOPIC, records).0, 0);
}

/// Bytes of records a read_uncommitted fetch from offset 0 returns.
fn fetch_all(c: &mut Client) -> usize {
    let resp: FetchResponse = c.call(ApiKey::Fetch, 11, fetch_request(TOPIC, 0, 0, 0));
    let p = &resp.responses[0].partitions[0];
    assert_eq!(p.error_code, 0);
    p.records.as_ref().map_or(0, Bytes::len)
}

/// (pid, epoch)
fn init_producer_id(c: &mut Client) -> (i64, i16) {
    let (error, pid, epoch) = txn::init_producer_id(c, TXN);
    assert_eq!(error, 0);
    (pid, epoch)
}

/// One committed transaction of one 2-record batch; returns its batch's size.
fn commit_a_transaction(c: &mut Client, pid: i64, epoch: i16) -> usize {
    assert_eq!(txn::add_partition(c, TXN, TOPIC, pid, epoch), 0);
    let records = txn_batch(pid, epoch, 0, 2, "txn");
    let size = records.len();
    produce(c, records, true);
    assert_eq!(txn::end_txn(c, TXN, pid, epoch, true), 0);
    size
}

/// TCP ports process `pid` listens on (its sockets' inodes looked up in /proc/net/tcp{,6}).
fn listening_ports(pid: u32) -> BTreeSet<u16> {
    let inodes: BTreeSet<String> = std::fs::read_dir(format!("/proc/{pid}/fd"))
        .expect("fd dir")
        .flatten()
        .filter_map(|e| std::fs::read_link(e.path()).ok())
        .filter_map(|l| l.to_string_lossy().strip_prefix("socket:[")?.strip_suffix(']').map(str::to_string))
        .collect();
    let mut ports = BTreeSet::new();
    for table in ["/proc/net/tcp", "/proc/net/tcp6"] {
        for line in std::fs::read_to_string(table).unwrap_or_default().lines().skip(1) {
            let f: Vec<&str> = line.split_whitespace().collect();
            // local_address rem_address st ... inode (field 9); 0A is LISTEN.
            if f.len() > 9 && f[3] == "0A" && inodes.contains(f[9]) {
                let port = f[1].rsplit(':').next().and_then(|p| u16::from_str_radix(p, 16).ok());
                ports.extend(port);
            }
        }
    }
    ports
}

#[test]
fn the_endpoint_counts_what_clients_did() {
    let port = free_port();
    let listen = format!("127.0.0.1:{port}");
    let broker = Broker::start_with_env(&[("KAAS_METRICS_LISTEN", &listen)]);
    assert_eq!(listening_ports(broker.pid()), BTreeSet::from([broker.port, port]));
    let (status, content_type, _) = get(port, "/");
    assert_eq!(status, 404);
    assert!(!content_type.contains("openmetrics"));
    let (status, content_type, text) = get(port, "/metrics");
    assert_eq!(status, 200);
    assert!(content_type.starts_with("application/openmetrics-text"), "{content_type}");
    assert!(text.trim_end().ends_with("# EOF"), "{text}");
    assert_eq!(value(&text, "kafka_server_replicamanager_partitioncount"), Some(0.0));
    assert_eq!(value(&text, r#"kaas_coordinator_shards_owned{kind="txn"}"#), Some(4.0));
    assert_eq!(value(&text, r#"kaas_coordinator_shards_owned{kind="group"}"#), Some(1.0));

    let mut c = broker.client();
    create_topic(&mut c, TOPIC);
    let mut bytes_in = 0;
    for i in 0..3 {
        let records = batch(-1, -1, -1, 1, &format!("plain-{i}"));
        bytes_in += records.len();
        produce(&mut c, records, false);
    }
    let (pid, epoch) = init_producer_id(&mut c);
    bytes_in += commit_a_transaction(&mut c, pid, epoch);
    let committed = r#"kaas_transactions{state="CompleteCommit"}"#;
    scrape_until(port, "the transaction completed", |t| value(t, committed) == Some(1.0));
    // The markers are in: one fetch reads everything, the control batch too.
    let bytes_out = fetch_all(&mut c);
    assert!(bytes_out > bytes_in, "four data batches and a marker: {bytes_out} bytes");
    // A second InitProducerId bumps the epoch: the first producer is fenced.
    let (_, bumped) = init_producer_id(&mut c);
    assert_eq!(bumped, epoch + 1);

    let topic = |m: &str| format!(r#"kafka_server_brokertopicmetrics_{m}_total{{topic="{TOPIC}"}}"#);
    let request = |api: &str| format!(r#"kafka_network_requestmetrics_requests_total{{request="{api}"}}"#);
    // The state gauge was seen still at 0.0 for Empty once the requests were counted, on a
    // loaded machine (CI): wait for the bump's Empty too rather than race it.
    let empty = r#"kaas_transactions{state="Empty"}"#;
    let text = scrape_until(port, "every request counted", |t| {
        value(t, &request("InitProducerId")) == Some(2.0)
            && value(t, &request("FetchConsumer")) == Some(1.0)
            && value(t, empty) == Some(1.0)
    });
    let v = |series: &str| value(&text, series).unwrap_or_else(|| panic!("no {series} in\n{text}"));
    assert_eq!(v(&topic("bytesin")), bytes_in as f64);
    assert_eq!(v(&topic("messagesin")), 5.0, "three plain records and two in the transaction");
    assert_eq!(v(&topic("bytesout")), bytes_out as f64);
    assert_eq!(v(&request("Produce")), 4.0);
    assert_eq!(v(&request("CreateTopics")), 1.0);
    assert_eq!(v(&request("EndTxn")), 1.0);
    assert_eq!(v(r#"kafka_network_requestmetrics_totaltimems_count{request="Produce"}"#), 4.0);
    assert!(v(r#"kafka_network_requestmetrics_totaltimems_sum{request="Produce"}"#) > 0.0);
    assert!(v("kaas_log_fsync_seconds_count") >= 1.0);
    assert!(v("kaas_log_group_commit_batches_count") >= 1.0);
    assert!(v("kaas_log_group_commit_batches_sum") >= 5.0, "four batches and a marker were synced");
    assert_eq!(v("kafka_server_replicamanager_partitioncount"), 1.0);
    assert_eq!(v("kafka_server_replicamanager_leadercount"), 1.0);
    assert_eq!(v("kafka_server_replicamanager_produceridcount"), 1.0, "the transactional producer");
    assert!(v("kafka_server_socketservermetrics_connection_count") >= 1.0);
    // The bump left the id Empty at the new epoch, nothing open.
    assert_eq!(v(empty), 1.0);
    assert_eq!(v(committed), 0.0);
    assert_eq!(v(r#"kaas_transactions{state="Ongoing"}"#), 0.0);
    assert_eq!(v("kaas_fenced_producers_total"), 1.0);

    // A deleted topic's series go with it.
    let mut req = DeleteTopicsRequest::default();
    req.topic_names = vec![name(TOPIC)];
    req.timeout_ms = 10_000;
    let resp: DeleteTopicsResponse = c.call(ApiKey::DeleteTopics, 5, req);
    assert_eq!(resp.responses[0].error_code, 0);
    scrape_until(port, "the deleted topic's series gone", |t| {
        !t.contains(&format!(r#"topic="{TOPIC}""#))
            && value(t, "kafka_server_replicamanager_partitioncount") == Some(0.0)
    });
    drop(c);
    scrape_until(port, "the closed connection uncounted", |t| {
        value(t, "kafka_server_socketservermetrics_connection_count") == Some(0.0)
    });
    broker.finish();
}

#[test]
fn the_endpoint_is_off_by_default() {
    let broker = Broker::start();
    assert_eq!(listening_ports(broker.pid()), BTreeSet::from([broker.port]), "only the Kafka listener");
    assert!(!broker.log().contains("Prometheus"), "{}", broker.log());
    broker.finish();
}

#[test]
fn an_address_that_cannot_be_bound_stops_the_start() {
    let dir = tempfile::tempdir().expect("tempdir");
    let taken = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let taken_addr = taken.local_addr().expect("addr").to_string();
    let mut child = Command::new(env!("CARGO_BIN_EXE_kaas"))
        .env("KAAS_METRICS_LISTEN", &taken_addr)
        .args(["serve", "--data-dir"])
        .arg(dir.path().join("data"))
        .args(["--listen", &format!("127.0.0.1:{}", free_port())])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn kaas");
    let deadline = Instant::now() + Duration::from_secs(20);
    let status = loop {
        if let Some(s) = child.try_wait().expect("wait") {
            break s;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            panic!("kaas kept running with metrics_listen on a taken address");
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let mut err = String::new();
    std::io::Read::read_to_string(&mut child.stderr.take().expect("stderr"), &mut err).expect("stderr");
    assert!(!status.success());
    assert!(err.contains(&format!("metrics_listen {taken_addr}")), "{err}");
}

/// (partitions, transaction shards, group coordinators) a broker's endpoint reports.
fn owned(port: u16) -> (f64, f64, f64) {
    let text = scrape(port);
    let v = |series: &str| value(&text, series).unwrap_or(f64::NAN);
    (
        v("kafka_server_replicamanager_partitioncount"),
        v(r#"kaas_coordinator_shards_owned{kind="txn"}"#),
        v(r#"kaas_coordinator_shards_owned{kind="group"}"#),
    )
}

fn wait_owned(what: &str, check: impl Fn() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(15);
    while !check() {
        assert!(Instant::now() < deadline, "{what} never held");
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn the_gauges_follow_partitions_and_coordinators_between_brokers() {
    let shared = tempfile::tempdir().expect("shared dir");
    let ports = [free_port(), free_port()];
    let mut brokers: Vec<Broker> = ports
        .iter()
        .zip([1, 2])
        .map(|(port, id)| {
            let listen = format!("127.0.0.1:{port}");
            Broker::start_member(
                shared.path(),
                id,
                &[("KAAS_CLUSTER_TICK_MS", "100"), ("KAAS_METRICS_LISTEN", &listen)],
            )
        })
        .collect();
    create_topic_with(&mut brokers[0].client(), "spread", 8);
    let sum = || {
        let (a, b) = (owned(ports[0]), owned(ports[1]));
        (a.0 + b.0, a.1 + b.1, a.2 + b.2)
    };
    wait_owned("every partition and coordinator counted once", || {
        sum() == (8.0, 4.0, 1.0) && owned(ports[1]) != (0.0, 0.0, 0.0) && owned(ports[0]) != (0.0, 0.0, 0.0)
    });
    // Broker 2 dies: broker 1 takes its share over.
    brokers[1].kill();
    wait_owned("the survivor running everything", || owned(ports[0]) == (8.0, 4.0, 1.0));
    // Back again, it gets its share handed back: broker 1's gauges go down by as much.
    brokers[1].restart_in_place();
    wait_owned("the share handed back and counted once", || {
        owned(ports[1]) != (0.0, 0.0, 0.0) && sum() == (8.0, 4.0, 1.0)
    });
    for b in brokers {
        b.finish();
    }
}
