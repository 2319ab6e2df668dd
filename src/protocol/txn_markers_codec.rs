//! WriteTxnMarkers request v1 and v2 (KIP-1228 adds a per-marker TransactionVersion int8).
//! kafka-protocol 0.18 only knows v1, so both are decoded and encoded here by hand; the response
//! is the same for both versions, so kafka-protocol's v1 encodes it (the broker) and decodes it
//! (a coordinator reading a peer's answer, [`decode_response`]).

use bytes::{Buf, Bytes};
use thiserror::Error;

#[derive(Debug, Error, PartialEq, Eq)]
pub enum CodecError {
    #[error("truncated request")]
    Truncated,
    #[error("invalid length {0}")]
    Length(u64),
    #[error("invalid utf-8 in topic name")]
    Utf8,
    #[error("unsupported version {0}")]
    Version(i16),
    #[error("response: {0}")]
    Response(String),
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MarkerTopic {
    pub name: String,
    pub partitions: Vec<i32>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TxnMarker {
    pub producer_id: i64,
    pub producer_epoch: i16,
    pub commit: bool,
    pub topics: Vec<MarkerTopic>,
    pub coordinator_epoch: i32,
    /// v1 requests carry none: legacy validation (eos-rules 43, 46).
    pub transaction_version: i8,
}

struct Reader {
    buf: Bytes,
}

impl Reader {
    fn need(&self, n: usize) -> Result<(), CodecError> {
        if self.buf.remaining() < n {
            Err(CodecError::Truncated)
        } else {
            Ok(())
        }
    }
    fn i8(&mut self) -> Result<i8, CodecError> {
        self.need(1)?;
        Ok(self.buf.get_i8())
    }
    fn i16(&mut self) -> Result<i16, CodecError> {
        self.need(2)?;
        Ok(self.buf.get_i16())
    }
    fn i32(&mut self) -> Result<i32, CodecError> {
        self.need(4)?;
        Ok(self.buf.get_i32())
    }
    fn i64(&mut self) -> Result<i64, CodecError> {
        self.need(8)?;
        Ok(self.buf.get_i64())
    }
    fn uvarint(&mut self) -> Result<u64, CodecError> {
        let mut value = 0u64;
        for shift in (0..35).step_by(7) {
            let b = self.i8()? as u8;
            value |= ((b & 0x7f) as u64) << shift;
            if b & 0x80 == 0 {
                return Ok(value);
            }
        }
        Err(CodecError::Length(value))
    }
    /// Compact array length: N+1, 0 = null (treated as empty).
    fn compact_len(&mut self) -> Result<usize, CodecError> {
        let n = self.uvarint()?;
        let len = n.saturating_sub(1);
        // Every element takes at least one byte: a longer claim is a lie.
        if len > self.buf.remaining() as u64 {
            return Err(CodecError::Length(len));
        }
        Ok(len as usize)
    }
    fn compact_string(&mut self) -> Result<String, CodecError> {
        let len = self.compact_len()?;
        self.need(len)?;
        let bytes = self.buf.split_to(len);
        String::from_utf8(bytes.to_vec()).map_err(|_| CodecError::Utf8)
    }
    fn skip_tagged_fields(&mut self) -> Result<(), CodecError> {
        let count = self.uvarint()?;
        for _ in 0..count {
            self.uvarint()?;
            let size = self.uvarint()? as usize;
            self.need(size)?;
            self.buf.advance(size);
        }
        Ok(())
    }
}

/// Decodes the body (after the request header) of a v1 or v2 request.
pub fn decode_request(body: Bytes, version: i16) -> Result<Vec<TxnMarker>, CodecError> {
    if !(1..=2).contains(&version) {
        return Err(CodecError::Version(version));
    }
    let mut r = Reader { buf: body };
    let n = r.compact_len()?;
    let mut markers = Vec::with_capacity(n);
    for _ in 0..n {
        let producer_id = r.i64()?;
        let producer_epoch = r.i16()?;
        let commit = r.i8()? != 0;
        let topics_n = r.compact_len()?;
        let mut topics = Vec::with_capacity(topics_n);
        for _ in 0..topics_n {
            let name = r.compact_string()?;
            let parts_n = r.compact_len()?;
            let mut partitions = Vec::with_capacity(parts_n);
            for _ in 0..parts_n {
                partitions.push(r.i32()?);
            }
            r.skip_tagged_fields()?;
            topics.push(MarkerTopic { name, partitions });
        }
        let coordinator_epoch = r.i32()?;
        let transaction_version = if version >= 2 { r.i8()? } else { 0 };
        r.skip_tagged_fields()?;
        markers.push(TxnMarker { producer_id, producer_epoch, commit, topics, coordinator_epoch, transaction_version });
    }
    r.skip_tagged_fields()?;
    Ok(markers)
}

/// Encodes a request body (used by a coordinator talking to a peer broker, and by tests).
pub fn encode_request(markers: &[TxnMarker], version: i16) -> Vec<u8> {
    fn uvarint(out: &mut Vec<u8>, mut v: u64) {
        while v >= 0x80 {
            out.push((v as u8 & 0x7f) | 0x80);
            v >>= 7;
        }
        out.push(v as u8);
    }
    let mut out = Vec::new();
    uvarint(&mut out, markers.len() as u64 + 1);
    for m in markers {
        out.extend_from_slice(&m.producer_id.to_be_bytes());
        out.extend_from_slice(&m.producer_epoch.to_be_bytes());
        out.push(m.commit as u8);
        uvarint(&mut out, m.topics.len() as u64 + 1);
        for t in &m.topics {
            uvarint(&mut out, t.name.len() as u64 + 1);
            out.extend_from_slice(t.name.as_bytes());
            uvarint(&mut out, t.partitions.len() as u64 + 1);
            for p in &t.partitions {
                out.extend_from_slice(&p.to_be_bytes());
            }
            out.push(0);
        }
        out.extend_from_slice(&m.coordinator_epoch.to_be_bytes());
        if version >= 2 {
            out.push(m.transaction_version as u8);
        }
        out.push(0);
    }
    out.push(0);
    out
}

/// One partition's answer in a WriteTxnMarkers response.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MarkerPartitionResult {
    pub producer_id: i64,
    pub topic: String,
    pub partition: i32,
    pub error_code: i16,
}

/// Decodes a response body (after the response header) to a v1 or v2 request. eos-rules 43:
/// KIP-1228 left the response unchanged, so kafka-protocol's v1 decoder reads both.
pub fn decode_response(mut body: Bytes, version: i16) -> Result<Vec<MarkerPartitionResult>, CodecError> {
    use kafka_protocol::messages::WriteTxnMarkersResponse;
    use kafka_protocol::protocol::Decodable;
    if !(1..=2).contains(&version) {
        return Err(CodecError::Version(version));
    }
    let response = WriteTxnMarkersResponse::decode(&mut body, 1).map_err(|e| CodecError::Response(e.to_string()))?;
    if body.has_remaining() {
        return Err(CodecError::Response(format!("{} trailing bytes", body.remaining())));
    }
    let mut out = Vec::new();
    for m in response.markers {
        for t in m.topics {
            for p in t.partitions {
                out.push(MarkerPartitionResult {
                    producer_id: m.producer_id.0,
                    topic: t.name.0.to_string(),
                    partition: p.partition_index,
                    error_code: p.error_code,
                });
            }
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample(tv: i8) -> TxnMarker {
        TxnMarker {
            producer_id: 42,
            producer_epoch: 3,
            commit: true,
            topics: vec![MarkerTopic { name: "orders".into(), partitions: vec![0, 2] }],
            coordinator_epoch: 7,
            transaction_version: tv,
        }
    }

    #[test]
    fn rule_43_v2_carries_transaction_version_and_v1_does_not() {
        let v2 = encode_request(&[sample(2)], 2);
        assert_eq!(decode_request(Bytes::from(v2), 2).unwrap(), vec![sample(2)]);
        let v1 = encode_request(&[sample(2)], 1);
        assert_eq!(decode_request(Bytes::from(v1), 1).unwrap(), vec![sample(0)]);
    }

    #[test]
    fn v1_matches_kafka_protocols_encoding() {
        use kafka_protocol::messages::write_txn_markers_request::{WritableTxnMarker, WritableTxnMarkerTopic};
        use kafka_protocol::messages::{ProducerId, TopicName, WriteTxnMarkersRequest};
        use kafka_protocol::protocol::{Encodable, StrBytes};
        let mut t = WritableTxnMarkerTopic::default();
        t.name = TopicName(StrBytes::from_static_str("orders"));
        t.partition_indexes = vec![0, 2];
        let mut m = WritableTxnMarker::default();
        m.producer_id = ProducerId(42);
        m.producer_epoch = 3;
        m.transaction_result = true;
        m.topics = vec![t];
        m.coordinator_epoch = 7;
        let mut req = WriteTxnMarkersRequest::default();
        req.markers = vec![m];
        let mut buf = bytes::BytesMut::new();
        req.encode(&mut buf, 1).unwrap();
        assert_eq!(buf.to_vec(), encode_request(&[sample(0)], 1));
    }

    #[test]
    fn rule_43_requests_round_trip_through_the_decoder() {
        let mut abort = sample(0);
        abort.commit = false;
        abort.producer_id = i64::MAX;
        abort.producer_epoch = i16::MAX;
        abort.coordinator_epoch = -1;
        abort.topics.push(MarkerTopic { name: "é-topic".into(), partitions: (0..200).collect() });
        let markers = vec![sample(2), abort, TxnMarker { topics: Vec::new(), ..sample(1) }];
        let v2 = encode_request(&markers, 2);
        assert_eq!(decode_request(Bytes::from(v2), 2).unwrap(), markers);
        // v1 has no TransactionVersion: it decodes as 0 (legacy validation, eos-rules 46)
        let as_v1: Vec<TxnMarker> = markers.iter().map(|m| TxnMarker { transaction_version: 0, ..m.clone() }).collect();
        assert_eq!(decode_request(Bytes::from(encode_request(&markers, 1)), 1).unwrap(), as_v1);
    }

    fn response_body() -> Bytes {
        use kafka_protocol::messages::write_txn_markers_response::{
            WritableTxnMarkerPartitionResult, WritableTxnMarkerResult, WritableTxnMarkerTopicResult,
        };
        use kafka_protocol::messages::{ProducerId, TopicName, WriteTxnMarkersResponse};
        use kafka_protocol::protocol::{Encodable, StrBytes};
        let mut r = WriteTxnMarkersResponse::default();
        let mut m = WritableTxnMarkerResult::default();
        m.producer_id = ProducerId(42);
        let mut t = WritableTxnMarkerTopicResult::default();
        t.name = TopicName(StrBytes::from_static_str("orders"));
        for (p, code) in [(0, 0), (2, 47)] {
            let mut pr = WritableTxnMarkerPartitionResult::default();
            pr.partition_index = p;
            pr.error_code = code;
            t.partitions.push(pr);
        }
        m.topics.push(t);
        r.markers.push(m);
        let mut buf = bytes::BytesMut::new();
        r.encode(&mut buf, 1).unwrap();
        buf.freeze()
    }

    #[test]
    fn rule_43_v1_and_v2_responses_decode_alike() {
        let expected = vec![
            MarkerPartitionResult { producer_id: 42, topic: "orders".into(), partition: 0, error_code: 0 },
            MarkerPartitionResult { producer_id: 42, topic: "orders".into(), partition: 2, error_code: 47 },
        ];
        assert_eq!(decode_response(response_body(), 1).unwrap(), expected);
        assert_eq!(decode_response(response_body(), 2).unwrap(), expected);
        assert_eq!(decode_response(response_body(), 3), Err(CodecError::Version(3)));
    }

    #[test]
    fn malformed_responses_are_errors() {
        let body = response_body();
        assert!(decode_response(body.slice(..body.len() - 3), 2).is_err());
        let mut trailing = body.to_vec();
        trailing.push(0);
        assert!(matches!(decode_response(Bytes::from(trailing), 2), Err(CodecError::Response(_))));
        assert!(decode_response(Bytes::new(), 1).is_err());
    }

    #[test]
    fn hostile_lengths_are_refused_without_allocating() {
        // a marker array claiming 2^28 entries in a 5-byte body
        assert!(decode_request(Bytes::from_static(&[0xff, 0xff, 0xff, 0x7f, 0x00]), 2).is_err());
        assert_eq!(decode_request(Bytes::from_static(&[0x02, 0x00]), 2), Err(CodecError::Truncated));
        assert!(decode_request(Bytes::new(), 1).is_err());
    }
}
