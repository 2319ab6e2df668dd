//! Messages to the group coordinator.

use actix::Message;

use super::Reply;

pub use crate::store::group::consumer::{
    ConsumerError, DescribedConsumerGroup, HeartbeatRequest as ConsumerHeartbeatRequest,
    HeartbeatResponse as ConsumerHeartbeatResponse, TopicInfo,
};
pub use crate::store::group::{
    FetchedOffset, GroupAdminAnswer, GroupAdminOp, GroupDescription, GroupError, GroupOp, JoinRequest, LeaveMember,
    OffsetCommit, Response as GroupResponse, SyncRequest,
};

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
    /// OffsetFetch v9's member id and member epoch (checked for consumer groups).
    pub member: Option<(String, i32)>,
    pub reply: Reply<Result<Vec<FetchedOffset>, GroupError>>,
}

#[derive(Message)]
#[rtype(result = "()")]
pub struct GroupAdmin {
    pub op: GroupAdminOp,
    pub reply: Reply<GroupAdminAnswer>,
}

/// TxnOffsetCommit, before the transaction coordinator is asked: the producer's epoch on the
/// group's offsets partition (eos-rules 18). Ok(true): its transaction is open there already,
/// the coordinator need not be asked.
#[derive(Message)]
#[rtype(result = "()")]
pub struct BeginTxnOffsetCommit {
    pub group_id: String,
    pub producer_id: i64,
    pub producer_epoch: i16,
    pub reply: Reply<Result<bool, GroupError>>,
}

/// A transaction marker for `__consumer_offsets` partition `offsets_partition` (eos-rules 59):
/// pending transactional offsets of `producer_id` become visible (commit) or are dropped, once
/// the marker passed the producer's checks there (eos-rules 46-48). Answered with the marker's
/// error code: 0 once the change is flushed to disk.
#[derive(Message)]
#[rtype(result = "()")]
pub struct CompleteTxnOffsets {
    pub offsets_partition: i32,
    pub producer_id: i64,
    pub producer_epoch: i16,
    pub coordinator_epoch: i32,
    pub txn_version: i8,
    pub commit: bool,
    pub reply: Reply<i16>,
}

/// ConsumerGroupHeartbeat, with the topics of its subscription as the handler just looked them
/// up (None: no such topic).
#[derive(Message)]
#[rtype(result = "()")]
pub struct ConsumerHeartbeat {
    pub group_id: String,
    pub request: ConsumerHeartbeatRequest,
    pub topics: Vec<(String, Option<TopicInfo>)>,
    pub reply: Reply<Result<ConsumerHeartbeatResponse, ConsumerError>>,
}

/// ConsumerGroupDescribe; answered with the topic names of the assigned topic ids.
#[derive(Message)]
#[rtype(result = "()")]
pub struct DescribeConsumerGroups {
    pub group_ids: Vec<String>,
    pub reply: Reply<DescribedConsumerGroups>,
}

pub struct DescribedConsumerGroups {
    pub groups: Vec<(String, Result<DescribedConsumerGroup, ConsumerError>)>,
    pub topic_names: std::collections::HashMap<uuid::Uuid, String>,
}
