//! InitProducerId for transactional ids (eos-rules 3-13), including KIP-360's claimed
//! (pid, epoch) bump and its retry, PID rotation at an exhausted epoch, and the fence-and-abort
//! of an Ongoing transaction, which the reaper reuses (eos-rules 53).

use std::collections::BTreeSet;

use super::markers::markers;
use super::{
    is_epoch_exhausted, live, Answer, Decision, Effect, PidEpoch, TxnEntry, TxnError, TxnState, NO_PRODUCER_EPOCH,
    NO_PRODUCER_ID, TV_0, TV_2,
};
use crate::error_code::ResponseError;

/// eos-rules 2: who may get a producer id. A transactional id needs WRITE on it
/// (TRANSACTIONAL_ID_AUTHORIZATION_FAILED); an idempotent producer IDEMPOTENT_WRITE on the
/// cluster or WRITE on some topic (KIP-679; CLUSTER_AUTHORIZATION_FAILED). Checked before
/// anything else, as Kafka's KafkaApis does.
pub fn init_producer_id_authorization(
    transactional: bool,
    may_write_transactional_id: bool,
    may_write_idempotently: bool,
) -> Result<(), ResponseError> {
    match (transactional, may_write_transactional_id, may_write_idempotently) {
        (true, false, _) => Err(ResponseError::TransactionalIdAuthorizationFailed),
        (false, _, false) => Err(ResponseError::ClusterAuthorizationFailed),
        _ => Ok(()),
    }
}

/// InitProducerId with a null transactional id (eos-rules 1, 3): a fresh producer id at epoch 0,
/// no coordinator state, no timeout validation; a claim is ignored unless half set.
pub fn idempotent_init_producer_id(claim: Option<(i64, i16)>, alloc: &mut dyn FnMut() -> i64) -> Answer {
    if let Some((pid, epoch)) = claim {
        if (pid == NO_PRODUCER_ID) != (epoch == NO_PRODUCER_EPOCH) {
            return Err(TxnError::InvalidRequest);
        }
    }
    Ok(PidEpoch::new(alloc(), 0))
}

/// InitProducerId for a non-null transactional id (the null id, rule 1, is handled elsewhere).
/// `claim` is the request's (ProducerId, ProducerEpoch) as sent (v3+), `None` for v0-2.
/// `cluster_tv2`: the finalized `transaction.version` >= 2; it drives the abort of an Ongoing
/// transaction, which AK runs with the cluster's TV. Errors are undowngraded
/// (see [`TxnError::for_version`]).
#[allow(clippy::too_many_arguments)]
pub fn init_producer_id(
    entry: Option<&TxnEntry>,
    transactional_id: &str,
    timeout_ms: i32,
    claim: Option<(i64, i16)>,
    max_timeout_ms: i32,
    cluster_tv2: bool,
    now_ms: i64,
    alloc: &mut dyn FnMut() -> i64,
) -> Decision {
    // eos-rules 3: -1/-1 is "no claim"; exactly one of them -1 is INVALID_REQUEST, first.
    let claim = match claim {
        None | Some((NO_PRODUCER_ID, NO_PRODUCER_EPOCH)) => None,
        Some((pid, epoch)) if pid == NO_PRODUCER_ID || epoch == NO_PRODUCER_EPOCH => {
            return Decision::reject(TxnError::InvalidRequest)
        }
        Some(c) => Some(c),
    };
    // eos-rules 4
    if transactional_id.is_empty() {
        return Decision::reject(TxnError::InvalidRequest);
    }
    // eos-rules 5: 0 < timeout <= transaction.max.timeout.ms, before any state check
    if timeout_ms <= 0 || timeout_ms > max_timeout_ms {
        return Decision::reject(TxnError::InvalidTransactionTimeout);
    }
    let Some(e) = live(entry) else {
        // eos-rules 7: new id -> (newPid, 0), Empty, last epoch -1, whatever the claim
        let pid = alloc();
        let fresh = TxnEntry {
            transactional_id: transactional_id.to_string(),
            producer_id: pid,
            producer_epoch: 0,
            last_producer_epoch: NO_PRODUCER_EPOCH,
            prev_producer_id: pid,
            next_producer_id: NO_PRODUCER_ID,
            state: TxnState::Empty,
            partitions: BTreeSet::new(),
            timeout_ms,
            txn_start_ms: -1,
            last_update_ms: now_ms,
            txn_version: TV_0,
            pending: false,
        };
        let ids = fresh.pid_epoch();
        return Decision::write(fresh, Ok(ids), Vec::new());
    };
    // eos-rules 12: pending -> claim validity -> state
    if e.pending {
        return Decision::reject(TxnError::ConcurrentTransactions);
    }
    if let Some((pid, epoch)) = claim {
        // eos-rules 9/11: epoch -1 (just created), the current pid, or the previous pid
        // with an exhausted epoch (retry of a lost rotation)
        let valid = e.producer_epoch == NO_PRODUCER_EPOCH
            || pid == e.producer_id
            || (pid == e.prev_producer_id && is_epoch_exhausted(epoch));
        if !valid {
            return Decision::reject(TxnError::ProducerFenced);
        }
    }
    match e.state {
        TxnState::PrepareCommit | TxnState::PrepareAbort => Decision::reject(TxnError::ConcurrentTransactions),
        TxnState::Empty | TxnState::CompleteCommit | TxnState::CompleteAbort => {
            reinit(e, claim.map(|c| c.1), timeout_ms, now_ms, alloc).unwrap_or_else(Decision::reject)
        }
        TxnState::Ongoing => {
            // eos-rules 13: fence once to E+1, abort at E+1, answer CONCURRENT_TRANSACTIONS;
            // the fenced epoch is never handed out.
            let (aborting, effects) = fence_and_abort(e, cluster_tv2, now_ms, alloc);
            Decision::write(aborting, Err(TxnError::ConcurrentTransactions), effects)
        }
        TxnState::PrepareEpochFence | TxnState::Dead => Decision::reject(TxnError::UnknownServerError),
    }
}

fn reinit(
    e: &TxnEntry,
    claimed_epoch: Option<i16>,
    timeout_ms: i32,
    now_ms: i64,
    alloc: &mut dyn FnMut() -> i64,
) -> Result<Decision, TxnError> {
    let current = e.producer_epoch;
    let mut next = e.successor(now_ms);
    next.state = TxnState::Empty;
    next.partitions.clear();
    next.txn_start_ms = -1;
    next.timeout_ms = timeout_ms;
    if is_epoch_exhausted(current) && claimed_epoch.is_none_or(|c| c == current) {
        // eos-rules 10: rotate; remember the exhausted epoch only if it was claimed
        next.producer_id = alloc();
        next.producer_epoch = 0;
        next.last_producer_epoch = if claimed_epoch.is_some() { current } else { NO_PRODUCER_EPOCH };
    } else {
        // Exhausted here only with a claim other than `current`: AK then throws
        // (IllegalStateException, UNKNOWN_SERVER_ERROR); we answer retry or fenced as below,
        // and `current + 1` is only reached when not exhausted.
        match claimed_epoch {
            // eos-rules 8: no claim -> E+1, last epoch -1 so late retries of others are fenced
            None => {
                next.producer_epoch = current + 1;
                next.last_producer_epoch = NO_PRODUCER_EPOCH;
            }
            // eos-rules 9: a claim equal to the current epoch bumps and remembers it
            Some(c) if current == NO_PRODUCER_EPOCH || c == current => {
                next.producer_epoch = current + 1;
                next.last_producer_epoch = current;
            }
            // eos-rules 9: a claim equal to last_epoch is a retry -> current epoch unchanged
            // (still written, as AK does: Empty with the new timeout)
            Some(c) if c == e.last_producer_epoch => {}
            Some(_) => return Err(TxnError::ProducerFenced),
        }
    }
    let ids = next.pid_epoch();
    // Broadcast every epoch > 0 handed out (a retry repeats it; fences are idempotent).
    let effects =
        if ids.epoch > 0 { vec![Effect::Fence { producer_id: ids.producer_id, epoch: ids.epoch }] } else { Vec::new() };
    Ok(Decision::write(next, Ok(ids), effects))
}

/// The coordinator's own abort of an Ongoing transaction (eos-rules 13, 53): one bump to
/// E+1 (never past i16::MAX), PrepareAbort with the partitions intact, ABORT markers at E+1,
/// run with the cluster's TV. TV1 resets last_epoch to -1; TV2 (after KAFKA-19367) records
/// E as last_epoch and, at an exhausted epoch, allocates the next pid (KAFKA-20090).
pub(super) fn fence_and_abort(
    e: &TxnEntry,
    cluster_tv2: bool,
    now_ms: i64,
    alloc: &mut dyn FnMut() -> i64,
) -> (TxnEntry, Vec<Effect>) {
    let mut next = e.successor(now_ms);
    next.state = TxnState::PrepareAbort;
    next.producer_epoch = e.producer_epoch.saturating_add(1);
    if cluster_tv2 {
        next.last_producer_epoch = e.producer_epoch;
        next.next_producer_id = if is_epoch_exhausted(e.producer_epoch) { alloc() } else { NO_PRODUCER_ID };
        next.txn_version = TV_2;
    } else {
        next.last_producer_epoch = NO_PRODUCER_EPOCH;
        next.next_producer_id = NO_PRODUCER_ID;
        next.txn_version = TV_0;
    }
    let effects =
        vec![Effect::Fence { producer_id: next.producer_id, epoch: next.producer_epoch }, markers(&next, false)];
    (next, effects)
}
