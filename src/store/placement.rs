//! Which live broker should serve a partition or a coordinator: rendezvous (highest random
//! weight) hashing over the live node ids. Every broker computes the same answer from the same
//! live set without talking to the others; when a broker leaves, only what it served moves, and
//! when it comes back it gets the same share back. A topic's partitions are placed round-robin
//! as Kafka places them (`partition_leader`). Pure: the claims on the shared disk
//! (store::cluster::claim) decide who actually serves; this only says who should try.

use super::ownership::Owned;
pub use super::topics::Scheme;
use super::topics::TopicMeta;

/// FNV-1a, 64 bits: stable across processes, versions and machines (std's hasher is not).
fn fnv1a(bytes: impl IntoIterator<Item = u8>, seed: u64) -> u64 {
    let mut h = 0xcbf2_9ce4_8422_2325u64 ^ seed;
    for b in bytes {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    // A final mix so that near keys spread over the whole range.
    h ^= h >> 33;
    h = h.wrapping_mul(0xff51_afd7_ed55_8ccd);
    h ^ (h >> 33)
}

/// Topics of `Scheme::Slots` are placed in slots: the partitions of one slot move together
/// (kaas locked partitions by slot once).
pub const PARTITION_SLOTS: u64 = 16_384;

/// The slot of a partition (stable across processes, versions and machines).
pub fn slot(topic: &str, partition: i32) -> u64 {
    let name = format!("p/{topic}/{partition}");
    fnv1a(name.bytes(), 0x736c_6f74) % PARTITION_SLOTS
}

/// The resource's name as it is hashed for placement: a partition's slot.
pub fn key(what: &Owned) -> String {
    match what {
        Owned::Partition { topic, partition } => format!("s/{}", slot(topic, *partition)),
        Owned::TxnShard(n) => format!("t/{n}"),
        Owned::GroupShard(n) => format!("g/{n}"),
    }
}

/// The live broker that should serve `what` (None without live brokers).
pub fn desired_owner(what: &Owned, live: &[i32]) -> Option<i32> {
    let k = key(what);
    live.iter().copied().max_by_key(|node| (fnv1a(k.bytes(), *node as u64), *node))
}

/// The live broker that should lead partition `p` of `meta` (placed among the brokers live at
/// its creation, `TopicMeta::placed_on_for`).
pub fn leader_of(meta: &TopicMeta, p: i32, live: &[i32]) -> Option<i32> {
    partition_leader(meta.placement, &meta.name, p, meta.placed_on_for(p), live)
}

/// The live broker that should lead partition `p` of `topic`, placed with `scheme` among
/// `placed` (the brokers live at its creation: `TopicMeta::placed_on_for`).
pub fn partition_leader(scheme: Scheme, topic: &str, p: i32, placed: &[i32], live: &[i32]) -> Option<i32> {
    let what = Owned::Partition { topic: topic.to_string(), partition: p };
    if scheme == Scheme::Slots {
        return desired_owner(&what, live);
    }
    preference(topic, p, placed).into_iter().find(|b| live.contains(b)).or_else(|| desired_owner(&what, live))
}

/// Partition `p`'s preference list over `placed`: first the brokers in turn from a start the
/// topic's name picks; then the others, in an order that turns every `placed.len()`
/// partitions, so the partitions one broker prefers fall back to different brokers.
fn preference(topic: &str, p: i32, placed: &[i32]) -> Vec<i32> {
    let mut brokers = placed.to_vec();
    brokers.sort_unstable();
    brokers.dedup();
    let m = brokers.len();
    let Ok(p) = usize::try_from(p) else { return brokers };
    if m == 0 {
        return brokers;
    }
    let start = usize::try_from(fnv1a(topic.bytes(), 0x7270) % m as u64).unwrap_or(0);
    let first = (start + p) % m;
    let mut order = vec![brokers[first]];
    if m > 1 {
        let shift = (p / m) % (m - 1);
        order.extend((0..m - 1).map(|j| brokers[(first + 1 + (shift + j) % (m - 1)) % m]));
    }
    order
}

/// Coordinator state that moves between brokers as one piece, under one lease: a transaction
/// shard (its sled database and producer-id block), or the group coordinator (one database for
/// the 50 `__consumer_offsets` partitions, which therefore move together).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum CoordinatorUnit {
    Txn(u32),
    Groups,
}

impl CoordinatorUnit {
    /// Every unit of a cluster with `txn_shards` transaction shards.
    pub fn all(txn_shards: u32) -> Vec<CoordinatorUnit> {
        (0..txn_shards).map(CoordinatorUnit::Txn).chain([CoordinatorUnit::Groups]).collect()
    }

    /// What the ownership table records for it (what FindCoordinator and the handlers look up).
    pub fn owned(&self, offsets_partitions: i32) -> Vec<Owned> {
        match self {
            CoordinatorUnit::Txn(n) => vec![Owned::TxnShard(*n)],
            CoordinatorUnit::Groups => (0..offsets_partitions).map(Owned::GroupShard).collect(),
        }
    }

    /// The live broker that should run it.
    pub fn desired_owner(&self, live: &[i32]) -> Option<i32> {
        match self {
            CoordinatorUnit::Txn(n) => desired_owner(&Owned::TxnShard(*n), live),
            CoordinatorUnit::Groups => desired_owner(&Owned::GroupShard(0), live),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn part(p: i32) -> Owned {
        Owned::Partition { topic: "t".into(), partition: p }
    }

    #[test]
    fn every_broker_computes_the_same_owner() {
        let a = desired_owner(&part(3), &[1, 2, 3]);
        let b = desired_owner(&part(3), &[3, 1, 2]);
        assert_eq!(a, b);
        assert_eq!(desired_owner(&part(3), &[]), None);
        assert_eq!(desired_owner(&part(3), &[7]), Some(7));
    }

    #[test]
    fn partitions_spread_over_the_live_brokers() {
        let live = [1, 2, 3];
        let mut counts = std::collections::BTreeMap::new();
        for p in 0..300 {
            *counts.entry(desired_owner(&part(p), &live).unwrap()).or_insert(0) += 1;
        }
        assert_eq!(counts.len(), 3);
        for n in counts.values() {
            assert!((60..=140).contains(n), "unbalanced: {counts:?}");
        }
    }

    #[test]
    fn the_partitions_of_a_slot_move_together_and_a_broker_holds_at_most_the_slots() {
        let mut slots = std::collections::BTreeMap::new();
        for p in 0..100_000 {
            let s = slot("t", p);
            assert!(s < PARTITION_SLOTS);
            let owner = desired_owner(&part(p), &[1, 2, 3]);
            assert_eq!(*slots.entry(s).or_insert(owner), owner, "partition {p} of slot {s}");
        }
        assert!(slots.len() as u64 > PARTITION_SLOTS * 9 / 10, "100,000 partitions use most slots");
    }

    fn leaders(topic: &str, partitions: i32, placed: &[i32], live: &[i32]) -> std::collections::BTreeMap<i32, i32> {
        let mut counts = std::collections::BTreeMap::new();
        for p in 0..partitions {
            *counts.entry(partition_leader(Scheme::RoundRobin, topic, p, placed, live).unwrap()).or_insert(0) += 1;
        }
        counts
    }

    #[test]
    fn round_robin_leaders_of_a_topic_differ_by_at_most_one_per_broker() {
        for t in 0..20 {
            let topic = format!("topic-{t}");
            assert_eq!(leaders(&topic, 6, &[1, 2, 3], &[1, 2, 3]).into_values().collect::<Vec<_>>(), vec![2, 2, 2]);
            let c = leaders(&topic, 7, &[1, 2, 3, 4], &[1, 2, 3, 4]);
            assert!(c.values().max().unwrap() - c.values().min().unwrap() <= 1, "{c:?}");
        }
    }

    #[test]
    fn a_gone_brokers_partitions_spread_over_the_others_and_come_back() {
        for t in 0..20 {
            let topic = format!("topic-{t}");
            for gone in [1, 2, 3] {
                let live: Vec<i32> = [1, 2, 3].into_iter().filter(|b| *b != gone).collect();
                assert_eq!(leaders(&topic, 6, &[1, 2, 3], &live).into_values().collect::<Vec<_>>(), vec![3, 3]);
                for p in 0..6 {
                    let before = partition_leader(Scheme::RoundRobin, &topic, p, &[1, 2, 3], &[1, 2, 3]);
                    let during = partition_leader(Scheme::RoundRobin, &topic, p, &[1, 2, 3], &live);
                    if before != Some(gone) {
                        assert_eq!(before, during, "only the gone broker's partitions move");
                    }
                }
            }
        }
    }

    #[test]
    fn a_partition_none_of_whose_brokers_is_live_goes_to_a_live_one() {
        assert_eq!(partition_leader(Scheme::RoundRobin, "t", 0, &[1, 2], &[]), None);
        assert_eq!(partition_leader(Scheme::RoundRobin, "t", 0, &[1, 2], &[5]), Some(5));
        assert_eq!(partition_leader(Scheme::RoundRobin, "t", 0, &[], &[5]), Some(5));
    }

    #[test]
    fn only_what_a_leaving_broker_served_moves() {
        for p in 0..200 {
            let before = desired_owner(&part(p), &[1, 2, 3]).unwrap();
            let after = desired_owner(&part(p), &[1, 3]).unwrap();
            if before != 2 {
                assert_eq!(before, after, "partition {p} moved although its broker stayed");
            }
        }
    }

    #[test]
    fn a_returning_broker_gets_its_share_back() {
        for p in 0..200 {
            assert_eq!(desired_owner(&part(p), &[1, 2, 3]), desired_owner(&part(p), &[3, 2, 1]));
        }
        let shards: Vec<_> = (0..8).map(|n| desired_owner(&Owned::TxnShard(n), &[1, 2]).unwrap()).collect();
        assert!(shards.contains(&1) && shards.contains(&2), "shards spread too: {shards:?}");
    }

    #[test]
    fn coordinator_units_spread_over_the_live_brokers() {
        let units = CoordinatorUnit::all(4);
        assert_eq!(units.len(), 5);
        let owners: std::collections::BTreeSet<_> =
            units.iter().map(|u| u.desired_owner(&[1, 2, 3]).unwrap()).collect();
        assert!(owners.len() >= 2, "all coordinators on one broker: {owners:?}");
        assert_eq!(CoordinatorUnit::Groups.owned(50).len(), 50);
        assert_eq!(CoordinatorUnit::Txn(3).owned(50), vec![Owned::TxnShard(3)]);
    }

    #[test]
    fn only_the_coordinators_of_a_leaving_broker_move() {
        for shards in 1..12 {
            for u in CoordinatorUnit::all(shards) {
                let before = u.desired_owner(&[1, 2, 3]).unwrap();
                let after = u.desired_owner(&[1, 2]).unwrap();
                if before != 3 {
                    assert_eq!(before, after, "{u:?} moved although its broker stayed");
                }
                assert_eq!(u.desired_owner(&[1, 2, 3]), u.desired_owner(&[3, 1, 2]));
            }
        }
    }
}
