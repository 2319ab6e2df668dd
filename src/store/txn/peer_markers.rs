//! Markers for partitions another broker leads (eos-rules 43, 50): which WriteTxnMarkers
//! version the coordinator speaks to the peer (KIP-1228), and what it does with the peer's
//! answer or with a failed send. The wire client (protocol::peer_link) does the sending.

use crate::error_code::ResponseError;
use thiserror::Error;

use super::MarkerOutcome;

/// The WriteTxnMarkers versions a coordinator can send: v0 is gone since 4.0, v2 is KIP-1228's.
pub const MIN_MARKERS_VERSION: i16 = 1;
pub const MAX_MARKERS_VERSION: i16 = 2;

/// How long a marker sent to a peer may take, connecting included, before it is answered
/// `TimedOut` and retried (Kafka's request.timeout.ms default).
pub const PEER_REQUEST_TIMEOUT_MS: u64 = 30_000;

/// Why a marker sent to a peer got no per-partition answer.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum PeerSendError {
    #[error("cannot connect to the peer: {0}")]
    Unreachable(String),
    #[error("no answer from the peer within {0} ms")]
    TimedOut(u64),
    #[error("the connection to the peer was lost: {0}")]
    Disconnected(String),
    #[error("the peer's queue is full")]
    Busy,
    #[error("malformed answer from the peer: {0}")]
    Malformed(String),
    #[error("the peer advertises no WriteTxnMarkers version in {MIN_MARKERS_VERSION}..={MAX_MARKERS_VERSION}")]
    NoCommonVersion,
}

/// eos-rules 43 (KIP-1228): the highest version both sides speak: this broker's `local_max`
/// (`write_txn_markers_max_version`) and the range the peer advertises in ApiVersions. v2
/// carries the transaction version; v1 is the fallback, and then the peer validates the marker
/// the legacy way (rule 46). `None`: the peer advertises nothing usable.
pub fn marker_request_version(local_max: i16, peer: Option<(i16, i16)>) -> Option<i16> {
    let (peer_min, peer_max) = peer?;
    let high = local_max.min(MAX_MARKERS_VERSION).min(peer_max);
    let low = peer_min.max(MIN_MARKERS_VERSION);
    (high >= low).then_some(high)
}

/// eos-rules 50: what the coordinator does with a peer's per-partition answer. Unlike a local
/// leader's answer (`marker_outcome`), UNKNOWN_TOPIC_OR_PARTITION is retried: the peer may not
/// have taken the partition yet, and a deleted topic is dropped by the coordinator's own lookup
/// (rule 41). Apache Kafka throws on any code rule 50 does not list; kaas retries it.
pub fn peer_marker_outcome(code: i16) -> MarkerOutcome {
    if code == crate::error_code::NONE {
        return MarkerOutcome::Written;
    }
    match ResponseError::try_from_code(code).and_then(rule_50_outcome) {
        Some(outcome) => outcome,
        None => MarkerOutcome::Retry,
    }
}

/// The outcome rule 50 gives each code it names (None: not named).
fn rule_50_outcome(e: ResponseError) -> Option<MarkerOutcome> {
    use ResponseError::*;
    match e {
        UnknownTopicOrPartition
        | NotLeaderOrFollower
        | NotEnoughReplicas
        | NotEnoughReplicasAfterAppend
        | RequestTimedOut
        | KafkaStorageError
        | NetworkException => Some(MarkerOutcome::Retry),
        UnsupportedForMessageFormat | UnsupportedVersion => Some(MarkerOutcome::Dropped),
        InvalidProducerEpoch | TransactionCoordinatorFenced => Some(MarkerOutcome::Stuck),
        _ => None,
    }
}

/// Whether rule 50 names `code` (Apache Kafka throws on the others; kaas logs and retries).
pub fn peer_code_is_expected(code: i16) -> bool {
    code == crate::error_code::NONE || ResponseError::try_from_code(code).and_then(rule_50_outcome).is_some()
}

/// eos-rules 50: the code a failed send stands for. A disconnect or a timeout is retried, as
/// Apache Kafka re-enqueues the markers of a request that got no response; a peer with no
/// common version is UNSUPPORTED_VERSION (dropped).
pub fn peer_send_code(error: &PeerSendError) -> i16 {
    match error {
        PeerSendError::TimedOut(_) | PeerSendError::Busy => ResponseError::RequestTimedOut.code(),
        PeerSendError::Unreachable(_) | PeerSendError::Disconnected(_) | PeerSendError::Malformed(_) => {
            ResponseError::NetworkException.code()
        }
        PeerSendError::NoCommonVersion => ResponseError::UnsupportedVersion.code(),
    }
}
