//! Transaction markers in a cluster of kaas brokers on one data directory, against
//! the real binary: markers still pending when a coordinator's broker dies are re-sent by the
//! broker that takes its shard over (as Kafka's coordinator does when it loads a partition of
//! `__transaction_state`), and a coordinator limited to WriteTxnMarkers v1 sends v1 to its peers
//! (KIP-1228's fallback), which validate them the legacy way.

use crate::common;

use std::collections::BTreeSet;
use std::time::Duration;

use common::cluster::*;
use common::{Broker, Client};

/// The log without its colour codes.
fn without_ansi(log: &str) -> String {
    let mut out = String::with_capacity(log.len());
    let mut chars = log.chars();
    while let Some(c) = chars.next() {
        if c == '\u{1b}' {
            chars.by_ref().find(|c| c.is_ascii_alphabetic());
        } else {
            out.push(c);
        }
    }
    out
}

#[test]
fn markers_pending_when_the_coordinator_dies_are_resent_by_its_next_owner() {
    let shared = tempfile::tempdir().expect("shared dir");
    let env = [("KAAS_CLUSTER_TICK_MS", TICK)];
    let mut brokers: Vec<Broker> = (1..=3).map(|id| Broker::start_member(shared.path(), id, &env)).collect();
    let all: BTreeSet<i32> = [1, 2, 3].into();
    wait_for(Duration::from_secs(10), "three live brokers", || {
        (metadata(&mut brokers[0].client()).0.keys().copied().collect::<BTreeSet<_>>() == all).then_some(())
    });
    create(&mut brokers[0].client());
    let (ports, leaders) = wait_for(Duration::from_secs(10), "every partition led", || settled(&brokers[0], &all));
    let coordinators =
        wait_for(Duration::from_secs(10), "every coordinator running", || coordinator_map(&brokers[0], &all));
    // A transaction whose coordinator (C) is not the leader (L) of its partition.
    let (id, c_node, p, l_node) = coordinators
        .iter()
        .filter(|(k, _)| k.starts_with("tx-"))
        .find_map(|(k, c)| leaders.iter().find(|(_, l)| *l != c).map(|(p, l)| (k.clone(), *c, *p, *l)))
        .expect("a transaction coordinated away from a partition's leader");
    let (mut at_c, mut at_l) = (Client::connect(ports[&c_node]), Client::connect(ports[&l_node]));
    let (pid, epoch) = open_transaction(&mut at_c, &mut at_l, &id, p);

    // L pauses: C's commit markers cannot reach it. EndTxn is answered once PrepareCommit is
    // durable; the markers stay pending. Then C dies with them.
    signal(brokers[(l_node - 1) as usize].pid(), "-STOP");
    assert_eq!(end_txn(&mut at_c, &id, pid, epoch, true), 0, "EndTxn(commit)");
    std::thread::sleep(Duration::from_millis(500));
    brokers[(c_node - 1) as usize].kill();
    signal(brokers[(l_node - 1) as usize].pid(), "-CONT");
    let live: BTreeSet<i32> = all.iter().copied().filter(|n| *n != c_node).collect();
    let survivor = &brokers[(l_node - 1) as usize];

    // The shard's next owner finds PrepareCommit, re-sends the markers and completes.
    let next = wait_for(Duration::from_secs(20), "the shard taken over", || {
        let n = coordinator(&mut survivor.client(), &id, 1);
        live.contains(&n).then_some(n)
    });
    eprintln!(
        "{id}: coordinator {c_node} killed with markers pending for partition {p} on {l_node}; shard now on {next}"
    );
    let port = metadata(&mut survivor.client()).0[&next];
    wait_for(Duration::from_secs(20), "CompleteCommit at the next owner", || {
        (txn_state(&mut Client::connect(port), &id) == (0, "CompleteCommit".to_string())).then_some(())
    });
    let next_log = without_ansi(&brokers[(next - 1) as usize].log());
    assert!(next_log.contains("resending markers"), "broker {next} did not re-send the pending markers");
    // The batch and its COMMIT marker: read_committed reads up to the end.
    assert_eq!(stable_offsets(&mut Client::connect(ports[&l_node]), p), (0, 4, 4));
}

#[test]
fn a_coordinator_limited_to_v1_sends_v1_markers_to_its_peer() {
    let shared = tempfile::tempdir().expect("shared dir");
    let v1 = [("KAAS_CLUSTER_TICK_MS", TICK), ("KAAS_WRITE_TXN_MARKERS_MAX_VERSION", "1")];
    let traced = [("KAAS_CLUSTER_TICK_MS", TICK), ("RUST_LOG", "info,kaas::protocol::connection=trace")];
    let brokers = [Broker::start_member(shared.path(), 1, &v1), Broker::start_member(shared.path(), 2, &traced)];
    let all: BTreeSet<i32> = [1, 2].into();
    wait_for(Duration::from_secs(10), "two live brokers", || {
        (metadata(&mut brokers[0].client()).0.keys().copied().collect::<BTreeSet<_>>() == all).then_some(())
    });
    create(&mut brokers[0].client());
    let (ports, leaders) = wait_for(Duration::from_secs(10), "every partition led", || settled(&brokers[0], &all));
    let coordinators =
        wait_for(Duration::from_secs(10), "every coordinator running", || coordinator_map(&brokers[0], &all));
    let id = txn_id_on(&coordinators, 1).expect("a transaction shard on broker 1");
    let p = leaders.iter().find(|(_, l)| **l == 2).map(|(p, _)| *p).expect("a partition on broker 2");
    let (mut at_1, mut at_2) = (Client::connect(ports[&1]), Client::connect(ports[&2]));

    let (pid, epoch) = open_transaction(&mut at_1, &mut at_2, &id, p);
    assert_eq!(end_txn(&mut at_1, &id, pid, epoch, true), 0);
    wait_for(Duration::from_secs(10), "the commit marker on broker 2", || {
        (stable_offsets(&mut at_2, p) == (0, 4, 4)).then_some(())
    });
    let log = without_ansi(&brokers[1].log());
    assert!(log.contains("api=WriteTxnMarkers version=1"), "broker 2 got no v1 markers");
    assert!(!log.contains("api=WriteTxnMarkers version=2"), "broker 1 sent v2 although limited to v1");
}
