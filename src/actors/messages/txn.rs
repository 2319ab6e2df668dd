//! Messages to a transaction-coordinator shard.

use actix::Message;

use super::Reply;

pub use crate::store::txn::{PeerSendError, PidEpoch, TopicPartition, TxnError};

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

/// One transaction marker for one partition a peer broker leads (eos-rules 41, 45), sent with
/// WriteTxnMarkers by the peer link (`protocol::peer_link`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PeerMarker {
    pub producer_id: i64,
    pub producer_epoch: i16,
    pub commit: bool,
    /// The coordinator shard's lease epoch (eos-rules 48).
    pub coordinator_epoch: i32,
    /// The entry's client transaction version; only v2 requests carry it (eos-rules 43).
    pub transaction_version: i8,
    pub topic: String,
    pub partition: i32,
}

/// The peer's answer for the marker's partition, and the WriteTxnMarkers version it was sent with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PeerMarkerAnswer {
    pub error_code: i16,
    pub version: i16,
}

/// Sends `marker` to `peer` over its connection (one per peer broker). The reply comes within
/// the link's request timeout, a failure as a [`PeerSendError`] (eos-rules 50).
#[derive(Message)]
#[rtype(result = "()")]
pub struct SendPeerMarker {
    pub peer: crate::store::ownership::Broker,
    pub marker: PeerMarker,
    pub reply: Reply<Result<PeerMarkerAnswer, PeerSendError>>,
}
