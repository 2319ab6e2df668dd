//! Timeouts and expiry (eos-rules 53-55).

use super::*;
use TxnError::*;
use TxnState::*;

#[test]
fn reaper_aborts_overdue_bumps_epoch() {
    let e = entry(Ongoing, PID, 5); // started at 1000, timeout 60000
    assert!(reap(&e, false, 61_000).is_none());
    let d = reap(&e, false, 61_001).expect("overdue");
    let aborting = applied(&d);
    assert_eq!(st(&aborting), (PrepareAbort, PID, 6));
    assert_eq!(lpn(&aborting), (-1, PID, -1));
    assert_eq!(aborting.txn_start_ms, 1_000);
    assert_eq!(d.effects[0], fence(PID, 6));
    assert_eq!(marker(&d), (PID, 6, false, TV_0, 1));
    assert_eq!(ok(&d), (PID, 6));
}

#[test]
fn rule_53_reaper_skips_pending_and_idle_and_rotates_under_tv2() {
    let late = 100_000;
    assert!(reap(&pending(entry(Ongoing, PID, 5)), false, late).is_none());
    assert!(reap(&entry(Empty, PID, 5), false, late).is_none());
    assert!(!is_timed_out(&entry(PrepareCommit, PID, 5), late));
    let d = reap(&entry(Ongoing, PID, 32766), true, late).expect("overdue");
    let aborting = applied(&d);
    assert_eq!(st(&aborting), (PrepareAbort, PID, TOP));
    assert_eq!(lpn(&aborting), (32766, PID, NEW_PID));
    assert_eq!(ok(&d), (NEW_PID, 0));
    assert_eq!(st(&completed(&aborting)), (CompleteAbort, NEW_PID, 0));
}

#[test]
fn rule_54_the_returning_producer_after_a_timeout() {
    let reaped = |tv2: bool| {
        let d = reap(&entry(Ongoing, PID, 5), tv2, 100_000);
        completed(&applied(&d.expect("overdue")))
    };
    let e = reaped(false);
    assert_eq!(st(&e), (CompleteAbort, PID, 6));
    assert_eq!(rejected(&add(&e, PID, 5)), ProducerFenced);
    let d = add_offsets(Some(&e), "tx", PID, 5, 3, NOW);
    assert_eq!(rejected(&d), ProducerFenced);
    assert_eq!(rejected(&end(&e, PID, 5, true, false)), ProducerFenced);
    assert_eq!(rejected(&end(&e, PID, 5, true, true)), InvalidTxnState);
    assert_eq!(ok(&end(&e, PID, 5, false, true)), (PID, 6));
    assert_eq!(rejected(&init(&e, Some((PID, 5)))), ProducerFenced);
    // a TV2 cluster's abort recorded last epoch 5: the claim reads as a retry
    let d = init(&reaped(true), Some((PID, 5)));
    assert_eq!(ok(&d), (PID, 6));
    assert_eq!(applied(&d).producer_epoch, 6);
}

#[test]
fn rule_55_idle_ids_expire_and_come_back_fresh() {
    let week = 7 * 24 * 3_600_000;
    let idle = entry(CompleteCommit, PID, 5); // last update at 1000
    assert!(is_expired(&idle, 1_000 + week, week));
    assert!(!is_expired(&idle, 999 + week, week));
    assert!(!is_expired(&entry(Ongoing, PID, 5), 1_000 + week, week));
    assert!(!is_expired(&pending(idle.clone()), 1_000 + week, week));
    // after the tombstone: a settled Dead entry is an unknown id
    let mut dead = idle.clone();
    dead.state = Dead;
    let b1 = set(&[("b", 1)]);
    for gone in [None, Some(&dead)] {
        let d = add_partitions(gone, "tx", PID, 5, &b1, NOW, TV_0);
        assert_eq!(rejected(&d), InvalidProducerIdMapping);
        let d = end_txn(gone, "tx", PID, 5, true, false, NOW, &mut || 1);
        assert_eq!(rejected(&d), InvalidProducerIdMapping);
        let d = init_with(gone, 60_000, Some((PID, 5)), false);
        assert_eq!(ok(&d), (NEW_PID, 0));
    }
}

const WEEK: i64 = 7 * 24 * 3_600_000;

#[test]
fn rule_53_reaper_picks_overdue_and_expired_ids() {
    let ongoing = entry(Ongoing, PID, 5); // started at 1000, timeout 60000
    assert!(needs_reaping(&ongoing, 61_001, WEEK));
    assert!(!needs_reaping(&ongoing, 61_000, WEEK));
    assert!(needs_reaping(&entry(Empty, PID, 5), 1_000 + WEEK, WEEK));
    assert!(!needs_reaping(&entry(Empty, PID, 5), 61_001, WEEK));
    assert!(!needs_reaping(&entry(PrepareAbort, PID, 5), 1_000 + WEEK, WEEK));
}

#[test]
fn rule_55_expiry_writes_a_tombstone() {
    let idle = entry(CompleteCommit, PID, 5); // last update at 1000
    assert_eq!(expire(&idle, 999 + WEEK, WEEK), None);
    assert_eq!(expire(&pending(idle.clone()), 1_000 + WEEK, WEEK), None);
    let d = expire(&idle, 1_000 + WEEK, WEEK).expect("expired");
    let dead = d.write.clone().expect("tombstone");
    assert!(dead.is_tombstone() && !dead.pending);
    assert_eq!((ok(&d), d.effects.len()), ((PID, 5), 0));
    assert_eq!(after_write(dead), None, "the entry is dropped");
}
