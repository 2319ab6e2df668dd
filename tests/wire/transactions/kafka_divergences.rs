//! The four divergences from Apache Kafka 4.4 that the first differential run found,
//! reduced by hand and replayed here against the real binary on a TV1 and a TV2 broker.
//! Every expected answer below is what Apache Kafka 4.4.0 answered to the same sequence
//! (transactional Produce v8 with explicit AddPartitionsToTxn v3, WriteTxnMarkers v1), but
//! the refused gap of divergence 2 (eos-rules 15, Kafka 4.5's answer).

use crate::common;

use bytes::Bytes;
use common::{create_topic_with, txn_batch, Broker, Client};
use kaas::protocol::txn_markers_codec::{encode_request, MarkerTopic, TxnMarker};
use kafka_protocol::messages::add_partitions_to_txn_request::AddPartitionsToTxnTopic;
use kafka_protocol::messages::*;
use kafka_protocol::protocol::{Decodable, StrBytes};

const TOPIC: &str = "div";

/// One transactional id on one client.
struct Txn<'a> {
    c: &'a mut Client,
    id: &'static str,
}

impl Txn<'_> {
    fn txn_id(&self) -> TransactionalId {
        TransactionalId(StrBytes::from_static_str(self.id))
    }

    /// InitProducerId v4, with a KIP-360 claim of (pid, epoch) or none; retried while the
    /// coordinator answers CONCURRENT_TRANSACTIONS (51), as clients do. (error, pid, epoch)
    fn init(&mut self, claim: Option<(i64, i16)>) -> (i16, i64, i16) {
        for _ in 0..200 {
            let answer = self.init_once(claim);
            if answer.0 != 51 {
                return answer;
            }
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
        panic!("InitProducerId kept answering CONCURRENT_TRANSACTIONS");
    }

    /// One InitProducerId v4.
    fn init_once(&mut self, claim: Option<(i64, i16)>) -> (i16, i64, i16) {
        let mut req = InitProducerIdRequest::default();
        req.transactional_id = Some(self.txn_id());
        req.transaction_timeout_ms = 60_000;
        let (pid, epoch) = claim.unwrap_or((-1, -1));
        req.producer_id = ProducerId(pid);
        req.producer_epoch = epoch;
        let resp: InitProducerIdResponse = self.c.call(ApiKey::InitProducerId, 4, req);
        (resp.error_code, resp.producer_id.0, resp.producer_epoch)
    }

    /// AddPartitionsToTxn v3; the codes of the partitions in order.
    fn add(&mut self, pid: i64, epoch: i16, partitions: &[i32]) -> Vec<i16> {
        let mut t = AddPartitionsToTxnTopic::default();
        t.name = TopicName(StrBytes::from_static_str(TOPIC));
        t.partitions = partitions.to_vec();
        let mut req = AddPartitionsToTxnRequest::default();
        req.v3_and_below_transactional_id = self.txn_id();
        req.v3_and_below_producer_id = ProducerId(pid);
        req.v3_and_below_producer_epoch = epoch;
        req.v3_and_below_topics = vec![t];
        let resp: AddPartitionsToTxnResponse = self.c.call(ApiKey::AddPartitionsToTxn, 3, req);
        let mut codes: Vec<(i32, i16)> = resp.results_by_topic_v3_and_below[0]
            .results_by_partition
            .iter()
            .map(|r| (r.partition_index, r.partition_error_code))
            .collect();
        codes.sort();
        codes.into_iter().map(|(_, code)| code).collect()
    }

    /// Transactional Produce v8 of one batch; (error, base offset).
    fn produce(&mut self, partition: i32, records: Bytes) -> (i16, i64) {
        let txn = Some(self.txn_id());
        let resp = common::produce_one(self.c, 8, txn, TopicName(StrBytes::from_static_str(TOPIC)), partition, records);
        let p = &resp.responses[0].partition_responses[0];
        (p.error_code, p.base_offset)
    }

    /// Waits until DescribeTransactions shows `state` (the coordinator's markers are in).
    fn wait_for_state(&mut self, state: &str) {
        let mut seen = String::new();
        for _ in 0..250 {
            let mut req = DescribeTransactionsRequest::default();
            req.transactional_ids = vec![self.txn_id()];
            let resp: DescribeTransactionsResponse = self.c.call(ApiKey::DescribeTransactions, 0, req);
            seen = resp.transaction_states[0].transaction_state.to_string();
            if seen == state {
                return;
            }
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
        panic!("the transaction stayed in {seen}, never {state}");
    }

    /// WriteTxnMarkers v1 for one partition.
    fn marker(&mut self, pid: i64, epoch: i16, commit: bool, partition: i32) -> i16 {
        let marker = TxnMarker {
            producer_id: pid,
            producer_epoch: epoch,
            commit,
            topics: vec![MarkerTopic { name: TOPIC.into(), partitions: vec![partition] }],
            coordinator_epoch: 0,
            transaction_version: 0,
        };
        let mut body = self.c.call_raw(ApiKey::WriteTxnMarkers, 1, &encode_request(&[marker], 1));
        let resp = WriteTxnMarkersResponse::decode(&mut body, 1).expect("response");
        resp.markers[0].topics[0].partitions[0].error_code
    }
}

/// Runs `scenario` on a fresh broker of each transaction version.
fn on_tv1_and_tv2(scenario: fn(&mut Txn<'_>)) {
    for tv in ["1", "2"] {
        let broker = Broker::start_with_env(&[("KAAS_TRANSACTION_VERSION", tv)]);
        let mut c = broker.client();
        create_topic_with(&mut c, TOPIC, 2);
        scenario(&mut Txn { c: &mut c, id: "div-txn" });
    }
}

/// Divergence 1: a batch whose verification failed leaves its sequence as the lowest the
/// partition accepts once verified (Kafka's VerificationStateEntry): a later, higher first
/// batch is out of order. eos-rules 28.
#[test]
fn a_failed_verification_keeps_its_lowest_sequence() {
    on_tv1_and_tv2(|t| {
        let (code, pid, epoch) = t.init(None);
        assert_eq!((code, epoch), (0, 0));
        assert_eq!(t.produce(0, txn_batch(pid, 0, 0, 1, "unadded")).0, 48, "not in the transaction");
        assert_eq!(t.add(pid, 0, &[0, 1]), vec![0, 0]);
        assert_eq!(t.produce(0, txn_batch(pid, 0, 3, 1, "gap")).0, 45, "above the lowest sequence seen");
        assert_eq!(t.produce(0, txn_batch(pid, 0, 0, 1, "first")), (0, 0), "the lowest one is taken");
    });
}

/// Divergence 2: epoch bumps at the coordinator (fences) are no producer state on a partition.
/// Found as kaas refusing a first batch at sequence 3 because of the fence, where Apache Kafka
/// 4.4 appended it; since then kaas refuses a first batch past sequence 0 from any producer id
/// that never wrote to the partition (eos-rules 15, as Kafka 4.5 for a partition that never
/// held a record, KAFKA-15591), so here only the sequence-0 batch is Kafka 4.4's answer: the
/// fence leaves the epoch the producer writes at to its batches.
#[test]
fn a_fence_is_no_producer_state_on_a_partition() {
    on_tv1_and_tv2(|t| {
        let (_, pid, _) = t.init(None);
        assert_eq!(t.init(None), (0, pid, 1));
        assert_eq!(t.init(None), (0, pid, 2));
        assert_eq!(t.add(pid, 2, &[0, 1]), vec![0, 0]);
        assert_eq!(t.produce(0, txn_batch(pid, 2, 3, 1, "gap")).0, 45, "rule 15: never wrote here");
        assert_eq!(t.produce(0, txn_batch(pid, 2, 0, 1, "first")), (0, 0), "the fence's epoch is the producer's");
    });
}

/// Divergence 3: a legacy marker for a producer that never wrote to the partition is written,
/// whatever epoch the coordinator has bumped to since. eos-rules 46.
#[test]
fn a_marker_for_a_producer_that_never_wrote_here_is_accepted() {
    on_tv1_and_tv2(|t| {
        let (_, pid, _) = t.init(None);
        assert_eq!(t.init(Some((pid, 0))), (0, pid, 1));
        assert_eq!(t.marker(pid, 0, false, 0), 0);
    });
}

/// Divergence 4: a lower epoch than the partition has seen is INVALID_PRODUCER_EPOCH before
/// the coordinator is asked whether the batch is in a transaction. eos-rules 18 (KAFKA-18042).
#[test]
fn a_lower_epoch_is_refused_before_verification() {
    on_tv1_and_tv2(|t| {
        let (_, pid, _) = t.init(None);
        assert_eq!(t.add(pid, 0, &[0]), vec![0]);
        // The claim fences the open transaction (and aborts it); it answers 51 meanwhile.
        assert_eq!(t.init_once(Some((pid, 0))).0, 51);
        t.wait_for_state("CompleteAbort");
        assert_eq!(t.marker(pid, 2, true, 0), 0);
        assert_eq!(t.produce(0, txn_batch(pid, 1, 0, 1, "stale")).0, 47);
    });
}
