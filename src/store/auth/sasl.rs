//! One connection's SASL authentication (KIP-43, KIP-152) as Apache Kafka's
//! SaslServerAuthenticator runs it: ApiVersions and then one SaslHandshake naming an enabled
//! mechanism; SaslAuthenticate exchanges (one for PLAIN, two for SCRAM); any other request
//! before the exchange succeeds closes the connection; a failure is answered with
//! SASL_AUTHENTICATION_FAILED and closes it. Pure: the caller gives the users' passwords and
//! credentials, and the server nonce for SCRAM.

use std::time::{Duration, Instant};

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
    /// KIP-368: a re-authentication named another mechanism than the session's. Kafka answers
    /// the handshake and fails the SaslAuthenticate that follows, without an answer.
    ReauthBadMechanism(String),
}

/// What the connection does with a request's API key.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Gate {
    Serve,
    /// Kafka: "Unexpected Kafka request of type X during SASL handshake": the connection closes.
    Close,
    /// KIP-368: the session outlived `connections_max_reauth_ms` without a re-authentication;
    /// Kafka closes the connection without serving the request (expired-connections-killed).
    Expired,
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
    /// A re-authentication with another mechanism: the connection closes without an answer.
    #[error("{0}")]
    Unanswered(String),
}

impl SaslError {
    pub fn code(&self) -> i16 {
        match self {
            SaslError::UnsupportedMechanism(_) => ResponseError::UnsupportedSaslMechanism.code(),
            SaslError::IllegalState(..) => ResponseError::IllegalSaslState.code(),
            SaslError::Failed(_) | SaslError::Unanswered(_) => ResponseError::SaslAuthenticationFailed.code(),
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
    /// KIP-368's `session_lifetime_ms` (0: no limit, or the exchange is not complete).
    pub session_lifetime_ms: i64,
    /// Whether the completed exchange was a re-authentication.
    pub reauthenticated: bool,
}

impl SaslState {
    fn name(&self) -> &'static str {
        match self {
            SaslState::Handshake => "HANDSHAKE",
            SaslState::Authenticate(_) | SaslState::ScramFinal(_) => "AUTHENTICATE",
            SaslState::ReauthBadMechanism(_) => "REAUTH_BAD_MECHANISM",
            SaslState::Authenticated(_) => "COMPLETE",
        }
    }

    /// Whether a request may be served in this state (ApiVersions is key 18, SaslHandshake 17,
    /// SaslAuthenticate 36).
    fn gate(&self, api_key: i16) -> Gate {
        match (self, api_key) {
            (SaslState::Authenticated(_), _) => Gate::Serve,
            (SaslState::Handshake, API_VERSIONS | SASL_HANDSHAKE) => Gate::Serve,
            (
                SaslState::Authenticate(_) | SaslState::ScramFinal(_) | SaslState::ReauthBadMechanism(_),
                SASL_AUTHENTICATE,
            ) => Gate::Serve,
            _ => Gate::Close,
        }
    }
}

const SASL_HANDSHAKE: i16 = 17;
const API_VERSIONS: i16 = 18;
const SASL_AUTHENTICATE: i16 = 36;

/// One connection's SASL session: the exchange, and once it succeeded KIP-368's session
/// lifetime and re-authentications (the same mechanism, the same principal).
#[derive(Debug, Clone)]
pub struct SaslSession {
    state: SaslState,
    /// The mechanism of the exchange under way or of the last completed one.
    mechanism: String,
    /// During a re-authentication: the session's principal, which must not change.
    previous: Option<Principal>,
    /// KIP-368: the client sent SaslAuthenticate v1 or later, so it knows `session_lifetime_ms`
    /// and re-authenticates with a SaslHandshake on the open connection.
    client_reauthenticates: bool,
    /// The handshake was v0: the exchange's tokens come as raw frames, not in SaslAuthenticate.
    raw_tokens: bool,
    /// When the session ends; None without `connections_max_reauth_ms`.
    expires: Option<Instant>,
    /// `connections_max_reauth_ms` (zero: sessions do not end).
    max_reauth: Duration,
}

impl SaslSession {
    pub fn new(max_reauth: Duration) -> SaslSession {
        SaslSession {
            state: SaslState::Handshake,
            mechanism: String::new(),
            previous: None,
            client_reauthenticates: false,
            raw_tokens: false,
            expires: None,
            max_reauth,
        }
    }

    pub fn state(&self) -> &SaslState {
        &self.state
    }

    /// What to do with a request with `api_key` arriving at `now`.
    pub fn gate(&mut self, api_key: i16, now: Instant) -> Gate {
        let SaslState::Authenticated(principal) = &self.state else { return self.state.gate(api_key) };
        if api_key == SASL_HANDSHAKE && self.client_reauthenticates {
            // KIP-368: a SaslHandshake on an authenticated connection begins a re-authentication
            // (even after the session expired: it is how the client renews it).
            self.previous = Some(principal.clone());
            self.state = SaslState::Handshake;
            return Gate::Serve;
        }
        match self.expires {
            Some(end) if now >= end => Gate::Expired,
            _ => Gate::Serve,
        }
    }

    /// SaslHandshake v0 was answered: the client sends the tokens of the exchange as raw frames
    /// (size-prefixed, no request header) and reads the server's the same way (Kafka's
    /// SaslServerAuthenticator without SaslAuthenticate headers).
    pub fn use_raw_tokens(&mut self) {
        // KIP-368: a re-authentication is always SaslAuthenticate framed (a v0 handshake of an
        // authenticated connection does not switch it to raw frames).
        if self.previous.is_none() {
            self.raw_tokens = true;
        }
    }

    /// The next frame is a raw token of the exchange, not a Kafka request.
    pub fn expects_raw_token(&self) -> bool {
        self.raw_tokens && matches!(self.state, SaslState::Authenticate(_) | SaslState::ScramFinal(_))
    }

    /// SaslHandshake naming `mechanism`, `enabled` being the listener's mechanisms.
    pub fn handshake(&mut self, mechanism: &str, enabled: &[String]) -> Result<(), SaslError> {
        if !matches!(self.state, SaslState::Handshake) {
            return Err(SaslError::IllegalState("SaslHandshake", self.state.name()));
        }
        if !enabled.iter().any(|m| m == mechanism) {
            return Err(SaslError::UnsupportedMechanism(mechanism.to_string()));
        }
        if self.previous.is_some() && mechanism != self.mechanism {
            // KIP-368: a session keeps its mechanism.
            let why = format!(
                "SASL mechanism '{mechanism}' requested by client is not supported for re-authentication of mechanism '{}'",
                self.mechanism
            );
            self.state = SaslState::ReauthBadMechanism(why);
            return Ok(());
        }
        self.mechanism = mechanism.to_string();
        self.state = SaslState::Authenticate(mechanism.to_string());
        Ok(())
    }

    /// One SaslAuthenticate of `version` with `bytes`, at `now`.
    pub fn authenticate(
        &mut self,
        bytes: &[u8],
        version: i16,
        secrets: &Secrets<'_>,
        now: Instant,
    ) -> Result<Challenge, SaslError> {
        if version > 0 {
            self.client_reauthenticates = true;
        }
        let (out, principal) = match std::mem::replace(&mut self.state, SaslState::Handshake) {
            SaslState::Authenticate(m) if m == PLAIN => {
                (Vec::new(), Principal::user(&plain::authenticate_owned(bytes, secrets.plain_password)?))
            }
            SaslState::Authenticate(m) => {
                let mechanism = Mechanism::from_name(&m).ok_or(SaslError::UnsupportedMechanism(m))?;
                let user = scram::client_first_user(bytes)?;
                let credential = (secrets.scram_credential)(&user, mechanism);
                let first = scram::server_first(mechanism, bytes, credential, &secrets.nonce)?;
                let out = first.message.clone().into_bytes();
                self.state = SaslState::ScramFinal(Box::new(first));
                return Ok(Challenge {
                    bytes: out,
                    authenticated: None,
                    session_lifetime_ms: 0,
                    reauthenticated: false,
                });
            }
            SaslState::ScramFinal(first) => (first.client_final(bytes)?.into_bytes(), Principal::user(&first.user)),
            SaslState::ReauthBadMechanism(why) => return Err(SaslError::Unanswered(why)),
            other => {
                let name = other.name();
                self.state = other;
                return Err(SaslError::IllegalState("SaslAuthenticate", name));
            }
        };
        let reauthenticated = match self.previous.take() {
            Some(before) if before != principal => {
                // KIP-368: a re-authentication must not change who the connection is.
                return Err(SaslError::Failed(format!(
                    "Cannot change principals during re-authentication from User.{}: User.{}",
                    before.name, principal.name
                )));
            }
            Some(_) => true,
            None => false,
        };
        let lifetime = self.max_reauth;
        self.expires = (!lifetime.is_zero()).then(|| now + lifetime);
        self.state = SaslState::Authenticated(principal.clone());
        Ok(Challenge {
            bytes: out,
            authenticated: Some(principal),
            session_lifetime_ms: i64::try_from(lifetime.as_millis()).unwrap_or(i64::MAX),
            reauthenticated,
        })
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

    fn session() -> SaslSession {
        SaslSession::new(Duration::ZERO)
    }

    fn plain_login(s: &mut SaslSession, user: &str, password: &str, now: Instant) -> Result<Challenge, SaslError> {
        s.handshake("PLAIN", &enabled())?;
        s.authenticate(format!("\0{user}\0{password}").as_bytes(), 2, &secrets(), now)
    }

    #[test]
    fn raw_tokens_follow_a_v0_handshake_until_the_exchange_ends() {
        let mut s = session();
        s.handshake("PLAIN", &enabled()).unwrap();
        assert!(!s.expects_raw_token(), "after a v1 handshake the tokens come in SaslAuthenticate");
        let mut s = session();
        s.handshake("SCRAM-SHA-512", &enabled()).unwrap();
        s.use_raw_tokens();
        assert!(s.expects_raw_token());
        let first = b"n,,n=admin,r=clientnonce";
        s.authenticate(first, 0, &secrets(), Instant::now()).unwrap();
        assert!(s.expects_raw_token(), "SCRAM's client-final is a raw token too");
        let bad_final = b"c=biws,r=clientnonceservernonce,p=AAAA";
        assert!(s.authenticate(bad_final, 0, &secrets(), Instant::now()).is_err());
        assert!(!s.expects_raw_token(), "a failed exchange expects nothing more");
    }

    #[test]
    fn a_reauthentication_never_takes_raw_tokens() {
        let now = Instant::now();
        let mut s = SaslSession::new(Duration::from_secs(60));
        plain_login(&mut s, "alice", "alice-secret", now).unwrap();
        assert_eq!(s.gate(SASL_HANDSHAKE, now), Gate::Serve);
        s.handshake("PLAIN", &enabled()).unwrap();
        s.use_raw_tokens();
        assert!(!s.expects_raw_token());
    }

    #[test]
    fn only_api_versions_and_the_handshake_come_before_authentication() {
        let now = Instant::now();
        let mut s = session();
        assert_eq!(
            (s.gate(18, now), s.gate(17, now), s.gate(36, now), s.gate(0, now), s.gate(3, now)),
            (Gate::Serve, Gate::Serve, Gate::Close, Gate::Close, Gate::Close)
        );
        s.handshake("PLAIN", &enabled()).unwrap();
        assert_eq!((s.gate(36, now), s.gate(18, now), s.gate(0, now)), (Gate::Serve, Gate::Close, Gate::Close));
        s.authenticate(b"\0alice\0alice-secret", 2, &secrets(), now).unwrap();
        assert_eq!(s.gate(0, now), Gate::Serve);
    }

    #[test]
    fn a_mechanism_the_listener_does_not_enable_is_unsupported() {
        let mut s = session();
        let e = s.handshake("GSSAPI", &enabled()).unwrap_err();
        assert_eq!(e.code(), ResponseError::UnsupportedSaslMechanism.code());
        assert!(matches!(s.state(), SaslState::Handshake));
    }

    #[test]
    fn plain_authenticates_in_one_exchange() {
        let mut s = session();
        let c = plain_login(&mut s, "alice", "alice-secret", Instant::now()).unwrap();
        assert_eq!((c.authenticated, c.session_lifetime_ms), (Some(Principal::user("alice")), 0));
        assert!(matches!(s.state(), SaslState::Authenticated(_)));
    }

    #[test]
    fn a_wrong_plain_password_is_sasl_authentication_failed() {
        let mut s = session();
        let e = plain_login(&mut s, "alice", "nope", Instant::now()).unwrap_err();
        assert_eq!((e.code(), e.to_string()), (58, "Authentication failed: Invalid username or password".into()));
    }

    #[test]
    fn scram_authenticates_in_two_exchanges() {
        let now = Instant::now();
        let mut s = session();
        s.handshake("SCRAM-SHA-512", &enabled()).unwrap();
        let first = s.authenticate(b"n,,n=admin,r=clientnonce", 2, &secrets(), now).unwrap();
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
        let done = s.authenticate(last.as_bytes(), 2, &secrets(), now).unwrap();
        assert_eq!(done.authenticated, Some(Principal::user("admin")));
        assert!(done.bytes.starts_with(b"v="));
    }

    #[test]
    fn a_second_handshake_or_an_authenticate_before_one_is_illegal_sasl_state() {
        let now = Instant::now();
        let mut s = session();
        assert_eq!(
            s.authenticate(b"x", 2, &secrets(), now).unwrap_err().code(),
            ResponseError::IllegalSaslState.code()
        );
        s.handshake("PLAIN", &enabled()).unwrap();
        assert_eq!(s.handshake("PLAIN", &enabled()).unwrap_err().code(), ResponseError::IllegalSaslState.code());
    }

    #[test]
    fn kip368_the_session_lifetime_is_connections_max_reauth_ms() {
        let now = Instant::now();
        let mut s = SaslSession::new(Duration::from_millis(60_000));
        let c = plain_login(&mut s, "alice", "alice-secret", now).unwrap();
        assert_eq!(c.session_lifetime_ms, 60_000);
        assert_eq!(s.gate(0, now + Duration::from_millis(59_999)), Gate::Serve);
    }

    #[test]
    fn kip368_a_request_after_the_session_expired_closes_the_connection() {
        let now = Instant::now();
        let mut s = SaslSession::new(Duration::from_millis(1_000));
        plain_login(&mut s, "alice", "alice-secret", now).unwrap();
        assert_eq!(s.gate(0, now + Duration::from_millis(1_000)), Gate::Expired);
        // Without connections_max_reauth_ms a session does not end.
        let mut s = session();
        plain_login(&mut s, "alice", "alice-secret", now).unwrap();
        assert_eq!(s.gate(0, now + Duration::from_secs(86_400 * 365)), Gate::Serve);
    }

    #[test]
    fn kip368_a_handshake_on_an_authenticated_connection_reauthenticates_and_renews_the_session() {
        let now = Instant::now();
        let mut s = SaslSession::new(Duration::from_millis(1_000));
        plain_login(&mut s, "alice", "alice-secret", now).unwrap();
        let later = now + Duration::from_millis(1_500);
        assert_eq!(s.gate(17, later), Gate::Serve);
        // During it, nothing but the exchange.
        assert_eq!(s.gate(0, later), Gate::Close);
        let c = plain_login(&mut s, "alice", "alice-secret", later).unwrap();
        assert!(c.reauthenticated);
        assert_eq!(s.gate(0, later + Duration::from_millis(999)), Gate::Serve);
    }

    #[test]
    fn kip368_a_client_that_sent_only_authenticate_v0_cannot_reauthenticate() {
        let now = Instant::now();
        let mut s = SaslSession::new(Duration::from_millis(1_000));
        s.handshake("PLAIN", &enabled()).unwrap();
        s.authenticate(b"\0alice\0alice-secret", 0, &secrets(), now).unwrap();
        // Its SaslHandshake reaches the handshake, which answers ILLEGAL_SASL_STATE, as Kafka's
        // request handler does; its session still ends.
        assert_eq!(s.gate(17, now), Gate::Serve);
        assert_eq!(s.handshake("PLAIN", &enabled()).unwrap_err().code(), ResponseError::IllegalSaslState.code());
        assert_eq!(s.gate(3, now + Duration::from_secs(1)), Gate::Expired);
    }

    #[test]
    fn kip368_a_reauthentication_cannot_change_the_principal() {
        let now = Instant::now();
        let mut s = session();
        plain_login(&mut s, "alice", "alice-secret", now).unwrap();
        assert_eq!(s.gate(17, now), Gate::Serve);
        s.handshake("SCRAM-SHA-512", &enabled()).unwrap();
        // Another mechanism: the SaslAuthenticate fails without an answer.
        let e = s.authenticate(b"n,,n=admin,r=x", 2, &secrets(), now).unwrap_err();
        assert!(matches!(e, SaslError::Unanswered(_)), "{e:?}");
        let mut s = session();
        let secrets = Secrets {
            plain_password: &|_| Some("pw".to_string()),
            scram_credential: &|_, _| None,
            nonce: String::new(),
        };
        s.handshake("PLAIN", &enabled()).unwrap();
        s.authenticate(b"\0alice\0pw", 2, &secrets, now).unwrap();
        s.gate(17, now);
        s.handshake("PLAIN", &enabled()).unwrap();
        let e = s.authenticate(b"\0bob\0pw", 2, &secrets, now).unwrap_err();
        assert_eq!(
            (e.code(), e.to_string()),
            (58, "Cannot change principals during re-authentication from User.alice: User.bob".into())
        );
    }
}
