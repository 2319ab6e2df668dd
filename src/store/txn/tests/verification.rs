//! KIP-890 verification and its errors (eos-rules 27, 29, 33, 58).

use super::*;
use TxnError::*;
use TxnState::*;

#[test]
fn rule_27_verification_answers_become_produce_errors() {
    assert_eq!(produce_verification_error(ProducerFenced, 9), 47);
    assert_eq!(produce_verification_error(InvalidProducerIdMapping, 9), 49);
    assert_eq!(produce_verification_error(TransactionAbortable, 10), 48);
    assert_eq!(produce_verification_error(TransactionAbortable, 11), 120);
    assert_eq!(produce_verification_error(ConcurrentTransactions, 11), 19);
    assert_eq!(produce_verification_error(NotCoordinator, 11), 19);
}

#[test]
fn rule_29_tv2_add_answers_become_produce_errors() {
    assert_eq!(produce_verification_error(ConcurrentTransactions, 12), 51);
    assert_eq!(produce_verification_error(ProducerFenced, 12), 47);
}

#[test]
fn rule_33_verify_only_reports_per_partition() {
    let asked = set(&[("a", 0), ("b", 1)]);
    let verify = |e: Option<&TxnEntry>, pid: i64, epoch: i16| {
        let r = verify_partitions(e, "tx", pid, epoch, &asked);
        r.into_values().collect::<Vec<_>>()
    };
    let both = |error: TxnError| vec![Err(error); 2];
    assert_eq!(verify(None, PID, 5), both(InvalidProducerIdMapping));
    let prepare = entry(PrepareCommit, PID, 5);
    let p = Some(&prepare);
    assert_eq!(verify(p, PID + 1, 5), both(InvalidProducerIdMapping));
    assert_eq!(verify(p, PID, 4), both(ProducerFenced));
    assert_eq!(verify(p, PID, 5), both(ConcurrentTransactions));
    let ongoing = pending(entry(Ongoing, PID, 5)); // no pending check
    let per_partition = verify(Some(&ongoing), PID, 5);
    assert_eq!(per_partition, vec![Ok(()), Err(TransactionAbortable)]);
}

#[test]
fn rule_58_txn_offset_commit_membership_errors() {
    assert_eq!(txn_offset_commit_error(TransactionAbortable, 3), 48);
    assert_eq!(txn_offset_commit_error(TransactionAbortable, 4), 120);
    assert_eq!(txn_offset_commit_error(ProducerFenced, 5), 47);
    assert_eq!(txn_offset_commit_error(InvalidProducerIdMapping, 2), 49);
}

#[test]
fn rule_29_concurrent_transactions_is_retried_for_100_ms() {
    let retry = ImplicitAddRetry::starting(1_000);
    assert_eq!(retry.retry_after(ConcurrentTransactions, 1_000), Some(20));
    assert_eq!(retry.retry_after(ConcurrentTransactions, 1_099), Some(20));
    assert_eq!(retry.retry_after(ConcurrentTransactions, 1_100), None);
}

#[test]
fn rule_29_other_add_errors_are_answered_at_once() {
    let retry = ImplicitAddRetry::starting(1_000);
    for e in [ProducerFenced, InvalidProducerIdMapping, TransactionAbortable, NotCoordinator] {
        assert_eq!(retry.retry_after(e, 1_000), None, "{e:?}");
    }
}

#[test]
fn rule_27_a_remote_coordinators_codes_read_back_as_its_errors() {
    assert_eq!(TxnError::from_code(0), None);
    for e in [ProducerFenced, InvalidProducerEpoch, ConcurrentTransactions, TransactionAbortable, InvalidTxnState] {
        assert_eq!(TxnError::from_code(e.code()), Some(e));
    }
    // UNKNOWN_TOPIC_OR_PARTITION is no coordinator decision: asked again.
    assert_eq!(TxnError::from_code(3), Some(NotCoordinator));
}
