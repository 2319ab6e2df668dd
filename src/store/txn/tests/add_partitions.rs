//! AddPartitionsToTxn / AddOffsetsToTxn (eos-rules 31, 32, 34).

use super::*;
use std::collections::BTreeMap;
use TxnError::*;
use TxnState::*;

#[test]
fn rule_32_add_partitions_check_order() {
    let busy = pending(entry(Ongoing, PID, 5));
    assert_eq!(rejected(&add(&busy, NEW_PID, 0)), ConcurrentTransactions);
    let b1 = set(&[("b", 1)]);
    let d = add_partitions(None, "tx", PID, 5, &b1, NOW, TV_0);
    assert_eq!(rejected(&d), InvalidProducerIdMapping);
    let prepare = entry(PrepareCommit, PID, 5);
    let d = add(&prepare, PID + 1, 5);
    assert_eq!(rejected(&d), InvalidProducerIdMapping);
    assert_eq!(rejected(&add(&prepare, PID, 4)), ProducerFenced);
    assert_eq!(rejected(&add(&prepare, PID, 5)), ConcurrentTransactions);
    let d = add(&entry(PrepareAbort, PID, 5), PID, 5);
    assert_eq!(rejected(&d), ConcurrentTransactions);
    let d = add_partitions(Some(&prepare), "", PID, 5, &b1, NOW, TV_0);
    assert_eq!(rejected(&d), InvalidRequest);
}

#[test]
fn rule_32_add_partitions_starts_and_extends_the_transaction() {
    let (a0, b1) = (set(&[("a", 0)]), set(&[("b", 1)]));
    for state in [Empty, CompleteCommit, CompleteAbort] {
        let e = entry(state, PID, 5);
        let d = add_partitions(Some(&e), "tx", PID, 5, &b1, NOW, TV_2);
        let n = applied(&d);
        assert_eq!((n.state, n.txn_start_ms, n.txn_version), (Ongoing, NOW, TV_2));
        assert_eq!(n.partitions, b1);
    }
    let ongoing = entry(Ongoing, PID, 5);
    let same = add_partitions(Some(&ongoing), "tx", PID, 5, &a0, NOW, TV_0);
    assert_eq!((ok(&same), same.write), ((PID, 5), None));
    let union = applied(&add(&ongoing, PID, 5));
    assert_eq!(union.txn_start_ms, 1_000);
    assert_eq!(union.partitions, set(&[("a", 0), ("b", 1)]));
}

#[test]
fn rule_34_add_offsets_adds_the_consumer_offsets_partition() {
    let e = entry(Empty, PID, 5);
    let n = applied(&add_offsets(Some(&e), "tx", PID, 5, 7, NOW));
    assert_eq!((n.state, n.txn_version), (Ongoing, TV_0));
    assert_eq!(n.partitions, set(&[("__consumer_offsets", 7)]));
    let stale = rejected(&add_offsets(Some(&n), "tx", PID, 4, 7, NOW));
    let v1 = stale.for_version(CoordinatorApi::AddOffsetsToTxn, 1);
    assert_eq!(v1, InvalidProducerEpoch);
    assert_eq!(add_offsets(Some(&n), "tx", PID, 5, 7, NOW).write, None);
}

#[test]
fn rule_31_one_unknown_partition_fails_the_whole_add() {
    let asked = set(&[("a", 0), ("a", 9), ("b", 1)]);
    assert_eq!(unknown_partitions_precheck(&asked, &BTreeSet::new(), &BTreeSet::new()), None);
    let codes = unknown_partitions_precheck(&asked, &BTreeSet::new(), &set(&[("a", 9)]));
    let expected = BTreeMap::from([(tp("a", 0), 55), (tp("a", 9), 3), (tp("b", 1), 55)]);
    assert_eq!(codes, Some(expected));
}

#[test]
fn rule_31_a_topic_the_client_may_not_write_fails_the_whole_add() {
    let asked = set(&[("a", 0), ("a", 9), ("b", 1)]);
    let codes = unknown_partitions_precheck(&asked, &BTreeSet::from(["b".to_string()]), &set(&[("a", 9)]));
    let expected = BTreeMap::from([(tp("a", 0), 55), (tp("a", 9), 3), (tp("b", 1), 29)]);
    assert_eq!(codes, Some(expected));
}

#[test]
fn rule_30_a_broker_batch_needs_cluster_action_only_and_a_client_write_on_its_id() {
    use crate::error_code::ResponseError;
    assert_eq!(add_partitions_authorization(true, false, true), Err(ResponseError::ClusterAuthorizationFailed));
    assert_eq!(
        add_partitions_authorization(false, false, false),
        Err(ResponseError::TransactionalIdAuthorizationFailed)
    );
    // A broker verifying for a producer needs no WRITE on the producer's transactional id.
    assert_eq!(add_partitions_authorization(true, true, false), Ok(()));
    assert_eq!(add_partitions_authorization(false, false, true), Ok(()));
}

#[test]
fn rule_30_versions_0_to_3_are_one_client_transaction_and_4_up_a_broker_batch() {
    assert!(!add_partitions_is_broker_batch(3));
    assert!(add_partitions_is_broker_batch(4));
    assert!(add_partitions_is_broker_batch(5));
}
