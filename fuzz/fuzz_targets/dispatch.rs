//! A whole client connection against an in-process broker: the input is the byte stream a client
//! sends (4-byte length, frame, repeated), read with `FrameReader`, decoded with
//! `protocol::decode`, routed with `protocol::dispatch` to the real actors (partitions on a
//! temporary data directory, transaction and group coordinators in sled), and every answer is
//! awaited and encoded with `encode_response`: the Connection actor's path minus the socket.
//!
//! Found as a crash: any panic on any broker thread (libfuzzer-sys aborts on panic), a request
//! that gets no answer within ANSWER_WITHIN (a wedge), a response that cannot be encoded (the
//! connection would close instead of answering), memory beyond -rss_limit_mb, and a broker that
//! cannot start again on the data directory the fuzzed requests left behind.
//!
//! The broker lives for the whole fuzz process (state carries across inputs, as on a real
//! broker); it restarts on the same directory every RESTART_EVERY inputs (recovery must succeed)
//! and on a fresh directory every WIPE_EVERY inputs (bounded disk and memory).
#![no_main]

use std::cell::RefCell;
use std::mem::ManuallyDrop;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use bytes::{Bytes, BytesMut};
use futures::stream::FuturesOrdered;
use futures::{FutureExt, StreamExt};
use kaas::config::Settings;
use kaas::protocol::frame::{encode_response, FrameReader, RequestPool};
use kaas::protocol::handlers::cluster::api_versions;
use kaas::protocol::{decode, dispatch, Decoded, Request, RequestError};
use kaas::server::Broker;
use kaas::store::batch::{BatchHeader, HEADER_LEN};
use kafka_protocol::messages::{ApiKey, RequestKind, ResponseKind};
use libfuzzer_sys::fuzz_target;

/// Longer than any wait a tamed request may legitimately cause (see `tame`).
const ANSWER_WITHIN: Duration = Duration::from_secs(20);
const RESTART_EVERY: u64 = 500;
const WIPE_EVERY: u64 = 2_000;
/// Frames above this are refused by FrameReader, as a broker with this setting would.
const MAX_REQUEST_BYTES: usize = 1 << 20;

struct Harness {
    system: actix::SystemRunner,
    settings: Arc<Settings>,
    cluster_id: Arc<str>,
    broker: Option<Broker>,
    base: PathBuf,
    generation: u64,
    runs: u64,
}

thread_local! {
    // Never dropped: at process exit the actors' runtimes are already gone, and dropping their
    // addresses then would wake tasks on destroyed thread-locals (a panic after the run).
    static HARNESS: ManuallyDrop<RefCell<Option<Harness>>> = const { ManuallyDrop::new(RefCell::new(None)) };
}

fn settings(data_dir: PathBuf) -> Settings {
    let mut s = Settings::default();
    s.broker.data_dir = data_dir;
    s.network.max_request_bytes = MAX_REQUEST_BYTES;
    s.broker.partition_threads = 1;
    s.broker.connection_threads = 1;
    s.log.sync_threads = 1;
    s.transactions.txn_shards = 2;
    s.groups.group_initial_rebalance_delay_ms = 0;
    // The binary derives it from the open-file limit (0 = auto); here a fixed limit the fuzz
    // process's files can hold, so that the restart check can tell a broker that cannot
    // start again (it found one creating 20,000 partitions before this limit existed).
    s.log.max_partitions = 2_000;
    // Small segments (Kafka's minimum) and retention keep the disk bounded and exercise roll
    // and retention.
    s.log.segment_bytes = 1024 * 1024;
    s.log.retention_bytes = 4 * 1024 * 1024;
    s.log.retention_check_interval_ms = 500;
    s.transactions.transaction_abort_check_interval_ms = 200;
    s
}

impl Harness {
    fn new() -> Harness {
        let root = std::env::var_os("KAAS_FUZZ_DIR").map(PathBuf::from).unwrap_or_else(|| {
            let shm = PathBuf::from("/dev/shm");
            if shm.is_dir() {
                shm
            } else {
                std::env::temp_dir()
            }
        });
        let base = root.join(format!("kaas-fuzz-{}", std::process::id()));
        let mut h = Harness {
            system: actix::System::new(),
            settings: Arc::new(settings(base.join("0"))),
            cluster_id: "kaas-fuzz".into(),
            broker: None,
            base,
            generation: 0,
            runs: 0,
        };
        h.start();
        h
    }

    fn start(&mut self) {
        let settings = self.settings.clone();
        let broker = self.system.block_on(async move { Broker::start(&settings) }).unwrap_or_else(|e| {
            panic!("the broker does not start on {}: {e}", self.settings.broker.data_dir.display())
        });
        self.broker = Some(broker);
    }

    fn stop(&mut self) {
        if let Some(b) = self.broker.take() {
            self.system.block_on(async {
                tokio::time::timeout(ANSWER_WITHIN, b.shutdown()).await.expect("shutdown hangs");
            });
            b.join();
        }
    }

    fn maybe_restart(&mut self) {
        self.runs += 1;
        if self.runs % RESTART_EVERY != 0 {
            return;
        }
        self.stop();
        if self.runs % WIPE_EVERY == 0 {
            let _ = std::fs::remove_dir_all(&self.settings.broker.data_dir);
            self.generation += 1;
            self.settings = Arc::new(settings(self.base.join(self.generation.to_string())));
        }
        // Whatever the requests left on disk, the broker must start on it again.
        self.start();
    }

    fn run(&mut self, data: &[u8]) {
        self.maybe_restart();
        let Some(broker) = &self.broker else { return };
        let session = broker.session(&self.settings, &self.cluster_id, "127.0.0.1".into());
        let mut frames = FrameReader::new(data);
        let pool = RequestPool::new(self.settings.network.queued_max_request_bytes);
        self.system.block_on(async move {
            let mut pending = FuturesOrdered::new();
            // As the Connection actor does: dispatch in order, answers complete in any order.
            loop {
                // The permit holds the frame's bytes in the pool until it is answered.
                let (frame, permit) = match frames.next(MAX_REQUEST_BYTES, &pool).await {
                    Ok(f) => f,
                    Err(_) => break,
                };
                match decode(frame) {
                    Ok(mut d) => {
                        tame(&mut d);
                        let (header, key) = (d.header.clone(), d.api_key);
                        let response = tokio::time::timeout(ANSWER_WITHIN, dispatch(session.clone(), d))
                            .await
                            .unwrap_or_else(|_| panic!("dispatch of {key:?} v{} hangs", header.request_api_version));
                        pending.push_back(
                            async move {
                                let answer = response.await;
                                drop(permit);
                                (header, key, answer)
                            }
                            .boxed_local(),
                        );
                    }
                    Err((Some(mut header), RequestError::UnsupportedVersion(ApiKey::ApiVersions, _))) => {
                        header.request_api_version = 0;
                        let resp = ResponseKind::ApiVersions(api_versions::unsupported()).into();
                        drop(permit);
                        pending.push_back(async move { (header, ApiKey::ApiVersions, Some(resp)) }.boxed_local());
                    }
                    // The connection closes; what was already dispatched is still answered.
                    Err(_) => break,
                }
            }
            loop {
                let next = tokio::time::timeout(ANSWER_WITHIN, pending.next())
                    .await
                    .unwrap_or_else(|_| panic!("a request got no answer within {ANSWER_WITHIN:?}"));
                let Some((header, key, response)) = next else { break };
                if let Some(answer) = response {
                    if let Err(e) = encode_response(&header, key, &answer.response) {
                        panic!("{key:?} v{}: the answer cannot be encoded: {e}", header.request_api_version);
                    }
                }
            }
        });
    }
}

/// Plays a client with short timeouts, so that a legitimate long poll is not taken for a hang:
/// Fetch waits at most 100 ms, a rebalance at most 1 s, a session lasts the minimum 6 s (group
/// coordinator default; shorter ones stay as sent and are refused). Half of the Produce requests
/// (even correlation ids) get their batch CRCs fixed so the fuzzer reaches past the CRC check.
fn tame(d: &mut Decoded) {
    let fix_crc = d.header.correlation_id % 2 == 0;
    let Request::Kafka(r) = &mut d.request else { return };
    match r.as_mut() {
        RequestKind::Fetch(f) => f.max_wait_ms = f.max_wait_ms.min(100),
        RequestKind::JoinGroup(j) => {
            j.rebalance_timeout_ms = j.rebalance_timeout_ms.min(1_000);
            j.session_timeout_ms = j.session_timeout_ms.min(6_000);
        }
        RequestKind::Produce(p) if fix_crc => {
            for part in p.topic_data.iter_mut().flat_map(|t| t.partition_data.iter_mut()) {
                if let Some(records) = &mut part.records {
                    *records = with_valid_crc(records);
                }
            }
        }
        _ => {}
    }
}

fn with_valid_crc(records: &Bytes) -> Bytes {
    let Ok(h) = BatchHeader::parse(records) else { return records.clone() };
    let end = h.total_size();
    if records.len() < end || end < HEADER_LEN {
        return records.clone();
    }
    let mut b = BytesMut::from(&records[..]);
    let crc = crc32c(&b[21..end]);
    b[17..21].copy_from_slice(&crc.to_be_bytes());
    b.freeze()
}

/// CRC-32C (Castagnoli), bitwise: only for fixing fuzzed batches.
fn crc32c(data: &[u8]) -> u32 {
    let mut crc = !0u32;
    for &byte in data {
        crc ^= byte as u32;
        for _ in 0..8 {
            crc = if crc & 1 != 0 { (crc >> 1) ^ 0x82F6_3B78 } else { crc >> 1 };
        }
    }
    !crc
}

fuzz_target!(|data: &[u8]| {
    HARNESS.with(|h| {
        let mut h = h.borrow_mut();
        h.get_or_insert_with(Harness::new).run(data);
    });
});
