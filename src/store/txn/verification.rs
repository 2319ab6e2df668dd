//! KIP-890 produce verification: the coordinator side of AddPartitionsToTxn VerifyOnly=true
//! (eos-rules 33), and how the coordinator's answers reach the client as Produce errors
//! (eos-rules 27, 29) or TxnOffsetCommit errors (eos-rules 58).

use std::collections::{BTreeMap, BTreeSet};

use super::{live, TopicPartition, TxnEntry, TxnError};
use crate::error_code::ResponseError;

/// AddPartitionsToTxn v4+ with VerifyOnly=true (eos-rules 33): no pending check; one error for
/// all partitions, else NONE if the partition is in the transaction, TRANSACTION_ABORTABLE if not.
pub fn verify_partitions(
    entry: Option<&TxnEntry>,
    transactional_id: &str,
    producer_id: i64,
    epoch: i16,
    partitions: &BTreeSet<TopicPartition>,
) -> BTreeMap<TopicPartition, Result<(), TxnError>> {
    let common = if transactional_id.is_empty() {
        Err(TxnError::InvalidRequest)
    } else {
        match live(entry) {
            None => Err(TxnError::InvalidProducerIdMapping),
            Some(e) if e.producer_id != producer_id => Err(TxnError::InvalidProducerIdMapping),
            Some(e) if e.producer_epoch != epoch => Err(TxnError::ProducerFenced),
            Some(e) if e.state.is_prepare() => Err(TxnError::ConcurrentTransactions),
            Some(e) => Ok(e),
        }
    };
    partitions
        .iter()
        .map(|tp| {
            let result = match common {
                Err(error) => Err(error),
                Ok(e) if e.partitions.contains(tp) => Ok(()),
                Ok(_) => Err(TxnError::TransactionAbortable),
            };
            (tp.clone(), result)
        })
        .collect()
}

/// eos-rules 29: a TV2 implicit add that meets CONCURRENT_TRANSACTIONS (the coordinator is still
/// writing the previous transaction's markers) is retried by the partition leader every 20 ms
/// for 100 ms before the error goes back to the producer.
#[derive(Debug, Clone, Copy)]
pub struct ImplicitAddRetry {
    deadline_ms: i64,
}

impl ImplicitAddRetry {
    pub const BACKOFF_MS: i64 = 20;
    pub const WITHIN_MS: i64 = 100;

    pub fn starting(now_ms: i64) -> ImplicitAddRetry {
        ImplicitAddRetry { deadline_ms: now_ms.saturating_add(Self::WITHIN_MS) }
    }

    /// How long to wait before asking again, or `None` to answer with `error` now.
    pub fn retry_after(&self, error: TxnError, now_ms: i64) -> Option<i64> {
        (error == TxnError::ConcurrentTransactions && now_ms < self.deadline_ms).then_some(Self::BACKOFF_MS)
    }
}

/// eos-rules 27/29: the coordinator's answer to a partition leader's verification (TV1) or
/// implicit add (TV2, Produce v12, after its CONCURRENT_TRANSACTIONS retries) as the Produce error.
pub fn produce_verification_error(error: TxnError, produce_version: i16) -> i16 {
    match error {
        TxnError::ProducerFenced => ResponseError::InvalidProducerEpoch.code(),
        TxnError::InvalidProducerIdMapping => ResponseError::InvalidProducerIdMapping.code(),
        TxnError::TransactionAbortable if produce_version >= 11 => ResponseError::TransactionAbortable.code(),
        TxnError::TransactionAbortable => ResponseError::InvalidTxnState.code(),
        // eos-rules 29: TV2 returns CONCURRENT_TRANSACTIONS unmapped once its retries are spent.
        TxnError::ConcurrentTransactions if produce_version >= 12 => ResponseError::ConcurrentTransactions.code(),
        // Retriable for the client: NOT_ENOUGH_REPLICAS.
        TxnError::ConcurrentTransactions | TxnError::NotCoordinator | TxnError::CoordinatorNotAvailable => {
            ResponseError::NotEnoughReplicas.code()
        }
        e => e.code(),
    }
}

/// eos-rules 58: the offsets partition's membership check of TxnOffsetCommit as its error.
pub fn txn_offset_commit_error(error: TxnError, version: i16) -> i16 {
    match error {
        TxnError::TransactionAbortable if version >= 4 => ResponseError::TransactionAbortable.code(),
        TxnError::TransactionAbortable => ResponseError::InvalidTxnState.code(),
        TxnError::ProducerFenced => ResponseError::InvalidProducerEpoch.code(),
        TxnError::NotCoordinator => ResponseError::CoordinatorNotAvailable.code(),
        e => e.code(),
    }
}
