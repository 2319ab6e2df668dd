//! The record-batch validator and the producer-state rules, driven as the partition leader
//! drives them: a sequence of appends (structured batches, or raw bytes from captured traffic),
//! verifications, markers, fences, expiry and retention against one `ProducerStateTable` and a
//! simulated log end offset.
//!
//! Checked besides "no panic, no unbounded allocation":
//! - an accepted batch moves the log end forward (never backwards or in place);
//! - a duplicate is answered with an offset that is already in the log;
//! - the first unstable offset lies inside the log;
//! - the producer-state snapshot (serde_json, as the partition writes it) reads back equal.
#![no_main]

use arbitrary::{Arbitrary, Unstructured};
use bytes::{Bytes, BytesMut};
use kaas::store::batch::{self, BatchHeader, HEADER_LEN, LOG_OVERHEAD};
use kaas::store::producer_state::{AppendDecision, ProducerStateTable, Verified};
use kaas::store::validate::{self, TimestampPolicy};
use libfuzzer_sys::fuzz_target;

/// Settings default of max.message.bytes: larger batches never reach the validator.
const MAX_MESSAGE_BYTES: usize = 1_048_588;

/// A few producer ids so that the fuzzer's batches, markers and fences meet.
#[derive(Arbitrary, Debug, Clone, Copy)]
struct Pid(u8);

impl Pid {
    fn get(self) -> i64 {
        match self.0 % 6 {
            0 => -1,
            1 => 0,
            2 => 1,
            3 => 2,
            4 => i64::MAX,
            _ => self.0 as i64,
        }
    }
}

#[derive(Arbitrary, Debug)]
struct Spec {
    base_offset: i64,
    attributes: i16,
    last_offset_delta: i32,
    base_timestamp: i64,
    max_timestamp: i64,
    pid: Pid,
    epoch: i16,
    base_sequence: i32,
    records_count: i32,
    body: Vec<u8>,
    /// Flip one byte after the CRC was computed.
    corrupt: Option<(u16, u8)>,
}

impl Spec {
    fn encode(&self) -> Bytes {
        let total = HEADER_LEN + self.body.len();
        let mut b = BytesMut::zeroed(HEADER_LEN);
        b[0..8].copy_from_slice(&self.base_offset.to_be_bytes());
        b[8..12].copy_from_slice(&((total - LOG_OVERHEAD) as i32).to_be_bytes());
        b[16] = 2;
        b[21..23].copy_from_slice(&self.attributes.to_be_bytes());
        b[23..27].copy_from_slice(&self.last_offset_delta.to_be_bytes());
        b[27..35].copy_from_slice(&self.base_timestamp.to_be_bytes());
        b[35..43].copy_from_slice(&self.max_timestamp.to_be_bytes());
        b[43..51].copy_from_slice(&self.pid.get().to_be_bytes());
        b[51..53].copy_from_slice(&self.epoch.to_be_bytes());
        b[53..57].copy_from_slice(&self.base_sequence.to_be_bytes());
        b[57..61].copy_from_slice(&self.records_count.to_be_bytes());
        b.extend_from_slice(&self.body);
        fix_crc(&mut b);
        if let Some((at, x)) = self.corrupt {
            let len = b.len();
            if let Some(byte) = b.get_mut(at as usize % len) {
                *byte ^= x;
            }
        }
        b.freeze()
    }
}

fn fix_crc(b: &mut BytesMut) {
    let Ok(h) = BatchHeader::parse(b) else { return };
    let end = h.total_size().min(b.len());
    if end > 21 {
        let crc = crc32c(&b[21..end]);
        b[17..21].copy_from_slice(&crc.to_be_bytes());
    }
}

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

#[derive(Arbitrary, Debug)]
enum Verify {
    No,
    /// The guard of the latest begin_verification (or a stale/made-up one).
    Latest,
    Made(u8),
    Tv2Added,
}

#[derive(Arbitrary, Debug)]
enum Op {
    Append(Spec, Verify),
    BeginVerification { pid: Pid, epoch: i16, sequence: i32 },
    Marker { pid: Pid, epoch: i16, coordinator_epoch: i32, txn_version: i8, commit: bool },
    Fence { pid: Pid, epoch: i16 },
    Expire { advance_ms: u32, expiration_ms: i64 },
    Snapshot,
}

struct Partition {
    producers: ProducerStateTable,
    log_end: i64,
    now_ms: i64,
    last_guard: Option<u64>,
}

impl Partition {
    /// The produce handler's and PartitionLeader's Append path, in their order.
    fn append(&mut self, records: Bytes, verify: &Verify) {
        if records.len() > MAX_MESSAGE_BYTES {
            return;
        }
        let Ok(header) = batch::validate_single(&records) else { return };
        // Record-level decoding as Kafka's LogValidator does it (and ListOffsets by timestamp).
        let mut buf = records.clone();
        let _ = kafka_protocol::records::RecordBatchDecoder::decode(&mut buf);
        // Kafka's LogValidator (store::validate): batch shape, every record, timestamps.
        if validate::validate_client_batch(&records, &header, &TimestampPolicy::default(), self.now_ms, "fuzz-0")
            .is_err()
        {
            return;
        }
        let verified = match verify {
            Verify::No => Verified::No,
            Verify::Latest => self.last_guard.map_or(Verified::No, Verified::Guard),
            Verify::Made(g) => Verified::Guard(*g as u64),
            Verify::Tv2Added => Verified::Tv2Added,
        };
        if self.producers.check_verification(&header, verified).is_err() {
            return;
        }
        match self.producers.check_append(&header) {
            Err(_) => {}
            Ok(AppendDecision::Duplicate(m)) => {
                assert!(
                    m.first_offset >= 0 && m.first_offset < self.log_end,
                    "duplicate answered with offset {} outside the log [0, {})",
                    m.first_offset,
                    self.log_end
                );
            }
            Ok(AppendDecision::Append) => {
                // Log::append: patch the base offset, parse what is stored.
                let mut data = BytesMut::from(&records[..]);
                batch::patch_base_offset(&mut data, self.log_end);
                let stored = BatchHeader::parse(&data).expect("a validated batch parses after patching");
                let next = stored.last_offset().checked_add(1).expect("last offset overflows");
                assert!(
                    next > self.log_end,
                    "accepted batch moves the log end from {} to {} (lastOffsetDelta {}, count {})",
                    self.log_end,
                    next,
                    stored.last_offset_delta,
                    stored.records_count
                );
                self.producers.record_append(&stored, self.now_ms);
                self.log_end = next;
            }
        }
    }

    fn apply(&mut self, op: &Op) {
        match op {
            Op::Append(spec, verify) => self.append(spec.encode(), verify),
            Op::BeginVerification { pid, epoch, sequence } => {
                if let Ok(Some(g)) =
                    self.producers.begin_verification(pid.get(), *epoch, *sequence, *epoch % 2 == 0, self.now_ms)
                {
                    self.last_guard = Some(g);
                }
            }
            Op::Marker { pid, epoch, coordinator_epoch, txn_version, commit } => {
                let pid = pid.get();
                if self.producers.check_marker(pid, *epoch, *coordinator_epoch, *txn_version).is_ok() {
                    let at = self.log_end;
                    if let Some(done) =
                        self.producers.record_marker(pid, *epoch, *coordinator_epoch, at, *commit, self.now_ms)
                    {
                        assert!(done.first_offset <= done.last_offset, "transaction ends before it starts: {done:?}");
                    }
                    self.log_end += 1;
                }
            }
            Op::Fence { pid, epoch } => self.producers.fence(pid.get(), *epoch, self.now_ms),
            Op::Expire { advance_ms, expiration_ms } => {
                self.now_ms += *advance_ms as i64;
                self.producers.expire(self.now_ms, *expiration_ms);
            }
            Op::Snapshot => {
                let bytes = serde_json::to_vec(&self.producers).expect("the producer state serializes");
                let back: ProducerStateTable = serde_json::from_slice(&bytes).expect("the snapshot reads back");
                let mut a: Vec<_> = self.producers.entries().cloned().collect();
                let mut b: Vec<_> = back.entries().cloned().collect();
                a.sort_by_key(|e| e.producer_id);
                b.sort_by_key(|e| e.producer_id);
                assert_eq!(a, b, "the snapshot reads back different");
            }
        }
        if let Some(first) = self.producers.first_unstable_offset() {
            assert!(first < self.log_end, "first unstable offset {first} is past the log end {}", self.log_end);
        }
    }
}

// Input: a sequence of operations. Tag byte 0 is a raw append: a flags byte (bit 0: fix the
// CRC; bits 1-2: how it was verified), a big-endian u32 length and that many bytes of record
// batch as a client sent it (fuzz/capture_seeds.py writes captured Produce batches this way).
// Any other tag is followed by an `Op` in `arbitrary`'s encoding.
fuzz_target!(|data: &[u8]| {
    let mut p =
        Partition { producers: ProducerStateTable::new(), log_end: 0, now_ms: 1_700_000_000_000, last_guard: None };
    let mut u = Unstructured::new(data);
    while let Ok(tag) = u.arbitrary::<u8>() {
        if tag == 0 {
            let Ok([flags, a, b, c, d]) = u.bytes(5).map(|x| [x[0], x[1], x[2], x[3], x[4]]) else { return };
            let len = u32::from_be_bytes([a, b, c, d]) as usize;
            let bytes = u.bytes(len.min(u.len())).unwrap_or_default();
            let mut records = BytesMut::from(bytes);
            if flags & 1 != 0 {
                fix_crc(&mut records);
            }
            let verify = match (flags >> 1) & 3 {
                0 => Verify::No,
                1 => Verify::Latest,
                2 => Verify::Tv2Added,
                _ => Verify::Made(flags >> 3),
            };
            p.append(records.freeze(), &verify);
            continue;
        }
        match Op::arbitrary(&mut u) {
            Ok(op) => p.apply(&op),
            Err(_) => return,
        }
    }
});
