//! SCRAM-SHA-256 and SCRAM-SHA-512 (RFC 5802, RFC 7677), the server side, as Apache Kafka's
//! ScramSaslServer runs it: a client-first message (`n,,n=user,r=nonce`), the server-first
//! (`r=nonce+server nonce,s=salt,i=iterations`), the client-final (`c=biws,r=...,p=proof`)
//! checked against the stored credential, and the server-final (`v=signature`). A credential
//! holds the salt, the iterations and the two keys derived from the salted password, never the
//! password. Pure: the server nonce is given by the caller.

use base64::engine::general_purpose::STANDARD as B64;
use base64::Engine;
use ring::{digest, hmac, pbkdf2};
use serde::{Deserialize, Serialize};
use thiserror::Error;

/// Kafka's ScramMechanism: name, hash, and the iteration bounds AlterUserScramCredentials keeps
/// (4096 ..= 16384).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, PartialOrd, Ord)]
pub enum Mechanism {
    #[serde(rename = "SCRAM-SHA-256")]
    Sha256,
    #[serde(rename = "SCRAM-SHA-512")]
    Sha512,
}

pub const MIN_ITERATIONS: i32 = 4096;
pub const MAX_ITERATIONS: i32 = 16384;

impl Mechanism {
    pub fn name(self) -> &'static str {
        match self {
            Mechanism::Sha256 => "SCRAM-SHA-256",
            Mechanism::Sha512 => "SCRAM-SHA-512",
        }
    }

    pub fn from_name(name: &str) -> Option<Mechanism> {
        match name {
            "SCRAM-SHA-256" => Some(Mechanism::Sha256),
            "SCRAM-SHA-512" => Some(Mechanism::Sha512),
            _ => None,
        }
    }

    /// Kafka's ScramMechanism type ids in AlterUserScramCredentials / Describe (1, 2).
    pub fn type_id(self) -> i8 {
        match self {
            Mechanism::Sha256 => 1,
            Mechanism::Sha512 => 2,
        }
    }

    pub fn from_type_id(id: i8) -> Option<Mechanism> {
        match id {
            1 => Some(Mechanism::Sha256),
            2 => Some(Mechanism::Sha512),
            _ => None,
        }
    }

    fn hmac_alg(self) -> hmac::Algorithm {
        match self {
            Mechanism::Sha256 => hmac::HMAC_SHA256,
            Mechanism::Sha512 => hmac::HMAC_SHA512,
        }
    }

    fn digest_alg(self) -> &'static digest::Algorithm {
        match self {
            Mechanism::Sha256 => &digest::SHA256,
            Mechanism::Sha512 => &digest::SHA512,
        }
    }

    fn pbkdf2_alg(self) -> pbkdf2::Algorithm {
        match self {
            Mechanism::Sha256 => pbkdf2::PBKDF2_HMAC_SHA256,
            Mechanism::Sha512 => pbkdf2::PBKDF2_HMAC_SHA512,
        }
    }

    /// Bytes of the hash (the salted password's length).
    pub fn hash_len(self) -> usize {
        self.digest_alg().output_len()
    }

    fn hmac(self, key: &[u8], data: &[u8]) -> Vec<u8> {
        hmac::sign(&hmac::Key::new(self.hmac_alg(), key), data).as_ref().to_vec()
    }

    fn hash(self, data: &[u8]) -> Vec<u8> {
        digest::digest(self.digest_alg(), data).as_ref().to_vec()
    }

    /// Hi(password, salt, i) of RFC 5802: PBKDF2 with this hash's HMAC.
    pub fn salted_password(self, password: &[u8], salt: &[u8], iterations: u32) -> Vec<u8> {
        let mut out = vec![0; self.hash_len()];
        let rounds = std::num::NonZeroU32::new(iterations.max(1)).unwrap_or(std::num::NonZeroU32::MIN);
        pbkdf2::derive(self.pbkdf2_alg(), rounds, salt, password, &mut out);
        out
    }
}

/// What a broker keeps of a user's SCRAM password (Kafka's ScramCredential).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Credential {
    /// Base64, as Kafka's ScramCredentialUtils writes them.
    pub salt: String,
    pub stored_key: String,
    pub server_key: String,
    pub iterations: i32,
}

impl Credential {
    /// From the salted password AlterUserScramCredentials carries (the client salts it).
    pub fn from_salted_password(m: Mechanism, salt: &[u8], salted_password: &[u8], iterations: i32) -> Credential {
        let client_key = m.hmac(salted_password, b"Client Key");
        Credential {
            salt: B64.encode(salt),
            stored_key: B64.encode(m.hash(&client_key)),
            server_key: B64.encode(m.hmac(salted_password, b"Server Key")),
            iterations,
        }
    }

    /// From a password (the user created at first start from the configuration).
    pub fn from_password(m: Mechanism, password: &str, salt: &[u8], iterations: i32) -> Credential {
        let salted = m.salted_password(password.as_bytes(), salt, iterations.max(1) as u32);
        Credential::from_salted_password(m, salt, &salted, iterations)
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum ScramError {
    #[error("Invalid SCRAM client first message")]
    BadClientFirst,
    #[error("Invalid SCRAM client final message")]
    BadClientFinal,
    /// An unknown user or a wrong proof: Kafka's message, which says no more.
    #[error("Authentication failed during authentication due to invalid credentials with SASL mechanism {0}")]
    Failed(&'static str),
    #[error("Authorization id {0} is not the user name")]
    AuthorizationId(String),
    #[error("SCRAM extensions are not supported: {0}")]
    Extensions(String),
}

/// A SCRAM exchange after the client-first message: what the client-final is checked against.
#[derive(Debug, Clone)]
pub struct ServerFirst {
    pub mechanism: Mechanism,
    pub user: String,
    /// Message sent to the client.
    pub message: String,
    client_first_bare: String,
    nonce: String,
    credential: Credential,
}

/// `saslname` of RFC 5802: `=2C` is `,`, `=3D` is `=`; any other `=` is invalid.
fn unescape_name(s: &str) -> Option<String> {
    let mut out = String::with_capacity(s.len());
    let mut rest = s;
    while let Some(i) = rest.find('=') {
        out.push_str(&rest[..i]);
        match rest.get(i..i + 3) {
            Some("=2C") => out.push(','),
            Some("=3D") => out.push('='),
            _ => return None,
        }
        rest = &rest[i + 3..];
    }
    out.push_str(rest);
    Some(out)
}

/// The user name of a client-first message (to look its credential up).
pub fn client_first_user(message: &[u8]) -> Result<String, ScramError> {
    parse_client_first(message).map(|(user, _, _)| user)
}

/// (user, client nonce, client-first-bare) of `n,[a=authzid],n=user,r=nonce[,extensions]`.
fn parse_client_first(message: &[u8]) -> Result<(String, String, String), ScramError> {
    let text = std::str::from_utf8(message).map_err(|_| ScramError::BadClientFirst)?;
    // gs2 header: channel binding flag "n" or "y" (kaas offers no channel binding), authzid.
    let mut parts = text.splitn(3, ',');
    let cbind = parts.next().ok_or(ScramError::BadClientFirst)?;
    let authzid = parts.next().ok_or(ScramError::BadClientFirst)?;
    let bare = parts.next().ok_or(ScramError::BadClientFirst)?;
    if cbind != "n" && cbind != "y" {
        return Err(ScramError::BadClientFirst);
    }
    let mut fields = bare.split(',');
    let user = fields
        .next()
        .and_then(|f| f.strip_prefix("n="))
        .and_then(unescape_name)
        .filter(|u| !u.is_empty())
        .ok_or(ScramError::BadClientFirst)?;
    let nonce =
        fields.next().and_then(|f| f.strip_prefix("r=")).filter(|n| !n.is_empty()).ok_or(ScramError::BadClientFirst)?;
    let extensions: Vec<&str> = fields.collect();
    if !extensions.is_empty() {
        // Kafka's tokenauth (delegation tokens); kaas has none.
        return Err(ScramError::Extensions(extensions.join(",")));
    }
    if !authzid.is_empty() {
        let id = authzid.strip_prefix("a=").and_then(unescape_name).ok_or(ScramError::BadClientFirst)?;
        if id != user {
            return Err(ScramError::AuthorizationId(id));
        }
    }
    if !nonce.chars().all(|c| c.is_ascii_graphic() && c != ',') {
        return Err(ScramError::BadClientFirst);
    }
    Ok((user, nonce.to_string(), bare.to_string()))
}

/// Answers a client-first message. `credential`: the user's, if it has one for this mechanism
/// (an unknown user fails here, as in Kafka's ScramSaslServer); `server_nonce`: printable, fresh
/// for this exchange.
pub fn server_first(
    mechanism: Mechanism,
    client_first: &[u8],
    credential: Option<Credential>,
    server_nonce: &str,
) -> Result<ServerFirst, ScramError> {
    let (user, client_nonce, client_first_bare) = parse_client_first(client_first)?;
    let credential = credential.ok_or(ScramError::Failed(mechanism.name()))?;
    // No fresh nonce (no system randomness): no exchange that a replay could pass.
    if server_nonce.is_empty() {
        return Err(ScramError::Failed(mechanism.name()));
    }
    let nonce = format!("{client_nonce}{server_nonce}");
    let message = format!("r={nonce},s={},i={}", credential.salt, credential.iterations);
    Ok(ServerFirst { mechanism, user, message, client_first_bare, nonce, credential })
}

impl ServerFirst {
    /// Checks the client-final message; on success the server-final message (`v=...`).
    pub fn client_final(&self, message: &[u8]) -> Result<String, ScramError> {
        let failed = ScramError::Failed(self.mechanism.name());
        let text = std::str::from_utf8(message).map_err(|_| ScramError::BadClientFinal)?;
        let (without_proof, proof) = text.rsplit_once(",p=").ok_or(ScramError::BadClientFinal)?;
        let mut fields = without_proof.split(',');
        let binding = fields.next().and_then(|f| f.strip_prefix("c=")).ok_or(ScramError::BadClientFinal)?;
        let nonce = fields.next().and_then(|f| f.strip_prefix("r=")).ok_or(ScramError::BadClientFinal)?;
        // The channel binding is the gs2 header with no binding: "n,," or "y,,".
        let header = B64.decode(binding).map_err(|_| ScramError::BadClientFinal)?;
        if !(header.starts_with(b"n,") || header.starts_with(b"y,")) {
            return Err(ScramError::BadClientFinal);
        }
        if nonce != self.nonce {
            return Err(failed);
        }
        let proof = B64.decode(proof).map_err(|_| ScramError::BadClientFinal)?;
        let c = &self.credential;
        let stored_key = B64.decode(&c.stored_key).map_err(|_| failed.clone())?;
        let server_key = B64.decode(&c.server_key).map_err(|_| failed.clone())?;
        let auth_message = format!("{},{},{}", self.client_first_bare, self.message, without_proof);
        let m = self.mechanism;
        let client_signature = m.hmac(&stored_key, auth_message.as_bytes());
        if proof.len() != client_signature.len() {
            return Err(failed);
        }
        let client_key: Vec<u8> = proof.iter().zip(&client_signature).map(|(p, s)| p ^ s).collect();
        if !super::constant_time_eq(&m.hash(&client_key), &stored_key) {
            return Err(failed);
        }
        Ok(format!("v={}", B64.encode(m.hmac(&server_key, auth_message.as_bytes()))))
    }
}

/// The client side of an exchange (a broker logging in to its peers): the client-first
/// message, then the client-final from the server-first, then the server-final checked.
#[derive(Debug, Clone)]
pub struct ClientExchange {
    mechanism: Mechanism,
    client_first_bare: String,
    nonce: String,
    server_signature: Vec<u8>,
}

fn escape_name(user: &str) -> String {
    user.replace('=', "=3D").replace(',', "=2C")
}

impl ClientExchange {
    /// The client-first message for `user` with a fresh printable `nonce`.
    pub fn start(mechanism: Mechanism, user: &str, nonce: &str) -> (ClientExchange, String) {
        let bare = format!("n={},r={nonce}", escape_name(user));
        let message = format!("n,,{bare}");
        let exchange = ClientExchange {
            mechanism,
            client_first_bare: bare,
            nonce: nonce.to_string(),
            server_signature: Vec::new(),
        };
        (exchange, message)
    }

    /// The client-final message answering `server_first`, proving `password`.
    pub fn finish(&mut self, server_first: &[u8], password: &str) -> Result<String, ScramError> {
        let text = std::str::from_utf8(server_first).map_err(|_| ScramError::BadClientFinal)?;
        let mut nonce = None;
        let mut salt = None;
        let mut iterations = None;
        for field in text.split(',') {
            match field.split_at_checked(2) {
                Some(("r=", v)) => nonce = Some(v),
                Some(("s=", v)) => salt = B64.decode(v).ok(),
                Some(("i=", v)) => iterations = v.parse::<u32>().ok(),
                _ => {}
            }
        }
        let failed = ScramError::Failed(self.mechanism.name());
        let (Some(nonce), Some(salt), Some(iterations)) = (nonce, salt, iterations) else { return Err(failed) };
        // The server's nonce must extend ours, and the iterations stay within Kafka's bounds.
        if !nonce.starts_with(&self.nonce) || nonce.len() == self.nonce.len() || iterations > MAX_ITERATIONS as u32 {
            return Err(failed);
        }
        let m = self.mechanism;
        let salted = m.salted_password(password.as_bytes(), &salt, iterations);
        let client_key = m.hmac(&salted, b"Client Key");
        let stored_key = m.hash(&client_key);
        let without_proof = format!("c=biws,r={nonce}");
        let auth_message = format!("{},{text},{without_proof}", self.client_first_bare);
        let signature = m.hmac(&stored_key, auth_message.as_bytes());
        let proof: Vec<u8> = client_key.iter().zip(&signature).map(|(k, s)| k ^ s).collect();
        let server_key = m.hmac(&salted, b"Server Key");
        self.server_signature = m.hmac(&server_key, auth_message.as_bytes());
        Ok(format!("{without_proof},p={}", B64.encode(proof)))
    }

    /// Whether `server_final` proves the server knows the credential.
    pub fn verify(&self, server_final: &[u8]) -> bool {
        let Some(v) = std::str::from_utf8(server_final).ok().and_then(|t| t.strip_prefix("v=")) else { return false };
        B64.decode(v)
            .is_ok_and(|sig| !self.server_signature.is_empty() && super::constant_time_eq(&sig, &self.server_signature))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// RFC 7677's example exchange (SCRAM-SHA-256, user "user", password "pencil").
    #[test]
    fn the_rfc_7677_exchange_authenticates() {
        let salt = B64.decode("W22ZaJ0SNY7soEsUEjb6gQ==").unwrap();
        let credential = Credential::from_password(Mechanism::Sha256, "pencil", &salt, 4096);
        let first = server_first(
            Mechanism::Sha256,
            b"n,,n=user,r=rOprNGfwEbeRWgbNEkqO",
            Some(credential),
            "%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0",
        )
        .unwrap();
        assert_eq!(
            first.message,
            "r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096"
        );
        let last = first
            .client_final(b"c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ=")
            .unwrap();
        assert_eq!(last, "v=6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4=");
    }

    #[test]
    fn a_wrong_proof_fails() {
        let salt = B64.decode("W22ZaJ0SNY7soEsUEjb6gQ==").unwrap();
        let credential = Credential::from_password(Mechanism::Sha256, "not-pencil", &salt, 4096);
        let first =
            server_first(Mechanism::Sha256, b"n,,n=user,r=rOprNGfwEbeRWgbNEkqO", Some(credential), "x").unwrap();
        let e = first.client_final(b"c=biws,r=rOprNGfwEbeRWgbNEkqOx,p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ=");
        assert_eq!(e, Err(ScramError::Failed("SCRAM-SHA-256")));
    }

    #[test]
    fn an_unknown_user_fails_at_the_first_message() {
        let e = server_first(Mechanism::Sha512, b"n,,n=nobody,r=abc", None, "def").unwrap_err();
        assert_eq!(e, ScramError::Failed("SCRAM-SHA-512"));
    }

    #[test]
    fn a_nonce_other_than_the_exchanges_fails() {
        let salt = b"salt".to_vec();
        let c = Credential::from_password(Mechanism::Sha256, "pw", &salt, 4096);
        let first = server_first(Mechanism::Sha256, b"n,,n=u,r=abc", Some(c), "def").unwrap();
        assert!(matches!(first.client_final(b"c=biws,r=abcXXX,p=AAAA"), Err(ScramError::Failed(_))));
    }

    fn cred() -> Credential {
        Credential::from_password(Mechanism::Sha256, "pw", b"salt", 4096)
    }

    #[test]
    fn malformed_client_messages_are_refused() {
        for bad in [&b""[..], b"n,,r=abc", b"x,,n=u,r=abc", b"n,,n=u", b"n,,n=u=ZZ,r=a", b"n,,n=,r=a", b"\xff\xfe"] {
            assert!(server_first(Mechanism::Sha256, bad, Some(cred()), "s").is_err(), "{bad:?}");
        }
        assert!(matches!(
            server_first(Mechanism::Sha256, b"n,,n=u,r=a,tokenauth=true", Some(cred()), "s"),
            Err(ScramError::Extensions(_))
        ));
        assert!(matches!(
            server_first(Mechanism::Sha256, b"n,a=other,n=u,r=a", Some(cred()), "s"),
            Err(ScramError::AuthorizationId(_))
        ));
        let first = server_first(Mechanism::Sha256, b"n,,n=u,r=a", Some(cred()), "s").unwrap();
        assert_eq!(first.client_final(b"garbage"), Err(ScramError::BadClientFinal));
    }

    #[test]
    fn the_client_side_reproduces_rfc_7677() {
        let (mut client, first) = ClientExchange::start(Mechanism::Sha256, "user", "rOprNGfwEbeRWgbNEkqO");
        assert_eq!(first, "n,,n=user,r=rOprNGfwEbeRWgbNEkqO");
        let last = client
            .finish(b"r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096", "pencil")
            .unwrap();
        assert_eq!(last, "c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ=");
        assert!(client.verify(b"v=6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4="));
        assert!(!client.verify(b"v=AAAA"));
    }

    #[test]
    fn a_client_and_the_server_agree_and_a_server_nonce_not_extending_ours_fails() {
        let c = Credential::from_password(Mechanism::Sha512, "pw", b"salt", 4096);
        let (mut client, first) = ClientExchange::start(Mechanism::Sha512, "a,b", "cnonce");
        let server = server_first(Mechanism::Sha512, first.as_bytes(), Some(c), "snonce").unwrap();
        assert_eq!(server.user, "a,b");
        let last = client.finish(server.message.as_bytes(), "pw").unwrap();
        let verdict = server.client_final(last.as_bytes()).unwrap();
        assert!(client.verify(verdict.as_bytes()));
        let (mut other, _) = ClientExchange::start(Mechanism::Sha512, "a", "mine");
        assert!(other.finish(b"r=theirs,s=c2FsdA==,i=4096", "pw").is_err());
    }

    #[test]
    fn escaped_user_names_are_unescaped() {
        assert_eq!(client_first_user(b"n,,n=a=2Cb=3Dc,r=x").unwrap(), "a,b=c");
    }

    #[test]
    fn a_credential_from_the_salted_password_is_the_one_from_the_password() {
        let salt = b"0123456789";
        let salted = Mechanism::Sha512.salted_password(b"secret", salt, 4096);
        assert_eq!(salted.len(), 64);
        assert_eq!(
            Credential::from_salted_password(Mechanism::Sha512, salt, &salted, 4096),
            Credential::from_password(Mechanism::Sha512, "secret", salt, 4096)
        );
    }
}
