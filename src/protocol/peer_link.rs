//! PeerLinks: the wire client a transaction coordinator writes markers with on partitions other
//! brokers lead, as Apache Kafka's TransactionMarkerChannelManager does. One TCP connection per
//! peer broker, opened on the first marker for it; ApiVersions first, to pick the WriteTxnMarkers
//! version (KIP-1228, eos-rules 43: v2 when the peer advertises it, else v1), then requests
//! pipelined with correlation ids. Each peer has a bounded queue and every marker a deadline: a
//! dead or silent peer answers a retriable error within the request timeout (eos-rules 50)
//! instead of hanging the coordinator. A connection that fails is dropped with everything on it
//! answered; the next marker for the peer opens a new one.
//!
//! It lives in `protocol` (it speaks the wire); the coordinator only knows it as a
//! `Recipient<SendPeerMarker>`, given to it at start (server.rs).

use std::collections::HashMap;
use std::time::Duration;

use actix::{Actor, Context, Handler};
use bytes::{BufMut, Bytes, BytesMut};
use kafka_protocol::messages::{ApiKey, ApiVersionsRequest, ApiVersionsResponse, RequestHeader, ResponseHeader};
use kafka_protocol::protocol::{Decodable, Encodable, StrBytes};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::sync::mpsc::{self, error::TrySendError};
use tokio::time::Instant;

use super::txn_markers_codec::{decode_response, encode_request, MarkerTopic, TxnMarker};
use crate::actors::messages::{PeerMarker, PeerMarkerAnswer, PeerSendError, Reply, SendPeerMarker};
use crate::store::ownership::Broker;
use crate::store::txn::{marker_request_version, MAX_MARKERS_VERSION, PEER_REQUEST_TIMEOUT_MS};

/// The ApiVersions version the link asks with (flexible; every broker since 2.4 speaks it).
const API_VERSIONS_VERSION: i16 = 3;

#[derive(Debug, Clone)]
pub struct PeerLinkConfig {
    /// Highest WriteTxnMarkers version sent (`write_txn_markers_max_version`).
    pub max_version: i16,
    /// Connecting plus ApiVersions, and each marker from the moment it is queued to its answer
    /// (Kafka's request.timeout.ms).
    pub request_timeout: Duration,
    /// Markers waiting per peer; a marker beyond it is answered `Busy` at once.
    pub queue: usize,
    /// Requests on the wire per connection. Below a kaas peer's `max_inflight_requests` (64),
    /// so the peer keeps reading and a write never waits on our own unread answers.
    pub max_in_flight: usize,
    /// Largest response frame accepted from a peer.
    pub max_response_bytes: usize,
    pub client_id: String,
}

impl Default for PeerLinkConfig {
    fn default() -> Self {
        PeerLinkConfig {
            max_version: MAX_MARKERS_VERSION,
            request_timeout: Duration::from_millis(PEER_REQUEST_TIMEOUT_MS),
            queue: 1024,
            max_in_flight: 32,
            max_response_bytes: 1 << 20,
            client_id: "kaas-txn-coordinator".into(),
        }
    }
}

/// A marker waiting for its answer.
struct Job {
    marker: PeerMarker,
    deadline: Instant,
    reply: Reply<Result<PeerMarkerAnswer, PeerSendError>>,
}

impl Job {
    fn answer(self, result: Result<PeerMarkerAnswer, PeerSendError>) {
        let _ = self.reply.send(result);
    }
}

/// The queue of one peer's connection task.
struct Link {
    address: (String, i32),
    jobs: mpsc::Sender<Job>,
}

/// One per broker. Its mailbox is bounded; handling a marker never waits (the connection tasks
/// do the I/O on this actor's arbiter, never on a connection thread).
pub struct PeerLinks {
    config: PeerLinkConfig,
    links: HashMap<i32, Link>,
}

impl PeerLinks {
    pub fn new(config: PeerLinkConfig) -> PeerLinks {
        PeerLinks { config, links: HashMap::new() }
    }

    /// The queue of `peer`'s live connection task, starting one when there is none (first use,
    /// the last connection failed, or the peer moved to another address).
    fn link(&mut self, peer: &Broker) -> mpsc::Sender<Job> {
        let address = (peer.host.clone(), peer.port);
        if let Some(l) = self.links.get(&peer.node_id) {
            if l.address == address && !l.jobs.is_closed() {
                return l.jobs.clone();
            }
        }
        let (tx, rx) = mpsc::channel(self.config.queue.max(1));
        actix_rt::spawn(run(address.clone(), rx, self.config.clone()));
        self.links.insert(peer.node_id, Link { address, jobs: tx.clone() });
        tx
    }
}

impl Actor for PeerLinks {
    type Context = Context<Self>;

    fn started(&mut self, ctx: &mut Self::Context) {
        ctx.set_mailbox_capacity(1024);
    }
}

impl Handler<SendPeerMarker> for PeerLinks {
    type Result = ();

    fn handle(&mut self, msg: SendPeerMarker, _: &mut Self::Context) {
        let deadline = Instant::now() + self.config.request_timeout;
        let mut job = Job { marker: msg.marker, deadline, reply: msg.reply };
        // A link whose connection just ended is replaced once.
        for _ in 0..2 {
            match self.link(&msg.peer).try_send(job) {
                Ok(()) => return,
                // eos-rules 50: a full queue is a retriable answer; the marker loop backs off.
                Err(TrySendError::Full(j)) => return j.answer(Err(PeerSendError::Busy)),
                Err(TrySendError::Closed(j)) => job = j,
            }
        }
        job.answer(Err(PeerSendError::Disconnected("the peer link closed".into())));
    }
}

/// One connection's life: open it (lazily: the task starts with its first marker), serve the
/// queue until the connection fails, answer whatever is left with the failure, end.
async fn run(address: (String, i32), mut jobs: mpsc::Receiver<Job>, config: PeerLinkConfig) {
    let peer = format!("{}:{}", address.0, address.1);
    let opened = tokio::time::timeout(config.request_timeout, open(&address, &config))
        .await
        .unwrap_or_else(|_| Err(PeerSendError::TimedOut(millis(config.request_timeout))));
    let end = match opened {
        Ok((stream, version)) => {
            tracing::info!(%peer, version, "peer link open: WriteTxnMarkers v{version}");
            serve(stream, version, &mut jobs, &config).await
        }
        Err(e) => e,
    };
    tracing::warn!(%peer, "peer link closed: {end}");
    jobs.close();
    while let Ok(job) = jobs.try_recv() {
        job.answer(Err(end.clone()));
    }
}

fn millis(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}

fn lost(e: std::io::Error) -> PeerSendError {
    PeerSendError::Disconnected(e.to_string())
}

/// Connects and asks ApiVersions; the version to send markers with (eos-rules 43).
async fn open(address: &(String, i32), config: &PeerLinkConfig) -> Result<(TcpStream, i16), PeerSendError> {
    let port = u16::try_from(address.1).map_err(|_| PeerSendError::Unreachable(format!("port {}", address.1)))?;
    let mut stream = TcpStream::connect((address.0.as_str(), port))
        .await
        .map_err(|e| PeerSendError::Unreachable(format!("{}:{port}: {e}", address.0)))?;
    let _ = stream.set_nodelay(true);
    let mut body = BytesMut::new();
    ApiVersionsRequest::default()
        .with_client_software_name(StrBytes::from_static_str("kaas"))
        .with_client_software_version(StrBytes::from_static_str(env!("CARGO_PKG_VERSION")))
        .encode(&mut body, API_VERSIONS_VERSION)
        .map_err(|e| PeerSendError::Malformed(e.to_string()))?;
    let frame = request_frame(ApiKey::ApiVersions, API_VERSIONS_VERSION, 0, &config.client_id, &body)?;
    stream.write_all(&frame).await.map_err(lost)?;
    let mut response = read_response(&mut stream, config.max_response_bytes).await?;
    let header =
        ResponseHeader::decode(&mut response, ApiKey::ApiVersions.response_header_version(API_VERSIONS_VERSION))
            .map_err(|e| PeerSendError::Malformed(e.to_string()))?;
    if header.correlation_id != 0 {
        return Err(PeerSendError::Malformed(format!("ApiVersions answered id {}", header.correlation_id)));
    }
    let versions = ApiVersionsResponse::decode(&mut response, API_VERSIONS_VERSION)
        .map_err(|e| PeerSendError::Malformed(format!("ApiVersions: {e}")))?;
    if versions.error_code != 0 {
        return Err(PeerSendError::Malformed(format!("ApiVersions error {}", versions.error_code)));
    }
    let range = versions
        .api_keys
        .iter()
        .find(|k| k.api_key == ApiKey::WriteTxnMarkers as i16)
        .map(|k| (k.min_version, k.max_version));
    let version = marker_request_version(config.max_version, range).ok_or(PeerSendError::NoCommonVersion)?;
    Ok((stream, version))
}

/// A request frame: length, header (with `client_id`), body.
fn request_frame(
    key: ApiKey,
    version: i16,
    correlation_id: i32,
    client_id: &str,
    body: &[u8],
) -> Result<Bytes, PeerSendError> {
    let header = RequestHeader::default()
        .with_request_api_key(key as i16)
        .with_request_api_version(version)
        .with_correlation_id(correlation_id)
        .with_client_id(Some(StrBytes::from_string(client_id.to_string())));
    let mut buf = BytesMut::with_capacity(64 + body.len());
    buf.put_i32(0);
    header
        .encode(&mut buf, key.request_header_version(version))
        .map_err(|e| PeerSendError::Malformed(e.to_string()))?;
    buf.extend_from_slice(body);
    let len = i32::try_from(buf.len() - 4).map_err(|_| PeerSendError::Malformed("request too large".into()))?;
    buf[..4].copy_from_slice(&len.to_be_bytes());
    Ok(buf.freeze())
}

/// The WriteTxnMarkers request for one job's marker.
pub fn marker_request(
    marker: &PeerMarker,
    version: i16,
    correlation_id: i32,
    client_id: &str,
) -> Result<Bytes, PeerSendError> {
    let m = TxnMarker {
        producer_id: marker.producer_id,
        producer_epoch: marker.producer_epoch,
        commit: marker.commit,
        topics: vec![MarkerTopic { name: marker.topic.clone(), partitions: vec![marker.partition] }],
        coordinator_epoch: marker.coordinator_epoch,
        // eos-rules 43: only v2 carries it; the encoder leaves it out of v1.
        transaction_version: marker.transaction_version,
    };
    request_frame(ApiKey::WriteTxnMarkers, version, correlation_id, client_id, &encode_request(&[m], version))
}

/// Reads one response frame (length checked before anything is allocated).
async fn read_response<R: AsyncRead + Unpin>(r: &mut R, max: usize) -> Result<Bytes, PeerSendError> {
    let mut len = [0u8; 4];
    r.read_exact(&mut len).await.map_err(lost)?;
    let len = i32::from_be_bytes(len);
    let size = usize::try_from(len).ok().filter(|n| (4..=max).contains(n));
    let size = size.ok_or_else(|| PeerSendError::Malformed(format!("response length {len}")))?;
    let mut buf = vec![0u8; size];
    r.read_exact(&mut buf).await.map_err(lost)?;
    Ok(Bytes::from(buf))
}

/// A WriteTxnMarkers response frame: its correlation id and its per-partition answers.
fn split_answer(mut frame: Bytes, version: i16) -> Result<(i32, Bytes), PeerSendError> {
    let header = ResponseHeader::decode(&mut frame, ApiKey::WriteTxnMarkers.response_header_version(version))
        .map_err(|e| PeerSendError::Malformed(e.to_string()))?;
    Ok((header.correlation_id, frame))
}

/// The answer for `marker`'s partition in a response body.
pub fn marker_answer(body: Bytes, version: i16, marker: &PeerMarker) -> Result<PeerMarkerAnswer, PeerSendError> {
    let results = decode_response(body, version).map_err(|e| PeerSendError::Malformed(e.to_string()))?;
    results
        .iter()
        .find(|r| r.producer_id == marker.producer_id && r.topic == marker.topic && r.partition == marker.partition)
        .map(|r| PeerMarkerAnswer { error_code: r.error_code, version })
        .ok_or_else(|| PeerSendError::Malformed(format!("no answer for {}-{}", marker.topic, marker.partition)))
}

/// Sends queued markers on an open connection and hands each answer to its job, until the
/// connection fails (the error that ended it comes back; what was in flight is answered with it).
async fn serve(
    stream: TcpStream,
    version: i16,
    jobs: &mut mpsc::Receiver<Job>,
    config: &PeerLinkConfig,
) -> PeerSendError {
    let (mut rd, mut wr) = stream.into_split();
    let (frames_tx, mut frames) = mpsc::channel::<Result<Bytes, PeerSendError>>(4);
    let max = config.max_response_bytes;
    let reader = actix_rt::spawn(async move {
        loop {
            let frame = read_response(&mut rd, max).await;
            let last = frame.is_err();
            if frames_tx.send(frame).await.is_err() || last {
                break;
            }
        }
    });
    let timed_out = PeerSendError::TimedOut(millis(config.request_timeout));
    let mut in_flight: HashMap<i32, Job> = HashMap::new();
    let mut next_id: i32 = 1;
    let end = loop {
        let oldest = in_flight.values().map(|j| j.deadline).min();
        tokio::select! {
            job = jobs.recv(), if in_flight.len() < config.max_in_flight => {
                let Some(job) = job else {
                    break PeerSendError::Disconnected("the peer link was replaced".into());
                };
                if job.reply.is_closed() {
                    continue;
                }
                if job.deadline <= Instant::now() {
                    job.answer(Err(timed_out.clone()));
                    continue;
                }
                let id = next_id;
                next_id = next_id.checked_add(1).unwrap_or(1);
                let frame = match marker_request(&job.marker, version, id, &config.client_id) {
                    Ok(f) => f,
                    Err(e) => {
                        job.answer(Err(e));
                        continue;
                    }
                };
                match tokio::time::timeout_at(job.deadline, wr.write_all(&frame)).await {
                    Ok(Ok(())) => {
                        in_flight.insert(id, job);
                    }
                    Ok(Err(e)) => {
                        job.answer(Err(lost(e)));
                        break PeerSendError::Disconnected("write failed".into());
                    }
                    Err(_) => {
                        job.answer(Err(timed_out.clone()));
                        break timed_out;
                    }
                }
            }
            frame = frames.recv() => {
                let frame = match frame {
                    Some(Ok(f)) => f,
                    Some(Err(e)) => break e,
                    None => break PeerSendError::Disconnected("reader ended".into()),
                };
                let (id, body) = match split_answer(frame, version) {
                    Ok(x) => x,
                    Err(e) => break e,
                };
                let Some(job) = in_flight.remove(&id) else {
                    break PeerSendError::Malformed(format!("answer for unknown correlation id {id}"));
                };
                let answer = marker_answer(body, version, &job.marker);
                job.answer(answer);
            }
            // eos-rules 50: no answer in time: the connection is given up (as Kafka's
            // request.timeout.ms disconnects) and everything on it is retried by its coordinator.
            () = tokio::time::sleep_until(oldest.unwrap_or_else(Instant::now)), if oldest.is_some() => {
                break timed_out;
            }
        }
    };
    reader.abort();
    for (_, job) in in_flight.drain() {
        job.answer(Err(end.clone()));
    }
    end
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::dispatch::{decode, Request};

    fn marker(tv: i8) -> PeerMarker {
        PeerMarker {
            producer_id: 7,
            producer_epoch: 3,
            commit: true,
            coordinator_epoch: 9,
            transaction_version: tv,
            topic: "orders".into(),
            partition: 4,
        }
    }

    /// What the broker's own decoder (protocol::decode) makes of the link's request frame.
    fn decoded(version: i16, tv: i8) -> (RequestHeader, Vec<TxnMarker>) {
        let frame = marker_request(&marker(tv), version, 77, "kaas-test").unwrap();
        let len = i32::from_be_bytes([frame[0], frame[1], frame[2], frame[3]]) as usize;
        assert_eq!(len, frame.len() - 4);
        let d = decode(frame.slice(4..)).unwrap_or_else(|(_, e)| panic!("{e}"));
        let Request::WriteTxnMarkers(markers) = d.request else { panic!("not WriteTxnMarkers") };
        (d.header, markers)
    }

    #[test]
    fn rule_43_v2_request_frames_decode_with_the_transaction_version() {
        let (header, markers) = decoded(2, 2);
        assert_eq!((header.request_api_version, header.correlation_id), (2, 77));
        assert_eq!(header.client_id.as_deref(), Some("kaas-test"));
        let expected = TxnMarker {
            producer_id: 7,
            producer_epoch: 3,
            commit: true,
            topics: vec![MarkerTopic { name: "orders".into(), partitions: vec![4] }],
            coordinator_epoch: 9,
            transaction_version: 2,
        };
        assert_eq!(markers, vec![expected]);
    }

    #[test]
    fn rule_43_v1_request_frames_carry_no_transaction_version() {
        let (header, markers) = decoded(1, 2);
        assert_eq!(header.request_api_version, 1);
        assert_eq!(markers[0].transaction_version, 0, "the peer validates the legacy way (eos-rules 46)");
    }

    #[test]
    fn the_answer_is_the_markers_partition() {
        use kafka_protocol::messages::write_txn_markers_response::{
            WritableTxnMarkerPartitionResult, WritableTxnMarkerResult, WritableTxnMarkerTopicResult,
        };
        use kafka_protocol::messages::{ProducerId, TopicName, WriteTxnMarkersResponse};
        let response = |partition: i32, code: i16| {
            let mut p = WritableTxnMarkerPartitionResult::default();
            p.partition_index = partition;
            p.error_code = code;
            let mut t = WritableTxnMarkerTopicResult::default();
            t.name = TopicName(StrBytes::from_static_str("orders"));
            t.partitions = vec![p];
            let mut m = WritableTxnMarkerResult::default();
            m.producer_id = ProducerId(7);
            m.topics = vec![t];
            let mut r = WriteTxnMarkersResponse::default();
            r.markers = vec![m];
            let mut buf = BytesMut::new();
            r.encode(&mut buf, 1).unwrap();
            buf.freeze()
        };
        let answer = marker_answer(response(4, 47), 2, &marker(2)).unwrap();
        assert_eq!(answer, PeerMarkerAnswer { error_code: 47, version: 2 });
        assert!(matches!(marker_answer(response(5, 0), 1, &marker(2)), Err(PeerSendError::Malformed(_))));
    }

    #[tokio::test]
    async fn response_lengths_are_checked_before_allocating() {
        let mut huge: &[u8] = &[0x7f, 0xff, 0xff, 0xff];
        assert!(matches!(read_response(&mut huge, 1 << 20).await, Err(PeerSendError::Malformed(_))));
        let mut negative: &[u8] = &[0xff, 0xff, 0xff, 0xf0];
        assert!(matches!(read_response(&mut negative, 1 << 20).await, Err(PeerSendError::Malformed(_))));
        let mut eof: &[u8] = &[0, 0, 0, 8, 1];
        assert!(matches!(read_response(&mut eof, 1 << 20).await, Err(PeerSendError::Disconnected(_))));
        let mut ok: &[u8] = &[0, 0, 0, 4, 0, 0, 0, 1];
        assert_eq!(read_response(&mut ok, 1 << 20).await.unwrap().len(), 4);
    }
}
