//! The scrape endpoint: `GET /metrics` over HTTP/1.1 (hyper), on its own thread, never on an
//! actor thread. A client cannot wedge it or make it hold memory: at most `max_connections` at
//! once (more are closed at once), request heads of at most 8 KiB, the head read within
//! `header_timeout`, the whole exchange within `connection_timeout`, one request per connection.

use std::convert::Infallible;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http_body_util::Full;
use hyper::header::{HeaderValue, CONTENT_TYPE};
use hyper::{Method, Request, Response, StatusCode};
use hyper_util::rt::{TokioIo, TokioTimer};
use thiserror::Error;
use tokio::net::TcpListener;
use tokio::sync::Semaphore;

use super::Metrics;

/// OpenMetrics text, which Prometheus asks for and reads.
pub const CONTENT_TYPE_OPENMETRICS: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";

#[derive(Debug, Error)]
pub enum HttpError {
    #[error("metrics_listen {0}: {1}")]
    Bind(String, std::io::Error),
}

/// What one client may make the endpoint hold.
#[derive(Debug, Clone, Copy)]
pub struct HttpLimits {
    pub max_connections: usize,
    pub header_timeout: Duration,
    pub connection_timeout: Duration,
}

impl Default for HttpLimits {
    fn default() -> Self {
        HttpLimits {
            max_connections: 16,
            header_timeout: Duration::from_secs(5),
            connection_timeout: Duration::from_secs(10),
        }
    }
}

/// Binds `addr` now, so a bad address stops the broker at start with a clear error.
pub fn bind(addr: &str) -> Result<std::net::TcpListener, HttpError> {
    let listener = std::net::TcpListener::bind(addr).map_err(|e| HttpError::Bind(addr.to_string(), e))?;
    listener.set_nonblocking(true).map_err(|e| HttpError::Bind(addr.to_string(), e))?;
    Ok(listener)
}

/// The answer to one request.
pub fn respond(metrics: &Metrics, method: &Method, path: &str) -> Response<Full<Bytes>> {
    let plain = |status: StatusCode, text: &'static str| {
        let mut r = Response::new(Full::new(Bytes::from_static(text.as_bytes())));
        *r.status_mut() = status;
        r.headers_mut().insert(CONTENT_TYPE, HeaderValue::from_static("text/plain; charset=utf-8"));
        r
    };
    if path != "/metrics" {
        return plain(StatusCode::NOT_FOUND, "not found: the metrics are at /metrics\n");
    }
    if method != Method::GET && method != Method::HEAD {
        return plain(StatusCode::METHOD_NOT_ALLOWED, "only GET\n");
    }
    match metrics.encode() {
        Ok(text) => {
            let mut r = Response::new(Full::new(Bytes::from(text)));
            r.headers_mut().insert(CONTENT_TYPE, HeaderValue::from_static(CONTENT_TYPE_OPENMETRICS));
            r
        }
        Err(_) => plain(StatusCode::INTERNAL_SERVER_ERROR, "could not encode the metrics\n"),
    }
}

/// Serves scrapes until the runtime it runs on stops. Runs inside a tokio runtime with I/O and
/// time (the metrics arbiter).
pub async fn serve(listener: std::net::TcpListener, metrics: Metrics, limits: HttpLimits) {
    let listener = match TcpListener::from_std(listener) {
        Ok(l) => l,
        Err(e) => return tracing::error!("metrics endpoint: {e}"),
    };
    let permits = Arc::new(Semaphore::new(limits.max_connections.max(1)));
    loop {
        let (stream, peer) = match listener.accept().await {
            Ok(x) => x,
            Err(e) => {
                tracing::warn!("metrics endpoint accept: {e}");
                tokio::time::sleep(Duration::from_millis(50)).await;
                continue;
            }
        };
        let Ok(permit) = permits.clone().try_acquire_owned() else {
            tracing::debug!(%peer, "metrics endpoint busy, closing the connection");
            drop(stream);
            continue;
        };
        let metrics = metrics.clone();
        tokio::task::spawn_local(async move {
            let service = hyper::service::service_fn(move |req: Request<hyper::body::Incoming>| {
                let response = respond(&metrics, req.method(), req.uri().path());
                async move { Ok::<_, Infallible>(response) }
            });
            let connection = hyper::server::conn::http1::Builder::new()
                .timer(TokioTimer::new())
                .header_read_timeout(limits.header_timeout)
                .max_buf_size(8192)
                .keep_alive(false)
                .serve_connection(TokioIo::new(stream), service);
            match tokio::time::timeout(limits.connection_timeout, connection).await {
                Ok(Ok(())) => {}
                Ok(Err(e)) => tracing::debug!(%peer, "metrics endpoint: {e}"),
                Err(_) => tracing::debug!(%peer, "metrics endpoint: closing a connection that took too long"),
            }
            drop(permit);
        });
    }
}

#[cfg(test)]
mod tests {
    use std::io::{Read, Write};
    use std::net::TcpStream;

    use super::*;

    #[test]
    fn only_get_of_metrics_is_answered() {
        let m = Metrics::new();
        assert_eq!(respond(&m, &Method::GET, "/metrics").status(), StatusCode::OK);
        assert_eq!(respond(&m, &Method::GET, "/").status(), StatusCode::NOT_FOUND);
        assert_eq!(respond(&m, &Method::POST, "/metrics").status(), StatusCode::METHOD_NOT_ALLOWED);
    }

    /// Runs the endpoint on a thread of its own; returns its port.
    fn start(limits: HttpLimits) -> u16 {
        let listener = bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        std::thread::spawn(move || {
            let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
            let local = tokio::task::LocalSet::new();
            local.block_on(&rt, serve(listener, Metrics::new(), limits));
        });
        port
    }

    fn get(port: u16) -> String {
        let mut s = TcpStream::connect(("127.0.0.1", port)).unwrap();
        s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
        s.write_all(b"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n").unwrap();
        let mut out = String::new();
        let _ = s.read_to_string(&mut out);
        out
    }

    /// Whether the server closes `s` within `within` (a read of 0 bytes, or a reset).
    fn closed_within(s: &mut TcpStream, within: Duration) -> bool {
        s.set_read_timeout(Some(within)).unwrap();
        let mut buf = [0u8; 512];
        loop {
            match s.read(&mut buf) {
                Ok(0) => return true,
                Ok(_) => continue,
                Err(e) if matches!(e.kind(), std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut) => {
                    return false
                }
                Err(_) => return true,
            }
        }
    }

    #[test]
    fn a_silent_client_is_closed_and_others_are_still_served() {
        let limits = HttpLimits {
            max_connections: 2,
            header_timeout: Duration::from_millis(300),
            connection_timeout: Duration::from_millis(600),
        };
        let port = start(limits);
        let mut silent = TcpStream::connect(("127.0.0.1", port)).unwrap();
        let mut half = TcpStream::connect(("127.0.0.1", port)).unwrap();
        half.write_all(b"GET /metrics HTTP/1.1\r\n").unwrap();
        std::thread::sleep(Duration::from_millis(100));
        // Both slots are taken: a third connection is closed at once.
        let mut third = TcpStream::connect(("127.0.0.1", port)).unwrap();
        assert!(closed_within(&mut third, Duration::from_secs(2)), "a connection beyond the limit is closed");
        assert!(closed_within(&mut silent, Duration::from_secs(3)), "a client that sends nothing is closed");
        assert!(closed_within(&mut half, Duration::from_secs(3)), "a client that never ends its head is closed");
        let answer = get(port);
        assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
        assert!(answer.contains("kafka_server_replicamanager_partitioncount"), "{answer}");
    }

    #[test]
    fn an_oversized_head_is_refused() {
        let port = start(HttpLimits::default());
        let mut s = TcpStream::connect(("127.0.0.1", port)).unwrap();
        let mut head = b"GET /metrics HTTP/1.1\r\nX-Big: ".to_vec();
        head.extend(std::iter::repeat_n(b'a', 64 * 1024));
        let _ = s.write_all(&head);
        assert!(closed_within(&mut s, Duration::from_secs(3)));
    }
}
