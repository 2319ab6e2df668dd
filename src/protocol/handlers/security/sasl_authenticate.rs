//! SaslAuthenticate (key 36, KIP-152): one step of the exchange the handshake chose
//! (store::auth::sasl). A failure is SASL_AUTHENTICATION_FAILED with Kafka's message, sent after
//! `connection_failed_authentication_delay_ms`, and closes the connection; on a listener without
//! SASL, or once authenticated, ILLEGAL_SASL_STATE. The answer completing the exchange carries
//! KIP-368's `session_lifetime_ms`: `connections_max_reauth_ms` (0, Kafka's default: no limit).

use std::time::Instant;

use bytes::Bytes;
use kafka_protocol::messages::{SaslAuthenticateRequest, SaslAuthenticateResponse};

use super::AfterSasl;
use crate::error_code::ResponseError;
use crate::protocol::str_bytes;
use crate::store::auth::sasl::{SaslError, SaslSession, Secrets};

/// `state`: the connection's exchange, None on a listener without SASL (it holds the principal
/// once a step completes the exchange).
pub fn handle(
    state: &mut Option<SaslSession>,
    secrets: &Secrets<'_>,
    req: &SaslAuthenticateRequest,
    version: i16,
    now: Instant,
) -> (SaslAuthenticateResponse, AfterSasl) {
    let mut resp = SaslAuthenticateResponse::default();
    let Some(state) = state else {
        resp.error_code = ResponseError::IllegalSaslState.code();
        resp.error_message = Some(str_bytes("SaslAuthenticate on a listener without SASL"));
        return (resp, AfterSasl::GoOn);
    };
    match state.authenticate(&req.auth_bytes, version, secrets, now) {
        Ok(challenge) => {
            resp.auth_bytes = Bytes::from(challenge.bytes);
            resp.session_lifetime_ms = challenge.session_lifetime_ms;
            let after = if challenge.reauthenticated { AfterSasl::Reauthenticated } else { AfterSasl::GoOn };
            (resp, after)
        }
        Err(SaslError::Unanswered(why)) => {
            // KIP-368: Kafka closes without answering a re-authentication with another mechanism.
            tracing::info!("SASL re-authentication failed: {why}");
            (resp, AfterSasl::CloseUnanswered)
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
