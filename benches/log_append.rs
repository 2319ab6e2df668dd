//! Criterion benches of the hot path's pure parts: validating a client batch (CRC32C + header),
//! the producer-state check, and appending to a segment (page cache, fsync excluded: fsync is
//! measured end to end by the load harness in benches/load/).

use bytes::{Bytes, BytesMut};
use criterion::{black_box, criterion_group, criterion_main, Criterion, Throughput};
use indexmap::IndexMap;
use kaas::store::batch::{validate_single, BatchHeader};
use kaas::store::log::{Log, LogConfig};
use kaas::store::producer_state::ProducerStateTable;
use kafka_protocol::records::{Compression, Record, RecordBatchEncoder, RecordEncodeOptions, TimestampType};

/// A real idempotent batch of 16 records of 1 KiB, as a Java producer would send it.
fn client_batch(seq: i32) -> Bytes {
    let records: Vec<Record> = (0..16)
        .map(|i| Record {
            transactional: false,
            control: false,
            delete_horizon: false,
            partition_leader_epoch: -1,
            producer_id: 7,
            producer_epoch: 0,
            timestamp_type: TimestampType::Creation,
            offset: i,
            sequence: seq + i as i32,
            timestamp: 1_700_000_000_000,
            key: None,
            value: Some(Bytes::from(vec![b'x'; 1024])),
            headers: IndexMap::new(),
        })
        .collect();
    let mut buf = BytesMut::new();
    RecordBatchEncoder::encode(&mut buf, &records, &RecordEncodeOptions { version: 2, compression: Compression::None })
        .expect("encode");
    buf.freeze()
}

fn bench(c: &mut Criterion) {
    let batch = client_batch(0);
    let mut g = c.benchmark_group("produce_path");
    g.throughput(Throughput::Bytes(batch.len() as u64));
    g.bench_function("validate_16KiB_batch", |b| b.iter(|| validate_single(black_box(&batch)).expect("valid")));
    let header = BatchHeader::parse(&batch).expect("header");
    let mut table = ProducerStateTable::new();
    table.record_append(&header, 0);
    let next = BatchHeader::parse(&client_batch(16)).expect("header");
    g.bench_function("producer_state_check", |b| b.iter(|| table.check_append(black_box(&next)).expect("in order")));
    let dir = tempfile::tempdir().expect("tempdir");
    let (mut log, _) =
        Log::open(dir.path(), LogConfig { segment_bytes: 256 << 20, ..LogConfig::default() }).expect("log");
    g.bench_function("log_append_16KiB", |b| b.iter(|| log.append(BytesMut::from(&batch[..])).expect("append")));
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
