use super::*;

fn groups() -> Groups {
    Groups::new(cfg(0))
}

fn heartbeat(generation_id: i32, member_id: &str) -> GroupOp {
    GroupOp::Heartbeat { generation_id, member_id: member_id.into(), group_instance_id: None }
}

#[test]
fn only_join_group_creates_a_group() {
    let mut gs = groups();
    let out = gs.call(0, 1, "g", heartbeat(1, "m1"), || unreachable!());
    assert_eq!(out[0].response, Response::Heartbeat(Some(GroupError::UnknownMemberId)));
    let leave = GroupOp::Leave(vec![LeaveMember { member_id: "m1".into(), group_instance_id: None }]);
    gs.call(0, 2, "g", leave, || unreachable!());
    gs.call(0, 3, "g", GroupOp::Sync(sreq(1, "m1", None, &[])), || unreachable!());
    assert!(gs.get("g").is_none());
    let out = gs.call(0, 4, "g", GroupOp::Join(jreq(3, "", None, b"m")), || "u1".into());
    assert_eq!(join_resp(&out, 4).member_id, "c-u1", "a new member's id is <client id>-<unique>");
    assert_eq!(gs.get("g").map(Group::state), Some(CompletingRebalance));
}

#[test]
fn offset_commit_creates_the_group() {
    let mut gs = groups();
    assert_eq!(gs.commit_offsets(1, "g", -1, "", None, vec![oc("t", 0, 5)], None), Ok(()));
    assert_eq!(gs.commit_offsets(1, "g", -1, "", None, vec![oc("t", 1, 6)], Some((7, 0))), Ok(()));
    let snap = gs.snapshot("g").expect("created");
    assert_eq!((snap.offsets.committed["t"][&0].offset, snap.offsets.pending_txn.len()), (5, 1));
}

#[test]
fn unknown_group_fetches_no_offsets() {
    let gs = groups();
    let f = gs.fetch_offsets("nope", Some(&[("t".to_string(), 0)]), true, None).unwrap();
    assert_eq!((f[0].offset, f[0].error), (-1, None));
    assert!(gs.fetch_offsets("nope", None, false, None).unwrap().is_empty());
}

#[test]
fn unknown_group_is_described_as_dead() {
    let mut gs = groups();
    let (answer, changed) = gs.admin(GroupAdminOp::Describe(vec!["nope".into()]));
    let GroupAdminAnswer::Describe(d) = answer else { panic!("{answer:?}") };
    let desc = d[0].1.as_ref().expect("no error");
    assert_eq!((desc.state, desc.members.len(), changed.len()), (Dead, 0, 0));
}

#[test]
fn list_groups_leaves_out_nothing_but_dead_groups() {
    let mut gs = groups();
    gs.commit_offsets(1, "a", -1, "", None, vec![oc("t", 0, 5)], None).unwrap();
    gs.call(0, 1, "b", GroupOp::Join(jreq(3, "", None, b"m")), || "u".into());
    let (GroupAdminAnswer::List(mut l), _) = gs.admin(GroupAdminOp::List) else { panic!() };
    l.sort();
    let expected = vec![
        ("a".to_string(), String::new(), "Empty".to_string(), GroupType::Classic),
        ("b".to_string(), "consumer".to_string(), "CompletingRebalance".to_string(), GroupType::Classic),
    ];
    assert_eq!(l, expected);
}

#[test]
fn delete_groups_forgets_empty_groups_and_reports_the_change() {
    let mut gs = groups();
    gs.commit_offsets(1, "a", -1, "", None, vec![oc("t", 0, 5)], None).unwrap();
    gs.call(0, 1, "b", GroupOp::Join(jreq(3, "", None, b"m")), || "u".into());
    let ids = vec!["a".to_string(), "b".to_string(), "c".to_string()];
    let (answer, changed) = gs.admin(GroupAdminOp::Delete(ids));
    let GroupAdminAnswer::Delete(codes) = answer else { panic!("{answer:?}") };
    let codes: Vec<i16> = codes.into_iter().map(|(_, c)| c).collect();
    assert_eq!((codes, changed), (vec![0, 68, 69], vec!["a".to_string()]));
    assert!(gs.snapshot("a").is_none(), "written as a removal");
}

#[test]
fn offset_delete_of_unknown_group_is_group_id_not_found() {
    let mut gs = groups();
    let op = GroupAdminOp::DeleteOffsets { group_id: "nope".into(), partitions: vec![("t".into(), 0)] };
    let (answer, changed) = gs.admin(op);
    assert!(matches!(answer, GroupAdminAnswer::DeleteOffsets(Err(GroupError::GroupIdNotFound))));
    assert!(changed.is_empty());
}

#[test]
fn txn_marker_ends_pending_offsets_of_groups_on_its_offsets_partition() {
    let mut gs = groups();
    gs.commit_offsets(1, "g", -1, "", None, vec![oc("t", 0, 5)], Some((7, 0))).unwrap();
    let p = crate::store::coordinator_key::offsets_partition("g");
    assert!(gs.complete_txn(p + 1, 7, true).is_empty(), "another offsets partition");
    assert_eq!(gs.complete_txn(p, 7, true), vec!["g".to_string()]);
    assert_eq!(gs.fetch_offsets("g", Some(&[("t".to_string(), 0)]), true, None).unwrap()[0].offset, 5);
    assert!(gs.complete_txn(p, 7, true).is_empty(), "nothing pending any more");
}

#[test]
fn expiration_forgets_groups_left_with_nothing() {
    let mut gs = Groups::new(GroupConfig { offsets_retention_ms: 1000, ..cfg(0) });
    gs.commit_offsets(10_000, "g", -1, "", None, vec![oc("t", 0, 5)], None).unwrap();
    assert!(gs.expire(10_999).is_empty());
    let expired = gs.expire(11_000);
    assert_eq!(expired, vec![Expired { group_id: "g".into(), offsets: 1, removed: true }]);
    assert!(gs.get("g").is_none());
}

#[test]
fn unwritten_change_is_not_coordinator() {
    let answer = unwritten(GroupAdminAnswer::Delete(vec![("a".into(), 0), ("b".into(), 68)]));
    let GroupAdminAnswer::Delete(codes) = answer else { panic!("{answer:?}") };
    assert_eq!(codes.into_iter().map(|(_, c)| c).collect::<Vec<_>>(), vec![16, 68]);
    let answer = unwritten(GroupAdminAnswer::DeleteOffsets(Ok(vec![])));
    assert!(matches!(answer, GroupAdminAnswer::DeleteOffsets(Err(GroupError::NotCoordinator))));
}

#[test]
fn a_group_whose_last_member_leaves_without_offsets_leaves_no_state_behind() {
    let mut gs = groups();
    let out = gs.call(0, 1, "g", GroupOp::Join(jreq(3, "", None, b"m")), || "u".into());
    let j = join_resp(&out, 1);
    let member = j.member_id.clone();
    let out =
        gs.call(0, 2, "g", GroupOp::Sync(sreq(j.generation_id, &member, None, &[(&member, b"a")])), || unreachable!());
    assert_eq!(sync_resp(&out, 2).error, None);
    assert!(gs.take_stored_change("g"), "the completed rebalance is written");
    assert!(gs.snapshot("g").is_some_and(|s| s.classic.is_some_and(|m| m.members.len() == 1)));

    let leave = GroupOp::Leave(vec![LeaveMember { member_id: member, group_instance_id: None }]);
    gs.call(0, 3, "g", leave, || unreachable!());
    assert_eq!(gs.get("g").map(Group::state), Some(GroupState::Empty));
    assert!(gs.snapshot("g").is_some_and(|s| s.classic.is_some_and(|m| m.members.is_empty())), "no member kept");
    // As Kafka's periodic cleanup (offsets.retention.check.interval.ms) makes such a group Dead.
    let expired = gs.expire(1);
    assert!(expired.iter().any(|e| e.group_id == "g" && e.removed), "{expired:?}");
    assert!(gs.get("g").is_none(), "a group left with nothing is forgotten");
    assert!(gs.snapshot("g").is_none(), "and written as a removal: nothing of it stays on disk");
}

#[test]
fn next_deadline_is_the_session_deadline_of_the_last_heartbeat() {
    let mut gs = groups();
    let out = gs.call(0, 1, "g", GroupOp::Join(jreq(5, "", Some("i1"), b"m")), || "u".into());
    let member = join_resp(&out, 1).member_id;
    gs.call(0, 2, "g", GroupOp::Sync(sreq(1, &member, Some("i1"), &[(&member, b"a")])), || unreachable!());
    let beat = GroupOp::Heartbeat { generation_id: 1, member_id: member.clone(), group_instance_id: Some("i1".into()) };
    gs.call(2_500, 3, "g", beat, || unreachable!());
    // The actor arms its timer here: the static member's session ends 10 s after its heartbeat.
    assert_eq!((gs.next_deadline_of("g"), gs.next_deadline()), (Some(12_500), Some(12_500)));
    assert_eq!(gs.next_deadline_of("other"), None);
    gs.tick(12_499);
    assert_eq!(gs.get("g").map(|g| g.members.len()), Some(1), "not before its deadline");
    gs.tick(12_500);
    assert_eq!(gs.get("g").map(|g| (g.members.len(), g.state())), Some((0, Empty)), "at its deadline");
    assert_eq!(gs.next_deadline(), None);
}
