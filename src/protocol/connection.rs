//! Connection: one actor per client. Frames are read by a reader task into a small bounded
//! queue, requests are dispatched in order (Produce appends are enqueued before the next request
//! is looked at), responses complete in any order but are written strictly in request order by a
//! writer task behind a bounded channel. At most `max_inflight` requests are worked on at once;
//! beyond that reading pauses, so a client that does not read cannot make the broker buffer
//! without limit. Every frame also holds its bytes in the broker-wide request pool until it is
//! answered, a Fetch answer holds its bytes in the broker-wide response budget until they are
//! written, and a connection with nothing in flight, or whose client does not take a response
//! off the socket, closes after `connections_max_idle_ms`.
//!
//! On a TLS listener the handshake comes first (within `connections_max_idle_ms`); on a SASL
//! listener only ApiVersions, SaslHandshake and SaslAuthenticate are served until the exchange
//! succeeds (any other request closes the connection, as Kafka's authenticator does), with
//! frames of at most [`SASL_MAX_RECEIVE`] bytes until then.

use std::cell::Cell;
use std::net::SocketAddr;
use std::rc::Rc;
use std::sync::Arc;
use std::time::{Duration, Instant};

use actix::fut::ActorFutureExt;
use actix::{Actor, ActorContext, AsyncContext, Context, WrapFuture};
use bytes::Bytes;
use futures::future::LocalBoxFuture;
use futures::stream::FuturesOrdered;
use futures::{FutureExt, StreamExt};
use kafka_protocol::messages::{ApiKey, RequestHeader, RequestKind, ResponseKind};
use tokio::io::AsyncRead;
use tokio::net::TcpStream;
use tokio::sync::{mpsc, OwnedSemaphorePermit};

use super::frame::{encode_response, FrameError, FrameReader, RequestPool, MIN_REQUEST_LEN};
use super::handlers::cluster::api_versions;
use super::handlers::security::{sasl_authenticate, sasl_handshake, AfterSasl};
use super::listener::{scram_nonce, ListenerContext};
use super::outgoing::{encode_fetch_parts, Outgoing, Writer};
use super::response_budget::Charge;
use super::versions::Offered;
use super::{decode_for, dispatch, Answer, RequestError, Session};
use crate::actors::quotas::ConnectionPermit;
use crate::metrics::Metrics;
use crate::store::auth::sasl::{Gate, SaslSession, SaslState, Secrets};

/// Kafka's `sasl.server.max.receive.size`: the largest frame before SASL authentication.
pub const SASL_MAX_RECEIVE: usize = 524_288;

/// Per-connection bounds, from the settings.
#[derive(Debug, Clone)]
pub struct Limits {
    /// Largest frame (Kafka's socket.request.max.bytes).
    pub max_frame: usize,
    /// Requests worked on at once.
    pub max_inflight: usize,
    /// Close after this long with nothing read, written or in flight (connections.max.idle.ms).
    pub max_idle: Duration,
    /// Broker-wide bytes of unanswered requests (queued.max.request.bytes).
    pub pool: RequestPool,
}

pub struct Connection {
    stream: Option<std::net::TcpStream>,
    peer: SocketAddr,
    session: Rc<Session>,
    limits: Limits,
    /// The listener it came in on (its security protocol, TLS and SASL).
    listener: Arc<ListenerContext>,
    /// This connection's slot in max_connections; given back when the actor is dropped.
    _permit: ConnectionPermit,
}

impl Connection {
    pub fn new(
        stream: std::net::TcpStream,
        peer: SocketAddr,
        session: Rc<Session>,
        limits: Limits,
        listener: Arc<ListenerContext>,
        permit: ConnectionPermit,
    ) -> Self {
        Connection { stream: Some(stream), peer, session, limits, listener, _permit: permit }
    }
}

impl Actor for Connection {
    type Context = Context<Self>;

    fn started(&mut self, ctx: &mut Self::Context) {
        let Some(stream) = self.stream.take() else {
            return ctx.stop();
        };
        let fut = serve(stream, self.peer, self.session.clone(), self.limits.clone(), self.listener.clone());
        ctx.spawn(fut.into_actor(self).map(|_, _, ctx| ctx.stop()));
    }
}

type InFlight = LocalBoxFuture<'static, (RequestHeader, ApiKey, Option<Answer>, Instant)>;

/// A request of `key` decoded at `started` is done with (its response written, or none due):
/// Kafka's RequestsPerSec and TotalTimeMs.
fn record(metrics: &Metrics, key: ApiKey, started: Instant) {
    if let Some(m) = metrics.api(key) {
        m.requests.inc();
        m.total_time.observe_duration(started.elapsed());
    }
}

/// Reads frames into `frame_tx` until the client closes, a frame is refused or the receiver is
/// gone. Until `authenticated`, frames are bounded by [`SASL_MAX_RECEIVE`].
async fn read_frames<R: AsyncRead + Unpin>(
    rd: R,
    max_frame: usize,
    pool: RequestPool,
    authenticated: Rc<Cell<bool>>,
    frame_tx: mpsc::Sender<Result<(Bytes, OwnedSemaphorePermit), FrameError>>,
) {
    let mut frames = FrameReader::new(rd);
    loop {
        // Asked when the frame's length has come in: the frame that follows a login is read
        // after the login is answered, under the full limit (Kafka bounds only the frames of
        // the authentication by sasl.server.max.receive.size).
        // Before the login a frame may be a raw SASL token (after SaslHandshake v0), shorter
        // than any request: the loop checks a request's length itself.
        let bounds =
            || if authenticated.get() { (MIN_REQUEST_LEN, max_frame) } else { (0, max_frame.min(SASL_MAX_RECEIVE)) };
        let frame = frames.next_with(bounds, &pool).await;
        let last = frame.is_err();
        if frame_tx.send(frame).await.is_err() || last {
            break;
        }
    }
}

/// The socket as this listener serves it: after the TLS handshake on a TLS listener (the
/// principal of a client certificate set on the session), the reading half given to a reader
/// task, the writing half returned. None when the handshake failed.
async fn adopt(
    stream: TcpStream,
    peer: SocketAddr,
    session: &Session,
    listener: &ListenerContext,
    spawn_reader: impl FnOnce(Box<dyn AsyncRead + Unpin>),
    max_idle: Duration,
) -> Option<Writer> {
    let Some(acceptor) = &listener.tls else {
        let (rd, wr) = stream.into_split();
        spawn_reader(Box::new(rd));
        return Some(Writer::Plain(wr));
    };
    match tokio::time::timeout(max_idle, acceptor.accept(stream)).await {
        Ok(Ok(tls)) => {
            if !listener.protocol.sasl() {
                // SSL: the client certificate's subject (ANONYMOUS without one).
                *session.principal.borrow_mut() = super::tls::principal_of(tls.get_ref().1.peer_certificates());
            }
            let (rd, wr) = tokio::io::split(tls);
            spawn_reader(Box::new(rd));
            Some(Writer::Tls(wr))
        }
        Ok(Err(e)) if gone_before_handshake(&e) => {
            // A client that closed before finishing the handshake (a port probe, a client giving
            // up) did not fail to authenticate: Kafka neither counts nor logs it above debug.
            tracing::debug!(%peer, "connection closed during the TLS handshake: {e}");
            None
        }
        Ok(Err(e)) => {
            session.metrics.failed_authentication(listener.protocol.name());
            tracing::info!(%peer, "closing connection: TLS handshake failed: {e}");
            None
        }
        Err(_) => {
            tracing::info!(%peer, "closing connection: no TLS handshake within connections_max_idle_ms");
            None
        }
    }
}

/// Whether a TLS handshake ended because the client went away (end of stream, reset) rather
/// than because what it sent was refused.
fn gone_before_handshake(e: &std::io::Error) -> bool {
    use std::io::ErrorKind::{BrokenPipe, ConnectionAborted, ConnectionReset, UnexpectedEof};
    matches!(e.kind(), UnexpectedEof | ConnectionReset | ConnectionAborted | BrokenPipe)
}

async fn serve(
    stream: std::net::TcpStream,
    peer: SocketAddr,
    session: Rc<Session>,
    limits: Limits,
    listener: Arc<ListenerContext>,
) {
    let Limits { max_frame, max_inflight, max_idle, pool } = limits;
    let stream = match stream.set_nonblocking(true).and_then(|_| TcpStream::from_std(stream)) {
        Ok(s) => s,
        Err(e) => return tracing::warn!(%peer, "could not adopt connection: {e}"),
    };
    let _ = stream.set_nodelay(true);
    session.listener.set(listener.protocol);
    let mut sasl: Option<SaslSession> = listener.sasl.as_ref().map(|_| SaslSession::new(listener.max_reauth));
    let authenticated = Rc::new(Cell::new(sasl.is_none()));
    let (frame_tx, mut frame_rx) = mpsc::channel::<Result<(Bytes, OwnedSemaphorePermit), FrameError>>(2);
    let mut reader = None;
    let spawn_reader = |rd: Box<dyn AsyncRead + Unpin>| {
        reader = Some(actix_rt::spawn(read_frames(rd, max_frame, pool, authenticated.clone(), frame_tx)));
    };
    let Some(mut wr) = adopt(stream, peer, &session, &listener, spawn_reader, max_idle).await else {
        return;
    };
    let (out_tx, mut out_rx) = mpsc::channel::<(Outgoing, Charge, ApiKey, Instant)>(max_inflight);
    let metrics = session.metrics.clone();
    let writer = actix_rt::spawn(async move {
        while let Some((out, charge, key, started)) = out_rx.recv().await {
            match tokio::time::timeout(max_idle, wr.send(&out)).await {
                Ok(Ok(())) => {
                    drop(charge);
                    record(&metrics, key, started);
                }
                Ok(Err(e)) => {
                    tracing::debug!(%peer, "closing connection: writing a response: {e}");
                    break;
                }
                Err(_) => {
                    // Kafka's idle check counts a send that makes no progress as idle time.
                    tracing::info!(%peer, bytes = out.frame_len(), "closing connection: the client did not read a response within connections_max_idle_ms");
                    break;
                }
            }
        }
        wr.shutdown().await;
    });
    let offered = Offered::from_settings(&session.settings);
    let mut pending: FuturesOrdered<InFlight> = FuturesOrdered::new();
    let mut reading = true;
    let idle = tokio::time::sleep(max_idle);
    tokio::pin!(idle);
    while reading || !pending.is_empty() {
        tokio::select! {
            () = &mut idle, if pending.is_empty() => {
                tracing::info!(%peer, idle_ms = max_idle.as_millis() as u64, "closing idle connection (connections_max_idle_ms)");
                break;
            }
            frame = frame_rx.recv(), if reading && pending.len() < max_inflight => match frame {
                None | Some(Err(FrameError::Closed)) => reading = false,
                Some(Err(e)) => {
                    tracing::warn!(%peer, "closing connection: {e}");
                    break;
                }
                Some(Ok((frame, _permit))) if sasl.as_ref().is_some_and(SaslSession::expects_raw_token) => {
                    // After SaslHandshake v0 the tokens come as raw frames, one at a time: the
                    // client waits for each answer, so nothing else is in flight.
                    if !pending.is_empty() {
                        tracing::warn!(%peer, "closing connection: a SASL token while requests are in flight");
                        break;
                    }
                    let Some(answer) = raw_sasl_token(&listener, &mut sasl, &frame) else {
                        session.metrics.failed_authentication(listener.protocol.name());
                        tokio::time::sleep(listener.failed_authentication_delay).await;
                        break;
                    };
                    note_authenticated(peer, &session, &listener, &sasl, &authenticated);
                    if out_tx.send((Outgoing::Frame(answer), Charge::none(), ApiKey::SaslAuthenticate, Instant::now())).await.is_err() {
                        break;
                    }
                }
                Some(Ok((frame, _))) if frame.len() < MIN_REQUEST_LEN => {
                    tracing::warn!(%peer, "closing connection: {}", FrameError::TooShort(frame.len() as i32));
                    break;
                }
                Some(Ok((frame, permit))) => match sasl.as_mut().map(|st| st.gate(i16::from_be_bytes([frame[0], frame[1]]), Instant::now())) {
                    Some(Gate::Close) => {
                        // Kafka: "Unexpected Kafka request of type X during SASL handshake".
                        tracing::warn!(%peer, api_key = i16::from_be_bytes([frame[0], frame[1]]), "closing connection: a request other than ApiVersions or SASL before authentication");
                        break;
                    }
                    Some(Gate::Expired) => {
                        // KIP-368: the client did not re-authenticate within connections_max_reauth_ms.
                        tracing::info!(%peer, "closing connection: its SASL session expired (connections_max_reauth_ms)");
                        session.metrics.expired_connection_killed(listener.protocol.name());
                        break;
                    }
                    _ => match decode_for(frame, offered) {
                    Ok(d) if matches!(d.api_key, ApiKey::SaslHandshake | ApiKey::SaslAuthenticate) => {
                        let started = Instant::now();
                        let (header, key) = (d.header.clone(), d.api_key);
                        let version = header.request_api_version;
                        let Some((response, after)) = sasl_step(&listener, &mut sasl, d.request, version) else { break };
                        note_authenticated(peer, &session, &listener, &sasl, &authenticated);
                        let mut answer = Some(Answer::from(response));
                        let delay = match after {
                            AfterSasl::GoOn => None,
                            AfterSasl::Reauthenticated => {
                                tracing::debug!(%peer, "re-authenticated");
                                session.metrics.successful_reauthentication(listener.protocol.name());
                                None
                            }
                            AfterSasl::Close { delayed } => {
                                // The answer is sent, then the connection closes: nothing more is read.
                                reading = false;
                                session.metrics.failed_authentication(listener.protocol.name());
                                Some(if delayed { listener.failed_authentication_delay } else { Duration::ZERO })
                            }
                            AfterSasl::CloseUnanswered => {
                                reading = false;
                                answer = None;
                                session.metrics.failed_authentication(listener.protocol.name());
                                None
                            }
                        };
                        pending.push_back(async move {
                            if let Some(d) = delay {
                                tokio::time::sleep(d).await;
                            }
                            drop(permit);
                            (header, key, answer, started)
                        }.boxed_local());
                    }
                    Ok(d) => {
                        let started = Instant::now();
                        // What the answer needs of the header, owned: a clone would hold the
                        // client id, a slice of the frame, and with it the whole frame (a
                        // produce's batches) until the answer, not just until they are written.
                        let header = RequestHeader::default()
                            .with_request_api_key(d.header.request_api_key)
                            .with_request_api_version(d.header.request_api_version)
                            .with_correlation_id(d.header.correlation_id);
                        let key = d.api_key;
                        tracing::trace!(%peer, api = ?key, version = header.request_api_version, correlation = header.correlation_id, "request");
                        let response = dispatch(session.clone(), d).await;
                        pending.push_back(async move {
                            let answer = response.await;
                            // The request's bytes (and the batches sliced from them) are done with.
                            drop(permit);
                            (header, key, answer, started)
                        }.boxed_local());
                    }
                    Err((Some(mut header), RequestError::UnsupportedVersion(ApiKey::ApiVersions, v))) => {
                        tracing::debug!(%peer, "ApiVersions v{v} is not supported; answering with v0");
                        header.request_api_version = 0;
                        let resp = ResponseKind::ApiVersions(api_versions::unsupported()).into();
                        let started = Instant::now();
                        pending.push_back(async move { (header, ApiKey::ApiVersions, Some(resp), started) }.boxed_local());
                    }
                    Err((_, e)) => {
                        tracing::warn!(%peer, "closing connection: {e}");
                        break;
                    }
                    },
                },
            },
            Some((header, key, response, started)) = pending.next(), if !pending.is_empty() => {
                idle.as_mut().reset(tokio::time::Instant::now() + max_idle);
                tracing::trace!(%peer, api = ?key, correlation = header.correlation_id, elapsed_us = started.elapsed().as_micros() as u64, "answer");
                let Some(Answer { response, charge, files }) = response else {
                    record(&session.metrics, key, started);
                    continue;
                };
                let encoded = match &response {
                    ResponseKind::Fetch(fetch) if !files.is_empty() => {
                        encode_fetch_parts(&header, fetch, files).map(Outgoing::Parts)
                    }
                    _ => encode_response(&header, key, &response).map(Outgoing::Frame),
                };
                match encoded {
                    Ok(bytes) => {
                        // The encoded copy is what stays until written; the decoded one goes now.
                        drop(response);
                        if out_tx.send((bytes, charge, key, started)).await.is_err() {
                            break;
                        }
                    }
                    Err(e) => {
                        tracing::error!(%peer, api = ?key, version = header.request_api_version, "closing connection: {e}");
                        break;
                    }
                }
            }
        }
    }
    if let Some(r) = reader {
        r.abort();
    }
    drop(out_tx);
    let _ = writer.await;
}

/// Once the exchange has succeeded: the connection's principal, and its frames under the full limit.
fn note_authenticated(
    peer: SocketAddr,
    session: &Session,
    listener: &ListenerContext,
    sasl: &Option<SaslSession>,
    authenticated: &Cell<bool>,
) {
    if let Some(SaslState::Authenticated(principal)) = sasl.as_ref().map(SaslSession::state) {
        if !authenticated.get() {
            tracing::debug!(%peer, %principal, "authenticated");
            session.metrics.successful_authentication(listener.protocol.name());
            *session.principal.borrow_mut() = principal.clone();
            authenticated.set(true);
        }
    }
}

/// One raw token of an exchange begun by SaslHandshake v0 (Kafka's SaslServerAuthenticator
/// without SaslAuthenticate headers): the step is SaslAuthenticate v0's, its answer the server's
/// token as a raw frame (size-prefixed, even when empty). None when the step fails: with no
/// header to carry an error, Kafka closes the connection.
fn raw_sasl_token(listener: &ListenerContext, sasl: &mut Option<SaslSession>, token: &Bytes) -> Option<Bytes> {
    let mut req = kafka_protocol::messages::SaslAuthenticateRequest::default();
    req.auth_bytes = token.clone();
    let request = super::Request::Kafka(Box::new(RequestKind::SaslAuthenticate(req)));
    let (ResponseKind::SaslAuthenticate(resp), after) = sasl_step(listener, sasl, request, 0)? else { return None };
    if resp.error_code != 0 || !matches!(after, AfterSasl::GoOn) {
        tracing::info!(error_code = resp.error_code, "SASL authentication (raw tokens, SaslHandshake v0) failed");
        return None;
    }
    let len = i32::try_from(resp.auth_bytes.len()).ok()?;
    let mut out = bytes::BytesMut::with_capacity(4 + resp.auth_bytes.len());
    out.extend_from_slice(&len.to_be_bytes());
    out.extend_from_slice(&resp.auth_bytes);
    Some(out.freeze())
}

/// Answers a SaslHandshake or SaslAuthenticate (protocol::handlers::security) on the
/// connection's exchange, `sasl` (None on a listener without SASL); None for any other request.
fn sasl_step(
    listener: &ListenerContext,
    sasl: &mut Option<SaslSession>,
    request: super::Request,
    version: i16,
) -> Option<(ResponseKind, AfterSasl)> {
    let super::Request::Kafka(kind) = request else { return None };
    let ctx = listener.sasl.as_deref();
    match *kind {
        RequestKind::SaslHandshake(req) => {
            let enabled: &[String] = ctx.map(|c| c.mechanisms.as_slice()).unwrap_or(&[]);
            let (resp, after) = sasl_handshake::handle(sasl, enabled, &req, version);
            Some((ResponseKind::SaslHandshake(resp), after))
        }
        RequestKind::SaslAuthenticate(req) => {
            let plain = |user: &str| ctx.and_then(|c| c.plain_users.get(user).cloned());
            let scram = |user: &str, m| ctx.and_then(|c| c.scram.get(user, m));
            let secrets = Secrets { plain_password: &plain, scram_credential: &scram, nonce: scram_nonce() };
            let (resp, after) = sasl_authenticate::handle(sasl, &secrets, &req, version, Instant::now());
            Some((ResponseKind::SaslAuthenticate(resp), after))
        }
        _ => None,
    }
}
