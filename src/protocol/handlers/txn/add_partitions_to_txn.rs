//! AddPartitionsToTxn (key 24): v0-3 from clients, v4-5 batched from brokers with VerifyOnly
//! (eos-rules 30-33).

use std::collections::{BTreeMap, BTreeSet};
use std::rc::Rc;

use kafka_protocol::messages::add_partitions_to_txn_request::AddPartitionsToTxnTopic;
use kafka_protocol::messages::add_partitions_to_txn_response::{
    AddPartitionsToTxnPartitionResult, AddPartitionsToTxnResult, AddPartitionsToTxnTopicResult,
};
use kafka_protocol::messages::{AddPartitionsToTxnRequest, AddPartitionsToTxnResponse, TopicName, TransactionalId};
use tokio::sync::oneshot;

use crate::actors::messages::{TopicPartition, TxnOp, VerifyTxn};
use crate::error_code::ResponseError;
use crate::protocol::{str_bytes, Session};
use crate::store::auth::acl;
use crate::store::coordinator_key::OFFSETS_PARTITIONS;
use crate::store::txn::{
    add_partitions_authorization, add_partitions_is_broker_batch, add_partitions_txn_version,
    unknown_partitions_precheck, CoordinatorApi, TxnError, CONSUMER_OFFSETS_TOPIC,
};

/// The partitions of `topics` this broker does not know (eos-rules 31). `__consumer_offsets`
/// is known: a group coordinator on another broker adds a group's offsets partition this way
/// (TxnOffsetCommit v5, KIP-890).
async fn unknown_partitions(s: &Session, topics: &[AddPartitionsToTxnTopic]) -> BTreeSet<TopicPartition> {
    let mut bad = BTreeSet::new();
    for t in topics {
        let known = if t.name.0.as_str() == CONSUMER_OFFSETS_TOPIC {
            Some(OFFSETS_PARTITIONS)
        } else {
            s.topic(&t.name.0, false).await.ok().map(|h| h.meta.partitions)
        };
        for p in &t.partitions {
            if known.is_none_or(|n| *p < 0 || *p >= n) {
                bad.insert((t.name.0.to_string(), *p));
            }
        }
    }
    bad
}

fn partition_set(topics: &[AddPartitionsToTxnTopic]) -> BTreeSet<TopicPartition> {
    topics.iter().flat_map(|t| t.partitions.iter().map(move |p| (t.name.0.to_string(), *p))).collect()
}

fn results(codes: &BTreeMap<TopicPartition, i16>) -> Vec<AddPartitionsToTxnTopicResult> {
    let mut out: Vec<AddPartitionsToTxnTopicResult> = Vec::new();
    for ((topic, partition), code) in codes {
        let mut p = AddPartitionsToTxnPartitionResult::default();
        p.partition_index = *partition;
        p.partition_error_code = *code;
        match out.last_mut() {
            Some(t) if t.name.0.as_str() == topic => t.results_by_partition.push(p),
            _ => {
                let mut t = AddPartitionsToTxnTopicResult::default();
                t.name = TopicName(str_bytes(topic));
                t.results_by_partition.push(p);
                out.push(t);
            }
        }
    }
    out
}

/// One transaction's add (or verification); per-partition codes.
async fn one(
    s: &Session,
    version: i16,
    id: &TransactionalId,
    producer_id: i64,
    epoch: i16,
    verify_only: bool,
    topics: &[AddPartitionsToTxnTopic],
) -> BTreeMap<TopicPartition, i16> {
    let partitions = partition_set(topics);
    // eos-rules 30: a client's add needs WRITE on the transactional id first, as Kafka checks,
    // then on each topic; a broker's batch (CLUSTER_ACTION, checked for the whole request) none.
    let broker_batch = add_partitions_is_broker_batch(version);
    let may_write = broker_batch || s.authorized(acl::OP_WRITE, acl::RESOURCE_TRANSACTIONAL_ID, &id.0);
    if let Err(e) = add_partitions_authorization(false, true, may_write) {
        return partitions.into_iter().map(|tp| (tp, e.code())).collect();
    }
    let unauthorized: BTreeSet<String> = topics
        .iter()
        .map(|t| t.name.0.to_string())
        .filter(|t| !broker_batch && !s.authorized(acl::OP_WRITE, acl::RESOURCE_TOPIC, t))
        .collect();
    // eos-rules 31: checked per transaction, also within a v4+ batch.
    if let Some(codes) = unknown_partitions_precheck(&partitions, &unauthorized, &unknown_partitions(s, topics).await) {
        return codes;
    }
    if verify_only {
        let (tx, rx) = oneshot::channel();
        let msg = VerifyTxn {
            transactional_id: id.0.to_string(),
            producer_id,
            epoch,
            partitions: partitions.clone(),
            reply: tx,
        };
        let answer = match s.txn_shard(&id.0) {
            Ok(shard) if shard.send(msg).await.is_ok() => rx.await.ok(),
            _ => None,
        };
        return match answer {
            Some(map) => map.into_iter().map(|(tp, r)| (tp, r.err().map_or(0, |e| e.code()))).collect(),
            None => partitions.into_iter().map(|tp| (tp, TxnError::NotCoordinator.code())).collect(),
        };
    }
    let txn_version = add_partitions_txn_version(version);
    let op = TxnOp::AddPartitions { producer_id, epoch, partitions: partitions.clone(), txn_version };
    let code = match s.txn_call(&id.0, op).await {
        Ok(_) => 0,
        Err(e) => e.for_version(CoordinatorApi::AddPartitionsToTxn, version).code(),
    };
    partitions.into_iter().map(|tp| (tp, code)).collect()
}

pub async fn handle(s: Rc<Session>, version: i16, req: AddPartitionsToTxnRequest) -> AddPartitionsToTxnResponse {
    let mut resp = AddPartitionsToTxnResponse::default();
    // eos-rules 30: v4+ batches come from brokers verifying a transaction: CLUSTER_ACTION.
    let batch = add_partitions_is_broker_batch(version);
    if batch && add_partitions_authorization(true, s.authorized_cluster(acl::OP_CLUSTER_ACTION), true).is_err() {
        resp.error_code = ResponseError::ClusterAuthorizationFailed.code();
        return resp;
    }
    if !add_partitions_is_broker_batch(version) {
        let codes = one(
            &s,
            version,
            &req.v3_and_below_transactional_id,
            req.v3_and_below_producer_id.0,
            req.v3_and_below_producer_epoch,
            false,
            &req.v3_and_below_topics,
        )
        .await;
        resp.results_by_topic_v3_and_below = results(&codes);
        return resp;
    }
    for t in &req.transactions {
        let codes =
            one(&s, version, &t.transactional_id, t.producer_id.0, t.producer_epoch, t.verify_only, &t.topics).await;
        let mut r = AddPartitionsToTxnResult::default();
        r.transactional_id = t.transactional_id.clone();
        r.topic_results = results(&codes);
        resp.results_by_transaction.push(r);
    }
    resp
}
