//! SaslAuthenticate (key 36, KIP-152): one step of the exchange the handshake chose
//! (store::auth::sasl). A failure is SASL_AUTHENTICATION_FAILED with Kafka's message, sent after
//! `connection_failed_authentication_delay_ms`, and closes the connection; on a listener without
//! SASL, or once authenticated, ILLEGAL_SASL_STATE. `session_lifetime_ms` is 0: kaas does not ask
//! clients to re-authenticate (KIP-368's `connections.max.reauth.ms` is off, Kafka's default).

use bytes::Bytes;
use kafka_protocol::messages::{SaslAuthenticateRequest, SaslAuthenticateResponse};

use super::AfterSasl;
use crate::error_code::ResponseError;
use crate::protocol::str_bytes;
use crate::store::auth::sasl::{SaslError, SaslState, Secrets};

/// `state`: the connection's exchange, None on a listener without SASL (it holds the principal
/// once a step completes the exchange).
pub fn handle(
    state: &mut Option<SaslState>,
    secrets: &Secrets<'_>,
    req: &SaslAuthenticateRequest,
) -> (SaslAuthenticateResponse, AfterSasl) {
    let mut resp = SaslAuthenticateResponse::default();
    let Some(state) = state else {
        resp.error_code = ResponseError::IllegalSaslState.code();
        resp.error_message = Some(str_bytes("SaslAuthenticate on a listener without SASL"));
        return (resp, AfterSasl::GoOn);
    };
    match state.authenticate(&req.auth_bytes, secrets) {
        Ok(challenge) => {
            resp.auth_bytes = Bytes::from(challenge.bytes);
            (resp, AfterSasl::GoOn)
        }
        Err(e @ SaslError::IllegalState(..)) => {
            resp.error_code = e.code();
            resp.error_message = Some(str_bytes(&e.to_string()));
            (resp, AfterSasl::GoOn)
        }
        Err(e) => {
            tracing::info!("SASL authentication failed: {e}");
            resp.error_code = e.code();
            resp.error_message = Some(str_bytes(&e.to_string()));
            (resp, AfterSasl::Close { delayed: true })
        }
    }
}
