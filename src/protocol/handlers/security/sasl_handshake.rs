//! SaslHandshake (key 17): the mechanism of the exchange (store::auth::sasl). On a listener
//! without SASL, or once authenticated, Kafka answers ILLEGAL_SASL_STATE; a mechanism the
//! listener does not enable is UNSUPPORTED_SASL_MECHANISM with the enabled ones, and the
//! connection closes. On an authenticated connection of a client that re-authenticates (KIP-368),
//! it begins a re-authentication (store::auth::sasl::SaslSession::gate). After v0 the client
//! sends the exchange's tokens as raw frames (`connection::raw_sasl_token`).

use kafka_protocol::messages::{SaslHandshakeRequest, SaslHandshakeResponse};

use super::AfterSasl;
use crate::error_code::ResponseError;
use crate::protocol::str_bytes;
use crate::store::auth::sasl::{SaslError, SaslSession};

/// `state`: the connection's exchange, None on a listener without SASL.
pub fn handle(
    state: &mut Option<SaslSession>,
    enabled: &[String],
    req: &SaslHandshakeRequest,
    version: i16,
) -> (SaslHandshakeResponse, AfterSasl) {
    let mut resp = SaslHandshakeResponse::default();
    resp.mechanisms = enabled.iter().map(|m| str_bytes(m)).collect();
    let Some(state) = state else {
        resp.error_code = ResponseError::IllegalSaslState.code();
        return (resp, AfterSasl::GoOn);
    };
    match state.handshake(req.mechanism.as_str(), enabled) {
        Ok(()) => {
            // v0: the tokens follow as raw frames (a client from before KIP-152).
            if version == 0 {
                state.use_raw_tokens();
            }
            (resp, AfterSasl::GoOn)
        }
        Err(e @ SaslError::IllegalState(..)) => {
            resp.error_code = e.code();
            (resp, AfterSasl::GoOn)
        }
        Err(e) => {
            tracing::info!("SASL handshake refused: {e}");
            resp.error_code = e.code();
            (resp, AfterSasl::Close { delayed: false })
        }
    }
}
