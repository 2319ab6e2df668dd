//! EndTxn, TV1 and TV2 (eos-rules 35-40, 42).

use super::*;
use TxnError::*;
use TxnState::*;

#[test]
fn rule_35_end_txn_generic_checks() {
    let e = entry(Ongoing, PID, 5);
    for tv2 in [false, true] {
        let d = end_txn(Some(&e), "", PID, 5, true, tv2, NOW, &mut || 1);
        assert_eq!(rejected(&d), InvalidRequest);
        assert_eq!(d.response_ids(), (-1, -1));
        let d = end_txn(None, "tx", PID, 5, true, tv2, NOW, &mut || 1);
        assert_eq!(rejected(&d), InvalidProducerIdMapping);
        let d = end(&e, PID + 1, 5, true, tv2);
        assert_eq!(rejected(&d), InvalidProducerIdMapping);
    }
}

#[test]
fn rule_36_tv1_end_txn_table() {
    let ongoing = entry(Ongoing, PID, 5);
    for stale in [4, 6] {
        let d = end(&ongoing, PID, stale, true, false);
        assert_eq!(rejected(&d), ProducerFenced);
    }
    let d = end(&ongoing, PID, 5, true, false);
    let n = applied(&d);
    assert_eq!((st(&n), ok(&d)), ((PrepareCommit, PID, 5), (PID, 5)));
    assert_eq!(d.effects.len(), 1);
    assert_eq!(marker(&d), (PID, 5, true, TV_0, 1));
    // marker phase (pending): the epoch is checked before it
    assert_eq!(rejected(&end(&n, PID, 4, true, false)), ProducerFenced);
    let d = end(&n, PID, 5, false, false);
    assert_eq!(rejected(&d), ConcurrentTransactions);
    let table = [
        (CompleteCommit, true, Ok((PID, 5))),
        (CompleteAbort, false, Ok((PID, 5))),
        (PrepareCommit, true, Err(ConcurrentTransactions)),
        (PrepareAbort, false, Err(ConcurrentTransactions)),
        (PrepareCommit, false, Err(InvalidTxnState)),
        (PrepareAbort, true, Err(InvalidTxnState)),
        (CompleteCommit, false, Err(InvalidTxnState)),
        (CompleteAbort, true, Err(InvalidTxnState)),
        (Empty, false, Err(InvalidTxnState)),
        (Empty, true, Err(InvalidTxnState)),
    ];
    for (state, commit, expected) in table {
        let d = end(&entry(state, PID, 5), PID, 5, commit, false);
        let got = (res(&d), d.write.is_none());
        assert_eq!(got, (expected, true), "{state:?} {commit}");
    }
}

#[test]
fn rule_37_tv2_end_txn_bumps_and_answers_the_new_epoch() {
    let d = end(&entry(Ongoing, PID, 5), PID, 5, true, true);
    let n = applied(&d);
    assert_eq!(st(&n), (PrepareCommit, PID, 6));
    assert_eq!((n.last_producer_epoch, n.txn_version), (5, TV_2));
    assert_eq!((ok(&d), d.response_ids()), ((PID, 6), (PID, 6)));
    assert_eq!(d.effects.len(), 1);
    assert_eq!(marker(&d), (PID, 6, true, TV_2, 1));
    assert_eq!(st(&completed(&n)), (CompleteCommit, PID, 6));
}

#[test]
fn rule_38_tv2_epoch_overflow_rotates_on_completion() {
    let d = end(&entry(Ongoing, PID, 32766), PID, 32766, true, true);
    assert_eq!(ok(&d), (NEW_PID, 0));
    assert_eq!(marker(&d), (PID, TOP, true, TV_2, 1));
    let preparing = applied(&d);
    assert_eq!(st(&preparing), (PrepareCommit, PID, TOP));
    assert_eq!(lpn(&preparing), (32766, PID, NEW_PID));
    // the client moves on with (newPid, 0) first: retriable, not 49
    let early = add(&preparing, NEW_PID, 0);
    assert_eq!(rejected(&early), ConcurrentTransactions);
    let done = completed(&preparing);
    assert_eq!(st(&done), (CompleteCommit, NEW_PID, 0));
    assert_eq!(lpn(&done), (32766, PID, -1));
    let retry = end(&done, PID, 32766, true, true);
    assert_eq!((ok(&retry), retry.write), ((NEW_PID, 0), None));
    assert_eq!(ok(&add(&done, NEW_PID, 0)), (NEW_PID, 0));
}

#[test]
fn rule_39_tv2_retry_table() {
    // (state at epoch 5, epoch sent, commit, expected answer, writes)
    let table = [
        (Empty, 4, false, Err(ProducerFenced), false),
        (Empty, 4, true, Err(ProducerFenced), false),
        (Empty, 5, false, Ok((PID, 6)), true),
        (Empty, 5, true, Err(InvalidTxnState), false),
        (CompleteAbort, 4, false, Ok((PID, 5)), false),
        (CompleteAbort, 5, false, Ok((PID, 6)), true),
        (CompleteAbort, 4, true, Err(InvalidTxnState), false),
        (CompleteAbort, 5, true, Err(InvalidTxnState), false),
        (CompleteCommit, 4, true, Ok((PID, 5)), false),
        (CompleteCommit, 4, false, Err(InvalidTxnState), false),
        (CompleteCommit, 5, false, Ok((PID, 6)), true),
        (CompleteCommit, 5, true, Err(InvalidTxnState), false),
        (CompleteCommit, 6, true, Err(ProducerFenced), false),
        (CompleteAbort, 3, false, Err(ProducerFenced), false),
    ];
    for (state, epoch, commit, expected, writes) in table {
        let d = end(&entry(state, PID, 5), PID, epoch, commit, true);
        let got = (res(&d), d.write.is_some());
        assert_eq!(got, (expected, writes), "{state:?} {epoch} {commit}");
    }
    // empty abort: bumped, no partitions, start = now, markers to nobody
    let d = end(&entry(CompleteCommit, PID, 5), PID, 5, false, true);
    let n = applied(&d);
    assert_eq!(st(&n), (PrepareAbort, PID, 6));
    assert_eq!((n.partitions.len(), n.txn_start_ms), (0, NOW));
    assert_eq!(marker(&d), (PID, 6, false, TV_2, 0));
}

#[test]
fn rule_40_tv2_pending_or_prepare_is_concurrent() {
    let prepare = entry(PrepareCommit, PID, 6); // loaded, not pending
    let cases = [(PID, 5, true), (PID, 5, false), (PID, 6, true), (PID + 1, 9, true)];
    for (pid, epoch, commit) in cases {
        let d = end(&prepare, pid, epoch, commit, true);
        assert_eq!(rejected(&d), ConcurrentTransactions);
    }
    let busy = pending(entry(Ongoing, PID, 5));
    let d = end(&busy, PID, 2, true, true);
    assert_eq!(rejected(&d), ConcurrentTransactions);
    // TV1 keeps its table
    let d = end(&prepare, PID, 6, false, false);
    assert_eq!(rejected(&d), InvalidTxnState);
}

#[test]
fn rule_42_tv1_keeps_the_epoch_and_tv2_moves_it() {
    let ongoing = entry(Ongoing, PID, 5);
    let tv1 = completed(&applied(&end(&ongoing, PID, 5, true, false)));
    assert_eq!(ok(&add(&tv1, PID, 5)), (PID, 5));
    let tv2 = completed(&applied(&end(&ongoing, PID, 5, true, true)));
    assert_eq!(rejected(&add(&tv2, PID, 5)), ProducerFenced);
    assert_eq!(ok(&add(&tv2, PID, 6)), (PID, 6));
}

#[test]
fn transaction_version_is_picked_by_request_version() {
    assert!(!end_txn_is_tv2(4));
    assert!(end_txn_is_tv2(5));
    assert_eq!(add_partitions_txn_version(4), TV_0);
    assert_eq!(add_partitions_txn_version(5), TV_2);
}
