//! Black-box helpers: start the real `kaas` binary on a free port with a temp data dir, and a
//! tiny blocking Kafka client built on kafka-protocol for wire-level assertions.
//!
//! A `Broker` checks itself when it is dropped (unless the test is already failing): the process
//! must still run, answer ApiVersions, stop cleanly on SIGTERM, and its log (every run, restarts
//! included) must hold no panic, no colour code and no ERROR line the test did not declare with
//! `allow_log_errors`. So a test cannot pass with a broker that died or panicked behind it.
#![allow(dead_code)]

pub mod cluster;
pub mod fetch;
pub mod groups;
pub mod txn;

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
    /// RLIMIT_NOFILE (soft and hard) the broker process starts with; None inherits ours.
    pub nofile: Option<u64>,
    child: Option<Child>,
    allowed_errors: Vec<String>,
    /// A data directory shared with other brokers (a cluster), instead of `dir/data`.
    shared_data: Option<PathBuf>,
    pub node_id: i32,
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
        Self::spawn_new(env, None)
    }

    /// Starts under an open-file limit (soft = hard = `nofile`), as `ulimit -n` would.
    pub fn start_with_nofile(env: &[(&str, &str)], nofile: u64) -> Broker {
        let env = env.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
        Self::spawn_new(env, Some(nofile))
    }

    fn spawn_new(env: Vec<(String, String)>, nofile: Option<u64>) -> Broker {
        let mut b = Broker {
            dir: tempfile::tempdir().expect("tempdir"),
            port: free_port(),
            env,
            nofile,
            child: None,
            allowed_errors: Vec::new(),
            shared_data: None,
            node_id: 0,
        };
        b.spawn();
        b
    }

    /// Starts broker `node_id` of a cluster on the data directory `shared` (its log stays in its
    /// own temp dir).
    pub fn start_member(shared: &std::path::Path, node_id: i32, env: &[(&str, &str)]) -> Broker {
        let mut b = Broker {
            dir: tempfile::tempdir().expect("tempdir"),
            port: free_port(),
            env: env.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect(),
            nofile: None,
            child: None,
            allowed_errors: Vec::new(),
            shared_data: Some(shared.to_path_buf()),
            node_id,
        };
        b.spawn();
        b
    }

    pub fn data_dir(&self) -> PathBuf {
        self.shared_data.clone().unwrap_or_else(|| self.dir.path().join("data"))
    }

    /// SIGKILL without a restart (a broker of a cluster that dies for good).
    pub fn kill(&mut self) {
        if let Some(mut c) = self.child.take() {
            c.kill().expect("SIGKILL kaas");
            c.wait().expect("reap kaas");
        }
    }

    fn spawn(&mut self) {
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(self.dir.path().join("kaas.log"))
            .expect("log file");
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_kaas"));
        if let Some(n) = self.nofile {
            use std::os::unix::process::CommandExt;
            let lim = libc::rlimit { rlim_cur: n as libc::rlim_t, rlim_max: n as libc::rlim_t };
            // SAFETY: setrlimit is async-signal-safe and only reads `lim`.
            unsafe {
                cmd.pre_exec(move || {
                    if libc::setrlimit(libc::RLIMIT_NOFILE, &lim) == 0 {
                        Ok(())
                    } else {
                        Err(std::io::Error::last_os_error())
                    }
                });
            }
        }
        let child = cmd
            .envs(self.env.iter().map(|(k, v)| (k.as_str(), v.as_str())))
            .args(["serve", "--data-dir"])
            .arg(self.data_dir())
            .args(["--listen", &format!("127.0.0.1:{}", self.port), "--node-id", &self.node_id.to_string()])
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .expect("spawn kaas");
        self.child = Some(child);
        // Start-up recovers every partition before listening: a scale run may take longer.
        let start_secs = std::env::var("KAAS_TEST_START_TIMEOUT_S").ok().and_then(|s| s.parse().ok()).unwrap_or(20);
        let deadline = Instant::now() + Duration::from_secs(start_secs);
        while TcpStream::connect(("127.0.0.1", self.port)).is_err() {
            assert!(Instant::now() < deadline, "kaas did not start listening");
            assert!(self.is_running(), "kaas exited at start: {}", self.log());
            std::thread::sleep(Duration::from_millis(20));
        }
        // Something else listening there would have answered the probe: make sure it was us.
        if let Some(problem) = api_versions_problem(self.port) {
            panic!("kaas on {} not serving after start: {problem}\n{}", self.port, self.log());
        }
        assert!(self.is_running(), "kaas exited at start: {}", self.log());
    }

    /// Declares ERROR log lines containing `fragment` as caused by the test on purpose.
    pub fn allow_log_errors(&mut self, fragment: &str) {
        self.allowed_errors.push(fragment.to_string());
    }

    /// Panic lines and ERROR lines not declared with `allow_log_errors`, from every run.
    pub fn log_problems(&self) -> Vec<String> {
        self.log()
            .lines()
            .filter(|line| {
                let panic = line.contains("panicked at") || (line.contains("thread '") && line.contains("' panicked"));
                // tracing-subscriber's fmt layout: "<timestamp> ERROR <target>: <message>"
                let error = line.split_whitespace().nth(1) == Some("ERROR")
                    && !self.allowed_errors.iter().any(|a| line.contains(a.as_str()));
                panic || error
            })
            .map(str::to_string)
            .collect()
    }

    /// What is wrong with this broker at the end of a test: not running, not answering
    /// ApiVersions, not stopping cleanly on SIGTERM, panics or unexpected ERROR lines in its log.
    /// Stops the process either way.
    fn finish_problems(&mut self) -> Vec<String> {
        let mut problems = Vec::new();
        if let Some(mut child) = self.child.take() {
            match child.try_wait() {
                Ok(None) => {
                    if let Some(p) = api_versions_problem(self.port) {
                        problems.push(format!("kaas no longer answers ApiVersions: {p}"));
                    }
                    stop_with_sigterm(&mut child, &mut problems);
                }
                other => problems.push(format!("kaas is not running at the end of the test: {other:?}")),
            }
        }
        // Logs written to a file carry no terminal colour codes (only a terminal gets them).
        if self.log().contains('\u{1b}') {
            problems.push("the log file holds ANSI colour codes".to_string());
        }
        let bad = self.log_problems();
        if !bad.is_empty() {
            problems.push(format!("{} panic/ERROR log lines the test did not expect:\n{}", bad.len(), bad.join("\n")));
        }
        problems
    }

    /// Ends the test's use of the broker and fails the test when the broker is unhealthy (see
    /// `finish_problems`). Dropping the broker does the same; this only makes it explicit.
    pub fn finish(mut self) {
        self.check_and_stop();
    }

    fn check_and_stop(&mut self) {
        let problems = self.finish_problems();
        if problems.is_empty() {
            return;
        }
        let report = format!("broker on port {}: {}", self.port, problems.join("\n"));
        if std::thread::panicking() {
            eprintln!("{report}"); // the test already failed; a second panic would abort
        } else {
            panic!("{report}\n--- log ---\n{}", tail(&self.log(), 60));
        }
    }

    pub fn log(&self) -> String {
        std::fs::read_to_string(self.dir.path().join("kaas.log")).unwrap_or_default()
    }

    /// SIGKILL, then start again on the same data dir and port. The broker must have been
    /// running: one that died by itself before the test killed it fails the test.
    pub fn crash_and_restart(&mut self) {
        assert!(self.is_running(), "kaas had already exited before the test killed it:\n{}", self.log());
        if let Some(mut c) = self.child.take() {
            c.kill().expect("SIGKILL kaas");
            c.wait().expect("reap kaas");
        }
        self.spawn();
    }

    /// SIGTERM and the time until the broker exited (successfully, within `within`).
    pub fn stop_clean(&mut self, within: Duration) -> Duration {
        let mut child = self.child.take().expect("broker running");
        let started = Instant::now();
        // SAFETY: signalling our own child process.
        unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
        loop {
            match child.try_wait() {
                Ok(Some(status)) => {
                    assert!(status.success(), "kaas exited with {status} on SIGTERM:\n{}", self.log());
                    return started.elapsed();
                }
                Ok(None) if started.elapsed() < within => std::thread::sleep(Duration::from_millis(10)),
                other => panic!("kaas did not stop within {within:?} of SIGTERM: {other:?}"),
            }
        }
    }

    /// Starts again on the same data dir and port once the process has exited (stopped or
    /// killed by the caller).
    pub fn restart_in_place(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.wait();
        }
        self.spawn();
    }

    /// Waits (at most `within`) for the process to exit by itself and returns how it exited.
    pub fn exited_within(&mut self, within: Duration) -> Option<std::process::ExitStatus> {
        let deadline = Instant::now() + within;
        loop {
            match self.child.as_mut().map(|c| c.try_wait()) {
                Some(Ok(Some(status))) => {
                    self.child = None;
                    return Some(status);
                }
                Some(Ok(None)) if Instant::now() < deadline => std::thread::sleep(Duration::from_millis(20)),
                _ => return None,
            }
        }
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
        self.check_and_stop();
    }
}

/// Sends SIGTERM to a running kaas and waits up to 15 s for a clean exit; what went wrong goes to
/// `problems` (killed if it did not stop).
pub fn stop_with_sigterm(child: &mut Child, problems: &mut Vec<String>) {
    let term = Command::new("kill").args(["-TERM", &child.id().to_string()]).status();
    if !matches!(term, Ok(s) if s.success()) {
        problems.push(format!("could not send SIGTERM: {term:?}"));
    }
    let deadline = Instant::now() + Duration::from_secs(15);
    loop {
        match child.try_wait() {
            Ok(Some(status)) if status.success() => break,
            Ok(Some(status)) => {
                problems.push(format!("kaas exited with {status} on SIGTERM"));
                break;
            }
            Ok(None) if Instant::now() < deadline => std::thread::sleep(Duration::from_millis(20)),
            other => {
                problems.push(format!("kaas did not stop within 15 s of SIGTERM: {other:?}"));
                let _ = child.kill();
                let _ = child.wait();
                break;
            }
        }
    }
}

/// Sends ApiVersions v0 on a fresh connection; None when the broker answered error code 0.
pub fn api_versions_problem(port: u16) -> Option<String> {
    let run = || -> std::io::Result<Result<(), String>> {
        let mut s = TcpStream::connect_timeout(&([127, 0, 0, 1], port).into(), Duration::from_secs(10))?;
        s.set_read_timeout(Some(Duration::from_secs(10)))?;
        s.set_write_timeout(Some(Duration::from_secs(10)))?;
        let mut req = BytesMut::new();
        req.put_i16(ApiKey::ApiVersions as i16);
        req.put_i16(0);
        req.put_i32(4242);
        req.put_i16(6);
        req.extend_from_slice(b"health");
        let mut frame = BytesMut::new();
        frame.put_i32(req.len() as i32);
        frame.extend_from_slice(&req);
        s.write_all(&frame)?;
        let mut head = [0u8; 10];
        s.read_exact(&mut head)?;
        let correlation = i32::from_be_bytes([head[4], head[5], head[6], head[7]]);
        let error = i16::from_be_bytes([head[8], head[9]]);
        Ok(if correlation == 4242 && error == 0 {
            Ok(())
        } else {
            Err(format!("ApiVersions answered correlation id {correlation}, error code {error}"))
        })
    };
    // A refused connection (a test that filled max_connections and just closed its own) is
    // retried for a few seconds; a wrong answer is not.
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        match run() {
            Ok(Ok(())) => return None,
            Ok(Err(e)) => return Some(e),
            Err(e) if Instant::now() >= deadline => return Some(format!("ApiVersions request failed: {e}")),
            Err(_) => std::thread::sleep(Duration::from_millis(50)),
        }
    }
}

fn tail(s: &str, lines: usize) -> String {
    let all: Vec<&str> = s.lines().collect();
    all[all.len().saturating_sub(lines)..].join("\n")
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
        let correlation = self.send_raw(key, version, body);
        self.receive_raw(key, version, correlation)
    }

    /// Sends a request without waiting for its answer (pipelining); returns its correlation id.
    pub fn send_raw(&mut self, key: ApiKey, version: i16, body: &[u8]) -> i32 {
        self.try_send_raw(key, version, body).expect("write")
    }

    /// Reads the next response, which must answer `correlation`; returns its body.
    pub fn receive_raw(&mut self, key: ApiKey, version: i16, correlation: i32) -> Bytes {
        self.try_receive_raw(key, version, correlation).expect("response")
    }

    /// `call_raw`, or None once the broker closed the connection (a broker that stops).
    pub fn try_call_raw(&mut self, key: ApiKey, version: i16, body: &[u8]) -> Option<Bytes> {
        let correlation = self.try_send_raw(key, version, body)?;
        self.try_receive_raw(key, version, correlation)
    }

    fn try_send_raw(&mut self, key: ApiKey, version: i16, body: &[u8]) -> Option<i32> {
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
        self.stream.write_all(&frame).ok()?;
        Some(self.correlation)
    }

    fn try_receive_raw(&mut self, key: ApiKey, version: i16, correlation: i32) -> Option<Bytes> {
        let mut len = [0u8; 4];
        self.stream.read_exact(&mut len).ok()?;
        let mut buf = vec![0u8; i32::from_be_bytes(len) as usize];
        self.stream.read_exact(&mut buf).ok()?;
        let mut buf = Bytes::from(buf);
        let rh = ResponseHeader::decode(&mut buf, key.response_header_version(version)).expect("response header");
        assert_eq!(rh.correlation_id, correlation);
        Some(buf)
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

/// One Produce (acks=all) of `records` to `topic`'s `partition`, transactional when `txn` is
/// set, sent at `version`: the whole answer.
pub fn produce_one(
    c: &mut Client,
    version: i16,
    txn: Option<kafka_protocol::messages::TransactionalId>,
    topic: kafka_protocol::messages::TopicName,
    partition: i32,
    records: Bytes,
) -> kafka_protocol::messages::ProduceResponse {
    use kafka_protocol::messages::produce_request::{PartitionProduceData, TopicProduceData};
    let mut p = PartitionProduceData::default();
    p.index = partition;
    p.records = Some(records);
    let mut t = TopicProduceData::default();
    t.name = topic;
    t.partition_data = vec![p];
    let mut req = kafka_protocol::messages::ProduceRequest::default();
    req.transactional_id = txn;
    req.acks = -1;
    req.timeout_ms = 30_000;
    req.topic_data = vec![t];
    c.call(ApiKey::Produce, version, req)
}

/// A real v2 batch of `n` records (as a producer builds it). With `base_sequence < 0` and
/// `n > 1` kafka-protocol's encoder writes `n` one-record batches instead (it only groups
/// consecutive sequences), which a broker refuses as INVALID_RECORD: use one record there.
pub fn batch(producer_id: i64, epoch: i16, base_sequence: i32, n: usize, tag: &str) -> Bytes {
    build_batch(producer_id, epoch, base_sequence, n, tag, false)
}

/// The same, marked transactional.
pub fn txn_batch(producer_id: i64, epoch: i16, base_sequence: i32, n: usize, tag: &str) -> Bytes {
    build_batch(producer_id, epoch, base_sequence, n, tag, true)
}

/// The wall clock in milliseconds: records carry the time they are made, as a client's do (a
/// batch far older than the transaction markers the broker stamps with the time would start a
/// new segment at each marker, segment.ms being 7 days).
fn recent_ms() -> i64 {
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default();
    i64::try_from(now.as_millis()).unwrap_or(i64::MAX)
}

/// A batch stamped in November 2023 (CreateTime), for the tests of time-based rules (retention,
/// timestamp bounds).
pub fn old_batch(producer_id: i64, epoch: i16, base_sequence: i32, n: usize, tag: &str) -> Bytes {
    stamped_batch(producer_id, epoch, base_sequence, n, tag, false, 1_700_000_000_000)
}

fn build_batch(producer_id: i64, epoch: i16, base_sequence: i32, n: usize, tag: &str, transactional: bool) -> Bytes {
    stamped_batch(producer_id, epoch, base_sequence, n, tag, transactional, recent_ms())
}

fn stamped_batch(
    producer_id: i64,
    epoch: i16,
    base_sequence: i32,
    n: usize,
    tag: &str,
    transactional: bool,
    base_ts: i64,
) -> Bytes {
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
            timestamp: base_ts + i as i64,
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
    create_topic_with(c, name, 1);
}

/// Creates a topic of `partitions` partitions and checks it worked.
pub fn create_topic_with(c: &mut Client, name: &str, partitions: i32) {
    assert_eq!(create_topic_code(c, name, partitions), 0);
}

/// CreateTopics' error code for one topic of `partitions` partitions.
pub fn create_topic_code(c: &mut Client, name: &str, partitions: i32) -> i16 {
    use kafka_protocol::messages::create_topics_request::CreatableTopic;
    use kafka_protocol::messages::{CreateTopicsRequest, CreateTopicsResponse, TopicName};
    let mut t = CreatableTopic::default();
    t.name = TopicName(StrBytes::from_string(name.to_string()));
    t.num_partitions = partitions;
    t.replication_factor = 1;
    let mut req = CreateTopicsRequest::default();
    req.topics = vec![t];
    req.timeout_ms = 10_000;
    let resp: CreateTopicsResponse = c.call(ApiKey::CreateTopics, 5, req);
    resp.topics[0].error_code
}

/// Deletes topic `name` and checks it worked.
pub fn delete_topic_named(c: &mut Client, name: &str) {
    use kafka_protocol::messages::{DeleteTopicsRequest, DeleteTopicsResponse, TopicName};
    let mut req = DeleteTopicsRequest::default();
    req.topic_names = vec![TopicName(StrBytes::from_string(name.to_string()))];
    req.timeout_ms = 10_000;
    let resp: DeleteTopicsResponse = c.call(ApiKey::DeleteTopics, 5, req);
    assert_eq!(resp.responses[0].error_code, 0, "deleting {name}");
}

/// A process's peak resident memory (VmHWM), in KiB.
pub fn vm_hwm_kib(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).expect("proc status");
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .expect("VmHWM")
}

/// ListOffsets (latest, no leader epoch) of partitions 0..`partitions` of `topic`.
pub fn latest_offsets_request(
    topic: kafka_protocol::messages::TopicName,
    partitions: i32,
) -> kafka_protocol::messages::ListOffsetsRequest {
    use kafka_protocol::messages::list_offsets_request::{ListOffsetsPartition, ListOffsetsTopic};
    let mut t = ListOffsetsTopic::default();
    t.name = topic;
    t.partitions = (0..partitions)
        .map(|p| {
            let mut lp = ListOffsetsPartition::default();
            lp.partition_index = p;
            lp.current_leader_epoch = -1;
            lp.timestamp = -1;
            lp
        })
        .collect();
    let mut req = kafka_protocol::messages::ListOffsetsRequest::default();
    req.replica_id = kafka_protocol::messages::BrokerId(-1);
    req.topics = vec![t];
    req
}
