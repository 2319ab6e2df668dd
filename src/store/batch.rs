//! Zero-copy view of a magic-v2 record batch header (fixed offsets, never re-encoded).

use bytes::Bytes;
use thiserror::Error;

pub const HEADER_LEN: usize = 61;
/// Bytes before the batch-length field's coverage starts (baseOffset + batchLength).
pub const LOG_OVERHEAD: usize = 12;

const BASE_OFFSET: usize = 0;
const BATCH_LENGTH: usize = 8;
const PARTITION_LEADER_EPOCH: usize = 12;
const MAGIC: usize = 16;
const CRC: usize = 17;
const ATTRIBUTES: usize = 21;
const LAST_OFFSET_DELTA: usize = 23;
const BASE_TIMESTAMP: usize = 27;
const MAX_TIMESTAMP: usize = 35;
const PRODUCER_ID: usize = 43;
const PRODUCER_EPOCH: usize = 51;
const BASE_SEQUENCE: usize = 53;
const RECORDS_COUNT: usize = 57;

const ATTR_COMPRESSION: i16 = 0x07;
const ATTR_TIMESTAMP_TYPE: i16 = 0x08;
const ATTR_TRANSACTIONAL: i16 = 0x10;
const ATTR_CONTROL: i16 = 0x20;

#[derive(Debug, Error, PartialEq, Eq)]
pub enum BatchError {
    #[error("record set is empty")]
    Empty,
    #[error("truncated batch: need {need} bytes, have {have}")]
    Truncated { need: usize, have: usize },
    #[error("unsupported magic {0}")]
    Magic(i8),
    #[error("crc mismatch: stored {stored:#x}, computed {computed:#x}")]
    Crc { stored: u32, computed: u32 },
    #[error("batch length {0} is invalid")]
    Length(i32),
    #[error("expected exactly one batch, found trailing bytes")]
    Trailing,
}

fn i16_at(b: &[u8], at: usize) -> i16 {
    i16::from_be_bytes([b[at], b[at + 1]])
}
fn i32_at(b: &[u8], at: usize) -> i32 {
    i32::from_be_bytes([b[at], b[at + 1], b[at + 2], b[at + 3]])
}
fn i64_at(b: &[u8], at: usize) -> i64 {
    let mut a = [0u8; 8];
    a.copy_from_slice(&b[at..at + 8]);
    i64::from_be_bytes(a)
}

/// Decoded header fields of one batch. Cheap to copy; the bytes stay where they are.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BatchHeader {
    pub base_offset: i64,
    pub batch_length: i32,
    pub magic: i8,
    pub crc: u32,
    pub attributes: i16,
    pub last_offset_delta: i32,
    pub base_timestamp: i64,
    pub max_timestamp: i64,
    pub producer_id: i64,
    pub producer_epoch: i16,
    pub base_sequence: i32,
    pub records_count: i32,
}

impl BatchHeader {
    /// Parses the header at the start of `b` (which must hold at least HEADER_LEN bytes).
    pub fn parse(b: &[u8]) -> Result<BatchHeader, BatchError> {
        if b.len() < HEADER_LEN {
            return Err(BatchError::Truncated { need: HEADER_LEN, have: b.len() });
        }
        let magic = b[MAGIC] as i8;
        let batch_length = i32_at(b, BATCH_LENGTH);
        if magic != 2 {
            return Err(BatchError::Magic(magic));
        }
        if (batch_length as i64) < (HEADER_LEN - LOG_OVERHEAD) as i64 {
            return Err(BatchError::Length(batch_length));
        }
        Ok(BatchHeader {
            base_offset: i64_at(b, BASE_OFFSET),
            batch_length,
            magic,
            crc: u32::from_be_bytes([b[CRC], b[CRC + 1], b[CRC + 2], b[CRC + 3]]),
            attributes: i16_at(b, ATTRIBUTES),
            last_offset_delta: i32_at(b, LAST_OFFSET_DELTA),
            base_timestamp: i64_at(b, BASE_TIMESTAMP),
            max_timestamp: i64_at(b, MAX_TIMESTAMP),
            producer_id: i64_at(b, PRODUCER_ID),
            producer_epoch: i16_at(b, PRODUCER_EPOCH),
            base_sequence: i32_at(b, BASE_SEQUENCE),
            records_count: i32_at(b, RECORDS_COUNT),
        })
    }

    /// Total size on the wire / on disk.
    pub fn total_size(&self) -> usize {
        LOG_OVERHEAD + self.batch_length as usize
    }
    pub fn last_offset(&self) -> i64 {
        self.base_offset + self.last_offset_delta as i64
    }
    pub fn is_transactional(&self) -> bool {
        self.attributes & ATTR_TRANSACTIONAL != 0
    }
    pub fn is_control(&self) -> bool {
        self.attributes & ATTR_CONTROL != 0
    }
    pub fn is_log_append_time(&self) -> bool {
        self.attributes & ATTR_TIMESTAMP_TYPE != 0
    }
    /// Compression codec id (attributes bits 0-2; 0 = none).
    pub fn compression(&self) -> u8 {
        (self.attributes & ATTR_COMPRESSION) as u8
    }
    pub fn has_producer_id(&self) -> bool {
        self.producer_id >= 0
    }
    /// Last sequence of the batch, wrapping at i32::MAX (eos-rules 16).
    pub fn last_sequence(&self) -> i32 {
        increment_sequence(self.base_sequence, self.last_offset_delta)
    }
}

/// `DefaultRecordBatch.incrementSequence`: sequences wrap from i32::MAX to 0.
/// Computed in i64 so that no header field (a negative delta from a hostile or corrupt batch)
/// can overflow it; the validator refuses such batches before they matter.
pub fn increment_sequence(seq: i32, delta: i32) -> i32 {
    let (seq, delta) = (seq as i64, delta as i64);
    let max = i32::MAX as i64;
    let next = if seq > max - delta { delta - (max - seq) - 1 } else { seq + delta };
    next as i32
}

/// Verifies the CRC32C (attributes .. end) of one complete batch held in `b`.
pub fn verify_crc(b: &[u8], header: &BatchHeader) -> Result<(), BatchError> {
    let end = header.total_size();
    if b.len() < end {
        return Err(BatchError::Truncated { need: end, have: b.len() });
    }
    let computed = crc32c::crc32c(&b[ATTRIBUTES..end]);
    if computed != header.crc {
        return Err(BatchError::Crc { stored: header.crc, computed });
    }
    Ok(())
}

/// Validates that `records` holds exactly one complete magic-v2 batch with a good CRC
/// (eos-rules 14) and returns its header.
pub fn validate_single(records: &[u8]) -> Result<BatchHeader, BatchError> {
    if records.is_empty() {
        return Err(BatchError::Empty);
    }
    let h = BatchHeader::parse(records)?;
    validate_parsed(records, &h)?;
    Ok(h)
}

/// `validate_single` for a header already parsed from `records`: the CRC, and nothing after
/// the batch.
pub fn validate_parsed(records: &[u8], h: &BatchHeader) -> Result<(), BatchError> {
    verify_crc(records, h)?;
    if records.len() != h.total_size() {
        return Err(BatchError::Trailing);
    }
    Ok(())
}

/// Overwrites the base offset in place (the only field the broker changes).
pub fn patch_base_offset(b: &mut [u8], base_offset: i64) {
    b[BASE_OFFSET..BASE_OFFSET + 8].copy_from_slice(&base_offset.to_be_bytes());
}

/// Overwrites the partition leader epoch in place (outside the CRC, like the base offset): the
/// leader's epoch, which consumers validate their position with after a leader change.
pub fn patch_partition_leader_epoch(b: &mut [u8], epoch: i32) {
    if b.len() >= PARTITION_LEADER_EPOCH + 4 {
        b[PARTITION_LEADER_EPOCH..PARTITION_LEADER_EPOCH + 4].copy_from_slice(&epoch.to_be_bytes());
    }
}

/// Sets the max timestamp (and with `log_append_time` the timestamp-type bit) and recomputes
/// the CRC, as Kafka's LogValidator does in place (`setMaxTimestamp`). `b` holds one batch.
pub fn patch_max_timestamp(b: &mut [u8], max_timestamp: i64, log_append_time: bool) {
    if b.len() < HEADER_LEN {
        return;
    }
    let (head, rest) = b.split_at_mut(HEADER_LEN);
    patch_max_timestamp_split(head, rest, max_timestamp, log_append_time);
}

/// The same on a batch held as its header (`head`, HEADER_LEN bytes) and the rest.
fn patch_max_timestamp_split(head: &mut [u8], rest: &[u8], max_timestamp: i64, log_append_time: bool) {
    if log_append_time {
        let attrs = i16_at(head, ATTRIBUTES) | ATTR_TIMESTAMP_TYPE;
        head[ATTRIBUTES..ATTRIBUTES + 2].copy_from_slice(&attrs.to_be_bytes());
    }
    head[MAX_TIMESTAMP..MAX_TIMESTAMP + 8].copy_from_slice(&max_timestamp.to_be_bytes());
    let crc = crc32c::crc32c_append(crc32c::crc32c(&head[ATTRIBUTES..]), rest);
    head[CRC..CRC + 4].copy_from_slice(&crc.to_be_bytes());
}

/// A batch on its way into the log, without a copy of its bytes: its header, which the broker
/// patches (base offset, leader epoch, max timestamp with the CRC), apart from the rest as it
/// arrived in the request frame. The log writes both with one vectored write.
#[derive(Debug, Clone)]
pub struct Incoming {
    head: [u8; HEADER_LEN],
    rest: Bytes,
}

impl Incoming {
    pub fn new(data: Bytes) -> Result<Incoming, BatchError> {
        let head = data
            .get(..HEADER_LEN)
            .and_then(|h| <[u8; HEADER_LEN]>::try_from(h).ok())
            .ok_or(BatchError::Truncated { need: HEADER_LEN, have: data.len() })?;
        Ok(Incoming { head, rest: data.slice(HEADER_LEN..) })
    }

    pub fn len(&self) -> usize {
        HEADER_LEN + self.rest.len()
    }

    pub fn is_empty(&self) -> bool {
        false
    }

    pub fn header(&self) -> Result<BatchHeader, BatchError> {
        BatchHeader::parse(&self.head)
    }

    /// The header and the rest, in order.
    pub fn parts(&self) -> [&[u8]; 2] {
        [&self.head, &self.rest]
    }

    pub fn set_base_offset(&mut self, base_offset: i64) {
        patch_base_offset(&mut self.head, base_offset);
    }

    pub fn set_partition_leader_epoch(&mut self, epoch: i32) {
        patch_partition_leader_epoch(&mut self.head, epoch);
    }

    /// As [`patch_max_timestamp`]: the CRC is computed over the header and the rest in place.
    pub fn set_max_timestamp(&mut self, max_timestamp: i64, log_append_time: bool) {
        patch_max_timestamp_split(&mut self.head, &self.rest, max_timestamp, log_append_time);
    }
}

/// Iterates over the complete batches at the start of `buf`; stops at a partial one.
pub fn iter_batches(buf: &Bytes) -> impl Iterator<Item = (BatchHeader, Bytes)> + '_ {
    let mut pos = 0usize;
    std::iter::from_fn(move || {
        let rest = buf.get(pos..)?;
        let h = BatchHeader::parse(rest).ok()?;
        let size = h.total_size();
        if rest.len() < size {
            return None;
        }
        let out = buf.slice(pos..pos + size);
        pos += size;
        Some((h, out))
    })
}

/// Records of the complete data batches at the start of `buf` (control batches left out): what
/// a consumer of these bytes gets.
pub fn count_records(buf: &Bytes) -> u64 {
    iter_batches(buf).filter(|(h, _)| !h.is_control()).map(|(h, _)| u64::try_from(h.records_count).unwrap_or(0)).sum()
}

#[cfg(test)]
pub mod testutil {
    //! Builds real v2 batches (with CRC) for unit tests.
    use bytes::BytesMut;

    use super::*;

    pub struct Spec {
        pub producer_id: i64,
        pub producer_epoch: i16,
        pub base_sequence: i32,
        pub records: i32,
        pub transactional: bool,
        pub control: bool,
        pub timestamp: i64,
    }

    impl Default for Spec {
        fn default() -> Self {
            Spec {
                producer_id: -1,
                producer_epoch: -1,
                base_sequence: -1,
                records: 1,
                transactional: false,
                control: false,
                timestamp: 1_000,
            }
        }
    }

    /// A batch whose records section is opaque filler of `records` bytes (only headers matter here).
    pub fn batch(spec: Spec) -> BytesMut {
        let body_len = spec.records.max(1) as usize;
        let total = HEADER_LEN + body_len;
        let mut b = BytesMut::zeroed(total);
        b[BATCH_LENGTH..BATCH_LENGTH + 4].copy_from_slice(&((total - LOG_OVERHEAD) as i32).to_be_bytes());
        b[MAGIC] = 2;
        let mut attrs: i16 = 0;
        if spec.transactional {
            attrs |= ATTR_TRANSACTIONAL;
        }
        if spec.control {
            attrs |= ATTR_CONTROL;
        }
        b[ATTRIBUTES..ATTRIBUTES + 2].copy_from_slice(&attrs.to_be_bytes());
        b[LAST_OFFSET_DELTA..LAST_OFFSET_DELTA + 4].copy_from_slice(&(spec.records - 1).to_be_bytes());
        b[BASE_TIMESTAMP..BASE_TIMESTAMP + 8].copy_from_slice(&spec.timestamp.to_be_bytes());
        b[MAX_TIMESTAMP..MAX_TIMESTAMP + 8].copy_from_slice(&spec.timestamp.to_be_bytes());
        b[PRODUCER_ID..PRODUCER_ID + 8].copy_from_slice(&spec.producer_id.to_be_bytes());
        b[PRODUCER_EPOCH..PRODUCER_EPOCH + 2].copy_from_slice(&spec.producer_epoch.to_be_bytes());
        b[BASE_SEQUENCE..BASE_SEQUENCE + 4].copy_from_slice(&spec.base_sequence.to_be_bytes());
        b[RECORDS_COUNT..RECORDS_COUNT + 4].copy_from_slice(&spec.records.to_be_bytes());
        let crc = crc32c::crc32c(&b[ATTRIBUTES..]);
        b[CRC..CRC + 4].copy_from_slice(&crc.to_be_bytes());
        b
    }
}

#[cfg(test)]
mod tests {
    use super::testutil::*;
    use super::*;

    #[test]
    fn parses_and_validates_a_batch() {
        let b = batch(Spec { producer_id: 7, producer_epoch: 1, base_sequence: 5, records: 3, ..Spec::default() });
        let h = validate_single(&b).unwrap();
        assert_eq!(h.producer_id, 7);
        assert_eq!(h.last_sequence(), 7);
        assert_eq!(h.last_offset_delta, 2);
    }

    #[test]
    fn records_of_data_batches_are_counted() {
        let mut buf = batch(Spec { records: 3, ..Spec::default() });
        buf.extend_from_slice(&batch(Spec { records: 1, control: true, ..Spec::default() }));
        let partial = batch(Spec { records: 5, ..Spec::default() });
        buf.extend_from_slice(&partial[..partial.len() - 1]);
        assert_eq!(count_records(&buf.freeze()), 3);
    }

    #[test]
    fn rule_14_corrupt_crc_is_rejected() {
        let mut b = batch(Spec::default());
        let last = b.len() - 1;
        b[last] ^= 0xff;
        assert!(matches!(validate_single(&b), Err(BatchError::Crc { .. })));
    }

    #[test]
    fn rule_14_two_batches_in_one_partition_are_rejected() {
        let mut b = batch(Spec::default());
        b.extend_from_slice(&batch(Spec::default()));
        assert_eq!(validate_single(&b), Err(BatchError::Trailing));
    }

    #[test]
    fn rule_14_truncated_and_wrong_magic_are_rejected() {
        let b = batch(Spec::default());
        assert!(validate_single(&b[..30]).is_err());
        let mut m = batch(Spec::default());
        m[MAGIC] = 1;
        assert_eq!(validate_single(&m), Err(BatchError::Magic(1)));
    }

    #[test]
    fn rule_16_sequence_wraps_at_i32_max() {
        assert_eq!(increment_sequence(i32::MAX, 1), 0);
        assert_eq!(increment_sequence(i32::MAX - 1, 3), 1);
        assert_eq!(increment_sequence(10, 4), 14);
        // No overflow panic whatever the header says.
        assert_eq!(increment_sequence(0, -3), -3);
        assert_eq!(increment_sequence(i32::MIN, -1), i32::MAX);
    }

    #[test]
    fn patching_max_timestamp_keeps_crc_valid() {
        let mut b = batch(Spec::default());
        patch_max_timestamp(&mut b, 77, true);
        let h = validate_single(&b).unwrap();
        assert_eq!((h.max_timestamp, h.is_log_append_time()), (77, true));
    }

    #[test]
    fn patching_the_partition_leader_epoch_keeps_crc_valid() {
        let mut b = batch(Spec::default());
        patch_partition_leader_epoch(&mut b, 7);
        validate_single(&b).unwrap();
        assert_eq!(i32::from_be_bytes([b[12], b[13], b[14], b[15]]), 7);
    }

    #[test]
    fn patching_base_offset_keeps_crc_valid() {
        let mut b = batch(Spec::default());
        patch_base_offset(&mut b, 42);
        let h = validate_single(&b).unwrap();
        assert_eq!(h.base_offset, 42);
    }

    #[test]
    fn an_incoming_batch_is_patched_as_the_whole_batch_would_be() {
        let b = batch(Spec { records: 3, ..Spec::default() });
        let mut whole = b.clone();
        patch_base_offset(&mut whole, 42);
        patch_partition_leader_epoch(&mut whole, 7);
        patch_max_timestamp(&mut whole, 99, true);
        let mut incoming = Incoming::new(b.freeze()).unwrap();
        incoming.set_base_offset(42);
        incoming.set_partition_leader_epoch(7);
        incoming.set_max_timestamp(99, true);
        let joined = incoming.parts().concat();
        assert_eq!(joined, &whole[..]);
        assert_eq!(incoming.len(), whole.len());
        let h = validate_single(&joined).unwrap();
        assert_eq!((h.base_offset, h.max_timestamp, h.is_log_append_time()), (42, 99, true));
        assert_eq!(incoming.header().unwrap().base_offset, 42);
        assert!(Incoming::new(Bytes::from_static(&[0; HEADER_LEN - 1])).is_err());
    }
}
