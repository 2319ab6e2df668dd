use super::*;

#[test]
fn join_first_member_gets_member_id_required() {
    let mut g = Group::new("g", cfg(0));
    let out = join(&mut g, 0, 1, jreq(4, "", None, b"m"), "m1");
    let r = join_resp(&out, 1);
    assert_eq!((error_code(r.error), r.member_id.as_str(), r.generation_id), (79, "m1", -1));
    assert_eq!((g.state(), g.members().len()), (Empty, 0));
    let r = join_resp(&join(&mut g, 0, 2, jreq(4, "zzz", None, b"m"), "x"), 2);
    assert_eq!(error_code(r.error), 25);
    let r = join_resp(&join(&mut g, 1, 3, jreq(4, "m1", None, b"m"), "x"), 3);
    assert_eq!((r.error, r.generation_id, r.leader.as_str()), (None, 1, "m1"));
    assert_eq!(r.protocol_name.as_deref(), Some("range"));
    assert_eq!(
        r.members,
        vec![JoinMember { member_id: "m1".into(), group_instance_id: None, metadata: b"m".to_vec() }]
    );
    assert_eq!(g.state(), CompletingRebalance);
}

#[test]
fn inconsistent_protocol_rejected() {
    let mut g = stable_group(&["m1"], false);
    let mut req = jreq(3, "", None, b"m");
    req.protocols = vec![("roundrobin".into(), vec![])];
    assert_eq!(error_code(join_resp(&join(&mut g, 300, 1, req, "m2"), 1).error), 23);
    let mut req = jreq(3, "", None, b"m");
    req.protocol_type = "connect".into();
    assert_eq!(error_code(join_resp(&join(&mut g, 300, 2, req, "m2"), 2).error), 23);
    let mut req = jreq(3, "", None, b"m");
    req.session_timeout_ms = 10;
    assert_eq!(error_code(join_resp(&join(&mut g, 300, 3, req, "m2"), 3).error), 26);
    let out = g.sync(300, 4, SyncRequest { protocol_name: Some("sticky".into()), ..sreq(1, "m1", None, &[]) });
    assert_eq!(error_code(sync_resp(&out, 4).error), 23);
    assert_eq!((g.state(), g.generation_id()), (Stable, 1));
}

#[test]
fn single_member_join_sync_becomes_stable() {
    let mut g = Group::new("g", cfg(0));
    let r = join_resp(&join(&mut g, 0, 1, jreq(3, "", None, b"m"), "m1"), 1);
    assert_eq!((r.error, r.generation_id, r.member_id.as_str(), r.leader.as_str()), (None, 1, "m1", "m1"));
    let out = g.sync(5, 2, sreq(1, "m1", None, &[("m1", b"A")]));
    let s = sync_resp(&out, 2);
    assert_eq!((s.error, s.assignment.as_slice(), s.protocol_name.as_deref()), (None, &b"A"[..], Some("range")));
    assert_eq!((g.state(), g.generation_id()), (Stable, 1));
    assert_eq!(hb(&mut g, 6, 1, "m1", None), 0);
    let d = g.describe();
    assert_eq!((d.state, d.protocol_type.as_str(), d.protocol.as_str()), (Stable, "consumer", "range"));
    assert_eq!((d.members[0].metadata.as_slice(), d.members[0].assignment.as_slice()), (&b"m"[..], &b"A"[..]));
    assert_eq!(g.list_entry(), ("consumer".to_string(), "Stable"));
    // A follower-less Stable group answers a repeated sync with the stored assignment.
    assert_eq!(sync_resp(&g.sync(7, 3, sreq(1, "m1", None, &[])), 3).assignment, b"A");
}

#[test]
fn static_member_rejoin_fences_old_member_id() {
    let mut g = Group::new("g", cfg(0));
    let r = join_resp(&join(&mut g, 0, 1, jreq(5, "", Some("i1"), b"m"), "a"), 1);
    assert_eq!((r.error, r.member_id.as_str(), r.generation_id), (None, "a", 1)); // static: no 79
    g.sync(1, 2, sreq(1, "a", Some("i1"), &[("a", b"A")]));
    let r = join_resp(&join(&mut g, 2, 3, jreq(5, "", Some("i1"), b"m"), "b"), 3);
    assert_eq!((r.error, r.member_id.as_str(), r.generation_id), (None, "b", 1));
    assert_eq!(hb(&mut g, 3, 1, "a", Some("i1")), 82);
    assert_eq!(error_code(sync_resp(&g.sync(3, 4, sreq(1, "a", Some("i1"), &[])), 4).error), 82);
    assert_eq!(g.commit_offsets(3, 1, "a", Some("i1"), vec![oc("t", 0, 1)]), Err(GroupError::FencedInstanceId));
    assert_eq!(error_code(join_resp(&join(&mut g, 3, 5, jreq(5, "a", Some("i1"), b"m"), "x"), 5).error), 82);
    assert_eq!(hb(&mut g, 3, 1, "b", Some("i1")), 0);
    assert!(join(&mut g, 4, 6, jreq(5, "", Some("i2"), b"m"), "n").is_empty());
    let out = join(&mut g, 5, 7, jreq(5, "b", Some("i1"), b"m"), "x");
    assert_eq!((join_resp(&out, 7).generation_id, join_resp(&out, 6).leader.as_str()), (2, "b"));
    // A replaced member's parked sync is answered FENCED_INSTANCE_ID; the group rebalances.
    assert!(g.sync(6, 8, sreq(2, "n", Some("i2"), &[])).is_empty());
    let out = join(&mut g, 7, 9, jreq(5, "", Some("i2"), b"m"), "n2");
    assert_eq!((out.len(), error_code(sync_resp(&out, 8).error)), (1, 82));
    assert_eq!(g.state(), PreparingRebalance);
    let out = join(&mut g, 8, 10, jreq(5, "b", Some("i1"), b"m"), "x");
    assert_eq!((join_resp(&out, 9).member_id.as_str(), join_resp(&out, 9).generation_id), ("n2", 3));
}

#[test]
fn static_member_rejoin_keeps_assignment_without_rebalance() {
    let mut g = stable_group(&["a", "b"], true);
    let r = join_resp(&join(&mut g, 300, 1, jreq(5, "", Some("i-b"), b"m"), "b2"), 1);
    assert_eq!((r.error, r.generation_id, r.member_id.as_str(), r.leader.as_str()), (None, 1, "b2", "a"));
    assert_eq!((r.members.len(), r.skip_assignment), (0, false));
    assert_eq!((g.state(), g.generation_id()), (Stable, 1));
    let s = sync_resp(&g.sync(301, 2, sreq(1, "b2", Some("i-b"), &[])), 2);
    assert_eq!((s.error, s.assignment.as_slice()), (None, &b"a-b"[..]));
    // v9 leader: member list with skip_assignment; older leader: told the previous leader id.
    let r = join_resp(&join(&mut g, 302, 3, jreq(9, "", Some("i-a"), b"m"), "a2"), 3);
    assert_eq!((r.leader.as_str(), r.members.len(), r.skip_assignment), ("a2", 2, true));
    let r = join_resp(&join(&mut g, 303, 4, jreq(5, "", Some("i-a"), b"m"), "a3"), 4);
    assert_eq!((r.leader.as_str(), r.members.len(), r.skip_assignment), ("a2", 0, false));
    assert_eq!((g.state(), g.generation_id(), g.leader()), (Stable, 1, Some("a3")));
    // Changed subscription metadata: rebalance.
    assert!(join(&mut g, 304, 5, jreq(5, "", Some("i-b"), b"new"), "b3").is_empty());
    assert_eq!(g.state(), PreparingRebalance);
}

#[test]
fn sync_waits_for_leader() {
    let mut g = Group::new("g", cfg(100));
    join(&mut g, 0, 1, jreq(3, "", None, b"m"), "m1");
    join(&mut g, 0, 2, jreq(3, "", None, b"m"), "m2");
    join(&mut g, 0, 3, jreq(3, "", None, b"m"), "m3");
    assert!(g.tick(100).is_empty());
    assert_eq!(g.tick(200).len(), 3);
    assert!(g.sync(201, 12, sreq(1, "m2", None, &[])).is_empty());
    assert_eq!(error_code(sync_resp(&g.sync(201, 13, sreq(0, "m3", None, &[])), 13).error), 22);
    assert_eq!(error_code(sync_resp(&g.sync(201, 14, sreq(1, "zz", None, &[])), 14).error), 25);
    assert_eq!(g.state(), CompletingRebalance);
    let out = g.sync(202, 11, sreq(1, "m1", None, &[("m1", b"A"), ("m2", b"B")]));
    assert_eq!(out.len(), 2);
    assert_eq!((sync_resp(&out, 11).assignment, sync_resp(&out, 12).assignment), (b"A".to_vec(), b"B".to_vec()));
    assert_eq!(g.state(), Stable);
    assert_eq!(sync_resp(&g.sync(203, 15, sreq(1, "m3", None, &[])), 15).assignment, b"");
    // left out by leader
}

#[test]
fn heartbeat_during_rebalance_is_rebalance_in_progress() {
    let mut g = stable_group(&["m1", "m2"], false);
    join(&mut g, 300, 1, jreq(3, "m1", Some("zz"), b"m"), "x"); // unknown instance
    assert_eq!(g.state(), Stable);
    join(&mut g, 300, 2, jreq(3, "m1", None, b"m"), "x"); // leader rejoin -> rebalance
    assert_eq!(g.state(), PreparingRebalance);
    assert_eq!(hb(&mut g, 301, 1, "m2", None), 27);
    assert_eq!(hb(&mut g, 301, 0, "m2", None), 22);
    assert_eq!(hb(&mut g, 301, 1, "zz", None), 25);
    let out = g.sync(301, 3, sreq(1, "m2", None, &[]));
    assert_eq!(error_code(sync_resp(&out, 3).error), 27);
    join(&mut g, 302, 4, jreq(3, "m2", None, b"m"), "x");
    assert_eq!(g.state(), CompletingRebalance);
    assert_eq!(hb(&mut g, 303, 2, "m2", None), 0);
}
