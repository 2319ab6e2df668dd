//! How a broker reaches its peers on their inter-broker listener (`inter_broker_listener_name`):
//! TLS to an SSL or SASL_SSL listener (the peer's certificate checked against
//! `ssl_truststore_location`, this broker's own certificate presented), then the SASL login
//! (PLAIN or SCRAM, as `inter_broker_sasl_username`), so a peer's authorizer sees a broker
//! principal (a super user, or one with CLUSTER_ACTION) behind the markers and verifications
//! (store::auth::scram's client side).

use std::sync::Arc;

use bytes::{Bytes, BytesMut};
use kafka_protocol::messages::{
    ApiKey, ResponseHeader, SaslAuthenticateRequest, SaslAuthenticateResponse, SaslHandshakeRequest,
    SaslHandshakeResponse,
};
use kafka_protocol::protocol::{Decodable, Encodable, StrBytes};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName};
use tokio::io::{AsyncRead, AsyncWrite, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio_rustls::TlsConnector;

use super::listener::scram_nonce;
use super::peer_frame::{read_response, request_frame};
use crate::actors::messages::PeerSendError;
use crate::config::Settings;
use crate::store::auth::scram::{ClientExchange, Mechanism};

/// A connection to a peer, plain or TLS.
pub trait PeerStream: AsyncRead + AsyncWrite + Unpin {}
impl<T: AsyncRead + AsyncWrite + Unpin> PeerStream for T {}

/// The login a broker makes to its peers.
#[derive(Clone)]
pub struct SaslLogin {
    pub mechanism: String,
    pub user: String,
    pub password: String,
}

/// TLS and SASL of the connections to peers; default: plain, no login.
#[derive(Clone, Default)]
pub struct PeerSecurity {
    pub tls: Option<TlsConnector>,
    pub sasl: Option<SaslLogin>,
}

const HANDSHAKE_VERSION: i16 = 1;
const AUTHENTICATE_VERSION: i16 = 2;

fn malformed(e: impl std::fmt::Display) -> PeerSendError {
    PeerSendError::Malformed(e.to_string())
}

impl std::fmt::Debug for PeerSecurity {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Never the password.
        let login = self.sasl.as_ref().map(|l| (&l.mechanism, &l.user));
        f.debug_struct("PeerSecurity").field("tls", &self.tls.is_some()).field("login", &login).finish()
    }
}

impl PeerSecurity {
    /// From the settings of the inter-broker listener.
    pub fn from_settings(settings: &Settings) -> Result<PeerSecurity, String> {
        let listener = settings.inter_broker_listener().ok_or("no inter-broker listener")?;
        let sec = &settings.security;
        let tls = if listener.protocol.tls() {
            let provider = Arc::new(super::tls::provider());
            let pem = if sec.ssl_truststore_location.is_empty() {
                // A single broker needs no peer; in a cluster every link to a peer fails its
                // certificate check until the CA is given (Kafka would fall back on the JVM's).
                tracing::warn!(
                    "the inter-broker listener is TLS but ssl_truststore_location is empty: links to other brokers \
                     will fail their certificate check; set it to the CA that signs the brokers' certificates"
                );
                Vec::new()
            } else {
                std::fs::read(&sec.ssl_truststore_location)
                    .map_err(|e| format!("{}: {e}", sec.ssl_truststore_location))?
            };
            let mut roots = rustls::RootCertStore::empty();
            for cert in CertificateDer::pem_slice_iter(&pem) {
                roots.add(cert.map_err(|e| e.to_string())?).map_err(|e| e.to_string())?;
            }
            let builder = rustls::ClientConfig::builder_with_provider(provider)
                .with_protocol_versions(&[&rustls::version::TLS13, &rustls::version::TLS12])
                .map_err(|e| e.to_string())?
                .with_root_certificates(roots);
            // This broker's own certificate, for a peer that asks for client certificates.
            let keystore =
                std::fs::read(&sec.ssl_keystore_location).map_err(|e| format!("{}: {e}", sec.ssl_keystore_location))?;
            let chain: Vec<CertificateDer<'static>> =
                CertificateDer::pem_slice_iter(&keystore).collect::<Result<_, _>>().map_err(|e| e.to_string())?;
            let key = PrivateKeyDer::from_pem_slice(&keystore).map_err(|e| e.to_string())?;
            let config = builder.with_client_auth_cert(chain, key).map_err(|e| e.to_string())?;
            Some(TlsConnector::from(Arc::new(config)))
        } else {
            None
        };
        let sasl = listener.protocol.sasl().then(|| SaslLogin {
            mechanism: sec.inter_broker_sasl_mechanism.clone(),
            user: sec.inter_broker_sasl_username.clone(),
            password: sec.inter_broker_sasl_password.clone(),
        });
        Ok(PeerSecurity { tls, sasl })
    }

    /// The connection to `host` after the TLS handshake, when the listener has TLS.
    pub async fn wrap(&self, stream: TcpStream, host: &str) -> Result<Box<dyn PeerStream>, PeerSendError> {
        let Some(tls) = &self.tls else { return Ok(Box::new(stream)) };
        let name = ServerName::try_from(host.to_string()).map_err(|e| PeerSendError::Unreachable(e.to_string()))?;
        let stream =
            tls.connect(name, stream).await.map_err(|e| PeerSendError::Unreachable(format!("TLS to {host}: {e}")))?;
        Ok(Box::new(stream))
    }

    /// The SASL login, when the listener has SASL: SaslHandshake, then one (PLAIN) or two (SCRAM)
    /// SaslAuthenticate exchanges; the server-final of SCRAM is checked.
    pub async fn login(
        &self,
        stream: &mut Box<dyn PeerStream>,
        client_id: &str,
        max: usize,
    ) -> Result<(), PeerSendError> {
        let Some(login) = &self.sasl else { return Ok(()) };
        let mut handshake = BytesMut::new();
        SaslHandshakeRequest::default()
            .with_mechanism(StrBytes::from_string(login.mechanism.clone()))
            .encode(&mut handshake, HANDSHAKE_VERSION)
            .map_err(malformed)?;
        let body = call(stream, ApiKey::SaslHandshake, HANDSHAKE_VERSION, &handshake, client_id, max).await?;
        let resp = SaslHandshakeResponse::decode(&mut body.clone(), HANDSHAKE_VERSION).map_err(malformed)?;
        if resp.error_code != 0 {
            return Err(PeerSendError::Unreachable(format!("SASL handshake refused: error {}", resp.error_code)));
        }
        match Mechanism::from_name(&login.mechanism) {
            None => {
                let token = format!("\0{}\0{}", login.user, login.password);
                authenticate(stream, token.into_bytes(), client_id, max).await.map(|_| ())
            }
            Some(m) => {
                let (mut exchange, first) = ClientExchange::start(m, &login.user, &scram_nonce());
                let server_first = authenticate(stream, first.into_bytes(), client_id, max).await?;
                let last = exchange.finish(&server_first, &login.password).map_err(malformed)?;
                let server_final = authenticate(stream, last.into_bytes(), client_id, max).await?;
                if !exchange.verify(&server_final) {
                    return Err(PeerSendError::Unreachable("the peer did not prove the SCRAM credential".into()));
                }
                Ok(())
            }
        }
    }
}

/// One SaslAuthenticate: the server's bytes, or the refusal.
async fn authenticate(
    stream: &mut Box<dyn PeerStream>,
    token: Vec<u8>,
    client_id: &str,
    max: usize,
) -> Result<Bytes, PeerSendError> {
    let mut body = BytesMut::new();
    SaslAuthenticateRequest::default()
        .with_auth_bytes(Bytes::from(token))
        .encode(&mut body, AUTHENTICATE_VERSION)
        .map_err(malformed)?;
    let mut answer = call(stream, ApiKey::SaslAuthenticate, AUTHENTICATE_VERSION, &body, client_id, max).await?;
    let resp = SaslAuthenticateResponse::decode(&mut answer, AUTHENTICATE_VERSION).map_err(malformed)?;
    if resp.error_code != 0 {
        let why = resp.error_message.map(|m| m.to_string()).unwrap_or_default();
        return Err(PeerSendError::Unreachable(format!("SASL login to a peer refused ({}): {why}", resp.error_code)));
    }
    Ok(resp.auth_bytes)
}

/// Sends one request and reads its answer's body (correlation id 0: nothing else is in flight).
async fn call(
    stream: &mut Box<dyn PeerStream>,
    key: ApiKey,
    version: i16,
    body: &[u8],
    client_id: &str,
    max: usize,
) -> Result<Bytes, PeerSendError> {
    let frame = request_frame(key, version, 0, client_id, body)?;
    stream.write_all(&frame).await.map_err(|e| PeerSendError::Disconnected(e.to_string()))?;
    let mut response = read_response(stream, max).await?;
    let header = ResponseHeader::decode(&mut response, key.response_header_version(version)).map_err(malformed)?;
    if header.correlation_id != 0 {
        return Err(malformed(format!("{key:?} answered id {}", header.correlation_id)));
    }
    Ok(response)
}
