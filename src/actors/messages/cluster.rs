//! Messages to the broker-wide actors: the topic registry, the producer-id allocator, the fence writer.

use actix::Message;

use super::Reply;
use crate::error_code::ResponseError;
use crate::store::topics::TopicMeta;

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
    /// A manual replica assignment, `(partition index, brokers)` in request order (then
    /// `partitions` is -1); empty when the broker places the partitions.
    pub assignments: Vec<(i32, Vec<i32>)>,
}

/// CreatePartitions of one topic: grow it to `count` partitions.
#[derive(Message)]
#[rtype(result = "Result<TopicMeta, TopicFailure>")]
pub struct CreatePartitions {
    pub name: String,
    pub count: i32,
    /// A broker list per new partition, when the client chose them.
    pub assignments: Option<Vec<Vec<i32>>>,
    pub validate_only: bool,
}

#[derive(Message)]
#[rtype(result = "Result<TopicMeta, ResponseError>")]
pub struct DeleteTopic {
    pub name: Option<String>,
    pub id: Option<uuid::Uuid>,
}

/// A fresh cluster-unique producer id (eos-rules 1).
#[derive(Message)]
#[rtype(result = "Result<i64, ResponseError>")]
pub struct AllocateProducerId;

#[derive(Message)]
#[rtype(result = "()")]
pub struct ShutdownAll {
    pub reply: Reply<()>,
}

/// Appends (pid, epoch) to this broker's fence file, which peers on the shared disk read.
#[derive(Message)]
#[rtype(result = "()")]
pub struct AppendFence {
    pub producer_id: i64,
    pub epoch: i16,
}

/// To a coordinator this broker gives up (a transaction shard, the group coordinator): finish
/// the state writes under way, flush, answer and stop. Its lease is let go after the answer, so
/// the broker taking over opens everything this one acknowledged.
#[derive(Message)]
#[rtype(result = "()")]
pub struct HandOver {
    pub reply: Reply<()>,
}
