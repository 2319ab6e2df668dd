//! Transaction marker control batches (eos-rules 45): one control record whose key is
//! (version 0, type 0 = ABORT / 1 = COMMIT) and whose value is (version 0, coordinator epoch).

use bytes::{BufMut, Bytes, BytesMut};
use indexmap::IndexMap;
use kafka_protocol::records::{
    Compression, Record, RecordBatchDecoder, RecordBatchEncoder, RecordEncodeOptions, TimestampType,
};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Marker {
    pub commit: bool,
    pub coordinator_epoch: i32,
}

/// A marker batch is one small record; anything larger is not a marker.
const MAX_MARKER_BATCH: usize = 1024;

/// Builds the control batch a partition leader appends for a marker.
pub fn marker_batch(producer_id: i64, producer_epoch: i16, marker: Marker, now_ms: i64) -> BytesMut {
    let mut key = BytesMut::with_capacity(4);
    key.put_i16(0);
    key.put_i16(if marker.commit { 1 } else { 0 });
    let mut value = BytesMut::with_capacity(6);
    value.put_i16(0);
    value.put_i32(marker.coordinator_epoch);
    let record = Record {
        transactional: true,
        control: true,
        delete_horizon: false,
        partition_leader_epoch: 0,
        producer_id,
        producer_epoch,
        timestamp_type: TimestampType::Creation,
        offset: 0,
        sequence: -1,
        timestamp: now_ms,
        key: Some(key.freeze()),
        value: Some(value.freeze()),
        headers: IndexMap::new(),
    };
    let mut buf = BytesMut::with_capacity(80);
    // Encoding a fixed, well-formed record into memory cannot fail; an empty batch would be
    // refused by the log's header parse, never silently written.
    if let Err(e) = RecordBatchEncoder::encode(
        &mut buf,
        [&record],
        &RecordEncodeOptions { version: 2, compression: Compression::None },
    ) {
        tracing::error!("encoding a marker batch failed: {e}");
        buf.clear();
    }
    buf
}

/// Reads the marker of a stored control batch (None for other control records).
pub fn parse_marker(batch: &Bytes) -> Option<Marker> {
    // Markers are written uncompressed by the broker (clients may not write control batches):
    // anything else is not decoded, so the decoder never inflates untrusted data here.
    let h = crate::store::batch::BatchHeader::parse(batch).ok()?;
    if h.compression() != 0 || h.total_size() > MAX_MARKER_BATCH {
        return None;
    }
    let mut b = batch.clone();
    let set = RecordBatchDecoder::decode(&mut b).ok()?;
    let r = set.records.first()?;
    let key = r.key.as_ref()?;
    if key.len() < 4 {
        return None;
    }
    let kind = i16::from_be_bytes([key[2], key[3]]);
    let value = r.value.as_ref()?;
    let coordinator_epoch =
        if value.len() >= 6 { i32::from_be_bytes([value[2], value[3], value[4], value[5]]) } else { 0 };
    match kind {
        0 => Some(Marker { commit: false, coordinator_epoch }),
        1 => Some(Marker { commit: true, coordinator_epoch }),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::batch::validate_single;

    /// Found by fuzz/ (target batch): the record decoder reserved capacity for the batch's
    /// claimed record count, so one stored batch claiming 2^31-1 records made the allocator
    /// abort the broker when it was decoded (here, and by ListOffsets by timestamp).
    #[test]
    fn decoding_a_batch_claiming_2_31_records_does_not_allocate_for_them() {
        let mut b = marker_batch(42, 7, Marker { commit: true, coordinator_epoch: 3 }, 1_000);
        b[57..61].copy_from_slice(&i32::MAX.to_be_bytes());
        let crc = crc32c::crc32c(&b[21..]);
        b[17..21].copy_from_slice(&crc.to_be_bytes());
        assert_eq!(validate_single(&b).unwrap().records_count, i32::MAX);
        // The one record decodes, then the decoder runs out of bytes: an error, not an abort.
        assert_eq!(parse_marker(&b.freeze()), None);
    }

    /// The vendored snappy decoder refuses a block claiming more than 32 times its size (it
    /// allocated the claim: 5 bytes asking for 4 GiB, fuzz/corpus/batch/repro-snappy-4gib-claim);
    /// real snappy data, however repetitive, still decodes.
    #[test]
    fn snappy_batches_decode_under_the_claimed_length_cap() {
        let records: Vec<Record> = (0..200)
            .map(|i| Record {
                transactional: false,
                control: false,
                delete_horizon: false,
                partition_leader_epoch: 0,
                producer_id: -1,
                producer_epoch: -1,
                timestamp_type: TimestampType::Creation,
                offset: i,
                // offset - sequence constant: one batch (the encoder splits otherwise).
                sequence: i as i32,
                timestamp: 1_000,
                key: None,
                value: Some(Bytes::from(vec![b'x'; 4096])),
                headers: IndexMap::new(),
            })
            .collect();
        let mut buf = BytesMut::new();
        RecordBatchEncoder::encode(
            &mut buf,
            &records,
            &RecordEncodeOptions { version: 2, compression: Compression::Snappy },
        )
        .unwrap();
        // Highly compressible data: more than tenfold, under the cap of 32:1 (snappy tops out near 21:1).
        assert!(buf.len() * 10 < 200 * 4096, "{} bytes: not compressed tenfold", buf.len());
        let set = RecordBatchDecoder::decode(&mut buf.freeze()).unwrap();
        assert_eq!(set.records.len(), 200);
    }

    #[test]
    fn rule_45_marker_batch_format() {
        let b = marker_batch(42, 7, Marker { commit: true, coordinator_epoch: 3 }, 1_000);
        let h = validate_single(&b).unwrap();
        assert!(h.is_control() && h.is_transactional());
        assert_eq!((h.producer_id, h.producer_epoch, h.base_sequence, h.records_count), (42, 7, -1, 1));
        assert_eq!(parse_marker(&b.freeze()), Some(Marker { commit: true, coordinator_epoch: 3 }));
        let a = marker_batch(1, 0, Marker { commit: false, coordinator_epoch: 0 }, 1_000).freeze();
        assert_eq!(parse_marker(&a).map(|m| m.commit), Some(false));
    }

    #[test]
    fn compressed_or_oversized_control_batches_are_not_decoded() {
        let mut b = marker_batch(42, 7, Marker { commit: true, coordinator_epoch: 3 }, 1_000);
        b[22] |= 1; // gzip bit: attributes are covered by the CRC, recompute it
        let crc = crc32c::crc32c(&b[21..]);
        b[17..21].copy_from_slice(&crc.to_be_bytes());
        assert_eq!(parse_marker(&b.freeze()), None);
    }
}
