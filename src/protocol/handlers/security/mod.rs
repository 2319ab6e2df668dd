//! Security: SASL authentication (SaslHandshake, SaslAuthenticate) and the ACLs (CreateAcls,
//! DescribeAcls, DeleteAcls). The SASL ones are answered by the connection itself, in order,
//! before the next request is read (Kafka's authenticator runs below its request handlers): the
//! exchange decides whether the next request may be served at all.

pub mod create_acls;
pub mod delete_acls;
pub mod describe_acls;
pub mod sasl_authenticate;
pub mod sasl_handshake;

use crate::error_code::ResponseError;
use crate::protocol::Session;

/// Why an ACL API is refused, as Kafka answers: SECURITY_DISABLED without an authorizer
/// ("No Authorizer is configured."), CLUSTER_AUTHORIZATION_FAILED without `operation` on the
/// cluster.
fn acl_error(s: &Session, operation: i8) -> Option<(i16, String)> {
    if s.authorizer.is_none() {
        return Some((ResponseError::SecurityDisabled.code(), "No Authorizer is configured.".into()));
    }
    if !s.authorized_cluster(operation) {
        let why = "Cluster authorization failed.".to_string();
        return Some((ResponseError::ClusterAuthorizationFailed.code(), why));
    }
    None
}

/// What the connection does after a SASL answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AfterSasl {
    GoOn,
    /// KIP-368: a re-authentication completed (counted in the listener's metrics).
    Reauthenticated,
    /// Closes the connection without sending the answer.
    CloseUnanswered,
    /// Kafka closes the connection once a failed exchange's answer is sent (after
    /// `connection_failed_authentication_delay_ms` for a failed authentication).
    Close {
        delayed: bool,
    },
}
