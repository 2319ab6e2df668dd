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

/// Reads one frame, holding its size in `pool` until the permit is dropped. A clean EOF before
/// the length is `Closed`.
pub async fn read_frame<R: AsyncRead + Unpin>(
    r: &mut R,
    max_len: usize,
    pool: &RequestPool,
) -> Result<(Bytes, OwnedSemaphorePermit), FrameError> {
    let mut len_buf = [0u8; 4];
    match r.read_exact(&mut len_buf).await {
        Ok(_) => {}
        Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => return Err(FrameError::Closed),
        Err(e) => return Err(e.into()),
    }
    let len = i32::from_be_bytes(len_buf);
    if len < MIN_REQUEST_LEN as i32 {
        return Err(FrameError::TooShort(len));
    }
    if len as usize > max_len {
        return Err(FrameError::TooLarge { len: len as i64, max: max_len });
    }
    let permit = pool.bytes.clone().acquire_many_owned(len as u32).await.map_err(|_| FrameError::Closed)?;
    // Read into the spare capacity: zero-filling a frame only to overwrite it costs a pass over
    // every byte produced.
    let mut buf = BytesMut::with_capacity(len as usize);
    while buf.len() < len as usize {
        let mut limited = (&mut *r).take((len as usize - buf.len()) as u64);
        if limited.read_buf(&mut buf).await? == 0 {
            return Err(std::io::Error::from(std::io::ErrorKind::UnexpectedEof).into());
        }
    }
    Ok((buf.freeze(), permit))
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
