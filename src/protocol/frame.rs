//! Size-prefixed frames: a 4-byte big-endian length, then that many bytes. Lengths are checked
//! before anything is allocated or decoded, so a hostile length cannot make the broker allocate.

use std::sync::Arc;

use bytes::{Bytes, BytesMut};
use kafka_protocol::messages::{ApiKey, RequestHeader, ResponseHeader, ResponseKind};
use kafka_protocol::protocol::buf::ByteBufMut;
use kafka_protocol::protocol::Encodable;
use thiserror::Error;
use tokio::io::{AsyncRead, AsyncReadExt};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

/// Bytes of requests read and not yet answered, shared by every connection of the broker
/// (Kafka's `queued.max.request.bytes`): a frame's bytes are taken before its body is read and
/// given back when its response is written, so readers wait instead of the broker growing.
#[derive(Debug, Clone)]
pub struct RequestPool {
    bytes: Arc<Semaphore>,
}

impl RequestPool {
    pub fn new(bytes: usize) -> Self {
        RequestPool { bytes: Arc::new(Semaphore::new(bytes.min(Semaphore::MAX_PERMITS))) }
    }

    /// Bytes not taken by a frame in flight.
    pub fn available(&self) -> usize {
        self.bytes.available_permits()
    }
}

/// api key + api version + correlation id: the least a request header holds.
pub const MIN_REQUEST_LEN: usize = 8;

#[derive(Debug, Error)]
pub enum FrameError {
    #[error("connection closed")]
    Closed,
    #[error("io: {0}")]
    Io(#[from] std::io::Error),
    #[error("frame length {0} is below the minimum request header size")]
    TooShort(i32),
    #[error("frame length {len} exceeds the limit of {max} bytes")]
    TooLarge { len: i64, max: usize },
    #[error("response encoding failed: {0}")]
    Encode(String),
}

/// Bytes read past the frame asked for, so that the next frame's length (and, for small frames,
/// the whole next frame) comes in with the same receive: one `recv` per frame instead of one for
/// the length, one for the body and one more that finds the socket empty.
pub const READ_AHEAD: usize = 8 * 1024;

/// Reads size-prefixed frames from one connection, with up to [`READ_AHEAD`] bytes read ahead.
/// A frame below `READ_AHEAD` is copied out of the read-ahead buffer; a larger one is handed
/// on without a copy, sharing its allocation with at most `READ_AHEAD` bytes of the next frame
/// (so a held frame keeps at most twice its size alive).
pub struct FrameReader<R> {
    rd: R,
    ahead: BytesMut,
}

impl<R: AsyncRead + Unpin> FrameReader<R> {
    pub fn new(rd: R) -> Self {
        FrameReader { rd, ahead: BytesMut::new() }
    }

    /// Reads until `ahead` holds `need` bytes, asking for at most `want` bytes in all. False on
    /// EOF.
    async fn fill(&mut self, need: usize, want: usize) -> Result<bool, FrameError> {
        while self.ahead.len() < need {
            let room = want.saturating_sub(self.ahead.len());
            self.ahead.reserve(room);
            if (&mut self.rd).take(room as u64).read_buf(&mut self.ahead).await? == 0 {
                return Ok(false);
            }
        }
        Ok(true)
    }

    /// Reads one frame, holding its size in `pool` until the permit is dropped. A clean EOF
    /// before the length is `Closed`.
    pub async fn next(
        &mut self,
        max_len: usize,
        pool: &RequestPool,
    ) -> Result<(Bytes, OwnedSemaphorePermit), FrameError> {
        self.next_with(|| (MIN_REQUEST_LEN, max_len), pool).await
    }

    /// [`Self::next`] with the bounds (smallest, largest) asked for once the frame's length has
    /// arrived: what the connection allows then (after a SASL login, not while the reader waited
    /// for it; a raw SASL token may be shorter than any request).
    pub async fn next_with(
        &mut self,
        bounds: impl FnOnce() -> (usize, usize),
        pool: &RequestPool,
    ) -> Result<(Bytes, OwnedSemaphorePermit), FrameError> {
        if !self.fill(4, READ_AHEAD).await? {
            return Err(if self.ahead.is_empty() {
                FrameError::Closed
            } else {
                std::io::Error::from(std::io::ErrorKind::UnexpectedEof).into()
            });
        }
        let (min_len, max_len) = bounds();
        let len = i32::from_be_bytes([self.ahead[0], self.ahead[1], self.ahead[2], self.ahead[3]]);
        if len < min_len as i32 {
            return Err(FrameError::TooShort(len));
        }
        if len as usize > max_len {
            return Err(FrameError::TooLarge { len: len as i64, max: max_len });
        }
        let len = len as usize;
        // The bytes are taken before the body is read: a full pool stops this connection's reads.
        let permit = pool.bytes.clone().acquire_many_owned(len as u32).await.map_err(|_| FrameError::Closed)?;
        let _ = self.ahead.split_to(4);
        if len >= READ_AHEAD {
            // A frame handed on without a copy gets an allocation of exactly its size and the
            // read-ahead (a reserve could grow the buffer past that, and the frame would keep it
            // alive); the few bytes already read ahead (under READ_AHEAD) are copied into it.
            let mut own = BytesMut::with_capacity(len + READ_AHEAD);
            own.extend_from_slice(&self.ahead);
            self.ahead = own;
        }
        if !self.fill(len, len + READ_AHEAD).await? {
            return Err(std::io::Error::from(std::io::ErrorKind::UnexpectedEof).into());
        }
        let frame = if len < READ_AHEAD {
            Bytes::copy_from_slice(&self.ahead.split_to(len))
        } else {
            self.ahead.split_to(len).freeze()
        };
        Ok((frame, permit))
    }
}

/// Encodes a response with its header into one length-prefixed frame.
pub fn encode_response(header: &RequestHeader, api_key: ApiKey, response: &ResponseKind) -> Result<Bytes, FrameError> {
    // WriteTxnMarkers v2 answers with the v1 response (KIP-1228 left it unchanged).
    let version = match api_key {
        ApiKey::WriteTxnMarkers => header.request_api_version.min(1),
        _ => header.request_api_version,
    };
    let mut buf = BytesMut::with_capacity(256);
    put_head(&mut buf, header, api_key.response_header_version(header.request_api_version.max(version)))?;
    response.encode(&mut buf, version).map_err(|e| FrameError::Encode(e.to_string()))?;
    let len = (buf.len() - 4) as i32;
    buf[..4].copy_from_slice(&len.to_be_bytes());
    Ok(buf.freeze())
}

/// The 4-byte length placeholder and the response header.
pub fn put_head<B: ByteBufMut>(buf: &mut B, header: &RequestHeader, header_version: i16) -> Result<(), FrameError> {
    buf.put_i32(0);
    let rh = ResponseHeader::default().with_correlation_id(header.correlation_id);
    rh.encode(buf, header_version).map_err(|e| FrameError::Encode(e.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    async fn read_frame<R: AsyncRead + Unpin>(
        r: &mut R,
        max_len: usize,
        pool: &RequestPool,
    ) -> Result<(Bytes, OwnedSemaphorePermit), FrameError> {
        FrameReader::new(r).next(max_len, pool).await
    }

    /// Gives `data` back at most `chunk` bytes per read, counting what it gave.
    struct Chunked {
        data: Vec<u8>,
        pos: usize,
        chunk: usize,
    }

    impl AsyncRead for Chunked {
        fn poll_read(
            mut self: std::pin::Pin<&mut Self>,
            _: &mut std::task::Context<'_>,
            buf: &mut tokio::io::ReadBuf<'_>,
        ) -> std::task::Poll<std::io::Result<()>> {
            let n = self.chunk.min(buf.remaining()).min(self.data.len() - self.pos);
            let pos = self.pos;
            buf.put_slice(&self.data[pos..pos + n]);
            self.pos += n;
            std::task::Poll::Ready(Ok(()))
        }
    }

    fn frames(sizes: &[usize]) -> Vec<u8> {
        let mut out = Vec::new();
        for (i, &n) in sizes.iter().enumerate() {
            out.extend_from_slice(&(n as i32).to_be_bytes());
            out.extend((0..n).map(|b| (b * 7 + i) as u8));
        }
        out
    }

    #[tokio::test]
    async fn frames_come_out_whole_however_the_bytes_arrive() {
        let sizes = [8, 100, READ_AHEAD - 1, READ_AHEAD, 20_000, 8, 3 * READ_AHEAD + 5, 9];
        let data = frames(&sizes);
        for chunk in [1, 3, 4, 4096, 65_536, usize::MAX] {
            let pool = RequestPool::new(1 << 20);
            let mut reader = FrameReader::new(Chunked { data: data.clone(), pos: 0, chunk });
            for (i, &n) in sizes.iter().enumerate() {
                let (frame, permit) = reader.next(1 << 20, &pool).await.unwrap();
                assert_eq!(frame.len(), n, "frame {i}, chunks of {chunk}");
                assert!(frame.iter().enumerate().all(|(b, &v)| v == (b * 7 + i) as u8), "frame {i}, chunks of {chunk}");
                drop(permit);
            }
            assert!(matches!(reader.next(1 << 20, &pool).await, Err(FrameError::Closed)));
            assert_eq!(pool.available(), 1 << 20);
        }
    }

    #[tokio::test]
    async fn reads_ahead_at_most_read_ahead_bytes() {
        let data = frames(&[8; 10_000]);
        let pool = RequestPool::new(1 << 20);
        let mut reader = FrameReader::new(Chunked { data, pos: 0, chunk: usize::MAX });
        let _frame = reader.next(1 << 20, &pool).await.unwrap();
        assert!(reader.rd.pos <= 12 + READ_AHEAD, "read {} bytes for a 12-byte frame", reader.rd.pos);
        assert!(reader.rd.pos > 12, "the next frames were read with the first");
    }

    #[tokio::test]
    async fn a_large_frame_shares_its_allocation_with_at_most_read_ahead_bytes() {
        // The first frame is answered (dropped) before the second is read: growing the buffer
        // would reuse the first one's allocation, four times the second frame's size.
        let data = frames(&[30_000, 9_000, 8]);
        let pool = RequestPool::new(1 << 20);
        let mut reader = FrameReader::new(Chunked { data, pos: 0, chunk: 4096 });
        drop(reader.next(1 << 20, &pool).await.unwrap());
        let (second, _permit) = reader.next(1 << 20, &pool).await.unwrap();
        assert_eq!(second.len(), 9_000);
        // What is left of the second frame's allocation is the read-ahead buffer's capacity now.
        assert!(reader.ahead.capacity() <= READ_AHEAD, "{} bytes beside the frame", reader.ahead.capacity());
    }

    #[tokio::test]
    async fn a_truncated_length_is_an_unexpected_eof() {
        let pool = RequestPool::new(1024);
        let mut half: &[u8] = &[0, 0];
        assert!(matches!(read_frame(&mut half, 1024, &pool).await, Err(FrameError::Io(_))));
    }

    #[tokio::test]
    async fn refuses_short_and_huge_lengths_before_allocating() {
        let pool = RequestPool::new(1 << 30);
        let mut short: &[u8] = &[0, 0, 0, 2, 1, 2];
        assert!(matches!(read_frame(&mut short, 1024, &pool).await, Err(FrameError::TooShort(2))));
        let mut huge: &[u8] = &[0x7f, 0xff, 0xff, 0xff];
        assert!(matches!(read_frame(&mut huge, 100 << 20, &pool).await, Err(FrameError::TooLarge { .. })));
        let mut neg: &[u8] = &[0xff, 0xff, 0xff, 0xff];
        assert!(read_frame(&mut neg, 1024, &pool).await.is_err());
        let mut eof: &[u8] = &[];
        assert!(matches!(read_frame(&mut eof, 1024, &pool).await, Err(FrameError::Closed)));
        let mut truncated: &[u8] = &[0, 0, 0, 20, 1, 2, 3];
        assert!(matches!(read_frame(&mut truncated, 1024, &pool).await, Err(FrameError::Io(_))));
        assert_eq!(pool.available(), 1 << 30, "a failed read gives its bytes back");
    }

    #[tokio::test]
    async fn reads_a_whole_frame() {
        let pool = RequestPool::new(1024);
        let mut ok: &[u8] = &[0, 0, 0, 8, 0, 18, 0, 3, 0, 0, 0, 7];
        let (frame, permit) = read_frame(&mut ok, 1024, &pool).await.unwrap();
        assert_eq!(frame.len(), 8);
        assert_eq!(pool.available(), 1016);
        drop(permit);
        assert_eq!(pool.available(), 1024);
    }

    #[tokio::test]
    async fn queued_max_request_bytes_makes_the_next_frame_wait() {
        let pool = RequestPool::new(16);
        let mut first: &[u8] = &[0, 0, 0, 12, 0, 18, 0, 3, 0, 0, 0, 7, 0, 0, 0, 0];
        let (_, held) = read_frame(&mut first, 1024, &pool).await.unwrap();
        let mut second: &[u8] = &[0, 0, 0, 8, 0, 18, 0, 3, 0, 0, 0, 8];
        let waiting = tokio::time::timeout(std::time::Duration::from_millis(50), read_frame(&mut second, 1024, &pool));
        assert!(waiting.await.is_err(), "the pool is exhausted: the read must wait");
        drop(held);
        let mut second: &[u8] = &[0, 0, 0, 8, 0, 18, 0, 3, 0, 0, 0, 8];
        assert!(read_frame(&mut second, 1024, &pool).await.is_ok());
    }
}
