//! A transactional producer's requests on partition 0 of one topic (InitProducerId v2,
//! AddPartitionsToTxn v3, Produce v9, EndTxn v3), shared by the wire tests of transactions and
//! of their metrics.

use bytes::Bytes;
use kafka_protocol::messages::add_partitions_to_txn_request::AddPartitionsToTxnTopic;
use kafka_protocol::messages::produce_request::{PartitionProduceData, TopicProduceData};
use kafka_protocol::messages::*;
use kafka_protocol::protocol::StrBytes;

use super::Client;

pub fn topic_name(s: &str) -> TopicName {
    TopicName(StrBytes::from_string(s.to_string()))
}

pub fn transactional_id(s: &str) -> TransactionalId {
    TransactionalId(StrBytes::from_string(s.to_string()))
}

/// InitProducerId v2 for `txn` (60 s transaction timeout): (error, pid, epoch).
pub fn init_producer_id(c: &mut Client, txn: &str) -> (i16, i64, i16) {
    let mut req = InitProducerIdRequest::default();
    req.transactional_id = Some(transactional_id(txn));
    req.transaction_timeout_ms = 60_000;
    let resp: InitProducerIdResponse = c.call(ApiKey::InitProducerId, 2, req);
    (resp.error_code, resp.producer_id.0, resp.producer_epoch)
}

/// AddPartitionsToTxn v3 of `topic`'s partition 0 (built apart to be pipelined too).
pub fn add_partition_request(txn: &str, topic: &str, pid: i64, epoch: i16) -> AddPartitionsToTxnRequest {
    let mut t = AddPartitionsToTxnTopic::default();
    t.name = topic_name(topic);
    t.partitions = vec![0];
    let mut req = AddPartitionsToTxnRequest::default();
    req.v3_and_below_transactional_id = transactional_id(txn);
    req.v3_and_below_producer_id = ProducerId(pid);
    req.v3_and_below_producer_epoch = epoch;
    req.v3_and_below_topics = vec![t];
    req
}

/// The partition's error code of an AddPartitionsToTxn v3 of `topic`'s partition 0.
pub fn add_partition(c: &mut Client, txn: &str, topic: &str, pid: i64, epoch: i16) -> i16 {
    let req = add_partition_request(txn, topic, pid, epoch);
    let resp: AddPartitionsToTxnResponse = c.call(ApiKey::AddPartitionsToTxn, 3, req);
    resp.results_by_topic_v3_and_below[0].results_by_partition[0].partition_error_code
}

/// Produce v9 (acks=all) of `records` to `topic`'s partition 0, transactional when `txn` is
/// given: (error, base offset).
pub fn produce(c: &mut Client, txn: Option<&str>, topic: &str, records: Bytes) -> (i16, i64) {
    let mut p = PartitionProduceData::default();
    p.index = 0;
    p.records = Some(records);
    let mut t = TopicProduceData::default();
    t.name = topic_name(topic);
    t.partition_data = vec![p];
    let mut req = ProduceRequest::default();
    req.transactional_id = txn.map(transactional_id);
    req.acks = -1;
    req.timeout_ms = 30_000;
    req.topic_data = vec![t];
    let resp: ProduceResponse = c.call(ApiKey::Produce, 9, req);
    let p = &resp.responses[0].partition_responses[0];
    (p.error_code, p.base_offset)
}

/// EndTxn v3 (built apart to be pipelined too).
pub fn end_txn_request(txn: &str, pid: i64, epoch: i16, commit: bool) -> EndTxnRequest {
    let mut req = EndTxnRequest::default();
    req.transactional_id = transactional_id(txn);
    req.producer_id = ProducerId(pid);
    req.producer_epoch = epoch;
    req.committed = commit;
    req
}

/// The error code of an EndTxn v3.
pub fn end_txn(c: &mut Client, txn: &str, pid: i64, epoch: i16, commit: bool) -> i16 {
    let resp: EndTxnResponse = c.call(ApiKey::EndTxn, 3, end_txn_request(txn, pid, epoch, commit));
    resp.error_code
}

/// TxnOffsetCommit v3 of `offset` for `topic`'s partition 0 in `group` (generation -1, no
/// member): the partition's error code.
pub fn txn_offset_commit(
    c: &mut Client,
    txn: &str,
    group: &str,
    topic: &str,
    (pid, epoch): (i64, i16),
    offset: i64,
) -> i16 {
    use kafka_protocol::messages::txn_offset_commit_request::{
        TxnOffsetCommitRequestPartition, TxnOffsetCommitRequestTopic,
    };
    let mut part = TxnOffsetCommitRequestPartition::default();
    part.committed_offset = offset;
    let mut t = TxnOffsetCommitRequestTopic::default();
    t.name = topic_name(topic);
    t.partitions.push(part);
    let mut req = TxnOffsetCommitRequest::default();
    req.transactional_id = transactional_id(txn);
    req.group_id = GroupId(StrBytes::from_string(group.to_string()));
    req.producer_id = ProducerId(pid);
    req.producer_epoch = epoch;
    req.generation_id = -1;
    req.topics.push(t);
    let resp: TxnOffsetCommitResponse = c.call(ApiKey::TxnOffsetCommit, 3, req);
    resp.topics[0].partitions[0].error_code
}
