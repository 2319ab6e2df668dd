//! TLS of the SSL and SASL_SSL listeners (rustls, TLS 1.2 and 1.3): the broker's certificate
//! chain and key from one PEM file (Kafka's `ssl.keystore.type=PEM`), client certificates checked
//! against the CA certificates of another (`ssl.client.auth` none / requested / required), the
//! principal of a client certificate as Kafka's default mapping gives it (the subject's RFC 2253
//! name, `User:CN=alice,O=kaas`), and the certificate and key read again on SIGHUP without a
//! restart (new handshakes get the new ones).

use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, RwLock};

use rustls::crypto::CryptoProvider;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use rustls::server::{ClientHello, ResolvesServerCert, WebPkiClientVerifier};
use rustls::sign::CertifiedKey;
use rustls::{RootCertStore, ServerConfig};
use thiserror::Error;

use crate::store::auth::Principal;

#[derive(Debug, Error)]
pub enum TlsError {
    #[error("{0}: {1}")]
    Read(PathBuf, std::io::Error),
    #[error("{0}: no {1} in it")]
    Missing(PathBuf, &'static str),
    #[error("{0}: {1}")]
    Pem(PathBuf, String),
    #[error("TLS configuration: {0}")]
    Rustls(String),
}

/// Kafka's `ssl.client.auth`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ClientAuth {
    None,
    Requested,
    Required,
}

impl ClientAuth {
    pub fn from_name(name: &str) -> Option<ClientAuth> {
        match name {
            "none" => Some(ClientAuth::None),
            "requested" => Some(ClientAuth::Requested),
            "required" => Some(ClientAuth::Required),
            _ => None,
        }
    }
}

/// ring's provider (ring also gives SCRAM its HMAC, SHA-2 and PBKDF2). rustls 0.23.48 marks it
/// deprecated because it has no post-quantum key exchange; the Kafka clients tested here (Java
/// 17, librdkafka) negotiate X25519 or P-256 ECDHE, which it has.
#[allow(deprecated)]
pub fn provider() -> CryptoProvider {
    rustls::crypto::ring::default_provider()
}

/// The certificate chain and private key of a PEM file.
fn certified_key(path: &Path, provider: &CryptoProvider) -> Result<CertifiedKey, TlsError> {
    let pem = std::fs::read(path).map_err(|e| TlsError::Read(path.to_path_buf(), e))?;
    let certs: Vec<CertificateDer<'static>> = CertificateDer::pem_slice_iter(&pem)
        .collect::<Result<_, _>>()
        .map_err(|e| TlsError::Pem(path.to_path_buf(), e.to_string()))?;
    if certs.is_empty() {
        return Err(TlsError::Missing(path.to_path_buf(), "CERTIFICATE"));
    }
    let key = PrivateKeyDer::from_pem_slice(&pem).map_err(|_| TlsError::Missing(path.to_path_buf(), "PRIVATE KEY"))?;
    let signing = provider.key_provider.load_private_key(key).map_err(|e| TlsError::Rustls(e.to_string()))?;
    Ok(CertifiedKey::new(certs, signing))
}

/// The certificate the listeners present, read again by [`Certificates::reload`].
pub struct Certificates {
    path: PathBuf,
    provider: Arc<CryptoProvider>,
    current: RwLock<Arc<CertifiedKey>>,
}

impl fmt::Debug for Certificates {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Certificates({})", self.path.display())
    }
}

impl Certificates {
    /// Reads the keystore again; on an error the current certificate stays.
    pub fn reload(&self) -> Result<(), TlsError> {
        let key = certified_key(&self.path, &self.provider)?;
        if let Ok(mut current) = self.current.write() {
            *current = Arc::new(key);
        }
        Ok(())
    }
}

impl ResolvesServerCert for Certificates {
    fn resolve(&self, _hello: ClientHello<'_>) -> Option<Arc<CertifiedKey>> {
        self.current.read().ok().map(|k| k.clone())
    }
}

/// The TLS side of the broker's listeners: the rustls configuration and its certificates.
#[derive(Clone)]
pub struct Tls {
    /// The SSL listeners' (with `ssl.client.auth`).
    pub config: Arc<ServerConfig>,
    /// The SASL_SSL listener's (with its own client auth, KIP-684).
    pub sasl_config: Arc<ServerConfig>,
    pub certificates: Arc<Certificates>,
}

impl Tls {
    /// From the keystore (certificate chain and key, PEM), the truststore (CA certificates of
    /// client certificates, PEM), `ssl.client.auth` and the SASL_SSL listener's own.
    pub fn load(
        keystore: &Path,
        truststore: Option<&Path>,
        client_auth: ClientAuth,
        sasl_client_auth: ClientAuth,
    ) -> Result<Tls, TlsError> {
        let provider = Arc::new(provider());
        let key = certified_key(keystore, &provider)?;
        let certificates = Arc::new(Certificates {
            path: keystore.to_path_buf(),
            provider: provider.clone(),
            current: RwLock::new(Arc::new(key)),
        });
        let config = server_config(&provider, &certificates, client_auth, truststore)?;
        let sasl_config = server_config(&provider, &certificates, sasl_client_auth, truststore)?;
        Ok(Tls { config, sasl_config, certificates })
    }
}

/// A rustls server configuration serving `certificates`, asking clients for a certificate
/// signed by a CA of `truststore` as `client_auth` says.
fn server_config(
    provider: &Arc<CryptoProvider>,
    certificates: &Arc<Certificates>,
    client_auth: ClientAuth,
    truststore: Option<&Path>,
) -> Result<Arc<ServerConfig>, TlsError> {
    let builder = ServerConfig::builder_with_provider(provider.clone())
        .with_protocol_versions(&[&rustls::version::TLS13, &rustls::version::TLS12])
        .map_err(|e| TlsError::Rustls(e.to_string()))?;
    let config = match (client_auth, truststore) {
        (ClientAuth::None, _) => builder.with_no_client_auth().with_cert_resolver(certificates.clone()),
        (_, None) => return Err(TlsError::Rustls("ssl_client_auth needs ssl_truststore_location".into())),
        (auth, Some(path)) => {
            let pem = std::fs::read(path).map_err(|e| TlsError::Read(path.to_path_buf(), e))?;
            let mut roots = RootCertStore::empty();
            for cert in CertificateDer::pem_slice_iter(&pem) {
                let cert = cert.map_err(|e| TlsError::Pem(path.to_path_buf(), e.to_string()))?;
                roots.add(cert).map_err(|e| TlsError::Pem(path.to_path_buf(), e.to_string()))?;
            }
            if roots.is_empty() {
                return Err(TlsError::Missing(path.to_path_buf(), "CERTIFICATE"));
            }
            let verifier = WebPkiClientVerifier::builder_with_provider(Arc::new(roots), provider.clone());
            let verifier = if auth == ClientAuth::Requested { verifier.allow_unauthenticated() } else { verifier };
            let verifier = verifier.build().map_err(|e| TlsError::Rustls(e.to_string()))?;
            builder.with_client_cert_verifier(verifier).with_cert_resolver(certificates.clone())
        }
    };
    Ok(Arc::new(config))
}

/// Kafka's principal of a TLS client: `User:<subject as RFC 2253>` of its certificate (the
/// default `ssl.principal.mapping.rules`), else ANONYMOUS.
pub fn principal_of(certificates: Option<&[CertificateDer<'_>]>) -> Principal {
    certificates
        .and_then(|c| c.first())
        .and_then(|der| subject_rfc2253(der.as_ref()))
        .map(|name| Principal::user(&name))
        .unwrap_or_else(Principal::anonymous)
}

/// A certificate's subject as Java's X500Principal.getName() writes it (RFC 2253: the last
/// RDN first, no spaces, `,+"\<>;` escaped).
pub fn subject_rfc2253(der: &[u8]) -> Option<String> {
    use x509_parser::prelude::{FromDer, X509Certificate};
    let (_, cert) = X509Certificate::from_der(der).ok()?;
    let registry = x509_parser::objects::oid_registry();
    let mut rdns = Vec::new();
    for rdn in cert.subject().iter_rdn() {
        let mut parts = Vec::new();
        for atv in rdn.iter() {
            let oid = atv.attr_type();
            let key = match x509_parser::objects::oid2abbrev(oid, registry) {
                Ok(k @ ("CN" | "C" | "L" | "ST" | "O" | "OU" | "STREET" | "DC" | "UID")) => k.to_string(),
                _ => oid.to_id_string(),
            };
            let value = atv.as_str().ok()?;
            parts.push(format!("{key}={}", escape_rfc2253(value)));
        }
        rdns.push(parts.join("+"));
    }
    rdns.reverse();
    Some(rdns.join(","))
}

fn escape_rfc2253(value: &str) -> String {
    let mut out = String::with_capacity(value.len());
    for (i, c) in value.chars().enumerate() {
        let edge = (i == 0 && (c == ' ' || c == '#')) || (i + 1 == value.chars().count() && c == ' ');
        if matches!(c, ',' | '+' | '"' | '\\' | '<' | '>' | ';') || edge {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn client_auth_names_are_kafkas() {
        assert_eq!(ClientAuth::from_name("required"), Some(ClientAuth::Required));
        assert_eq!(ClientAuth::from_name("REQUIRED"), None);
    }

    #[test]
    fn rfc_2253_escapes_its_specials() {
        assert_eq!(escape_rfc2253("a,b+c"), "a\\,b\\+c");
        assert_eq!(escape_rfc2253(" x "), "\\ x\\ ");
    }

    #[test]
    fn no_certificate_is_anonymous() {
        assert_eq!(principal_of(None), Principal::anonymous());
    }
}
