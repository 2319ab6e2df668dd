//! Messages to the cluster view (topics, producer ids, fences).

use actix::{Addr, Message};

use super::Reply;
use crate::actors::partition::PartitionLeader;
use crate::store::topics::TopicMeta;

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

/// Fence (pid, epoch) on every local partition leader and in this broker's fence file.
#[derive(Message)]
#[rtype(result = "()")]
pub struct BroadcastFence {
    pub producer_id: i64,
    pub epoch: i16,
}
