//! Broker-wide bounds over the wire against the real binary: max_connections, the idle timeout,
//! the request-byte pool (queued_max_request_bytes), and membership calls that must not create
//! groups.

use crate::common;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

use common::{Broker, Client};
use kafka_protocol::messages::*;
use kafka_protocol::protocol::StrBytes;

fn api_versions(c: &mut Client) -> i16 {
    let resp: ApiVersionsResponse = c.call(ApiKey::ApiVersions, 3, ApiVersionsRequest::default());
    resp.error_code
}

/// Whether the broker closed `s` (EOF or reset) within `within`.
fn closed_by_broker(s: &mut TcpStream, within: Duration) -> bool {
    s.set_read_timeout(Some(Duration::from_millis(100))).expect("timeout");
    let deadline = Instant::now() + within;
    let mut buf = [0u8; 64];
    while Instant::now() < deadline {
        match s.read(&mut buf) {
            Ok(0) => return true,
            Ok(_) => continue,
            Err(e) if matches!(e.kind(), std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut) => continue,
            Err(_) => return true,
        }
    }
    false
}

/// A connection that got its ApiVersions answer: the harness's start-up probe may still hold a
/// slot for a moment after it closed, so a refused attempt is retried.
fn served_connection(port: u16) -> TcpStream {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let mut s = TcpStream::connect(("127.0.0.1", port)).expect("tcp connect");
        s.set_read_timeout(Some(Duration::from_secs(5))).expect("timeout");
        // ApiVersions v0: key 18, version 0, correlation 1, no client id.
        let frame = [0, 0, 0, 10, 0, 18, 0, 0, 0, 0, 0, 1, 0xff, 0xff];
        let mut len = [0u8; 4];
        if s.write_all(&frame).is_ok() && s.read_exact(&mut len).is_ok() {
            let mut body = vec![0u8; i32::from_be_bytes(len).max(0) as usize];
            s.read_exact(&mut body).expect("ApiVersions body");
            return s;
        }
        assert!(Instant::now() < deadline, "no connection was served");
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn max_connections_closes_the_connection_beyond_the_limit() {
    let broker = Broker::start_with_env(&[("KAAS_MAX_CONNECTIONS", "2")]);
    let a = served_connection(broker.port);
    let _b = served_connection(broker.port);
    let mut third = TcpStream::connect(("127.0.0.1", broker.port)).expect("tcp connect");
    assert!(closed_by_broker(&mut third, Duration::from_secs(10)), "a third connection must be refused");
    drop(a);
    // The slot comes back when the broker notices the close.
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let mut s = TcpStream::connect(("127.0.0.1", broker.port)).expect("tcp connect");
        if !closed_by_broker(&mut s, Duration::from_millis(300)) {
            break;
        }
        assert!(Instant::now() < deadline, "the freed slot was never given back");
    }
    assert!(broker.log().contains("max_connections"), "the refusal is logged");
}

#[test]
fn connections_max_idle_ms_closes_an_idle_connection() {
    let broker = Broker::start_with_env(&[("KAAS_CONNECTIONS_MAX_IDLE_MS", "300")]);
    let mut c = broker.client();
    assert_eq!(api_versions(&mut c), 0);
    assert!(closed_by_broker(&mut c.stream, Duration::from_secs(10)), "an idle connection must be closed");
    let mut again = broker.client();
    assert_eq!(api_versions(&mut again), 0, "the broker still serves new connections");
}

#[test]
fn queued_max_request_bytes_bounds_bytes_of_unanswered_requests() {
    let broker = Broker::start_with_env(&[
        ("KAAS_MAX_REQUEST_BYTES", "1000"),
        ("KAAS_MAX_MESSAGE_BYTES", "500"),
        ("KAAS_QUEUED_MAX_REQUEST_BYTES", "2000"),
    ]);
    // Two clients announce 1000-byte requests and send only part of them: the pool is used up.
    let mut hogs: Vec<TcpStream> = (0..2)
        .map(|_| {
            let mut s = TcpStream::connect(("127.0.0.1", broker.port)).expect("connect");
            s.write_all(&1000i32.to_be_bytes()).expect("length");
            s.write_all(&[0u8; 10]).expect("part of the body");
            s
        })
        .collect();
    // Let the broker read both lengths before the third client asks.
    std::thread::sleep(Duration::from_millis(300));
    let mut waiting = broker.client();
    waiting.stream.set_read_timeout(Some(Duration::from_millis(700))).expect("timeout");
    let mut body = bytes::BytesMut::new();
    kafka_protocol::protocol::Encodable::encode(&ApiVersionsRequest::default(), &mut body, 3).expect("encode");
    let header = RequestHeader::default()
        .with_request_api_key(ApiKey::ApiVersions as i16)
        .with_request_api_version(3)
        .with_correlation_id(1)
        .with_client_id(Some(StrBytes::from_static_str("kaas-test")));
    let mut msg = bytes::BytesMut::new();
    kafka_protocol::protocol::Encodable::encode(&header, &mut msg, 2).expect("header");
    msg.extend_from_slice(&body);
    let mut frame = (msg.len() as i32).to_be_bytes().to_vec();
    frame.extend_from_slice(&msg);
    waiting.stream.write_all(&frame).expect("send");
    let mut len = [0u8; 4];
    assert!(waiting.stream.read_exact(&mut len).is_err(), "the pool is exhausted: this request must wait");
    // One hog goes away: its bytes return to the pool and the waiting request is answered.
    hogs.pop();
    waiting.stream.set_read_timeout(Some(Duration::from_secs(10))).expect("timeout");
    waiting.stream.read_exact(&mut len).expect("answered once bytes were freed");
    assert!(i32::from_be_bytes(len) > 0);
}

#[test]
fn membership_calls_for_an_unknown_group_do_not_create_it() {
    let broker = Broker::start();
    let mut c = broker.client();
    for i in 0..50 {
        let group = format!("ghost-{i}");
        let mut hb = HeartbeatRequest::default();
        hb.group_id = GroupId(StrBytes::from_string(group.clone()));
        hb.generation_id = 1;
        hb.member_id = StrBytes::from_static_str("nobody");
        let resp: HeartbeatResponse = c.call(ApiKey::Heartbeat, 4, hb);
        assert_eq!(resp.error_code, 25, "UNKNOWN_MEMBER_ID");
        let mut sync = SyncGroupRequest::default();
        sync.group_id = GroupId(StrBytes::from_string(group));
        sync.generation_id = 1;
        sync.member_id = StrBytes::from_static_str("nobody");
        let resp: SyncGroupResponse = c.call(ApiKey::SyncGroup, 4, sync);
        assert_eq!(resp.error_code, 25, "UNKNOWN_MEMBER_ID");
    }
    let groups: ListGroupsResponse = c.call(ApiKey::ListGroups, 4, ListGroupsRequest::default());
    assert_eq!(groups.error_code, 0);
    assert!(groups.groups.is_empty(), "no group was created: {:?}", groups.groups);
}
