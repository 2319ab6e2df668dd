//! EndTxn (eos-rules 35-40): TV1 (v0-4) keeps the epoch; TV2 (v5, KIP-890 part 2) bumps it
//! on every EndTxn, rotates the pid at an exhausted epoch and answers the post-completion ids.
//! The marker phase that follows is [`super::markers`].

use super::markers::markers;
use super::{is_epoch_exhausted, live, Decision, TxnEntry, TxnError, TxnState, NO_PRODUCER_ID, TV_0, TV_2};

/// EndTxn. `tv2` = request version >= 5. The answer's ids are what a v5 NONE carries (E9);
/// use [`Decision::response_ids`].
#[allow(clippy::too_many_arguments)]
pub fn end_txn(
    entry: Option<&TxnEntry>,
    transactional_id: &str,
    producer_id: i64,
    epoch: i16,
    commit: bool,
    tv2: bool,
    now_ms: i64,
    alloc: &mut dyn FnMut() -> i64,
) -> Decision {
    // eos-rules 35: empty id, unknown id
    let result = if transactional_id.is_empty() {
        Err(TxnError::InvalidRequest)
    } else {
        match live(entry) {
            None => Err(TxnError::InvalidProducerIdMapping),
            Some(e) if tv2 => end_txn_tv2(e, producer_id, epoch, commit, now_ms, alloc),
            Some(e) => end_txn_tv1(e, producer_id, epoch, commit, now_ms),
        }
    };
    result.unwrap_or_else(Decision::reject)
}

/// eos-rules 36: strict epoch, then pending, then the state table.
fn end_txn_tv1(e: &TxnEntry, producer_id: i64, epoch: i16, commit: bool, now_ms: i64) -> Result<Decision, TxnError> {
    if e.producer_id != producer_id {
        return Err(TxnError::InvalidProducerIdMapping);
    }
    if e.producer_epoch != epoch {
        return Err(TxnError::ProducerFenced);
    }
    if e.pending {
        return Err(TxnError::ConcurrentTransactions);
    }
    match (e.state, commit) {
        (TxnState::Ongoing, _) => {
            // PrepareX at the same epoch; answered before the markers are written
            let mut next = e.successor(now_ms);
            next.state = if commit { TxnState::PrepareCommit } else { TxnState::PrepareAbort };
            next.next_producer_id = NO_PRODUCER_ID;
            next.txn_version = TV_0;
            let effects = vec![markers(&next, commit)];
            let ids = next.pid_epoch();
            Ok(Decision::write(next, Ok(ids), effects))
        }
        // idempotent retry of a completed EndTxn: no write
        (TxnState::CompleteCommit, true) | (TxnState::CompleteAbort, false) => Ok(Decision::reply(e.pid_epoch())),
        (TxnState::PrepareCommit, true) | (TxnState::PrepareAbort, false) => Err(TxnError::ConcurrentTransactions),
        (TxnState::PrepareEpochFence | TxnState::Dead, _) => Err(TxnError::UnknownServerError),
        // opposite result in Prepare*/Complete*, or Empty
        _ => Err(TxnError::InvalidTxnState),
    }
}

/// eos-rules 37-40.
fn end_txn_tv2(
    e: &TxnEntry,
    producer_id: i64,
    epoch: i16,
    commit: bool,
    now_ms: i64,
    alloc: &mut dyn FnMut() -> i64,
) -> Result<Decision, TxnError> {
    // eos-rules 40: pending first (KAFKA-18464), and every TV2 Prepare* is 51 (trunk)
    if e.pending || e.state.is_prepare() {
        return Err(TxnError::ConcurrentTransactions);
    }
    let current = e.producer_epoch;
    // eos-rules 39: the client retries (oldPid, 32766) after an overflow rotation
    let retry_on_overflow = e.prev_producer_id == producer_id && epoch == i16::MAX - 1 && current == 0;
    // ... or (pid, E-1) after the bump
    let retry_on_bump = i32::from(current) == i32::from(epoch) + 1;
    if e.producer_id != producer_id && !retry_on_overflow {
        return Err(TxnError::InvalidProducerIdMapping); // 35
    }
    let valid_epoch = match e.state {
        TxnState::CompleteCommit | TxnState::CompleteAbort => retry_on_bump || retry_on_overflow || epoch == current,
        _ => epoch == current,
    };
    if !valid_epoch {
        return Err(TxnError::ProducerFenced);
    }
    let retry = retry_on_bump || retry_on_overflow;
    match (e.state, commit) {
        (TxnState::Ongoing, _) => prepare_tv2(e, commit, false, now_ms, alloc),
        // retry of the completed EndTxn: NONE with the live ids, no write
        (TxnState::CompleteCommit, true) | (TxnState::CompleteAbort, false) if retry => {
            Ok(Decision::reply(e.pid_epoch()))
        }
        // empty abort at the current epoch: bump, no partitions
        (TxnState::Empty | TxnState::CompleteCommit | TxnState::CompleteAbort, false) if !retry => {
            prepare_tv2(e, false, true, now_ms, alloc)
        }
        (TxnState::PrepareEpochFence | TxnState::Dead, _) => Err(TxnError::UnknownServerError),
        _ => Err(TxnError::InvalidTxnState),
    }
}

/// TV2 PrepareX: epoch E+1 with last_epoch E (eos-rules 37); at an exhausted epoch allocate
/// next_producer_id and answer (newPid, 0) (eos-rules 38). The answer is the post-completion
/// ids (KAFKA-18660).
fn prepare_tv2(
    e: &TxnEntry,
    commit: bool,
    no_partition_added: bool,
    now_ms: i64,
    alloc: &mut dyn FnMut() -> i64,
) -> Result<Decision, TxnError> {
    if e.producer_epoch == i16::MAX && commit {
        return Err(TxnError::UnknownServerError); // AK would overflow; unreachable
    }
    let mut next = e.successor(now_ms);
    next.state = if commit { TxnState::PrepareCommit } else { TxnState::PrepareAbort };
    next.next_producer_id = if is_epoch_exhausted(e.producer_epoch) { alloc() } else { NO_PRODUCER_ID };
    // an abort at i16::MAX stays there (KAFKA-20090 recovery)
    next.producer_epoch = e.producer_epoch.saturating_add(1);
    next.last_producer_epoch = e.producer_epoch;
    if no_partition_added {
        next.txn_start_ms = now_ms;
    }
    next.txn_version = TV_2;
    let effects = vec![markers(&next, commit)];
    let ids = next.after_completion();
    Ok(Decision::write(next, Ok(ids), effects))
}
