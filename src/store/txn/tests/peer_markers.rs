//! Markers to partitions a peer broker leads (eos-rules 43, 50).

use super::*;

#[test]
fn rule_43_kip_1228_v2_when_the_peer_advertises_it() {
    assert_eq!(marker_request_version(2, Some((1, 2))), Some(2));
    // a newer peer: still our highest
    assert_eq!(marker_request_version(2, Some((1, 5))), Some(2));
}

#[test]
fn rule_43_kip_1228_v1_is_the_fallback() {
    // a pre-4.2 peer, or one with write_txn_markers_max_version = 1
    assert_eq!(marker_request_version(2, Some((0, 1))), Some(1));
    assert_eq!(marker_request_version(2, Some((1, 1))), Some(1));
    // this broker limited to v1 speaks v1 to every peer
    assert_eq!(marker_request_version(1, Some((1, 2))), Some(1));
}

#[test]
fn rule_43_no_common_version() {
    assert_eq!(marker_request_version(2, None), None, "the peer does not list WriteTxnMarkers");
    assert_eq!(marker_request_version(2, Some((0, 0))), None, "v0 was removed in 4.0");
    assert_eq!(marker_request_version(2, Some((3, 4))), None, "a peer above what we speak");
}

#[test]
fn rule_50_peer_answers_that_are_retried() {
    // UNKNOWN_TOPIC_OR_PARTITION, NOT_LEADER_OR_FOLLOWER, REQUEST_TIMED_OUT, NETWORK_EXCEPTION,
    // NOT_ENOUGH_REPLICAS(_AFTER_APPEND), KAFKA_STORAGE_ERROR
    for code in [3, 6, 7, 13, 19, 20, 56] {
        assert_eq!(peer_marker_outcome(code), MarkerOutcome::Retry, "code {code}");
        assert!(peer_code_is_expected(code));
    }
    // a local leader's UNKNOWN_TOPIC_OR_PARTITION is a deleted partition; a peer's is not
    assert_eq!(marker_outcome(3), MarkerOutcome::Dropped);
}

#[test]
fn rule_50_peer_answers_that_drop_the_partition() {
    // UNSUPPORTED_FOR_MESSAGE_FORMAT, UNSUPPORTED_VERSION
    for code in [43, 35] {
        assert_eq!(peer_marker_outcome(code), MarkerOutcome::Dropped, "code {code}");
    }
}

#[test]
fn rule_50_peer_answers_that_stop_the_marker_phase() {
    // INVALID_PRODUCER_EPOCH, TRANSACTION_COORDINATOR_FENCED
    for code in [47, 52] {
        assert_eq!(peer_marker_outcome(code), MarkerOutcome::Stuck, "code {code}");
        assert!(marker_phase_stuck(&[0, code]));
    }
    assert_eq!(peer_marker_outcome(0), MarkerOutcome::Written);
}

#[test]
fn rule_50_codes_rule_50_does_not_name_are_retried_and_flagged() {
    for code in [-1, 1, 48, 51, 87] {
        assert_eq!(peer_marker_outcome(code), MarkerOutcome::Retry, "code {code}");
        assert!(!peer_code_is_expected(code), "code {code}");
    }
}

#[test]
fn rule_50_failed_sends_are_retried_except_without_a_common_version() {
    let retried = [
        PeerSendError::Unreachable("refused".into()),
        PeerSendError::TimedOut(30_000),
        PeerSendError::Disconnected("eof".into()),
        PeerSendError::Busy,
        PeerSendError::Malformed("short".into()),
    ];
    for e in retried {
        assert_eq!(peer_marker_outcome(peer_send_code(&e)), MarkerOutcome::Retry, "{e}");
    }
    let none = peer_send_code(&PeerSendError::NoCommonVersion);
    assert_eq!((none, peer_marker_outcome(none)), (35, MarkerOutcome::Dropped));
}
