//! The records of one stored batch as the cleaner needs them, and the batch rebuilt from the
//! records it keeps. As Kafka's MemoryRecords.filterTo, a rebuilt batch keeps the original's
//! base offset, last offset delta (so the offsets after it do not move and a segment still ends
//! where it ended), producer id, epoch, base sequence, transactional and control flags,
//! timestamp type, max timestamp and compression codec; only the records and, when the cleaner
//! sets one (KIP-534), the delete horizon change.

use std::io::Read;

use bytes::Bytes;

use super::CleanerError;
use crate::store::batch::{BatchHeader, HEADER_LEN};
use crate::store::recompress::{compress_into, Compression};
use crate::store::records::{
    CODEC_GZIP, CODEC_LZ4, CODEC_NONE, CODEC_SNAPPY, CODEC_ZSTD, XERIAL_MAGIC, ZSTD_WINDOW_LOG_MAX,
};

/// Attributes bit 6: the base timestamp holds the batch's delete horizon (KIP-534).
pub const ATTR_DELETE_HORIZON: i16 = 0x40;

/// One record, its key and value as slices of the decompressed payload.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Record {
    pub offset_delta: i32,
    /// The record's own timestamp (base timestamp + delta; the batch's under LogAppendTime).
    pub timestamp: i64,
    pub key: Option<Bytes>,
    pub value: Option<Bytes>,
    /// The headers as stored: their count, then each header.
    pub headers: Bytes,
}

impl Record {
    /// A tombstone: a key with a null value.
    pub fn is_tombstone(&self) -> bool {
        self.value.is_none()
    }
}

/// The delete horizon a batch carries, if the cleaner set one (KIP-534).
pub fn delete_horizon(h: &BatchHeader) -> Option<i64> {
    (h.attributes & ATTR_DELETE_HORIZON != 0).then_some(h.base_timestamp)
}

/// The records of `batch` (a whole stored batch), decompressed into memory of at most
/// `max_bytes`: a batch whose records are larger is refused (the cleaner keeps it as it is).
pub fn decode(batch: &[u8], h: &BatchHeader, max_bytes: usize) -> Result<Vec<Record>, CleanerError> {
    let payload = batch.get(HEADER_LEN..h.total_size().min(batch.len())).unwrap_or_default();
    let raw = decompress(h.compression(), payload, max_bytes)?;
    let raw = Bytes::from(raw);
    let base_ts = h.base_timestamp;
    let mut out = Vec::with_capacity(usize::try_from(h.records_count).unwrap_or(0).min(1 << 16));
    let mut at = 0usize;
    for _ in 0..h.records_count.max(0) {
        let mut c = Cursor { b: &raw, at };
        let len = c.varint()?;
        let len = usize::try_from(len).map_err(|_| corrupt("negative record length"))?;
        let end = c.at.checked_add(len).filter(|e| *e <= raw.len()).ok_or_else(|| corrupt("record past batch"))?;
        let mut r = Cursor { b: &raw[..end], at: c.at };
        r.byte()?;
        let ts_delta = r.varlong()?;
        let offset_delta = r.varint()?;
        let key = r.bytes(&raw)?;
        let value = r.bytes(&raw)?;
        let headers = raw.slice(r.at..end);
        let timestamp = if h.is_log_append_time() { h.max_timestamp } else { base_ts.wrapping_add(ts_delta) };
        out.push(Record { offset_delta, timestamp, key, value, headers });
        at = end;
    }
    Ok(out)
}

/// The batch `h` rebuilt with `records` (a subset of its own, in order), and the delete horizon
/// `horizon` when one is set. With no record left it is an empty batch: Kafka keeps such a batch
/// for the producer state of the last batch of a producer, and the log keeps one at a segment's
/// end so that the segment still ends where it ended.
pub fn encode(h: &BatchHeader, records: &[Record], horizon: Option<i64>) -> Result<Vec<u8>, CleanerError> {
    let base_ts = horizon.unwrap_or_else(|| {
        // Kafka's builder: the first record's timestamp; an empty batch keeps the original's.
        records.first().filter(|_| !h.is_log_append_time()).map_or(h.base_timestamp, |r| r.timestamp)
    });
    let mut raw = Vec::new();
    for r in records {
        let mut body =
            Vec::with_capacity(16 + r.key.as_ref().map_or(0, |k| k.len()) + r.value.as_ref().map_or(0, |v| v.len()));
        body.push(0u8);
        let ts_delta = if h.is_log_append_time() { 0 } else { r.timestamp.wrapping_sub(base_ts) };
        put_varlong(&mut body, ts_delta);
        put_varlong(&mut body, i64::from(r.offset_delta));
        put_bytes(&mut body, r.key.as_deref());
        put_bytes(&mut body, r.value.as_deref());
        body.extend_from_slice(&r.headers);
        put_varlong(&mut raw, body.len() as i64);
        raw.extend_from_slice(&body);
    }
    let payload = if records.is_empty() { Vec::new() } else { compress(h.compression(), &raw)? };
    let mut attributes = h.attributes & !ATTR_DELETE_HORIZON;
    if horizon.is_some() {
        attributes |= ATTR_DELETE_HORIZON;
    }
    let mut out = Vec::with_capacity(HEADER_LEN + payload.len());
    out.extend_from_slice(&h.base_offset.to_be_bytes());
    let len = i32::try_from(HEADER_LEN - 12 + payload.len()).map_err(|_| corrupt("batch too large"))?;
    out.extend_from_slice(&len.to_be_bytes());
    out.extend_from_slice(&0i32.to_be_bytes()); // partition leader epoch, below
    out.push(2);
    out.extend_from_slice(&0u32.to_be_bytes()); // crc, below
    out.extend_from_slice(&attributes.to_be_bytes());
    out.extend_from_slice(&h.last_offset_delta.to_be_bytes());
    out.extend_from_slice(&base_ts.to_be_bytes());
    out.extend_from_slice(&h.max_timestamp.to_be_bytes());
    out.extend_from_slice(&h.producer_id.to_be_bytes());
    out.extend_from_slice(&h.producer_epoch.to_be_bytes());
    out.extend_from_slice(&h.base_sequence.to_be_bytes());
    out.extend_from_slice(&(records.len() as i32).to_be_bytes());
    out.extend_from_slice(&payload);
    Ok(out)
}

/// Sets the partition leader epoch and the CRC of a batch `encode` built.
pub fn seal_batch(batch: &mut [u8], partition_leader_epoch: i32) {
    if batch.len() < HEADER_LEN {
        return;
    }
    batch[12..16].copy_from_slice(&partition_leader_epoch.to_be_bytes());
    let crc = crc32c::crc32c(&batch[21..]);
    batch[17..21].copy_from_slice(&crc.to_be_bytes());
}

fn corrupt(what: &str) -> CleanerError {
    CleanerError::Records(what.to_string())
}

fn decompress(codec: u8, payload: &[u8], max_bytes: usize) -> Result<Vec<u8>, CleanerError> {
    let limit = max_bytes as u64 + 1;
    let mut out = Vec::new();
    let read = match codec {
        CODEC_NONE => {
            if payload.len() > max_bytes {
                return Err(CleanerError::TooLarge);
            }
            return Ok(payload.to_vec());
        }
        CODEC_GZIP => flate2::read::MultiGzDecoder::new(payload).take(limit).read_to_end(&mut out),
        CODEC_SNAPPY => snappy_decode(payload, max_bytes, &mut out),
        CODEC_LZ4 => lz4::Decoder::new(payload).and_then(|d| d.take(limit).read_to_end(&mut out)),
        CODEC_ZSTD => zstd::stream::read::Decoder::with_buffer(payload)
            .and_then(|mut d| {
                d.window_log_max(ZSTD_WINDOW_LOG_MAX)?;
                Ok(d)
            })
            .and_then(|d| d.take(limit).read_to_end(&mut out)),
        other => return Err(CleanerError::Records(format!("unknown compression type id {other}"))),
    };
    read.map_err(|e| CleanerError::Records(format!("decompress: {e}")))?;
    if out.len() > max_bytes {
        return Err(CleanerError::TooLarge);
    }
    Ok(out)
}

/// xerial-framed snappy (as Kafka writes it) or one raw block.
fn snappy_decode(payload: &[u8], max_bytes: usize, out: &mut Vec<u8>) -> std::io::Result<usize> {
    let bad = |e: String| std::io::Error::new(std::io::ErrorKind::InvalidData, e);
    let mut decoder = snap::raw::Decoder::new();
    let mut block = |chunk: &[u8], out: &mut Vec<u8>| -> std::io::Result<()> {
        let n = snap::raw::decompress_len(chunk).map_err(|e| bad(e.to_string()))?;
        if out.len().saturating_add(n) > max_bytes {
            return Err(bad("snappy payload over the limit".into()));
        }
        let at = out.len();
        out.resize(at + n, 0);
        decoder.decompress(chunk, &mut out[at..]).map_err(|e| bad(e.to_string()))?;
        Ok(())
    };
    if let Some(mut rest) = payload.strip_prefix(&XERIAL_MAGIC[..]).and_then(|r| r.get(8..)) {
        while let Some((len, tail)) = rest.split_first_chunk::<4>() {
            let len = u32::from_be_bytes(*len) as usize;
            let chunk = tail.get(..len).ok_or_else(|| bad("truncated snappy chunk".into()))?;
            block(chunk, out)?;
            rest = &tail[len..];
        }
    } else {
        block(payload, out)?;
    }
    Ok(out.len())
}

/// The cleaner's codecs at their libraries' default levels (gzip 6, lz4's fast mode, zstd 3).
fn compress(codec: u8, raw: &[u8]) -> Result<Vec<u8>, CleanerError> {
    let level = if codec == CODEC_ZSTD { 3 } else { -1 };
    let mut out = Vec::with_capacity(raw.len() / 2);
    compress_into(Compression { codec, level }, raw, &mut out)
        .map_err(|e| CleanerError::Records(format!("compress: {e}")))?;
    Ok(out)
}

struct Cursor<'a> {
    b: &'a [u8],
    at: usize,
}

impl Cursor<'_> {
    fn byte(&mut self) -> Result<u8, CleanerError> {
        let b = *self.b.get(self.at).ok_or_else(|| corrupt("record truncated"))?;
        self.at += 1;
        Ok(b)
    }

    fn varlong(&mut self) -> Result<i64, CleanerError> {
        crate::store::records::read_varlong(|| self.byte(), || corrupt("varlong too long"))
    }

    fn varint(&mut self) -> Result<i32, CleanerError> {
        crate::store::records::read_varint(|| self.byte(), || corrupt("varint too long"))
    }

    /// A length-prefixed field (negative: null), as a slice of `whole`.
    fn bytes(&mut self, whole: &Bytes) -> Result<Option<Bytes>, CleanerError> {
        let len = self.varint()?;
        let Ok(len) = usize::try_from(len) else { return Ok(None) };
        let end =
            self.at.checked_add(len).filter(|e| *e <= self.b.len()).ok_or_else(|| corrupt("field past record"))?;
        let out = whole.slice(self.at..end);
        self.at = end;
        Ok(Some(out))
    }
}

fn put_varlong(out: &mut Vec<u8>, v: i64) {
    let mut z = ((v << 1) ^ (v >> 63)) as u64;
    while z >= 0x80 {
        out.push((z as u8) | 0x80);
        z >>= 7;
    }
    out.push(z as u8);
}

fn put_bytes(out: &mut Vec<u8>, b: Option<&[u8]>) {
    match b {
        Some(b) => {
            put_varlong(out, b.len() as i64);
            out.extend_from_slice(b);
        }
        None => put_varlong(out, -1),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::records::testutil::{compress as test_compress, raw_batch, record};

    type Rec<'a> = (i32, Option<&'a [u8]>, &'a [u8]);

    fn batch_of(codec: u8, recs: &[Rec]) -> Vec<u8> {
        let mut raw = Vec::new();
        for (d, k, v) in recs {
            raw.extend(record(*d, i64::from(*d) * 10, *k, v));
        }
        let last = recs.last().map_or(0, |r| r.0);
        raw_batch(recs.len() as i32, last, i16::from(codec), 1_000, &test_compress(codec, &raw))
    }

    #[test]
    fn a_batch_rebuilt_from_a_subset_keeps_its_offsets_and_reads_back_with_every_codec() {
        for codec in [CODEC_NONE, CODEC_GZIP, CODEC_SNAPPY, CODEC_LZ4, CODEC_ZSTD] {
            let b = batch_of(codec, &[(0, Some(b"a"), b"1"), (1, Some(b"b"), b"2"), (2, Some(b"a"), b"3")]);
            let h = BatchHeader::parse(&b).unwrap();
            let recs = decode(&b, &h, 1 << 20).unwrap();
            assert_eq!(recs.len(), 3);
            let kept = vec![recs[1].clone()];
            let mut out = encode(&h, &kept, None).unwrap();
            seal_batch(&mut out, 7);
            let h2 = BatchHeader::parse(&out).unwrap();
            crate::store::batch::verify_crc(&out, &h2).unwrap();
            assert_eq!((h2.base_offset, h2.last_offset_delta, h2.records_count, h2.compression()), (0, 2, 1, codec));
            let back = decode(&out, &h2, 1 << 20).unwrap();
            assert_eq!(back, kept, "codec {codec}");
            // The stream walk the broker validates produce with accepts it too.
            let mut walk = crate::store::records::RecordWalk::new(&out, &h2).unwrap();
            while walk.next_record().unwrap().is_some() {}
            walk.finish().unwrap();
        }
    }

    #[test]
    fn a_delete_horizon_moves_the_base_timestamp_and_keeps_record_timestamps() {
        let b = batch_of(CODEC_NONE, &[(0, Some(b"a"), b"1"), (1, Some(b"b"), b"2")]);
        let h = BatchHeader::parse(&b).unwrap();
        let recs = decode(&b, &h, 1 << 20).unwrap();
        let out = encode(&h, &recs, Some(99_999)).unwrap();
        let h2 = BatchHeader::parse(&out).unwrap();
        assert_eq!(delete_horizon(&h2), Some(99_999));
        let back = decode(&out, &h2, 1 << 20).unwrap();
        assert_eq!(back.iter().map(|r| r.timestamp).collect::<Vec<_>>(), vec![1_000, 1_010]);
    }

    #[test]
    fn a_payload_over_the_limit_is_refused_not_inflated() {
        let big = vec![0u8; 1 << 20];
        let b = batch_of(CODEC_ZSTD, &[(0, Some(b"a"), &big)]);
        let h = BatchHeader::parse(&b).unwrap();
        assert!(matches!(decode(&b, &h, 64 << 10), Err(CleanerError::TooLarge)));
    }
}
