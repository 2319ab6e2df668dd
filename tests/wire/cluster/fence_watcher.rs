//! Cross-broker producer fencing through fence files, against the real binary: a peer
//! broker's fence file on the shared disk (`__cluster/producer_fences/from-<node>.json`) fences
//! the producer on this broker's partitions; a malformed peer file is logged once and skipped.

use crate::common;

use std::path::Path;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use bytes::Bytes;
use common::{batch, create_topic, Broker, Client};
use kafka_protocol::messages::describe_producers_request::TopicRequest;
use kafka_protocol::messages::*;
use kafka_protocol::protocol::StrBytes;

const TOPIC: &str = "fenced";
/// INVALID_PRODUCER_EPOCH: what a partition answers a batch older than the producer's epoch
/// (eos-rules 18; never PRODUCER_FENCED on Produce). A fence raises that epoch.
const INVALID_PRODUCER_EPOCH: i16 = 47;

fn topic_name(s: &str) -> TopicName {
    TopicName(StrBytes::from_string(s.to_string()))
}

fn init_pid(c: &mut Client) -> i64 {
    let mut req = InitProducerIdRequest::default();
    req.transactional_id = None;
    req.transaction_timeout_ms = i32::MAX;
    let resp: InitProducerIdResponse = c.call(ApiKey::InitProducerId, 4, req);
    assert_eq!((resp.error_code, resp.producer_epoch), (0, 0));
    resp.producer_id.0
}

fn produce(c: &mut Client, records: Bytes) -> i16 {
    let resp = common::produce_one(c, 9, None, topic_name(TOPIC), 0, records);
    resp.responses[0].partition_responses[0].error_code
}

/// (epoch, last sequence) of `pid` on partition 0, as DescribeProducers reports it.
fn described(c: &mut Client, pid: i64) -> Option<(i32, i32)> {
    let mut t = TopicRequest::default();
    t.name = topic_name(TOPIC);
    t.partition_indexes = vec![0];
    let mut req = DescribeProducersRequest::default();
    req.topics = vec![t];
    let resp: DescribeProducersResponse = c.call(ApiKey::DescribeProducers, 0, req);
    let p = &resp.topics[0].partitions[0];
    assert_eq!(p.error_code, 0);
    p.active_producers.iter().find(|s| s.producer_id.0 == pid).map(|s| (s.producer_epoch, s.last_sequence))
}

/// Writes a fence file as a peer's FenceWriter does: a tmp file, then a rename over the name.
fn write_like_a_peer(dir: &Path, name: &str, bytes: &[u8]) {
    let tmp = dir.join(format!("{name}.tmp"));
    std::fs::write(&tmp, bytes).unwrap();
    std::fs::rename(&tmp, dir.join(name)).unwrap();
}

fn now_ms() -> i64 {
    SystemTime::now().duration_since(UNIX_EPOCH).unwrap().as_millis() as i64
}

fn warnings_about(broker: &Broker, file: &str) -> usize {
    broker.log().lines().filter(|l| l.contains("WARN") && l.contains(file)).count()
}

/// Waits (bounded) for `cond`, checking every 20 ms.
fn wait_for(what: &str, limit: Duration, mut cond: impl FnMut() -> bool) {
    let deadline = Instant::now() + limit;
    while !cond() {
        assert!(Instant::now() < deadline, "{what}: not within {limit:?}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn a_peer_fence_file_fences_the_producer_here() {
    let mut broker = Broker::start_with_env(&[("KAAS_FENCE_POLL_INTERVAL_MS", "200")]);
    let mut c = broker.client();
    create_topic(&mut c, TOPIC);
    let pid = init_pid(&mut c);
    assert_eq!(produce(&mut c, batch(pid, 0, 0, 1, "a")), 0);
    assert_eq!(described(&mut c, pid), Some((0, 0)));

    let fences = broker.data_dir().join("__cluster").join("producer_fences");
    std::fs::create_dir_all(&fences).unwrap();
    // A peer's garbage first: it must not stop the broker nor keep the good file from applying.
    write_like_a_peer(&fences, "from-8.json", b"{\"fences\":{\"12\":");
    // A tmp file a peer left behind is not a fence file (no warning about it either).
    std::fs::write(fences.join("from-9.tmp"), b"not json").unwrap();

    let file = format!(r#"{{"fences":{{"{pid}":3}},"fenced_at":{{"{pid}":{}}}}}"#, now_ms());
    write_like_a_peer(&fences, "from-7.json", file.as_bytes());
    let written = Instant::now();

    // The zombie at epoch 0 keeps producing in sequence until the fence lands.
    let mut seq = 1;
    let delay = loop {
        match produce(&mut c, batch(pid, 0, seq, 1, "zombie")) {
            0 => seq += 1,
            INVALID_PRODUCER_EPOCH => break written.elapsed(),
            other => panic!("epoch-0 batch answered {other}, expected 0 or {INVALID_PRODUCER_EPOCH}"),
        }
        assert!(written.elapsed() < Duration::from_secs(10), "the peer's fence was not applied within 10 s");
        std::thread::sleep(Duration::from_millis(10));
    };
    eprintln!("fence propagation: {} ms from the peer's rename to the first refusal (poll 200 ms)", delay.as_millis());
    // Stays fenced.
    assert_eq!(produce(&mut c, batch(pid, 0, seq, 1, "zombie")), INVALID_PRODUCER_EPOCH);

    // The fence raised the producer's epoch on the partition and cleared its batches
    // (store::producer_state::fence), so DescribeProducers shows epoch 3 and no last sequence.
    assert_eq!(described(&mut c, pid), Some((3, -1)));
    // The producer at the new epoch starts at sequence 0 (eos-rules 16 on the fenced entry).
    assert_eq!(produce(&mut c, batch(pid, 3, 0, 1, "new")), 0);
    assert_eq!(described(&mut c, pid), Some((3, 0)));

    // The garbage file was logged at WARN once however many polls saw it, and again once it changed.
    wait_for("a warning about from-8.json", Duration::from_secs(5), || warnings_about(&broker, "from-8.json") >= 1);
    std::thread::sleep(Duration::from_millis(1000));
    assert_eq!(warnings_about(&broker, "from-8.json"), 1, "rate-limited: one warning per version of the file");
    write_like_a_peer(&fences, "from-8.json", b"still not a fence file");
    wait_for("a second warning once from-8.json changed", Duration::from_secs(5), || {
        warnings_about(&broker, "from-8.json") == 2
    });
    assert_eq!(warnings_about(&broker, "from-9"), 0, "tmp files are not read");
    // A peer's fence must not be re-appended to this broker's own fence file.
    assert!(!fences.join("from-0.json").exists(), "the peer's fence went to our own file");

    assert!(broker.is_running(), "the broker died on a malformed peer file:\n{}", broker.log());
    broker.finish();
}
