//! What a connection needs of the listener it came in on: its security protocol, the TLS
//! acceptor of an SSL / SASL_SSL listener, and for SASL listeners the enabled mechanisms and the
//! users' secrets (store::auth).

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use base64::Engine;
use tokio_rustls::TlsAcceptor;

use crate::config::SecurityProtocol;
use crate::store::auth::credentials::ScramCredentials;

/// The SASL side of a listener.
pub struct SaslContext {
    /// `sasl_enabled_mechanisms`.
    pub mechanisms: Vec<String>,
    /// `sasl_plain_users`: user -> password.
    pub plain_users: BTreeMap<String, String>,
    pub scram: ScramCredentials,
}

pub struct ListenerContext {
    pub protocol: SecurityProtocol,
    pub tls: Option<TlsAcceptor>,
    pub sasl: Option<Arc<SaslContext>>,
    /// Kafka's `connection.failed.authentication.delay.ms`.
    pub failed_authentication_delay: Duration,
    /// Kafka's `connections.max.reauth.ms` (KIP-368; zero: SASL sessions do not end).
    pub max_reauth: Duration,
}

impl ListenerContext {
    /// A PLAINTEXT listener's.
    pub fn plaintext() -> ListenerContext {
        ListenerContext {
            protocol: SecurityProtocol::Plaintext,
            tls: None,
            sasl: None,
            failed_authentication_delay: Duration::ZERO,
            max_reauth: Duration::ZERO,
        }
    }
}

/// A fresh SCRAM server nonce: 18 random bytes, base64 (printable, no comma).
pub fn scram_nonce() -> String {
    let mut bytes = [0u8; 18];
    if ring::rand::SecureRandom::fill(&ring::rand::SystemRandom::new(), &mut bytes).is_err() {
        // No system randomness: the exchange fails on a nonce the client cannot match.
        return String::new();
    }
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

/// A fresh 16-byte salt.
pub fn random_salt() -> Vec<u8> {
    let mut bytes = vec![0u8; 16];
    let _ = ring::rand::SecureRandom::fill(&ring::rand::SystemRandom::new(), &mut bytes);
    bytes
}
