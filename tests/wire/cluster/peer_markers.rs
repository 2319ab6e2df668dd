//! The peer link (`protocol::peer_link`) against the real binary: a transaction coordinator's
//! WriteTxnMarkers to a broker that leads the partition (eos-rules 41, 43, 45-47, 50). KIP-1228's
//! version choice: v2 when the peer advertises it, v1 with `write_txn_markers_max_version = 1`;
//! a dead or silent peer answers a retriable error within the timeout; and an in-process
//! coordinator whose ownership table hands a partition to the real binary completes its
//! transaction through it.

use crate::common;

use std::net::TcpListener;
use std::rc::Rc;
use std::sync::Arc;
use std::time::{Duration, Instant};

use actix::Actor;
use common::{create_topic, txn_batch, Broker, Client};
use kaas::actors::messages::{PeerMarker, PeerMarkerAnswer, PeerSendError, SendPeerMarker};
use kaas::protocol::peer_link::{PeerLinkConfig, PeerLinks};
use kaas::protocol::txn_markers_codec::{encode_request, MarkerTopic, TxnMarker};
use kaas::protocol::{dispatch, Decoded, Request, Session};
use kaas::store::ownership::{self, Lease, Owned};
use kaas::store::txn::{peer_marker_outcome, peer_send_code, MarkerOutcome};
use kafka_protocol::messages::add_partitions_to_txn_request::AddPartitionsToTxnTopic;
use kafka_protocol::messages::fetch_request::{FetchPartition, FetchTopic};
use kafka_protocol::messages::*;
use kafka_protocol::protocol::StrBytes;

const TOPIC: &str = "pm";
const PEER_NODE: i32 = 2;

fn name(s: &str) -> TopicName {
    TopicName(StrBytes::from_string(s.to_string()))
}
fn txn_id(id: &str) -> TransactionalId {
    TransactionalId(StrBytes::from_string(id.to_string()))
}
fn peer(port: u16) -> ownership::Broker {
    ownership::Broker {
        node_id: PEER_NODE,
        host: "127.0.0.1".into(),
        port: i32::from(port),
        rack: None,
        endpoints: Vec::new(),
    }
}

fn init_pid_req(id: &str) -> InitProducerIdRequest {
    let mut req = InitProducerIdRequest::default();
    req.transactional_id = Some(txn_id(id));
    req.transaction_timeout_ms = 60_000;
    req
}

fn add_partition_req(id: &str, pid: i64, epoch: i16) -> AddPartitionsToTxnRequest {
    let mut t = AddPartitionsToTxnTopic::default();
    t.name = name(TOPIC);
    t.partitions = vec![0];
    let mut req = AddPartitionsToTxnRequest::default();
    req.v3_and_below_transactional_id = txn_id(id);
    req.v3_and_below_producer_id = ProducerId(pid);
    req.v3_and_below_producer_epoch = epoch;
    req.v3_and_below_topics = vec![t];
    req
}

/// A transaction on the real broker: InitProducerId, AddPartitionsToTxn, a transactional batch
/// of 3 records on `TOPIC`-0, left open. (pid, epoch)
fn open_transaction(c: &mut Client) -> (i64, i16) {
    let init: InitProducerIdResponse = c.call(ApiKey::InitProducerId, 2, init_pid_req("wire-txn"));
    assert_eq!(init.error_code, 0);
    let (pid, epoch) = (init.producer_id.0, init.producer_epoch);
    let add: AddPartitionsToTxnResponse =
        c.call(ApiKey::AddPartitionsToTxn, 3, add_partition_req("wire-txn", pid, epoch));
    assert_eq!(add.results_by_topic_v3_and_below[0].results_by_partition[0].partition_error_code, 0);
    let resp = common::produce_one(c, 9, Some(txn_id("wire-txn")), name(TOPIC), 0, txn_batch(pid, epoch, 0, 3, "peer"));
    assert_eq!(resp.responses[0].partition_responses[0].error_code, 0);
    (pid, epoch)
}

/// (high watermark, last stable offset, data records, control records as (pid, commit))
fn fetch(c: &mut Client, isolation_level: i8) -> (i64, i64, usize, Vec<(i64, bool)>) {
    let mut p = FetchPartition::default();
    p.partition = 0;
    p.partition_max_bytes = 1 << 20;
    let mut t = FetchTopic::default();
    t.topic = name(TOPIC);
    t.partitions = vec![p];
    let mut req = FetchRequest::default();
    req.replica_id = BrokerId(-1);
    req.max_bytes = 1 << 20;
    req.isolation_level = isolation_level;
    req.topics = vec![t];
    let resp: FetchResponse = c.call(ApiKey::Fetch, 11, req);
    let p = &resp.responses[0].partitions[0];
    assert_eq!(p.error_code, 0);
    let (mut data, mut control) = (0, Vec::new());
    let mut records = p.records.clone().unwrap_or_default();
    if !records.is_empty() {
        for set in kafka_protocol::records::RecordBatchDecoder::decode_all(&mut records).expect("batches") {
            for r in &set.records {
                if r.control {
                    // key: (version, type); type 1 = COMMIT (eos-rules 45)
                    let key = r.key.clone().unwrap_or_default();
                    control.push((r.producer_id, key.len() == 4 && key[3] == 1));
                } else {
                    data += 1;
                }
            }
        }
    }
    (p.high_watermark, p.last_stable_offset, data, control)
}

fn marker(pid: i64, epoch: i16, transaction_version: i8) -> PeerMarker {
    PeerMarker {
        producer_id: pid,
        producer_epoch: epoch,
        commit: true,
        coordinator_epoch: 0,
        transaction_version,
        topic: TOPIC.into(),
        partition: 0,
    }
}

/// Sends the markers one after the other through one `PeerLinks` (so one connection) to the
/// broker on `port`, in an actix System of its own; each answer and how long it took.
fn send_markers(
    port: u16,
    markers: Vec<PeerMarker>,
    request_timeout: Duration,
) -> Vec<(Result<PeerMarkerAnswer, PeerSendError>, Duration)> {
    let system = actix::System::new();
    system.block_on(async move {
        let links = PeerLinks::new(PeerLinkConfig { request_timeout, ..PeerLinkConfig::default() }).start();
        let mut out = Vec::new();
        for m in markers {
            let started = Instant::now();
            let (tx, rx) = tokio::sync::oneshot::channel();
            links.send(SendPeerMarker { peer: peer(port), marker: m, reply: tx }).await.expect("peer link mailbox");
            out.push((rx.await.expect("the peer link answers every marker"), started.elapsed()));
        }
        out
    })
}

fn write_txn_markers_range(c: &mut Client) -> (i16, i16) {
    let resp: ApiVersionsResponse = c.call(ApiKey::ApiVersions, 3, ApiVersionsRequest::default());
    let k = resp.api_keys.iter().find(|k| k.api_key == ApiKey::WriteTxnMarkers as i16).expect("WriteTxnMarkers");
    (k.min_version, k.max_version)
}

#[test]
fn a_commit_marker_through_the_peer_link_uses_v2_when_the_peer_advertises_it() {
    let broker = Broker::start();
    let mut c = broker.client();
    assert_eq!(write_txn_markers_range(&mut c), (1, 2));
    create_topic(&mut c, TOPIC);
    let (pid, epoch) = open_transaction(&mut c);
    assert_eq!(fetch(&mut c, 1).1, 0, "eos-rules 51: the open transaction holds the LSO");

    let answers =
        send_markers(broker.port, vec![marker(pid, epoch, 2), marker(pid, epoch + 1, 2)], Duration::from_secs(10));
    let answers: Vec<PeerMarkerAnswer> = answers.into_iter().map(|(a, _)| a.expect("answered")).collect();
    // eos-rules 47: v2 carries TransactionVersion 2, so the peer applies the strict check: a
    // marker at the open transaction's epoch is late (47, which stops a coordinator: rule 50) ...
    assert_eq!(answers[0], PeerMarkerAnswer { error_code: 47, version: 2 });
    assert_eq!(peer_marker_outcome(answers[0].error_code), MarkerOutcome::Stuck);
    // ... and the post-prepare epoch (E+1, rule 37) commits.
    assert_eq!(answers[1], PeerMarkerAnswer { error_code: 0, version: 2 });

    let (hw, lso, data, control) = fetch(&mut c, 1);
    assert_eq!((hw, lso), (4, 4), "eos-rules 49, 51: the marker closed the transaction and the LSO moved");
    assert_eq!(data, 3, "read_committed sees the committed records");
    assert_eq!(control, vec![(pid, true)], "one COMMIT marker (eos-rules 45)");
    broker.finish();
}

#[test]
fn a_peer_limited_to_v1_gets_v1_markers_validated_the_legacy_way() {
    let broker = Broker::start_with_env(&[("KAAS_WRITE_TXN_MARKERS_MAX_VERSION", "1")]);
    let mut c = broker.client();
    assert_eq!(write_txn_markers_range(&mut c), (1, 1), "only v1 is advertised");
    create_topic(&mut c, TOPIC);
    let (pid, epoch) = open_transaction(&mut c);

    // The same marker the v2 peer refuses with 47: v1 carries no TransactionVersion, so the
    // peer checks it the legacy way (eos-rules 46: epoch >= stored) and commits.
    let answers = send_markers(broker.port, vec![marker(pid, epoch, 2)], Duration::from_secs(10));
    assert_eq!(answers[0].0, Ok(PeerMarkerAnswer { error_code: 0, version: 1 }));
    let (hw, lso, data, control) = fetch(&mut c, 1);
    assert_eq!((hw, lso, data), (4, 4, 3));
    assert_eq!(control, vec![(pid, true)]);

    // A v2 request is refused like any version the broker does not serve: the connection closes.
    let m = TxnMarker {
        producer_id: pid,
        producer_epoch: epoch + 1,
        commit: false,
        topics: vec![MarkerTopic { name: TOPIC.into(), partitions: vec![0] }],
        coordinator_epoch: 0,
        transaction_version: 2,
    };
    let mut raw = broker.client();
    assert!(raw_request_is_refused(&mut raw, 2, &encode_request(&[m], 2)));
    assert_eq!(fetch(&mut c, 0).0, 4, "nothing was written");
    broker.finish();
}

/// Sends WriteTxnMarkers `version` on a raw connection; true when the broker closes it unanswered.
fn raw_request_is_refused(c: &mut Client, version: i16, body: &[u8]) -> bool {
    use bytes::BufMut;
    use kafka_protocol::protocol::Encodable;
    use std::io::{Read, Write};
    let header = RequestHeader::default()
        .with_request_api_key(ApiKey::WriteTxnMarkers as i16)
        .with_request_api_version(version)
        .with_correlation_id(1)
        .with_client_id(Some(StrBytes::from_static_str("kaas-test")));
    let mut msg = bytes::BytesMut::new();
    header.encode(&mut msg, ApiKey::WriteTxnMarkers.request_header_version(version)).expect("header");
    msg.extend_from_slice(body);
    let mut frame = bytes::BytesMut::new();
    frame.put_i32(msg.len() as i32);
    frame.extend_from_slice(&msg);
    c.stream.write_all(&frame).expect("write");
    let mut buf = [0u8; 4];
    matches!(c.stream.read(&mut buf), Ok(0) | Err(_))
}

#[test]
fn a_dead_peer_answers_a_retriable_error_within_the_timeout() {
    let timeout = Duration::from_secs(2);
    // Nobody listens: refused at once.
    let dead = common::free_port();
    let (answer, took) = send_markers(dead, vec![marker(1, 0, 2)], timeout).remove(0);
    let e = answer.expect_err("nobody answers");
    assert!(matches!(e, PeerSendError::Unreachable(_)), "{e}");
    assert_eq!(peer_marker_outcome(peer_send_code(&e)), MarkerOutcome::Retry, "eos-rules 50: retried");
    assert!(took < timeout, "{took:?}");

    // A peer that accepts and never answers: the marker comes back TimedOut, in time, twice
    // (the second on a new connection).
    let silent = TcpListener::bind("127.0.0.1:0").expect("bind");
    let port = silent.local_addr().expect("addr").port();
    let answers = send_markers(port, vec![marker(1, 0, 2), marker(1, 0, 2)], timeout);
    for (answer, took) in answers {
        let e = answer.expect_err("the silent peer answers nothing");
        assert_eq!(e, PeerSendError::TimedOut(2_000));
        assert_eq!(peer_marker_outcome(peer_send_code(&e)), MarkerOutcome::Retry);
        assert!(took >= timeout - Duration::from_millis(100) && took < timeout * 2, "{took:?}");
    }
    drop(silent);
}

// --- an in-process transaction coordinator whose partition a real broker leads ---

async fn call(session: &Rc<Session>, key: ApiKey, version: i16, request: RequestKind) -> ResponseKind {
    let header = RequestHeader::default().with_request_api_key(key as i16).with_request_api_version(version);
    let d = Decoded { header, api_key: key, request: Request::Kafka(Box::new(request)) };
    dispatch(session.clone(), d).await.await.expect("an answer").response
}

async fn create(session: &Rc<Session>, topic: &str) {
    use kafka_protocol::messages::create_topics_request::CreatableTopic;
    let mut t = CreatableTopic::default();
    t.name = name(topic);
    t.num_partitions = 1;
    t.replication_factor = 1;
    let mut req = CreateTopicsRequest::default();
    req.topics.push(t);
    let ResponseKind::CreateTopics(r) = call(session, ApiKey::CreateTopics, 5, RequestKind::CreateTopics(req)).await
    else {
        panic!("CreateTopics answer")
    };
    assert_eq!(r.topics[0].error_code, 0);
}

/// InitProducerId, AddPartitionsToTxn (`TOPIC`-0) and EndTxn(commit), all TV1; (pid, epoch).
async fn commit_empty_transaction(session: &Rc<Session>, id: &str) -> (i64, i16) {
    let ResponseKind::InitProducerId(init) =
        call(session, ApiKey::InitProducerId, 2, RequestKind::InitProducerId(init_pid_req(id))).await
    else {
        panic!("InitProducerId answer")
    };
    assert_eq!(init.error_code, 0);
    let (pid, epoch) = (init.producer_id.0, init.producer_epoch);
    let add = RequestKind::AddPartitionsToTxn(add_partition_req(id, pid, epoch));
    let ResponseKind::AddPartitionsToTxn(add) = call(session, ApiKey::AddPartitionsToTxn, 3, add).await else {
        panic!("AddPartitionsToTxn answer")
    };
    assert_eq!(add.results_by_topic_v3_and_below[0].results_by_partition[0].partition_error_code, 0);
    let mut end = EndTxnRequest::default();
    end.transactional_id = txn_id(id);
    end.producer_id = ProducerId(pid);
    end.producer_epoch = epoch;
    end.committed = true;
    let ResponseKind::EndTxn(end) = call(session, ApiKey::EndTxn, 3, RequestKind::EndTxn(end)).await else {
        panic!("EndTxn answer")
    };
    assert_eq!(end.error_code, 0);
    (pid, epoch)
}

async fn txn_state(session: &Rc<Session>, id: &str) -> String {
    let mut req = DescribeTransactionsRequest::default();
    req.transactional_ids = vec![txn_id(id)];
    let ResponseKind::DescribeTransactions(d) =
        call(session, ApiKey::DescribeTransactions, 0, RequestKind::DescribeTransactions(req)).await
    else {
        panic!("DescribeTransactions answer")
    };
    d.transaction_states[0].transaction_state.to_string()
}

/// Polls until the transaction reaches `state`, for at most `within`.
async fn reaches(session: &Rc<Session>, id: &str, state: &str, within: Duration) -> bool {
    let deadline = Instant::now() + within;
    loop {
        if txn_state(session, id).await == state {
            return true;
        }
        if Instant::now() > deadline {
            return false;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// Runs `body` against an in-process broker (the coordinator) on a temp dir.
fn with_coordinator<F, T>(body: impl FnOnce(Rc<Session>) -> F) -> T
where
    F: std::future::Future<Output = T>,
{
    let dir = tempfile::tempdir().expect("temp dir");
    let settings = Arc::new(common::cluster::in_process_settings(dir.path(), 2));
    let system = actix::System::new();
    let broker = system.block_on(async { kaas::server::Broker::start(&settings) }).expect("broker starts");
    let cluster_id: Arc<str> = "peer-markers".into();
    let session = broker.session(&settings, &cluster_id, "127.0.0.1".into());
    let out = system.block_on(body(session));
    system.block_on(broker.shutdown());
    broker.join();
    out
}

#[test]
fn a_coordinator_writes_the_marker_of_a_partition_a_peer_leads_over_the_wire() {
    let leader = Broker::start();
    let mut c = leader.client();
    create_topic(&mut c, TOPIC);
    let port = leader.port;
    let moved = Owned::Partition { topic: TOPIC.into(), partition: 0 };
    let pid = with_coordinator(|session| async move {
        create(&session, TOPIC).await;
        session.directory.update(|o| {
            o.set_peers([peer(port)]);
            assert!(o.grant(moved, Lease { node_id: PEER_NODE, epoch: 1 }));
        });
        let pid = commit_empty_transaction(&session, "coord-txn").await.0;
        // eos-rules 41: CompleteCommit only once the peer acknowledged the marker.
        assert!(reaches(&session, "coord-txn", "CompleteCommit", Duration::from_secs(20)).await);
        pid
    });
    // The peer wrote it: a COMMIT control record for the coordinator's producer (with no open
    // transaction there it is still appended: eos-rules 49).
    let (hw, _, data, control) = fetch(&mut c, 0);
    assert_eq!((hw, data), (1, 0));
    assert_eq!(control, vec![(pid, true)]);
    leader.finish();
}

#[test]
fn a_coordinator_keeps_retrying_a_dead_peer_without_hanging() {
    let dead = common::free_port();
    let moved = Owned::Partition { topic: TOPIC.into(), partition: 0 };
    with_coordinator(|session| async move {
        create(&session, TOPIC).await;
        session.directory.update(|o| {
            o.set_peers([peer(dead)]);
            assert!(o.grant(moved.clone(), Lease { node_id: PEER_NODE, epoch: 1 }));
        });
        commit_empty_transaction(&session, "stuck-txn").await;
        // eos-rules 50: unreachable is retried; the transaction waits in PrepareCommit ...
        tokio::time::sleep(Duration::from_millis(500)).await;
        assert_eq!(txn_state(&session, "stuck-txn").await, "PrepareCommit");
        // ... while the coordinator keeps answering.
        let started = Instant::now();
        let other = RequestKind::InitProducerId(init_pid_req("other-txn"));
        let ResponseKind::InitProducerId(init) = call(&session, ApiKey::InitProducerId, 2, other).await else {
            panic!("InitProducerId answer")
        };
        assert_eq!(init.error_code, 0);
        assert!(started.elapsed() < Duration::from_secs(2));
        // The partition is led here again: the retried marker lands and the transaction completes.
        let here = session.node_id();
        session.directory.update(|o| o.grant(moved.clone(), Lease { node_id: here, epoch: 2 }));
        assert!(reaches(&session, "stuck-txn", "CompleteCommit", Duration::from_secs(20)).await);
    });
}
