//! A topic's `compression.type` (Kafka's LogValidator): a topic that names a codec stores every
//! batch in it, so a batch a producer sent in another codec (or none) is recompressed before it
//! is appended; `producer` (the default) stores batches as sent.
//!
//! The batch keeps its header (producer id, epoch, base sequence, the transactional flag,
//! timestamps, record count) and its records byte for byte: the validator has checked that the
//! records' offset deltas are 0..n-1, so the records section is only decompressed and
//! compressed again, streaming, never held whole. What is written is bounded by the topic's
//! `max.message.bytes`: a batch that grows past it once recompressed is MESSAGE_TOO_LARGE, as
//! Kafka's UnifiedLog.append re-checks the size of recompressed records.

use std::io::{self, Read, Write};

use thiserror::Error;

use super::batch::{BatchHeader, HEADER_LEN};
use super::records::{self, RecordsError, CODEC_GZIP, CODEC_LZ4, CODEC_NONE, CODEC_SNAPPY, CODEC_ZSTD};
use crate::error_code::ResponseError;

/// Attributes bits 0-2: the codec.
const CODEC_MASK: i16 = 0x07;
/// xerial's SnappyOutputStream (what Kafka's producer writes): its magic, version 1, compatible
/// version 1, then chunks of 32 KiB compressed one at a time.
const XERIAL_VERSIONS: [u8; 8] = [0, 0, 0, 1, 0, 0, 0, 1];
const SNAPPY_CHUNK: usize = 32 << 10;

/// A codec and its level (Kafka's `compression.<codec>.level`; ignored by snappy and none).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Compression {
    pub codec: u8,
    pub level: i32,
}

impl Compression {
    /// The topic's `compression.type` with its level: None for `producer` (stored as sent).
    pub fn from_config(compression_type: &str, gzip_level: i32, lz4_level: i32, zstd_level: i32) -> Option<Self> {
        let (codec, level) = match compression_type {
            "uncompressed" => (CODEC_NONE, 0),
            "gzip" => (CODEC_GZIP, gzip_level),
            "snappy" => (CODEC_SNAPPY, 0),
            "lz4" => (CODEC_LZ4, lz4_level),
            "zstd" => (CODEC_ZSTD, zstd_level),
            _ => return None,
        };
        Some(Compression { codec, level })
    }
}

#[derive(Debug, Error)]
pub enum RecompressError {
    #[error("the batch is larger than {0} bytes (max.message.bytes) once recompressed")]
    TooLarge(usize),
    #[error("{0}")]
    Records(#[from] RecordsError),
    #[error("failed to compress the records: {0}")]
    Compress(io::Error),
}

impl RecompressError {
    /// Kafka's answer: RecordTooLargeException is MESSAGE_TOO_LARGE; the validator has already
    /// read these records, so a failure to read or write them again is the broker's.
    pub fn code(&self) -> i16 {
        match self {
            RecompressError::TooLarge(_) => ResponseError::MessageTooLarge.code(),
            RecompressError::Records(RecordsError::Invalid(_)) => ResponseError::CorruptMessage.code(),
            _ => ResponseError::UnknownServerError.code(),
        }
    }
}

/// The codec `target` asks of a batch stored with `h`'s, when they differ (Kafka recompresses
/// only then).
pub fn wanted(h: &BatchHeader, target: Option<Compression>) -> Option<Compression> {
    target.filter(|t| t.codec != h.compression())
}

/// `batch` (whole, validated, header `h`) with its records in `target`'s codec, at most
/// `max_bytes` long. The CRC is computed again; the caller patches timestamps and the leader
/// epoch as for any batch.
pub fn recompress(
    batch: &[u8],
    h: &BatchHeader,
    target: Compression,
    max_bytes: usize,
) -> Result<Vec<u8>, RecompressError> {
    let end = h.total_size().min(batch.len());
    let payload = batch.get(HEADER_LEN..end).unwrap_or_default();
    let header =
        batch.get(..HEADER_LEN).ok_or_else(|| RecordsError::Invalid("batch shorter than its header".into()))?;
    let mut out = Bounded { buf: Vec::with_capacity(end.min(max_bytes)), max: max_bytes, over: false };
    out.buf.extend_from_slice(header);
    let input = records::decoder(h.compression(), payload)?;
    if let Err(e) = compress_into(target, input, &mut out) {
        return Err(if out.over { RecompressError::TooLarge(max_bytes) } else { RecompressError::Compress(e) });
    }
    let mut batch = out.buf;
    let length = i32::try_from(batch.len() - 12).map_err(|_| RecompressError::TooLarge(max_bytes))?;
    batch[8..12].copy_from_slice(&length.to_be_bytes());
    let attributes = (h.attributes & !CODEC_MASK) | i16::from(target.codec);
    batch[21..23].copy_from_slice(&attributes.to_be_bytes());
    let crc = crc32c::crc32c(&batch[21..]);
    batch[17..21].copy_from_slice(&crc.to_be_bytes());
    Ok(batch)
}

/// Everything `input` yields, compressed with `target` into `out` as Kafka's producer frames it
/// (gzip; xerial-framed snappy; lz4 frames of independent 64 KiB blocks without a content
/// checksum, which Kafka's KafkaLZ4BlockInputStream reads; zstd).
pub fn compress_into(target: Compression, mut input: impl Read, mut out: impl Write) -> io::Result<()> {
    match target.codec {
        CODEC_NONE => {
            io::copy(&mut input, &mut out)?;
        }
        CODEC_GZIP => {
            // Kafka's -1 is the codec's default (6).
            let level = u32::try_from(target.level).map_or(flate2::Compression::default(), flate2::Compression::new);
            let mut e = flate2::write::GzEncoder::new(out, level);
            io::copy(&mut input, &mut e)?;
            e.finish()?;
        }
        CODEC_SNAPPY => {
            out.write_all(&records::XERIAL_MAGIC)?;
            out.write_all(&XERIAL_VERSIONS)?;
            let mut enc = snap::raw::Encoder::new();
            let mut chunk = vec![0u8; SNAPPY_CHUNK];
            loop {
                let n = fill(&mut input, &mut chunk)?;
                if n == 0 {
                    break;
                }
                let c = enc.compress_vec(&chunk[..n]).map_err(io::Error::other)?;
                let len = u32::try_from(c.len()).map_err(io::Error::other)?;
                out.write_all(&len.to_be_bytes())?;
                out.write_all(&c)?;
            }
        }
        CODEC_LZ4 => {
            let mut e = lz4::EncoderBuilder::new()
                .block_size(lz4::BlockSize::Max64KB)
                .block_mode(lz4::BlockMode::Independent)
                .checksum(lz4::ContentChecksum::NoChecksum)
                .level(u32::try_from(target.level).unwrap_or(0))
                .build(out)?;
            io::copy(&mut input, &mut e)?;
            let (_, r) = e.finish();
            r?;
        }
        CODEC_ZSTD => {
            let mut e = zstd::stream::write::Encoder::new(out, target.level)?;
            io::copy(&mut input, &mut e)?;
            e.finish()?;
        }
        other => return Err(io::Error::other(format!("unknown compression type id {other}"))),
    }
    Ok(())
}

/// Reads until `buf` is full or the input ends; the bytes read.
fn fill(input: &mut impl Read, buf: &mut [u8]) -> io::Result<usize> {
    let mut n = 0;
    while n < buf.len() {
        match input.read(&mut buf[n..]) {
            Ok(0) => break,
            Ok(k) => n += k,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(n)
}

/// A buffer that refuses to grow past `max` bytes.
struct Bounded {
    buf: Vec<u8>,
    max: usize,
    over: bool,
}

impl Write for Bounded {
    fn write(&mut self, data: &[u8]) -> io::Result<usize> {
        if self.buf.len().saturating_add(data.len()) > self.max {
            self.over = true;
            return Err(io::Error::other("over max.message.bytes"));
        }
        self.buf.extend_from_slice(data);
        Ok(data.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::records::testutil::good_batch;
    use crate::store::records::RecordWalk;

    const NOW: i64 = 1_700_000_000_000;
    const CODECS: [u8; 5] = [CODEC_NONE, CODEC_GZIP, CODEC_SNAPPY, CODEC_LZ4, CODEC_ZSTD];

    fn kafka_default(codec: u8) -> Compression {
        let level = match codec {
            CODEC_GZIP => -1,
            CODEC_LZ4 => 9,
            CODEC_ZSTD => 3,
            _ => 0,
        };
        Compression { codec, level }
    }

    /// The records section of a batch, decompressed, after the streaming walk read every
    /// record of it.
    fn records_of(batch: &[u8]) -> Vec<u8> {
        let h = BatchHeader::parse(batch).unwrap();
        let mut walk = RecordWalk::new(batch, &h).unwrap();
        let mut n = 0;
        while walk.next_record().unwrap().is_some() {
            n += 1;
        }
        assert_eq!(n, h.records_count);
        let mut raw = Vec::new();
        records::decoder(h.compression(), &batch[HEADER_LEN..]).unwrap().read_to_end(&mut raw).unwrap();
        raw
    }

    #[test]
    fn a_batch_of_any_codec_is_stored_in_the_topics_codec_with_its_records_and_header() {
        for from in CODECS {
            let original = good_batch(20, from, NOW);
            let h = BatchHeader::parse(&original).unwrap();
            for to in CODECS.into_iter().filter(|c| *c != from) {
                let target = kafka_default(to);
                assert_eq!(wanted(&h, Some(target)), Some(target));
                let out = recompress(&original, &h, target, 1 << 20).unwrap();
                let nh = BatchHeader::parse(&out).unwrap();
                assert_eq!(nh.compression(), to, "{from} -> {to}");
                assert_eq!(nh.total_size(), out.len());
                assert_eq!(
                    (nh.producer_id, nh.producer_epoch, nh.base_sequence, nh.records_count, nh.last_offset_delta),
                    (h.producer_id, h.producer_epoch, h.base_sequence, h.records_count, h.last_offset_delta)
                );
                assert_eq!((nh.base_timestamp, nh.max_timestamp), (h.base_timestamp, h.max_timestamp));
                assert_eq!(nh.attributes & !CODEC_MASK, h.attributes & !CODEC_MASK);
                assert_eq!(crc32c::crc32c(&out[21..]), u32::from_be_bytes(out[17..21].try_into().unwrap()));
                assert_eq!(records_of(&out), records_of(&original), "{from} -> {to}");
            }
        }
    }

    #[test]
    fn the_producer_setting_and_the_same_codec_store_the_batch_as_sent() {
        let h = BatchHeader::parse(&good_batch(3, CODEC_LZ4, NOW)).unwrap();
        assert_eq!(wanted(&h, None), None);
        assert_eq!(wanted(&h, Some(kafka_default(CODEC_LZ4))), None);
        assert_eq!(Compression::from_config("producer", -1, 9, 3), None);
        assert_eq!(Compression::from_config("zstd", -1, 9, 7), Some(Compression { codec: CODEC_ZSTD, level: 7 }));
    }

    #[test]
    fn a_batch_that_grows_past_max_message_bytes_once_recompressed_is_message_too_large() {
        let original = good_batch(50, CODEC_ZSTD, NOW);
        let h = BatchHeader::parse(&original).unwrap();
        let e = recompress(&original, &h, kafka_default(CODEC_NONE), original.len() + 10).unwrap_err();
        assert_eq!(e.code(), ResponseError::MessageTooLarge.code());
    }
}
