//! Kafka's LogValidator for magic-v2 batches from clients: batch shape, then every record
//! (walked by streaming, see `records`), then timestamps. Pure: the caller passes the clock.

use thiserror::Error;

use super::batch::BatchHeader;
use super::records::{record_timestamp, RecordWalk, RecordsError};
use crate::error_code::ResponseError;
/// Kafka's `RecordBatch.NO_TIMESTAMP`.
pub const NO_TIMESTAMP: i64 = -1;
/// Record errors kept per batch (the count is always exact); bounds the answer's size.
pub const MAX_RECORD_ERRORS: usize = 1000;

/// Kafka's `message.timestamp.type` and `message.timestamp.{before,after}.max.ms`, and whether
/// the topic is compacted (`cleanup.policy` holds `compact`: every record needs a key).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TimestampPolicy {
    pub log_append_time: bool,
    pub before_max_ms: i64,
    pub after_max_ms: i64,
    pub compacted: bool,
}

impl Default for TimestampPolicy {
    /// Kafka 4.x defaults: CreateTime, any time in the past, at most one hour ahead.
    fn default() -> Self {
        TimestampPolicy { log_append_time: false, before_max_ms: i64::MAX, after_max_ms: 3_600_000, compacted: false }
    }
}

/// A record-level error as Kafka puts it in ProduceResponse's record_errors.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RecordError {
    pub batch_index: i32,
    pub message: String,
}

#[derive(Debug, Error, Clone, PartialEq, Eq)]
pub enum ValidationError {
    #[error("the baseOffset of a client record batch should be 0, but it is {0}")]
    BaseOffset(i64),
    #[error("batch has an invalid offset range: lastOffsetDelta {0}")]
    OffsetRange(i32),
    #[error("invalid reported count for record batch: {0}")]
    Count(i32),
    #[error("inconsistent batch offset range (lastOffsetDelta {last_offset_delta}) and count of records {count}")]
    CountMismatch { last_offset_delta: i32, count: i32 },
    #[error("clients are not allowed to write control records")]
    Control,
    #[error("invalid sequence number {sequence} in record batch with producerId {producer_id}")]
    Sequence { producer_id: i64, sequence: i32 },
    #[error("a transactional record batch must have a producer id")]
    TransactionalWithoutProducerId,
    #[error(transparent)]
    Records(#[from] RecordsError),
    /// Kafka's RecordValidationException: per-record errors, answered in record_errors.
    #[error("{message}")]
    RecordErrors { code: i16, message: String, errors: Vec<RecordError> },
}

impl ValidationError {
    /// The Produce error code Apache Kafka answers.
    pub fn code(&self) -> i16 {
        match self {
            ValidationError::Records(RecordsError::UnknownCodec(_) | RecordsError::Decompress(_)) => {
                ResponseError::UnknownServerError.code()
            }
            ValidationError::RecordErrors { code, .. } => *code,
            _ => ResponseError::InvalidRecord.code(),
        }
    }

    /// Kafka fills error_message and record_errors only for record-level errors.
    pub fn record_errors(&self) -> Option<(&str, &[RecordError])> {
        match self {
            ValidationError::RecordErrors { message, errors, .. } => Some((message, errors)),
            _ => None,
        }
    }
}

/// What the broker must change in the batch before appending it (Kafka's `setMaxTimestamp`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Validated {
    /// The batch's max timestamp as it must be stored.
    pub max_timestamp: i64,
    /// Set when the topic uses LogAppendTime: the append time answered in the ProduceResponse.
    pub log_append_time: Option<i64>,
}

impl Validated {
    pub fn needs_patch(&self, h: &BatchHeader) -> bool {
        self.max_timestamp != h.max_timestamp || self.log_append_time.is_some()
    }
}

/// eos-rules 14, the one home of a client batch's shape: Kafka's LogValidator.validateBatch
/// (client origin) and UnifiedLog's base-offset check. The handler checks it before the records
/// (`validate_client_batch`); the partition again before it appends (`Partition::check_batch`).
pub fn validate_batch_shape(h: &BatchHeader) -> Result<(), ValidationError> {
    if h.base_offset != 0 {
        return Err(ValidationError::BaseOffset(h.base_offset));
    }
    // countFromOffsets = lastOffset - baseOffset + 1 must be positive.
    if h.last_offset_delta < 0 {
        return Err(ValidationError::OffsetRange(h.last_offset_delta));
    }
    if h.records_count <= 0 {
        return Err(ValidationError::Count(h.records_count));
    }
    if i64::from(h.last_offset_delta) + 1 != i64::from(h.records_count) {
        return Err(ValidationError::CountMismatch { last_offset_delta: h.last_offset_delta, count: h.records_count });
    }
    if h.is_control() {
        return Err(ValidationError::Control);
    }
    if h.has_producer_id() && h.base_sequence < 0 {
        return Err(ValidationError::Sequence { producer_id: h.producer_id, sequence: h.base_sequence });
    }
    if h.is_transactional() && !h.has_producer_id() {
        return Err(ValidationError::TransactionalWithoutProducerId);
    }
    Ok(())
}

/// Kafka's validateTimestamp for one record: None when it is acceptable.
pub fn check_timestamp(h: &BatchHeader, timestamp: i64, now: i64, policy: &TimestampPolicy) -> Option<String> {
    if !policy.log_append_time && timestamp != NO_TIMESTAMP {
        let diff = i128::from(timestamp) - i128::from(now);
        let out = (diff < 0 && -diff > i128::from(policy.before_max_ms))
            || (diff > 0 && diff > i128::from(policy.after_max_ms));
        if out {
            return Some(format!(
                "Timestamp {timestamp} of message is out of range. The timestamp should be within [{}, {}]",
                now.saturating_sub(policy.before_max_ms),
                now.saturating_add(policy.after_max_ms)
            ));
        }
    }
    if h.is_log_append_time() {
        return Some("Invalid timestamp type: producers should not set the timestamp type to LogAppendTime".into());
    }
    None
}

/// Validates one client batch (already CRC-checked) record by record for `partition`
/// ("topic-index", named in Kafka's messages). Returns how to stamp it.
pub fn validate_client_batch(
    batch: &[u8],
    h: &BatchHeader,
    policy: &TimestampPolicy,
    now: i64,
    partition: &str,
) -> Result<Validated, ValidationError> {
    validate_batch_shape(h)?;
    let mut walk = RecordWalk::new(batch, h)?;
    let mut errors = Vec::new();
    let mut error_count = 0usize;
    let mut timestamp_error = false;
    let mut max_timestamp = NO_TIMESTAMP;
    let mut index: i32 = 0;
    while let Some(r) = walk.next_record()? {
        let ts = record_timestamp(h, &r);
        // kaas stores batches as sent, so inner offsets must already be 0..n-1 (Kafka would
        // rewrite a compressed batch whose inner offsets are off; kaas refuses it instead).
        let error = if r.offset_delta != index {
            Some(format!("Record at index {index} has offset delta {}, expected {index}", r.offset_delta))
        } else if policy.compacted && !r.has_key {
            // Kafka's LogValidator.validateKey: compaction keeps the last record of each key.
            Some(format!("Compacted topic cannot accept message without key in topic partition {partition}."))
        } else {
            let t = check_timestamp(h, ts, now, policy);
            timestamp_error |= t.is_some();
            t
        };
        if let Some(message) = error {
            error_count += 1;
            if errors.len() < MAX_RECORD_ERRORS {
                errors.push(RecordError { batch_index: index, message });
            }
        } else {
            max_timestamp = max_timestamp.max(ts);
        }
        index = index.saturating_add(1);
    }
    walk.finish()?;
    if !errors.is_empty() {
        // Kafka: any timestamp error makes the whole answer INVALID_TIMESTAMP.
        let (code, message) = if timestamp_error {
            (
                ResponseError::InvalidTimestamp.code(),
                "One or more records were rejected due to an invalid timestamp".to_string(),
            )
        } else {
            (
                ResponseError::InvalidRecord.code(),
                format!("One or more records were rejected ({error_count} record errors)"),
            )
        };
        return Err(ValidationError::RecordErrors { code, message, errors });
    }
    if policy.log_append_time {
        return Ok(Validated { max_timestamp: now, log_append_time: Some(now) });
    }
    Ok(Validated { max_timestamp, log_append_time: None })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::records::testutil::*;
    use crate::store::records::*;

    const NOW: i64 = 1_700_000_000_000;

    fn validate(b: &[u8]) -> Result<Validated, ValidationError> {
        validate_with(b, &TimestampPolicy::default())
    }

    fn validate_with(b: &[u8], p: &TimestampPolicy) -> Result<Validated, ValidationError> {
        let h = BatchHeader::parse(b).unwrap();
        validate_client_batch(b, &h, p, NOW, "t-0")
    }

    fn one_record(last_offset_delta: i32) -> Vec<u8> {
        raw_batch(1, last_offset_delta, 0, NOW, &record(0, 0, None, b"v"))
    }

    #[test]
    fn a_good_batch_of_every_codec_is_accepted() {
        for codec in [CODEC_NONE, CODEC_GZIP, CODEC_SNAPPY, CODEC_LZ4, CODEC_ZSTD] {
            let v = validate(&good_batch(3, codec, NOW)).unwrap();
            assert_eq!(v, Validated { max_timestamp: NOW + 2, log_append_time: None }, "codec {codec}");
        }
    }

    #[test]
    fn batches_encoded_by_kafka_protocol_are_accepted_for_every_codec() {
        use kafka_protocol::records::{Compression, Record, RecordBatchEncoder, RecordEncodeOptions, TimestampType};
        for compression in
            [Compression::None, Compression::Gzip, Compression::Snappy, Compression::Lz4, Compression::Zstd]
        {
            let records: Vec<Record> = (0..20)
                .map(|i| Record {
                    transactional: false,
                    control: false,
                    delete_horizon: false,
                    partition_leader_epoch: -1,
                    // (the encoder only puts records with consecutive sequences in one batch)
                    producer_id: 1,
                    producer_epoch: 0,
                    timestamp_type: TimestampType::Creation,
                    offset: i,
                    sequence: i as i32,
                    timestamp: NOW + i,
                    key: Some(bytes::Bytes::from(format!("k{i}"))),
                    value: Some(bytes::Bytes::from(vec![b'x'; 1000])),
                    headers: Default::default(),
                })
                .collect();
            let mut buf = bytes::BytesMut::new();
            RecordBatchEncoder::encode(&mut buf, &records, &RecordEncodeOptions { version: 2, compression }).unwrap();
            let h = BatchHeader::parse(&buf).unwrap();
            assert_eq!((h.records_count, h.total_size()), (20, buf.len()), "{compression:?}: one batch");
            let v = validate(&buf).unwrap();
            assert_eq!(v.max_timestamp, NOW + 19, "{compression:?}");
        }
    }

    #[test]
    fn a_compacted_topic_refuses_records_without_a_key() {
        let p = TimestampPolicy { compacted: true, ..TimestampPolicy::default() };
        let mut raw = record(0, 0, Some(b"k"), b"a");
        raw.extend(record(1, 0, None, b"b"));
        let e = validate_with(&raw_batch(2, 1, 0, NOW, &raw), &p).unwrap_err();
        let (_, errors) = e.record_errors().unwrap();
        assert_eq!((e.code(), errors.len(), errors[0].batch_index), (ResponseError::InvalidRecord.code(), 1, 1));
        assert_eq!(errors[0].message, "Compacted topic cannot accept message without key in topic partition t-0.");
        assert!(validate_with(&raw_batch(1, 0, 0, NOW, &record(0, 0, Some(b"k"), b"a")), &p).is_ok());
        assert!(validate(&raw_batch(1, 0, 0, NOW, &record(0, 0, None, b"a"))).is_ok(), "not compacted: no key needed");
    }

    #[test]
    fn base_offset_must_be_zero() {
        let mut b = one_record(0);
        b[7] = 5;
        assert_eq!(validate(&b).unwrap_err(), ValidationError::BaseOffset(5));
    }

    #[test]
    fn negative_last_offset_delta_is_an_invalid_offset_range() {
        let e = validate(&one_record(-3)).unwrap_err();
        assert_eq!((e.clone(), e.code()), (ValidationError::OffsetRange(-3), ResponseError::InvalidRecord.code()));
    }

    #[test]
    fn record_count_must_be_positive() {
        let b = raw_batch(0, 0, 0, NOW, &[]);
        assert_eq!(validate(&b).unwrap_err(), ValidationError::Count(0));
    }

    #[test]
    fn record_count_must_match_last_offset_delta() {
        let e = validate(&one_record(1000)).unwrap_err();
        assert_eq!(e, ValidationError::CountMismatch { last_offset_delta: 1000, count: 1 });
        assert_eq!(e.code(), ResponseError::InvalidRecord.code());
    }

    #[test]
    fn control_batches_from_clients_are_refused() {
        let b = raw_batch(1, 0, 0x20, NOW, &record(0, 0, None, b"v"));
        assert_eq!(validate(&b).unwrap_err(), ValidationError::Control);
    }

    #[test]
    fn rule_14_client_batch_shape() {
        let h = |b: &[u8]| BatchHeader::parse(b).unwrap();
        let ok = one_record(0);
        assert_eq!(validate_batch_shape(&h(&ok)), Ok(()));
        let mut nonzero = ok.clone();
        nonzero[0..8].copy_from_slice(&5i64.to_be_bytes());
        assert_eq!(validate_batch_shape(&h(&nonzero)), Err(ValidationError::BaseOffset(5)));
        let control = raw_batch(1, 0, 0x20, NOW, &record(0, 0, None, b"v"));
        assert_eq!(validate_batch_shape(&h(&control)), Err(ValidationError::Control));
        let mut no_sequence = ok.clone();
        no_sequence[43..51].copy_from_slice(&7i64.to_be_bytes());
        no_sequence[53..57].copy_from_slice(&(-1i32).to_be_bytes());
        assert_eq!(
            validate_batch_shape(&h(&no_sequence)),
            Err(ValidationError::Sequence { producer_id: 7, sequence: -1 })
        );
        let transactional = raw_batch(1, 0, 0x10, NOW, &record(0, 0, None, b"v"));
        assert_eq!(validate_batch_shape(&h(&transactional)), Err(ValidationError::TransactionalWithoutProducerId));
        for e in
            [ValidationError::BaseOffset(5), ValidationError::Control, ValidationError::TransactionalWithoutProducerId]
        {
            assert_eq!(e.code(), ResponseError::InvalidRecord.code());
        }
    }

    #[test]
    fn producer_id_with_negative_base_sequence_is_refused() {
        let mut b = one_record(0);
        b[43..51].copy_from_slice(&7i64.to_be_bytes());
        b[53..57].copy_from_slice(&(-1i32).to_be_bytes());
        let h = BatchHeader::parse(&b).unwrap();
        assert_eq!(validate_batch_shape(&h), Err(ValidationError::Sequence { producer_id: 7, sequence: -1 }));
    }

    #[test]
    fn unknown_compression_codec_is_an_unknown_server_error() {
        let b = raw_batch(1, 0, 6, NOW, &record(0, 0, None, b"v"));
        assert_eq!(validate(&b).unwrap_err().code(), ResponseError::UnknownServerError.code());
    }

    #[test]
    fn offset_deltas_must_be_in_order_from_zero() {
        let mut raw = record(0, 0, None, b"a");
        raw.extend(record(2, 0, None, b"b"));
        let e = validate(&raw_batch(2, 1, 0, NOW, &raw)).unwrap_err();
        let (_, errors) = e.record_errors().unwrap();
        assert_eq!((e.code(), errors[0].batch_index), (ResponseError::InvalidRecord.code(), 1));
    }

    #[test]
    fn missing_records_are_invalid() {
        let b = raw_batch(3, 2, CODEC_LZ4 as i16, NOW, &compress(CODEC_LZ4, &record(0, 0, None, b"v")));
        assert_eq!(validate(&b).unwrap_err().code(), ResponseError::InvalidRecord.code());
    }

    #[test]
    fn trailing_bytes_are_invalid() {
        let mut raw = record(0, 0, None, b"a");
        raw.push(0);
        assert_eq!(validate(&raw_batch(1, 0, 0, NOW, &raw)).unwrap_err().code(), ResponseError::InvalidRecord.code());
    }

    #[test]
    fn timestamp_after_max_ms_is_invalid_timestamp() {
        // Default after.max.ms: one hour.
        let b = raw_batch(1, 0, 0, NOW + 3_600_001, &record(0, 0, None, b"v"));
        let e = validate(&b).unwrap_err();
        assert_eq!(e.code(), ResponseError::InvalidTimestamp.code());
        assert_eq!(e.record_errors().unwrap().1.len(), 1);
        let ok = raw_batch(1, 0, 0, NOW + 3_600_000, &record(0, 0, None, b"v"));
        assert!(validate(&ok).is_ok());
    }

    #[test]
    fn timestamp_before_max_ms_is_invalid_timestamp() {
        let old = raw_batch(1, 0, 0, 0, &record(0, 0, None, b"v"));
        assert!(validate(&old).is_ok(), "default before.max.ms accepts any past time");
        let p = TimestampPolicy { before_max_ms: 1000, ..TimestampPolicy::default() };
        assert_eq!(validate_with(&old, &p).unwrap_err().code(), ResponseError::InvalidTimestamp.code());
    }

    #[test]
    fn no_timestamp_is_accepted() {
        let b = raw_batch(1, 0, 0, NO_TIMESTAMP, &record(0, 0, None, b"v"));
        assert_eq!(validate(&b).unwrap().max_timestamp, NO_TIMESTAMP);
    }

    #[test]
    fn log_append_time_batches_from_clients_are_invalid_timestamp() {
        let b = raw_batch(1, 0, 0x08, NOW, &record(0, 0, None, b"v"));
        assert_eq!(validate(&b).unwrap_err().code(), ResponseError::InvalidTimestamp.code());
    }

    #[test]
    fn log_append_time_topic_stamps_the_broker_time() {
        let p = TimestampPolicy { log_append_time: true, ..TimestampPolicy::default() };
        let b = raw_batch(1, 0, 0, 5, &record(0, 0, None, b"v"));
        assert_eq!(validate_with(&b, &p).unwrap(), Validated { max_timestamp: NOW, log_append_time: Some(NOW) });
    }

    #[test]
    fn max_timestamp_is_recomputed_from_the_records() {
        let mut b = raw_batch(1, 0, 0, NOW, &record(0, 7, None, b"v"));
        b[35..43].copy_from_slice(&(NOW + 999).to_be_bytes());
        let h = BatchHeader::parse(&b).unwrap();
        let v = validate_client_batch(&b, &h, &TimestampPolicy::default(), NOW, "t-0").unwrap();
        assert_eq!(v.max_timestamp, NOW + 7);
        assert!(v.needs_patch(&h));
    }

    #[test]
    fn record_errors_kept_are_bounded() {
        let mut raw = Vec::new();
        let n = MAX_RECORD_ERRORS as i32 + 10;
        for _ in 0..n {
            raw.extend(record(0, 0, None, b""));
        }
        let e = validate(&raw_batch(n, n - 1, 0, NOW, &raw)).unwrap_err();
        assert_eq!(e.record_errors().unwrap().1.len(), MAX_RECORD_ERRORS);
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(512))]

        /// Whatever follows a well-formed header (any codec id, count, delta), validation
        /// answers Ok or an error and never panics.
        #[test]
        fn arbitrary_records_never_panic(
            payload in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..512),
            codec in 0i16..8,
            count in -2i32..40,
            delta in -2i32..40,
        ) {
            let b = raw_batch(count, delta, codec, NOW, &payload);
            let _ = validate(&b);
        }

        /// Valid records, then one byte flipped: still no panic, whatever the codec.
        #[test]
        fn corrupted_compressed_records_never_panic(
            codec in 0u8..5,
            n in 1i32..20,
            at in proptest::prelude::any::<usize>(),
            flip in 1u8..=255,
        ) {
            let mut b = good_batch(n, codec, NOW);
            let body = b.len() - 61;
            b[61 + at % body] ^= flip;
            let _ = validate(&b);
        }
    }
}
