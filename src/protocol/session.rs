//! Session: the state the requests of one connection share (it lives on that connection's
//! thread), and the calls handlers make through it. Every "where is it" goes through the
//! directory, so a handler answers NOT_LEADER_OR_FOLLOWER / NOT_COORDINATOR for what a peer serves.

use std::cell::{Cell, RefCell};
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::rc::Rc;
use std::sync::Arc;

use actix::Addr;

use crate::actors::directory::{Directory, Location};
use crate::actors::group_coordinator::GroupCoordinator;
use crate::actors::local_actor::LocalActor;
use crate::actors::messages::{
    GroupCall, GroupError, GroupOp, GroupResponse, TopicPartition, TxnAnswer, TxnCall, TxnError, TxnOp, VerifyTxn,
};
use crate::actors::partition::PartitionLeader;
use crate::actors::topics::TopicHandle;
use crate::actors::txn_coordinator::TxnCoordinator;
use crate::config::{SecurityProtocol, Settings};
use crate::error_code::ResponseError;
use crate::metrics::Metrics;
use crate::protocol::authorizer::Authorizer;
use crate::protocol::fetch_session::FetchSessions;
use crate::protocol::peer_link::{PeerAddPartitions, PeerLinks, SendPeerAddPartitions};
use crate::protocol::response_budget::ResponseBudget;
use crate::store::auth::acl::{self, Action};
use crate::store::auth::Principal;
use crate::store::coordinator_key::{offsets_partition, txn_shard};
use crate::store::group::consumer::TopicInfo;
use crate::store::group::validate_group_id;
use crate::store::ownership::{route_group, route_partition, route_txn, Owned};
use crate::store::topics::{internal_partitions, internal_topic_id};
use crate::store::txn::{CONSUMER_OFFSETS_TOPIC, TV_2};

/// This broker's actors a connection talks to.
#[derive(Clone)]
pub struct Actors {
    pub directory: Directory,
    /// Transaction-coordinator shards, indexed by `coordinator_key::txn_shard(transactional_id)`;
    /// empty while a peer runs the coordinators.
    pub txn: Arc<Vec<LocalActor<TxnCoordinator>>>,
    pub groups: LocalActor<GroupCoordinator>,
    /// Broker-wide bytes of Fetch responses in memory (`queued_max_response_bytes`).
    pub responses: ResponseBudget,
    /// Broker-wide KIP-227 fetch sessions (`max_incremental_fetch_session_cache_slots`).
    pub fetch_sessions: FetchSessions,
    /// Requests to peer brokers (a transaction's coordinator running elsewhere).
    pub peers: Addr<PeerLinks>,
    /// The broker's Prometheus metrics (requests per API are counted by the connection).
    pub metrics: Metrics,
    /// The ACLs every request is checked against; None: no authorizer, all is allowed.
    pub authorizer: Option<Authorizer>,
}

pub struct Session {
    pub directory: Directory,
    pub txn: Arc<Vec<LocalActor<TxnCoordinator>>>,
    pub groups: LocalActor<GroupCoordinator>,
    pub responses: ResponseBudget,
    pub fetch_sessions: FetchSessions,
    pub peers: Addr<PeerLinks>,
    pub metrics: Metrics,
    pub authorizer: Option<Authorizer>,
    pub settings: Arc<Settings>,
    pub cluster_id: Arc<str>,
    /// The client's address (DescribeGroups' client host).
    pub peer: String,
    /// The client id of the latest request (JoinGroup records it per member).
    pub client_id: RefCell<String>,
    /// The listener the connection came in on.
    pub listener: Cell<SecurityProtocol>,
    /// Who the client authenticated as (ANONYMOUS until it does, or where nothing authenticates).
    pub principal: RefCell<Principal>,
    topics: RefCell<HashMap<String, TopicHandle>>,
}

impl Session {
    pub fn new(actors: Actors, settings: Arc<Settings>, cluster_id: Arc<str>, peer: String) -> Rc<Session> {
        Rc::new(Session {
            directory: actors.directory,
            txn: actors.txn,
            groups: actors.groups,
            responses: actors.responses,
            fetch_sessions: actors.fetch_sessions,
            peers: actors.peers,
            metrics: actors.metrics,
            authorizer: actors.authorizer,
            settings,
            cluster_id,
            peer,
            client_id: RefCell::new(String::new()),
            listener: Cell::new(SecurityProtocol::Plaintext),
            principal: RefCell::new(Principal::anonymous()),
            topics: RefCell::new(HashMap::new()),
        })
    }

    /// Whether this client may do `operation` on the resource (always without an authorizer):
    /// Kafka's authorizer decision for the connection's principal and address.
    pub fn authorized(&self, operation: i8, resource_type: i8, name: &str) -> bool {
        let Some(a) = &self.authorizer else { return true };
        let principal = self.principal.borrow().to_string();
        a.authorize(Action { principal: &principal, host: &self.peer, operation, resource_type, name })
    }

    /// Kafka's authorized-operations bitfield of a resource for this client (every supported
    /// operation without an authorizer, as Kafka's AuthHelper.authorizedOperations).
    pub fn authorized_operations(&self, supported: &[i8], resource_type: i8, name: &str) -> i32 {
        acl::operations_bitfield(supported, |op| self.authorized(op, resource_type, name))
    }

    /// `authorized` on the cluster resource.
    pub fn authorized_cluster(&self, operation: i8) -> bool {
        self.authorized(operation, acl::RESOURCE_CLUSTER, acl::CLUSTER_NAME)
    }

    /// Whether this client may do `operation` on some resource of `resource_type` (KIP-679:
    /// an idempotent producer needs WRITE on any topic, or IDEMPOTENT_WRITE on the cluster).
    pub fn authorized_any(&self, operation: i8, resource_type: i8) -> bool {
        let Some(a) = &self.authorizer else { return true };
        let principal = self.principal.borrow().to_string();
        a.authorize_any(&principal, &self.peer, operation, resource_type)
    }

    /// Where the transaction coordinator of `transactional_id` is.
    pub fn coordinator(&self, transactional_id: &str) -> Location<Addr<TxnCoordinator>> {
        let shard = txn_shard(transactional_id, self.txn.len());
        let what = Owned::TxnShard(u32::try_from(shard).unwrap_or(u32::MAX));
        self.directory.locate(&what, || self.txn.get(shard).and_then(LocalActor::get))
    }

    /// Where the group coordinator of `group_id` is (its `__consumer_offsets` partition's owner).
    pub fn group(&self, group_id: &str) -> Location<Addr<GroupCoordinator>> {
        self.directory.locate(&Owned::GroupShard(offsets_partition(group_id)), || self.groups.get())
    }

    /// Partition `p` of an internal topic (store::topics::INTERNAL_TOPICS) as Fetch and
    /// ListOffsets serve it: None for any other topic, Ok when this broker runs its coordinator
    /// shard (its leader), else the error Kafka answers for a partition led elsewhere or unknown.
    /// kaas keeps what Kafka writes there in the coordinators' sled databases, so the partition
    /// reads as an empty log; a regex subscription that names it (Kafka's server-side regexes
    /// match internal topics too) finds nothing to consume instead of an unknown topic.
    pub fn internal_partition(&self, topic: &str, p: i32) -> Option<Result<(), i16>> {
        let n = internal_partitions(topic, self.settings.transactions.txn_shards)?;
        if !(0..n).contains(&p) {
            return Some(Err(ResponseError::UnknownTopicOrPartition.code()));
        }
        let what =
            if topic == CONSUMER_OFFSETS_TOPIC { Owned::GroupShard(p) } else { Owned::TxnShard(p.unsigned_abs()) };
        let table = self.directory.ownership();
        Some(match table.lease(&what) {
            Some(_) if table.is_local(&what) => Ok(()),
            // eos-rules 44: not led here, whether or not a peer leads it now.
            Some(_) | None => Err(ResponseError::NotLeaderOrFollower.code()),
        })
    }

    /// What the consumer groups see of internal topic `name` (its id and partitions).
    pub fn internal_topic_info(&self, name: &str) -> Option<TopicInfo> {
        let partitions = internal_partitions(name, self.settings.transactions.txn_shards)?;
        Some(TopicInfo { id: internal_topic_id(&self.cluster_id, name), partitions })
    }

    /// The leader of partition `p`, or the answer for a partition this broker does not lead
    /// (store::ownership::route_partition, eos-rules 44).
    pub fn leader(&self, topic: &TopicHandle, p: i32) -> Result<Addr<PartitionLeader>, i16> {
        let located = self.directory.leader(topic, p);
        route_partition(p, topic.meta.partitions, topic.partitions.len(), located.placement()).map_err(|e| e.code())?;
        located.local().ok_or_else(|| {
            // Led here by the table but not by this (cached) handle: a topic deleted and made
            // again. The client retries; the next lookup asks the registry.
            self.evict(&topic.meta.name);
            ResponseError::NotLeaderOrFollower.code()
        })
    }

    /// The group coordinator of `group_id` when this broker runs it (store::ownership::route_group).
    pub fn group_coordinator(&self, group_id: &str) -> Result<Addr<GroupCoordinator>, GroupError> {
        let located = self.group(group_id);
        route_group(located.placement())?;
        located.local().ok_or(GroupError::CoordinatorNotAvailable)
    }

    /// Splits group ids into those this broker coordinates and, with their error, the others
    /// (Describe/DeleteGroups answer NOT_COORDINATOR per group, as Kafka's do).
    pub fn split_groups(&self, ids: Vec<String>) -> (Vec<String>, Vec<(String, GroupError)>) {
        let mut here = Vec::new();
        let mut elsewhere = Vec::new();
        for id in ids {
            match self.group_coordinator(&id) {
                Ok(_) => here.push(id),
                Err(e) => elsewhere.push((id, e)),
            }
        }
        (here, elsewhere)
    }

    /// Sends a membership request to the group coordinator and waits (rebalances park it).
    /// INVALID_GROUP_ID for an empty id; NOT_COORDINATOR when another broker coordinates it.
    pub async fn group_call(&self, group_id: &str, op: GroupOp) -> Result<GroupResponse, GroupError> {
        validate_group_id(group_id)?;
        let groups = self.group_coordinator(group_id)?;
        let (tx, rx) = tokio::sync::oneshot::channel();
        let msg = GroupCall { group_id: group_id.to_string(), op, reply: tx };
        groups.send(msg).await.map_err(|_| GroupError::CoordinatorNotAvailable)?;
        rx.await.map_err(|_| GroupError::CoordinatorNotAvailable)
    }

    /// The coordinator shard of `transactional_id` when this broker runs it
    /// (store::ownership::route_txn).
    pub fn txn_shard(&self, transactional_id: &str) -> Result<Addr<TxnCoordinator>, TxnError> {
        let located = self.coordinator(transactional_id);
        route_txn(located.placement())?;
        located.local().ok_or(TxnError::NotCoordinator)
    }

    /// Sends a transactional call to its coordinator and waits for the answer; NOT_COORDINATOR
    /// when a peer (or nobody) coordinates it.
    pub async fn txn_call(&self, transactional_id: &str, op: TxnOp) -> TxnAnswer {
        let shard = self.txn_shard(transactional_id)?;
        let (tx, rx) = tokio::sync::oneshot::channel();
        let msg = TxnCall { transactional_id: transactional_id.to_string(), op, reply: tx };
        if shard.send(msg).await.is_err() {
            return Err(TxnError::NotCoordinator);
        }
        rx.await.unwrap_or(Err(TxnError::NotCoordinator))
    }

    /// Verifies (TV1, `verify_only`) or adds (TV2) partitions led here in `transactional_id`'s
    /// transaction with its coordinator, wherever that runs; the first error, if any.
    pub async fn add_to_transaction(
        &self,
        transactional_id: &str,
        producer_id: i64,
        epoch: i16,
        partitions: BTreeSet<TopicPartition>,
        verify_only: bool,
    ) -> Result<(), TxnError> {
        let answers = self.add_to_transaction_each(transactional_id, producer_id, epoch, partitions, verify_only).await;
        answers.into_values().find(Result::is_err).unwrap_or(Ok(()))
    }

    /// Verifies (TV1, `verify_only`) or adds (TV2) partitions led here in `transactional_id`'s
    /// transaction with its coordinator, in one call, wherever that runs: the local shard, or
    /// the peer broker running it, over the wire (KIP-890's AddPartitionsToTxnManager:
    /// AddPartitionsToTxn v4 with VerifyOnly, or v5). eos-rules 27-29; one answer per
    /// partition, which the caller maps for its API.
    pub async fn add_to_transaction_each(
        &self,
        transactional_id: &str,
        producer_id: i64,
        epoch: i16,
        partitions: BTreeSet<TopicPartition>,
        verify_only: bool,
    ) -> BTreeMap<TopicPartition, Result<(), TxnError>> {
        let all = |partitions: BTreeSet<TopicPartition>, r: Result<(), TxnError>| {
            partitions.into_iter().map(|tp| (tp, r)).collect::<BTreeMap<_, _>>()
        };
        match self.coordinator(transactional_id) {
            Location::Local(shard) if verify_only => {
                let (tx, rx) = tokio::sync::oneshot::channel();
                let id = transactional_id.to_string();
                let msg =
                    VerifyTxn { transactional_id: id, producer_id, epoch, partitions: partitions.clone(), reply: tx };
                if shard.send(msg).await.is_err() {
                    return all(partitions, Err(TxnError::NotCoordinator));
                }
                match rx.await {
                    Ok(answers) => answers,
                    Err(_) => all(partitions, Err(TxnError::NotCoordinator)),
                }
            }
            Location::Local(_) => {
                let op = TxnOp::AddPartitions { producer_id, epoch, partitions: partitions.clone(), txn_version: TV_2 };
                let answer = self.txn_call(transactional_id, op).await.map(|_| ());
                all(partitions, answer)
            }
            Location::Peer(peer) => {
                let (tx, rx) = tokio::sync::oneshot::channel();
                let request = PeerAddPartitions {
                    transactional_id: transactional_id.to_string(),
                    producer_id,
                    producer_epoch: epoch,
                    partitions: partitions.clone(),
                    verify_only,
                };
                if self.peers.send(SendPeerAddPartitions { peer, request, reply: tx }).await.is_err() {
                    return all(partitions, Err(TxnError::NotCoordinator));
                }
                match rx.await {
                    Ok(Ok(codes)) => {
                        tracing::debug!(
                            transactional_id,
                            producer_id,
                            epoch,
                            verify_only,
                            ?codes,
                            "coordinator's answer"
                        );
                        partitions
                            .into_iter()
                            .map(|tp| {
                                // A partition the peer left out of its answer is not confirmed.
                                let code = codes.get(&tp).copied().unwrap_or(ResponseError::NotCoordinator.code());
                                (tp, TxnError::from_code(code).map_or(Ok(()), Err))
                            })
                            .collect()
                    }
                    // Unreachable, busy or silent peer: retriable (eos-rules 50's spirit).
                    _ => all(partitions, Err(TxnError::NotCoordinator)),
                }
            }
            Location::Offline => all(partitions, Err(TxnError::NotCoordinator)),
        }
    }

    /// The topic's partition leaders, cached per connection.
    pub async fn topic(&self, name: &str, auto_create: bool) -> Result<TopicHandle, i16> {
        if let Some(h) = self.topics.borrow().get(name).filter(|h| h.is_current()) {
            return Ok(h.clone());
        }
        self.lookup(name, auto_create).await
    }

    /// Asks the registry (never the cache) and refreshes the cache.
    pub async fn lookup(&self, name: &str, auto_create: bool) -> Result<TopicHandle, i16> {
        self.evict(name);
        let found = self.directory.topic(name, auto_create).await.map_err(|e| e.code())?;
        self.topics.borrow_mut().insert(name.to_string(), found.clone());
        Ok(found)
    }

    /// Forgets a cached topic whose partition actors went away (deleted topic).
    pub fn evict(&self, name: &str) {
        self.topics.borrow_mut().remove(name);
    }

    pub fn node_id(&self) -> i32 {
        self.directory.local_node()
    }
}
