//! Transactions over the wire against the real binary: LSO and aborted-transaction lists
//! (eos-rules 51-52), KIP-1228 marker validation through WriteTxnMarkers v1/v2 (46-47),
//! sequences across TV1 transactions (42), fencing (13, 18) and DescribeTransactions.

use crate::common;

use bytes::Bytes;
use common::fetch::{fetch_request, records as fetched_records};
use common::txn::{self, topic_name as name};
use common::{create_topic, txn_batch, Broker, Client};
use kaas::protocol::txn_markers_codec::{encode_request, MarkerTopic, TxnMarker};
use kafka_protocol::messages::add_partitions_to_txn_request::AddPartitionsToTxnTopic;
use kafka_protocol::messages::produce_request::{PartitionProduceData, TopicProduceData};
use kafka_protocol::messages::*;
use kafka_protocol::protocol::Decodable;

const TOPIC: &str = "tw";
const TXN: &str = "wire-txn";

fn txn_id() -> TransactionalId {
    txn::transactional_id(TXN)
}

/// (error, pid, epoch)
fn init_pid(c: &mut Client) -> (i16, i64, i16) {
    txn::init_producer_id(c, TXN)
}

fn add_partition(c: &mut Client, pid: i64, epoch: i16) -> i16 {
    txn::add_partition(c, TXN, TOPIC, pid, epoch)
}

fn produce(c: &mut Client, records: Bytes) -> (i16, i64) {
    txn::produce(c, Some(TXN), TOPIC, records)
}

fn end_txn(c: &mut Client, pid: i64, epoch: i16, commit: bool) -> i16 {
    txn::end_txn(c, TXN, pid, epoch, commit)
}

/// (high watermark, last stable offset, aborted (pid, first offset), records a read_committed
/// consumer keeps: it drops aborted transactions' records as Kafka consumers do)
fn fetch(c: &mut Client, isolation_level: i8) -> (i64, i64, Vec<(i64, i64)>, usize) {
    let resp: FetchResponse = c.call(ApiKey::Fetch, 11, fetch_request(TOPIC, 0, 0, isolation_level));
    let p = &resp.responses[0].partitions[0];
    assert_eq!(p.error_code, 0);
    let aborted: Vec<(i64, i64)> =
        p.aborted_transactions.iter().flatten().map(|a| (a.producer_id.0, a.first_offset)).collect();
    let mut n = 0;
    let mut pending_aborts: Vec<(i64, i64)> = aborted.clone();
    let mut aborting = std::collections::HashSet::new();
    for r in &fetched_records(p).expect("batches") {
        if let Some(i) = pending_aborts.iter().position(|(pid, first)| *pid == r.producer_id && r.offset >= *first) {
            aborting.insert(pending_aborts.remove(i).0);
        }
        if r.control {
            aborting.remove(&r.producer_id);
        } else if !(r.transactional && aborting.contains(&r.producer_id)) {
            n += 1;
        }
    }
    (p.high_watermark, p.last_stable_offset, aborted, n)
}

fn write_marker(c: &mut Client, version: i16, pid: i64, epoch: i16, commit: bool, tv: i8) -> i16 {
    let marker = TxnMarker {
        producer_id: pid,
        producer_epoch: epoch,
        commit,
        topics: vec![MarkerTopic { name: TOPIC.into(), partitions: vec![0] }],
        coordinator_epoch: 0,
        transaction_version: tv,
    };
    let mut body = c.call_raw(ApiKey::WriteTxnMarkers, version, &encode_request(&[marker], version));
    let resp = WriteTxnMarkersResponse::decode(&mut body, 1).expect("response");
    resp.markers[0].topics[0].partitions[0].error_code
}

fn describe(c: &mut Client) -> (String, Vec<i32>) {
    let mut req = DescribeTransactionsRequest::default();
    req.transactional_ids = vec![txn_id()];
    let resp: DescribeTransactionsResponse = c.call(ApiKey::DescribeTransactions, 0, req);
    let t = &resp.transaction_states[0];
    assert_eq!(t.error_code, 0);
    (t.transaction_state.to_string(), t.topics.iter().flat_map(|d| d.partitions.clone()).collect())
}

#[test]
fn transactions_markers_and_fencing_on_the_wire() {
    let broker = Broker::start();
    let mut c = broker.client();
    create_topic(&mut c, TOPIC);
    let (code, pid, epoch) = init_pid(&mut c);
    assert_eq!((code, epoch), (0, 0), "eos-rules 7: a new transactional id starts at epoch 0");

    // eos-rules 27: a transactional batch for a partition not in the transaction is refused.
    assert_eq!(produce(&mut c, txn_batch(pid, 0, 0, 3, "early")).0, 48);
    assert_eq!(add_partition(&mut c, pid, 0), 0);
    assert_eq!(produce(&mut c, txn_batch(pid, 0, 0, 3, "t1")), (0, 0));
    assert_eq!(describe(&mut c), ("Ongoing".to_string(), vec![0]));
    // eos-rules 51: the open transaction holds the LSO at its first offset.
    let (hw, lso, _, n) = fetch(&mut c, 1);
    assert_eq!((hw, lso, n), (3, 0, 0));
    assert_eq!(fetch(&mut c, 0).3, 3, "read_uncommitted sees the open transaction");

    // eos-rules 47: a TV2 marker at the current epoch with the transaction open is late: refused.
    assert_eq!(write_marker(&mut c, 2, pid, 0, false, 2), 47);
    // eos-rules 46: a legacy (v1) marker at the same epoch is accepted: it aborts it here.
    assert_eq!(write_marker(&mut c, 1, pid, 0, false, 0), 0);
    // eos-rules 52: the abort is listed and the LSO moved past the marker.
    let (hw, lso, aborted, _) = fetch(&mut c, 1);
    assert_eq!((hw, lso, aborted), (4, 4, vec![(pid, 0)]));
    assert_eq!(fetch(&mut c, 0).2, Vec::<(i64, i64)>::new(), "no aborted list for read_uncommitted");

    // The coordinator still finishes its transaction; then a second one, with TV1 sequences
    // continuing (eos-rules 42).
    assert_eq!(end_txn(&mut c, pid, 0, false), 0);
    let mut ongoing_add = 51;
    for _ in 0..100 {
        ongoing_add = add_partition(&mut c, pid, 0);
        if ongoing_add != 51 {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    assert_eq!(ongoing_add, 0, "eos-rules 41: CONCURRENT_TRANSACTIONS only until the markers are in");
    let (code, base) = produce(&mut c, txn_batch(pid, 0, 3, 2, "t2"));
    assert_eq!(code, 0);
    assert!(base >= 5, "after the two markers");
    assert_eq!(end_txn(&mut c, pid, 0, true), 0);
    let mut visible = 0;
    for _ in 0..100 {
        let (_, _, aborted, n) = fetch(&mut c, 1);
        assert_eq!(aborted, vec![(pid, 0)]);
        visible = n;
        if n == 2 {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    assert_eq!(visible, 2, "only the committed transaction is visible read_committed");

    // eos-rules 13: a new instance while a transaction is open: 51, then epoch + 2; the open
    // transaction is aborted and the zombie's old epoch is refused (eos-rules 18).
    let mut epoch1 = -1;
    for _ in 0..100 {
        let (code, _, e) = init_pid(&mut c);
        if code == 0 {
            epoch1 = e;
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    assert_eq!(epoch1, 1, "eos-rules 8: re-init bumps the epoch");
    assert_eq!(add_partition(&mut c, pid, 1), 0);
    assert_eq!(produce(&mut c, txn_batch(pid, 1, 0, 1, "t3")).0, 0);
    assert_eq!(init_pid(&mut c).0, 51, "rejoin while Ongoing answers CONCURRENT_TRANSACTIONS");
    let mut epoch3 = -1;
    for _ in 0..100 {
        let (code, p, e) = init_pid(&mut c);
        if code == 0 {
            assert_eq!(p, pid);
            epoch3 = e;
            break;
        }
        assert_eq!(code, 51);
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    assert_eq!(epoch3, 3, "the fence epoch (2) is never handed out");
    assert_eq!(produce(&mut c, txn_batch(pid, 1, 1, 1, "zombie")).0, 47);
    assert_eq!(add_partition(&mut c, pid, 1), 90, "the zombie is fenced at the coordinator");
    let (_, lso, aborted, n) = fetch(&mut c, 1);
    assert_eq!(n, 2, "the fenced transaction was aborted");
    assert_eq!(aborted.len(), 2);
    assert_eq!(lso, fetch(&mut c, 0).0);
}

#[test]
fn produce_and_add_partitions_prechecks() {
    let broker = Broker::start();
    let mut c = broker.client();
    create_topic(&mut c, TOPIC);
    let (_, pid, _) = init_pid(&mut c);

    // eos-rules 24: transactional batches without a transactional id.
    let mut p = PartitionProduceData::default();
    p.index = 0;
    p.records = Some(txn_batch(pid, 0, 0, 1, "x"));
    let mut t = TopicProduceData::default();
    t.name = name(TOPIC);
    t.partition_data = vec![p.clone()];
    let mut req = ProduceRequest::default();
    req.transactional_id = None;
    req.acks = -1;
    req.timeout_ms = 1000;
    req.topic_data = vec![t.clone()];
    let resp: ProduceResponse = c.call(ApiKey::Produce, 9, req.clone());
    assert_eq!(resp.responses[0].partition_responses[0].error_code, 53);

    // eos-rules 25: two (pid, epoch) pairs in one request.
    let mut p2 = p.clone();
    p2.records = Some(txn_batch(pid + 1, 0, 0, 1, "y"));
    let mut t2 = t.clone();
    t2.partition_data = vec![p, p2];
    req.transactional_id = Some(txn_id());
    req.topic_data = vec![t2];
    let resp: ProduceResponse = c.call(ApiKey::Produce, 9, req);
    assert!(resp.responses[0].partition_responses.iter().all(|p| p.error_code == 49));

    // eos-rules 31: one unknown partition fails the whole add: 3 there, 55 on the rest.
    let mut known = AddPartitionsToTxnTopic::default();
    known.name = name(TOPIC);
    known.partitions = vec![0];
    let mut unknown = AddPartitionsToTxnTopic::default();
    unknown.name = name("no-such-topic");
    unknown.partitions = vec![0];
    let mut add = AddPartitionsToTxnRequest::default();
    add.v3_and_below_transactional_id = txn_id();
    add.v3_and_below_producer_id = ProducerId(pid);
    add.v3_and_below_producer_epoch = 0;
    add.v3_and_below_topics = vec![known, unknown];
    let resp: AddPartitionsToTxnResponse = c.call(ApiKey::AddPartitionsToTxn, 3, add);
    let codes: Vec<(String, i16)> = resp
        .results_by_topic_v3_and_below
        .iter()
        .flat_map(|t| t.results_by_partition.iter().map(move |p| (t.name.0.to_string(), p.partition_error_code)))
        .collect();
    assert!(codes.contains(&(TOPIC.to_string(), 55)) && codes.contains(&("no-such-topic".to_string(), 3)), "{codes:?}");
    assert_eq!(describe(&mut c).0, "Empty", "nothing was added");

    // eos-rules 44: a marker for a partition this broker does not host.
    let marker = TxnMarker {
        producer_id: pid,
        producer_epoch: 0,
        commit: true,
        topics: vec![MarkerTopic { name: "no-such-topic".into(), partitions: vec![0] }],
        coordinator_epoch: 0,
        transaction_version: 2,
    };
    let mut body = c.call_raw(ApiKey::WriteTxnMarkers, 2, &encode_request(&[marker], 2));
    let resp = WriteTxnMarkersResponse::decode(&mut body, 1).expect("response");
    assert_eq!(resp.markers[0].topics[0].partitions[0].error_code, 3);
}

/// A call the coordinator would answer CONCURRENT_TRANSACTIONS only because the previous
/// transaction is still completing (its markers being written) waits for the completion and is
/// answered as a retry then would be (store::txn::parking): here an AddPartitionsToTxn sent
/// right behind the EndTxn, without waiting for its answer. Without the wait it is answered 51.
#[test]
fn a_call_behind_a_completing_transaction_waits_for_it() {
    use kafka_protocol::protocol::Encodable;
    let broker = Broker::start();
    let mut c = broker.client();
    create_topic(&mut c, TOPIC);
    let (_, pid, epoch) = init_pid(&mut c);
    for round in 0..5 {
        assert_eq!(add_partition(&mut c, pid, epoch), 0, "round {round}");
        let (code, _) = produce(&mut c, txn_batch(pid, epoch, round * 3, 3, "t"));
        assert_eq!(code, 0, "round {round}");
        let end = txn::end_txn_request(TXN, pid, epoch, true);
        let mut end_body = bytes::BytesMut::new();
        end.encode(&mut end_body, 3).expect("encode");
        let add = txn::add_partition_request(TXN, TOPIC, pid, epoch);
        let mut add_body = bytes::BytesMut::new();
        add.encode(&mut add_body, 3).expect("encode");
        // Both on the wire before either is answered.
        let end_id = c.send_raw(ApiKey::EndTxn, 3, &end_body);
        let add_id = c.send_raw(ApiKey::AddPartitionsToTxn, 3, &add_body);
        let mut end_resp = c.receive_raw(ApiKey::EndTxn, 3, end_id);
        let end_resp = EndTxnResponse::decode(&mut end_resp, 3).expect("EndTxn response");
        assert_eq!(end_resp.error_code, 0, "round {round}");
        let mut add_resp = c.receive_raw(ApiKey::AddPartitionsToTxn, 3, add_id);
        let add_resp = AddPartitionsToTxnResponse::decode(&mut add_resp, 3).expect("AddPartitionsToTxn response");
        let code = add_resp.results_by_topic_v3_and_below[0].results_by_partition[0].partition_error_code;
        assert_eq!(code, 0, "round {round}: the next transaction's AddPartitionsToTxn waited for the commit");
        assert_eq!(end_txn(&mut c, pid, epoch, false), 0, "round {round}: the next transaction aborts");
    }
    broker.finish();
}
