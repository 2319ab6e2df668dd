//! Malformed batches are refused as Apache Kafka's LogValidator refuses them, the partition keeps
//! serving, and a gzip bomb does not blow the broker's memory (docs/operations.md, "Faults and
//! hostile clients").

use crate::common;

use std::io::Write;

use bytes::Bytes;
use common::{batch, create_topic, vm_hwm_kib, Broker, Client};
use kafka_protocol::messages::list_offsets_request::{ListOffsetsPartition, ListOffsetsTopic};
use kafka_protocol::messages::produce_response::PartitionProduceResponse;
use kafka_protocol::messages::*;
use kafka_protocol::protocol::StrBytes;

const INVALID_TIMESTAMP: i16 = 32;
const INVALID_RECORD: i16 = 87;

fn topic_name(s: &str) -> TopicName {
    TopicName(StrBytes::from_string(s.to_string()))
}

fn produce(c: &mut Client, topic: &str, records: Bytes) -> PartitionProduceResponse {
    let resp = common::produce_one(c, 9, None, topic_name(topic), 0, records);
    resp.responses[0].partition_responses[0].clone()
}

/// ListOffsets v5: (error, offset, timestamp) for `timestamp` (-1 = latest).
fn list_offset(c: &mut Client, topic: &str, timestamp: i64) -> (i16, i64, i64) {
    let mut p = ListOffsetsPartition::default();
    p.partition_index = 0;
    p.timestamp = timestamp;
    let mut t = ListOffsetsTopic::default();
    t.name = topic_name(topic);
    t.partitions = vec![p];
    let mut req = ListOffsetsRequest::default();
    req.replica_id = BrokerId(-1);
    req.topics = vec![t];
    let resp: ListOffsetsResponse = c.call(ApiKey::ListOffsets, 5, req);
    let p = &resp.topics[0].partitions[0];
    (p.error_code, p.offset, p.timestamp)
}

/// Rewrites header fields of a valid batch and recomputes its CRC32C (attributes .. end).
fn patched(b: &Bytes, at: usize, field: &[u8]) -> Bytes {
    let mut v = b.to_vec();
    v[at..at + field.len()].copy_from_slice(field);
    let crc = crc32c::crc32c(&v[21..]);
    v[17..21].copy_from_slice(&crc.to_be_bytes());
    Bytes::from(v)
}

const LAST_OFFSET_DELTA: usize = 23;
const BASE_TIMESTAMP: usize = 27;
const MAX_TIMESTAMP: usize = 35;

fn now_ms() -> i64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_millis() as i64).unwrap_or(0)
}

fn varint(out: &mut Vec<u8>, v: i64) {
    let mut z = ((v << 1) ^ (v >> 63)) as u64;
    while z >= 0x80 {
        out.push((z as u8) | 0x80);
        z >>= 7;
    }
    out.push(z as u8);
}

#[test]
fn malformed_batches_are_refused_and_the_partition_keeps_serving() {
    let mut broker = Broker::start();
    let mut c = broker.client();
    create_topic(&mut c, "bad");
    // One non-idempotent record: the batch the malformed ones below are patched from.
    let good = batch(-1, -1, -1, 1, "good");
    let first = produce(&mut c, "bad", good.clone());
    assert_eq!((first.error_code, first.base_offset), (0, 0));

    // lastOffsetDelta = -3 with a valid CRC: Kafka answers INVALID_RECORD with the log start offset.
    let negative = produce(&mut c, "bad", patched(&good, LAST_OFFSET_DELTA, &(-3i32).to_be_bytes()));
    assert_eq!((negative.error_code, negative.base_offset, negative.log_start_offset), (INVALID_RECORD, -1, 0));
    // lastOffsetDelta = 1000 with one record: count and offsets disagree.
    let gap = produce(&mut c, "bad", patched(&good, LAST_OFFSET_DELTA, &1000i32.to_be_bytes()));
    assert_eq!((gap.error_code, gap.base_offset), (INVALID_RECORD, -1));

    // The partition still serves, at the next offset.
    let next = produce(&mut c, "bad", good.clone());
    assert_eq!((next.error_code, next.base_offset), (0, 1));
    assert_eq!(list_offset(&mut c, "bad", -1), (0, 2, -1));

    // A timestamp two hours ahead (log.message.timestamp.after.max.ms defaults to one hour):
    // INVALID_TIMESTAMP with the record's index and a message, as Kafka fills them (v8+).
    let now = now_ms();
    let future = patched(&good, BASE_TIMESTAMP, &(now + 7_200_000).to_be_bytes());
    let future = patched(&future, MAX_TIMESTAMP, &(now + 7_200_000).to_be_bytes());
    let late = produce(&mut c, "bad", future);
    assert_eq!(late.error_code, INVALID_TIMESTAMP);
    assert_eq!(late.record_errors.len(), 1);
    assert_eq!(late.record_errors[0].batch_index, 0);
    assert!(late.error_message.is_some());
    assert_eq!(list_offset(&mut c, "bad", -1), (0, 2, -1), "nothing refused was appended");
    assert!(broker.is_running());
}

#[test]
fn a_gzip_bomb_and_list_offsets_by_time_keep_memory_bounded() {
    const RECORDS: i64 = 10;
    const VALUE: usize = 64 << 20;
    let mut broker = Broker::start();
    let mut c = broker.client();
    create_topic(&mut c, "bomb");
    let pid = broker.pid();

    // 10 records of 64 MiB of zeros, gzip-compressed as they are written (about 650 KB).
    let base_ts: i64 = 1_700_000_000_000;
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    let zeros = vec![0u8; 1 << 20];
    for i in 0..RECORDS {
        let mut head = vec![0u8];
        varint(&mut head, i); // timestamp delta
        varint(&mut head, i); // offset delta
        varint(&mut head, -1); // no key
        varint(&mut head, VALUE as i64);
        let tail_len = 1; // header count
        let mut rec = Vec::new();
        varint(&mut rec, (head.len() + VALUE + tail_len) as i64);
        rec.extend(head);
        gz.write_all(&rec).unwrap();
        for _ in 0..VALUE / zeros.len() {
            gz.write_all(&zeros).unwrap();
        }
        gz.write_all(&[0]).unwrap(); // zero headers
    }
    let payload = gz.finish().unwrap();
    let mut b = vec![0u8; 61];
    b[8..12].copy_from_slice(&((61 - 12 + payload.len()) as i32).to_be_bytes());
    b[16] = 2;
    b[21..23].copy_from_slice(&1i16.to_be_bytes()); // gzip
    b[23..27].copy_from_slice(&((RECORDS - 1) as i32).to_be_bytes());
    b[27..35].copy_from_slice(&base_ts.to_be_bytes());
    b[35..43].copy_from_slice(&(base_ts + RECORDS - 1).to_be_bytes());
    b[43..51].copy_from_slice(&(-1i64).to_be_bytes());
    b[51..53].copy_from_slice(&(-1i16).to_be_bytes());
    b[53..57].copy_from_slice(&(-1i32).to_be_bytes());
    b[57..61].copy_from_slice(&(RECORDS as i32).to_be_bytes());
    b.extend_from_slice(&payload);
    let crc = crc32c::crc32c(&b[21..]);
    b[17..21].copy_from_slice(&crc.to_be_bytes());
    assert!(b.len() < 1_000_000, "the bomb fits in message.max.bytes: {}", b.len());

    let before = vm_hwm_kib(pid);
    let r = produce(&mut c, "bomb", Bytes::from(b));
    assert_eq!((r.error_code, r.base_offset), (0, 0));
    // ListOffsets by time walks the batch up to the 6th record (5 x 64 MiB inflated).
    assert_eq!(list_offset(&mut c, "bomb", base_ts + 5), (0, 5, base_ts + 5));
    let after = vm_hwm_kib(pid);
    eprintln!("broker VmHWM before {before} KiB, after {after} KiB");
    // The old code decoded the whole batch (RSS +656 MB); the streaming walk needs a few MiB.
    assert!(after < before + 48 * 1024, "peak RSS grew from {before} KiB to {after} KiB");
    assert!(broker.is_running());
}

#[test]
fn log_append_time_is_stamped_by_the_broker_and_answered() {
    let mut broker = Broker::start_with_env(&[("KAAS_LOG_MESSAGE_TIMESTAMP_TYPE", "LogAppendTime")]);
    let mut c = broker.client();
    create_topic(&mut c, "lat");
    let before = now_ms();
    // The record says 2023; under LogAppendTime the broker's clock wins.
    let r = produce(&mut c, "lat", batch(-1, -1, -1, 1, "lat"));
    assert_eq!((r.error_code, r.base_offset), (0, 0));
    assert!(r.log_append_time_ms >= before, "log_append_time {} < {before}", r.log_append_time_ms);
    // The stored batch carries that time: ListOffsets by time finds the record at it.
    assert_eq!(list_offset(&mut c, "lat", r.log_append_time_ms), (0, 0, r.log_append_time_ms));
    // eos-rules 19: a duplicate is answered with the original append time, not a new one.
    let mut c2 = broker.client();
    let pid = {
        let mut req = InitProducerIdRequest::default();
        req.transactional_id = None;
        req.transaction_timeout_ms = i32::MAX;
        let resp: InitProducerIdResponse = c2.call(ApiKey::InitProducerId, 4, req);
        resp.producer_id.0
    };
    let first = produce(&mut c, "lat", batch(pid, 0, 0, 2, "idem"));
    assert_eq!((first.error_code, first.base_offset), (0, 1));
    // Wait until the clock has moved past the first append time, so a fresh stamp would differ.
    while now_ms() <= first.log_append_time_ms {
        std::thread::sleep(std::time::Duration::from_millis(1));
    }
    let again = produce(&mut c, "lat", batch(pid, 0, 0, 2, "idem"));
    assert_eq!((again.error_code, again.base_offset), (0, 1));
    assert_eq!(again.log_append_time_ms, first.log_append_time_ms);
    // A client may not send LogAppendTime batches itself (Kafka: INVALID_TIMESTAMP).
    let attrs = 0x08i16.to_be_bytes();
    assert_eq!(produce(&mut c, "lat", patched(&batch(-1, -1, -1, 1, "x"), 21, &attrs)).error_code, INVALID_TIMESTAMP);
    assert!(broker.is_running());
}
