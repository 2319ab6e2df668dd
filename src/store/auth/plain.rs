//! SASL/PLAIN (RFC 4616) as Apache Kafka's PlainSaslServer checks it: one message
//! `[authzid] NUL authcid NUL passwd`, the password compared with the user's from the
//! configuration (`sasl_plain_users`). Pure.

use thiserror::Error;

/// Kafka's messages (PlainSaslServer), answered with SASL_AUTHENTICATION_FAILED.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum PlainError {
    #[error("Invalid SASL/PLAIN response: expected 3 tokens, got {0}")]
    Tokens(usize),
    #[error("Authentication failed: username not specified")]
    NoUser,
    #[error("Authentication failed: password not specified")]
    NoPassword,
    #[error("Authentication failed: Client requested an authorization id that is different from username")]
    AuthorizationId,
    #[error("Authentication failed: Invalid username or password")]
    Invalid,
}

/// The user a PLAIN message authenticates, `password_of` giving a user's configured password.
pub fn authenticate<'a>(message: &[u8], password_of: impl Fn(&str) -> Option<&'a str>) -> Result<String, PlainError> {
    let parts: Vec<&[u8]> = message.split(|b| *b == 0).collect();
    if parts.len() != 3 {
        return Err(PlainError::Tokens(parts.len()));
    }
    let text = |b: &[u8]| String::from_utf8(b.to_vec()).map_err(|_| PlainError::Invalid);
    let (authzid, user, password) = (text(parts[0])?, text(parts[1])?, parts[2]);
    if user.is_empty() {
        return Err(PlainError::NoUser);
    }
    if password.is_empty() {
        return Err(PlainError::NoPassword);
    }
    if !authzid.is_empty() && authzid != user {
        return Err(PlainError::AuthorizationId);
    }
    match password_of(&user) {
        // Compared in constant time: the time does not tell how much of a guess was right.
        Some(expected) if super::constant_time_eq(expected.as_bytes(), password) => Ok(user),
        _ => Err(PlainError::Invalid),
    }
}

/// `authenticate` with passwords given as owned strings.
pub fn authenticate_owned(message: &[u8], password_of: &dyn Fn(&str) -> Option<String>) -> Result<String, PlainError> {
    let parts: Vec<&[u8]> = message.split(|b| *b == 0).collect();
    let user = parts.get(1).and_then(|u| std::str::from_utf8(u).ok()).unwrap_or("");
    let password = password_of(user);
    authenticate(message, |_| password.as_deref())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn users(u: &str) -> Option<&'static str> {
        (u == "alice").then_some("alice-secret")
    }

    #[test]
    fn the_configured_password_authenticates_its_user() {
        assert_eq!(authenticate(b"\0alice\0alice-secret", users), Ok("alice".into()));
        assert_eq!(authenticate(b"alice\0alice\0alice-secret", users), Ok("alice".into()));
    }

    #[test]
    fn a_wrong_password_or_unknown_user_is_invalid() {
        assert_eq!(authenticate(b"\0alice\0wrong", users), Err(PlainError::Invalid));
        assert_eq!(authenticate(b"\0bob\0alice-secret", users), Err(PlainError::Invalid));
    }

    #[test]
    fn malformed_messages_get_kafkas_errors() {
        assert_eq!(authenticate(b"alice-secret", users), Err(PlainError::Tokens(1)));
        assert_eq!(authenticate(b"\0\0pw", users), Err(PlainError::NoUser));
        assert_eq!(authenticate(b"\0alice\0", users), Err(PlainError::NoPassword));
        assert_eq!(authenticate(b"bob\0alice\0alice-secret", users), Err(PlainError::AuthorizationId));
        assert_eq!(authenticate(b"\0a\0b\0c", users), Err(PlainError::Tokens(4)));
    }
}
