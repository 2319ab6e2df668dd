//! InitProducerId (eos-rules 1, 3-13), with the KIP-360 seed tests.

use super::*;
use TxnError::*;
use TxnState::*;

#[test]
fn rule_02_a_transactional_id_needs_write_on_it() {
    use crate::error_code::ResponseError;
    assert_eq!(
        init_producer_id_authorization(true, false, true),
        Err(ResponseError::TransactionalIdAuthorizationFailed)
    );
    assert_eq!(init_producer_id_authorization(true, true, false), Ok(()));
}

#[test]
fn rule_02_an_idempotent_producer_needs_idempotent_write_or_write_on_some_topic() {
    use crate::error_code::ResponseError;
    assert_eq!(init_producer_id_authorization(false, false, false), Err(ResponseError::ClusterAuthorizationFailed));
    assert_eq!(init_producer_id_authorization(false, false, true), Ok(()));
}

#[test]
fn rule_01_idempotent_path_ignores_a_claim() {
    let mut next = 100;
    let mut alloc = || {
        next += 1;
        next
    };
    assert_eq!(idempotent_init_producer_id(Some((7, 3)), &mut alloc), Ok(PidEpoch::new(101, 0)));
    assert_eq!(idempotent_init_producer_id(None, &mut alloc), Ok(PidEpoch::new(102, 0)));
    assert_eq!(idempotent_init_producer_id(Some((-1, -1)), &mut alloc), Ok(PidEpoch::new(103, 0)));
    // eos-rules 3 holds on the idempotent path too
    assert_eq!(idempotent_init_producer_id(Some((7, -1)), &mut alloc), Err(TxnError::InvalidRequest));
    assert_eq!(idempotent_init_producer_id(Some((-1, 2)), &mut alloc), Err(TxnError::InvalidRequest));
}

#[test]
fn transactional_rejoin_bumps_epoch() {
    let first = init_with(None, 60_000, None, false);
    assert_eq!(ok(&first), (NEW_PID, 0));
    let second = init(&applied(&first), None);
    assert_eq!(ok(&second), (NEW_PID, 1));
    let third = init(&applied(&second), None);
    assert_eq!(ok(&third), (NEW_PID, 2));
    assert_eq!(third.effects, vec![fence(NEW_PID, 2)]);
}

#[test]
fn stale_claim_is_producer_fenced() {
    let e = with_last(entry(Empty, PID, 10), 9);
    assert_eq!(rejected(&init(&e, Some((PID, 8)))), ProducerFenced);
    assert_eq!(rejected(&init(&e, Some((PID + 1, 10)))), ProducerFenced);
    // a new instance re-inits without a claim; the old claim is now stale
    let taken_over = applied(&init(&e, None));
    assert_eq!(st(&taken_over), (Empty, PID, 11));
    let zombie = init(&taken_over, Some((PID, 10)));
    assert_eq!(rejected(&zombie), ProducerFenced);
}

#[test]
fn current_claim_bumps_and_its_retry_is_stable() {
    let e = with_last(entry(Empty, PID, 10), 9);
    let bumped = init(&e, Some((PID, 10)));
    assert_eq!(ok(&bumped), (PID, 11));
    let after = applied(&bumped);
    assert_eq!(after.last_producer_epoch, 10);
    let retry = init(&after, Some((PID, 10)));
    assert_eq!(ok(&retry), (PID, 11));
    assert_eq!(applied(&retry).last_producer_epoch, 10);
}

#[test]
fn half_set_claim_is_invalid_request() {
    let busy = pending(entry(Ongoing, PID, 3));
    for claim in [(-1, 5), (PID, -1)] {
        assert_eq!(rejected(&init(&busy, Some(claim))), InvalidRequest);
        let d = init_with(None, 0, Some(claim), false);
        assert_eq!(rejected(&d), InvalidRequest);
    }
}

#[test]
fn rejoin_mid_ongoing_aborts_it_and_answers_concurrent() {
    let mut e = entry(Ongoing, PID, 5);
    e.partitions = set(&[("a", 0), ("b", 1)]);
    let d = init(&e, None);
    assert_eq!(d.answer, Err(ConcurrentTransactions));
    assert_eq!(d.response_ids(), (-1, -1));
    let aborting = applied(&d);
    assert_eq!(st(&aborting), (PrepareAbort, PID, 6));
    assert_eq!(aborting.partitions, e.partitions);
    assert_eq!(aborting.last_producer_epoch, NO_PRODUCER_EPOCH);
    let markers = Effect::WriteMarkers {
        producer_id: PID,
        epoch: 6,
        commit: false,
        partitions: e.partitions.clone(),
        txn_version: TV_0,
    };
    assert_eq!(d.effects, vec![fence(PID, 6), markers]);
    // while the markers are out the retry waits
    let waiting = init(&aborting, None);
    assert_eq!(rejected(&waiting), ConcurrentTransactions);
    let done = completed(&aborting);
    assert_eq!(st(&done), (CompleteAbort, PID, 6));
    assert!(done.partitions.is_empty());
    assert_eq!(ok(&init(&done, None)), (PID, 7));
}

#[test]
fn epoch_exhaustion_rotates_one_short_of_max() {
    let d = init(&entry(Empty, PID, 32765), None);
    assert_eq!(ok(&d), (PID, 32766));
    let rotated = init(&applied(&d), None);
    assert_eq!(ok(&rotated), (NEW_PID, 0));
    assert!(rotated.effects.is_empty());
    assert_eq!(lpn(&applied(&rotated)), (-1, PID, -1));
}

#[test]
fn a_retried_rotation_gets_the_same_answer() {
    let e = with_last(entry(CompleteCommit, PID, 32766), 32765);
    let d = init(&e, Some((PID, 32766)));
    assert_eq!(ok(&d), (NEW_PID, 0));
    let rotated = applied(&d);
    assert_eq!(lpn(&rotated), (32766, PID, -1));
    let retry = init(&rotated, Some((PID, 32766)));
    assert_eq!(ok(&retry), (NEW_PID, 0));
    let older = init(&rotated, Some((PID, 32765)));
    assert_eq!(rejected(&older), ProducerFenced);
}

#[test]
fn rule_03_minus_one_pair_is_no_claim() {
    let e = with_last(entry(Empty, PID, 3), 2);
    let d = init(&e, Some((-1, -1)));
    assert_eq!(ok(&d), (PID, 4));
    assert_eq!(applied(&d).last_producer_epoch, -1);
}

#[test]
fn rule_04_empty_transactional_id_is_invalid_request() {
    let mut alloc = || NEW_PID;
    let d = init_producer_id(None, "", 1, None, 1, false, NOW, &mut alloc);
    assert_eq!(rejected(&d), InvalidRequest);
}

#[test]
fn rule_05_timeout_must_be_positive_and_at_most_the_max() {
    let busy = pending(entry(Ongoing, PID, 3)); // checked before any state
    for timeout in [0, -1, MAX_TIMEOUT + 1] {
        let d = init_with(Some(&busy), timeout, None, false);
        assert_eq!(rejected(&d).code(), 50);
    }
    let d = init_with(None, MAX_TIMEOUT, None, false);
    assert_eq!(applied(&d).timeout_ms, MAX_TIMEOUT);
}

#[test]
fn rule_07_new_transactional_id_gets_a_fresh_pid_at_epoch_zero() {
    for claim in [None, Some((42, 7))] {
        let d = init_with(None, 60_000, claim, false);
        assert_eq!(ok(&d), (NEW_PID, 0));
        assert!(d.effects.is_empty());
        let e = applied(&d);
        assert_eq!(st(&e), (Empty, NEW_PID, 0));
        assert_eq!(lpn(&e), (-1, NEW_PID, -1));
        assert_eq!((e.txn_start_ms, e.last_update_ms), (-1, NOW));
        assert_eq!(e.transactional_id, "tx");
    }
}

#[test]
fn rule_08_reinit_without_claim_bumps_and_resets() {
    for state in [Empty, CompleteCommit, CompleteAbort] {
        let mut e = with_last(entry(state, PID, 4), 3);
        e.txn_start_ms = 900;
        let d = init_with(Some(&e), 30_000, None, false);
        assert_eq!(ok(&d), (PID, 5));
        assert_eq!(d.effects, vec![fence(PID, 5)]);
        let n = applied(&d);
        assert_eq!(st(&n), (Empty, PID, 5));
        assert_eq!(n.last_producer_epoch, -1);
        assert_eq!((n.txn_start_ms, n.timeout_ms), (-1, 30_000));
        assert!(n.partitions.is_empty());
    }
}

#[test]
fn rule_09_claim_equal_to_last_epoch_is_a_retry() {
    let e = with_last(entry(Empty, PID, 11), 10);
    let d = init(&e, Some((PID, 10)));
    assert_eq!(ok(&d), (PID, 11));
    assert_eq!(applied(&d).last_producer_epoch, 10);
}

#[test]
fn rule_09_claim_validity() {
    // previous pid with a non-exhausted epoch is not a rotation retry
    let mut e = entry(Empty, NEW_PID, 0);
    e.prev_producer_id = PID;
    let d = init(&e, Some((PID, 32765)));
    assert_eq!(rejected(&d), ProducerFenced);
    // a claim equal to the current epoch bumps and remembers it
    let e = with_last(entry(CompleteAbort, PID, 7), 6);
    let d = init(&e, Some((PID, 7)));
    assert_eq!(ok(&d), (PID, 8));
    assert_eq!(applied(&d).last_producer_epoch, 7);
    // epoch -1 (just created) accepts any claim
    let d = init(&entry(Empty, PID, -1), Some((77, 3)));
    assert_eq!(ok(&d), (PID, 0));
    assert_eq!(applied(&d).last_producer_epoch, -1);
}

#[test]
fn rule_10_exhausted_epoch_rotates_the_pid() {
    let e = with_last(entry(CompleteAbort, PID, 32766), 32765);
    let without = init(&e, None);
    assert_eq!(ok(&without), (NEW_PID, 0));
    assert_eq!(lpn(&applied(&without)), (-1, PID, -1));
    let with = init(&e, Some((PID, 32766)));
    assert_eq!(ok(&with), (NEW_PID, 0));
    assert_eq!(lpn(&applied(&with)), (32766, PID, -1));
    // claiming the last epoch retries the bump to 32766: no rotation
    assert_eq!(ok(&init(&e, Some((PID, 32765)))), (PID, 32766));
    let stale = init(&e, Some((PID, 32700)));
    assert_eq!(rejected(&stale), ProducerFenced);
}

#[test]
fn rule_11_retry_of_a_lost_rotation_survives_a_restart() {
    // as loaded from disk: prev_producer_id is persisted
    let mut loaded = with_last(entry(Empty, NEW_PID, 0), 32766);
    loaded.prev_producer_id = PID;
    let loaded = loaded.settled();
    let retry = init(&loaded, Some((PID, 32766)));
    assert_eq!(ok(&retry), (NEW_PID, 0));
    // once the new session moves on, the pre-rotation pid is stale
    let moved = applied(&add(&loaded, NEW_PID, 0));
    assert_eq!(moved.prev_producer_id, NEW_PID);
    let ended = applied(&end(&moved, NEW_PID, 0, true, false));
    let late = init(&completed(&ended), Some((PID, 32766)));
    assert_eq!(rejected(&late), ProducerFenced);
}

#[test]
fn rule_12_concurrent_transactions_check_order() {
    let stranger = Some((PID + 9, 1));
    let busy = pending(entry(Empty, PID, 5));
    assert_eq!(rejected(&init(&busy, stranger)), ConcurrentTransactions);
    for state in [PrepareCommit, PrepareAbort] {
        let e = entry(state, PID, 5); // loaded, markers not yet resent
        assert_eq!(rejected(&init(&e, stranger)), ProducerFenced);
        let own = init(&e, Some((PID, 5)));
        assert_eq!(rejected(&own), ConcurrentTransactions);
        assert_eq!(rejected(&init(&e, None)), ConcurrentTransactions);
        // during the marker phase the pending check answers first
        let marker_phase = e.settled();
        let d = init(&marker_phase, stranger);
        assert_eq!(rejected(&d), ConcurrentTransactions);
    }
}

#[test]
fn rule_13_failed_fence_write_does_not_bump_twice() {
    let e = entry(Ongoing, PID, 5);
    let first = init(&e, None);
    // the write failed: the entry is unchanged, the retry decides the same
    let second = init(&e, None);
    assert_eq!(first, second);
    assert_eq!(st(&applied(&second)), (PrepareAbort, PID, 6));
}

#[test]
fn rule_13_fence_at_32766_gives_32767_then_the_retry_rotates() {
    let aborting = applied(&init(&entry(Ongoing, PID, 32766), None));
    assert_eq!(st(&aborting), (PrepareAbort, PID, TOP));
    assert_eq!(aborting.next_producer_id, -1);
    let done = completed(&aborting);
    assert_eq!(st(&done), (CompleteAbort, PID, TOP));
    assert_eq!(ok(&init(&done, None)), (NEW_PID, 0));
}

#[test]
fn rule_13_tv2_fence_bumps_once_and_rotates_at_the_boundary() {
    // KAFKA-19367: one bump, last epoch = E
    let d = init_tv2(&entry(Ongoing, PID, 5), None);
    assert_eq!(st(&applied(&d)), (PrepareAbort, PID, 6));
    assert_eq!(lpn(&applied(&d)), (5, PID, -1));
    assert_eq!(marker(&d), (PID, 6, false, TV_2, 1));
    // KAFKA-20090: at 32766 the abort allocates the next pid
    let d = init_tv2(&entry(Ongoing, PID, 32766), None);
    assert_eq!(d.answer, Err(ConcurrentTransactions));
    let aborting = applied(&d);
    assert_eq!(st(&aborting), (PrepareAbort, PID, TOP));
    assert_eq!(lpn(&aborting), (32766, PID, NEW_PID));
    let done = completed(&aborting);
    assert_eq!(st(&done), (CompleteAbort, NEW_PID, 0));
    assert_eq!(lpn(&done), (32766, PID, -1));
    let late_abort = end(&done, PID, 32766, false, true);
    assert_eq!(ok(&late_abort), (NEW_PID, 0));
    let late_init = init(&done, Some((PID, 32766)));
    assert_eq!(ok(&late_init), (NEW_PID, 0));
}

#[test]
fn rule_13_kip360_claim_while_ongoing_ends_fenced_under_tv1() {
    // E8: InitProducerId(pid, E) while Ongoing: 51, then the claim is stale
    let e = entry(Ongoing, PID, 5);
    let done = completed(&applied(&init(&e, Some((PID, 5)))));
    let d = init(&done, Some((PID, 5)));
    assert_eq!(rejected(&d), ProducerFenced);
    // a TV2 cluster's abort recorded last epoch 5: the claim reads as a retry
    let done = completed(&applied(&init_tv2(&e, Some((PID, 5)))));
    assert_eq!(ok(&init(&done, Some((PID, 5)))), (PID, 6));
}
