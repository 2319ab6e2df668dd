use super::*;

#[test]
fn delete_non_empty_group_refused() {
    let mut g = stable_group(&["m1"], false);
    assert_eq!(g.can_delete_group().map_err(GroupError::code), Err(68));
    assert_eq!(g.delete_group(), Err(GroupError::NonEmptyGroup));
    g.leave(300, 1, vec![LeaveMember { member_id: String::new(), group_instance_id: None }]);
    g.leave(300, 2, vec![LeaveMember { member_id: "m1".into(), group_instance_id: None }]);
    assert_eq!(g.state(), Empty);
    assert_eq!(g.delete_group(), Ok(()));
    assert_eq!((g.state(), g.fetch_offsets(None, false).len()), (Dead, 0));
    assert_eq!(g.can_delete_group(), Err(GroupError::GroupIdNotFound));
    let r = join_resp(&join(&mut g, 301, 3, jreq(3, "", None, b"m"), "x"), 3);
    assert_eq!(error_code(r.error), 15);
}
