//! One test per rule of the producer table (eos-rules 14-29, 42, 46-49).
use super::*;
use crate::store::batch::testutil::{batch, Spec};
use crate::store::batch::{patch_base_offset, BatchHeader};

fn header(pid: i64, epoch: i16, seq: i32, records: i32) -> BatchHeader {
    BatchHeader::parse(&batch(Spec {
        producer_id: pid,
        producer_epoch: epoch,
        base_sequence: seq,
        records,
        ..Spec::default()
    }))
    .unwrap()
}

fn at(h: BatchHeader, offset: i64) -> BatchHeader {
    let mut b = batch(Spec {
        producer_id: h.producer_id,
        producer_epoch: h.producer_epoch,
        base_sequence: h.base_sequence,
        records: h.records_count,
        transactional: h.is_transactional(),
        ..Spec::default()
    });
    patch_base_offset(&mut b, offset);
    BatchHeader::parse(&b).unwrap()
}

/// Appends through the table as the log would: check, then record at `offset`.
fn append(t: &mut ProducerStateTable, h: BatchHeader, offset: i64) -> Result<AppendDecision, ProducerStateError> {
    let d = t.check_append(&h)?;
    if d == AppendDecision::Append {
        t.record_append(&at(h, offset), 0);
    }
    Ok(d)
}

#[test]
fn rule_15_a_producer_id_that_never_wrote_here_starts_at_sequence_0() {
    let mut t = ProducerStateTable::new();
    let e = append(&mut t, header(9, 3, 1234, 2), 0).unwrap_err();
    assert_eq!((e.code(), t.get(9)), (45, None), "refused, and no state made");
    assert_eq!(append(&mut t, header(9, 3, 0, 2), 0), Ok(AppendDecision::Append));
    assert_eq!(t.get(9).unwrap().epoch, 3);
    assert_eq!(append(&mut t, header(9, 3, 2, 1), 2), Ok(AppendDecision::Append));
}

#[test]
fn rule_15_a_forgotten_producer_id_goes_on_at_any_sequence() {
    let mut t = ProducerStateTable::new();
    t.record_append(&at(header(5, 0, 0, 1), 0), 1_000);
    assert_eq!(t.expire(86_401_000, 86_400_000), 1);
    assert_eq!(append(&mut t, header(5, 0, 1, 1), 1), Ok(AppendDecision::Append));
    // An id below the forgotten one may have been forgotten too; one above never wrote here.
    assert_eq!(append(&mut t, header(4, 0, 9, 1), 2), Ok(AppendDecision::Append));
    assert_eq!(append(&mut t, header(6, 0, 9, 1), 3).unwrap_err().code(), 45);
}

#[test]
fn rule_15_a_table_with_an_incomplete_history_accepts_any_first_sequence() {
    let mut t = ProducerStateTable::new();
    t.mark_history_incomplete();
    assert_eq!(append(&mut t, header(9, 3, 1234, 2), 0), Ok(AppendDecision::Append));
    // A snapshot written before the table kept this knows nothing of it either.
    let mut old: serde_json::Value = serde_json::to_value(ProducerStateTable::new()).unwrap();
    old.as_object_mut().unwrap().remove("forgotten_up_to");
    let mut t: ProducerStateTable = serde_json::from_value(old).unwrap();
    assert_eq!(append(&mut t, header(9, 3, 1234, 2), 0), Ok(AppendDecision::Append));
}

#[test]
fn rule_16_in_order_sequence_same_epoch() {
    let mut t = ProducerStateTable::new();
    append(&mut t, header(1, 0, 0, 3), 0).unwrap();
    assert_eq!(append(&mut t, header(1, 0, 3, 1), 3), Ok(AppendDecision::Append));
    let gap = append(&mut t, header(1, 0, 5, 1), 4).unwrap_err();
    assert_eq!(gap.code(), 45);
}

#[test]
fn rule_16_sequence_wraps_after_i32_max() {
    // A producer whose state here was forgotten comes back near the end of the sequence space.
    let mut t = ProducerStateTable::new();
    t.mark_history_incomplete();
    append(&mut t, header(1, 0, i32::MAX - 1, 2), 0).unwrap();
    assert_eq!(append(&mut t, header(1, 0, 0, 1), 2), Ok(AppendDecision::Append));
    // a batch may straddle the wrap
    let mut t = ProducerStateTable::new();
    t.mark_history_incomplete();
    append(&mut t, header(1, 0, i32::MAX - 1, 4), 0).unwrap();
    assert_eq!(t.get(1).unwrap().batches.back().unwrap().last_seq, 1);
    assert_eq!(append(&mut t, header(1, 0, 2, 1), 4), Ok(AppendDecision::Append));
}

#[test]
fn rule_17_higher_epoch_must_restart_at_zero() {
    let mut t = ProducerStateTable::new();
    append(&mut t, header(1, 0, 0, 5), 0).unwrap();
    assert_eq!(append(&mut t, header(1, 1, 5, 1), 5).unwrap_err().code(), 45);
    assert_eq!(append(&mut t, header(1, 1, 0, 1), 5), Ok(AppendDecision::Append));
    let e = t.get(1).unwrap();
    assert_eq!((e.epoch, e.batches.len()), (1, 1));
}

#[test]
fn rule_18_lower_epoch_is_invalid_producer_epoch() {
    let mut t = ProducerStateTable::new();
    append(&mut t, header(1, 2, 0, 1), 0).unwrap();
    let err = append(&mut t, header(1, 1, 1, 1), 1).unwrap_err();
    assert_eq!(err.code(), 47);
}

#[test]
fn rule_19_duplicate_of_cached_batch_returns_original_offset() {
    let mut t = ProducerStateTable::new();
    append(&mut t, header(1, 0, 0, 2), 10).unwrap();
    append(&mut t, header(1, 0, 2, 2), 12).unwrap();
    match append(&mut t, header(1, 0, 0, 2), 99).unwrap() {
        AppendDecision::Duplicate(m) => assert_eq!((m.first_offset, m.last_offset, m.timestamp), (10, 11, 1_000)),
        other => panic!("expected duplicate, got {other:?}"),
    }
    // nothing was recorded by the duplicate
    assert_eq!(t.get(1).unwrap().batches.len(), 2);
}

#[test]
fn rule_20_duplicate_older_than_the_cache_is_out_of_order() {
    let mut t = ProducerStateTable::new();
    for i in 0..6 {
        append(&mut t, header(1, 0, i, 1), i as i64).unwrap();
    }
    assert_eq!(t.get(1).unwrap().batches.len(), BATCHES_TO_RETAIN);
    assert_eq!(append(&mut t, header(1, 0, 0, 1), 6).unwrap_err().code(), 45);
    assert!(matches!(append(&mut t, header(1, 0, 1, 1), 6), Ok(AppendDecision::Duplicate(_))));
}

#[test]
fn rule_21_keeps_exactly_five_batches_per_producer() {
    let mut t = ProducerStateTable::new();
    for i in 0..20 {
        append(&mut t, header(1, 0, i, 1), i as i64).unwrap();
    }
    let seqs: Vec<i32> = t.get(1).unwrap().batches.iter().map(|b| b.first_seq).collect();
    assert_eq!(seqs, vec![15, 16, 17, 18, 19]);
}

#[test]
fn rule_23_idle_producers_expire_unless_in_a_transaction() {
    let mut t = ProducerStateTable::new();
    t.record_append(&at(header(1, 0, 0, 1), 0), 1_000);
    let txn = BatchHeader::parse(&batch(Spec {
        producer_id: 2,
        producer_epoch: 0,
        base_sequence: 0,
        transactional: true,
        ..Spec::default()
    }))
    .unwrap();
    t.record_append(&txn, 1_000);
    assert_eq!(t.expire(50_000, 86_400_000), 0);
    assert_eq!(t.expire(86_401_000, 86_400_000), 1);
    assert!(t.get(1).is_none());
    assert!(t.get(2).is_some());
    // after expiry rule 15 applies again
    assert_eq!(append(&mut t, header(1, 0, 77, 1), 5), Ok(AppendDecision::Append));
}

#[test]
fn rule_26_plain_batch_during_open_transaction_is_invalid_txn_state() {
    let mut t = ProducerStateTable::new();
    let txn = BatchHeader::parse(&batch(Spec {
        producer_id: 4,
        producer_epoch: 0,
        base_sequence: 0,
        transactional: true,
        ..Spec::default()
    }))
    .unwrap();
    t.record_append(&txn, 0);
    assert_eq!(t.first_unstable_offset(), Some(0));
    assert_eq!(append(&mut t, header(4, 0, 1, 1), 1).unwrap_err().code(), 48);
}

fn open_txn(t: &mut ProducerStateTable, pid: i64, epoch: i16, offset: i64) {
    let mut b = batch(Spec {
        producer_id: pid,
        producer_epoch: epoch,
        base_sequence: 0,
        transactional: true,
        ..Spec::default()
    });
    patch_base_offset(&mut b, offset);
    t.record_append(&BatchHeader::parse(&b).unwrap(), 0);
}

#[test]
fn rule_46_legacy_marker_accepts_equal_or_higher_epoch() {
    let mut t = ProducerStateTable::new();
    open_txn(&mut t, 1, 3, 0);
    assert_eq!(t.check_marker(1, 2, 0, 1).unwrap_err().code(), 47);
    assert!(t.check_marker(1, 3, 0, 1).is_ok());
    assert!(t.check_marker(1, 4, 0, 0).is_ok());
    assert!(t.check_marker(99, 0, 0, 1).is_ok(), "unknown producer ids take any marker");
}

#[test]
fn rule_47_tv2_marker_needs_a_strictly_higher_epoch() {
    let mut t = ProducerStateTable::new();
    open_txn(&mut t, 1, 3, 0);
    // equal epoch with an open transaction: a late marker of the previous transaction
    assert_eq!(t.check_marker(1, 3, 0, TV2).unwrap_err().code(), 47);
    assert_eq!(t.check_marker(1, 2, 0, TV2).unwrap_err().code(), 47);
    assert!(t.check_marker(1, 4, 0, TV2).is_ok());
}

#[test]
fn rule_47_tv2_same_epoch_retry_without_open_txn_is_accepted() {
    let mut t = ProducerStateTable::new();
    open_txn(&mut t, 1, 3, 0);
    assert!(t.record_marker(1, 4, 0, 1, true, 0).is_some());
    // the retried marker of the transaction that just ended
    assert!(t.check_marker(1, 4, 0, TV2).is_ok());
    assert!(t.record_marker(1, 4, 0, 2, true, 0).is_none(), "no transaction to complete twice");
    // the exhaustion-recovery marker is always taken (KAFKA-20090)
    assert!(t.check_marker(1, i16::MAX, 0, TV2).is_ok());
}

#[test]
fn rule_48_older_coordinator_epoch_is_fenced() {
    let mut t = ProducerStateTable::new();
    open_txn(&mut t, 1, 0, 0);
    t.record_marker(1, 0, 5, 1, true, 0);
    assert_eq!(t.check_marker(1, 0, 4, 1).unwrap_err().code(), 52);
    assert!(t.check_marker(1, 0, 5, 1).is_ok());
}

#[test]
fn rule_49_marker_completes_the_open_transaction() {
    let mut t = ProducerStateTable::new();
    open_txn(&mut t, 1, 0, 10);
    open_txn(&mut t, 2, 0, 12);
    assert_eq!(t.first_unstable_offset(), Some(10));
    assert!(t.has_ongoing_txn(1, 0));
    let done = t.record_marker(1, 1, 0, 15, false, 0).unwrap();
    assert_eq!(done, CompletedTxn { producer_id: 1, first_offset: 10, last_offset: 15, aborted: true });
    assert_eq!(t.first_unstable_offset(), Some(12));
    // the marker moved the epoch and cleared the window (TV2 sequences restart, rule 42)
    let e = t.get(1).unwrap();
    assert_eq!((e.epoch, e.batches.len()), (1, 0));
    assert!(!t.has_ongoing_txn(1, 0));
}

#[test]
fn rule_42_tv1_same_epoch_marker_keeps_sequences() {
    let mut t = ProducerStateTable::new();
    open_txn(&mut t, 1, 0, 0);
    t.record_marker(1, 0, 0, 1, true, 0);
    assert_eq!(t.get(1).unwrap().batches.len(), 1, "same epoch keeps the batch cache");
}

fn txn_header(pid: i64, epoch: i16, seq: i32) -> BatchHeader {
    BatchHeader::parse(&batch(Spec {
        producer_id: pid,
        producer_epoch: epoch,
        base_sequence: seq,
        transactional: true,
        ..Spec::default()
    }))
    .unwrap()
}

#[test]
fn rule_27_transactional_batch_needs_verification() {
    let mut t = ProducerStateTable::new();
    let h = txn_header(1, 0, 0);
    assert_eq!(t.check_verification(&h, Verified::No).unwrap_err().code(), 48);
    let g = t.begin_verification(1, 0, 0, false, 0).unwrap().unwrap();
    assert!(t.check_verification(&h, Verified::Guard(g)).is_ok());
    assert!(t.check_verification(&h, Verified::Tv2Added).is_ok());
    // once the transaction is open here, later batches need no verification
    open_txn(&mut t, 1, 0, 0);
    assert_eq!(t.begin_verification(1, 0, 1, false, 0), Ok(None));
    assert!(t.check_verification(&txn_header(1, 0, 1), Verified::No).is_ok());
}

#[test]
fn rule_15_tv2_transaction_on_empty_state_must_start_at_zero() {
    let mut t = ProducerStateTable::new();
    t.begin_verification(1, 0, 5, true, 0).unwrap();
    assert!(t.check_verification(&txn_header(1, 0, 5), Verified::Tv2Added).is_ok());
    assert_eq!(append(&mut t, txn_header(1, 0, 5), 0).unwrap_err().code(), 45);
    assert_eq!(append(&mut t, txn_header(1, 0, 0), 0), Ok(AppendDecision::Append));
    // Kafka decides it by the verification's first batch: one made by a TV1 batch (v9)
    // keeps rule 15 proper for a later v12 attempt at the next epoch (here on a table that
    // may have forgotten the producer, where rule 15 takes any first sequence).
    let mut t = ProducerStateTable::new();
    t.mark_history_incomplete();
    t.begin_verification(1, 0, 0, false, 0).unwrap();
    t.begin_verification(1, 1, 3, true, 0).unwrap();
    assert_eq!(append(&mut t, txn_header(1, 1, 3), 0), Ok(AppendDecision::Append));
    // TV1: the verification takes a first sequence past 0 (rule 15 decides at the append)
    let mut t = ProducerStateTable::new();
    let g = t.begin_verification(1, 0, 0, false, 0).unwrap().unwrap();
    assert!(t.check_verification(&txn_header(1, 0, 5), Verified::Guard(g)).is_ok());
}

#[test]
fn rule_28_verifications_are_bounded_oldest_first() {
    let mut t = ProducerStateTable::new();
    let first = t.begin_verification(0, 0, 0, false, 0).unwrap().unwrap();
    for pid in 1..=MAX_VERIFICATIONS as i64 {
        t.begin_verification(pid, 0, 0, false, 0).unwrap().unwrap();
    }
    assert_eq!(t.verifications.len(), MAX_VERIFICATIONS);
    assert_eq!(t.verifications_by_guard.len(), MAX_VERIFICATIONS);
    assert!(t.check_verification(&txn_header(0, 0, 0), Verified::Guard(first)).is_err(), "oldest forgotten");
    let newest = t.verifications[&(MAX_VERIFICATIONS as i64)].guard;
    assert!(t.check_verification(&txn_header(MAX_VERIFICATIONS as i64, 0, 0), Verified::Guard(newest)).is_ok());
    t.record_marker(5, 0, 0, 10, true, 0);
    assert_eq!(t.verifications_by_guard.len(), t.verifications.len());
}

#[test]
fn rule_28_marker_between_verification_and_append_voids_the_guard() {
    let mut t = ProducerStateTable::new();
    open_txn(&mut t, 1, 0, 0);
    t.record_marker(1, 0, 0, 1, true, 0);
    let g = t.begin_verification(1, 0, 0, false, 0).unwrap().unwrap();
    // the transaction being verified ended (a marker) before the batch arrived
    t.record_marker(1, 0, 0, 2, true, 0);
    assert_eq!(t.check_verification(&txn_header(1, 0, 1), Verified::Guard(g)).unwrap_err().code(), 48);
    // a stale guard from a verification a marker ended is refused too
    let g2 = t.begin_verification(1, 0, 0, false, 0).unwrap().unwrap();
    assert_ne!(g, g2);
    assert!(t.check_verification(&txn_header(1, 0, 1), Verified::Guard(g)).is_err());
    assert!(t.check_verification(&txn_header(1, 0, 1), Verified::Guard(g2)).is_ok());
}

#[test]
fn rule_28_a_verification_keeps_the_lowest_sequence_until_the_transaction_opens() {
    let mut t = ProducerStateTable::new();
    // A batch at sequence 0 started a verification and failed it (not in the transaction).
    let g = t.begin_verification(1, 0, 0, false, 0).unwrap().unwrap();
    assert_eq!(t.check_verification(&txn_header(1, 0, 0), Verified::No).unwrap_err().code(), 48);
    // A later attempt at sequence 3 shares the verification: 3 is above the lowest seen.
    assert_eq!(t.begin_verification(1, 0, 3, false, 0), Ok(Some(g)), "the same verification");
    assert_eq!(append(&mut t, txn_header(1, 0, 3), 0).unwrap_err().code(), 45);
    // A lower sequence lowers the bar; the batch at the lowest sequence is taken.
    assert_eq!(append(&mut t, txn_header(1, 0, 0), 0), Ok(AppendDecision::Append));
    // Appended transactionally: the verification is done with.
    assert!(t.verifications.is_empty());
    assert_eq!(append(&mut t, txn_header(1, 0, 1), 1), Ok(AppendDecision::Append));
}

#[test]
fn rule_28_a_higher_epoch_resets_the_lowest_sequence() {
    let mut t = ProducerStateTable::new();
    t.mark_history_incomplete();
    t.begin_verification(1, 0, 0, false, 0).unwrap();
    t.begin_verification(1, 1, 4, false, 0).unwrap();
    assert_eq!(t.verifications[&1].lowest_seq, 4);
    assert_eq!(append(&mut t, txn_header(1, 1, 4), 0), Ok(AppendDecision::Append));
}

#[test]
fn rule_28_verifications_expire_with_producer_ids() {
    let mut t = ProducerStateTable::new();
    t.begin_verification(1, 0, 0, false, 1_000).unwrap();
    t.expire(2_000, 86_400_000);
    assert_eq!(t.verifications.len(), 1);
    t.expire(86_401_000, 86_400_000);
    assert!(t.verifications.is_empty() && t.verifications_by_guard.is_empty());
}

#[test]
fn rule_18_a_lower_epoch_is_refused_before_verification() {
    let mut t = ProducerStateTable::new();
    open_txn(&mut t, 1, 0, 0);
    t.record_marker(1, 2, 0, 1, true, 0);
    assert_eq!(t.begin_verification(1, 1, 0, false, 0).unwrap_err().code(), 47);
    assert!(t.verifications.is_empty(), "nothing to verify");
    // a fence is checked at the append, after the coordinator (as Kafka's verification would
    // answer a fenced producer)
    t.fence(7, 3, 0);
    assert!(t.begin_verification(7, 2, 0, false, 0).unwrap().is_some());
    assert_eq!(append(&mut t, txn_header(7, 2, 0), 0).unwrap_err().code(), 47);
}

#[test]
fn rule_18_an_unknown_producer_is_not_compared_before_verification() {
    // Apache Kafka 4.4 compares the epoch only with an entry it has: a producer id with no
    // state here goes to the coordinator at any epoch, negative ones too (conformance case I-5).
    let mut t = ProducerStateTable::new();
    assert!(t.begin_verification(9, -3, 0, false, 0).unwrap().is_some());
    assert!(t.begin_verification(-1, -2, 0, false, 0).unwrap().is_some());
}

#[test]
fn rule_28_a_tv2_verification_at_the_markers_epoch_survives_the_marker() {
    // Kafka 4.4 (UnifiedLog.updateProducers): a marker voids a pending verification unless it
    // supports the epoch bump (TV2) and the marker carries its epoch; its lowest sequence then
    // still bounds what the producer may write here (conformance TV2 seed 1665).
    let mut t = ProducerStateTable::new();
    t.begin_verification(1, 1, 0, true, 0).unwrap();
    t.record_marker(1, 1, 0, 0, true, 0);
    assert!(t.verifications.contains_key(&1), "kept");
    assert!(append(&mut t, header(1, 1, 0, 1), 1).is_ok());
    assert_eq!(append(&mut t, header(1, 1, 1, 3), 2).unwrap_err().code(), 45, "above its lowest sequence");
    // A TV1 verification, or one at another epoch, is voided by the marker.
    let mut t = ProducerStateTable::new();
    t.begin_verification(2, 1, 0, false, 0).unwrap();
    t.record_marker(2, 1, 0, 0, true, 0);
    assert!(t.verifications.is_empty());
    t.begin_verification(3, 2, 0, true, 0).unwrap();
    t.record_marker(3, 1, 0, 1, true, 0);
    assert!(t.verifications.is_empty());
}

#[test]
fn rule_15_a_fence_does_not_decide_where_a_first_batch_starts() {
    let mut t = ProducerStateTable::new();
    t.fence(1, 1, 0);
    t.fence(1, 2, 0);
    assert!(t.get(1).is_none(), "a fence is no producer state");
    assert_eq!(append(&mut t, txn_header(1, 2, 3), 0).unwrap_err().code(), 45, "never wrote here: 0 first");
    t.mark_history_incomplete();
    assert_eq!(append(&mut t, txn_header(1, 2, 3), 0), Ok(AppendDecision::Append));
    assert!(t.fences.is_empty(), "state at the fenced epoch replaces the fence");
}

#[test]
fn rule_46_a_marker_for_a_producer_that_never_wrote_here_passes_a_fence() {
    let mut t = ProducerStateTable::new();
    t.fence(1, 1, 0);
    assert!(t.check_marker(1, 0, 0, 1).is_ok());
    t.record_marker(1, 0, 0, 0, false, 0);
    // the marker made state at epoch 0; the fence still refuses epoch 0's batches
    assert_eq!(append(&mut t, header(1, 0, 0, 1), 1).unwrap_err().code(), 47);
    assert_eq!(append(&mut t, header(1, 1, 0, 1), 1), Ok(AppendDecision::Append));
}

#[test]
fn fences_of_producers_without_state_expire() {
    let mut t = ProducerStateTable::new();
    t.fence(1, 1, 1_000);
    t.expire(86_401_000, 86_400_000);
    assert!(t.fences.is_empty());
}

#[test]
fn rule_26_is_checked_after_the_sequence() {
    let mut t = ProducerStateTable::new();
    open_txn(&mut t, 4, 0, 0);
    assert_eq!(append(&mut t, header(4, 0, 7, 1), 1).unwrap_err().code(), 45);
    assert_eq!(append(&mut t, header(4, 0, 1, 1), 1).unwrap_err().code(), 48);
}

#[test]
fn a_fence_refuses_older_epochs_and_leaves_the_state_as_it_was() {
    let mut t = ProducerStateTable::new();
    append(&mut t, header(1, 0, 0, 1), 0).unwrap();
    t.fence(1, 3, 0);
    let e = t.get(1).unwrap();
    assert_eq!((e.epoch, e.batches.len()), (0, 1), "the state is the batches' and markers'");
    let shown = t.described();
    assert_eq!((shown[0].epoch, shown[0].batches.len()), (3, 0), "DescribeProducers shows the fence");
    // eos-rules 46: markers are checked against the state alone, as in Kafka
    assert!(t.check_marker(1, 0, 0, 1).is_ok());
    assert_eq!(append(&mut t, header(1, 0, 1, 1), 1).unwrap_err().code(), 47);
    assert_eq!(append(&mut t, header(1, 3, 0, 1), 1), Ok(AppendDecision::Append));
    assert!(t.fences.is_empty(), "the state reached the fence");
    // a lower fence is a no-op
    t.fence(1, 2, 0);
    assert_eq!(t.get(1).unwrap().epoch, 3);
    assert!(t.fences.is_empty());
    // fencing an unknown producer still rejects its zombie batches here
    t.fence(8, 5, 0);
    assert_eq!(append(&mut t, header(8, 4, 0, 1), 2).unwrap_err().code(), 47);
}
