//! Black-box helpers: start the real `kaas` binary on a free port with a temp data dir, and a
//! tiny blocking Kafka client built on kafka-protocol for wire-level assertions.
#![allow(dead_code)]

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use bytes::{Buf, BufMut, Bytes, BytesMut};
use indexmap::IndexMap;
use kafka_protocol::messages::{ApiKey, RequestHeader, RequestKind, ResponseHeader};
use kafka_protocol::protocol::{Decodable, Encodable, StrBytes};
use kafka_protocol::records::{Compression, Record, RecordBatchEncoder, RecordEncodeOptions, TimestampType};

pub struct Broker {
    pub dir: tempfile::TempDir,
    pub port: u16,
    env: Vec<(String, String)>,
    child: Option<Child>,
}

/// A port no other test of this process was given: tests run as threads, and two brokers on one
/// port would see each other's clients.
pub fn free_port() -> u16 {
    static GIVEN: std::sync::Mutex<Vec<u16>> = std::sync::Mutex::new(Vec::new());
    loop {
        let port = TcpListener::bind("127.0.0.1:0").and_then(|l| l.local_addr()).map(|a| a.port()).expect("free port");
        let mut given = GIVEN.lock().unwrap_or_else(|e| e.into_inner());
        if !given.contains(&port) {
            given.push(port);
            return port;
        }
    }
}

impl Broker {
    pub fn start() -> Broker {
        Self::start_with_env(&[])
    }

    /// Starts with extra `KAAS_*` settings in the environment.
    pub fn start_with_env(env: &[(&str, &str)]) -> Broker {
        let env = env.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
        let mut b = Broker { dir: tempfile::tempdir().expect("tempdir"), port: free_port(), env, child: None };
        b.spawn();
        b
    }

    pub fn data_dir(&self) -> PathBuf {
        self.dir.path().join("data")
    }

    fn spawn(&mut self) {
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(self.dir.path().join("kaas.log"))
            .expect("log file");
        let child = Command::new(env!("CARGO_BIN_EXE_kaas"))
            .envs(self.env.iter().map(|(k, v)| (k.as_str(), v.as_str())))
            .args(["serve", "--data-dir"])
            .arg(self.data_dir())
            .args(["--listen", &format!("127.0.0.1:{}", self.port), "--node-id", "0"])
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .expect("spawn kaas");
        self.child = Some(child);
        let deadline = Instant::now() + Duration::from_secs(20);
        while TcpStream::connect(("127.0.0.1", self.port)).is_err() {
            assert!(Instant::now() < deadline, "kaas did not start listening");
            assert!(self.is_running(), "kaas exited at start: {}", self.log());
            std::thread::sleep(Duration::from_millis(20));
        }
        // Something else listening there would have answered the probe: make sure it was us.
        std::thread::sleep(Duration::from_millis(50));
        assert!(self.is_running(), "kaas exited at start: {}", self.log());
    }

    pub fn log(&self) -> String {
        std::fs::read_to_string(self.dir.path().join("kaas.log")).unwrap_or_default()
    }

    /// SIGKILL, then start again on the same data dir and port.
    pub fn crash_and_restart(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
        self.spawn();
    }

    pub fn is_running(&mut self) -> bool {
        matches!(self.child.as_mut().map(|c| c.try_wait()), Some(Ok(None)))
    }

    /// The broker's process id (to read /proc/<pid>/status).
    pub fn pid(&self) -> u32 {
        self.child.as_ref().map(|c| c.id()).expect("broker running")
    }

    pub fn client(&self) -> Client {
        Client::connect(self.port)
    }
}

impl Drop for Broker {
    fn drop(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

pub struct Client {
    pub stream: TcpStream,
    correlation: i32,
}

impl Client {
    pub fn connect(port: u16) -> Client {
        let stream = TcpStream::connect(("127.0.0.1", port)).expect("connect");
        stream.set_read_timeout(Some(Duration::from_secs(30))).expect("timeout");
        Client { stream, correlation: 0 }
    }

    /// Sends a request whose body is already encoded; returns the response body.
    pub fn call_raw(&mut self, key: ApiKey, version: i16, body: &[u8]) -> Bytes {
        self.correlation += 1;
        let header = RequestHeader::default()
            .with_request_api_key(key as i16)
            .with_request_api_version(version)
            .with_correlation_id(self.correlation)
            .with_client_id(Some(StrBytes::from_static_str("kaas-test")));
        let mut msg = BytesMut::new();
        header.encode(&mut msg, key.request_header_version(version)).expect("header");
        msg.extend_from_slice(body);
        let mut frame = BytesMut::new();
        frame.put_i32(msg.len() as i32);
        frame.extend_from_slice(&msg);
        self.stream.write_all(&frame).expect("write");
        let mut len = [0u8; 4];
        self.stream.read_exact(&mut len).expect("response length");
        let mut buf = vec![0u8; i32::from_be_bytes(len) as usize];
        self.stream.read_exact(&mut buf).expect("response body");
        let mut buf = Bytes::from(buf);
        let rh = ResponseHeader::decode(&mut buf, key.response_header_version(version)).expect("response header");
        assert_eq!(rh.correlation_id, self.correlation);
        buf
    }

    /// Sends one request and decodes its response.
    pub fn call<Req, Resp>(&mut self, key: ApiKey, version: i16, req: Req) -> Resp
    where
        Req: Into<RequestKind>,
        Resp: Decodable,
    {
        let mut body = BytesMut::new();
        req.into().encode(&mut body, version).expect("body");
        let mut buf = self.call_raw(key, version, &body);
        let resp = Resp::decode(&mut buf, version).expect("response");
        assert_eq!(buf.remaining(), 0, "response has trailing bytes");
        resp
    }
}

/// A real v2 batch of `n` records (as a producer builds it).
pub fn batch(producer_id: i64, epoch: i16, base_sequence: i32, n: usize, tag: &str) -> Bytes {
    build_batch(producer_id, epoch, base_sequence, n, tag, false)
}

/// The same, marked transactional.
pub fn txn_batch(producer_id: i64, epoch: i16, base_sequence: i32, n: usize, tag: &str) -> Bytes {
    build_batch(producer_id, epoch, base_sequence, n, tag, true)
}

fn build_batch(producer_id: i64, epoch: i16, base_sequence: i32, n: usize, tag: &str, transactional: bool) -> Bytes {
    let records: Vec<Record> = (0..n)
        .map(|i| Record {
            transactional,
            control: false,
            delete_horizon: false,
            partition_leader_epoch: -1,
            producer_id,
            producer_epoch: epoch,
            timestamp_type: TimestampType::Creation,
            offset: i as i64,
            sequence: if base_sequence < 0 { -1 } else { base_sequence + i as i32 },
            timestamp: 1_700_000_000_000 + i as i64,
            key: Some(Bytes::from(format!("k{i}"))),
            value: Some(Bytes::from(format!("{tag}-{i}"))),
            headers: IndexMap::new(),
        })
        .collect();
    let mut buf = BytesMut::new();
    RecordBatchEncoder::encode(&mut buf, &records, &RecordEncodeOptions { version: 2, compression: Compression::None })
        .expect("encode batch");
    buf.freeze()
}

/// Creates a one-partition topic and checks it worked.
pub fn create_topic(c: &mut Client, name: &str) {
    use kafka_protocol::messages::create_topics_request::CreatableTopic;
    use kafka_protocol::messages::{CreateTopicsRequest, CreateTopicsResponse, TopicName};
    let mut t = CreatableTopic::default();
    t.name = TopicName(StrBytes::from_string(name.to_string()));
    t.num_partitions = 1;
    t.replication_factor = 1;
    let mut req = CreateTopicsRequest::default();
    req.topics = vec![t];
    let resp: CreateTopicsResponse = c.call(ApiKey::CreateTopics, 5, req);
    assert_eq!(resp.topics[0].error_code, 0);
}
