//! Unit tests of the transaction coordinator's core: one file per area, one test per rule of
//! docs/eos-rules.md, named `rule_NN_...` after it. Shared fixtures are here.

mod add_partitions;
mod describe;
mod end_txn;
mod init_producer_id;
mod markers;
mod peer_markers;
mod timeout;
mod verification;

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

#[test]
fn rule_06_failed_state_write_maps_like_kafka() {
    assert_eq!(state_write_error(StateWriteFailure::Unavailable).code(), 15);
    assert_eq!(state_write_error(StateWriteFailure::Storage).code(), 16);
    assert_eq!(state_write_error(StateWriteFailure::TooLarge).code(), -1);
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

#[test]
fn rule_06_unreserved_producer_id_is_not_coordinator() {
    let d = init_with(None, 60_000, None, false);
    assert_eq!(refuse_unallocated(d.clone()), d);
    let failed = init_producer_id(None, "tx", 60_000, None, MAX_TIMEOUT, false, NOW, &mut || -1);
    assert_eq!(rejected(&refuse_unallocated(failed)), NotCoordinator);
}

#[test]
fn rule_06_failed_write_keeps_the_previous_entry() {
    let prepare = entry(PrepareCommit, PID, 5);
    let (kept, error) = write_failed(Some(pending(prepare.clone())), StateWriteFailure::Storage);
    assert_eq!((kept.map(|e| e.pending), error), (Some(true), NotCoordinator), "marker phase stays pending");
    let (kept, _) = write_failed(Some(pending(entry(Ongoing, PID, 5))), StateWriteFailure::Storage);
    assert_eq!(kept, Some(entry(Ongoing, PID, 5)));
    let (unknown, error) = write_failed(None, StateWriteFailure::Unavailable);
    assert_eq!((unknown, error), (None, CoordinatorNotAvailable));
}

#[test]
fn rule_12_an_entry_being_written_is_pending() {
    let written = applied(&init_with(None, 60_000, None, false));
    let placeholder = in_flight(None, &written);
    assert_eq!((st(&placeholder), placeholder.pending), (st(&written), true));
    let current = entry(Ongoing, PID, 5);
    assert_eq!(in_flight(Some(&current), &written), pending(current.clone()));
    assert_eq!(rejected(&init(&in_flight(Some(&current), &written), None)), ConcurrentTransactions);
    assert_eq!(after_write(written.clone()), Some(written.settled()));
}
