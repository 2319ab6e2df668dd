//! The broker's listeners: each bound at start (a taken port stops the broker before it touches
//! the data directory), its connection context (TLS acceptor, SASL mechanisms and secrets), and
//! its accept loop, which admits a connection under the connection quotas and starts its
//! `Connection` actor on one of the connection threads, round-robin.

use std::cell::Cell;
use std::rc::Rc;
use std::sync::Arc;
use std::time::Duration;

use actix::{Actor, Arbiter};
use tokio::net::TcpListener;
use tokio_rustls::TlsAcceptor;

use super::ServerError;
use crate::actors::quotas::ConnectionQuotas;
use crate::config::{Listener, Settings};
use crate::protocol::connection::{Connection, Limits};
use crate::protocol::listener::{random_salt, ListenerContext, SaslContext};
use crate::protocol::session::{Actors, Session};
use crate::protocol::tls::{ClientAuth, Tls};
use crate::store::auth::credentials::{self, ScramCredentials};

/// A listener and its bound socket.
pub struct Bound {
    pub listener: Listener,
    pub socket: std::net::TcpListener,
}

/// Binds every listener of the settings.
pub fn bind_all(settings: &Settings) -> Result<Vec<Bound>, ServerError> {
    settings
        .listeners()
        .into_iter()
        .map(|listener| {
            let addr = listener.bind_address();
            let socket = std::net::TcpListener::bind(&addr)
                .and_then(|l| l.set_nonblocking(true).map(|()| l))
                .map_err(|source| ServerError::Bind { addr, source })?;
            Ok(Bound { listener, socket })
        })
        .collect()
}

/// The TLS configuration, when a listener needs it.
pub fn load_tls(settings: &Settings) -> Result<Option<Tls>, ServerError> {
    if !settings.listeners().iter().any(|l| l.protocol.tls()) {
        return Ok(None);
    }
    let sec = &settings.security;
    let truststore =
        (!sec.ssl_truststore_location.is_empty()).then(|| std::path::Path::new(&sec.ssl_truststore_location));
    let auth = ClientAuth::from_name(&sec.ssl_client_auth).unwrap_or(ClientAuth::None);
    let sasl_auth = ClientAuth::from_name(&sec.sasl_ssl_client_auth).unwrap_or(ClientAuth::None);
    Tls::load(std::path::Path::new(&sec.ssl_keystore_location), truststore, auth, sasl_auth)
        .map(Some)
        .map_err(|e| ServerError::Startup(e.to_string()))
}

/// The SCRAM credentials of the cluster (writing the first-start users when there are none yet).
pub fn load_credentials(settings: &Settings) -> Result<ScramCredentials, ServerError> {
    let initial = credentials::initial_credentials(&settings.security.scram_users_at_first_start, &mut random_salt);
    let map = credentials::create_or_load(&settings.broker.data_dir, &initial)
        .map_err(|e| ServerError::Startup(format!("SCRAM credentials: {e}")))?;
    Ok(ScramCredentials::new(map))
}

/// What a connection of `listener` needs.
pub fn context(
    settings: &Settings,
    listener: &Listener,
    tls: Option<&Tls>,
    scram: &ScramCredentials,
) -> ListenerContext {
    let sec = &settings.security;
    let sasl = listener.protocol.sasl().then(|| {
        Arc::new(SaslContext {
            mechanisms: sec.sasl_enabled_mechanisms.clone(),
            plain_users: sec.sasl_plain_users.clone(),
            scram: scram.clone(),
        })
    });
    ListenerContext {
        protocol: listener.protocol,
        // KIP-684: a SASL_SSL listener asks for client certificates only by its own setting.
        tls: match (listener.protocol.tls(), listener.protocol.sasl()) {
            (true, false) => tls.map(|t| TlsAcceptor::from(t.config.clone())),
            (true, true) => tls.map(|t| TlsAcceptor::from(t.sasl_config.clone())),
            (false, _) => None,
        },
        sasl,
        failed_authentication_delay: Duration::from_millis(sec.connection_failed_authentication_delay_ms),
        max_reauth: Duration::from_millis(sec.connections_max_reauth_ms),
    }
}

/// What every accept loop shares (all run on the serving thread).
pub struct Acceptor {
    pub actors: Actors,
    pub settings: Arc<Settings>,
    pub cluster_id: Arc<str>,
    pub quotas: ConnectionQuotas,
    pub limits: Limits,
    pub threads: Vec<actix_rt::ArbiterHandle>,
    pub next: Cell<usize>,
}

impl Acceptor {
    pub fn new(
        actors: Actors,
        settings: Arc<Settings>,
        cluster_id: Arc<str>,
        threads: &[Arbiter],
        limits: Limits,
    ) -> Self {
        let quotas = ConnectionQuotas::counted_in(
            settings.network.max_connections,
            settings.network.max_connections_per_ip,
            actors.metrics.connections().clone(),
        );
        let threads = threads.iter().map(|a| a.handle()).collect();
        Acceptor { actors, settings, cluster_id, quotas, limits, threads, next: Cell::new(0) }
    }
}

/// Accepts connections on `socket` until the task is dropped.
pub async fn accept_loop(socket: TcpListener, context: Arc<ListenerContext>, acceptor: Rc<Acceptor>) {
    loop {
        let (stream, peer) = match socket.accept().await {
            Ok(x) => x,
            Err(e) => {
                tracing::warn!("accept: {e}");
                tokio::time::sleep(Duration::from_millis(50)).await;
                continue;
            }
        };
        let permit = match acceptor.quotas.admit(peer.ip()) {
            Ok(p) => p,
            Err(e) => {
                // Kafka closes such a connection at once; the client backs off and retries.
                tracing::warn!(%peer, "refusing connection: {e}");
                continue;
            }
        };
        let std_stream = match stream.into_std() {
            Ok(s) => s,
            Err(e) => {
                tracing::warn!(%peer, "{e}");
                continue;
            }
        };
        let n = acceptor.next.get();
        acceptor.next.set(n.wrapping_add(1));
        let Some(thread) = acceptor.threads.get(n % acceptor.threads.len().max(1)) else { continue };
        let actors = acceptor.actors.clone();
        let (settings, cluster_id) = (acceptor.settings.clone(), acceptor.cluster_id.clone());
        let (limits, context) = (acceptor.limits.clone(), context.clone());
        Connection::start_in_arbiter(thread, move |_| {
            let session = Session::new(actors, settings, cluster_id, peer.ip().to_string());
            Connection::new(std_stream, peer, session, limits, context, permit)
        });
    }
}
