//! Transaction timeouts and transactional-id expiry (eos-rules 53-55): what the reaper
//! decides for one entry. The returning producer (54) needs no code of its own: the other
//! transitions see the bumped epoch.

use super::init_producer_id::fence_and_abort;
use super::{Decision, TxnEntry, TxnState};

/// eos-rules 53: Ongoing, nothing pending, and txn_start + timeout < now.
pub fn is_timed_out(entry: &TxnEntry, now_ms: i64) -> bool {
    !entry.pending
        && entry.state == TxnState::Ongoing
        && entry.txn_start_ms.saturating_add(i64::from(entry.timeout_ms)) < now_ms
}

/// The reaper's abort (eos-rules 53): `None` if the entry is not timed out. Same fence and
/// abort as rule 13, with the cluster's TV; the answer is the post-completion ids.
pub fn timeout_abort(
    entry: &TxnEntry,
    cluster_tv2: bool,
    now_ms: i64,
    alloc: &mut dyn FnMut() -> i64,
) -> Option<Decision> {
    if !is_timed_out(entry, now_ms) {
        return None;
    }
    let (aborting, effects) = fence_and_abort(entry, cluster_tv2, now_ms, alloc);
    let ids = aborting.after_completion();
    Some(Decision::write(aborting, Ok(ids), effects))
}

/// eos-rules 55: idle in Empty/Complete* for `expiration_ms` (transactional.id.expiration.ms)
/// with nothing pending. The actor then writes the tombstone and drops the entry.
pub fn is_expired(entry: &TxnEntry, now_ms: i64, expiration_ms: i64) -> bool {
    !entry.pending && entry.state.expiration_allowed() && entry.last_update_ms <= now_ms.saturating_sub(expiration_ms)
}

/// The reaper's selection (eos-rules 53, 55): an entry to look at again on its own tick.
pub fn needs_reaping(entry: &TxnEntry, now_ms: i64, expiration_ms: i64) -> bool {
    is_timed_out(entry, now_ms) || is_expired(entry, now_ms, expiration_ms)
}

/// eos-rules 55: the tombstone of an expired id (`None` if it is not expired). It is written
/// as a Dead entry, which the actor removes, so the id then starts afresh (eos-rules 7).
pub fn expire(entry: &TxnEntry, now_ms: i64, expiration_ms: i64) -> Option<Decision> {
    if !is_expired(entry, now_ms, expiration_ms) {
        return None;
    }
    let mut dead = entry.clone();
    dead.state = TxnState::Dead;
    dead.pending = false;
    Some(Decision::write(dead, Ok(entry.pid_epoch()), Vec::new()))
}
