//! eos-rules 15-22 over the wire against the real binary, including a retry after SIGKILL.

use crate::common;

use bytes::Bytes;
use common::{batch, create_topic, Broker, Client};
use kafka_protocol::messages::list_offsets_request::{ListOffsetsPartition, ListOffsetsTopic};
use kafka_protocol::messages::*;
use kafka_protocol::protocol::StrBytes;

fn topic_name(s: &str) -> TopicName {
    TopicName(StrBytes::from_string(s.to_string()))
}

pub(crate) fn init_pid(c: &mut Client) -> i64 {
    let mut req = InitProducerIdRequest::default();
    req.transactional_id = None;
    req.transaction_timeout_ms = i32::MAX;
    let resp: InitProducerIdResponse = c.call(ApiKey::InitProducerId, 4, req);
    assert_eq!((resp.error_code, resp.producer_epoch), (0, 0));
    resp.producer_id.0
}

/// (error code, base offset, log start offset)
pub(crate) fn produce(c: &mut Client, topic: &str, records: Bytes) -> (i16, i64, i64) {
    let resp = common::produce_one(c, 9, None, topic_name(topic), 0, records);
    let p = &resp.responses[0].partition_responses[0];
    (p.error_code, p.base_offset, p.log_start_offset)
}

pub(crate) fn latest_offset(c: &mut Client, topic: &str) -> i64 {
    let mut p = ListOffsetsPartition::default();
    p.partition_index = 0;
    p.timestamp = -1;
    let mut t = ListOffsetsTopic::default();
    t.name = topic_name(topic);
    t.partitions = vec![p];
    let mut req = ListOffsetsRequest::default();
    req.replica_id = BrokerId(-1);
    req.topics = vec![t];
    let resp: ListOffsetsResponse = c.call(ApiKey::ListOffsets, 5, req);
    let p = &resp.topics[0].partitions[0];
    assert_eq!(p.error_code, 0);
    p.offset
}

#[test]
fn idempotence_rules_hold_on_the_wire_and_across_a_crash() {
    let mut broker = Broker::start();
    let mut c = broker.client();
    create_topic(&mut c, "idem");
    let pid = init_pid(&mut c);
    let second = init_pid(&mut c);
    assert_ne!(pid, second, "eos-rules 1: every idempotent InitProducerId gets a fresh id");

    // rule 15: the first write of a producer id that never wrote here starts at sequence 0
    assert_eq!(produce(&mut c, "idem", batch(pid, 0, 3, 5, "a")), (45, -1, 0));
    assert_eq!(produce(&mut c, "idem", batch(pid, 0, 0, 5, "a")), (0, 0, 0));
    assert_eq!(produce(&mut c, "idem", batch(pid, 0, 5, 5, "b")), (0, 5, 0));
    // rule 19: a retry of a cached batch answers its original offset and appends nothing
    assert_eq!(produce(&mut c, "idem", batch(pid, 0, 0, 5, "a")), (0, 0, 0));
    assert_eq!(latest_offset(&mut c, "idem"), 10);
    // rule 16 + 22: a gap is OUT_OF_ORDER_SEQUENCE_NUMBER, with LogStartOffset filled
    assert_eq!(produce(&mut c, "idem", batch(pid, 0, 42, 1, "gap")), (45, -1, 0));
    // rule 17: a higher epoch must start at 0
    assert_eq!(produce(&mut c, "idem", batch(pid, 1, 10, 1, "e1")).0, 45);
    assert_eq!(produce(&mut c, "idem", batch(pid, 1, 0, 2, "e1")), (0, 10, 0));
    // rule 18: a lower epoch is INVALID_PRODUCER_EPOCH
    assert_eq!(produce(&mut c, "idem", batch(pid, 0, 10, 1, "old")).0, 47);
    // rule 14: a corrupt batch is refused (CORRUPT_MESSAGE), nothing appended
    let mut bad = batch(pid, 1, 2, 1, "bad").to_vec();
    let last = bad.len() - 1;
    bad[last] ^= 0xff;
    assert_eq!(produce(&mut c, "idem", Bytes::from(bad)).0, 2);
    assert_eq!(latest_offset(&mut c, "idem"), 12);

    // A crash: the producer's retry of its last acknowledged batch must still be recognised.
    broker.crash_and_restart();
    let mut c = broker.client();
    assert_eq!(latest_offset(&mut c, "idem"), 12, "acknowledged data survives SIGKILL");
    assert_eq!(produce(&mut c, "idem", batch(pid, 1, 0, 2, "e1")), (0, 10, 0));
    assert_eq!(produce(&mut c, "idem", batch(pid, 1, 2, 1, "next")), (0, 12, 0));
    let fresh = init_pid(&mut c);
    assert!(fresh != pid && fresh != second, "eos-rules 1: ids are not reused after a restart");
    assert!(broker.is_running());
}

#[test]
fn duplicates_are_recognised_from_a_periodic_snapshot_after_a_crash() {
    // Housekeeping (and so the producer-state snapshot) every 100 ms.
    // The test batches are stamped in 2023: no time retention, so the log start stays at 0.
    let mut broker =
        Broker::start_with_env(&[("KAAS_RETENTION_CHECK_INTERVAL_MS", "100"), ("KAAS_RETENTION_MS", "-1")]);
    let mut c = broker.client();
    create_topic(&mut c, "snap");
    let pid = init_pid(&mut c);
    for i in 0..3 {
        assert_eq!(produce(&mut c, "snap", batch(pid, 0, i * 2, 2, "before")).0, 0);
    }
    let snapshot = broker.data_dir().join("topics").join("snap-0").join("producer-state.json");
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while !snapshot.exists() {
        assert!(std::time::Instant::now() < deadline, "no periodic producer-state snapshot");
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    // After the snapshot: more batches, then a crash before any clean shutdown.
    assert_eq!(produce(&mut c, "snap", batch(pid, 0, 6, 2, "after")), (0, 6, 0));
    broker.crash_and_restart();
    let mut c = broker.client();
    // eos-rules 19 across the crash: one batch from before the snapshot, one replayed after it.
    assert_eq!(produce(&mut c, "snap", batch(pid, 0, 2, 2, "before")), (0, 2, 0));
    assert_eq!(produce(&mut c, "snap", batch(pid, 0, 6, 2, "after")), (0, 6, 0));
    assert_eq!(produce(&mut c, "snap", batch(pid, 0, 8, 1, "next")), (0, 8, 0));
    assert_eq!(produce(&mut c, "snap", batch(pid, 0, 20, 1, "gap")).0, 45);
}

/// The producer-state snapshot's `forgotten_up_to` (eos-rules 15), once one is written.
fn snapshot_forgotten_up_to(broker: &Broker, topic: &str) -> Option<i64> {
    let path = broker.data_dir().join("topics").join(format!("{topic}-0")).join("producer-state.json");
    let json: serde_json::Value = serde_json::from_slice(&std::fs::read(path).ok()?).ok()?;
    json["table"]["forgotten_up_to"].as_i64()
}

#[test]
fn a_first_batch_past_sequence_0_is_refused_unless_the_producer_was_forgotten() {
    // eos-rules 15 (kaas; Kafka 4.5 on a partition that never held a record, KAFKA-15591).
    // Housekeeping (expiry, snapshots) every 100 ms; producer ids forgotten after 1 s idle.
    let mut broker = Broker::start_with_env(&[
        ("KAAS_RETENTION_CHECK_INTERVAL_MS", "100"),
        ("KAAS_RETENTION_MS", "-1"),
        ("KAAS_PRODUCER_ID_EXPIRATION_MS", "1000"),
    ]);
    let mut c = broker.client();
    create_topic(&mut c, "first");
    let other = init_pid(&mut c);
    assert_eq!(produce(&mut c, "first", batch(other, 0, 0, 3, "other")), (0, 0, 0));
    // A producer's second batch arrives first (its first was refused while this one was in
    // flight): refused, also on a partition that holds records, and nothing is appended.
    let pid = init_pid(&mut c);
    assert_eq!(produce(&mut c, "first", batch(pid, 0, 5, 2, "second")), (45, -1, 0));
    assert_eq!(latest_offset(&mut c, "first"), 3);
    // The client retries both in order: both are written, in order.
    assert_eq!(produce(&mut c, "first", batch(pid, 0, 0, 5, "first")), (0, 3, 0));
    assert_eq!(produce(&mut c, "first", batch(pid, 0, 5, 2, "second")), (0, 8, 0));

    // Idle past producer_id_expiration_ms, both ids are forgotten: each may go on at any
    // sequence (as in Kafka), and the snapshot keeps that across a crash.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(15);
    while snapshot_forgotten_up_to(&broker, "first").is_none_or(|f| f < pid) {
        assert!(std::time::Instant::now() < deadline, "no snapshot of the expiry");
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    broker.crash_and_restart();
    let mut c = broker.client();
    assert_eq!(produce(&mut c, "first", batch(other, 0, 9, 1, "other-later")), (0, 10, 0));
    assert_eq!(produce(&mut c, "first", batch(pid, 0, 20, 1, "later")), (0, 11, 0));
    // A producer id handed out after the expiry never wrote here.
    let fresh = init_pid(&mut c);
    assert!(fresh > pid);
    assert_eq!(produce(&mut c, "first", batch(fresh, 0, 1, 1, "fresh")), (45, -1, 0));
    assert_eq!(latest_offset(&mut c, "first"), 12);
}

pub(crate) fn fetch_error(c: &mut Client, topic: &str, offset: i64) -> i16 {
    let req = common::fetch::fetch_request(topic, 0, offset, 0);
    let resp: FetchResponse = c.call(ApiKey::Fetch, 11, req);
    resp.responses[0].partitions[0].error_code
}
