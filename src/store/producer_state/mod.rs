//! Per-partition producer table: epochs, sequences and the last 5 batches of every producer id
//! (eos-rules 14-23, 26). Pure: no I/O, the partition actor feeds it headers and clocks.

use crate::error_code::ResponseError;
use std::collections::{BTreeMap, HashMap, VecDeque};

use serde::{Deserialize, Serialize};
use thiserror::Error;

use super::batch::{increment_sequence, BatchHeader};

/// eos-rules 19/21: PSE.NUM_BATCHES_TO_RETAIN.
pub const BATCHES_TO_RETAIN: usize = 5;
pub const NO_PRODUCER_EPOCH: i16 = -1;
pub const NO_SEQUENCE: i32 = -1;
/// Verifications in flight per partition; a verification lasts one coordinator round trip.
pub const MAX_VERIFICATIONS: usize = 10_000;

/// Why a batch was refused; each maps to exactly one Kafka error code.
#[derive(Debug, Error, Clone, PartialEq, Eq)]
pub enum ProducerStateError {
    #[error("out of order sequence: expected after {last_seq}, got {first_seq} (epoch {epoch})")]
    OutOfOrderSequence { epoch: i16, first_seq: i32, last_seq: i32 },
    #[error("producer epoch {got} is older than the current epoch {current}")]
    InvalidProducerEpoch { got: i16, current: i16 },
    #[error("invalid transaction state: {0}")]
    InvalidTxnState(&'static str),
    #[error("coordinator epoch {got} is older than {current}")]
    CoordinatorFenced { got: i32, current: i32 },
}

impl ProducerStateError {
    /// The Kafka error code Apache Kafka returns for this failure.
    pub fn error(&self) -> ResponseError {
        match self {
            ProducerStateError::OutOfOrderSequence { .. } => ResponseError::OutOfOrderSequenceNumber,
            ProducerStateError::InvalidProducerEpoch { .. } => ResponseError::InvalidProducerEpoch,
            ProducerStateError::InvalidTxnState(_) => ResponseError::InvalidTxnState,
            ProducerStateError::CoordinatorFenced { .. } => ResponseError::TransactionCoordinatorFenced,
        }
    }

    /// The wire code.
    pub fn code(&self) -> i16 {
        self.error().code()
    }
}

/// Metadata of one appended batch, kept to answer retries (eos-rules 19).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct BatchMetadata {
    pub first_seq: i32,
    pub last_seq: i32,
    pub first_offset: i64,
    pub last_offset: i64,
    pub timestamp: i64,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ProducerEntry {
    pub producer_id: i64,
    pub epoch: i16,
    pub batches: VecDeque<BatchMetadata>,
    /// First offset of the open transaction of this producer on this partition, if any.
    pub current_txn_first_offset: Option<i64>,
    pub coordinator_epoch: i32,
    /// Broker wall clock of the last write, for idle expiry (eos-rules 23).
    pub last_update_ms: i64,
}

impl ProducerEntry {
    fn new(producer_id: i64) -> Self {
        ProducerEntry {
            producer_id,
            epoch: NO_PRODUCER_EPOCH,
            batches: VecDeque::new(),
            current_txn_first_offset: None,
            coordinator_epoch: -1,
            last_update_ms: 0,
        }
    }

    fn last_seq(&self) -> i32 {
        self.batches.back().map(|b| b.last_seq).unwrap_or(NO_SEQUENCE)
    }

    fn find_duplicate(&self, h: &BatchHeader) -> Option<BatchMetadata> {
        if h.producer_epoch != self.epoch {
            return None;
        }
        let last_seq = h.last_sequence();
        self.batches.iter().find(|b| b.first_seq == h.base_sequence && b.last_seq == last_seq).copied()
    }
}

/// What the log should do with a checked batch.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AppendDecision {
    /// Append it; call `record_append` with the assigned offsets afterwards.
    Append,
    /// eos-rules 19: a retry of a cached batch: answer with its original offset, append nothing.
    Duplicate(BatchMetadata),
}

fn in_sequence(last_seq: i32, next_seq: i32) -> bool {
    next_seq as i64 == last_seq as i64 + 1 || (next_seq == 0 && last_seq == i32::MAX)
}

/// A transaction that ended on this partition (eos-rules 49).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct CompletedTxn {
    pub producer_id: i64,
    pub first_offset: i64,
    pub last_offset: i64,
    pub aborted: bool,
}

/// Transaction version of a marker: 0/1 legacy, 2+ strict (KIP-1228).
pub const TV2: i8 = 2;

/// How a transactional batch that opens a transaction on this partition was confirmed by the
/// coordinator (eos-rules 27-29).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verified {
    /// Not verified (plain batches, or a transaction already open here at this epoch).
    No,
    /// TV1: verified under this guard from `begin_verification`; a marker in between voids it.
    Guard(u64),
    /// TV2: added implicitly (Produce v12). Every transaction has its own epoch and the marker
    /// raised the partition's, so a late batch of an ended transaction fails the epoch check.
    Tv2Added,
}

/// A verification under way for a producer on this partition (Kafka's VerificationStateEntry,
/// eos-rules 28): its guard and the lowest sequence a batch that needed it carried. It lives
/// until a transactional batch or a marker of the producer is written here, or it expires.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Verification {
    guard: u64,
    lowest_seq: i32,
    epoch: i16,
    created_ms: i64,
    /// Made for a TV2 batch (Produce v12); fixed at creation, as Kafka's.
    supports_epoch_bump: bool,
}

impl Verification {
    /// eos-rules 28: a lower sequence at the same epoch lowers the bar; a higher epoch resets
    /// it (Kafka's VerificationStateEntry.maybeUpdateLowestSequenceAndEpoch).
    fn saw(&mut self, sequence: i32, epoch: i16) {
        if epoch == self.epoch && sequence < self.lowest_seq {
            self.lowest_seq = sequence;
        }
        if epoch > self.epoch {
            self.epoch = epoch;
            self.lowest_seq = sequence;
        }
    }
}

/// The epoch a coordinator fenced a producer to: batches of older epochs are refused here
/// (kaas's fence, stricter than Kafka on purpose: a zombie is refused everywhere at once, also
/// where the coordinator's verification would not be asked), but it is no producer state: the
/// producer's sequences and epoch here stay what its batches and markers made them, so where a
/// first batch may start is rule 15's to say, as for any producer, and markers are checked
/// against that state alone (46, 47), as in Kafka.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Fence {
    pub epoch: i16,
    pub fenced_ms: i64,
}

/// `ProducerStateTable::forgotten_up_to` when the table may lack the state of any producer id.
pub const FORGOT_ANY: i64 = i64::MAX;

fn forgot_any() -> i64 {
    FORGOT_ANY
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ProducerStateTable {
    producers: HashMap<i64, ProducerEntry>,
    /// eos-rules 15 (kaas): the highest producer id whose state this table dropped (expiry), -1
    /// when it dropped none, FORGOT_ANY when it may lack state it never saw go (rebuilt without
    /// the log's head, or read from a snapshot that predates this field). A producer id above it
    /// with no state here never wrote here. Ids come from blocks reserved in increasing order,
    /// so ids handed out after an expiry are mostly above it.
    #[serde(default = "forgot_any")]
    forgotten_up_to: i64,
    /// Fences of producers with no state here (see `Fence`).
    #[serde(default)]
    fences: HashMap<i64, Fence>,
    /// Verifications by producer id (eos-rules 28); in memory only, like Apache Kafka's.
    #[serde(skip)]
    verifications: HashMap<i64, Verification>,
    /// The same guards by age: any client can start a verification for any producer id, so
    /// beyond MAX_VERIFICATIONS the oldest (long finished or abandoned) is forgotten.
    #[serde(skip)]
    verifications_by_guard: BTreeMap<u64, i64>,
    #[serde(skip)]
    next_guard: u64,
}

impl Default for ProducerStateTable {
    /// The table of a log that has never held a record: it forgot nothing.
    fn default() -> Self {
        ProducerStateTable {
            producers: HashMap::new(),
            forgotten_up_to: -1,
            fences: HashMap::new(),
            verifications: HashMap::new(),
            verifications_by_guard: BTreeMap::new(),
            next_guard: 0,
        }
    }
}

impl ProducerStateTable {
    pub fn new() -> Self {
        Self::default()
    }

    /// The table was rebuilt from a log whose head is gone without a snapshot that describes
    /// it: any producer id may have written there, so rule 15 accepts any first sequence.
    pub fn mark_history_incomplete(&mut self) {
        self.forgotten_up_to = FORGOT_ANY;
    }

    /// Whether this table may have dropped the state of `producer_id` (eos-rules 15, 23).
    fn may_have_forgotten(&self, producer_id: i64) -> bool {
        producer_id <= self.forgotten_up_to
    }

    pub fn get(&self, producer_id: i64) -> Option<&ProducerEntry> {
        self.producers.get(&producer_id)
    }

    pub fn entries(&self) -> impl Iterator<Item = &ProducerEntry> {
        self.producers.values()
    }

    /// DescribeProducers: each producer's state as its fence left it (a fence above its epoch
    /// shows that epoch and no last sequence: the older epoch's batches no longer count).
    pub fn described(&self) -> Vec<ProducerEntry> {
        let fenced = |e: &ProducerEntry| {
            let mut e = e.clone();
            if let Some(f) = self.fences.get(&e.producer_id).filter(|f| f.epoch > e.epoch) {
                e.epoch = f.epoch;
                e.batches.clear();
            }
            e
        };
        self.producers.values().map(fenced).collect()
    }

    pub fn len(&self) -> usize {
        self.producers.len()
    }

    pub fn is_empty(&self) -> bool {
        self.producers.is_empty()
    }

    /// Checks a client data batch against the producer's state (eos-rules 15-20, 26).
    /// Pure: nothing changes until `record_append`.
    pub fn check_append(&self, h: &BatchHeader) -> Result<AppendDecision, ProducerStateError> {
        if !h.has_producer_id() {
            return Ok(AppendDecision::Append);
        }
        // eos-rules 18: a lower epoch is INVALID_PRODUCER_EPOCH, never PRODUCER_FENCED.
        let current = self.current_epoch(h.producer_id);
        if h.producer_epoch < current {
            return Err(ProducerStateError::InvalidProducerEpoch { got: h.producer_epoch, current });
        }
        let entry = self.producers.get(&h.producer_id);
        // eos-rules 19: duplicates are found before sequence validation.
        if let Some(dup) = entry.and_then(|e| e.find_duplicate(h)) {
            return Ok(AppendDecision::Duplicate(dup));
        }
        if let Some(v) = self.verifications.get(&h.producer_id) {
            // eos-rules 15 (4.1+, KAFKA-18202): a TV2 transaction on a producer with no batches
            // here starts at sequence 0.
            if v.supports_epoch_bump && h.base_sequence != 0 && entry.is_none_or(|e| e.batches.is_empty()) {
                return Err(ProducerStateError::OutOfOrderSequence {
                    epoch: h.producer_epoch,
                    first_seq: h.base_sequence,
                    last_seq: NO_SEQUENCE,
                });
            }
            // eos-rules 28: while a verification is pending, nothing above its lowest sequence.
            if h.base_sequence > v.lowest_seq {
                return Err(ProducerStateError::OutOfOrderSequence {
                    epoch: h.producer_epoch,
                    first_seq: h.base_sequence,
                    last_seq: v.lowest_seq,
                });
            }
        }
        let Some(entry) = entry else {
            // eos-rules 15 (kaas, as Kafka 4.5 on a never-written partition, KAFKA-15591): a
            // producer id this partition never forgot never wrote here, so its first batch is
            // sequence 0. A later one means the producer's earlier batch was refused while this
            // one was in flight: appending it would let the client take the refused records as
            // written (librdkafka acknowledges them implicitly). One that may have been
            // forgotten (expired) goes on at any sequence, as in Kafka.
            if h.base_sequence != 0 && !self.may_have_forgotten(h.producer_id) {
                return Err(ProducerStateError::OutOfOrderSequence {
                    epoch: h.producer_epoch,
                    first_seq: h.base_sequence,
                    last_seq: NO_SEQUENCE,
                });
            }
            return Ok(AppendDecision::Append);
        };
        Self::check_sequence(entry, h)?;
        // eos-rules 26: a plain batch while this producer has a transaction open here (Kafka
        // checks it after the sequence).
        if !h.is_transactional() && entry.current_txn_first_offset.is_some() {
            return Err(ProducerStateError::InvalidTxnState(
                "non-transactional batch from a producer with an open transaction",
            ));
        }
        Ok(AppendDecision::Append)
    }

    /// The epoch below which the producer's batches are refused here: its state's, or the one
    /// a coordinator fenced it to.
    fn current_epoch(&self, producer_id: i64) -> i16 {
        let state = self.producers.get(&producer_id).map_or(NO_PRODUCER_EPOCH, |e| e.epoch);
        let fence = self.fences.get(&producer_id).map_or(NO_PRODUCER_EPOCH, |f| f.epoch);
        state.max(fence)
    }

    /// State of `producer_id` now exists at `epoch`: a fence at or below it is redundant.
    fn drop_fence_below(&mut self, producer_id: i64, epoch: i16) {
        if self.fences.get(&producer_id).is_some_and(|f| f.epoch <= epoch) {
            self.fences.remove(&producer_id);
        }
    }

    fn clear_verification(&mut self, producer_id: i64) {
        if let Some(v) = self.verifications.remove(&producer_id) {
            self.verifications_by_guard.remove(&v.guard);
        }
    }

    fn check_sequence(entry: &ProducerEntry, h: &BatchHeader) -> Result<(), ProducerStateError> {
        let oos = || ProducerStateError::OutOfOrderSequence {
            epoch: h.producer_epoch,
            first_seq: h.base_sequence,
            last_seq: entry.last_seq(),
        };
        if h.producer_epoch != entry.epoch {
            // eos-rules 17: a higher epoch restarts at sequence 0 (unless the epoch is unknown).
            if h.base_sequence != 0 && entry.epoch != NO_PRODUCER_EPOCH {
                return Err(oos());
            }
            return Ok(());
        }
        // eos-rules 16 (and 20: an old retry outside the cache lands here as out of order).
        if entry.epoch == NO_PRODUCER_EPOCH || in_sequence(entry.last_seq(), h.base_sequence) {
            Ok(())
        } else {
            Err(oos())
        }
    }

    /// Records an appended data batch (header carries the assigned base offset).
    pub fn record_append(&mut self, h: &BatchHeader, now_ms: i64) {
        if !h.has_producer_id() {
            return;
        }
        let entry = self.producers.entry(h.producer_id).or_insert_with(|| ProducerEntry::new(h.producer_id));
        if h.producer_epoch != entry.epoch {
            entry.epoch = h.producer_epoch;
            entry.batches.clear();
        }
        if h.base_sequence >= 0 {
            entry.batches.push_back(BatchMetadata {
                first_seq: h.base_sequence,
                last_seq: increment_sequence(h.base_sequence, h.last_offset_delta),
                first_offset: h.base_offset,
                last_offset: h.last_offset(),
                timestamp: h.max_timestamp,
            });
            while entry.batches.len() > BATCHES_TO_RETAIN {
                entry.batches.pop_front();
            }
        }
        if h.is_transactional() && entry.current_txn_first_offset.is_none() {
            entry.current_txn_first_offset = Some(h.base_offset);
        }
        entry.last_update_ms = now_ms;
        let epoch = entry.epoch;
        self.drop_fence_below(h.producer_id, epoch);
        // eos-rules 28: the transaction is open here now; the verification has done its work.
        if h.is_transactional() {
            self.clear_verification(h.producer_id);
        }
    }

    /// Fencing: a coordinator bumped this producer to `epoch`; older batches are rejected from now
    /// on, and the dedupe window of the older epoch is dropped.
    /// It is a `Fence`, not a change of the producer's state (see there).
    pub fn fence(&mut self, producer_id: i64, epoch: i16, now_ms: i64) {
        if self.producers.get(&producer_id).is_some_and(|e| e.epoch >= epoch) {
            return;
        }
        let fence = self.fences.entry(producer_id).or_insert(Fence { epoch, fenced_ms: now_ms });
        if epoch >= fence.epoch {
            *fence = Fence { epoch, fenced_ms: now_ms };
        }
    }

    /// eos-rules 27/28: before a transactional batch may open a transaction here the coordinator
    /// must confirm the partition. Ok(None): a transaction is already open at this epoch (no
    /// check needed); otherwise the guard of the producer's verification (started now, or the
    /// one under way: its lowest sequence follows `sequence`), which a marker voids.
    /// eos-rules 18 (4.1+, KAFKA-18042): a lower epoch is refused here, before the coordinator.
    pub fn begin_verification(
        &mut self,
        producer_id: i64,
        epoch: i16,
        sequence: i32,
        tv2: bool,
        now_ms: i64,
    ) -> Result<Option<u64>, ProducerStateError> {
        // The producer's own state decides, as Kafka's check; a fence is checked at the append,
        // after the coordinator answered (which names a fenced producer PRODUCER_FENCED too).
        // Kafka 4.4 (UnifiedLog.maybeStartTransactionVerification) compares only with a producer
        // it has an entry for: an unknown producer id at any epoch, negative ones too, goes to
        // the coordinator, which answers INVALID_PRODUCER_ID_MAPPING for an id it never gave.
        if let Some(current) = self.producers.get(&producer_id).map(|e| e.epoch) {
            if epoch < current {
                return Err(ProducerStateError::InvalidProducerEpoch { got: epoch, current });
            }
        }
        if self.has_ongoing_txn(producer_id, epoch) {
            return Ok(None);
        }
        if let Some(v) = self.verifications.get_mut(&producer_id) {
            v.saw(sequence, epoch);
            return Ok(Some(v.guard));
        }
        self.next_guard += 1;
        let v = Verification {
            guard: self.next_guard,
            lowest_seq: sequence,
            epoch,
            created_ms: now_ms,
            supports_epoch_bump: tv2,
        };
        self.verifications.insert(producer_id, v);
        self.verifications_by_guard.insert(v.guard, producer_id);
        while self.verifications.len() > MAX_VERIFICATIONS {
            let Some((_, pid)) = self.verifications_by_guard.pop_first() else { break };
            self.verifications.remove(&pid);
        }
        Ok(Some(v.guard))
    }

    /// eos-rules 27/28: a transactional batch that would open a transaction needs a verification
    /// whose guard is still valid (INVALID_TXN_STATE otherwise). A lower epoch is left to
    /// `check_append` (INVALID_PRODUCER_EPOCH, rule 18).
    pub fn check_verification(&self, h: &BatchHeader, verified: Verified) -> Result<(), ProducerStateError> {
        if !h.is_transactional() || self.has_ongoing_txn(h.producer_id, h.producer_epoch) {
            return Ok(());
        }
        if h.producer_epoch < self.current_epoch(h.producer_id) {
            return Ok(());
        }
        let ok = match verified {
            Verified::No => false,
            Verified::Guard(g) => self.verifications.get(&h.producer_id).is_some_and(|v| v.guard == g),
            // Its sequence is checked at the append (eos-rules 15, KAFKA-18202).
            Verified::Tv2Added => true,
        };
        if ok {
            Ok(())
        } else {
            Err(ProducerStateError::InvalidTxnState("record was not part of an ongoing transaction"))
        }
    }

    /// Marker epoch and coordinator epoch checks (eos-rules 46-48). Pure.
    pub fn check_marker(
        &self,
        producer_id: i64,
        marker_epoch: i16,
        coordinator_epoch: i32,
        txn_version: i8,
    ) -> Result<(), ProducerStateError> {
        let Some(entry) = self.producers.get(&producer_id) else {
            return Ok(());
        };
        let floor = MarkerFloor {
            epoch: entry.epoch,
            coordinator_epoch: entry.coordinator_epoch,
            txn_open: entry.current_txn_first_offset.is_some(),
        };
        check_marker_against(floor, marker_epoch, coordinator_epoch, txn_version)
    }

    /// Applies a marker written at `marker_offset` (eos-rules 49); returns the transaction it ended.
    pub fn record_marker(
        &mut self,
        producer_id: i64,
        marker_epoch: i16,
        coordinator_epoch: i32,
        marker_offset: i64,
        commit: bool,
        now_ms: i64,
    ) -> Option<CompletedTxn> {
        // eos-rules 28: a verification that raced with this marker is void, except a TV2 one at
        // the marker's epoch (Kafka 4.4's UnifiedLog.updateProducers keeps it: under TV2 the
        // marker of the transaction that ended carries the epoch the next one verifies at).
        let keep =
            self.verifications.get(&producer_id).is_some_and(|v| v.supports_epoch_bump && v.epoch == marker_epoch);
        if !keep {
            self.clear_verification(producer_id);
        }
        let entry = self.producers.entry(producer_id).or_insert_with(|| ProducerEntry::new(producer_id));
        let completed = entry.current_txn_first_offset.take().map(|first| CompletedTxn {
            producer_id,
            first_offset: first,
            last_offset: marker_offset,
            aborted: !commit,
        });
        if marker_epoch != entry.epoch {
            entry.epoch = marker_epoch;
            entry.batches.clear();
        }
        entry.coordinator_epoch = coordinator_epoch;
        entry.last_update_ms = now_ms;
        let epoch = entry.epoch;
        self.drop_fence_below(producer_id, epoch);
        completed
    }

    /// Whether `producer_id` has a transaction open here at exactly `epoch` (eos-rules 27).
    pub fn has_ongoing_txn(&self, producer_id: i64, epoch: i16) -> bool {
        self.producers.get(&producer_id).is_some_and(|e| e.epoch == epoch && e.current_txn_first_offset.is_some())
    }

    /// The first offset of the earliest open transaction (for the last stable offset).
    pub fn first_unstable_offset(&self) -> Option<i64> {
        self.producers.values().filter_map(|e| e.current_txn_first_offset).min()
    }

    /// eos-rules 23: drop producers idle for `expiration_ms` with no open transaction.
    /// Fences and verifications expire after the same time (Kafka expires its verification
    /// entries with producer.id.expiration.ms too).
    pub fn expire(&mut self, now_ms: i64, expiration_ms: i64) -> usize {
        let before = self.producers.len();
        let mut forgotten = self.forgotten_up_to;
        self.producers.retain(|pid, e| {
            let keep = e.current_txn_first_offset.is_some() || now_ms - e.last_update_ms < expiration_ms;
            if !keep {
                forgotten = forgotten.max(*pid);
            }
            keep
        });
        // eos-rules 15: these ids may now go on at any sequence here.
        self.forgotten_up_to = forgotten;
        self.fences.retain(|_, f| now_ms - f.fenced_ms < expiration_ms);
        let stale: Vec<i64> = self
            .verifications
            .iter()
            .filter(|(_, v)| now_ms - v.created_ms >= expiration_ms)
            .map(|(pid, _)| *pid)
            .collect();
        for pid in stale {
            self.clear_verification(pid);
        }
        before - self.producers.len()
    }
}

/// What the marker checks read of a producer's entry on a partition (this table's, or the
/// group coordinator's for a `__consumer_offsets` partition).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MarkerFloor {
    pub epoch: i16,
    pub coordinator_epoch: i32,
    /// A transaction of the producer is open on the partition.
    pub txn_open: bool,
}

/// eos-rules 46-48 against a producer's entry: the marker's epoch, then its coordinator's epoch.
pub fn check_marker_against(
    floor: MarkerFloor,
    marker_epoch: i16,
    coordinator_epoch: i32,
    txn_version: i8,
) -> Result<(), ProducerStateError> {
    let fenced = || ProducerStateError::InvalidProducerEpoch { got: marker_epoch, current: floor.epoch };
    if txn_version >= TV2 {
        // eos-rules 47: strictly greater, except the idempotent retry (no open transaction)
        // and the epoch-exhaustion recovery marker at i16::MAX (KAFKA-20090).
        let retry = marker_epoch == floor.epoch && !floor.txn_open;
        if marker_epoch <= floor.epoch && !retry && marker_epoch != i16::MAX {
            return Err(fenced());
        }
    } else if marker_epoch < floor.epoch {
        // eos-rules 46: legacy markers need markerEpoch >= current.
        return Err(fenced());
    }
    // eos-rules 48: an older coordinator is fenced.
    if floor.coordinator_epoch > coordinator_epoch {
        return Err(ProducerStateError::CoordinatorFenced { got: coordinator_epoch, current: floor.coordinator_epoch });
    }
    Ok(())
}

#[cfg(test)]
mod tests;
