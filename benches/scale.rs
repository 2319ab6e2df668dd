//! Partition and producer scale on one broker: `cargo bench --bench scale`.
//!
//! Starts the real `kaas` binary on a temp dir (or, with `SCALE_PORT` and `SCALE_PID`, measures a
//! broker that is already running, e.g. Apache Kafka from benches/load), then:
//! creates `SCALE_PARTITIONS` partitions (default 100,000; topics of 5,000, one CreateTopics each,
//! as Kafka allows at most 10,000 records per request), produces one record to each (acks=all),
//! fetches them all back, times Metadata of everything and single-record produce latency on a hot
//! partition (compared with a fresh broker holding 100 partitions), restarts (SIGTERM and kill -9)
//! and times until every partition serves again, then registers `SCALE_PRODUCERS` idle idempotent
//! producers (default 100,000) and `SCALE_TXNS` open transactions (default 1,000) and reports
//! the memory each costs. Prints one JSON object per phase; nothing is asserted on time.

#[path = "../tests/common/mod.rs"]
mod common;

use std::io::{Read, Write};
use std::time::{Duration, Instant};

use bytes::{BufMut, Bytes, BytesMut};
use common::{batch, txn_batch, Broker, Client};
use kafka_protocol::messages::add_partitions_to_txn_request::AddPartitionsToTxnTopic;
use kafka_protocol::messages::create_topics_request::CreatableTopic;
use kafka_protocol::messages::fetch_request::{FetchPartition, FetchTopic};
use kafka_protocol::messages::produce_request::{PartitionProduceData, TopicProduceData};
use kafka_protocol::messages::*;
use kafka_protocol::protocol::{Decodable, Encodable, StrBytes};

const TOPIC_SIZE: i32 = 5_000;
const PER_REQUEST: i32 = 1_000;

fn env_or(name: &str, default: i64) -> i64 {
    std::env::var(name).ok().and_then(|v| v.parse().ok()).unwrap_or(default)
}

fn status_kib(pid: u32, field: &str) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix(field))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or(0)
}

fn open_files(pid: u32) -> usize {
    std::fs::read_dir(format!("/proc/{pid}/fd")).map(|d| d.count()).unwrap_or(0)
}

fn report(phase: &str, pid: u32, started: Instant, extra: &str) {
    println!(
        "{{\"phase\":\"{phase}\",\"seconds\":{:.3},\"rss_kib\":{},\"hwm_kib\":{},\"open_files\":{}{extra}}}",
        started.elapsed().as_secs_f64(),
        status_kib(pid, "VmRSS:"),
        status_kib(pid, "VmHWM:"),
        open_files(pid)
    );
}

fn name(s: &str) -> TopicName {
    TopicName(StrBytes::from_string(s.to_string()))
}

fn topic_of(i: i32) -> (String, i32) {
    (format!("scale-{}", i / TOPIC_SIZE), i % TOPIC_SIZE)
}

fn create(c: &mut Client, topic: &str, partitions: i32) {
    let mut t = CreatableTopic::default();
    t.name = name(topic);
    t.num_partitions = partitions;
    t.replication_factor = 1;
    let mut req = CreateTopicsRequest::default();
    req.topics = vec![t];
    req.timeout_ms = 600_000;
    let resp: CreateTopicsResponse = c.call(ApiKey::CreateTopics, 5, req);
    let code = resp.topics[0].error_code;
    assert!(code == 0 || code == 36, "CreateTopics {topic}: {code} {:?}", resp.topics[0].error_message);
}

/// Sends every request of `bodies` before reading the answers (pipelined, as a real client).
fn pipeline(c: &mut Client, key: ApiKey, version: i16, bodies: &[BytesMut]) -> Vec<Bytes> {
    let mut frames = BytesMut::new();
    for (i, body) in bodies.iter().enumerate() {
        let header = RequestHeader::default()
            .with_request_api_key(key as i16)
            .with_request_api_version(version)
            .with_correlation_id(i as i32)
            .with_client_id(Some(StrBytes::from_static_str("kaas-scale")));
        let mut msg = BytesMut::new();
        header.encode(&mut msg, key.request_header_version(version)).expect("header");
        msg.extend_from_slice(body);
        frames.put_i32(msg.len() as i32);
        frames.extend_from_slice(&msg);
    }
    let mut reader = c.stream.try_clone().expect("clone stream");
    let n = bodies.len();
    let rh_version = key.response_header_version(version);
    let read = std::thread::spawn(move || {
        let mut out = Vec::with_capacity(n);
        for _ in 0..n {
            let mut len = [0u8; 4];
            reader.read_exact(&mut len).expect("response length");
            let mut buf = vec![0u8; i32::from_be_bytes(len) as usize];
            reader.read_exact(&mut buf).expect("response body");
            let mut buf = Bytes::from(buf);
            ResponseHeader::decode(&mut buf, rh_version).expect("response header");
            out.push(buf);
        }
        out
    });
    c.stream.write_all(&frames).expect("write");
    read.join().expect("reader")
}

fn encode<R: Into<RequestKind>>(req: R, version: i16) -> BytesMut {
    let mut body = BytesMut::new();
    req.into().encode(&mut body, version).expect("body");
    body
}

fn produce_request(parts: &[(String, i32, Bytes)]) -> ProduceRequest {
    let mut topics: Vec<TopicProduceData> = Vec::new();
    for (t, p, records) in parts {
        let mut pd = PartitionProduceData::default();
        pd.index = *p;
        pd.records = Some(records.clone());
        match topics.last_mut() {
            Some(last) if last.name.0.as_str() == t.as_str() => last.partition_data.push(pd),
            _ => {
                let mut td = TopicProduceData::default();
                td.name = name(t);
                td.partition_data = vec![pd];
                topics.push(td);
            }
        }
    }
    let mut req = ProduceRequest::default();
    req.acks = -1;
    req.timeout_ms = 60_000;
    req.topic_data = topics;
    req
}

fn produce_errors(bytes: Vec<Bytes>) -> usize {
    let mut errors = 0;
    for mut b in bytes {
        let resp = ProduceResponse::decode(&mut b, 9).expect("produce response");
        errors += resp.responses.iter().flat_map(|t| &t.partition_responses).filter(|p| p.error_code != 0).count();
    }
    errors
}

/// One record to every partition, PER_REQUEST partitions per request.
fn produce_all(c: &mut Client, partitions: i32, tag: &str) -> usize {
    let one = batch(-1, -1, -1, 1, tag);
    let bodies: Vec<BytesMut> = (0..partitions)
        .step_by(PER_REQUEST as usize)
        .map(|from| {
            let parts: Vec<_> = (from..(from + PER_REQUEST).min(partitions))
                .map(|i| {
                    let (t, p) = topic_of(i);
                    (t, p, one.clone())
                })
                .collect();
            encode(produce_request(&parts), 9)
        })
        .collect();
    let mut errors = 0;
    for chunk in bodies.chunks(16) {
        errors += produce_errors(pipeline(c, ApiKey::Produce, 9, chunk));
    }
    errors
}

/// Fetches every partition from offset 0; returns (partitions holding `expect` records, errors).
fn fetch_all(c: &mut Client, partitions: i32, expect: i64) -> (usize, usize) {
    let (mut full, mut errors) = (0, 0);
    for from in (0..partitions).step_by(PER_REQUEST as usize) {
        let mut topics: Vec<FetchTopic> = Vec::new();
        for i in from..(from + PER_REQUEST).min(partitions) {
            let (t, p) = topic_of(i);
            let mut fp = FetchPartition::default();
            fp.partition = p;
            fp.fetch_offset = 0;
            fp.partition_max_bytes = 1 << 16;
            match topics.last_mut() {
                Some(last) if last.topic.0.as_str() == t.as_str() => last.partitions.push(fp),
                _ => {
                    let mut ft = FetchTopic::default();
                    ft.topic = name(&t);
                    ft.partitions = vec![fp];
                    topics.push(ft);
                }
            }
        }
        let mut req = FetchRequest::default();
        req.replica_id = BrokerId(-1);
        req.max_wait_ms = 0;
        req.min_bytes = 0;
        req.max_bytes = 64 << 20;
        req.isolation_level = 0;
        req.session_epoch = -1;
        req.topics = topics;
        let resp: FetchResponse = c.call(ApiKey::Fetch, 12, req);
        for p in resp.responses.iter().flat_map(|t| &t.partitions) {
            if p.error_code != 0 {
                errors += 1;
            } else if p.high_watermark >= expect && p.records.as_ref().is_some_and(|r| !r.is_empty()) {
                full += 1;
            }
        }
    }
    (full, errors)
}

/// Single-record produce latency on partition 0 of `topic`: (p50, p99) in microseconds.
fn hot_latency(c: &mut Client, topic: &str, n: usize) -> (u128, u128) {
    let one = batch(-1, -1, -1, 1, "hot");
    let body = encode(produce_request(&[(topic.to_string(), 0, one)]), 9);
    let mut took: Vec<u128> = (0..n)
        .map(|_| {
            let t = Instant::now();
            let mut b = c.call_raw(ApiKey::Produce, 9, &body);
            let resp = ProduceResponse::decode(&mut b, 9).expect("produce response");
            assert_eq!(resp.responses[0].partition_responses[0].error_code, 0);
            t.elapsed().as_micros()
        })
        .collect();
    took.sort_unstable();
    (took[n / 2], took[n * 99 / 100])
}

fn metadata_all(c: &mut Client) -> usize {
    let mut req = MetadataRequest::default();
    req.topics = None; // all topics
    let resp: MetadataResponse = c.call(ApiKey::Metadata, 9, req);
    resp.topics.iter().map(|t| t.partitions.len()).sum()
}

fn init_producer(c: &mut Client, txn_id: Option<&str>) -> (i64, i16) {
    let mut req = InitProducerIdRequest::default();
    req.transactional_id = txn_id.map(|t| TransactionalId(StrBytes::from_string(t.to_string())));
    req.transaction_timeout_ms = 900_000;
    req.producer_id = ProducerId(-1);
    req.producer_epoch = -1;
    let resp: InitProducerIdResponse = c.call(ApiKey::InitProducerId, 4, req);
    assert_eq!(resp.error_code, 0, "InitProducerId");
    (resp.producer_id.0, resp.producer_epoch)
}

/// `n` idle idempotent producers, each having written one batch to one of the partitions.
fn idle_producers(c: &mut Client, n: i64, partitions: i32) -> usize {
    let mut errors = 0;
    let mut init = InitProducerIdRequest::default();
    init.transaction_timeout_ms = 60_000;
    init.producer_id = ProducerId(-1);
    init.producer_epoch = -1;
    let body = encode(init, 4);
    let mut done = 0i64;
    while done < n {
        let k = (n - done).min(1_000) as usize;
        let answers = pipeline(c, ApiKey::InitProducerId, 4, &vec![body.clone(); k]);
        let mut parts = Vec::with_capacity(k);
        for (j, mut a) in answers.into_iter().enumerate() {
            let r = InitProducerIdResponse::decode(&mut a, 4).expect("init response");
            let (t, p) = topic_of(((done + j as i64) % i64::from(partitions)) as i32);
            parts.push((t, p, batch(r.producer_id.0, r.producer_epoch, 0, 1, "idle")));
        }
        // One request per producer batch would be slow; one request holds many producers' batches
        // (each partition at most once per request).
        parts.sort_by(|a, b| (&a.0, a.1).cmp(&(&b.0, b.1)));
        let mut reqs = Vec::new();
        let mut rest = parts;
        while !rest.is_empty() {
            let mut this = Vec::new();
            let mut later = Vec::new();
            for part in rest {
                if this.last().is_some_and(|l: &(String, i32, Bytes)| l.0 == part.0 && l.1 == part.1) {
                    later.push(part);
                } else {
                    this.push(part);
                }
            }
            reqs.push(encode(produce_request(&this), 9));
            rest = later;
        }
        errors += produce_errors(pipeline(c, ApiKey::Produce, 9, &reqs));
        done += k as i64;
    }
    errors
}

/// `n` transactional ids, each with an open transaction holding one record.
fn open_transactions(c: &mut Client, n: i64, partitions: i32) -> usize {
    let mut errors = 0;
    for i in 0..n {
        let txn = format!("scale-txn-{i}");
        let (pid, epoch) = init_producer(c, Some(&txn));
        let (t, p) = topic_of((i % i64::from(partitions)) as i32);
        let mut tt = AddPartitionsToTxnTopic::default();
        tt.name = name(&t);
        tt.partitions = vec![p];
        let mut req = AddPartitionsToTxnRequest::default();
        req.v3_and_below_transactional_id = TransactionalId(StrBytes::from_string(txn.clone()));
        req.v3_and_below_producer_id = ProducerId(pid);
        req.v3_and_below_producer_epoch = epoch;
        req.v3_and_below_topics = vec![tt];
        let resp: AddPartitionsToTxnResponse = c.call(ApiKey::AddPartitionsToTxn, 3, req);
        errors += resp
            .results_by_topic_v3_and_below
            .iter()
            .flat_map(|t| &t.results_by_partition)
            .filter(|r| r.partition_error_code != 0)
            .count();
        let mut req = produce_request(&[(t, p, txn_batch(pid, epoch, 0, 1, "open"))]);
        req.transactional_id = Some(TransactionalId(StrBytes::from_string(txn)));
        let mut b = c.call_raw(ApiKey::Produce, 9, &encode(req, 9));
        errors += produce_errors(vec![std::mem::take(&mut b)]);
    }
    errors
}

/// A client that waits as long as a creation of 5,000 partitions may take.
fn connect(port: u16) -> Client {
    let c = Client::connect(port);
    c.stream.set_read_timeout(Some(Duration::from_secs(600))).expect("timeout");
    c
}

fn wait_serving(port: u16, topic: &str, partition: i32) {
    let deadline = Instant::now() + Duration::from_secs(600);
    loop {
        if let Ok(s) = std::net::TcpStream::connect(("127.0.0.1", port)) {
            drop(s);
            let mut c = Client::connect(port);
            let body = encode(produce_request(&[(topic.to_string(), partition, batch(-1, -1, -1, 1, "up"))]), 9);
            let mut b = c.call_raw(ApiKey::Produce, 9, &body);
            let resp = ProduceResponse::decode(&mut b, 9).expect("produce response");
            if resp.responses[0].partition_responses[0].error_code == 0 {
                return;
            }
        }
        assert!(Instant::now() < deadline, "not serving after a restart");
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn main() {
    // `cargo bench` passes --bench; nothing else is taken from the command line.
    let partitions = env_or("SCALE_PARTITIONS", 100_000) as i32;
    let producers = env_or("SCALE_PRODUCERS", 100_000);
    let txns = env_or("SCALE_TXNS", 1_000);
    let external = std::env::var("SCALE_PORT").ok().and_then(|p| p.parse::<u16>().ok());
    let mut own = None;
    let (port, pid) = match external {
        Some(port) => (port, env_or("SCALE_PID", 0) as u32),
        None => {
            let b = Broker::start_with_env(&[("KAAS_AUTO_CREATE_TOPICS", "false")]);
            let (port, pid) = (b.port, b.pid());
            own = Some(b);
            (port, pid)
        }
    };
    let mut c = connect(port);
    report("started", pid, Instant::now(), &format!(",\"partitions\":{partitions}"));

    let t = Instant::now();
    for topic in 0..(partitions + TOPIC_SIZE - 1) / TOPIC_SIZE {
        let size = (partitions - topic * TOPIC_SIZE).min(TOPIC_SIZE);
        create(&mut c, &format!("scale-{topic}"), size);
    }
    create(&mut c, "hot", 1);
    report("create", pid, t, "");

    let t = Instant::now();
    let errors = produce_all(&mut c, partitions, "one");
    report("produce_one_each", pid, t, &format!(",\"errors\":{errors}"));

    let t = Instant::now();
    let (full, errors) = fetch_all(&mut c, partitions, 1);
    report("fetch_all", pid, t, &format!(",\"partitions_with_the_record\":{full},\"errors\":{errors}"));

    let t = Instant::now();
    let listed = metadata_all(&mut c);
    report("metadata_all", pid, t, &format!(",\"partitions_listed\":{listed}"));

    let t = Instant::now();
    let (p50, p99) = hot_latency(&mut c, "hot", 2_000);
    report("hot_produce_latency", pid, t, &format!(",\"p50_us\":{p50},\"p99_us\":{p99}"));

    if let Some(b) = own.as_mut() {
        // Restart after a clean stop (recovery point written) and after kill -9 (every active
        // segment verified).
        let (last_topic, last_p) = topic_of(partitions - 1);
        for (how, signal) in [("restart_clean", libc::SIGTERM), ("restart_after_kill9", libc::SIGKILL)] {
            let stopping = Instant::now();
            // SAFETY: signalling our own child process.
            unsafe { libc::kill(b.pid() as i32, signal) };
            let dead = Instant::now() + Duration::from_secs(900);
            while b.is_running() && Instant::now() < dead {
                std::thread::sleep(Duration::from_millis(10));
            }
            let stopped = stopping.elapsed().as_secs_f64();
            let t = Instant::now();
            b.restart_in_place();
            wait_serving(port, &last_topic, last_p);
            report(how, b.pid(), t, &format!(",\"stop_seconds\":{stopped:.3}"));
        }
        let mut c = connect(port);
        let (full, errors) = fetch_all(&mut c, partitions, 1);
        report(
            "fetch_all_after_restarts",
            b.pid(),
            Instant::now(),
            &format!(",\"partitions_with_the_record\":{full},\"errors\":{errors}"),
        );
    }
    let pid = own.as_ref().map_or(pid, |b| b.pid());
    let mut c = connect(port);

    let mut memory_per = |phase: &str, what: &str, count: i64, run: &mut dyn FnMut(&mut Client) -> usize| {
        let before = status_kib(pid, "VmRSS:");
        let t = Instant::now();
        let errors = run(&mut c);
        let per = (status_kib(pid, "VmRSS:").saturating_sub(before) * 1024) as f64 / count.max(1) as f64;
        report(phase, pid, t, &format!(",\"{what}\":{count},\"bytes_each\":{per:.0},\"errors\":{errors}"));
    };
    memory_per("idle_idempotent_producers", "producers", producers, &mut |c| idle_producers(c, producers, partitions));
    memory_per("open_transactions", "transactions", txns, &mut |c| open_transactions(c, txns, partitions));

    let Some(own) = own else {
        return;
    };
    let mut own = own;
    let took = own.stop_clean(Duration::from_secs(900));
    println!("{{\"phase\":\"stop_clean\",\"seconds\":{:.3}}}", took.as_secs_f64());
    for problem in own.log_problems() {
        println!("{{\"log_problem\":{:?}}}", problem);
    }
    own.finish();
    // The same hot-partition latency on a fresh broker with 100 partitions.
    let small = Broker::start_with_env(&[("KAAS_AUTO_CREATE_TOPICS", "false")]);
    let mut c = connect(small.port);
    for topic in ["hot", "scale-0"] {
        create(&mut c, topic, if topic == "hot" { 1 } else { 99 });
    }
    let t = Instant::now();
    let (p50, p99) = hot_latency(&mut c, "hot", 2_000);
    report("hot_produce_latency_100_partitions", small.pid(), t, &format!(",\"p50_us\":{p50},\"p99_us\":{p99}"));
}
