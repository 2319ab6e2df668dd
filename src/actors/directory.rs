//! Directory: where things are. Answers "who leads this partition", "which broker coordinates
//! this shard" and "who is in the cluster" from the ownership table (store::ownership), and
//! carries the addresses of this broker's broker-wide actors. Handlers and coordinators ask it
//! instead of assuming one broker: a `Location::Peer` is how the shared-disk cluster plugs in.

use std::sync::{Arc, PoisonError, RwLock, RwLockReadGuard};

use actix::Addr;

use super::fence_writer::FenceWriter;
use super::messages::{AllocateProducerId, AppendFence, FenceEpoch};
use super::partition::PartitionLeader;
use super::producer_ids::ProducerIds;
use super::topics::{GetTopic, TopicHandle, TopicRegistry};
use crate::error_code::ResponseError;
use crate::store::cluster::liveness::Freshness;
use crate::store::ownership::{Broker, Lease, Owned, Ownership, Placement};

/// Where a resource is served.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Location<A> {
    /// Here, by this actor.
    Local(A),
    /// By another live broker: the client is sent there (NOT_LEADER_OR_FOLLOWER / NOT_COORDINATOR).
    Peer(Broker),
    /// By no live broker right now (LEADER_NOT_AVAILABLE / COORDINATOR_NOT_AVAILABLE).
    Offline,
}

impl<A> Location<A> {
    /// The routing decision without the address (the answer codes live in store::ownership).
    pub fn placement(&self) -> Placement {
        match self {
            Location::Local(_) => Placement::Local,
            Location::Peer(_) => Placement::Peer,
            Location::Offline => Placement::Offline,
        }
    }

    /// The local actor, if this broker serves it.
    pub fn local(self) -> Option<A> {
        match self {
            Location::Local(a) => Some(a),
            _ => None,
        }
    }
}

#[derive(Clone)]
pub struct Directory {
    ownership: Arc<RwLock<Ownership>>,
    topics: Addr<TopicRegistry>,
    producer_ids: Addr<ProducerIds>,
    fences: Addr<FenceWriter>,
    /// Whether this broker may answer for what it leads (store::cluster::liveness).
    freshness: Freshness,
}

impl Directory {
    /// `ownership` is shared with the TopicRegistry, which grants the partitions' leases.
    pub fn new(
        ownership: Arc<RwLock<Ownership>>,
        topics: Addr<TopicRegistry>,
        producer_ids: Addr<ProducerIds>,
        fences: Addr<FenceWriter>,
        freshness: Freshness,
    ) -> Directory {
        Directory { ownership, topics, producer_ids, fences, freshness }
    }

    /// The table as it is now. Readers never block on I/O: writers only swap entries.
    pub fn ownership(&self) -> RwLockReadGuard<'_, Ownership> {
        // A panic while holding the lock stops the broker (actors::supervisor); the data is
        // plain entries and stays consistent, so a poisoned lock is still readable.
        self.ownership.read().unwrap_or_else(PoisonError::into_inner)
    }

    /// Changes the table (the cluster's membership and lease changes; tests). Writers only
    /// swap entries, so readers wait for no I/O.
    pub fn update<R>(&self, change: impl FnOnce(&mut Ownership) -> R) -> R {
        change(&mut self.ownership.write().unwrap_or_else(PoisonError::into_inner))
    }

    pub fn local_node(&self) -> i32 {
        self.ownership().local_node()
    }

    /// Where `what` is served; `local` gives this broker's actor for it. While this broker
    /// cannot prove its heartbeat lease fresh, what it leads is served by nobody here: its
    /// peers may be taking it over (store::cluster::liveness).
    pub fn locate<A>(&self, what: &Owned, local: impl FnOnce() -> Option<A>) -> Location<A> {
        let table = self.ownership();
        if table.is_local(what) {
            if !self.freshness.may_serve() {
                return Location::Offline;
            }
            return local().map_or(Location::Offline, Location::Local);
        }
        table.owner(what).cloned().map_or(Location::Offline, Location::Peer)
    }

    /// The leader of partition `p` of a topic this broker knows.
    pub fn leader(&self, topic: &TopicHandle, p: i32) -> Location<Addr<PartitionLeader>> {
        let what = Owned::Partition { topic: topic.meta.name.clone(), partition: p };
        self.locate(&what, || topic.leader(p))
    }

    /// The leader's epoch for partition `p` (Metadata, OffsetForLeaderEpoch).
    pub fn lease(&self, what: &Owned) -> Option<Lease> {
        self.ownership().lease(what)
    }

    /// Looks a topic up (creating it when `auto_create` and the broker allow). A registry that
    /// is gone (the broker is stopping) does not know whether the topic exists: NOT_LEADER_OR_FOLLOWER,
    /// retriable, never UNKNOWN_TOPIC_OR_PARTITION, which a marker takes for a deleted partition
    /// (eos-rules 41) and a client for a missing topic.
    pub async fn topic(&self, name: &str, auto_create: bool) -> Result<TopicHandle, ResponseError> {
        self.topics
            .send(GetTopic { name: name.to_string(), auto_create })
            .await
            .map_err(|_| ResponseError::NotLeaderOrFollower)?
    }

    pub fn topics(&self) -> &Addr<TopicRegistry> {
        &self.topics
    }

    /// A fresh cluster-unique producer id (eos-rules 1).
    pub async fn allocate_producer_id(&self) -> Result<i64, ResponseError> {
        self.producer_ids.send(AllocateProducerId).await.map_err(|_| ResponseError::CoordinatorLoadInProgress)?
    }

    /// Fences (pid, epoch): every local partition leader rejects older epochs from now on, and
    /// the fence goes to this broker's fence file for the brokers sharing the disk.
    pub fn fence(&self, producer_id: i64, epoch: i16) {
        self.topics.do_send(FenceEpoch { producer_id, epoch });
        self.fences.do_send(AppendFence { producer_id, epoch });
    }
}
