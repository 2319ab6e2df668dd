//! Streaming walk over the records of one magic-v2 batch, compressed or not.
//!
//! Nothing here holds the decompressed payload: records are read one at a time through a small
//! buffered reader, and keys, values and headers are skipped without being copied out. The
//! memory a walk may use is bounded by the constants below whatever the data claims:
//! a 8 KiB read buffer, plus the decoder's own state, at most
//! - gzip: a 32 KiB window and a 32 KiB input buffer;
//! - lz4 (frame format): liblz4's input and output block buffers, at most 2 x 4 MiB (the largest
//!   block size the frame format has);
//! - zstd: a window of at most 2^[`ZSTD_WINDOW_LOG_MAX`] bytes (frames asking more are refused);
//! - snappy: one raw block of at most [`SNAPPY_MAX_BLOCK`] bytes (xerial chunks are decoded one
//!   at a time; a raw, unframed payload is one block).
//!
//! So one walk uses at most about 8.5 MiB beyond the batch bytes it reads from. Walks run on the
//! connection threads (Produce) and partition threads (ListOffsets by time), one at a time per
//! thread, so the broker-wide bound is that times the number of those threads.

use std::io::{self, BufRead, BufReader, Read};

use thiserror::Error;

use super::batch::BatchHeader;

/// Kafka's compression codec ids (attributes bits 0-2).
pub const CODEC_NONE: u8 = 0;
pub const CODEC_GZIP: u8 = 1;
pub const CODEC_SNAPPY: u8 = 2;
pub const CODEC_LZ4: u8 = 3;
pub const CODEC_ZSTD: u8 = 4;

/// Largest zstd window accepted (8 MiB): covers Kafka's and librdkafka's defaults (level 3,
/// window log 21) with room; frames that need more fail to decode.
pub const ZSTD_WINDOW_LOG_MAX: u32 = 23;
/// Largest raw snappy block decoded (8 MiB). xerial chunks are 32 KiB by default; a raw
/// payload is bounded by message.max.bytes times snappy's at most ~21x expansion.
pub const SNAPPY_MAX_BLOCK: usize = 8 << 20;
const READ_BUFFER: usize = 8 << 10;
/// xerial's SnappyOutputStream header: magic, then version and compatible version (int32 each).
pub(crate) const XERIAL_MAGIC: [u8; 8] = [0x82, b'S', b'N', b'A', b'P', b'P', b'Y', 0];
const XERIAL_HEADER_LEN: usize = 16;

#[derive(Debug, Error, Clone, PartialEq, Eq)]
pub enum RecordsError {
    /// Kafka's DefaultRecord/DefaultRecordBatch throw InvalidRecordException: INVALID_RECORD.
    #[error("{0}")]
    Invalid(String),
    /// Kafka's CompressionType.forId throws IllegalArgumentException: UNKNOWN_SERVER_ERROR.
    #[error("unknown compression type id {0}")]
    UnknownCodec(u8),
    /// Kafka wraps a decompression IOException in KafkaException: UNKNOWN_SERVER_ERROR.
    #[error("failed to decompress record stream: {0}")]
    Decompress(String),
}

fn invalid(msg: impl Into<String>) -> RecordsError {
    RecordsError::Invalid(msg.into())
}

fn premature_eof() -> RecordsError {
    invalid("Incorrect declared batch size, premature EOF reached")
}

fn from_io(e: io::Error) -> RecordsError {
    if e.kind() == io::ErrorKind::UnexpectedEof {
        premature_eof()
    } else {
        RecordsError::Decompress(e.to_string())
    }
}

/// What a walk needs of one record (no key or value bytes).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RecordInfo {
    pub offset_delta: i32,
    pub timestamp_delta: i64,
    pub has_key: bool,
}

/// Iterates the records of one batch: `next` until None, then `finish` to check that nothing
/// is left over. `batch` is the whole batch (header included).
pub struct RecordWalk<'a> {
    reader: BufReader<Box<dyn Read + 'a>>,
    count: i32,
    read: i32,
}

impl<'a> RecordWalk<'a> {
    pub fn new(batch: &'a [u8], header: &BatchHeader) -> Result<RecordWalk<'a>, RecordsError> {
        // DefaultRecordBatch: a negative count is refused before iterating.
        if header.records_count < 0 {
            return Err(invalid(format!("Found invalid record count {} in magic v2 batch", header.records_count)));
        }
        let end = header.total_size().min(batch.len());
        let payload = batch.get(super::batch::HEADER_LEN..end).unwrap_or_default();
        let source = decoder(header.compression(), payload)?;
        Ok(RecordWalk { reader: BufReader::with_capacity(READ_BUFFER, source), count: header.records_count, read: 0 })
    }

    /// The next record, or None after the declared count.
    pub fn next_record(&mut self) -> Result<Option<RecordInfo>, RecordsError> {
        if self.read >= self.count {
            return Ok(None);
        }
        self.read += 1;
        read_record(&mut self.reader).map(Some)
    }

    /// After the declared count: refuses bytes left over inside the batch.
    pub fn finish(mut self) -> Result<(), RecordsError> {
        while self.next_record()?.is_some() {}
        match self.reader.fill_buf() {
            Ok([]) => Ok(()),
            Ok(_) => Err(invalid("Incorrect declared batch size, records still remaining in file")),
            Err(e) => Err(from_io(e)),
        }
    }
}

/// The timestamp Kafka reads for a record: the batch's max timestamp under LogAppendTime.
pub fn record_timestamp(h: &BatchHeader, r: &RecordInfo) -> i64 {
    if h.is_log_append_time() {
        h.max_timestamp
    } else {
        h.base_timestamp.wrapping_add(r.timestamp_delta)
    }
}

/// ListOffsets by time in one stored batch: (offset, timestamp) of the first record in
/// [`lower`, `upper`) (the log start, the readable end) whose timestamp satisfies `wanted`.
/// Streams, so a compressed batch is never held decompressed.
pub fn find_record(
    batch: &[u8],
    lower: i64,
    upper: i64,
    wanted: impl Fn(i64) -> bool,
) -> Result<Option<(i64, i64)>, RecordsError> {
    let h = BatchHeader::parse(batch).map_err(|e| invalid(e.to_string()))?;
    let mut walk = RecordWalk::new(batch, &h)?;
    while let Some(r) = walk.next_record()? {
        let offset = h.base_offset.saturating_add(i64::from(r.offset_delta));
        let ts = record_timestamp(&h, &r);
        if offset >= lower && offset < upper && wanted(ts) {
            return Ok(Some((offset, ts)));
        }
    }
    Ok(None)
}

/// A streaming reader of a batch's decompressed records section, with the bounds above.
pub(crate) fn decoder<'a>(codec: u8, payload: &'a [u8]) -> Result<Box<dyn Read + 'a>, RecordsError> {
    Ok(match codec {
        CODEC_NONE => Box::new(payload),
        // Java's GZIPInputStream reads concatenated members too.
        CODEC_GZIP => Box::new(flate2::read::MultiGzDecoder::new(payload)),
        CODEC_SNAPPY => Box::new(SnappyReader::new(payload)),
        CODEC_LZ4 => Box::new(lz4::Decoder::new(payload).map_err(from_io)?),
        CODEC_ZSTD => {
            let mut d = zstd::stream::read::Decoder::with_buffer(payload).map_err(from_io)?;
            d.window_log_max(ZSTD_WINDOW_LOG_MAX).map_err(from_io)?;
            Box::new(d)
        }
        other => return Err(RecordsError::UnknownCodec(other)),
    })
}

/// Snappy as Kafka reads it (xerial's SnappyInputStream): the xerial stream format (header, then
/// chunks of [int32 compressed length][raw snappy block]), or a plain raw snappy block when the
/// header is absent. One block is decoded at a time, each at most SNAPPY_MAX_BLOCK.
struct SnappyReader<'a> {
    input: &'a [u8],
    framed: bool,
    block: Vec<u8>,
    pos: usize,
    decoder: snap::raw::Decoder,
}

impl<'a> SnappyReader<'a> {
    fn new(payload: &'a [u8]) -> SnappyReader<'a> {
        let framed = payload.starts_with(&XERIAL_MAGIC);
        let input = if framed { payload.get(XERIAL_HEADER_LEN..).unwrap_or_default() } else { payload };
        SnappyReader { input, framed, block: Vec::new(), pos: 0, decoder: snap::raw::Decoder::new() }
    }

    /// Decodes the next block into `self.block`; false at the end of the input.
    fn next_block(&mut self) -> io::Result<bool> {
        if self.input.is_empty() {
            return Ok(false);
        }
        let chunk = if self.framed {
            let (len, rest) = match self.input.split_first_chunk::<4>() {
                Some((len, rest)) => (u32::from_be_bytes(*len) as usize, rest),
                None => return Err(io::ErrorKind::UnexpectedEof.into()),
            };
            let Some(chunk) = rest.get(..len) else { return Err(io::ErrorKind::UnexpectedEof.into()) };
            self.input = rest.get(len..).unwrap_or_default();
            chunk
        } else {
            std::mem::take(&mut self.input)
        };
        let claimed = snap::raw::decompress_len(chunk).map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e))?;
        if claimed > SNAPPY_MAX_BLOCK {
            return Err(io::Error::new(
                io::ErrorKind::InvalidData,
                format!("snappy block of {claimed} bytes exceeds {SNAPPY_MAX_BLOCK}"),
            ));
        }
        self.block.clear();
        self.block.resize(claimed, 0);
        let n = self
            .decoder
            .decompress(chunk, &mut self.block)
            .map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e))?;
        self.block.truncate(n);
        self.pos = 0;
        Ok(true)
    }
}

impl Read for SnappyReader<'_> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        while self.pos >= self.block.len() {
            if !self.next_block()? {
                return Ok(0);
            }
        }
        let avail = self.block.get(self.pos..).unwrap_or_default();
        let n = avail.len().min(buf.len());
        if let (Some(dst), Some(src)) = (buf.get_mut(..n), avail.get(..n)) {
            dst.copy_from_slice(src);
        }
        self.pos += n;
        Ok(n)
    }
}

/// One byte from the stream; None at its end.
fn stream_byte<R: BufRead>(r: &mut R) -> Result<Option<u8>, RecordsError> {
    let b = match r.fill_buf() {
        Ok(buf) => buf.first().copied(),
        Err(e) => return Err(from_io(e)),
    };
    if b.is_some() {
        r.consume(1);
    }
    Ok(b)
}

/// Reads inside one record's body: every read is charged to `left`, the body's declared size.
struct Body<'r, R> {
    r: &'r mut R,
    left: u64,
}

impl<R: BufRead> Body<'_, R> {
    fn byte(&mut self) -> Result<u8, RecordsError> {
        if self.left == 0 {
            return Err(invalid("Found invalid record structure: fields run past the record size"));
        }
        self.left -= 1;
        stream_byte(self.r)?.ok_or_else(premature_eof)
    }

    fn varint(&mut self) -> Result<i32, RecordsError> {
        read_varint(|| self.byte(), varint_too_long)
    }

    fn varlong(&mut self) -> Result<i64, RecordsError> {
        read_varlong(|| self.byte(), || invalid("Found invalid record structure: varlong is too long"))
    }

    /// Skips `n` bytes of the body without copying them anywhere.
    fn skip(&mut self, n: u64) -> Result<(), RecordsError> {
        if n > self.left {
            return Err(invalid("Found invalid record structure: a field runs past the record size"));
        }
        self.left -= n;
        let mut n = n;
        while n > 0 {
            let avail = self.r.fill_buf().map_err(from_io)?.len();
            if avail == 0 {
                return Err(premature_eof());
            }
            let take = (avail as u64).min(n) as usize;
            self.r.consume(take);
            n -= take as u64;
        }
        Ok(())
    }

    /// A length-prefixed byte field (key, value, header value): -1 (any negative) is null.
    fn skip_bytes(&mut self) -> Result<bool, RecordsError> {
        let len = self.varint()?;
        if len >= 0 {
            self.skip(len as u64)?;
        }
        Ok(len >= 0)
    }
}

fn varint_too_long() -> RecordsError {
    invalid("Found invalid record structure: varint is too long")
}

/// Kafka's ByteUtils.readVarint: at most 5 bytes (`too_long` past them), zigzag. `next` gives
/// the next byte (or the caller's error: truncated input).
pub(crate) fn read_varint<E>(mut next: impl FnMut() -> Result<u8, E>, too_long: impl FnOnce() -> E) -> Result<i32, E> {
    let mut raw: u32 = 0;
    let mut shift = 0u32;
    loop {
        let b = next()?;
        raw |= u32::from(b & 0x7f).wrapping_shl(shift);
        if b & 0x80 == 0 {
            break;
        }
        shift += 7;
        if shift > 28 {
            return Err(too_long());
        }
    }
    Ok(((raw >> 1) as i32) ^ -((raw & 1) as i32))
}

/// Kafka's ByteUtils.readVarlong: at most 10 bytes (`too_long` past them), zigzag.
pub(crate) fn read_varlong<E>(mut next: impl FnMut() -> Result<u8, E>, too_long: impl FnOnce() -> E) -> Result<i64, E> {
    let mut raw: u64 = 0;
    let mut shift = 0u32;
    loop {
        let b = next()?;
        raw |= u64::from(b & 0x7f).wrapping_shl(shift);
        if b & 0x80 == 0 {
            break;
        }
        shift += 7;
        if shift > 63 {
            return Err(too_long());
        }
    }
    Ok(((raw >> 1) as i64) ^ -((raw & 1) as i64))
}

/// Kafka's DefaultRecord.readFrom, keeping only what validation needs.
fn read_record<R: BufRead>(r: &mut R) -> Result<RecordInfo, RecordsError> {
    let size = read_varint(|| stream_byte(r)?.ok_or_else(premature_eof), varint_too_long)?;
    if size < 0 {
        return Err(invalid(format!("Invalid record size {size}")));
    }
    let mut body = Body { r, left: size as u64 };
    let _attributes = body.byte()?;
    let timestamp_delta = body.varlong()?;
    let offset_delta = body.varint()?;
    let has_key = body.skip_bytes()?;
    body.skip_bytes()?;
    let headers = body.varint()?;
    if headers < 0 {
        return Err(invalid(format!("Found invalid number of record headers {headers}")));
    }
    // Each header takes at least two bytes, so the body size bounds this loop.
    for _ in 0..headers {
        let key_len = body.varint()?;
        if key_len < 0 {
            return Err(invalid(format!("Invalid negative header key size {key_len}")));
        }
        body.skip(key_len as u64)?;
        body.skip_bytes()?;
    }
    if body.left != 0 {
        return Err(invalid(format!(
            "Invalid record size: expected to read {size} bytes in record payload, but instead read {}",
            size as u64 - body.left
        )));
    }
    Ok(RecordInfo { offset_delta, timestamp_delta, has_key })
}

#[cfg(test)]
pub mod testutil {
    //! Builds v2 batches with hand-written records, optionally compressed, for unit tests.
    use std::io::Write;

    use super::*;
    use crate::store::batch::{self, HEADER_LEN};

    pub fn varint(out: &mut Vec<u8>, v: i64) {
        let mut z = ((v << 1) ^ (v >> 63)) as u64;
        while z >= 0x80 {
            out.push((z as u8) | 0x80);
            z >>= 7;
        }
        out.push(z as u8);
    }

    /// One record: (offset delta, timestamp delta, key, value, headers count, extra raw bytes).
    pub fn record(offset_delta: i32, ts_delta: i64, key: Option<&[u8]>, value: &[u8]) -> Vec<u8> {
        let mut body = vec![0u8];
        varint(&mut body, ts_delta);
        varint(&mut body, offset_delta as i64);
        match key {
            Some(k) => {
                varint(&mut body, k.len() as i64);
                body.extend_from_slice(k);
            }
            None => varint(&mut body, -1),
        }
        varint(&mut body, value.len() as i64);
        body.extend_from_slice(value);
        varint(&mut body, 1);
        varint(&mut body, 1);
        body.push(b'h');
        varint(&mut body, -1);
        let mut out = Vec::new();
        varint(&mut out, body.len() as i64);
        out.extend_from_slice(&body);
        out
    }

    pub fn compress(codec: u8, raw: &[u8]) -> Vec<u8> {
        match codec {
            CODEC_GZIP => {
                let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
                e.write_all(raw).unwrap();
                e.finish().unwrap()
            }
            CODEC_SNAPPY => {
                // xerial framing with two chunks
                let mut out = XERIAL_MAGIC.to_vec();
                out.extend_from_slice(&1i32.to_be_bytes());
                out.extend_from_slice(&1i32.to_be_bytes());
                let mid = raw.len() / 2;
                for part in [&raw[..mid], &raw[mid..]] {
                    let c = snap::raw::Encoder::new().compress_vec(part).unwrap();
                    out.extend_from_slice(&(c.len() as u32).to_be_bytes());
                    out.extend_from_slice(&c);
                }
                out
            }
            CODEC_LZ4 => {
                let mut e = lz4::EncoderBuilder::new().build(Vec::new()).unwrap();
                e.write_all(raw).unwrap();
                let (out, r) = e.finish();
                r.unwrap();
                out
            }
            CODEC_ZSTD => zstd::encode_all(raw, 3).unwrap(),
            _ => raw.to_vec(),
        }
    }

    /// A batch with `count` in the header, `last_offset_delta`, and `payload` as records section.
    pub fn raw_batch(count: i32, last_offset_delta: i32, attributes: i16, base_ts: i64, payload: &[u8]) -> Vec<u8> {
        let mut b =
            batch::testutil::batch(batch::testutil::Spec { records: 1, timestamp: base_ts, ..Default::default() });
        b.truncate(HEADER_LEN);
        b.extend_from_slice(payload);
        let mut b = b.to_vec();
        let len = (b.len() - batch::LOG_OVERHEAD) as i32;
        b[8..12].copy_from_slice(&len.to_be_bytes());
        b[21..23].copy_from_slice(&attributes.to_be_bytes());
        b[23..27].copy_from_slice(&last_offset_delta.to_be_bytes());
        b[57..61].copy_from_slice(&count.to_be_bytes());
        let crc = crc32c::crc32c(&b[21..]);
        b[17..21].copy_from_slice(&crc.to_be_bytes());
        b
    }

    /// `n` good records (deltas 0..n), compressed with `codec`.
    pub fn good_batch(n: i32, codec: u8, base_ts: i64) -> Vec<u8> {
        let mut raw = Vec::new();
        for i in 0..n {
            raw.extend(record(i, i as i64, Some(b"k"), b"value"));
        }
        raw_batch(n, n - 1, codec as i16, base_ts, &compress(codec, &raw))
    }
}

#[cfg(test)]
mod tests {
    use super::testutil::*;
    use super::*;

    fn walk(b: &[u8]) -> Result<Vec<RecordInfo>, RecordsError> {
        let h = BatchHeader::parse(b).unwrap();
        let mut w = RecordWalk::new(b, &h)?;
        let mut out = Vec::new();
        while let Some(r) = w.next_record()? {
            out.push(r);
        }
        w.finish()?;
        Ok(out)
    }

    #[test]
    fn every_codec_is_walked_record_by_record() {
        for codec in [CODEC_NONE, CODEC_GZIP, CODEC_SNAPPY, CODEC_LZ4, CODEC_ZSTD] {
            let got = walk(&good_batch(5, codec, 1_000)).unwrap();
            let deltas: Vec<i32> = got.iter().map(|r| r.offset_delta).collect();
            assert_eq!(deltas, vec![0, 1, 2, 3, 4], "codec {codec}");
            assert_eq!(got[4].timestamp_delta, 4);
            assert!(got[0].has_key);
        }
    }

    #[test]
    fn find_record_returns_the_first_match_below_the_bound() {
        let mut b = good_batch(4, CODEC_ZSTD, 100);
        b[0..8].copy_from_slice(&10i64.to_be_bytes());
        assert_eq!(find_record(&b, 0, i64::MAX, |t| t >= 102).unwrap(), Some((12, 102)));
        assert_eq!(find_record(&b, 13, i64::MAX, |t| t >= 102).unwrap(), Some((13, 103)));
        assert_eq!(find_record(&b, 0, 12, |t| t >= 102).unwrap(), None);
        assert_eq!(find_record(&b, 0, i64::MAX, |t| t == 103).unwrap(), Some((13, 103)));
    }

    #[test]
    fn raw_unframed_snappy_is_read() {
        let raw = record(0, 0, None, b"v");
        let c = snap::raw::Encoder::new().compress_vec(&raw).unwrap();
        let got = walk(&raw_batch(1, 0, CODEC_SNAPPY as i16, 1, &c)).unwrap();
        assert!(!got[0].has_key);
    }

    #[test]
    fn unknown_codec_is_refused() {
        let b = raw_batch(1, 0, 5, 1, &record(0, 0, None, b"v"));
        assert!(matches!(walk(&b), Err(RecordsError::UnknownCodec(5))));
    }

    #[test]
    fn negative_record_count_is_refused() {
        let b = raw_batch(-1, 0, 0, 1, &record(0, 0, None, b"v"));
        assert!(matches!(walk(&b), Err(RecordsError::Invalid(_))));
    }

    #[test]
    fn fewer_records_than_declared_is_premature_eof() {
        for codec in [CODEC_NONE, CODEC_GZIP, CODEC_ZSTD] {
            let b = raw_batch(2, 1, codec as i16, 1, &compress(codec, &record(0, 0, None, b"v")));
            assert_eq!(walk(&b), Err(premature_eof()), "codec {codec}");
        }
    }

    #[test]
    fn trailing_bytes_inside_the_batch_are_refused() {
        for codec in [CODEC_NONE, CODEC_GZIP, CODEC_LZ4] {
            let mut raw = record(0, 0, None, b"v");
            raw.extend(record(1, 0, None, b"w"));
            let b = raw_batch(1, 0, codec as i16, 1, &compress(codec, &raw));
            assert!(matches!(walk(&b), Err(RecordsError::Invalid(m)) if m.contains("remaining")), "codec {codec}");
        }
    }

    #[test]
    fn record_length_shorter_than_its_fields_is_refused() {
        let mut r = record(0, 0, Some(b"key"), b"value");
        r[0] -= 2; // claims two bytes fewer (length < 64, one-byte varint)
        let b = raw_batch(1, 0, 0, 1, &r);
        assert!(matches!(walk(&b), Err(RecordsError::Invalid(_))));
    }

    #[test]
    fn record_length_longer_than_its_fields_is_refused() {
        let mut r = record(0, 0, None, b"v");
        r[0] += 1;
        r.push(0);
        let b = raw_batch(1, 0, 0, 1, &r);
        assert!(matches!(walk(&b), Err(RecordsError::Invalid(m)) if m.contains("Invalid record size")));
    }

    #[test]
    fn negative_record_length_is_refused() {
        let mut r = Vec::new();
        varint(&mut r, -5);
        let b = raw_batch(1, 0, 0, 1, &r);
        assert!(matches!(walk(&b), Err(RecordsError::Invalid(_))));
    }

    #[test]
    fn varint_too_long_is_refused() {
        let b = raw_batch(1, 0, 0, 1, &[0xff, 0xff, 0xff, 0xff, 0xff, 0x01]);
        assert!(matches!(walk(&b), Err(RecordsError::Invalid(m)) if m.contains("too long")));
    }

    #[test]
    fn negative_header_count_is_refused() {
        let mut body = vec![0u8];
        varint(&mut body, 0);
        varint(&mut body, 0);
        varint(&mut body, -1);
        varint(&mut body, -1);
        varint(&mut body, -2);
        let mut r = Vec::new();
        varint(&mut r, body.len() as i64);
        r.extend(body);
        let b = raw_batch(1, 0, 0, 1, &r);
        assert!(matches!(walk(&b), Err(RecordsError::Invalid(m)) if m.contains("headers")));
    }

    #[test]
    fn huge_header_count_is_bounded_by_the_record_size() {
        let mut body = vec![0u8];
        varint(&mut body, 0);
        varint(&mut body, 0);
        varint(&mut body, -1);
        varint(&mut body, -1);
        varint(&mut body, i32::MAX as i64);
        let mut r = Vec::new();
        varint(&mut r, body.len() as i64);
        r.extend(body);
        let b = raw_batch(1, 0, 0, 1, &r);
        assert!(matches!(walk(&b), Err(RecordsError::Invalid(_))));
    }

    #[test]
    fn corrupt_compressed_data_is_a_decompression_error() {
        let b = raw_batch(1, 0, CODEC_GZIP as i16, 1, b"\x1f\x8b\x08\x00garbage-garbage-garbage");
        assert!(matches!(walk(&b), Err(RecordsError::Decompress(_)) | Err(RecordsError::Invalid(_))));
    }

    #[test]
    fn snappy_block_claiming_more_than_the_bound_is_refused_before_allocating() {
        // A raw snappy block whose preamble claims 1 GiB.
        let mut c = Vec::new();
        let mut n: u64 = 1 << 30;
        while n >= 0x80 {
            c.push((n as u8) | 0x80);
            n >>= 7;
        }
        c.push(n as u8);
        c.extend_from_slice(&[0u8; 8]);
        let b = raw_batch(1, 0, CODEC_SNAPPY as i16, 1, &c);
        assert!(matches!(walk(&b), Err(RecordsError::Decompress(m)) if m.contains("exceeds")));
    }

    #[test]
    fn gzip_bomb_is_walked_without_holding_the_payload() {
        // 4 records of 16 MiB of zeros each: the walk must finish, skipping values as it goes.
        let zeros = vec![0u8; 16 << 20];
        let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::best());
        for i in 0..4 {
            use std::io::Write;
            e.write_all(&record(i, 0, None, &zeros)).unwrap();
        }
        let c = e.finish().unwrap();
        drop(zeros);
        let got = walk(&raw_batch(4, 3, CODEC_GZIP as i16, 1, &c)).unwrap();
        assert_eq!(got.len(), 4);
    }
}
