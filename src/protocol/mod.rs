//! Wire side: frames, advertised versions, the connection actor, the per-connection session,
//! dispatch and one handler per API.

pub mod authorizer;
pub mod connection;
pub mod dispatch;
pub mod fetch_session;
pub mod frame;
pub mod handlers;
pub mod listener;
pub mod outgoing;
pub mod peer_frame;
pub mod peer_link;
pub mod peer_security;
pub mod response_budget;
pub mod session;
pub mod tls;
pub mod txn_markers_codec;
pub mod versions;

use kafka_protocol::protocol::StrBytes;

pub use dispatch::{decode, decode_for, dispatch, Answer, Decoded, Pending, Request, RequestError};
pub use session::Session;

pub fn str_bytes(s: &str) -> StrBytes {
    StrBytes::from_string(s.to_string())
}
