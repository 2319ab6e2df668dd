use super::*;

#[test]
fn commit_with_wrong_generation_is_illegal_generation() {
    let mut g = stable_group(&["m1", "m2"], false);
    assert_eq!(g.commit_offsets(300, 0, "m1", None, vec![oc("t", 0, 5)]), Err(GroupError::IllegalGeneration));
    assert_eq!(g.commit_offsets(300, 1, "zz", None, vec![oc("t", 0, 5)]), Err(GroupError::UnknownMemberId));
    assert_eq!(g.commit_offsets(300, -1, "", None, vec![oc("t", 0, 5)]), Err(GroupError::UnknownMemberId));
    assert_eq!(g.commit_offsets(300, 1, "m1", None, vec![oc("t", 0, 5)]), Ok(()));
    let f = fetched(&g, "t", 0, false);
    assert_eq!((f.offset, f.leader_epoch, f.metadata.as_str(), f.error), (5, 3, "md", None));
    join(&mut g, 301, 1, jreq(3, "m1", None, b"m"), "x");
    assert_eq!(g.state(), PreparingRebalance); // commits still accepted for the old generation
    assert_eq!(g.commit_offsets(302, 1, "m2", None, vec![oc("t", 0, 6)]), Ok(()));
    join(&mut g, 303, 2, jreq(3, "m2", None, b"m"), "x");
    assert_eq!(g.state(), CompletingRebalance);
    assert_eq!(g.commit_offsets(304, 2, "m1", None, vec![oc("t", 0, 7)]), Err(GroupError::RebalanceInProgress));
    assert_eq!(fetched(&g, "t", 0, false).offset, 6);
}

#[test]
fn standalone_commit_allowed_for_empty_group() {
    let mut g = Group::new("g", cfg(0));
    assert_eq!(g.commit_offsets(1, -1, "", None, vec![oc("t", 0, 10), oc("t", 1, 11)]), Ok(()));
    let all = g.fetch_offsets(None, false);
    assert_eq!(all.iter().map(|f| f.offset).collect::<Vec<_>>(), vec![10, 11]);
    assert_eq!(fetched(&g, "t", 9, false).offset, -1);
    join(&mut g, 2, 1, jreq(3, "", None, b"m"), "m1");
    assert_eq!(g.commit_offsets(3, -1, "", None, vec![oc("t", 0, 12)]), Err(GroupError::UnknownMemberId));
    assert_eq!(g.state(), CompletingRebalance);
}

#[test]
fn delete_offsets_refuses_subscribed_topics() {
    let mut g = stable_group(&["m1"], false); // metadata b"m" decodes to topic "t"
    g.commit_offsets(300, 1, "m1", None, vec![oc("t", 0, 1), oc("u", 0, 2)]).unwrap();
    let decode = |md: &[u8]| (md == b"m").then(|| vec!["t".to_string()]);
    let parts = [("t".to_string(), 0), ("u".to_string(), 0)];
    let res = g.delete_offsets(&parts, decode).unwrap();
    assert_eq!(res.iter().map(|r| error_code(r.2)).collect::<Vec<_>>(), vec![86, 0]);
    assert_eq!((fetched(&g, "t", 0, false).offset, fetched(&g, "u", 0, false).offset), (1, -1));
}

#[test]
fn offsets_retention_expires_offsets_of_an_empty_group_then_forgets_it() {
    let mut g = Group::new("g", GroupConfig { offsets_retention_ms: 1000, ..cfg(0) });
    g.commit_offsets(10_000, -1, "", None, vec![oc("t", 0, 5)]).unwrap();
    g.commit_offsets(10_500, -1, "", None, vec![oc("t", 1, 7)]).unwrap();
    assert_eq!(g.expire_offsets(10_999), 0);
    assert!(!g.is_removable());
    assert_eq!(g.expire_offsets(11_000), 1, "only the older commit is past retention");
    assert_eq!(g.fetch_offsets(None, false).len(), 1);
    assert_eq!(g.expire_offsets(11_500), 1);
    assert!(g.is_removable());
}

#[test]
fn offsets_retention_does_not_touch_a_group_with_members() {
    let mut g = stable_group(&["m1"], false);
    g.config.offsets_retention_ms = 1000;
    g.commit_offsets(300, 1, "m1", None, vec![oc("t", 0, 5)]).unwrap();
    assert_eq!(g.expire_offsets(1_000_000), 0);
    assert!(!g.is_removable());
}
