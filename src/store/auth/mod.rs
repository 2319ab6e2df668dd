//! Who a client is and what it may do: the principal a connection authenticates as
//! (`User:alice`, or `User:ANONYMOUS` where the listener authenticates nobody), the mechanisms
//! that establish it (SASL: `sasl`, the per-connection exchange, `plain`, `scram`; on TLS
//! listeners with client certificates, the certificate's subject), and Kafka's ACLs (`acl`, the
//! authorizer's decision). Pure, but for the two files on the shared disk: `credentials` (SCRAM)
//! and `acl_store` (the ACLs).

pub mod acl;
pub mod acl_store;
pub mod credentials;
pub mod plain;
pub mod sasl;
pub mod scram;

use std::fmt;

/// Whether `a` and `b` are equal, in a time that does not tell how much of them matched (a
/// password, a SCRAM proof or signature).
pub fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

/// Kafka's KafkaPrincipal: a type (always `User` here) and a name.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Principal {
    pub name: String,
}

impl Principal {
    pub fn user(name: &str) -> Principal {
        Principal { name: name.to_string() }
    }

    /// Kafka's KafkaPrincipal.ANONYMOUS: a connection nobody authenticated.
    pub fn anonymous() -> Principal {
        Principal::user("ANONYMOUS")
    }
}

impl fmt::Display for Principal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "User:{}", self.name)
    }
}
