use super::*;

#[test]
fn rebalance_on_join_while_stable() {
    let mut g = stable_group(&["m1", "m2"], false);
    let r = join_resp(&join(&mut g, 1000, 1, jreq(4, "", None, b"m"), "m3"), 1);
    assert_eq!(error_code(r.error), 79);
    assert_eq!(g.state(), Stable); // a pending member alone does not rebalance
    assert!(join(&mut g, 1001, 2, jreq(4, "m3", None, b"m3"), "x").is_empty());
    assert_eq!(g.state(), PreparingRebalance);
    assert_eq!(hb(&mut g, 1002, 1, "m1", None), 27);
    assert!(join(&mut g, 1003, 3, jreq(4, "m1", None, b"m"), "x").is_empty());
    let out = join(&mut g, 1004, 4, jreq(4, "m2", None, b"m"), "x");
    assert_eq!(out.len(), 3);
    let (r1, r2, r3) = (join_resp(&out, 3), join_resp(&out, 4), join_resp(&out, 2));
    assert_eq!((r1.generation_id, r1.leader.as_str(), r1.members.len()), (2, "m1", 3));
    assert_eq!((r2.generation_id, r2.members.len(), r3.member_id.as_str()), (2, 0, "m3"));
    assert_eq!((g.state(), g.generation_id()), (CompletingRebalance, 2));
    assert_eq!(hb(&mut g, 1005, 2, "m3", None), 0);
}

#[test]
fn rebalance_on_leave() {
    let mut g = stable_group(&["m1", "m2"], false);
    let leaving = vec![
        LeaveMember { member_id: "m2".into(), group_instance_id: None },
        LeaveMember { member_id: "nope".into(), group_instance_id: None },
    ];
    let out = g.leave(300, 1, leaving);
    let Response::Leave(l) = &out[0].response else { panic!("{out:?}") };
    let codes: Vec<i16> = l.members.iter().map(|m| error_code(m.error)).collect();
    assert_eq!((l.error, codes), (None, vec![0, 25]));
    assert_eq!((g.state(), g.members().len()), (PreparingRebalance, 1));
    let r = join_resp(&join(&mut g, 301, 2, jreq(3, "m1", None, b"m"), "x"), 2);
    assert_eq!((r.generation_id, r.leader.as_str(), r.members.len()), (2, "m1", 1));
    g.sync(302, 3, sreq(2, "m1", None, &[("m1", b"A")]));
    assert_eq!(g.state(), Stable);
    g.leave(303, 4, vec![LeaveMember { member_id: "m1".into(), group_instance_id: None }]);
    assert_eq!((g.state(), g.generation_id(), g.members().len()), (Empty, 3, 0));
}

#[test]
fn rebalance_on_session_timeout() {
    let mut g = stable_group(&["m1", "m2"], false); // session deadlines at 200 + 10_000
    assert_eq!(hb(&mut g, 5000, 1, "m1", None), 0);
    assert!(g.tick(10_199).is_empty());
    assert_eq!(g.next_deadline(), Some(10_200));
    assert!(g.tick(10_200).is_empty());
    assert_eq!((g.state(), g.members().len()), (PreparingRebalance, 1));
    assert_eq!(hb(&mut g, 10_201, 1, "m2", None), 25);
    assert_eq!(hb(&mut g, 10_202, 1, "m1", None), 27);
    let r = join_resp(&join(&mut g, 10_203, 1, jreq(3, "m1", None, b"m"), "x"), 1);
    assert_eq!((r.generation_id, r.members.len()), (2, 1));
    assert_eq!(g.state(), CompletingRebalance);
}

#[test]
fn rebalance_timeout_removes_laggards() {
    let mut g = stable_group(&["m1", "m2"], false);
    assert!(join(&mut g, 1000, 1, jreq(3, "", None, b"m"), "m3").is_empty());
    assert!(join(&mut g, 2000, 2, jreq(3, "m1", None, b"m"), "x").is_empty());
    for t in [9000, 18_000, 27_000] {
        assert_eq!(hb(&mut g, t, 1, "m2", None), 27); // alive, but never rejoins
    }
    assert!(g.tick(30_999).is_empty());
    let out = g.tick(31_000); // 1000 + max rebalance timeout
    assert_eq!(out.len(), 2);
    assert_eq!((join_resp(&out, 2).members.len(), join_resp(&out, 1).generation_id), (2, 2));
    assert_eq!((g.state(), g.generation_id(), g.members().len()), (CompletingRebalance, 2, 2));
    assert_eq!(hb(&mut g, 31_001, 2, "m2", None), 25);
}

#[test]
fn pending_sync_members_are_removed_after_rebalance_timeout() {
    let mut g = Group::new("g", cfg(100));
    let req = JoinRequest { rebalance_timeout_ms: 5000, ..jreq(3, "", None, b"m") };
    join(&mut g, 0, 1, req.clone(), "m1");
    join(&mut g, 0, 2, req, "m2");
    g.tick(100);
    assert_eq!(g.tick(200).len(), 2);
    g.sync(300, 3, sreq(1, "m1", None, &[("m1", b"A"), ("m2", b"B")]));
    assert_eq!(g.state(), Stable);
    assert!(g.tick(5199).is_empty());
    g.tick(5200); // m2 never sent SyncGroup within the rebalance timeout
    assert_eq!((g.state(), g.members().len()), (PreparingRebalance, 1));
}
