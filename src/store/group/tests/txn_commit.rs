use super::*;

#[test]
fn rule_57_txn_offset_commit_checks_generation_member_and_static_instance() {
    let mut g = stable_group(&["m1"], true);
    let inst = Some("i-m1");
    assert_eq!(g.txn_offset_commit(300, 7, 0, 0, "m1", inst, vec![oc("t", 0, 1)]), Err(GroupError::IllegalGeneration));
    assert_eq!(g.txn_offset_commit(300, 7, 0, 1, "zz", None, vec![oc("t", 0, 1)]), Err(GroupError::UnknownMemberId));
    assert_eq!(g.txn_offset_commit(300, 7, 0, 1, "zz", inst, vec![oc("t", 0, 1)]), Err(GroupError::FencedInstanceId));
    assert_eq!(
        g.txn_offset_commit(300, 7, 0, 1, "m1", Some("i-other"), vec![oc("t", 0, 1)]),
        Err(GroupError::UnknownMemberId)
    );
    assert!(!g.has_pending_txn_offset("t", 0), "a refused commit leaves nothing pending");
    assert_eq!(g.txn_offset_commit(300, 7, 0, 1, "m1", inst, vec![oc("t", 0, 1)]), Ok(()));
    assert!(g.has_pending_txn_offset("t", 0));
}

#[test]
fn rule_59_txn_offsets_visible_only_after_commit() {
    let mut g = stable_group(&["m1"], false);
    assert_eq!(g.txn_offset_commit(300, 7, 0, 0, "m1", None, vec![]), Err(GroupError::IllegalGeneration));
    assert_eq!(g.txn_offset_commit(300, 7, 0, 1, "zz", None, vec![]), Err(GroupError::UnknownMemberId));
    assert_eq!(g.txn_offset_commit(300, 7, 0, 1, "m1", None, vec![oc("t", 0, 42)]), Ok(()));
    assert_eq!(g.txn_offset_commit(300, 8, 0, -1, "", None, vec![oc("t", 1, 43)]), Ok(())); // no checks
    assert_eq!((fetched(&g, "t", 0, false).offset, g.has_pending_txn_offset("t", 0)), (-1, true));
    // Survives a restart (serde) as pending.
    let json = serde_json::to_string(&g.snapshot()).unwrap();
    let mut g = Group::from_snapshot("g", cfg(0), serde_json::from_str(&json).unwrap(), 0);
    assert_eq!((g.state(), g.generation_id(), g.has_pending_txn_offset("t", 0)), (Stable, 1, true));
    assert!(g.complete_txn(7, true));
    assert!(!g.complete_txn(7, true));
    assert_eq!((fetched(&g, "t", 0, false).offset, g.has_pending_txn_offset("t", 0)), (42, false));
    assert_eq!(fetched(&g, "t", 1, false).offset, -1); // producer 8 still open
}

#[test]
fn later_plain_commit_wins_over_txn_commit() {
    let mut g = Group::new("g", cfg(0));
    g.txn_offset_commit(1, 7, 0, -1, "", None, vec![oc("t", 0, 5)]).unwrap();
    g.commit_offsets(2, -1, "", None, vec![oc("t", 0, 9)]).unwrap();
    g.complete_txn(7, true);
    assert_eq!(fetched(&g, "t", 0, false).offset, 9);
}

#[test]
fn rule_59_txn_offsets_dropped_on_abort() {
    let mut g = Group::new("g", cfg(0));
    g.commit_offsets(1, -1, "", None, vec![oc("t", 0, 1)]).unwrap();
    g.txn_offset_commit(2, 7, 0, -1, "", None, vec![oc("t", 0, 50)]).unwrap();
    assert!(g.complete_txn(7, false));
    assert_eq!((fetched(&g, "t", 0, false).offset, g.has_pending_txn_offset("t", 0)), (1, false));
    assert!(g.offsets().pending_txn.is_empty());
}

#[test]
fn rule_59_require_stable_sees_pending_as_unstable_offset_commit() {
    let mut g = Group::new("g", cfg(0));
    g.commit_offsets(1, -1, "", None, vec![oc("t", 0, 1)]).unwrap();
    g.txn_offset_commit(2, 7, 0, -1, "", None, vec![oc("t", 0, 50)]).unwrap();
    let f = fetched(&g, "t", 0, true);
    assert_eq!((f.offset, error_code(f.error)), (-1, 88));
    assert_eq!(fetched(&g, "t", 0, false).offset, 1);
    assert_eq!(fetched(&g, "t", 1, true).error, None);
    g.complete_txn(7, true);
    assert_eq!(fetched(&g, "t", 0, true).offset, 50);
}

#[test]
fn offsets_retention_keeps_pending_transactional_offsets() {
    let mut g = Group::new("g", GroupConfig { offsets_retention_ms: 1000, ..cfg(0) });
    g.txn_offset_commit(10_000, 7, 0, -1, "", None, vec![oc("t", 0, 5)]).unwrap();
    assert_eq!(g.expire_offsets(1_000_000), 0);
    assert!(!g.is_removable(), "the transaction coordinator still has to end it");
}

#[test]
fn txn_offset_commit_with_empty_group_id_is_invalid_group_id() {
    assert_eq!(validate_group_id(""), Err(GroupError::InvalidGroupId));
    assert_eq!(validate_group_id("").map_err(GroupError::code), Err(24));
    assert_eq!(validate_group_id("g"), Ok(()));
}

#[test]
fn rule_57_member_and_generation_are_only_taken_from_v3() {
    assert_eq!(txn_commit_member(2, 7, "m1", Some("i")), (-1, String::new(), None));
    assert_eq!(txn_commit_member(3, 7, "m1", Some("i")), (7, "m1".to_string(), Some("i".to_string())));
    let mut g = stable_group(&["m1"], true);
    let (generation, member, instance) = txn_commit_member(2, 7, "m1", None);
    assert_eq!(g.txn_offset_commit(300, 7, 0, generation, &member, instance.as_deref(), vec![oc("t", 0, 1)]), Ok(()));
}
