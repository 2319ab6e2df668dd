//! Topics on a cluster of brokers sharing one disk: brokers creating one
//! topic at once leave exactly one topic, whose partitions all take writes (the loser touched no
//! directory), also when the name was deleted just before (its directories are replaced only
//! when the new topic's partitions open); and leaders are spread as Kafka spreads them: 20
//! topics of 6 partitions on 3 brokers lead 2/2/2 each, 3/3 on the two left when one is killed,
//! 2/2/2 again once it is back.

use crate::common;

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use common::cluster::{metadata_of as leaders, produce_to, wait_for, TICK};
use common::{batch, create_topic_code as create_code, delete_topic_named as delete, Broker, Client};

const TOPIC_ALREADY_EXISTS: i16 = 36;

/// Every one of `partitions` partitions of `topic` led by a broker of `live`, the same on every
/// broker of `brokers`.
fn settled(brokers: &[&Broker], topic: &str, partitions: i32, live: &BTreeSet<i32>) -> Option<BTreeMap<i32, i32>> {
    let mut seen = None;
    for b in brokers {
        let (known, l) = leaders(&mut b.client(), topic);
        let ok = known.keys().copied().collect::<BTreeSet<_>>() == *live
            && l.len() == partitions as usize
            && l.values().all(|n| live.contains(n));
        if !ok || seen.as_ref().is_some_and(|s| *s != l) {
            return None;
        }
        seen = Some(l);
    }
    seen
}

fn produce(c: &mut Client, topic: &str, partition: i32, producer: i64) -> (i16, i64) {
    produce_to(c, topic, partition, batch(producer, 0, 0, 2, "r"))
}

fn start(shared: &std::path::Path, ids: &[i32]) -> Vec<Broker> {
    let env = [("KAAS_CLUSTER_TICK_MS", TICK)];
    let brokers: Vec<Broker> = ids.iter().map(|id| Broker::start_member(shared, *id, &env)).collect();
    let all: BTreeSet<i32> = ids.iter().copied().collect();
    wait_for(Duration::from_secs(15), "every broker sees every broker", || {
        brokers
            .iter()
            .all(|b| leaders(&mut b.client(), "none").0.keys().copied().collect::<BTreeSet<_>>() == all)
            .then_some(())
    });
    brokers
}

#[test]
fn brokers_creating_one_topic_at_once_leave_one_topic_whose_partitions_all_take_writes() {
    let shared = tempfile::tempdir().expect("shared dir");
    let brokers = start(shared.path(), &[1, 2, 3]);
    let all: BTreeSet<i32> = [1, 2, 3].into();
    let topic = "raced";
    for round in 0..4 {
        let ports: Vec<u16> = brokers.iter().map(|b| b.port).collect();
        let barrier = std::sync::Arc::new(std::sync::Barrier::new(ports.len()));
        let codes: Vec<i16> = ports
            .into_iter()
            .map(|port| {
                let barrier = barrier.clone();
                std::thread::spawn(move || {
                    let mut c = Client::connect(port);
                    barrier.wait();
                    create_code(&mut c, topic, 6)
                })
            })
            .collect::<Vec<_>>()
            .into_iter()
            .map(|h| h.join().expect("creator"))
            .collect();
        assert_eq!(codes.iter().filter(|c| **c == 0).count(), 1, "round {round}: one creation wins: {codes:?}");
        assert!(codes.iter().all(|c| *c == 0 || *c == TOPIC_ALREADY_EXISTS), "round {round}: {codes:?}");
        let refs: Vec<&Broker> = brokers.iter().collect();
        let l = wait_for(Duration::from_secs(15), "the topic led everywhere", || settled(&refs, topic, 6, &all));
        let (ports, _) = leaders(&mut brokers[0].client(), topic);
        for (p, node) in &l {
            let mut c = Client::connect(ports[node]);
            // A new topic of the name starts empty, whatever the deleted one held.
            assert_eq!(produce(&mut c, topic, *p, 100 + i64::from(round)), (0, 0), "round {round} partition {p}");
        }
        // Read back after a moment: nothing of the new topic was removed by a creation that lost.
        std::thread::sleep(Duration::from_millis(600));
        for (p, node) in &l {
            let mut c = Client::connect(ports[node]);
            assert_eq!(produce(&mut c, topic, *p, 200 + i64::from(round)), (0, 2), "round {round} partition {p}");
        }
        delete(&mut brokers[round as usize % 3].client(), topic);
        wait_for(Duration::from_secs(15), "the topic gone everywhere", || {
            brokers.iter().all(|b| leaders(&mut b.client(), topic).1.is_empty()).then_some(())
        });
    }
    for b in brokers {
        b.finish();
    }
}

#[test]
fn leaders_spread_two_two_two_per_topic_three_three_without_a_broker_and_back() {
    let shared = tempfile::tempdir().expect("shared dir");
    let mut brokers = start(shared.path(), &[1, 2, 3]);
    let topics: Vec<String> = (0..20).map(|t| format!("balanced-{t}")).collect();
    for t in &topics {
        assert_eq!(create_code(&mut brokers[0].client(), t, 6), 0);
    }
    let counts = |l: &BTreeMap<i32, i32>| {
        let mut c = BTreeMap::new();
        for n in l.values() {
            *c.entry(*n).or_insert(0) += 1;
        }
        c.into_values().collect::<Vec<i32>>()
    };
    let check = |brokers: &[&Broker], live: &BTreeSet<i32>, want: Vec<i32>| {
        for t in &topics {
            let l = wait_for(Duration::from_secs(20), "the topic led", || settled(brokers, t, 6, live));
            assert_eq!(counts(&l), want, "{t}: {l:?}");
        }
    };
    let all: BTreeSet<i32> = [1, 2, 3].into();
    check(&brokers.iter().collect::<Vec<_>>(), &all, vec![2, 2, 2]);
    brokers[1].kill();
    let two: BTreeSet<i32> = [1, 3].into();
    check(&[&brokers[0], &brokers[2]], &two, vec![3, 3]);
    brokers[1] = Broker::start_member(shared.path(), 2, &[("KAAS_CLUSTER_TICK_MS", TICK)]);
    check(&brokers.iter().collect::<Vec<_>>(), &all, vec![2, 2, 2]);
    for b in brokers {
        b.finish();
    }
}
