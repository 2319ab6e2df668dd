//! Security: SASL authentication (SaslHandshake, SaslAuthenticate). Both are answered by the
//! connection itself, in order, before the next request is read (Kafka's authenticator runs below
//! its request handlers): the exchange decides whether the next request may be served at all.

pub mod sasl_authenticate;
pub mod sasl_handshake;

/// What the connection does after a SASL answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AfterSasl {
    GoOn,
    /// Kafka closes the connection once a failed exchange's answer is sent (after
    /// `connection_failed_authentication_delay_ms` for a failed authentication).
    Close {
        delayed: bool,
    },
}
