//! DeleteTopics against the real binary: a deleted topic's files are closed and gone at once.
//! A descriptor left open on a deleted segment keeps its blocks allocated until the broker
//! exits, and then the kernel frees them in the exit itself (seconds with discard), which
//! made SIGTERM slow after franz-go's tests. Fetch answers are sent with sendfile from the
//! segment files: one being sent when its topic is deleted is still sent whole.

use crate::common;

use common::fetch::{fetch_request, records};
use common::{batch, create_topic, Broker, Client};
use kafka_protocol::messages::fetch_request::{FetchPartition, FetchTopic};
use kafka_protocol::messages::*;
use kafka_protocol::protocol::{Decodable, Encodable, StrBytes};

pub(crate) const TOPIC: &str = "doomed";

fn name() -> TopicName {
    TopicName(StrBytes::from_static_str(TOPIC))
}

pub(crate) fn produce(c: &mut Client, seq: i32) {
    let resp = common::produce_one(c, 9, None, name(), 0, batch(11, 0, seq, 100, &"v".repeat(1000)));
    assert_eq!(resp.responses[0].partition_responses[0].error_code, 0);
}

/// Reads the partition from offset 0, which opens its oldest segments.
pub(crate) fn fetch_from_start(c: &mut Client) {
    let mut p = FetchPartition::default();
    p.partition = 0;
    p.fetch_offset = 0;
    p.partition_max_bytes = 1 << 20;
    let mut t = FetchTopic::default();
    t.topic = name();
    t.partitions = vec![p];
    let mut req = FetchRequest::default();
    req.replica_id = BrokerId(-1);
    req.max_bytes = 1 << 20;
    req.topics = vec![t];
    let resp: FetchResponse = c.call(ApiKey::Fetch, 11, req);
    assert_eq!(resp.responses[0].partitions[0].error_code, 0);
}

/// The broker's open descriptors whose files were deleted.
pub(crate) fn deleted_open_files(pid: u32) -> Vec<String> {
    let fds = std::fs::read_dir(format!("/proc/{pid}/fd")).expect("/proc/<pid>/fd");
    fds.filter_map(|e| std::fs::read_link(e.ok()?.path()).ok())
        .map(|target| target.to_string_lossy().into_owned())
        .filter(|target| target.ends_with("(deleted)"))
        .collect()
}

fn delete_topic(c: &mut Client) {
    common::delete_topic_named(c, TOPIC);
}

#[test]
fn a_fetch_answer_being_sent_when_its_topic_is_deleted_is_sent_whole() {
    let broker = Broker::start();
    let mut c = broker.client();
    create_topic(&mut c, TOPIC);
    // About 20 MiB in one segment: far more than the socket buffers of a client not reading.
    let batches = 200;
    for i in 0..batches {
        produce(&mut c, i * 100);
    }
    let mut req = fetch_request(TOPIC, 0, 0, 0);
    req.max_bytes = 48 << 20;
    req.topics[0].partitions[0].partition_max_bytes = 48 << 20;
    let mut body = bytes::BytesMut::new();
    req.encode(&mut body, 12).expect("fetch");
    let mut reader = broker.client();
    let correlation = reader.send_raw(ApiKey::Fetch, 12, &body);
    // The broker is sending the answer and waits for the client's socket to drain.
    std::thread::sleep(std::time::Duration::from_millis(300));
    delete_topic(&mut c);
    assert!(!broker.data_dir().join("topics").join(format!("{TOPIC}-0")).exists());
    assert!(!deleted_open_files(broker.pid()).is_empty(), "the answer in flight holds its segment file");

    let mut buf = reader.receive_raw(ApiKey::Fetch, 12, correlation);
    let resp = FetchResponse::decode(&mut buf, 12).expect("fetch response");
    let p = &resp.responses[0].partitions[0];
    assert_eq!(p.error_code, 0);
    let got = records(p).expect("whole batches");
    assert_eq!(got.len(), batches as usize * 100, "every record, read from the deleted file");
    for (i, r) in got.iter().enumerate() {
        assert_eq!(r.offset, i as i64);
        let want = format!("{}-{}", "v".repeat(1000), i % 100);
        assert_eq!(r.value.as_deref(), Some(want.as_bytes()), "record {i}");
    }
    // Sent: the file closes.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while !deleted_open_files(broker.pid()).is_empty() {
        assert!(std::time::Instant::now() < deadline, "{:?}", deleted_open_files(broker.pid()));
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    broker.finish();
}

#[test]
fn a_deleted_topic_leaves_no_open_file_behind() {
    let broker = Broker::start_with_env(&[("KAAS_SEGMENT_BYTES", "1048576")]);
    let mut c = broker.client();
    create_topic(&mut c, TOPIC);
    // About 3 MiB: several segments of 1 MiB, each opened by the appends and the fetch.
    for i in 0..30 {
        produce(&mut c, i * 100);
    }
    fetch_from_start(&mut c);
    let dir = broker.data_dir().join("topics");
    let segments = std::fs::read_dir(dir.join(format!("{TOPIC}-0")))
        .expect("partition dir")
        .filter(|e| e.as_ref().is_ok_and(|e| e.path().extension().is_some_and(|x| x == "log")))
        .count();
    assert!(segments >= 3, "{segments} segment files");

    delete_topic(&mut c);

    assert!(!dir.join(format!("{TOPIC}-0")).exists(), "the partition directory is gone");
    let left = deleted_open_files(broker.pid());
    assert!(left.is_empty(), "descriptors of deleted files still open: {left:?}");
    broker.finish();
}
