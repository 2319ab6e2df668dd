//! Connection: one actor per client. Frames are read by a reader task into a small bounded
//! queue, requests are dispatched in order (Produce appends are enqueued before the next request
//! is looked at), responses complete in any order but are written strictly in request order by a
//! writer task behind a bounded channel. At most `max_inflight` requests are worked on at once;
//! beyond that reading pauses, so a client that does not read cannot make the broker buffer
//! without limit. Every frame also holds its bytes in the broker-wide request pool until it is
//! answered, a Fetch answer holds its bytes in the broker-wide response budget until they are
//! written, and a connection with nothing in flight, or whose client does not take a response
//! off the socket, closes after `connections_max_idle_ms`.

use std::net::SocketAddr;
use std::rc::Rc;
use std::time::{Duration, Instant};

use actix::fut::ActorFutureExt;
use actix::{Actor, ActorContext, AsyncContext, Context, WrapFuture};
use bytes::Bytes;
use futures::future::LocalBoxFuture;
use futures::stream::FuturesOrdered;
use futures::{FutureExt, StreamExt};
use kafka_protocol::messages::{ApiKey, RequestHeader, ResponseKind};
use tokio::io::AsyncWriteExt;
use tokio::net::TcpStream;
use tokio::sync::{mpsc, OwnedSemaphorePermit};

use super::frame::{encode_response, read_frame, FrameError, RequestPool};
use super::handlers::cluster::api_versions;
use super::outgoing::{encode_fetch_parts, Outgoing};
use super::response_budget::Charge;
use super::versions::Offered;
use super::{decode_for, dispatch, Answer, RequestError, Session};
use crate::actors::quotas::ConnectionPermit;
use crate::metrics::Metrics;

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
    /// This connection's slot in max_connections; given back when the actor is dropped.
    _permit: ConnectionPermit,
}

impl Connection {
    pub fn new(
        stream: std::net::TcpStream,
        peer: SocketAddr,
        session: Rc<Session>,
        limits: Limits,
        permit: ConnectionPermit,
    ) -> Self {
        Connection { stream: Some(stream), peer, session, limits, _permit: permit }
    }
}

impl Actor for Connection {
    type Context = Context<Self>;

    fn started(&mut self, ctx: &mut Self::Context) {
        let Some(stream) = self.stream.take() else {
            return ctx.stop();
        };
        let fut = serve(stream, self.peer, self.session.clone(), self.limits.clone());
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

async fn serve(stream: std::net::TcpStream, peer: SocketAddr, session: Rc<Session>, limits: Limits) {
    let Limits { max_frame, max_inflight, max_idle, pool } = limits;
    let stream = match stream.set_nonblocking(true).and_then(|_| TcpStream::from_std(stream)) {
        Ok(s) => s,
        Err(e) => return tracing::warn!(%peer, "could not adopt connection: {e}"),
    };
    let _ = stream.set_nodelay(true);
    let (mut rd, mut wr) = stream.into_split();
    let (frame_tx, mut frame_rx) = mpsc::channel::<Result<(Bytes, OwnedSemaphorePermit), FrameError>>(2);
    let reader = actix_rt::spawn(async move {
        loop {
            let frame = read_frame(&mut rd, max_frame, &pool).await;
            let last = frame.is_err();
            if frame_tx.send(frame).await.is_err() || last {
                break;
            }
        }
    });
    let (out_tx, mut out_rx) = mpsc::channel::<(Outgoing, Charge, ApiKey, Instant)>(max_inflight);
    let metrics = session.metrics.clone();
    let writer = actix_rt::spawn(async move {
        while let Some((out, charge, key, started)) = out_rx.recv().await {
            match tokio::time::timeout(max_idle, out.write(&mut wr)).await {
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
        let _ = wr.shutdown().await;
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
                Some(Ok((frame, permit))) => match decode_for(frame, offered) {
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
    reader.abort();
    drop(out_tx);
    let _ = writer.await;
}
