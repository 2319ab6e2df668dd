//! Messages to a transaction-coordinator shard.

use actix::Message;

use super::Reply;

pub use crate::store::txn::{PidEpoch, TopicPartition, TxnError};

/// What a transaction coordinator answers: the live (pid, epoch) or the (undowngraded) error.
pub type TxnAnswer = Result<PidEpoch, TxnError>;

#[derive(Debug, Clone)]
pub enum TxnOp {
    InitProducerId {
        timeout_ms: i32,
        claim: Option<(i64, i16)>,
    },
    AddPartitions {
        producer_id: i64,
        epoch: i16,
        partitions: std::collections::BTreeSet<TopicPartition>,
        txn_version: i8,
    },
    AddOffsets {
        producer_id: i64,
        epoch: i16,
        offsets_partition: i32,
    },
    EndTxn {
        producer_id: i64,
        epoch: i16,
        commit: bool,
        tv2: bool,
    },
}

/// A client's transactional request, routed to the shard owning `transactional_id`.
#[derive(Message)]
#[rtype(result = "()")]
pub struct TxnCall {
    pub transactional_id: String,
    pub op: TxnOp,
    pub reply: Reply<TxnAnswer>,
}

/// eos-rules 27/33: is each partition part of the ongoing transaction at (pid, epoch)?
#[derive(Message)]
#[rtype(result = "()")]
pub struct VerifyTxn {
    pub transactional_id: String,
    pub producer_id: i64,
    pub epoch: i16,
    pub partitions: std::collections::BTreeSet<TopicPartition>,
    pub reply: Reply<std::collections::BTreeMap<TopicPartition, Result<(), TxnError>>>,
}

/// Reaper tick for one transactional id: abort it at epoch + 1 if it is overdue (eos-rules 53),
/// or expire it if idle (eos-rules 55).
#[derive(Message)]
#[rtype(result = "()")]
pub struct BumpEpoch {
    pub transactional_id: String,
}

/// DescribeTransactions / ListTransactions: the shard's entries (all, or the named ones).
#[derive(Message)]
#[rtype(result = "()")]
pub struct InspectTxns {
    /// None = every entry of the shard.
    pub ids: Option<Vec<String>>,
    pub reply: Reply<Vec<(String, Option<crate::store::txn::TxnEntry>)>>,
}
