//! The typed messages actors exchange. Replies travel on oneshot channels carried in the message,
//! so a sender can enqueue with `try_send` (bounded mailbox, order kept) and await the answer.

use actix::{Addr, Message};
use bytes::{Bytes, BytesMut};
use tokio::sync::oneshot;

use super::partition::PartitionLeader;
use crate::store::batch::BatchHeader;
use crate::store::topics::TopicMeta;

pub type Reply<T> = oneshot::Sender<T>;

/// Outcome of a Produce to one partition, as the ProduceResponse needs it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AppendAck {
    pub error_code: i16,
    pub base_offset: i64,
    pub log_append_time: i64,
    /// eos-rules 22: -1 where Apache Kafka leaves it unset.
    pub log_start_offset: i64,
}

/// Append one validated client batch. With acks=0 there is no reply.
#[derive(Message)]
#[rtype(result = "()")]
pub struct Append {
    pub data: BytesMut,
    pub header: BatchHeader,
    /// For a transactional batch that opens a transaction here: how the coordinator confirmed
    /// the partition (eos-rules 27-29).
    pub verified: Verified,
    pub reply: Option<Reply<AppendAck>>,
}

pub use crate::store::producer_state::Verified;

/// Before the first transactional batch of (producer id, epoch) on a partition: answers None when
/// a transaction is already open here at that epoch, else a guard to verify with the
/// coordinator; a marker for the producer in between invalidates the guard (eos-rules 28).
#[derive(Message)]
#[rtype(result = "()")]
pub struct BeginVerification {
    pub producer_id: i64,
    pub producer_epoch: i16,
    pub reply: Reply<Option<u64>>,
}

#[derive(Debug, Clone, Default)]
pub struct ReadResult {
    pub error_code: i16,
    pub high_watermark: i64,
    pub last_stable_offset: i64,
    pub log_start_offset: i64,
    pub records: Bytes,
    /// read_committed only: (producer id, first offset) of overlapping aborted transactions.
    pub aborted: Vec<(i64, i64)>,
}

/// Read batches from `offset`; `isolation_level` 1 stops at the last stable offset.
#[derive(Message)]
#[rtype(result = "()")]
pub struct Read {
    pub offset: i64,
    pub max_bytes: usize,
    pub isolation_level: i8,
    pub reply: Reply<ReadResult>,
}

/// Completes once the readable end (high watermark) moves past `offset`.
#[derive(Message)]
#[rtype(result = "()")]
pub struct WaitForData {
    pub offset: i64,
    pub reply: Reply<()>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OffsetAnswer {
    pub error_code: i16,
    pub offset: i64,
    pub timestamp: i64,
}

/// ListOffsets for one partition (timestamp or one of the -1..-5 specials).
#[derive(Message)]
#[rtype(result = "()")]
pub struct ListOffset {
    pub timestamp: i64,
    pub isolation_level: i8,
    pub reply: Reply<OffsetAnswer>,
}

/// Write a COMMIT/ABORT marker for `producer_id` (eos-rules 45-49); the reply is the Kafka
/// error code, sent once the marker is durable.
#[derive(Message)]
#[rtype(result = "()")]
pub struct WriteMarker {
    pub producer_id: i64,
    pub producer_epoch: i16,
    pub commit: bool,
    pub coordinator_epoch: i32,
    /// 0/1 legacy validation, 2+ strict (KIP-1228).
    pub txn_version: i8,
    pub reply: Reply<i16>,
}

/// A coordinator bumped `producer_id` to `epoch`: reject older epochs here from now on.
#[derive(Message, Debug, Clone, Copy)]
#[rtype(result = "()")]
pub struct FenceEpoch {
    pub producer_id: i64,
    pub epoch: i16,
}

/// The syncer made everything below `upto` durable (or failed to).
#[derive(Message)]
#[rtype(result = "()")]
pub struct Synced {
    pub upto: i64,
    pub result: Result<(), String>,
}

/// Flush, snapshot producer state and stop.
#[derive(Message)]
#[rtype(result = "()")]
pub struct Shutdown {
    pub reply: Reply<()>,
}

/// A topic and the partition-leader actors of its partitions.
#[derive(Debug, Clone)]
pub struct TopicHandle {
    pub meta: TopicMeta,
    pub partitions: Vec<Addr<PartitionLeader>>,
}

/// Looks a topic up, creating it with the default settings when `auto_create` allows.
#[derive(Message)]
#[rtype(result = "Result<TopicHandle, i16>")]
pub struct GetTopic {
    pub name: String,
    pub auto_create: bool,
}

#[derive(Message)]
#[rtype(result = "Vec<TopicMeta>")]
pub struct ListTopics;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TopicFailure {
    pub error_code: i16,
    pub message: String,
}

#[derive(Message)]
#[rtype(result = "Result<TopicMeta, TopicFailure>")]
pub struct CreateTopic {
    pub name: String,
    /// -1 = broker default.
    pub partitions: i32,
    /// As the request gave them; entries without a value set nothing.
    pub configs: Vec<(String, Option<String>)>,
    pub validate_only: bool,
}

#[derive(Message)]
#[rtype(result = "Result<TopicMeta, i16>")]
pub struct DeleteTopic {
    pub name: Option<String>,
    pub id: Option<uuid::Uuid>,
}

/// A fresh cluster-unique producer id (eos-rules 1).
#[derive(Message)]
#[rtype(result = "Result<i64, i16>")]
pub struct AllocateProducerId;

#[derive(Message)]
#[rtype(result = "()")]
pub struct ShutdownAll {
    pub reply: Reply<()>,
}

pub use crate::store::txn_state::{PidEpoch, TopicPartition, TxnError};

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

/// Fence (pid, epoch) on every local partition leader and in this broker's fence file.
#[derive(Message)]
#[rtype(result = "()")]
pub struct BroadcastFence {
    pub producer_id: i64,
    pub epoch: i16,
}

pub use crate::store::group_state::{
    FetchedOffset, GroupDescription, GroupError, JoinRequest, LeaveMember, OffsetCommit, Response as GroupResponse,
    SyncRequest,
};

#[derive(Debug, Clone)]
pub enum GroupOp {
    Join(JoinRequest),
    Sync(SyncRequest),
    Heartbeat { generation_id: i32, member_id: String, group_instance_id: Option<String> },
    Leave(Vec<LeaveMember>),
}

/// A membership request; the reply may come much later (rebalances park joins and syncs).
#[derive(Message)]
#[rtype(result = "()")]
pub struct GroupCall {
    pub group_id: String,
    pub op: GroupOp,
    pub reply: Reply<GroupResponse>,
}

/// OffsetCommit, or TxnOffsetCommit when `txn` is (producer id, epoch); answered once durable.
#[derive(Message)]
#[rtype(result = "()")]
pub struct CommitOffsets {
    pub group_id: String,
    pub generation_id: i32,
    pub member_id: String,
    pub group_instance_id: Option<String>,
    pub offsets: Vec<OffsetCommit>,
    pub txn: Option<(i64, i16)>,
    pub reply: Reply<Result<(), GroupError>>,
}

#[derive(Message)]
#[rtype(result = "()")]
pub struct FetchOffsets {
    pub group_id: String,
    /// None = every committed partition.
    pub partitions: Option<Vec<(String, i32)>>,
    pub require_stable: bool,
    pub reply: Reply<Result<Vec<FetchedOffset>, GroupError>>,
}

#[derive(Debug, Clone)]
pub enum GroupAdminOp {
    List,
    Describe(Vec<String>),
    Delete(Vec<String>),
    DeleteOffsets { group_id: String, partitions: Vec<(String, i32)> },
}

#[derive(Debug)]
pub enum GroupAdminAnswer {
    /// (group id, protocol type, state)
    List(Vec<(String, String, String)>),
    Describe(Vec<(String, Result<GroupDescription, GroupError>)>),
    Delete(Vec<(String, i16)>),
    DeleteOffsets(Result<Vec<(String, i32, i16)>, GroupError>),
}

#[derive(Message)]
#[rtype(result = "()")]
pub struct GroupAdmin {
    pub op: GroupAdminOp,
    pub reply: Reply<GroupAdminAnswer>,
}

/// A transaction marker for `__consumer_offsets` partition `offsets_partition` (eos-rules 59):
/// pending transactional offsets of `producer_id` become visible (commit) or are dropped.
/// Answered with the marker's error code: 0 once the change is flushed to disk.
#[derive(Message)]
#[rtype(result = "()")]
pub struct CompleteTxnOffsets {
    pub offsets_partition: i32,
    pub producer_id: i64,
    pub commit: bool,
    pub reply: Reply<i16>,
}

/// DescribeTransactions / ListTransactions: the shard's entries (all, or the named ones).
#[derive(Message)]
#[rtype(result = "()")]
pub struct InspectTxns {
    /// None = every entry of the shard.
    pub ids: Option<Vec<String>>,
    pub reply: Reply<Vec<(String, Option<crate::store::txn_state::TxnEntry>)>>,
}

/// DescribeProducers: the active producers of one partition.
#[derive(Message)]
#[rtype(result = "()")]
pub struct InspectProducers {
    pub reply: Reply<Vec<crate::store::producer_state::ProducerEntry>>,
}
