//! One test per rule the partition enforces, through `Partition` on a real log in a temp dir.
//! Rule numbers are docs/eos-rules.md.

use bytes::BytesMut;
use tempfile::TempDir;

use super::{check_partition_data, check_request, marker_txn_version, Partition, PartitionError, Produced};
use crate::error_code::ResponseError;
use crate::store::batch::testutil::{batch, Spec};
use crate::store::batch::{patch_base_offset, patch_max_timestamp, BatchHeader};
use crate::store::log::LogConfig;
use crate::store::producer_state::Verified;

const NOW: i64 = 1_000;
const PID: i64 = 7;
const LEGACY: i8 = 1;
const TV2: i8 = 2;

fn config() -> LogConfig {
    LogConfig::for_tests(1 << 20)
}

fn open() -> (TempDir, Partition) {
    let dir = tempfile::tempdir().unwrap();
    let (p, _) = Partition::open(dir.path().to_path_buf(), config(), NOW).unwrap();
    (dir, p)
}

fn reopen(dir: &TempDir) -> Partition {
    Partition::open(dir.path().to_path_buf(), config(), NOW).unwrap().0
}

fn idempotent(epoch: i16, seq: i32, records: i32) -> BytesMut {
    batch(Spec { producer_id: PID, producer_epoch: epoch, base_sequence: seq, records, ..Spec::default() })
}

fn transactional(epoch: i16, seq: i32, records: i32) -> BytesMut {
    batch(Spec {
        producer_id: PID,
        producer_epoch: epoch,
        base_sequence: seq,
        records,
        transactional: true,
        ..Spec::default()
    })
}

fn produce(p: &mut Partition, data: BytesMut, verified: Verified) -> Result<Produced, PartitionError> {
    let h = BatchHeader::parse(&data).unwrap();
    p.append(crate::store::batch::Incoming::new(data.freeze()).unwrap(), &h, verified, NOW)
}

fn appended_at(r: Result<Produced, PartitionError>) -> i64 {
    match r {
        Ok(Produced::Appended(h)) => h.base_offset,
        other => panic!("expected an append, got {other:?}"),
    }
}

fn refused(r: Result<Produced, PartitionError>) -> PartitionError {
    match r {
        Err(e) => e,
        Ok(p) => panic!("expected a refusal, got {p:?}"),
    }
}

/// What the syncer's answer does: everything written so far is durable.
fn sync(p: &mut Partition) {
    let end = p.log_end_offset();
    p.advance_high_watermark(end);
}

/// Opens a transaction for PID at `epoch` the TV2 way (eos-rules 29).
fn open_txn(p: &mut Partition, epoch: i16, records: i32) -> i64 {
    appended_at(produce(p, transactional(epoch, 0, records), Verified::Tv2Added))
}

#[test]
fn rule_14_client_batch_shape_is_invalid_record_with_log_start() {
    let (_dir, mut p) = open();
    let mut data = idempotent(0, 0, 1);
    patch_base_offset(&mut data, 5);
    let e = refused(produce(&mut p, data, Verified::No));
    assert_eq!(e.code(), ResponseError::InvalidRecord.code());
    // eos-rules 22: a refusal by the rules answers with the LogStartOffset.
    assert!(e.carries_log_start());
    assert_eq!(p.log_end_offset(), 0);
}

#[test]
fn rule_22_producer_state_refusals_carry_the_log_start_offset_storage_errors_do_not() {
    let (_dir, mut p) = open();
    appended_at(produce(&mut p, idempotent(0, 0, 2), Verified::No));
    for e in [
        refused(produce(&mut p, idempotent(0, 5, 1), Verified::No)), // 45
        refused(produce(&mut p, idempotent(-1, 0, 1), Verified::No)), // 47
        refused(produce(&mut p, transactional(0, 2, 1), Verified::No)), // 48 or 27's answer
    ] {
        assert!(e.carries_log_start(), "{e:?} ({}) answers with LogStartOffset", e.code());
    }
    let dir = tempfile::tempdir().unwrap();
    let mut offline = Partition::offline(dir.path().to_path_buf(), config());
    let e = refused(produce(&mut offline, idempotent(0, 0, 1), Verified::No));
    assert_eq!((e.code(), e.carries_log_start()), (ResponseError::KafkaStorageError.code(), false));
}

#[test]
fn rule_15_a_producer_that_never_wrote_here_starts_at_sequence_0() {
    let (dir, mut p) = open();
    let e = refused(produce(&mut p, idempotent(0, 42, 2), Verified::No));
    assert_eq!(e.code(), ResponseError::OutOfOrderSequenceNumber.code());
    assert_eq!(p.log_end_offset(), 0, "nothing appended");
    // Another producer's records do not change it: this one still never wrote here.
    let other = batch(Spec { producer_id: PID + 1, base_sequence: 0, records: 1, ..Spec::default() });
    assert_eq!(appended_at(produce(&mut p, other, Verified::No)), 0);
    assert!(produce(&mut p, idempotent(0, 42, 2), Verified::No).is_err());
    // Once its state expired, it goes on at any sequence, also after a reopen.
    assert_eq!(appended_at(produce(&mut p, idempotent(0, 0, 2), Verified::No)), 1);
    sync(&mut p);
    assert_eq!(p.expire_producers(NOW + 1_000_000, 1000), 2);
    p.write_snapshot().unwrap();
    drop(p);
    let mut p = reopen(&dir);
    assert_eq!(appended_at(produce(&mut p, idempotent(0, 42, 2), Verified::No)), 3);
}

#[test]
fn rule_15_a_log_reopened_without_its_head_or_a_snapshot_takes_any_first_sequence() {
    let (dir, mut p) = open();
    p.set_log_config(LogConfig { retention_ms: 100, ..config() });
    appended_at(produce(&mut p, idempotent(0, 0, 3), Verified::No));
    sync(&mut p);
    let deletion = p.enforce_retention(NOW + 1000).expect("the expired segment goes");
    deletion.run(&crate::store::cluster::fence::SelfFence::unchecked()).unwrap();
    drop(p);
    // The snapshot that described the removed batches is lost: the producer may have written.
    for f in std::fs::read_dir(dir.path()).unwrap() {
        let path = f.unwrap().path();
        if path.file_name().is_some_and(|n| n.to_string_lossy().starts_with("producer-state")) {
            std::fs::remove_file(path).unwrap();
        }
    }
    let mut p = reopen(&dir);
    assert_eq!(p.log_start_offset(), 3);
    // Its next batch after one lost in flight (sequence 3 never arrived): with its state, or
    // with a history known whole, that is out of order; here it cannot be told.
    assert_eq!(appended_at(produce(&mut p, idempotent(0, 7, 1), Verified::No)), 3);
}

#[test]
fn rule_16_sequence_out_of_order_is_refused() {
    let (_dir, mut p) = open();
    appended_at(produce(&mut p, idempotent(0, 0, 2), Verified::No));
    let e = refused(produce(&mut p, idempotent(0, 3, 1), Verified::No));
    assert_eq!(e.code(), ResponseError::OutOfOrderSequenceNumber.code());
    assert_eq!(appended_at(produce(&mut p, idempotent(0, 2, 1), Verified::No)), 2);
}

#[test]
fn rule_17_higher_epoch_must_restart_at_sequence_zero() {
    let (_dir, mut p) = open();
    appended_at(produce(&mut p, idempotent(0, 0, 2), Verified::No));
    let e = refused(produce(&mut p, idempotent(1, 2, 1), Verified::No));
    assert_eq!(e.code(), ResponseError::OutOfOrderSequenceNumber.code());
    assert_eq!(appended_at(produce(&mut p, idempotent(1, 0, 1), Verified::No)), 2);
}

#[test]
fn rule_18_lower_epoch_is_invalid_producer_epoch() {
    let (_dir, mut p) = open();
    appended_at(produce(&mut p, idempotent(3, 0, 1), Verified::No));
    let e = refused(produce(&mut p, idempotent(2, 1, 1), Verified::No));
    assert_eq!(e.code(), ResponseError::InvalidProducerEpoch.code());
}

#[test]
fn rule_18_fenced_epoch_is_invalid_producer_epoch() {
    let (_dir, mut p) = open();
    appended_at(produce(&mut p, idempotent(0, 0, 1), Verified::No));
    // A coordinator bumped the epoch (FenceEpoch): the old producer is refused from now on.
    p.fence(PID, 1, NOW);
    let e = refused(produce(&mut p, idempotent(0, 1, 1), Verified::No));
    assert_eq!(e.code(), ResponseError::InvalidProducerEpoch.code());
}

#[test]
fn rule_19_duplicate_sequence_answers_with_the_original_offset() {
    let (_dir, mut p) = open();
    appended_at(produce(&mut p, idempotent(0, 0, 3), Verified::No));
    appended_at(produce(&mut p, idempotent(0, 3, 2), Verified::No));
    match produce(&mut p, idempotent(0, 0, 3), Verified::No) {
        Ok(Produced::Duplicate(m)) => assert_eq!((m.first_offset, m.last_offset), (0, 2)),
        other => panic!("expected a duplicate, got {other:?}"),
    }
    assert_eq!(p.log_end_offset(), 5, "a duplicate appends nothing");
}

#[test]
fn rule_23_retention_keeps_producers_until_they_expire() {
    let (dir, mut p) = open();
    p.set_log_config(LogConfig { retention_ms: 100, ..config() });
    appended_at(produce(&mut p, idempotent(0, 0, 3), Verified::No));
    assert!(p.enforce_retention(NOW + 1000).is_none(), "nothing above the high watermark goes");
    sync(&mut p);
    // The batch is stamped 1 s before: the active segment goes, the start moves on.
    let deletion = p.enforce_retention(NOW + 1000).expect("the expired segment goes");
    assert_eq!((deletion.log_start, deletion.segments().len()), (3, 1));
    deletion.run(&crate::store::cluster::fence::SelfFence::unchecked()).unwrap();
    // The producer stays: a retry is still a duplicate, its next sequence is taken.
    match produce(&mut p, idempotent(0, 0, 3), Verified::No) {
        Ok(Produced::Duplicate(m)) => assert_eq!((m.first_offset, m.last_offset), (0, 2)),
        other => panic!("expected a duplicate, got {other:?}"),
    }
    assert_eq!(appended_at(produce(&mut p, idempotent(0, 3, 1), Verified::No)), 3);
    // The snapshot written with the deletion brings it back after a reopen.
    sync(&mut p);
    drop(p);
    let mut p = reopen(&dir);
    assert_eq!(appended_at(produce(&mut p, idempotent(0, 4, 1), Verified::No)), 4);
    // Only expiry forgets it.
    assert_eq!(p.expire_producers(NOW + 1_000_000, 1000), 1);
}

#[test]
fn rule_26_plain_batch_during_open_transaction_is_invalid_txn_state() {
    let (_dir, mut p) = open();
    open_txn(&mut p, 0, 1);
    let e = refused(produce(&mut p, idempotent(0, 1, 1), Verified::No));
    assert_eq!(e.code(), ResponseError::InvalidTxnState.code());
}

#[test]
fn rule_27_transactional_batch_needs_verification() {
    let (_dir, mut p) = open();
    let e = refused(produce(&mut p, transactional(0, 0, 1), Verified::No));
    assert_eq!(e.code(), ResponseError::InvalidTxnState.code());
    let guard = p.begin_verification(PID, 0, 0, false, NOW).unwrap().unwrap();
    assert_eq!(appended_at(produce(&mut p, transactional(0, 0, 1), Verified::Guard(guard))), 0);
    // Open at this epoch now: no further verification needed.
    assert_eq!(p.begin_verification(PID, 0, 1, false, NOW), Ok(None));
    assert_eq!(appended_at(produce(&mut p, transactional(0, 1, 1), Verified::No)), 1);
}

#[test]
fn rule_28_marker_between_verification_and_append_voids_the_guard() {
    let (_dir, mut p) = open();
    let guard = p.begin_verification(PID, 0, 0, false, NOW).unwrap().unwrap();
    p.write_marker(PID, 0, false, 0, LEGACY, NOW).unwrap();
    let e = refused(produce(&mut p, transactional(0, 0, 1), Verified::Guard(guard)));
    assert_eq!(e.code(), ResponseError::InvalidTxnState.code());
}

#[test]
fn rule_29_tv2_transaction_on_empty_state_must_start_at_zero() {
    let (_dir, mut p) = open();
    p.begin_verification(PID, 0, 5, true, NOW).unwrap();
    let e = refused(produce(&mut p, transactional(0, 5, 1), Verified::Tv2Added));
    assert_eq!(e.code(), ResponseError::OutOfOrderSequenceNumber.code());
    assert_eq!(open_txn(&mut p, 0, 1), 0);
}

#[test]
fn rule_46_legacy_marker_with_an_older_epoch_is_refused() {
    let (_dir, mut p) = open();
    open_txn(&mut p, 5, 1);
    let e = p.write_marker(PID, 4, true, 0, LEGACY, NOW).unwrap_err();
    assert_eq!(e.code(), ResponseError::InvalidProducerEpoch.code());
    assert!(p.write_marker(PID, 5, true, 0, LEGACY, NOW).is_ok(), "legacy markers accept the same epoch");
}

#[test]
fn rule_47_kip_1228_tv2_marker_needs_a_strictly_higher_epoch() {
    let (_dir, mut p) = open();
    open_txn(&mut p, 5, 1);
    let e = p.write_marker(PID, 5, true, 0, TV2, NOW).unwrap_err();
    assert_eq!(e.code(), ResponseError::InvalidProducerEpoch.code());
    let h = p.write_marker(PID, 6, true, 0, TV2, NOW).unwrap();
    assert!(h.is_control());
    assert_eq!(h.base_offset, 1);
}

#[test]
fn rule_48_older_coordinator_epoch_is_fenced() {
    let (_dir, mut p) = open();
    open_txn(&mut p, 0, 1);
    p.write_marker(PID, 0, true, 3, LEGACY, NOW).unwrap();
    let e = p.write_marker(PID, 0, true, 2, LEGACY, NOW).unwrap_err();
    assert_eq!(e.code(), ResponseError::TransactionCoordinatorFenced.code());
}

#[test]
fn rule_49_marker_ends_the_open_transaction() {
    let (_dir, mut p) = open();
    open_txn(&mut p, 0, 2);
    p.write_marker(PID, 0, true, 0, LEGACY, NOW).unwrap();
    // The transaction is over: a plain batch is no longer INVALID_TXN_STATE (rule 26).
    assert_eq!(appended_at(produce(&mut p, idempotent(0, 2, 1), Verified::No)), 3);
}

#[test]
fn rule_51_lso_with_an_open_txn_stops_at_its_first_offset() {
    let (_dir, mut p) = open();
    appended_at(produce(&mut p, batch(Spec { records: 2, ..Spec::default() }), Verified::No));
    let first = open_txn(&mut p, 0, 3);
    sync(&mut p);
    assert_eq!((first, p.high_watermark()), (2, 5));
    assert_eq!(p.last_stable_offset(), 2);
    assert_eq!(p.list_offset(-1, 1).unwrap(), (2, -1));
    assert_eq!(p.list_offset(-1, 0).unwrap(), (5, -1));
    // read_committed sees only what lies below the LSO.
    let committed = p.read(0, 1 << 20, 1).unwrap();
    let uncommitted = p.read(0, 1 << 20, 0).unwrap();
    assert!(committed.records.len() < uncommitted.records.len());
    p.write_marker(PID, 0, true, 0, LEGACY, NOW).unwrap();
    sync(&mut p);
    assert_eq!(p.last_stable_offset(), p.high_watermark());
}

#[test]
fn rule_51_a_decided_transaction_holds_the_lso_until_its_marker_is_durable() {
    for commit in [true, false] {
        let (_dir, mut p) = open();
        appended_at(produce(&mut p, batch(Spec { records: 2, ..Spec::default() }), Verified::No));
        let first = open_txn(&mut p, 0, 3);
        sync(&mut p);
        let marker = p.write_marker(PID, 0, commit, 0, LEGACY, NOW).unwrap().base_offset;
        assert_eq!((first, marker, p.high_watermark()), (2, 5, 5));
        // The marker is appended but not fsynced: a crash would leave the transaction open.
        assert_eq!(p.last_stable_offset(), first, "commit {commit}");
        assert_eq!(p.list_offset(-1, 1).unwrap(), (first, -1));
        sync(&mut p);
        assert_eq!((p.high_watermark(), p.last_stable_offset()), (6, 6), "commit {commit}");
    }
}

#[test]
fn rule_51_a_durable_marker_no_longer_holds_back_a_later_transaction() {
    let (_dir, mut p) = open();
    let first = open_txn(&mut p, 0, 2);
    sync(&mut p);
    p.write_marker(PID, 0, true, 0, LEGACY, NOW).unwrap();
    // A second transaction opens behind the marker before the fsync covers both.
    let second = appended_at(produce(&mut p, transactional(0, 2, 1), Verified::Tv2Added));
    assert_eq!((first, second, p.last_stable_offset()), (0, 3, 0));
    sync(&mut p);
    assert_eq!((p.high_watermark(), p.last_stable_offset()), (4, second));
}

#[test]
fn rule_51_lso_never_exceeds_the_high_watermark() {
    let (_dir, mut p) = open();
    appended_at(produce(&mut p, batch(Spec { records: 2, ..Spec::default() }), Verified::No));
    assert_eq!((p.high_watermark(), p.last_stable_offset()), (0, 0));
    assert!(p.read(0, 1 << 20, 0).unwrap().records.is_empty(), "nothing readable before the fsync");
    sync(&mut p);
    assert_eq!(p.last_stable_offset(), 2);
}

#[test]
fn rule_52_aborted_index_after_abort_marker() {
    let (_dir, mut p) = open();
    open_txn(&mut p, 0, 3);
    p.write_marker(PID, 0, false, 0, LEGACY, NOW).unwrap();
    sync(&mut p);
    assert_eq!(p.read(0, 1 << 20, 1).unwrap().aborted, vec![(PID, 0)]);
    // read_uncommitted gets no index; a fetch past the marker sees no overlapping abort.
    assert!(p.read(0, 1 << 20, 0).unwrap().aborted.is_empty());
    assert!(p.read(4, 1 << 20, 1).unwrap().aborted.is_empty());
}

#[test]
fn rule_52_committed_transactions_stay_out_of_the_index() {
    let (_dir, mut p) = open();
    open_txn(&mut p, 0, 3);
    p.write_marker(PID, 0, true, 0, LEGACY, NOW).unwrap();
    sync(&mut p);
    assert!(p.read(0, 1 << 20, 1).unwrap().aborted.is_empty());
}

#[test]
fn recovery_rebuilds_producer_state_from_the_log() {
    let (dir, mut p) = open();
    open_txn(&mut p, 0, 1);
    p.write_marker(PID, 0, false, 0, LEGACY, NOW).unwrap();
    appended_at(produce(&mut p, idempotent(0, 1, 3), Verified::No));
    drop(p);
    let mut p = reopen(&dir);
    // The high watermark exposes what recovery found (and synced).
    assert_eq!(p.high_watermark(), 5);
    assert!(matches!(produce(&mut p, idempotent(0, 1, 3), Verified::No), Ok(Produced::Duplicate(_))));
    assert_eq!(p.read(0, 1 << 20, 1).unwrap().aborted, vec![(PID, 0)]);
}

#[test]
fn recovery_replays_the_log_tail_after_the_snapshot() {
    let (dir, mut p) = open();
    open_txn(&mut p, 0, 2);
    p.write_marker(PID, 0, false, 0, LEGACY, NOW).unwrap();
    p.write_snapshot().unwrap();
    assert!(p.snapshot_if_changed().is_none(), "nothing changed since the snapshot");
    appended_at(produce(&mut p, idempotent(1, 0, 2), Verified::No));
    drop(p);
    let mut p = reopen(&dir);
    assert_eq!(p.read(0, 1 << 20, 1).unwrap().aborted, vec![(PID, 0)], "from the snapshot");
    assert!(matches!(produce(&mut p, idempotent(1, 0, 2), Verified::No), Ok(Produced::Duplicate(_))), "from the tail");
}

#[test]
fn a_fence_alone_makes_the_next_snapshot_due_and_it_survives_a_reopen() {
    let (dir, mut p) = open();
    appended_at(produce(&mut p, idempotent(0, 0, 1), Verified::No));
    sync(&mut p);
    p.write_snapshot().unwrap();
    assert!(p.snapshot_if_changed().is_none());
    p.fence(PID, 3, NOW);
    p.snapshot_if_changed().expect("the fence changed the producer state").unwrap().run().unwrap();
    drop(p);
    let mut p = reopen(&dir);
    assert!(produce(&mut p, idempotent(0, 1, 1), Verified::No).is_err(), "epoch 0 is still fenced after a reopen");
}

#[test]
fn list_offsets_earliest_and_latest() {
    let (_dir, mut p) = open();
    appended_at(produce(&mut p, batch(Spec { records: 4, ..Spec::default() }), Verified::No));
    sync(&mut p);
    assert_eq!(p.list_offset(-2, 0).unwrap(), (0, -1));
    assert_eq!(p.list_offset(-4, 0).unwrap(), (0, -1));
    assert_eq!(p.list_offset(-1, 0).unwrap(), (4, -1));
    // KIP-1005 latest-tiered (v9+): nothing is tiered here, as Kafka answers without remote storage.
    assert_eq!(p.list_offset(-5, 0).unwrap(), (-1, -1));
    assert_eq!(p.list_offset(-7, 0).unwrap(), (-1, -1));
}

#[test]
fn reads_outside_the_log_are_offset_out_of_range() {
    let (_dir, p) = open();
    let e = p.read(9, 1 << 20, 0).unwrap_err();
    assert_eq!(e.code(), ResponseError::OffsetOutOfRange.code());
}

#[test]
fn an_offline_partition_refuses_everything_with_storage_errors() {
    let dir = tempfile::tempdir().unwrap();
    let mut p = Partition::offline(dir.path().to_path_buf(), config());
    let storage = ResponseError::KafkaStorageError.code();
    let e = refused(produce(&mut p, idempotent(0, 0, 1), Verified::No));
    assert_eq!(e.code(), storage);
    assert!(!e.carries_log_start());
    assert_eq!(p.read(0, 1 << 20, 0).unwrap_err().code(), storage);
    assert_eq!(p.list_offset(-1, 0).unwrap_err().code(), storage);
    assert_eq!(p.write_marker(PID, 0, true, 0, LEGACY, NOW).unwrap_err().code(), storage);
    assert!(!p.needs_sync());
}

#[test]
fn a_failed_fsync_takes_the_partition_offline() {
    let (_dir, mut p) = open();
    appended_at(produce(&mut p, idempotent(0, 0, 1), Verified::No));
    assert!(p.needs_sync());
    p.go_offline();
    assert!(p.is_offline() && !p.needs_sync());
    let e = refused(produce(&mut p, idempotent(0, 1, 1), Verified::No));
    assert_eq!(e.code(), ResponseError::KafkaStorageError.code());
}

#[test]
fn rule_50_a_marker_the_log_refuses_is_unknown_server_error() {
    // An append the log refuses is the client's INVALID_RECORD; a marker is ours to get right.
    let e = PartitionError::LogRefused("lastOffsetDelta -1".into());
    assert_eq!(e.code(), ResponseError::InvalidRecord.code());
    assert_eq!(e.marker_code(), ResponseError::UnknownServerError.code());
    let fenced = PartitionError::Offline;
    assert_eq!(fenced.marker_code(), ResponseError::KafkaStorageError.code());
}

fn header(data: &BytesMut) -> BatchHeader {
    BatchHeader::parse(data).unwrap()
}

#[test]
fn produce_request_with_invalid_acks_is_refused() {
    let plain = header(&idempotent(0, 0, 1));
    assert!(check_request(1, false, [&plain]).is_ok());
    assert_eq!(check_request(2, false, [&plain]), Err(ResponseError::InvalidRequiredAcks));
}

#[test]
fn rule_24_transactional_batch_needs_a_transactional_id() {
    let txn = header(&transactional(0, 0, 1));
    assert_eq!(check_request(-1, false, [&txn]), Err(ResponseError::TransactionalIdAuthorizationFailed));
    assert!(check_request(-1, true, [&txn]).is_ok());
}

#[test]
fn rule_25_one_producer_id_and_epoch_per_request() {
    let a = header(&transactional(0, 0, 1));
    let same = header(&transactional(0, 1, 1));
    let other_epoch = header(&transactional(1, 0, 1));
    assert!(check_request(-1, true, [&a, &same]).is_ok());
    assert_eq!(check_request(-1, true, [&a, &other_epoch]), Err(ResponseError::InvalidProducerIdMapping));
}

#[test]
fn partition_data_is_one_batch_with_a_valid_crc_within_max_message_bytes() {
    let good = idempotent(0, 0, 2);
    assert_eq!(check_partition_data(Some(&good), 1 << 20, 9).map(|h| h.records_count), Ok(2));
    assert_eq!(check_partition_data(None, 1 << 20, 9).err(), Some(ResponseError::InvalidRecord));
    assert_eq!(check_partition_data(Some(&good), good.len() - 1, 9).err(), Some(ResponseError::MessageTooLarge));
    let mut two = good.clone();
    two.extend_from_slice(&good);
    assert_eq!(check_partition_data(Some(&two), 1 << 20, 9).err(), Some(ResponseError::InvalidRecord));
    let mut flipped = good.clone();
    let last = flipped.len() - 1;
    flipped[last] ^= 1;
    assert_eq!(check_partition_data(Some(&flipped), 1 << 20, 9).err(), Some(ResponseError::CorruptMessage));
}

#[test]
fn zstd_needs_produce_v7() {
    let mut zstd = idempotent(0, 0, 1);
    zstd[22] |= 4; // attributes (bytes 21-22): compression codec 4 = zstd
    let max_timestamp = header(&zstd).max_timestamp;
    patch_max_timestamp(&mut zstd, max_timestamp, false); // recomputes the CRC
    assert_eq!(check_partition_data(Some(&zstd), 1 << 20, 6).err(), Some(ResponseError::UnsupportedCompressionType));
    assert!(check_partition_data(Some(&zstd), 1 << 20, 7).is_ok());
}

#[test]
fn rule_46_a_write_txn_markers_v1_marker_is_validated_as_legacy() {
    assert_eq!(marker_txn_version(1, TV2), 0);
    assert_eq!(marker_txn_version(0, TV2), 0);
    // eos-rules 47: v2 carries the transaction version, and TV2 gets the strict check.
    assert_eq!(marker_txn_version(2, TV2), TV2);
    let (_dir, mut p) = open();
    open_txn(&mut p, 5, 1);
    assert!(p.write_marker(PID, 5, true, 0, marker_txn_version(1, TV2), NOW).is_ok(), "legacy: same epoch ends it");
    open_txn(&mut p, 6, 1);
    let strict = p.write_marker(PID, 6, true, 0, marker_txn_version(2, TV2), NOW);
    assert!(strict.is_err(), "KIP-1228: a TV2 marker at the transaction's own epoch is refused");
}

/// A batch of keyed records (the cleaner reads records; `batch` writes filler): PID's
/// transactional one at `epoch`, or (epoch None) one without a producer.
fn keyed(epoch: Option<i16>, keys: &[&str]) -> BytesMut {
    use crate::store::cleaner::batch_records::{self, Record};
    let records: Vec<Record> = keys
        .iter()
        .enumerate()
        .map(|(i, k)| Record {
            offset_delta: i as i32,
            timestamp: NOW,
            key: Some(bytes::Bytes::copy_from_slice(k.as_bytes())),
            value: Some(bytes::Bytes::from_static(b"v")),
            headers: bytes::Bytes::from_static(&[0]),
        })
        .collect();
    let n = records.len() as i32;
    let h = BatchHeader {
        base_offset: 0,
        batch_length: 0,
        magic: 2,
        crc: 0,
        attributes: if epoch.is_some() { 0x10 } else { 0 },
        last_offset_delta: n - 1,
        base_timestamp: NOW,
        max_timestamp: NOW,
        producer_id: if epoch.is_some() { PID } else { -1 },
        producer_epoch: epoch.unwrap_or(-1),
        base_sequence: if epoch.is_some() { 0 } else { -1 },
        records_count: n,
    };
    let mut b = batch_records::encode(&h, &records, None).unwrap();
    batch_records::seal_batch(&mut b, 0);
    BytesMut::from(&b[..])
}

#[test]
fn rule_64_an_abort_marker_the_cleaner_removed_leaves_the_aborted_index_also_at_recovery() {
    use crate::store::cleaner::Compaction;
    use std::sync::atomic::AtomicBool;
    let compact = Compaction { min_cleanable_dirty_ratio: 0.0, delete_retention_ms: 5, ..Compaction::default() };
    let config = || LogConfig { compaction: Some(compact), ..LogConfig::for_tests(1) };
    let dir = tempfile::tempdir().unwrap();
    let mut p = Partition::open(dir.path().to_path_buf(), config(), NOW).unwrap().0;
    // An aborted transaction, then a committed one of the same producer (a segment a batch).
    appended_at(produce(&mut p, keyed(Some(0), &["a", "b"]), Verified::Tv2Added));
    p.write_marker(PID, 1, false, 0, TV2, NOW).unwrap();
    appended_at(produce(&mut p, keyed(Some(1), &["a"]), Verified::Tv2Added));
    p.write_marker(PID, 2, true, 0, TV2, NOW).unwrap();
    // A record without a producer after them: the transactions' segments are not the active one.
    appended_at(produce(&mut p, keyed(None, &["z"]), Verified::No));
    sync(&mut p);
    assert_eq!(p.read(0, 1 << 20, 1).unwrap().aborted, vec![(PID, 0)]);
    // Passes until the ABORT marker is gone (its data first, then the marker after its
    // horizon); each pass made the producer snapshot durable before its swap, naming the abort.
    let mut now = NOW;
    for _ in 0..4 {
        now += 10;
        let Some(work) = p.plan_cleaning(now, 1 << 20, 1 << 20) else { continue };
        let cleaned = work.job.run(&work.inputs, &mut |_| {}, || work.snapshot.run(), &AtomicBool::new(false)).unwrap();
        drop(p.install_cleaned(cleaned));
        if p.read(0, 1 << 20, 1).unwrap().aborted.is_empty() {
            break;
        }
    }
    assert!(p.read(0, 1 << 20, 1).unwrap().aborted.is_empty(), "the marker went with the install");
    // A crash now: the last snapshot still names the aborted transaction. Recovery keeps only
    // aborts whose marker is still in the log, or a read_committed reader would hide the
    // producer's committed transaction (it waits for an ABORT marker that is gone).
    drop(p);
    let p = Partition::open(dir.path().to_path_buf(), config(), now).unwrap().0;
    assert!(p.read(0, 1 << 20, 1).unwrap().aborted.is_empty());
}
