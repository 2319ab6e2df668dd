//! AddPartitionsToTxn with VerifyOnly=false and AddOffsetsToTxn (eos-rules 31, 32, 34).
//! VerifyOnly=true is [`super::verification`].

use std::collections::{BTreeMap, BTreeSet};

use super::{live, Decision, TopicPartition, TxnEntry, TxnError, TxnState, CONSUMER_OFFSETS_TOPIC, TV_0};
use crate::error_code::ResponseError;

/// eos-rules 30: v4+ batches come from brokers and need CLUSTER_ACTION only (a top-level
/// CLUSTER_AUTHORIZATION_FAILED; Kafka checks no WRITE for them); a client's v0-3 needs WRITE
/// on its transactional id (TRANSACTIONAL_ID_AUTHORIZATION_FAILED on its every partition) and
/// on each topic ([`unknown_partitions_precheck`]).
pub fn add_partitions_authorization(
    broker_batch: bool,
    may_cluster_action: bool,
    may_write_transactional_id: bool,
) -> Result<(), ResponseError> {
    if broker_batch {
        return if may_cluster_action { Ok(()) } else { Err(ResponseError::ClusterAuthorizationFailed) };
    }
    if !may_write_transactional_id {
        return Err(ResponseError::TransactionalIdAuthorizationFailed);
    }
    Ok(())
}

/// eos-rules 31: one partition of a topic the client may not write (without WRITE on it), or one
/// unknown partition, fails the transaction's whole add before the coordinator sees it:
/// TOPIC_AUTHORIZATION_FAILED, else UNKNOWN_TOPIC_OR_PARTITION on the bad partitions,
/// OPERATION_NOT_ATTEMPTED on the rest, nothing added. `None`: all allowed and known, go on. In
/// a v4+ batch AK checks each transaction on its own, so one transaction's bad partition does
/// not fail the others.
pub fn unknown_partitions_precheck(
    partitions: &BTreeSet<TopicPartition>,
    unauthorized_topics: &BTreeSet<String>,
    unknown: &BTreeSet<TopicPartition>,
) -> Option<BTreeMap<TopicPartition, i16>> {
    if unknown.is_empty() && unauthorized_topics.is_empty() {
        return None;
    }
    let code = |tp: &TopicPartition| {
        if unauthorized_topics.contains(&tp.0) {
            ResponseError::TopicAuthorizationFailed.code()
        } else if unknown.contains(tp) {
            ResponseError::UnknownTopicOrPartition.code()
        } else {
            ResponseError::OperationNotAttempted.code()
        }
    };
    Some(partitions.iter().map(|tp| (tp.clone(), code(tp))).collect())
}

/// AddPartitionsToTxn (VerifyOnly=false) in AK 4.0 order; the single answer applies to every
/// partition. `txn_version`: TV_2 for the broker's v5 implicit add, else TV_0.
pub fn add_partitions(
    entry: Option<&TxnEntry>,
    transactional_id: &str,
    producer_id: i64,
    epoch: i16,
    partitions: &BTreeSet<TopicPartition>,
    now_ms: i64,
    txn_version: i8,
) -> Decision {
    add_checked(entry, transactional_id, producer_id, epoch)
        .map(|e| add_to(e, partitions, now_ms, txn_version))
        .unwrap_or_else(Decision::reject)
}

/// eos-rules 32.1-32.3, in AK 4.0 order.
fn add_checked<'a>(
    entry: Option<&'a TxnEntry>,
    transactional_id: &str,
    producer_id: i64,
    epoch: i16,
) -> Result<&'a TxnEntry, TxnError> {
    if transactional_id.is_empty() {
        return Err(TxnError::InvalidRequest);
    }
    let e = live(entry).ok_or(TxnError::InvalidProducerIdMapping)?;
    // 32.1: pending first (KAFKA-18660: no self-fencing across a TV2 rotation)
    if e.pending {
        return Err(TxnError::ConcurrentTransactions);
    }
    if e.producer_id != producer_id {
        return Err(TxnError::InvalidProducerIdMapping); // 32.2
    }
    if e.producer_epoch != epoch {
        return Err(TxnError::ProducerFenced); // 32.3
    }
    Ok(e)
}

fn add_to(e: &TxnEntry, partitions: &BTreeSet<TopicPartition>, now_ms: i64, txn_version: i8) -> Decision {
    match e.state {
        TxnState::PrepareCommit | TxnState::PrepareAbort => {
            Decision::reject(TxnError::ConcurrentTransactions) // 32.4
        }
        // 32.5: nothing new, no write
        TxnState::Ongoing if partitions.is_subset(&e.partitions) => Decision::reply(e.pid_epoch()),
        TxnState::Empty | TxnState::Ongoing | TxnState::CompleteCommit | TxnState::CompleteAbort => {
            // 32.6: union, Ongoing; the clock starts at the first add
            let mut next = e.successor(now_ms);
            if e.state != TxnState::Ongoing {
                next.txn_start_ms = now_ms;
            }
            next.state = TxnState::Ongoing;
            next.partitions.extend(partitions.iter().cloned());
            next.txn_version = txn_version;
            let ids = next.pid_epoch();
            Decision::write(next, Ok(ids), Vec::new())
        }
        TxnState::PrepareEpochFence | TxnState::Dead => Decision::reject(TxnError::UnknownServerError),
    }
}

/// AddOffsetsToTxn: rule 32 for the one `__consumer_offsets` partition of the group, which
/// the caller computes (eos-rules 34). TV2 clients never send it, so TV_0.
pub fn add_offsets(
    entry: Option<&TxnEntry>,
    transactional_id: &str,
    producer_id: i64,
    epoch: i16,
    offsets_partition: i32,
    now_ms: i64,
) -> Decision {
    let partitions = BTreeSet::from([(CONSUMER_OFFSETS_TOPIC.to_string(), offsets_partition)]);
    add_partitions(entry, transactional_id, producer_id, epoch, &partitions, now_ms, TV_0)
}
