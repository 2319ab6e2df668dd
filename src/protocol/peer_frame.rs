//! The frames a broker sends its peers and reads back (protocol::peer_link, its markers and
//! verifications; protocol::peer_security, its login): a request frame with its header, and a
//! response frame read with its length checked before anything is allocated.

use bytes::{BufMut, Bytes, BytesMut};
use kafka_protocol::messages::{ApiKey, RequestHeader};
use kafka_protocol::protocol::{Encodable, StrBytes};
use tokio::io::{AsyncRead, AsyncReadExt};

use crate::actors::messages::PeerSendError;

/// A request frame: length, header (with `client_id`), body.
pub fn request_frame(
    key: ApiKey,
    version: i16,
    correlation_id: i32,
    client_id: &str,
    body: &[u8],
) -> Result<Bytes, PeerSendError> {
    let header = RequestHeader::default()
        .with_request_api_key(key as i16)
        .with_request_api_version(version)
        .with_correlation_id(correlation_id)
        .with_client_id(Some(StrBytes::from_string(client_id.to_string())));
    let mut buf = BytesMut::with_capacity(64 + body.len());
    buf.put_i32(0);
    header
        .encode(&mut buf, key.request_header_version(version))
        .map_err(|e| PeerSendError::Malformed(e.to_string()))?;
    buf.extend_from_slice(body);
    let len = i32::try_from(buf.len() - 4).map_err(|_| PeerSendError::Malformed("request too large".into()))?;
    buf[..4].copy_from_slice(&len.to_be_bytes());
    Ok(buf.freeze())
}

/// Reads one response frame (length checked before anything is allocated).
pub async fn read_response<R: AsyncRead + Unpin>(r: &mut R, max: usize) -> Result<Bytes, PeerSendError> {
    let mut len = [0u8; 4];
    r.read_exact(&mut len).await.map_err(|e| PeerSendError::Disconnected(e.to_string()))?;
    let len = i32::from_be_bytes(len);
    let size = usize::try_from(len).ok().filter(|n| (4..=max).contains(n));
    let size = size.ok_or_else(|| PeerSendError::Malformed(format!("response length {len}")))?;
    let mut buf = vec![0u8; size];
    r.read_exact(&mut buf).await.map_err(|e| PeerSendError::Disconnected(e.to_string()))?;
    Ok(Bytes::from(buf))
}
