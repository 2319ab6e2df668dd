//! Who owns what: the brokers of the cluster and the owner (and leader epoch) of every partition,
//! transaction-coordinator shard and group-coordinator shard. Pure data: the single node fills it
//! with itself; the shared-disk cluster fills it from the locks each broker holds.

use std::collections::{BTreeMap, HashMap};

/// A broker as clients reach it (Metadata, FindCoordinator, DescribeCluster).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Broker {
    pub node_id: i32,
    pub host: String,
    pub port: i32,
    pub rack: Option<String>,
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

#[cfg(test)]
mod tests {
    use super::*;

    fn broker(id: i32) -> Broker {
        Broker { node_id: id, host: format!("h{id}"), port: 9092 + id, rack: None }
    }

    fn part(p: i32) -> Owned {
        Owned::Partition { topic: "t".into(), partition: p }
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
}
