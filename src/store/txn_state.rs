//! Transaction-coordinator state machine: the functional core of the TxnCoordinator
//! actor (eos-rules sections A, D, E, H). No I/O and no clocks: every function takes the
//! current entry (`None` for an unknown transactional id), the request and `now_ms`, and
//! returns a [`Decision`]: the entry to persist, the answer, and the side effects.
//!
//! Contract with the actor (one message at a time, persistence asynchronous):
//! 1. If `Decision::write` is set, set `pending = true` on the in-memory entry, persist and
//!    flush the written entry, then answer `Decision::answer`, then run `Decision::effects`.
//!    Without a write, answer at once.
//! 2. When the write is durable, replace the in-memory entry by `written.settled()`. When it
//!    fails, keep the old entry, clear `pending` and answer the mapped append error
//!    (eos-rules 6). The retry then decides the very same transition again, which is how
//!    "no double bump after a failed fence write" (KAFKA-9666) holds here.
//! 3. `pending` is AK's `pendingTransitionInProgress`. AK decides CompleteX (prepareComplete)
//!    as soon as PrepareX is durable, and again when it loads a Prepare* entry, so the whole
//!    marker phase counts as pending: `settled()` keeps `pending` set on Prepare* entries.
//!    Once every marker is acknowledged (an empty partition set means none to send), persist
//!    [`complete`]'s entry the same way (eos-rules 41).
//! 4. Entries are serialized without `pending`; after a restart call `settled()` on each
//!    loaded entry and resend the markers of Prepare* entries.

use crate::error_code::ResponseError;
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet};

pub const NO_PRODUCER_ID: i64 = -1;
pub const NO_PRODUCER_EPOCH: i16 = -1;
/// Client transaction versions recorded on an entry: legacy (TV0/TV1) and KIP-890 part 2.
pub const TV_0: i8 = 0;
pub const TV_2: i8 = 2;
pub const CONSUMER_OFFSETS_TOPIC: &str = "__consumer_offsets";

/// (topic, partition).
pub type TopicPartition = (String, i32);

/// AK `TransactionMetadata.isEpochExhausted`: the last epoch is kept back for fencing.
pub fn is_epoch_exhausted(epoch: i16) -> bool {
    epoch >= i16::MAX - 1
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum TxnState {
    Empty,
    Ongoing,
    PrepareCommit,
    PrepareAbort,
    CompleteCommit,
    CompleteAbort,
    /// Never persisted: AK goes straight on to PrepareAbort (eos-rules 13).
    PrepareEpochFence,
    /// Tombstone being written (eos-rules 55); a settled Dead entry is an unknown id.
    Dead,
}

impl TxnState {
    pub fn is_prepare(self) -> bool {
        matches!(self, TxnState::PrepareCommit | TxnState::PrepareAbort)
    }
    /// AK `TransactionState.isExpirationAllowed`.
    pub fn expiration_allowed(self) -> bool {
        matches!(self, TxnState::Empty | TxnState::CompleteCommit | TxnState::CompleteAbort)
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PidEpoch {
    pub producer_id: i64,
    pub epoch: i16,
}

impl PidEpoch {
    pub fn new(producer_id: i64, epoch: i16) -> Self {
        PidEpoch { producer_id, epoch }
    }
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TxnEntry {
    pub transactional_id: String,
    pub producer_id: i64,
    pub producer_epoch: i16,
    pub last_producer_epoch: i16,
    /// AK prevProducerId: the producer id before the last transition (every transition sets
    /// it), so it differs from `producer_id` only right after a rotation. Persisted, unlike AK
    /// (KAFKA-20310), so the retry of a lost rotation survives a restart.
    pub prev_producer_id: i64,
    /// TV2 epoch overflow: the pid the entry moves to on completion (eos-rules 38).
    pub next_producer_id: i64,
    pub state: TxnState,
    pub partitions: BTreeSet<TopicPartition>,
    pub timeout_ms: i32,
    /// -1 until the first partition is added; kept through CompleteX as AK does.
    pub txn_start_ms: i64,
    pub last_update_ms: i64,
    pub txn_version: i8,
    /// Runtime only, see the module doc.
    #[serde(skip)]
    pub pending: bool,
}

impl TxnEntry {
    pub fn pid_epoch(&self) -> PidEpoch {
        PidEpoch::new(self.producer_id, self.producer_epoch)
    }

    /// The in-memory entry once this entry is durable (or freshly loaded): Prepare* stays
    /// pending until its CompleteX is durable (module doc, point 3).
    pub fn settled(mut self) -> Self {
        self.pending = self.state.is_prepare();
        self
    }

    /// Copy for a new transition: AK's TxnTransitMetadata takes prevProducerId from the
    /// current producer id and stamps the update time.
    fn successor(&self, now_ms: i64) -> TxnEntry {
        let mut next = self.clone();
        next.prev_producer_id = self.producer_id;
        next.last_update_ms = now_ms;
        next.pending = false;
        next
    }

    /// (pid, epoch) once this Prepare* entry completes (TV2 overflow moves to next pid).
    fn after_completion(&self) -> PidEpoch {
        if self.next_producer_id != NO_PRODUCER_ID {
            PidEpoch::new(self.next_producer_id, 0)
        } else {
            self.pid_epoch()
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum TxnError {
    /// AK hits an IllegalStateException here (a state that is never reached).
    #[error("UNKNOWN_SERVER_ERROR: illegal transaction state")]
    UnknownServerError,
    #[error("INVALID_REQUEST")]
    InvalidRequest,
    #[error("INVALID_PRODUCER_EPOCH")]
    InvalidProducerEpoch,
    #[error("INVALID_TXN_STATE")]
    InvalidTxnState,
    #[error("INVALID_PRODUCER_ID_MAPPING")]
    InvalidProducerIdMapping,
    #[error("INVALID_TRANSACTION_TIMEOUT")]
    InvalidTransactionTimeout,
    #[error("CONCURRENT_TRANSACTIONS")]
    ConcurrentTransactions,
    #[error("PRODUCER_FENCED")]
    ProducerFenced,
    #[error("TRANSACTION_ABORTABLE")]
    TransactionAbortable,
    /// eos-rules 6: the coordinator's state could not be written (storage failure).
    #[error("NOT_COORDINATOR")]
    NotCoordinator,
    /// eos-rules 6: the state log is unavailable for a while (retriable).
    #[error("COORDINATOR_NOT_AVAILABLE")]
    CoordinatorNotAvailable,
}

/// Coordinator APIs whose PRODUCER_FENCED is downgraded for old clients (eos-rules 60).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CoordinatorApi {
    InitProducerId,
    AddPartitionsToTxn,
    AddOffsetsToTxn,
    EndTxn,
}

impl From<TxnError> for ResponseError {
    fn from(e: TxnError) -> ResponseError {
        e.error()
    }
}

impl TxnError {
    /// The Kafka error this is (`Errors.java`).
    pub fn error(self) -> ResponseError {
        match self {
            TxnError::UnknownServerError => ResponseError::UnknownServerError,
            TxnError::InvalidRequest => ResponseError::InvalidRequest,
            TxnError::InvalidProducerEpoch => ResponseError::InvalidProducerEpoch,
            TxnError::InvalidTxnState => ResponseError::InvalidTxnState,
            TxnError::InvalidProducerIdMapping => ResponseError::InvalidProducerIdMapping,
            TxnError::InvalidTransactionTimeout => ResponseError::InvalidTransactionTimeout,
            TxnError::ConcurrentTransactions => ResponseError::ConcurrentTransactions,
            TxnError::ProducerFenced => ResponseError::ProducerFenced,
            TxnError::TransactionAbortable => ResponseError::TransactionAbortable,
            TxnError::NotCoordinator => ResponseError::NotCoordinator,
            TxnError::CoordinatorNotAvailable => ResponseError::CoordinatorNotAvailable,
        }
    }

    /// The wire code.
    pub fn code(self) -> i16 {
        self.error().code()
    }

    /// eos-rules 60: PRODUCER_FENCED becomes INVALID_PRODUCER_EPOCH for InitProducerId v<4
    /// and EndTxn / AddPartitionsToTxn / AddOffsetsToTxn v<2.
    pub fn for_version(self, api: CoordinatorApi, version: i16) -> TxnError {
        let first_with_fenced = match api {
            CoordinatorApi::InitProducerId => 4,
            _ => 2,
        };
        if self == TxnError::ProducerFenced && version < first_with_fenced {
            TxnError::InvalidProducerEpoch
        } else {
            self
        }
    }
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Effect {
    /// Raise (pid, epoch) on every partition leader and in the outbound fence file.
    Fence { producer_id: i64, epoch: i16 },
    /// Send markers to every partition (eos-rules 41, 45), then call [`complete`].
    WriteMarkers { producer_id: i64, epoch: i16, commit: bool, partitions: BTreeSet<TopicPartition>, txn_version: i8 },
}

/// NONE with the ids to return, or the error.
pub type Answer = Result<PidEpoch, TxnError>;

#[derive(Clone, Debug, PartialEq)]
pub struct Decision {
    /// Entry to persist and flush before answering; `None`: nothing to write.
    pub write: Option<TxnEntry>,
    /// What to answer once `write` is durable.
    pub answer: Answer,
    /// To run after the write is durable, in order.
    pub effects: Vec<Effect>,
}

impl Decision {
    fn reject(error: TxnError) -> Decision {
        Decision { write: None, answer: Err(error), effects: Vec::new() }
    }
    fn reply(ids: PidEpoch) -> Decision {
        Decision { write: None, answer: Ok(ids), effects: Vec::new() }
    }
    fn write(entry: TxnEntry, answer: Answer, effects: Vec<Effect>) -> Decision {
        Decision { write: Some(entry), answer, effects }
    }

    /// ProducerId/ProducerEpoch for the response: the live ids on NONE (E9: EndTxn v5 and
    /// InitProducerId), -1/-1 on any error (eos-rules 12, 35).
    pub fn response_ids(&self) -> (i64, i16) {
        match self.answer {
            Ok(ids) => (ids.producer_id, ids.epoch),
            Err(_) => (NO_PRODUCER_ID, NO_PRODUCER_EPOCH),
        }
    }
}

/// A settled Dead entry has been removed (eos-rules 55): treat it as unknown.
fn live(entry: Option<&TxnEntry>) -> Option<&TxnEntry> {
    entry.filter(|e| e.pending || e.state != TxnState::Dead)
}

fn markers(entry: &TxnEntry, commit: bool) -> Effect {
    Effect::WriteMarkers {
        producer_id: entry.producer_id,
        epoch: entry.producer_epoch,
        commit,
        partitions: entry.partitions.clone(),
        txn_version: entry.txn_version,
    }
}

// ---------------------------------------------------------------------------------------
// InitProducerId (eos-rules 3-13)
// ---------------------------------------------------------------------------------------

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
fn fence_and_abort(
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

// ---------------------------------------------------------------------------------------
// AddPartitionsToTxn / AddOffsetsToTxn (eos-rules 32-34)
// ---------------------------------------------------------------------------------------

/// AddPartitionsToTxn (VerifyOnly=false) in AK 4.0 order; the single answer applies to every
/// partition. `txn_version`: TV_2 for the broker's v5 implicit add, else TV_0.
pub fn add_partitions(
    entry: Option<&TxnEntry>,
    transactional_id: &str,
    producer_id: i64,
    epoch: i16,
    partitions: &BTreeSet<TopicPartition>,
    now_ms: i64,
    txn_version: i8,
) -> Decision {
    add_checked(entry, transactional_id, producer_id, epoch)
        .map(|e| add_to(e, partitions, now_ms, txn_version))
        .unwrap_or_else(Decision::reject)
}

/// eos-rules 32.1-32.3, in AK 4.0 order.
fn add_checked<'a>(
    entry: Option<&'a TxnEntry>,
    transactional_id: &str,
    producer_id: i64,
    epoch: i16,
) -> Result<&'a TxnEntry, TxnError> {
    if transactional_id.is_empty() {
        return Err(TxnError::InvalidRequest);
    }
    let e = live(entry).ok_or(TxnError::InvalidProducerIdMapping)?;
    // 32.1: pending first (KAFKA-18660: no self-fencing across a TV2 rotation)
    if e.pending {
        return Err(TxnError::ConcurrentTransactions);
    }
    if e.producer_id != producer_id {
        return Err(TxnError::InvalidProducerIdMapping); // 32.2
    }
    if e.producer_epoch != epoch {
        return Err(TxnError::ProducerFenced); // 32.3
    }
    Ok(e)
}

fn add_to(e: &TxnEntry, partitions: &BTreeSet<TopicPartition>, now_ms: i64, txn_version: i8) -> Decision {
    match e.state {
        TxnState::PrepareCommit | TxnState::PrepareAbort => {
            Decision::reject(TxnError::ConcurrentTransactions) // 32.4
        }
        // 32.5: nothing new, no write
        TxnState::Ongoing if partitions.is_subset(&e.partitions) => Decision::reply(e.pid_epoch()),
        TxnState::Empty | TxnState::Ongoing | TxnState::CompleteCommit | TxnState::CompleteAbort => {
            // 32.6: union, Ongoing; the clock starts at the first add
            let mut next = e.successor(now_ms);
            if e.state != TxnState::Ongoing {
                next.txn_start_ms = now_ms;
            }
            next.state = TxnState::Ongoing;
            next.partitions.extend(partitions.iter().cloned());
            next.txn_version = txn_version;
            let ids = next.pid_epoch();
            Decision::write(next, Ok(ids), Vec::new())
        }
        TxnState::PrepareEpochFence | TxnState::Dead => Decision::reject(TxnError::UnknownServerError),
    }
}

/// AddOffsetsToTxn: rule 32 for the one `__consumer_offsets` partition of the group, which
/// the caller computes (eos-rules 34). TV2 clients never send it, so TV_0.
pub fn add_offsets(
    entry: Option<&TxnEntry>,
    transactional_id: &str,
    producer_id: i64,
    epoch: i16,
    offsets_partition: i32,
    now_ms: i64,
) -> Decision {
    let partitions = BTreeSet::from([(CONSUMER_OFFSETS_TOPIC.to_string(), offsets_partition)]);
    add_partitions(entry, transactional_id, producer_id, epoch, &partitions, now_ms, TV_0)
}

/// AddPartitionsToTxn v4+ with VerifyOnly=true (eos-rules 33): no pending check; one error for
/// all partitions, else NONE if the partition is in the transaction, TRANSACTION_ABORTABLE if not.
pub fn verify_partitions(
    entry: Option<&TxnEntry>,
    transactional_id: &str,
    producer_id: i64,
    epoch: i16,
    partitions: &BTreeSet<TopicPartition>,
) -> BTreeMap<TopicPartition, Result<(), TxnError>> {
    let common = if transactional_id.is_empty() {
        Err(TxnError::InvalidRequest)
    } else {
        match live(entry) {
            None => Err(TxnError::InvalidProducerIdMapping),
            Some(e) if e.producer_id != producer_id => Err(TxnError::InvalidProducerIdMapping),
            Some(e) if e.producer_epoch != epoch => Err(TxnError::ProducerFenced),
            Some(e) if e.state.is_prepare() => Err(TxnError::ConcurrentTransactions),
            Some(e) => Ok(e),
        }
    };
    partitions
        .iter()
        .map(|tp| {
            let result = match common {
                Err(error) => Err(error),
                Ok(e) if e.partitions.contains(tp) => Ok(()),
                Ok(_) => Err(TxnError::TransactionAbortable),
            };
            (tp.clone(), result)
        })
        .collect()
}

// ---------------------------------------------------------------------------------------
// EndTxn (eos-rules 35-40) and completion (41)
// ---------------------------------------------------------------------------------------

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

// ---------------------------------------------------------------------------------------
// Timeouts and expiry (eos-rules 53-55)
// ---------------------------------------------------------------------------------------

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

/// Why writing a transition to the coordinator's state log failed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StateWriteFailure {
    /// The log is there but cannot take the write now (Kafka: UNKNOWN_TOPIC_OR_PARTITION,
    /// NOT_ENOUGH_REPLICAS, REQUEST_TIMED_OUT).
    Unavailable,
    /// The log is not ours or its disk failed (Kafka: NOT_LEADER_OR_FOLLOWER,
    /// KAFKA_STORAGE_ERROR; kaas: a sled write or flush error).
    Storage,
    /// The record is too large (Kafka: MESSAGE_TOO_LARGE, RECORD_LIST_TOO_LARGE).
    TooLarge,
}

/// eos-rules 6: the error a client gets when its transition could not be written; the same
/// mapping for InitProducerId, AddPartitionsToTxn, AddOffsetsToTxn and EndTxn.
pub fn state_write_error(failure: StateWriteFailure) -> TxnError {
    match failure {
        StateWriteFailure::Unavailable => TxnError::CoordinatorNotAvailable,
        StateWriteFailure::Storage => TxnError::NotCoordinator,
        StateWriteFailure::TooLarge => TxnError::UnknownServerError,
    }
}

/// eos-rules 27/29: the coordinator's answer to a partition leader's verification (TV1) or
/// implicit add (TV2, Produce v12, after its CONCURRENT_TRANSACTIONS retries) as the Produce error.
pub fn produce_verification_error(error: TxnError, produce_version: i16) -> i16 {
    match error {
        TxnError::ProducerFenced => ResponseError::InvalidProducerEpoch.code(),
        TxnError::InvalidProducerIdMapping => ResponseError::InvalidProducerIdMapping.code(),
        TxnError::TransactionAbortable if produce_version >= 11 => ResponseError::TransactionAbortable.code(),
        TxnError::TransactionAbortable => ResponseError::InvalidTxnState.code(),
        // eos-rules 29: TV2 returns CONCURRENT_TRANSACTIONS unmapped once its retries are spent.
        TxnError::ConcurrentTransactions if produce_version >= 12 => ResponseError::ConcurrentTransactions.code(),
        // Retriable for the client: NOT_ENOUGH_REPLICAS.
        TxnError::ConcurrentTransactions | TxnError::NotCoordinator | TxnError::CoordinatorNotAvailable => {
            ResponseError::NotEnoughReplicas.code()
        }
        e => e.code(),
    }
}

/// eos-rules 58: the offsets partition's membership check of TxnOffsetCommit as its error.
pub fn txn_offset_commit_error(error: TxnError, version: i16) -> i16 {
    match error {
        TxnError::TransactionAbortable if version >= 4 => ResponseError::TransactionAbortable.code(),
        TxnError::TransactionAbortable => ResponseError::InvalidTxnState.code(),
        TxnError::ProducerFenced => ResponseError::InvalidProducerEpoch.code(),
        TxnError::NotCoordinator => ResponseError::CoordinatorNotAvailable.code(),
        e => e.code(),
    }
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

pub fn marker_outcome(code: i16) -> MarkerOutcome {
    match code {
        0 => MarkerOutcome::Written,
        3 => MarkerOutcome::Dropped,
        47 | 52 => MarkerOutcome::Stuck,
        _ => MarkerOutcome::Retry,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use TxnError::*;
    use TxnState::*;

    const NOW: i64 = 1_000_000;
    const MAX_TIMEOUT: i32 = 900_000;
    const PID: i64 = 100;
    const NEW_PID: i64 = 200; // every allocation in these tests
    const TOP: i16 = i16::MAX;
    type Claim = Option<(i64, i16)>;

    fn tp(topic: &str, partition: i32) -> TopicPartition {
        (topic.to_string(), partition)
    }
    fn set(items: &[(&str, i32)]) -> BTreeSet<TopicPartition> {
        items.iter().map(|(t, p)| tp(t, *p)).collect()
    }
    /// A settled entry; Ongoing/Prepare* hold partition a-0 and started at 1000.
    fn entry(state: TxnState, pid: i64, epoch: i16) -> TxnEntry {
        let open = matches!(state, Ongoing | PrepareCommit | PrepareAbort);
        TxnEntry {
            transactional_id: "tx".into(),
            producer_id: pid,
            producer_epoch: epoch,
            last_producer_epoch: NO_PRODUCER_EPOCH,
            prev_producer_id: pid,
            next_producer_id: NO_PRODUCER_ID,
            state,
            partitions: if open { set(&[("a", 0)]) } else { BTreeSet::new() },
            timeout_ms: 60_000,
            txn_start_ms: if open { 1_000 } else { -1 },
            last_update_ms: 1_000,
            txn_version: TV_0,
            pending: false,
        }
    }
    fn with_last(mut e: TxnEntry, last: i16) -> TxnEntry {
        e.last_producer_epoch = last;
        e
    }
    fn pending(mut e: TxnEntry) -> TxnEntry {
        e.pending = true;
        e
    }
    fn init_with(e: Option<&TxnEntry>, timeout: i32, claim: Claim, tv2: bool) -> Decision {
        let mut alloc = || NEW_PID;
        init_producer_id(e, "tx", timeout, claim, MAX_TIMEOUT, tv2, NOW, &mut alloc)
    }
    fn init(e: &TxnEntry, claim: Claim) -> Decision {
        init_with(Some(e), 60_000, claim, false)
    }
    fn init_tv2(e: &TxnEntry, claim: Claim) -> Decision {
        init_with(Some(e), 60_000, claim, true)
    }
    fn end(e: &TxnEntry, pid: i64, epoch: i16, commit: bool, tv2: bool) -> Decision {
        end_txn(Some(e), "tx", pid, epoch, commit, tv2, NOW, &mut || NEW_PID)
    }
    fn add(e: &TxnEntry, pid: i64, epoch: i16) -> Decision {
        add_partitions(Some(e), "tx", pid, epoch, &set(&[("b", 1)]), NOW, TV_0)
    }
    fn reap(e: &TxnEntry, tv2: bool, now_ms: i64) -> Option<Decision> {
        timeout_abort(e, tv2, now_ms, &mut || NEW_PID)
    }
    /// The in-memory entry after the decision's write is durable.
    fn applied(d: &Decision) -> TxnEntry {
        d.write.clone().expect("decision writes").settled()
    }
    fn completed(e: &TxnEntry) -> TxnEntry {
        complete(e, NOW).expect("prepare state").settled()
    }
    fn res(d: &Decision) -> Result<(i64, i16), TxnError> {
        d.answer.map(|ids| (ids.producer_id, ids.epoch))
    }
    fn ok(d: &Decision) -> (i64, i16) {
        res(d).expect("NONE answer")
    }
    fn rejected(d: &Decision) -> TxnError {
        assert!(d.write.is_none() && d.effects.is_empty(), "writes nothing: {d:?}");
        d.answer.expect_err("error answer")
    }
    /// (state, pid, epoch)
    fn st(e: &TxnEntry) -> (TxnState, i64, i16) {
        (e.state, e.producer_id, e.producer_epoch)
    }
    /// (last epoch, prev pid, next pid)
    fn lpn(e: &TxnEntry) -> (i16, i64, i64) {
        (e.last_producer_epoch, e.prev_producer_id, e.next_producer_id)
    }
    fn fence(producer_id: i64, epoch: i16) -> Effect {
        Effect::Fence { producer_id, epoch }
    }
    /// (pid, epoch, commit, txn_version, partition count) of the decision's markers.
    fn marker(d: &Decision) -> (i64, i16, bool, i8, usize) {
        let found = d.effects.iter().find_map(|effect| match effect {
            Effect::WriteMarkers { producer_id, epoch, commit, partitions, txn_version } => {
                Some((*producer_id, *epoch, *commit, *txn_version, partitions.len()))
            }
            Effect::Fence { .. } => None,
        });
        found.expect("markers")
    }

    #[test]
    fn idempotent_path_ignores_a_claim() {
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
    fn rule_06_failed_state_write_maps_like_kafka() {
        assert_eq!(state_write_error(StateWriteFailure::Unavailable).code(), 15);
        assert_eq!(state_write_error(StateWriteFailure::Storage).code(), 16);
        assert_eq!(state_write_error(StateWriteFailure::TooLarge).code(), -1);
    }

    #[test]
    fn rule_27_verification_answers_become_produce_errors() {
        assert_eq!(produce_verification_error(ProducerFenced, 9), 47);
        assert_eq!(produce_verification_error(InvalidProducerIdMapping, 9), 49);
        assert_eq!(produce_verification_error(TransactionAbortable, 10), 48);
        assert_eq!(produce_verification_error(TransactionAbortable, 11), 120);
        assert_eq!(produce_verification_error(ConcurrentTransactions, 11), 19);
        assert_eq!(produce_verification_error(NotCoordinator, 11), 19);
    }

    #[test]
    fn rule_29_tv2_add_answers_become_produce_errors() {
        assert_eq!(produce_verification_error(ConcurrentTransactions, 12), 51);
        assert_eq!(produce_verification_error(ProducerFenced, 12), 47);
    }

    #[test]
    fn rule_58_txn_offset_commit_membership_errors() {
        assert_eq!(txn_offset_commit_error(TransactionAbortable, 3), 48);
        assert_eq!(txn_offset_commit_error(TransactionAbortable, 4), 120);
        assert_eq!(txn_offset_commit_error(ProducerFenced, 5), 47);
        assert_eq!(txn_offset_commit_error(InvalidProducerIdMapping, 2), 49);
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
    fn error_codes_match_kafka() {
        let codes = [
            (UnknownServerError, -1),
            (InvalidRequest, 42),
            (InvalidProducerEpoch, 47),
            (InvalidTxnState, 48),
            (InvalidProducerIdMapping, 49),
            (InvalidTransactionTimeout, 50),
            (ConcurrentTransactions, 51),
            (ProducerFenced, 90),
            (TransactionAbortable, 120),
        ];
        for (error, code) in codes {
            assert_eq!(error.code(), code, "{error}");
        }
    }

    // ----- seed tests (KIP-360) -----

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

    // ----- A. InitProducerId -----

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

    // ----- D. AddPartitionsToTxn / AddOffsetsToTxn -----

    #[test]
    fn rule_32_add_partitions_check_order() {
        let busy = pending(entry(Ongoing, PID, 5));
        assert_eq!(rejected(&add(&busy, NEW_PID, 0)), ConcurrentTransactions);
        let b1 = set(&[("b", 1)]);
        let d = add_partitions(None, "tx", PID, 5, &b1, NOW, TV_0);
        assert_eq!(rejected(&d), InvalidProducerIdMapping);
        let prepare = entry(PrepareCommit, PID, 5);
        let d = add(&prepare, PID + 1, 5);
        assert_eq!(rejected(&d), InvalidProducerIdMapping);
        assert_eq!(rejected(&add(&prepare, PID, 4)), ProducerFenced);
        assert_eq!(rejected(&add(&prepare, PID, 5)), ConcurrentTransactions);
        let d = add(&entry(PrepareAbort, PID, 5), PID, 5);
        assert_eq!(rejected(&d), ConcurrentTransactions);
        let d = add_partitions(Some(&prepare), "", PID, 5, &b1, NOW, TV_0);
        assert_eq!(rejected(&d), InvalidRequest);
    }

    #[test]
    fn rule_32_add_partitions_starts_and_extends_the_transaction() {
        let (a0, b1) = (set(&[("a", 0)]), set(&[("b", 1)]));
        for state in [Empty, CompleteCommit, CompleteAbort] {
            let e = entry(state, PID, 5);
            let d = add_partitions(Some(&e), "tx", PID, 5, &b1, NOW, TV_2);
            let n = applied(&d);
            assert_eq!((n.state, n.txn_start_ms, n.txn_version), (Ongoing, NOW, TV_2));
            assert_eq!(n.partitions, b1);
        }
        let ongoing = entry(Ongoing, PID, 5);
        let same = add_partitions(Some(&ongoing), "tx", PID, 5, &a0, NOW, TV_0);
        assert_eq!((ok(&same), same.write), ((PID, 5), None));
        let union = applied(&add(&ongoing, PID, 5));
        assert_eq!(union.txn_start_ms, 1_000);
        assert_eq!(union.partitions, set(&[("a", 0), ("b", 1)]));
    }

    #[test]
    fn rule_33_verify_only_reports_per_partition() {
        let asked = set(&[("a", 0), ("b", 1)]);
        let verify = |e: Option<&TxnEntry>, pid: i64, epoch: i16| {
            let r = verify_partitions(e, "tx", pid, epoch, &asked);
            r.into_values().collect::<Vec<_>>()
        };
        let both = |error: TxnError| vec![Err(error); 2];
        assert_eq!(verify(None, PID, 5), both(InvalidProducerIdMapping));
        let prepare = entry(PrepareCommit, PID, 5);
        let p = Some(&prepare);
        assert_eq!(verify(p, PID + 1, 5), both(InvalidProducerIdMapping));
        assert_eq!(verify(p, PID, 4), both(ProducerFenced));
        assert_eq!(verify(p, PID, 5), both(ConcurrentTransactions));
        let ongoing = pending(entry(Ongoing, PID, 5)); // no pending check
        let per_partition = verify(Some(&ongoing), PID, 5);
        assert_eq!(per_partition, vec![Ok(()), Err(TransactionAbortable)]);
    }

    #[test]
    fn rule_34_add_offsets_adds_the_consumer_offsets_partition() {
        let e = entry(Empty, PID, 5);
        let n = applied(&add_offsets(Some(&e), "tx", PID, 5, 7, NOW));
        assert_eq!((n.state, n.txn_version), (Ongoing, TV_0));
        assert_eq!(n.partitions, set(&[("__consumer_offsets", 7)]));
        let stale = rejected(&add_offsets(Some(&n), "tx", PID, 4, 7, NOW));
        let v1 = stale.for_version(CoordinatorApi::AddOffsetsToTxn, 1);
        assert_eq!(v1, InvalidProducerEpoch);
        assert_eq!(add_offsets(Some(&n), "tx", PID, 5, 7, NOW).write, None);
    }

    // ----- E. EndTxn -----

    #[test]
    fn rule_35_end_txn_generic_checks() {
        let e = entry(Ongoing, PID, 5);
        for tv2 in [false, true] {
            let d = end_txn(Some(&e), "", PID, 5, true, tv2, NOW, &mut || 1);
            assert_eq!(rejected(&d), InvalidRequest);
            assert_eq!(d.response_ids(), (-1, -1));
            let d = end_txn(None, "tx", PID, 5, true, tv2, NOW, &mut || 1);
            assert_eq!(rejected(&d), InvalidProducerIdMapping);
            let d = end(&e, PID + 1, 5, true, tv2);
            assert_eq!(rejected(&d), InvalidProducerIdMapping);
        }
    }

    #[test]
    fn rule_36_tv1_end_txn_table() {
        let ongoing = entry(Ongoing, PID, 5);
        for stale in [4, 6] {
            let d = end(&ongoing, PID, stale, true, false);
            assert_eq!(rejected(&d), ProducerFenced);
        }
        let d = end(&ongoing, PID, 5, true, false);
        let n = applied(&d);
        assert_eq!((st(&n), ok(&d)), ((PrepareCommit, PID, 5), (PID, 5)));
        assert_eq!(d.effects.len(), 1);
        assert_eq!(marker(&d), (PID, 5, true, TV_0, 1));
        // marker phase (pending): the epoch is checked before it
        assert_eq!(rejected(&end(&n, PID, 4, true, false)), ProducerFenced);
        let d = end(&n, PID, 5, false, false);
        assert_eq!(rejected(&d), ConcurrentTransactions);
        let table = [
            (CompleteCommit, true, Ok((PID, 5))),
            (CompleteAbort, false, Ok((PID, 5))),
            (PrepareCommit, true, Err(ConcurrentTransactions)),
            (PrepareAbort, false, Err(ConcurrentTransactions)),
            (PrepareCommit, false, Err(InvalidTxnState)),
            (PrepareAbort, true, Err(InvalidTxnState)),
            (CompleteCommit, false, Err(InvalidTxnState)),
            (CompleteAbort, true, Err(InvalidTxnState)),
            (Empty, false, Err(InvalidTxnState)),
            (Empty, true, Err(InvalidTxnState)),
        ];
        for (state, commit, expected) in table {
            let d = end(&entry(state, PID, 5), PID, 5, commit, false);
            let got = (res(&d), d.write.is_none());
            assert_eq!(got, (expected, true), "{state:?} {commit}");
        }
    }

    #[test]
    fn rule_37_tv2_end_txn_bumps_and_answers_the_new_epoch() {
        let d = end(&entry(Ongoing, PID, 5), PID, 5, true, true);
        let n = applied(&d);
        assert_eq!(st(&n), (PrepareCommit, PID, 6));
        assert_eq!((n.last_producer_epoch, n.txn_version), (5, TV_2));
        assert_eq!((ok(&d), d.response_ids()), ((PID, 6), (PID, 6)));
        assert_eq!(d.effects.len(), 1);
        assert_eq!(marker(&d), (PID, 6, true, TV_2, 1));
        assert_eq!(st(&completed(&n)), (CompleteCommit, PID, 6));
    }

    #[test]
    fn rule_38_tv2_epoch_overflow_rotates_on_completion() {
        let d = end(&entry(Ongoing, PID, 32766), PID, 32766, true, true);
        assert_eq!(ok(&d), (NEW_PID, 0));
        assert_eq!(marker(&d), (PID, TOP, true, TV_2, 1));
        let preparing = applied(&d);
        assert_eq!(st(&preparing), (PrepareCommit, PID, TOP));
        assert_eq!(lpn(&preparing), (32766, PID, NEW_PID));
        // the client moves on with (newPid, 0) first: retriable, not 49
        let early = add(&preparing, NEW_PID, 0);
        assert_eq!(rejected(&early), ConcurrentTransactions);
        let done = completed(&preparing);
        assert_eq!(st(&done), (CompleteCommit, NEW_PID, 0));
        assert_eq!(lpn(&done), (32766, PID, -1));
        let retry = end(&done, PID, 32766, true, true);
        assert_eq!((ok(&retry), retry.write), ((NEW_PID, 0), None));
        assert_eq!(ok(&add(&done, NEW_PID, 0)), (NEW_PID, 0));
    }

    #[test]
    fn rule_39_tv2_retry_table() {
        // (state at epoch 5, epoch sent, commit, expected answer, writes)
        let table = [
            (Empty, 4, false, Err(ProducerFenced), false),
            (Empty, 4, true, Err(ProducerFenced), false),
            (Empty, 5, false, Ok((PID, 6)), true),
            (Empty, 5, true, Err(InvalidTxnState), false),
            (CompleteAbort, 4, false, Ok((PID, 5)), false),
            (CompleteAbort, 5, false, Ok((PID, 6)), true),
            (CompleteAbort, 4, true, Err(InvalidTxnState), false),
            (CompleteAbort, 5, true, Err(InvalidTxnState), false),
            (CompleteCommit, 4, true, Ok((PID, 5)), false),
            (CompleteCommit, 4, false, Err(InvalidTxnState), false),
            (CompleteCommit, 5, false, Ok((PID, 6)), true),
            (CompleteCommit, 5, true, Err(InvalidTxnState), false),
            (CompleteCommit, 6, true, Err(ProducerFenced), false),
            (CompleteAbort, 3, false, Err(ProducerFenced), false),
        ];
        for (state, epoch, commit, expected, writes) in table {
            let d = end(&entry(state, PID, 5), PID, epoch, commit, true);
            let got = (res(&d), d.write.is_some());
            assert_eq!(got, (expected, writes), "{state:?} {epoch} {commit}");
        }
        // empty abort: bumped, no partitions, start = now, markers to nobody
        let d = end(&entry(CompleteCommit, PID, 5), PID, 5, false, true);
        let n = applied(&d);
        assert_eq!(st(&n), (PrepareAbort, PID, 6));
        assert_eq!((n.partitions.len(), n.txn_start_ms), (0, NOW));
        assert_eq!(marker(&d), (PID, 6, false, TV_2, 0));
    }

    #[test]
    fn rule_40_tv2_pending_or_prepare_is_concurrent() {
        let prepare = entry(PrepareCommit, PID, 6); // loaded, not pending
        let cases = [(PID, 5, true), (PID, 5, false), (PID, 6, true), (PID + 1, 9, true)];
        for (pid, epoch, commit) in cases {
            let d = end(&prepare, pid, epoch, commit, true);
            assert_eq!(rejected(&d), ConcurrentTransactions);
        }
        let busy = pending(entry(Ongoing, PID, 5));
        let d = end(&busy, PID, 2, true, true);
        assert_eq!(rejected(&d), ConcurrentTransactions);
        // TV1 keeps its table
        let d = end(&prepare, PID, 6, false, false);
        assert_eq!(rejected(&d), InvalidTxnState);
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
    fn rule_42_tv1_keeps_the_epoch_and_tv2_moves_it() {
        let ongoing = entry(Ongoing, PID, 5);
        let tv1 = completed(&applied(&end(&ongoing, PID, 5, true, false)));
        assert_eq!(ok(&add(&tv1, PID, 5)), (PID, 5));
        let tv2 = completed(&applied(&end(&ongoing, PID, 5, true, true)));
        assert_eq!(rejected(&add(&tv2, PID, 5)), ProducerFenced);
        assert_eq!(ok(&add(&tv2, PID, 6)), (PID, 6));
    }

    // ----- H. Timeouts and expiry -----

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

    #[test]
    fn rule_60_producer_fenced_downgrades_by_version() {
        use CoordinatorApi::*;
        let init_v3 = ProducerFenced.for_version(InitProducerId, 3);
        assert_eq!(init_v3, InvalidProducerEpoch);
        let init_v4 = ProducerFenced.for_version(InitProducerId, 4);
        assert_eq!(init_v4, ProducerFenced);
        for api in [AddPartitionsToTxn, AddOffsetsToTxn, EndTxn] {
            assert_eq!(ProducerFenced.for_version(api, 1).code(), 47);
            assert_eq!(ProducerFenced.for_version(api, 2).code(), 90);
        }
        let other = ConcurrentTransactions.for_version(EndTxn, 0);
        assert_eq!(other, ConcurrentTransactions);
    }
}
