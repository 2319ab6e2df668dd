//! Fetch responses are bounded broker-wide (`queued_max_response_bytes`) against the real
//! binary: clients that pipeline many large fetches and never read their socket cannot make
//! the broker hold a response per request; other consumers are still answered; the stuck
//! connections are closed after `connections_max_idle_ms` and the data is served again.

use crate::common;

use std::io::Write;
use std::net::TcpStream;
use std::time::{Duration, Instant};

use bytes::{Bytes, BytesMut};
use common::{batch, create_topic, vm_hwm_kib, Broker, Client};
use kafka_protocol::messages::fetch_request::{FetchPartition, FetchTopic};
use kafka_protocol::messages::*;
use kafka_protocol::protocol::{Encodable, StrBytes};

const TOPIC: &str = "big";
const FETCH_VERSION: i16 = 12;

fn produce(c: &mut Client, records: Bytes) {
    let resp = common::produce_one(c, 9, None, TopicName(StrBytes::from_static_str(TOPIC)), 0, records);
    assert_eq!(resp.responses[0].partition_responses[0].error_code, 0);
}

fn fetch_request(partition_max_bytes: i32, max_wait_ms: i32) -> FetchRequest {
    let mut p = FetchPartition::default();
    p.partition = 0;
    p.fetch_offset = 0;
    p.partition_max_bytes = partition_max_bytes;
    p.log_start_offset = -1;
    p.current_leader_epoch = -1;
    let mut t = FetchTopic::default();
    t.topic = TopicName(StrBytes::from_static_str(TOPIC));
    t.partitions = vec![p];
    let mut req = FetchRequest::default();
    req.replica_id = BrokerId(-1);
    req.max_wait_ms = max_wait_ms;
    req.min_bytes = 1;
    req.max_bytes = 50 << 20;
    req.topics = vec![t];
    req
}

/// One Fetch frame as a client writes it.
fn fetch_frame(correlation_id: i32) -> Vec<u8> {
    let header = RequestHeader::default()
        .with_request_api_key(ApiKey::Fetch as i16)
        .with_request_api_version(FETCH_VERSION)
        .with_correlation_id(correlation_id)
        .with_client_id(Some(StrBytes::from_static_str("hog")));
    let mut msg = BytesMut::new();
    header.encode(&mut msg, ApiKey::Fetch.request_header_version(FETCH_VERSION)).expect("header");
    fetch_request(64 << 20, 500).encode(&mut msg, FETCH_VERSION).expect("body");
    let mut frame = (msg.len() as i32).to_be_bytes().to_vec();
    frame.extend_from_slice(&msg);
    frame
}

/// (error code, record bytes) of one fetch from offset 0.
fn fetch(c: &mut Client) -> (i16, usize) {
    let resp: FetchResponse = c.call(ApiKey::Fetch, FETCH_VERSION, fetch_request(1 << 20, 200));
    let p = &resp.responses[0].partitions[0];
    (p.error_code, p.records.as_ref().map_or(0, |r| r.len()))
}

#[test]
fn queued_max_response_bytes_bounds_fetch_responses_clients_do_not_read() {
    let broker = Broker::start_with_env(&[
        ("KAAS_QUEUED_MAX_RESPONSE_BYTES", "8388608"),
        ("KAAS_CONNECTIONS_MAX_IDLE_MS", "3000"),
    ]);
    let mut c = broker.client();
    create_topic(&mut c, TOPIC);
    // About 16 MiB in the partition: 160 batches of 100 records of about 1 KiB (one idempotent
    // producer, so that each batch is one batch).
    let value = "x".repeat(1000);
    for i in 0..160 {
        produce(&mut c, batch(7, 0, i * 100, 100, &value));
    }
    let (code, bytes) = fetch(&mut c);
    assert_eq!(code, 0);
    assert!(bytes > 0, "the data is there");
    let before = vm_hwm_kib(broker.pid());

    // Three clients pipeline 40 fetches each for the whole partition and never read an answer:
    // unbounded, the broker would hold 3 x 40 responses of 16 MiB (about 1.9 GB).
    let mut hogs: Vec<TcpStream> = Vec::new();
    for _ in 0..3 {
        let mut s = TcpStream::connect(("127.0.0.1", broker.port)).expect("connect");
        for id in 1..=40 {
            s.write_all(&fetch_frame(id)).expect("send fetch");
        }
        hogs.push(s);
    }
    // Meanwhile another consumer is still answered (without data while the budget is held).
    let started = Instant::now();
    let mut other = broker.client();
    let (code, _) = fetch(&mut other);
    assert_eq!(code, 0);
    assert!(started.elapsed() < Duration::from_secs(10), "a fetch must not wait for the stuck clients");

    // The broker closes the stuck connections after connections_max_idle_ms.
    let deadline = Instant::now() + Duration::from_secs(30);
    while !broker.log().contains("did not read a response") {
        assert!(Instant::now() < deadline, "the stuck connections were never closed");
        std::thread::sleep(Duration::from_millis(100));
    }
    let after = vm_hwm_kib(broker.pid());
    eprintln!("broker VmHWM before {before} KiB, after {after} KiB");
    assert!(after < before + 160 * 1024, "peak RSS grew from {before} KiB to {after} KiB");
    drop(hogs);

    // And the data is served again once their bytes are back. A new connection: `other` sat
    // idle while the hogs were waited for, longer than connections_max_idle_ms, so the broker
    // may rightly have closed it too (as Apache Kafka closes idle connections).
    drop(other);
    let mut again = broker.client();
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let (code, bytes) = fetch(&mut again);
        assert_eq!(code, 0);
        if bytes > 0 {
            break;
        }
        assert!(Instant::now() < deadline, "fetches never got data again");
        std::thread::sleep(Duration::from_millis(100));
    }
}
