//! Size-prefixed frames: a 4-byte big-endian length, then that many bytes. Lengths are checked
//! before anything is allocated or decoded, so a hostile length cannot make the broker allocate.

use bytes::{BufMut, Bytes, BytesMut};
use kafka_protocol::messages::{ApiKey, RequestHeader, ResponseHeader, ResponseKind};
use kafka_protocol::protocol::Encodable;
use thiserror::Error;
use tokio::io::{AsyncRead, AsyncReadExt};

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

/// Reads one frame. A clean EOF before the length is `Closed`.
pub async fn read_frame<R: AsyncRead + Unpin>(r: &mut R, max_len: usize) -> Result<Bytes, FrameError> {
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
    let mut buf = BytesMut::zeroed(len as usize);
    r.read_exact(&mut buf).await?;
    Ok(buf.freeze())
}

/// Encodes a response with its header into one length-prefixed frame.
pub fn encode_response(header: &RequestHeader, api_key: ApiKey, response: &ResponseKind) -> Result<Bytes, FrameError> {
    // WriteTxnMarkers v2 answers with the v1 response (KIP-1228 left it unchanged).
    let version = match api_key {
        ApiKey::WriteTxnMarkers => header.request_api_version.min(1),
        _ => header.request_api_version,
    };
    let mut buf = BytesMut::with_capacity(256);
    buf.put_i32(0);
    let rh = ResponseHeader::default().with_correlation_id(header.correlation_id);
    rh.encode(&mut buf, api_key.response_header_version(header.request_api_version.max(version)))
        .map_err(|e| FrameError::Encode(e.to_string()))?;
    response.encode(&mut buf, version).map_err(|e| FrameError::Encode(e.to_string()))?;
    let len = (buf.len() - 4) as i32;
    buf[..4].copy_from_slice(&len.to_be_bytes());
    Ok(buf.freeze())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn refuses_short_and_huge_lengths_before_allocating() {
        let mut short: &[u8] = &[0, 0, 0, 2, 1, 2];
        assert!(matches!(read_frame(&mut short, 1024).await, Err(FrameError::TooShort(2))));
        let mut huge: &[u8] = &[0x7f, 0xff, 0xff, 0xff];
        assert!(matches!(read_frame(&mut huge, 100 << 20).await, Err(FrameError::TooLarge { .. })));
        let mut neg: &[u8] = &[0xff, 0xff, 0xff, 0xff];
        assert!(read_frame(&mut neg, 1024).await.is_err());
        let mut eof: &[u8] = &[];
        assert!(matches!(read_frame(&mut eof, 1024).await, Err(FrameError::Closed)));
        let mut truncated: &[u8] = &[0, 0, 0, 20, 1, 2, 3];
        assert!(matches!(read_frame(&mut truncated, 1024).await, Err(FrameError::Io(_))));
    }

    #[tokio::test]
    async fn reads_a_whole_frame() {
        let mut ok: &[u8] = &[0, 0, 0, 8, 0, 18, 0, 3, 0, 0, 0, 7];
        assert_eq!(read_frame(&mut ok, 1024).await.unwrap().len(), 8);
    }
}
