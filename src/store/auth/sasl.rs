//! One connection's SASL authentication (KIP-43, KIP-152) as Apache Kafka's
//! SaslServerAuthenticator runs it: ApiVersions and then one SaslHandshake naming an enabled
//! mechanism; SaslAuthenticate exchanges (one for PLAIN, two for SCRAM); any other request
//! before the exchange succeeds closes the connection; a failure is answered with
//! SASL_AUTHENTICATION_FAILED and closes it. Pure: the caller gives the users' passwords and
//! credentials, and the server nonce for SCRAM.

use thiserror::Error;

use super::plain::{self, PlainError};
use super::scram::{self, Credential, Mechanism, ScramError, ServerFirst};
use super::Principal;
use crate::error_code::ResponseError;

pub const PLAIN: &str = "PLAIN";

/// Where a connection's exchange is.
#[derive(Debug, Clone)]
pub enum SaslState {
    /// Before SaslHandshake: ApiVersions and SaslHandshake only.
    Handshake,
    /// The mechanism chosen; the first SaslAuthenticate is due.
    Authenticate(String),
    /// SCRAM: the server-first message sent; the client-final is due.
    ScramFinal(Box<ServerFirst>),
    Authenticated(Principal),
}

/// What the connection does with a request's API key before it is authenticated.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Gate {
    Serve,
    /// Kafka: "Unexpected Kafka request of type X during SASL handshake": the connection closes.
    Close,
}

#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum SaslError {
    /// UNSUPPORTED_SASL_MECHANISM; the connection closes once it is answered.
    #[error("Unsupported SASL mechanism {0}")]
    UnsupportedMechanism(String),
    /// ILLEGAL_SASL_STATE.
    #[error("Unexpected {0} in SASL state {1}")]
    IllegalState(&'static str, &'static str),
    /// SASL_AUTHENTICATION_FAILED; the connection closes once it is answered.
    #[error("{0}")]
    Failed(String),
}

impl SaslError {
    pub fn code(&self) -> i16 {
        match self {
            SaslError::UnsupportedMechanism(_) => ResponseError::UnsupportedSaslMechanism.code(),
            SaslError::IllegalState(..) => ResponseError::IllegalSaslState.code(),
            SaslError::Failed(_) => ResponseError::SaslAuthenticationFailed.code(),
        }
    }
}

impl From<PlainError> for SaslError {
    fn from(e: PlainError) -> Self {
        SaslError::Failed(e.to_string())
    }
}

impl From<ScramError> for SaslError {
    fn from(e: ScramError) -> Self {
        SaslError::Failed(e.to_string())
    }
}

/// What the exchange needs from the broker.
pub struct Secrets<'a> {
    /// The PLAIN password of a user (`sasl_plain_users`).
    pub plain_password: &'a dyn Fn(&str) -> Option<String>,
    /// The SCRAM credential of a user for a mechanism.
    pub scram_credential: &'a dyn Fn(&str, Mechanism) -> Option<Credential>,
    /// Fresh for each exchange: SCRAM's printable server nonce.
    pub nonce: String,
}

/// The answer of a SaslAuthenticate that did not fail.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Challenge {
    pub bytes: Vec<u8>,
    /// Set when this answer completes the exchange.
    pub authenticated: Option<Principal>,
}

impl SaslState {
    fn name(&self) -> &'static str {
        match self {
            SaslState::Handshake => "HANDSHAKE",
            SaslState::Authenticate(_) => "AUTHENTICATE",
            SaslState::ScramFinal(_) => "AUTHENTICATE",
            SaslState::Authenticated(_) => "COMPLETE",
        }
    }

    /// Whether a request may be served in this state (ApiVersions is key 18, SaslHandshake 17,
    /// SaslAuthenticate 36).
    pub fn gate(&self, api_key: i16) -> Gate {
        match (self, api_key) {
            (SaslState::Authenticated(_), _) => Gate::Serve,
            (SaslState::Handshake, 18 | 17) => Gate::Serve,
            (SaslState::Authenticate(_) | SaslState::ScramFinal(_), 36) => Gate::Serve,
            _ => Gate::Close,
        }
    }

    /// SaslHandshake naming `mechanism`, `enabled` being the listener's mechanisms.
    pub fn handshake(&mut self, mechanism: &str, enabled: &[String]) -> Result<(), SaslError> {
        if !matches!(self, SaslState::Handshake) {
            return Err(SaslError::IllegalState("SaslHandshake", self.name()));
        }
        if !enabled.iter().any(|m| m == mechanism) {
            return Err(SaslError::UnsupportedMechanism(mechanism.to_string()));
        }
        *self = SaslState::Authenticate(mechanism.to_string());
        Ok(())
    }

    /// One SaslAuthenticate's bytes.
    pub fn authenticate(&mut self, bytes: &[u8], secrets: &Secrets<'_>) -> Result<Challenge, SaslError> {
        match std::mem::replace(self, SaslState::Handshake) {
            SaslState::Authenticate(m) if m == PLAIN => {
                let user = plain::authenticate_owned(bytes, secrets.plain_password)?;
                let principal = Principal::user(&user);
                *self = SaslState::Authenticated(principal.clone());
                Ok(Challenge { bytes: Vec::new(), authenticated: Some(principal) })
            }
            SaslState::Authenticate(m) => {
                let mechanism = Mechanism::from_name(&m).ok_or(SaslError::UnsupportedMechanism(m))?;
                let user = scram::client_first_user(bytes)?;
                let credential = (secrets.scram_credential)(&user, mechanism);
                let first = scram::server_first(mechanism, bytes, credential, &secrets.nonce)?;
                let out = first.message.clone().into_bytes();
                *self = SaslState::ScramFinal(Box::new(first));
                Ok(Challenge { bytes: out, authenticated: None })
            }
            SaslState::ScramFinal(first) => {
                let last = first.client_final(bytes)?;
                let principal = Principal::user(&first.user);
                *self = SaslState::Authenticated(principal.clone());
                Ok(Challenge { bytes: last.into_bytes(), authenticated: Some(principal) })
            }
            other => {
                let name = other.name();
                *self = other;
                Err(SaslError::IllegalState("SaslAuthenticate", name))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn secrets() -> Secrets<'static> {
        Secrets {
            plain_password: &|u| (u == "alice").then(|| "alice-secret".to_string()),
            scram_credential: &|u, m| {
                (u == "admin").then(|| Credential::from_password(m, "admin-secret", b"salt-of-admin", 4096))
            },
            nonce: "servernonce".into(),
        }
    }

    fn enabled() -> Vec<String> {
        vec!["PLAIN".into(), "SCRAM-SHA-512".into()]
    }

    #[test]
    fn only_api_versions_and_the_handshake_come_before_authentication() {
        let s = SaslState::Handshake;
        assert_eq!(
            (s.gate(18), s.gate(17), s.gate(36), s.gate(0), s.gate(3)),
            (Gate::Serve, Gate::Serve, Gate::Close, Gate::Close, Gate::Close)
        );
        let s = SaslState::Authenticate("PLAIN".into());
        assert_eq!((s.gate(36), s.gate(18), s.gate(0)), (Gate::Serve, Gate::Close, Gate::Close));
        assert_eq!(SaslState::Authenticated(Principal::user("a")).gate(0), Gate::Serve);
    }

    #[test]
    fn a_mechanism_the_listener_does_not_enable_is_unsupported() {
        let mut s = SaslState::Handshake;
        let e = s.handshake("GSSAPI", &enabled()).unwrap_err();
        assert_eq!(e.code(), ResponseError::UnsupportedSaslMechanism.code());
        assert!(matches!(s, SaslState::Handshake));
    }

    #[test]
    fn plain_authenticates_in_one_exchange() {
        let mut s = SaslState::Handshake;
        s.handshake("PLAIN", &enabled()).unwrap();
        let c = s.authenticate(b"\0alice\0alice-secret", &secrets()).unwrap();
        assert_eq!(c.authenticated, Some(Principal::user("alice")));
        assert!(matches!(s, SaslState::Authenticated(_)));
    }

    #[test]
    fn a_wrong_plain_password_is_sasl_authentication_failed() {
        let mut s = SaslState::Handshake;
        s.handshake("PLAIN", &enabled()).unwrap();
        let e = s.authenticate(b"\0alice\0nope", &secrets()).unwrap_err();
        assert_eq!((e.code(), e.to_string()), (58, "Authentication failed: Invalid username or password".into()));
    }

    #[test]
    fn scram_authenticates_in_two_exchanges() {
        let mut s = SaslState::Handshake;
        s.handshake("SCRAM-SHA-512", &enabled()).unwrap();
        let first = s.authenticate(b"n,,n=admin,r=clientnonce", &secrets()).unwrap();
        let text = String::from_utf8(first.bytes).unwrap();
        assert!(text.starts_with("r=clientnonceservernonce,s="), "{text}");
        assert_eq!(first.authenticated, None);
        // The client's side of RFC 5802, with the password.
        let m = Mechanism::Sha512;
        let salted = m.salted_password(b"admin-secret", b"salt-of-admin", 4096);
        let client_key = ring::hmac::sign(&ring::hmac::Key::new(ring::hmac::HMAC_SHA512, &salted), b"Client Key");
        let stored = ring::digest::digest(&ring::digest::SHA512, client_key.as_ref());
        let without_proof = "c=biws,r=clientnonceservernonce";
        let auth = format!("n=admin,r=clientnonce,{text},{without_proof}");
        let sig = ring::hmac::sign(&ring::hmac::Key::new(ring::hmac::HMAC_SHA512, stored.as_ref()), auth.as_bytes());
        let proof: Vec<u8> = client_key.as_ref().iter().zip(sig.as_ref()).map(|(a, b)| a ^ b).collect();
        use base64::Engine;
        let last = format!("{without_proof},p={}", base64::engine::general_purpose::STANDARD.encode(proof));
        let done = s.authenticate(last.as_bytes(), &secrets()).unwrap();
        assert_eq!(done.authenticated, Some(Principal::user("admin")));
        assert!(done.bytes.starts_with(b"v="));
    }

    #[test]
    fn a_second_handshake_or_an_authenticate_before_one_is_illegal_sasl_state() {
        let mut s = SaslState::Handshake;
        assert_eq!(s.authenticate(b"x", &secrets()).unwrap_err().code(), ResponseError::IllegalSaslState.code());
        s.handshake("PLAIN", &enabled()).unwrap();
        assert_eq!(s.handshake("PLAIN", &enabled()).unwrap_err().code(), ResponseError::IllegalSaslState.code());
    }
}
