//! store::group::stored: what a classic group keeps across a restart, one test per transition
//! and per state the coordinator can stop in.

use super::super::GroupState::*;
use super::super::*;
use super::*;

/// The group as a new coordinator reads it back at `now` (through the JSON written to sled).
fn reloaded(g: &Group, now: u64) -> Group {
    let json = serde_json::to_vec(&g.snapshot()).unwrap();
    Group::from_snapshot("g", cfg(100), serde_json::from_slice(&json).unwrap(), now)
}

#[test]
fn a_completed_rebalance_is_kept_and_read_back_stable() {
    let mut g = stable_group(&["a", "b"], false);
    assert!(g.take_stored_change(), "the leader's SyncGroup stores the group");
    let mut r = reloaded(&g, 5_000);
    assert_eq!((r.state(), r.generation_id(), r.leader()), (Stable, 1, Some("a")));
    assert_eq!(r.protocol_name(), Some("range"));
    let ids: Vec<&str> = r.members().iter().map(|m| m.member_id.as_str()).collect();
    assert_eq!(ids, ["a", "b"]);
    // Members go on at their generation: heartbeats, SyncGroup, commits.
    assert_eq!(hb(&mut r, 5_001, 1, "b", None), 0);
    let out = r.sync(5_002, 7, sreq(1, "b", None, &[]));
    assert_eq!(sync_resp(&out, 7).assignment, b"a-b");
    assert_eq!(r.commit_offsets(5_003, 1, "a", None, vec![oc("t", 0, 42)]), Ok(()));
    assert!(!r.take_stored_change(), "reading back is no change");
}

#[test]
fn the_session_of_a_member_read_back_starts_at_the_load() {
    let g = stable_group(&["a"], false);
    let mut r = reloaded(&g, 50_000); // long after its last heartbeat (t=200)
    assert!(r.tick(59_999).is_empty());
    assert_eq!(r.state(), Stable, "session 10 s from the load, not from the last heartbeat");
    r.tick(60_001);
    assert_ne!(r.state(), Stable, "a member that never comes back is removed after its session");
}

#[test]
fn a_rebalance_in_progress_is_not_kept() {
    let mut g = stable_group(&["a", "b"], false);
    g.take_stored_change();
    join(&mut g, 300, 9, jreq(3, "", None, b"m"), "c");
    assert_eq!(g.state(), PreparingRebalance);
    assert!(!g.take_stored_change(), "Kafka writes nothing when a rebalance starts");
    let r = reloaded(&g, 400);
    assert_eq!((r.state(), r.generation_id()), (Stable, 1));
    assert_eq!(r.members().len(), 2, "the joining member is not kept: it joins again");
}

#[test]
fn a_generation_handed_out_but_not_synced_is_not_kept() {
    let mut g = stable_group(&["a"], false);
    join(&mut g, 300, 9, jreq(3, "a", None, b"m2"), "a");
    g.tick(300);
    assert_eq!((g.state(), g.generation_id()), (CompletingRebalance, 2));
    let mut r = reloaded(&g, 400);
    assert_eq!((r.state(), r.generation_id()), (Stable, 1));
    // The member holding generation 2 is told to join again.
    assert_eq!(hb(&mut r, 401, 2, "a", None), GroupError::IllegalGeneration.code());
    assert_eq!(r.members()[0].assignment, b"a-a", "the kept assignment is generation 1's");
}

#[test]
fn an_empty_group_is_kept_empty_at_its_generation() {
    let mut g = stable_group(&["a"], false);
    g.take_stored_change();
    g.leave(300, 1, vec![LeaveMember { member_id: "a".into(), group_instance_id: None }]);
    g.tick(300);
    assert_eq!((g.state(), g.generation_id()), (Empty, 2));
    assert!(g.take_stored_change(), "Kafka stores the emptied group");
    let r = reloaded(&g, 400);
    assert_eq!((r.state(), r.generation_id(), r.members().len()), (Empty, 2, 0));
}

#[test]
fn a_static_member_that_rejoined_under_a_new_id_is_kept_with_it() {
    let mut g = stable_group(&["a", "b"], true);
    g.take_stored_change();
    let out = join(&mut g, 300, 9, jreq(9, "", Some("i-b"), b"m"), "b2");
    assert_eq!(join_resp(&out, 9).member_id, "b2");
    assert_eq!(g.state(), Stable);
    assert!(g.take_stored_change(), "the new member id is stored before the answer");
    let mut r = reloaded(&g, 400);
    assert_eq!(hb(&mut r, 401, 1, "b2", Some("i-b")), 0);
    assert_eq!(hb(&mut r, 402, 1, "b", Some("i-b")), GroupError::FencedInstanceId.code());
}

#[test]
fn a_snapshot_without_a_kept_membership_reads_back_empty() {
    // Written by kaas before memberships were kept, or by a group that never completed one.
    let old = Group::from_snapshot("g", cfg(0), GroupSnapshot { generation_id: 4, ..Default::default() }, 0);
    let mut json: serde_json::Value = serde_json::to_value(old.snapshot()).unwrap();
    assert!(json.get("classic").is_none(), "nothing written for a group that kept none");
    json["protocol_type"] = "consumer".into();
    let json = json.to_string();
    let r = Group::from_snapshot("g", cfg(0), serde_json::from_str(&json).unwrap(), 0);
    assert_eq!((r.state(), r.generation_id(), r.members().len()), (Empty, 4, 0));
}
