//! The marker phase (eos-rules 41, 43, 45, 50).

use super::*;
use TxnError::*;
use TxnState::*;

#[test]
fn rule_43_markers_need_alter_or_cluster_action_on_the_cluster() {
    use crate::error_code::ResponseError;
    assert_eq!(write_txn_markers_authorization(false, false), Err(ResponseError::ClusterAuthorizationFailed));
    assert_eq!(write_txn_markers_authorization(true, false), Ok(()));
    assert_eq!(write_txn_markers_authorization(false, true), Ok(()));
}

#[test]
fn rule_41_complete_clears_partitions_after_the_marker_phase() {
    let preparing = entry(PrepareCommit, PID, 5).settled();
    assert!(preparing.pending, "the marker phase counts as pending");
    let done = complete(&preparing, NOW).expect("prepare");
    assert_eq!(st(&done), (CompleteCommit, PID, 5));
    assert_eq!((done.partitions.len(), done.pending), (0, false));
    assert_eq!((done.txn_start_ms, done.last_update_ms), (1_000, NOW));
    assert!(!done.settled().pending);
    let aborted = complete(&entry(PrepareAbort, PID, 5), NOW);
    assert_eq!(aborted.map(|e| e.state), Ok(CompleteAbort));
    let early = complete(&entry(Ongoing, PID, 5), NOW);
    assert_eq!(early, Err(InvalidTxnState));
}

#[test]
fn rule_50_marker_answers() {
    assert_eq!(marker_outcome(0), MarkerOutcome::Written);
    assert_eq!(marker_outcome(3), MarkerOutcome::Dropped);
    assert_eq!(marker_outcome(47), MarkerOutcome::Stuck);
    assert_eq!(marker_outcome(52), MarkerOutcome::Stuck);
    for retried in [6, 7, 19, 20, 56, -1] {
        assert_eq!(marker_outcome(retried), MarkerOutcome::Retry);
    }
}

#[test]
fn rule_41_a_stopping_broker_retries_its_markers() {
    use crate::error_code::ResponseError;
    // actors::directory answers a lookup NOT_LEADER_OR_FOLLOWER once its registry is gone: the
    // marker is retried; only an unknown topic is a deleted partition, dropped.
    assert_eq!(marker_outcome(ResponseError::NotLeaderOrFollower.code()), MarkerOutcome::Retry);
    assert_eq!(marker_outcome(ResponseError::UnknownTopicOrPartition.code()), MarkerOutcome::Dropped);
}

#[test]
fn rule_41_markers_go_out_before_the_fences() {
    let d = init(&entry(Ongoing, PID, 5), None);
    let (batch, fences) = schedule(d.effects.clone());
    let batch = batch.expect("markers");
    assert_eq!((batch.producer_id, batch.epoch, batch.commit, batch.txn_version), (PID, 6, false, TV_0));
    assert_eq!(batch.partitions, set(&[("a", 0)]));
    assert_eq!(fences, vec![PidEpoch::new(PID, 6)]);
    // no markers: the fences run at once
    let d = init(&entry(Empty, PID, 5), None);
    assert_eq!(schedule(d.effects), (None, vec![PidEpoch::new(PID, 6)]));
}

#[test]
fn rule_41_a_loaded_prepare_entry_resends_its_markers() {
    for (state, commit) in [(PrepareCommit, true), (PrepareAbort, false)] {
        let partitions = set(&[("a", 0)]);
        let expected = Effect::WriteMarkers { producer_id: PID, epoch: 5, commit, partitions, txn_version: TV_0 };
        assert_eq!(resend_markers(&entry(state, PID, 5)), Some(expected));
    }
    for state in [Empty, Ongoing, CompleteCommit, CompleteAbort] {
        assert_eq!(resend_markers(&entry(state, PID, 5)), None);
    }
}

#[test]
fn rule_41_completion_is_written_once_every_marker_is_in() {
    let preparing = entry(PrepareCommit, PID, 5).settled();
    let d = completion(&preparing, NOW).expect("prepare state");
    assert_eq!(st(&applied(&d)), (CompleteCommit, PID, 5));
    assert_eq!((ok(&d), d.effects.len()), ((PID, 5), 0));
    let overflow = applied(&end(&entry(Ongoing, PID, 32766), PID, 32766, true, true));
    let d = completion(&overflow, NOW).expect("prepare state");
    assert_eq!(ok(&d), (NEW_PID, 0));
    assert_eq!(completion(&entry(Ongoing, PID, 5), NOW), Err(InvalidTxnState));
}

#[test]
fn rule_43_markers_carry_the_client_transaction_version() {
    let b1 = set(&[("b", 1)]);
    let implicit = applied(&add_partitions(Some(&entry(Empty, PID, 5)), "tx", PID, 5, &b1, NOW, TV_2));
    assert_eq!(marker(&end(&implicit, PID, 5, true, true)).3, TV_2);
    assert_eq!(marker(&end(&entry(Ongoing, PID, 5), PID, 5, false, false)).3, TV_0);
}

#[test]
fn rule_45_markers_carry_the_post_prepare_epoch() {
    let ongoing = entry(Ongoing, PID, 5);
    assert_eq!(marker(&end(&ongoing, PID, 5, true, false)).1, 5, "TV1: E");
    assert_eq!(marker(&end(&ongoing, PID, 5, true, true)).1, 6, "TV2: E+1");
    assert_eq!(marker(&init(&ongoing, None)).1, 6, "fence: E+1");
    let reaped = reap(&ongoing, false, 100_000).expect("overdue");
    assert_eq!(marker(&reaped).1, 6, "timeout: E+1");
}

#[test]
fn rule_50_a_refused_marker_leaves_the_transaction_stuck() {
    assert!(!marker_phase_stuck(&[]));
    assert!(!marker_phase_stuck(&[0, 3, 0]));
    assert!(marker_phase_stuck(&[0, 47]));
    assert!(marker_phase_stuck(&[52]));
}

#[test]
fn rule_59_offsets_partition_markers_go_to_the_group_coordinator() {
    assert_eq!(marker_target(CONSUMER_OFFSETS_TOPIC, 7), MarkerTarget::GroupOffsets(7));
    assert_eq!(marker_target("orders", 7), MarkerTarget::Leader);
}

#[test]
fn rule_50_retriable_markers_back_off_doubling_to_five_seconds() {
    let mut waits = vec![MARKER_FIRST_BACKOFF_MS];
    for _ in 0..8 {
        waits.push(next_marker_backoff_ms(*waits.last().unwrap()));
    }
    assert_eq!(waits, vec![50, 100, 200, 400, 800, 1600, 3200, 5000, 5000]);
}
