//! The marker phase (eos-rules 41, 45, 50): which markers a Prepare* entry sends, in what
//! order with the fences, how a partition leader's answer is handled, and the CompleteX
//! transition once every marker is in. The actor does the sending.

use std::collections::BTreeSet;

/// eos-rules 43: who may write markers: a principal with ALTER on the cluster (Kafka's admin
/// abortTransaction) or CLUSTER_ACTION (the brokers' coordinators); anyone else gets
/// CLUSTER_AUTHORIZATION_FAILED on every partition and nothing is written.
pub fn write_txn_markers_authorization(may_alter: bool, may_cluster_action: bool) -> Result<(), ResponseError> {
    if may_alter || may_cluster_action {
        Ok(())
    } else {
        Err(ResponseError::ClusterAuthorizationFailed)
    }
}

use crate::error_code::ResponseError;

use super::{
    Decision, Effect, PidEpoch, TopicPartition, TxnEntry, TxnError, TxnState, CONSUMER_OFFSETS_TOPIC, NO_PRODUCER_ID,
    TV_2,
};

/// eos-rules 41, 45: the markers of `entry`, at its (post-prepare) pid and epoch, to every
/// partition of the transaction, `__consumer_offsets` ones included, with the entry's client
/// transaction version (eos-rules 43).
pub(super) fn markers(entry: &TxnEntry, commit: bool) -> Effect {
    Effect::WriteMarkers {
        producer_id: entry.producer_id,
        epoch: entry.producer_epoch,
        commit,
        partitions: entry.partitions.clone(),
        txn_version: entry.txn_version,
    }
}

/// One marker to send to each partition of a transaction.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MarkerBatch {
    pub producer_id: i64,
    pub epoch: i16,
    pub commit: bool,
    pub partitions: BTreeSet<TopicPartition>,
    pub txn_version: i8,
}

/// The order in which a durable decision's effects run: the markers (if any) first, and the
/// fences once every marker is answered (with no markers, at once). A TV2 marker must land at
/// an epoch above the partition's (eos-rules 47), so the in-process fence follows it.
pub fn schedule(effects: Vec<Effect>) -> (Option<MarkerBatch>, Vec<PidEpoch>) {
    let mut fences = Vec::new();
    let mut batch = None;
    for effect in effects {
        match effect {
            Effect::Fence { producer_id, epoch } => fences.push(PidEpoch::new(producer_id, epoch)),
            Effect::WriteMarkers { producer_id, epoch, commit, partitions, txn_version } => {
                batch = Some(MarkerBatch { producer_id, epoch, commit, partitions, txn_version })
            }
        }
    }
    (batch, fences)
}

/// Contract point 4: the markers a loaded Prepare* entry still owes; `None` otherwise.
pub fn resend_markers(entry: &TxnEntry) -> Option<Effect> {
    entry.state.is_prepare().then(|| markers(entry, entry.state == TxnState::PrepareCommit))
}

/// What the coordinator does with a partition leader's answer to a marker (eos-rules 50).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MarkerOutcome {
    Written,
    /// The partition is gone (deleted): drop it from the transaction (eos-rules 41).
    Dropped,
    /// INVALID_PRODUCER_EPOCH / TRANSACTION_COORDINATOR_FENCED: stop sending; the transaction
    /// stays in its Prepare state.
    Stuck,
    /// Anything else (storage, leadership, timeouts): send again.
    Retry,
}

/// Where the marker for one partition of a transaction goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MarkerTarget {
    /// eos-rules 59: a `__consumer_offsets` partition: the group coordinator makes the
    /// transaction's pending offsets visible (commit) or drops them (abort).
    GroupOffsets(i32),
    /// eos-rules 41: the partition's leader writes the COMMIT/ABORT record.
    Leader,
}

pub fn marker_target(topic: &str, partition: i32) -> MarkerTarget {
    if topic == CONSUMER_OFFSETS_TOPIC {
        MarkerTarget::GroupOffsets(partition)
    } else {
        MarkerTarget::Leader
    }
}

/// The first wait before a marker is sent again (eos-rules 50: retriable answers).
pub const MARKER_FIRST_BACKOFF_MS: u64 = 50;
/// Waits double up to this.
pub const MARKER_MAX_BACKOFF_MS: u64 = 5_000;

pub fn next_marker_backoff_ms(previous_ms: u64) -> u64 {
    previous_ms.saturating_mul(2).min(MARKER_MAX_BACKOFF_MS)
}

pub fn marker_outcome(code: i16) -> MarkerOutcome {
    use ResponseError::*;
    if code == crate::error_code::NONE {
        return MarkerOutcome::Written;
    }
    match ResponseError::try_from_code(code) {
        Some(UnknownTopicOrPartition) => MarkerOutcome::Dropped,
        Some(InvalidProducerEpoch | TransactionCoordinatorFenced) => MarkerOutcome::Stuck,
        _ => MarkerOutcome::Retry,
    }
}

/// eos-rules 50: the marker phase is stuck (stop; the transaction stays in its Prepare state)
/// when any partition answered for good with INVALID_PRODUCER_EPOCH or
/// TRANSACTION_COORDINATOR_FENCED. Each code is a partition's last answer: retriable ones are
/// resent until another comes back, and dropped partitions count as done (eos-rules 41).
pub fn marker_phase_stuck(final_codes: &[i16]) -> bool {
    final_codes.iter().any(|code| marker_outcome(*code) == MarkerOutcome::Stuck)
}

/// eos-rules 41: once every marker is acknowledged, PrepareCommit -> CompleteCommit and
/// PrepareAbort -> CompleteAbort, partitions cleared; a TV2 overflow moves to
/// (next_producer_id, 0) with prev = the old pid. `pending` on the input is expected.
pub fn complete(entry: &TxnEntry, now_ms: i64) -> Result<TxnEntry, TxnError> {
    let state = match entry.state {
        TxnState::PrepareCommit => TxnState::CompleteCommit,
        TxnState::PrepareAbort => TxnState::CompleteAbort,
        _ => return Err(TxnError::InvalidTxnState),
    };
    let mut next = entry.successor(now_ms);
    next.state = state;
    next.partitions.clear();
    if entry.txn_version >= TV_2 && entry.next_producer_id != NO_PRODUCER_ID {
        // last_epoch stays 32766, the last epoch the client saw
        next.producer_id = entry.next_producer_id;
        next.producer_epoch = 0;
    }
    next.next_producer_id = NO_PRODUCER_ID;
    Ok(next)
}

/// eos-rules 41: the decision to persist once every marker is acknowledged: [`complete`]'s
/// entry, answering its ids (nobody waits for the answer), no effects.
pub fn completion(entry: &TxnEntry, now_ms: i64) -> Result<Decision, TxnError> {
    let done = complete(entry, now_ms)?;
    let ids = done.pid_epoch();
    Ok(Decision::write(done, Ok(ids), Vec::new()))
}
