//! PeerLinks: the wire client a transaction coordinator writes markers with on partitions other
//! brokers lead, as Apache Kafka's TransactionMarkerChannelManager does, and a partition leader
//! verifies or adds its partition with a coordinator another broker runs (AddPartitionsToTxn
//! v4/v5, as Kafka's AddPartitionsToTxnManager does). One TCP connection per
//! peer broker, opened on the first marker for it; ApiVersions first, to pick the WriteTxnMarkers
//! version (KIP-1228, eos-rules 43: v2 when the peer advertises it, else v1), then requests
//! pipelined with correlation ids. Each peer has a bounded queue and every marker a deadline: a
//! dead or silent peer answers a retriable error within the request timeout (eos-rules 50)
//! instead of hanging the coordinator. A connection that fails is dropped with everything on it
//! answered; the next marker for the peer opens a new one.
//!
//! It lives in `protocol` (it speaks the wire); the coordinator only knows it as a
//! `Recipient<SendPeerMarker>`, given to it at start (server.rs).

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::time::Duration;

use actix::{Actor, Context, Handler, Message};
use bytes::{Bytes, BytesMut};
use kafka_protocol::messages::add_partitions_to_txn_request::{AddPartitionsToTxnTopic, AddPartitionsToTxnTransaction};
use kafka_protocol::messages::{
    AddPartitionsToTxnRequest, AddPartitionsToTxnResponse, ApiKey, ApiVersionsRequest, ApiVersionsResponse, ProducerId,
    ResponseHeader, TopicName, TransactionalId,
};
use kafka_protocol::protocol::{Decodable, Encodable, StrBytes};
use tokio::io::AsyncWriteExt;
use tokio::net::TcpStream;
use tokio::sync::mpsc::{self, error::TrySendError};
use tokio::time::Instant;

use super::peer_frame::{read_response, request_frame};
use super::peer_security::{PeerSecurity, PeerStream};
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
    /// TLS and SASL to the peers' inter-broker listener (protocol::peer_security).
    pub security: PeerSecurity,
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
            security: PeerSecurity::default(),
        }
    }
}

/// AddPartitionsToTxn for one transaction, sent by a partition leader here to the broker that
/// runs the transaction's coordinator, as Kafka's AddPartitionsToTxnManager does (KIP-890): v4
/// with VerifyOnly to verify a TV1 transaction's partition (eos-rules 27), v5 to add it for TV2
/// (eos-rules 29). The answer is each partition's error code.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PeerAddPartitions {
    pub transactional_id: String,
    pub producer_id: i64,
    pub producer_epoch: i16,
    pub partitions: BTreeSet<(String, i32)>,
    pub verify_only: bool,
}

pub type AddPartitionsAnswer = Result<BTreeMap<(String, i32), i16>, PeerSendError>;

#[derive(Message)]
#[rtype(result = "()")]
pub struct SendPeerAddPartitions {
    pub peer: Broker,
    pub request: PeerAddPartitions,
    pub reply: Reply<AddPartitionsAnswer>,
}

/// What a job sends, and where its answer goes.
enum Work {
    Marker(PeerMarker, Reply<Result<PeerMarkerAnswer, PeerSendError>>),
    AddPartitions(PeerAddPartitions, Reply<AddPartitionsAnswer>),
}

/// A request waiting for its answer.
struct Job {
    work: Work,
    deadline: Instant,
}

impl Job {
    fn fail(self, e: PeerSendError) {
        match self.work {
            Work::Marker(_, reply) => {
                let _ = reply.send(Err(e));
            }
            Work::AddPartitions(_, reply) => {
                let _ = reply.send(Err(e));
            }
        }
    }

    fn is_abandoned(&self) -> bool {
        match &self.work {
            Work::Marker(_, reply) => reply.is_closed(),
            Work::AddPartitions(_, reply) => reply.is_closed(),
        }
    }

    /// The request frame, its API and version, for a connection with `versions`.
    fn request(&self, versions: &Versions, id: i32, client_id: &str) -> Result<(Bytes, ApiKey, i16), PeerSendError> {
        match &self.work {
            Work::Marker(marker, _) => {
                let version = versions.markers.ok_or(PeerSendError::NoCommonVersion)?;
                Ok((marker_request(marker, version, id, client_id)?, ApiKey::WriteTxnMarkers, version))
            }
            Work::AddPartitions(add, _) => {
                // Broker-to-broker AddPartitionsToTxn is v4+; v5 adds for TV2 (KIP-890).
                let want = if add.verify_only { 4 } else { 5 };
                let version = versions.add_partitions.filter(|max| *max >= want).map(|_| want);
                let version = version.ok_or(PeerSendError::NoCommonVersion)?;
                Ok((add_partitions_request(add, version, id, client_id)?, ApiKey::AddPartitionsToTxn, version))
            }
        }
    }

    /// Hands the answer in `body` to the job's caller.
    fn answer(self, body: Bytes, version: i16) {
        match self.work {
            Work::Marker(marker, reply) => {
                let _ = reply.send(marker_answer(body, version, &marker));
            }
            Work::AddPartitions(add, reply) => {
                let _ = reply.send(add_partitions_answer(body, version, &add));
            }
        }
    }
}

/// The versions a connection's peer speaks, from its ApiVersions answer.
#[derive(Debug, Clone, Copy)]
struct Versions {
    /// WriteTxnMarkers (eos-rules 43), None without a common version.
    markers: Option<i16>,
    /// The peer's highest AddPartitionsToTxn.
    add_partitions: Option<i16>,
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
        self.queue(&msg.peer, Work::Marker(msg.marker, msg.reply));
    }
}

impl Handler<SendPeerAddPartitions> for PeerLinks {
    type Result = ();

    fn handle(&mut self, msg: SendPeerAddPartitions, _: &mut Self::Context) {
        self.queue(&msg.peer, Work::AddPartitions(msg.request, msg.reply));
    }
}

impl PeerLinks {
    fn queue(&mut self, peer: &Broker, work: Work) {
        let deadline = Instant::now() + self.config.request_timeout;
        let mut job = Job { work, deadline };
        // A link whose connection just ended is replaced once.
        for _ in 0..2 {
            match self.link(peer).try_send(job) {
                Ok(()) => return,
                // eos-rules 50: a full queue is a retriable answer; the caller backs off.
                Err(TrySendError::Full(j)) => return j.fail(PeerSendError::Busy),
                Err(TrySendError::Closed(j)) => job = j,
            }
        }
        job.fail(PeerSendError::Disconnected("the peer link closed".into()));
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
        Ok((stream, versions)) => {
            tracing::info!(%peer, markers = ?versions.markers, add_partitions = ?versions.add_partitions, "peer link open");
            serve(stream, versions, &mut jobs, &config).await
        }
        Err(e) => e,
    };
    tracing::warn!(%peer, "peer link closed: {end}");
    jobs.close();
    while let Ok(job) = jobs.try_recv() {
        job.fail(end.clone());
    }
}

fn millis(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}

fn lost(e: std::io::Error) -> PeerSendError {
    PeerSendError::Disconnected(e.to_string())
}

/// Connects and asks ApiVersions: the versions to send markers (eos-rules 43) and
/// AddPartitionsToTxn with.
async fn open(
    address: &(String, i32),
    config: &PeerLinkConfig,
) -> Result<(Box<dyn PeerStream>, Versions), PeerSendError> {
    let port = u16::try_from(address.1).map_err(|_| PeerSendError::Unreachable(format!("port {}", address.1)))?;
    let tcp = TcpStream::connect((address.0.as_str(), port))
        .await
        .map_err(|e| PeerSendError::Unreachable(format!("{}:{port}: {e}", address.0)))?;
    let _ = tcp.set_nodelay(true);
    let mut stream = config.security.wrap(tcp, &address.0).await?;
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
    let range = |key: ApiKey| {
        versions.api_keys.iter().find(|k| k.api_key == key as i16).map(|k| (k.min_version, k.max_version))
    };
    let markers = marker_request_version(config.max_version, range(ApiKey::WriteTxnMarkers));
    let add_partitions = range(ApiKey::AddPartitionsToTxn).map(|(_, max)| max);
    config.security.login(&mut stream, &config.client_id, config.max_response_bytes).await?;
    Ok((stream, Versions { markers, add_partitions }))
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

/// A response frame's correlation id and body. Every request the link sends is flexible
/// (WriteTxnMarkers v1+, AddPartitionsToTxn v4+), so every answer has the same header version.
fn split_answer(mut frame: Bytes) -> Result<(i32, Bytes), PeerSendError> {
    let header = ResponseHeader::decode(&mut frame, ApiKey::WriteTxnMarkers.response_header_version(1))
        .map_err(|e| PeerSendError::Malformed(e.to_string()))?;
    Ok((header.correlation_id, frame))
}

/// The AddPartitionsToTxn v4/v5 request of one transaction.
pub fn add_partitions_request(
    add: &PeerAddPartitions,
    version: i16,
    correlation_id: i32,
    client_id: &str,
) -> Result<Bytes, PeerSendError> {
    let mut topics: Vec<AddPartitionsToTxnTopic> = Vec::new();
    for (topic, p) in &add.partitions {
        match topics.last_mut() {
            Some(t) if t.name.0.as_str() == topic => t.partitions.push(*p),
            _ => topics.push(
                AddPartitionsToTxnTopic::default()
                    .with_name(TopicName(StrBytes::from_string(topic.clone())))
                    .with_partitions(vec![*p]),
            ),
        }
    }
    let txn = AddPartitionsToTxnTransaction::default()
        .with_transactional_id(TransactionalId(StrBytes::from_string(add.transactional_id.clone())))
        .with_producer_id(ProducerId(add.producer_id))
        .with_producer_epoch(add.producer_epoch)
        .with_verify_only(add.verify_only)
        .with_topics(topics);
    let mut body = BytesMut::new();
    AddPartitionsToTxnRequest::default()
        .with_transactions(vec![txn])
        .encode(&mut body, version)
        .map_err(|e| PeerSendError::Malformed(e.to_string()))?;
    request_frame(ApiKey::AddPartitionsToTxn, version, correlation_id, client_id, &body)
}

/// Each requested partition's code in an AddPartitionsToTxn v4+ answer; a top-level error
/// applies to every partition.
pub fn add_partitions_answer(mut body: Bytes, version: i16, add: &PeerAddPartitions) -> AddPartitionsAnswer {
    let resp = AddPartitionsToTxnResponse::decode(&mut body, version)
        .map_err(|e| PeerSendError::Malformed(format!("AddPartitionsToTxn: {e}")))?;
    let mut codes: BTreeMap<(String, i32), i16> =
        add.partitions.iter().map(|tp| (tp.clone(), resp.error_code)).collect();
    if resp.error_code != 0 {
        return Ok(codes);
    }
    let ours = resp.results_by_transaction.iter().find(|t| t.transactional_id.0.as_str() == add.transactional_id);
    let ours = ours.ok_or_else(|| PeerSendError::Malformed("no answer for the transaction".into()))?;
    for t in &ours.topic_results {
        for p in &t.results_by_partition {
            if let Some(code) = codes.get_mut(&(t.name.0.to_string(), p.partition_index)) {
                *code = p.partition_error_code;
            }
        }
    }
    Ok(codes)
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
    stream: Box<dyn PeerStream>,
    versions: Versions,
    jobs: &mut mpsc::Receiver<Job>,
    config: &PeerLinkConfig,
) -> PeerSendError {
    let (mut rd, mut wr) = tokio::io::split(stream);
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
    let mut in_flight: HashMap<i32, (Job, i16)> = HashMap::new();
    let mut next_id: i32 = 1;
    let end = loop {
        let oldest = in_flight.values().map(|(j, _)| j.deadline).min();
        tokio::select! {
            job = jobs.recv(), if in_flight.len() < config.max_in_flight => {
                let Some(job) = job else {
                    break PeerSendError::Disconnected("the peer link was replaced".into());
                };
                if job.is_abandoned() {
                    continue;
                }
                if job.deadline <= Instant::now() {
                    job.fail(timed_out.clone());
                    continue;
                }
                let id = next_id;
                next_id = next_id.checked_add(1).unwrap_or(1);
                let (frame, version) = match job.request(&versions, id, &config.client_id) {
                    Ok((f, _, v)) => (f, v),
                    Err(e) => {
                        job.fail(e);
                        continue;
                    }
                };
                match tokio::time::timeout_at(job.deadline, wr.write_all(&frame)).await {
                    Ok(Ok(())) => {
                        in_flight.insert(id, (job, version));
                    }
                    Ok(Err(e)) => {
                        job.fail(lost(e));
                        break PeerSendError::Disconnected("write failed".into());
                    }
                    Err(_) => {
                        job.fail(timed_out.clone());
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
                let (id, body) = match split_answer(frame) {
                    Ok(x) => x,
                    Err(e) => break e,
                };
                let Some((job, version)) = in_flight.remove(&id) else {
                    break PeerSendError::Malformed(format!("answer for unknown correlation id {id}"));
                };
                job.answer(body, version);
            }
            // eos-rules 50: no answer in time: the connection is given up (as Kafka's
            // request.timeout.ms disconnects) and everything on it is retried by its coordinator.
            () = tokio::time::sleep_until(oldest.unwrap_or_else(Instant::now)), if oldest.is_some() => {
                break timed_out;
            }
        }
    };
    reader.abort();
    for (_, (job, _)) in in_flight.drain() {
        job.fail(end.clone());
    }
    end
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::txn_markers_codec::decode_request;
    use kafka_protocol::messages::RequestHeader;

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

    /// What the broker's own decoders (the request header, then the WriteTxnMarkers codec the
    /// dispatch uses) make of the link's request frame.
    fn decoded(version: i16, tv: i8) -> (RequestHeader, Vec<TxnMarker>) {
        let frame = marker_request(&marker(tv), version, 77, "kaas-test").unwrap();
        let len = i32::from_be_bytes([frame[0], frame[1], frame[2], frame[3]]) as usize;
        assert_eq!(len, frame.len() - 4);
        let mut body = frame.slice(4..);
        let header = kafka_protocol::protocol::decode_request_header_from_buffer(&mut body).unwrap();
        assert_eq!(header.request_api_key, ApiKey::WriteTxnMarkers as i16);
        (header, decode_request(body, version).unwrap())
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
