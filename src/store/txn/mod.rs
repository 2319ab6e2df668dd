//! Transaction-coordinator state machine: the functional core of the TxnCoordinator
//! actor (eos-rules sections A, D, E, H). No I/O and no clocks: every function takes the
//! current entry (`None` for an unknown transactional id), the request and `now_ms`, and
//! returns a [`Decision`]: the entry to persist, the answer, and the side effects.
//!
//! One file per Kafka API or concept: [`init_producer_id`], [`add_partitions`], [`end_txn`],
//! [`markers`] (the marker phase), [`timeout`] (reaper and expiry), [`verification`] (KIP-890
//! answers as Produce / TxnOffsetCommit errors) and [`describe`] (DescribeTransactions /
//! ListTransactions views). The persistence contract below is implemented by this module's
//! [`in_flight`], [`after_write`] and [`write_failed`].
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
//!    [`completion`]'s decision the same way (eos-rules 41).
//! 4. Entries are serialized without `pending`; after a restart call `settled()` on each
//!    loaded entry and resend the markers of Prepare* entries.

pub mod add_partitions;
pub mod describe;
pub mod end_txn;
pub mod init_producer_id;
pub mod markers;
pub mod parking;
pub mod peer_markers;
pub mod timeout;
pub mod verification;

#[cfg(test)]
mod tests;

pub use add_partitions::{add_offsets, add_partitions, add_partitions_authorization, unknown_partitions_precheck};
pub use describe::ListFilter;
pub use end_txn::end_txn;
pub use init_producer_id::{idempotent_init_producer_id, init_producer_id, init_producer_id_authorization};
pub use markers::{
    complete, completion, marker_outcome, marker_phase_stuck, marker_target, next_marker_backoff_ms, resend_markers,
    schedule, write_txn_markers_authorization, MarkerBatch, MarkerOutcome, MarkerTarget, MARKER_FIRST_BACKOFF_MS,
};
pub use peer_markers::{
    marker_request_version, peer_code_is_expected, peer_marker_outcome, peer_send_code, PeerSendError,
    MAX_MARKERS_VERSION, MIN_MARKERS_VERSION, PEER_REQUEST_TIMEOUT_MS,
};
pub use timeout::{expire, is_expired, is_timed_out, needs_reaping, timeout_abort};
pub use verification::{produce_verification_error, txn_offset_commit_error, verify_partitions, ImplicitAddRetry};

use crate::error_code::ResponseError;
use serde::{Deserialize, Serialize};
use std::collections::BTreeSet;

pub const NO_PRODUCER_ID: i64 = -1;
pub const NO_PRODUCER_EPOCH: i16 = -1;
/// Client transaction versions recorded on an entry: legacy (TV0/TV1) and KIP-890 part 2.
pub const TV_0: i8 = 0;
pub const TV_2: i8 = 2;

/// The transaction version a request runs under, as Apache Kafka picks it per request (rule
/// book preamble): EndTxn v5+ is TV2 (KafkaApis.handleEndTxnRequest)...
pub fn end_txn_is_tv2(request_version: i16) -> bool {
    request_version >= 5
}

/// eos-rules 30: AddPartitionsToTxn v0-3 carry one client's transaction; v4+ are sent by
/// brokers and carry a batch of transactions, each with VerifyOnly (with no authorizer, as
/// here, Kafka lets any principal send either).
pub fn add_partitions_is_broker_batch(request_version: i16) -> bool {
    request_version >= 4
}

/// ...and a broker's AddPartitionsToTxn v5+ with VerifyOnly=false is TV2's implicit add
/// (KafkaApis.handleAddPartitionsToTxnRequest); older adds are TV1.
pub fn add_partitions_txn_version(request_version: i16) -> i8 {
    if request_version >= 5 {
        TV_2
    } else {
        TV_0
    }
}
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

    /// A Dead entry being written is a tombstone: the key is removed (eos-rules 55).
    pub fn is_tombstone(&self) -> bool {
        self.state == TxnState::Dead
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

    /// The error a coordinator's wire code stands for (a peer's AddPartitionsToTxn answer). A
    /// code no coordinator decision gives is taken as NOT_COORDINATOR: retriable, so the caller
    /// asks again (after a metadata change it may reach the right broker).
    pub fn from_code(code: i16) -> Option<TxnError> {
        const ALL: [TxnError; 11] = [
            TxnError::UnknownServerError,
            TxnError::InvalidRequest,
            TxnError::InvalidProducerEpoch,
            TxnError::InvalidTxnState,
            TxnError::InvalidProducerIdMapping,
            TxnError::InvalidTransactionTimeout,
            TxnError::ConcurrentTransactions,
            TxnError::ProducerFenced,
            TxnError::TransactionAbortable,
            TxnError::NotCoordinator,
            TxnError::CoordinatorNotAvailable,
        ];
        if code == 0 {
            return None;
        }
        Some(ALL.into_iter().find(|e| e.code() == code).unwrap_or(TxnError::NotCoordinator))
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

/// Refuses a decision that would persist an unreserved producer id (-1 from a failed
/// allocation): NOT_COORDINATOR, nothing written (eos-rules 1/6: no answer needing an id that
/// is not durable).
pub fn refuse_unallocated(decision: Decision) -> Decision {
    if decision.write.as_ref().is_some_and(|w| w.producer_id < 0) {
        Decision::reject(TxnError::NotCoordinator)
    } else {
        decision
    }
}

/// Contract point 1: the in-memory entry while `written` is being persisted: the current
/// entry (or, for a new id, the written one) marked pending.
pub fn in_flight(current: Option<&TxnEntry>, written: &TxnEntry) -> TxnEntry {
    let mut e = current.unwrap_or(written).clone();
    e.pending = true;
    e
}

/// Contract point 2: the in-memory entry once `written` is durable; `None` for a tombstone
/// (eos-rules 55: the id is then unknown and its entry dropped).
pub fn after_write(written: TxnEntry) -> Option<TxnEntry> {
    if written.is_tombstone() {
        None
    } else {
        Some(written.settled())
    }
}

/// Contract point 2: a failed write keeps the previous entry (`None`: the id stays unknown),
/// settled, and the client gets the mapped error (eos-rules 6).
pub fn write_failed(previous: Option<TxnEntry>, failure: StateWriteFailure) -> (Option<TxnEntry>, TxnError) {
    (previous.map(TxnEntry::settled), state_write_error(failure))
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
