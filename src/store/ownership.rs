//! Who owns what: the brokers of the cluster and the owner (and leader epoch) of every partition,
//! transaction-coordinator shard and group-coordinator shard. Pure data: the single node fills it
//! with itself; the shared-disk cluster fills it from the locks each broker holds.

use std::collections::{BTreeMap, HashMap};

use crate::error_code::ResponseError;
use crate::store::group::GroupError;
use crate::store::txn::TxnError;

/// A broker as clients reach it (Metadata, FindCoordinator, DescribeCluster).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Broker {
    pub node_id: i32,
    /// Where peer brokers reach it (its inter-broker listener).
    pub host: String,
    pub port: i32,
    pub rack: Option<String>,
    /// What each of its listeners advertises; empty for a broker of an older kaas, which has
    /// one PLAINTEXT listener at `host:port`.
    pub endpoints: Vec<Endpoint>,
}

/// One listener of a broker: its name and the address it advertises.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Endpoint {
    pub listener: String,
    pub host: String,
    pub port: i32,
}

impl Broker {
    /// Where a client that came in on listener `listener` reaches this broker; None when it
    /// has no such listener (Kafka leaves it out of that client's answers).
    pub fn address(&self, listener: &str) -> Option<(&str, i32)> {
        if self.endpoints.is_empty() {
            return (listener == "PLAINTEXT").then_some((self.host.as_str(), self.port));
        }
        self.endpoints.iter().find(|e| e.listener == listener).map(|e| (e.host.as_str(), e.port))
    }
}

/// Something exactly one broker serves at a time.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Owned {
    Partition {
        topic: String,
        partition: i32,
    },
    /// A transaction-coordinator shard (`coordinator_key::txn_shard`).
    TxnShard(u32),
    /// A group-coordinator shard: a `__consumer_offsets` partition (`coordinator_key::offsets_partition`).
    GroupShard(i32),
}

/// The owner of one resource and the epoch of its ownership (a partition's leader epoch, a
/// coordinator's epoch): it grows each time the resource changes hands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Lease {
    pub node_id: i32,
    pub epoch: i32,
}

#[derive(Debug, Clone)]
pub struct Ownership {
    local: i32,
    brokers: BTreeMap<i32, Broker>,
    leases: HashMap<Owned, Lease>,
    /// Who serves what no lease names: the local broker on a single node; nobody in a cluster,
    /// where an unleased resource is offline until some broker takes it.
    default_owner: Option<i32>,
}

impl Ownership {
    /// One broker serving everything at epoch 0.
    pub fn single(local: Broker) -> Ownership {
        let id = local.node_id;
        Ownership { local: id, brokers: BTreeMap::from([(id, local)]), leases: HashMap::new(), default_owner: Some(id) }
    }

    /// A cluster member: nothing is served until leases say so.
    pub fn member(local: Broker) -> Ownership {
        Ownership { default_owner: None, ..Ownership::single(local) }
    }

    pub fn local_node(&self) -> i32 {
        self.local
    }

    pub fn lease(&self, what: &Owned) -> Option<Lease> {
        self.leases.get(what).copied().or_else(|| self.default_owner.map(|node_id| Lease { node_id, epoch: 0 }))
    }

    /// The broker serving `what`, if it is live.
    pub fn owner(&self, what: &Owned) -> Option<&Broker> {
        self.lease(what).and_then(|l| self.brokers.get(&l.node_id))
    }

    pub fn is_local(&self, what: &Owned) -> bool {
        self.lease(what).is_some_and(|l| l.node_id == self.local)
    }

    /// Whether `what` is served here, by a live peer, or by nobody.
    pub fn placement(&self, what: &Owned) -> Placement {
        if self.is_local(what) {
            Placement::Local
        } else if self.owner(what).is_some() {
            Placement::Peer
        } else {
            Placement::Offline
        }
    }

    /// Live brokers, by node id.
    pub fn brokers(&self) -> impl Iterator<Item = &Broker> {
        self.brokers.values()
    }

    pub fn broker(&self, node_id: i32) -> Option<&Broker> {
        self.brokers.get(&node_id)
    }

    /// The lowest live node id answers as controller (Metadata, DescribeCluster).
    pub fn controller(&self) -> i32 {
        self.brokers.keys().next().copied().unwrap_or(self.local)
    }

    /// Replaces the live peers; the local broker always stays.
    pub fn set_peers(&mut self, peers: impl IntoIterator<Item = Broker>) {
        let local = self.brokers.remove(&self.local);
        self.brokers = peers.into_iter().filter(|b| b.node_id != self.local).map(|b| (b.node_id, b)).collect();
        if let Some(l) = local {
            self.brokers.insert(l.node_id, l);
        }
    }

    /// Records that `node_id` now owns `what`. A lease never goes back in epoch: an older one
    /// (a stale read of the shared disk) is ignored and `false` returned.
    pub fn grant(&mut self, what: Owned, lease: Lease) -> bool {
        match self.leases.get(&what) {
            Some(cur) if cur.epoch > lease.epoch => false,
            _ => {
                self.leases.insert(what, lease);
                true
            }
        }
    }

    /// Forgets `what`'s lease (its owner died or let go): it falls back to the default owner.
    pub fn revoke(&mut self, what: &Owned) {
        self.leases.remove(what);
    }
}

/// Where a request for a resource goes, before any address is looked up.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Placement {
    Local,
    /// A live peer serves it: the client re-routes after refreshing its metadata.
    Peer,
    /// No live broker serves it right now.
    Offline,
}

/// The answer for a request to partition `partition` of a topic with `partitions` partitions of
/// which this broker serves the first `served` (a topic over the partition limit serves fewer).
/// eos-rules 44: a partition not hosted is UNKNOWN_TOPIC_OR_PARTITION; a leader elsewhere passes
/// NOT_LEADER_OR_FOLLOWER through (the client refreshes metadata and retries), also while no
/// broker leads it (a hand-over, a failover): Kafka's ReplicaManager answers every broker that
/// is not the leader so, and the Java consumer has no case for LEADER_NOT_AVAILABLE in a Fetch
/// (only Metadata says LEADER_NOT_AVAILABLE).
pub fn route_partition(
    partition: i32,
    partitions: i32,
    served: usize,
    placement: Placement,
) -> Result<(), ResponseError> {
    let served = i32::try_from(served).unwrap_or(i32::MAX);
    if partition < 0 || partition >= partitions.min(served) {
        return Err(ResponseError::UnknownTopicOrPartition);
    }
    match placement {
        Placement::Local => Ok(()),
        Placement::Peer => Err(ResponseError::NotLeaderOrFollower),
        Placement::Offline => Err(ResponseError::NotLeaderOrFollower),
    }
}

/// The client's `current_leader_epoch` (OffsetForLeaderEpoch, ListOffsets) against the
/// partition's leader epoch (its lease epoch), as Kafka's leader checks it: -1 skips the check,
/// an older one is FENCED_LEADER_EPOCH (the client's metadata is stale), a newer one
/// UNKNOWN_LEADER_EPOCH (this broker's view is behind; the client retries).
pub fn check_leader_epoch(current_leader_epoch: i32, leader_epoch: i32) -> Result<(), ResponseError> {
    match current_leader_epoch {
        -1 => Ok(()),
        e if e < leader_epoch => Err(ResponseError::FencedLeaderEpoch),
        e if e > leader_epoch => Err(ResponseError::UnknownLeaderEpoch),
        _ => Ok(()),
    }
}

/// A group API's answer when this broker does not coordinate the group: NOT_COORDINATOR while a
/// peer does (the client asks FindCoordinator again), COORDINATOR_NOT_AVAILABLE while nobody does
/// (Kafka's group coordinator for a shard that is not loaded anywhere).
pub fn route_group(placement: Placement) -> Result<(), GroupError> {
    match placement {
        Placement::Local => Ok(()),
        Placement::Peer => Err(GroupError::NotCoordinator),
        Placement::Offline => Err(GroupError::CoordinatorNotAvailable),
    }
}

/// A transactional API's answer when this broker does not run the transactional id's shard:
/// NOT_COORDINATOR either way, as Kafka's transaction coordinator answers for a
/// `__transaction_state` partition it does not own (eos-rules 6: the client re-discovers).
pub fn route_txn(placement: Placement) -> Result<(), TxnError> {
    match placement {
        Placement::Local => Ok(()),
        Placement::Peer | Placement::Offline => Err(TxnError::NotCoordinator),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn broker(id: i32) -> Broker {
        Broker { node_id: id, host: format!("h{id}"), port: 9092 + id, rack: None, endpoints: Vec::new() }
    }

    fn part(p: i32) -> Owned {
        Owned::Partition { topic: "t".into(), partition: p }
    }

    #[test]
    fn a_clients_leader_epoch_is_checked_against_the_lease_epoch() {
        assert_eq!(check_leader_epoch(-1, 3), Ok(()));
        assert_eq!(check_leader_epoch(3, 3), Ok(()));
        assert_eq!(check_leader_epoch(2, 3), Err(ResponseError::FencedLeaderEpoch));
        assert_eq!(check_leader_epoch(4, 3), Err(ResponseError::UnknownLeaderEpoch));
        assert_eq!(check_leader_epoch(0, 0), Ok(()));
    }

    #[test]
    fn single_node_owns_everything_at_epoch_zero() {
        let o = Ownership::single(broker(1));
        for what in [part(0), Owned::TxnShard(3), Owned::GroupShard(49)] {
            assert!(o.is_local(&what));
            assert_eq!(o.lease(&what), Some(Lease { node_id: 1, epoch: 0 }));
            assert_eq!(o.owner(&what).map(|b| b.node_id), Some(1));
        }
        assert_eq!(o.controller(), 1);
    }

    #[test]
    fn cluster_member_serves_nothing_unleased() {
        let mut o = Ownership::member(broker(2));
        assert!(!o.is_local(&part(0)));
        assert_eq!(o.owner(&part(0)), None);
        assert!(o.grant(part(0), Lease { node_id: 2, epoch: 1 }));
        assert!(o.is_local(&part(0)));
        o.revoke(&part(0));
        assert_eq!(o.lease(&part(0)), None);
    }

    #[test]
    fn a_peer_lease_names_the_peer_only_while_it_is_live() {
        let mut o = Ownership::member(broker(2));
        o.grant(Owned::TxnShard(0), Lease { node_id: 1, epoch: 4 });
        assert_eq!(o.owner(&Owned::TxnShard(0)), None, "broker 1 is not known to be live");
        o.set_peers([broker(1), broker(3)]);
        assert_eq!(o.owner(&Owned::TxnShard(0)).map(|b| b.port), Some(9093));
        assert!(!o.is_local(&Owned::TxnShard(0)));
        assert_eq!(o.controller(), 1);
        assert_eq!(o.brokers().map(|b| b.node_id).collect::<Vec<_>>(), vec![1, 2, 3]);
    }

    #[test]
    fn set_peers_keeps_the_local_broker() {
        let mut o = Ownership::single(broker(5));
        o.set_peers([broker(7)]);
        assert_eq!(o.brokers().map(|b| b.node_id).collect::<Vec<_>>(), vec![5, 7]);
        o.set_peers([]);
        assert_eq!(o.brokers().map(|b| b.node_id).collect::<Vec<_>>(), vec![5]);
    }

    #[test]
    fn a_lease_never_goes_back_in_epoch() {
        let mut o = Ownership::member(broker(1));
        assert!(o.grant(part(1), Lease { node_id: 1, epoch: 5 }));
        assert!(!o.grant(part(1), Lease { node_id: 2, epoch: 4 }), "a stale lease is ignored");
        assert_eq!(o.lease(&part(1)), Some(Lease { node_id: 1, epoch: 5 }));
        assert!(o.grant(part(1), Lease { node_id: 2, epoch: 6 }));
        assert_eq!(o.lease(&part(1)).map(|l| l.node_id), Some(2));
    }

    #[test]
    fn rule_44_a_partition_not_hosted_is_unknown_topic_or_partition() {
        for p in [-1, 3, i32::MAX] {
            assert_eq!(route_partition(p, 3, 3, Placement::Local), Err(ResponseError::UnknownTopicOrPartition));
        }
        // A topic over the partition limit: partitions this broker does not serve are not hosted.
        assert_eq!(route_partition(2, 3, 2, Placement::Local), Err(ResponseError::UnknownTopicOrPartition));
        assert_eq!(route_partition(2, 3, 3, Placement::Local), Ok(()));
    }

    #[test]
    fn rule_44_not_leader_or_follower_passes_through_for_a_partition_led_elsewhere() {
        assert_eq!(route_partition(0, 1, 1, Placement::Peer), Err(ResponseError::NotLeaderOrFollower));
        // Existence is checked first: a partition that does not exist is 3 wherever the topic lives.
        assert_eq!(route_partition(5, 1, 1, Placement::Peer), Err(ResponseError::UnknownTopicOrPartition));
    }

    #[test]
    fn rule_44_a_partition_nobody_leads_is_not_leader_or_follower_as_in_kafka() {
        // A hand-over or a failover: Kafka's ReplicaManager answers 6 on every broker that does
        // not lead the partition; LEADER_NOT_AVAILABLE is Metadata's alone.
        assert_eq!(route_partition(0, 1, 1, Placement::Offline), Err(ResponseError::NotLeaderOrFollower));
    }

    #[test]
    fn a_group_elsewhere_is_not_coordinator_and_nowhere_is_coordinator_not_available() {
        assert_eq!(route_group(Placement::Local), Ok(()));
        assert_eq!(route_group(Placement::Peer), Err(GroupError::NotCoordinator));
        assert_eq!(route_group(Placement::Offline), Err(GroupError::CoordinatorNotAvailable));
    }

    #[test]
    fn rule_6_a_transactional_id_coordinated_elsewhere_is_not_coordinator() {
        assert_eq!(route_txn(Placement::Local), Ok(()));
        assert_eq!(route_txn(Placement::Peer), Err(TxnError::NotCoordinator));
        assert_eq!(route_txn(Placement::Offline), Err(TxnError::NotCoordinator));
    }

    #[test]
    fn placement_follows_the_lease_and_the_live_brokers() {
        let mut o = Ownership::member(broker(2));
        assert_eq!(o.placement(&part(0)), Placement::Offline);
        o.grant(part(0), Lease { node_id: 1, epoch: 1 });
        assert_eq!(o.placement(&part(0)), Placement::Offline, "broker 1 is not live");
        o.set_peers([broker(1)]);
        assert_eq!(o.placement(&part(0)), Placement::Peer);
        o.grant(part(0), Lease { node_id: 2, epoch: 2 });
        assert_eq!(o.placement(&part(0)), Placement::Local);
    }
}
