//! One test per DeleteRecords rule, through `Partition` on a real log in a temp dir (every batch
//! in its own segment).

use bytes::BytesMut;
use tempfile::TempDir;

use super::super::{Partition, PartitionError, Produced};
use super::{check_cleanup_policy, check_not_internal, new_log_start, DeleteRecordsError, HIGH_WATERMARK};
use crate::error_code::ResponseError;
use crate::store::batch::testutil::{batch, Spec};
use crate::store::batch::BatchHeader;
use crate::store::cluster::fence::SelfFence;
use crate::store::log::LogConfig;
use crate::store::producer_state::Verified;

const NOW: i64 = 1_000;
const PID: i64 = 9;

fn config() -> LogConfig {
    LogConfig::for_tests(1)
}

fn open(dir: &TempDir) -> Partition {
    Partition::open(dir.path().to_path_buf(), config(), NOW).unwrap().0
}

fn produce(p: &mut Partition, spec: Spec) -> Result<Produced, PartitionError> {
    let verified = if spec.transactional { Verified::Tv2Added } else { Verified::No };
    let data: BytesMut = batch(spec);
    let h = BatchHeader::parse(&data).unwrap();
    p.append(crate::store::batch::Incoming::new(data.freeze()).unwrap(), &h, verified, NOW)
}

fn idempotent(seq: i32, records: i32) -> Spec {
    Spec { producer_id: PID, producer_epoch: 0, base_sequence: seq, records, ..Spec::default() }
}

/// Three batches of `n` records each at 0, n, 2n; all durable.
fn three_batches(p: &mut Partition, n: i32) {
    for i in 0..3 {
        produce(p, idempotent(i * n, n)).unwrap();
    }
    let end = p.log_end_offset();
    p.advance_high_watermark(end);
}

fn segment_files(dir: &TempDir) -> usize {
    std::fs::read_dir(dir.path())
        .unwrap()
        .filter(|e| e.as_ref().unwrap().file_name().to_string_lossy().ends_with(".log"))
        .count()
}

#[test]
fn minus_one_deletes_up_to_the_high_watermark() {
    assert_eq!(new_log_start(HIGH_WATERMARK, 0, 12).unwrap(), 12);
}

#[test]
fn an_offset_above_the_high_watermark_is_offset_out_of_range() {
    let e = new_log_start(13, 0, 12).unwrap_err();
    assert_eq!(e.error(), ResponseError::OffsetOutOfRange);
}

#[test]
fn a_negative_offset_other_than_minus_one_is_offset_out_of_range() {
    let e = new_log_start(-2, 0, 12).unwrap_err();
    assert!(matches!(e, DeleteRecordsError::InvalidOffset(-2)));
    assert_eq!(e.error(), ResponseError::OffsetOutOfRange);
}

#[test]
fn an_offset_below_the_log_start_leaves_it_where_it_is() {
    assert_eq!(new_log_start(3, 5, 12).unwrap(), 5);
}

#[test]
fn a_topic_without_the_delete_policy_refuses_with_policy_violation() {
    use crate::store::configs::topic::deletes_by_retention;
    let policy = |p: &str| deletes_by_retention(&[("cleanup.policy".to_string(), p.to_string())].into());
    assert_eq!(check_cleanup_policy(policy("compact")).unwrap_err().error(), ResponseError::PolicyViolation);
    assert!(check_cleanup_policy(policy("compact,delete")).is_ok());
    assert!(check_cleanup_policy(deletes_by_retention(&Default::default())).is_ok());
}

#[test]
fn internal_topics_refuse_with_invalid_topic_exception() {
    assert_eq!(check_not_internal("__transaction_state"), Err(ResponseError::InvalidTopicException));
    assert_eq!(check_not_internal("orders"), Ok(()));
}

#[test]
fn an_offline_partition_refuses_with_kafka_storage_error() {
    let dir = tempfile::tempdir().unwrap();
    let mut p = Partition::offline(dir.path().to_path_buf(), config());
    assert_eq!(p.delete_records_before(0).unwrap_err().error(), ResponseError::KafkaStorageError);
}

#[test]
fn the_log_start_moves_inside_a_segment_and_reads_below_it_are_out_of_range() {
    let dir = tempfile::tempdir().unwrap();
    let mut p = open(&dir);
    three_batches(&mut p, 4);
    let d = p.delete_records_before(6).unwrap();
    assert_eq!((d.log_start, p.log_start_offset()), (6, 6));
    assert_eq!(p.list_offset(-2, 0).unwrap().0, 6, "ListOffsets earliest answers the log start");
    assert!(matches!(p.read(5, 1 << 20, 0), Err(PartitionError::OffsetOutOfRange)));
    assert!(!p.read(6, 1 << 20, 0).unwrap().records.is_empty());
}

#[test]
fn whole_segments_below_the_log_start_are_deleted_once_it_is_durable() {
    let dir = tempfile::tempdir().unwrap();
    let mut p = open(&dir);
    three_batches(&mut p, 4);
    assert_eq!(segment_files(&dir), 3);
    let d = p.delete_records_before(9).unwrap();
    // The segment [0, 4) lies wholly below 9; [4, 8) too; [8, 12) holds 9.
    assert_eq!(d.segments().len(), 2);
    d.run(&SelfFence::unchecked()).unwrap();
    assert_eq!(segment_files(&dir), 1);
}

#[test]
fn the_log_start_survives_a_reopen() {
    let dir = tempfile::tempdir().unwrap();
    let mut p = open(&dir);
    three_batches(&mut p, 4);
    p.delete_records_before(6).unwrap().run(&SelfFence::unchecked()).unwrap();
    drop(p);
    let p = open(&dir);
    assert_eq!(p.log_start_offset(), 6);
    assert!(matches!(p.read(5, 1 << 20, 0), Err(PartitionError::OffsetOutOfRange)));
}

#[test]
fn a_log_start_not_yet_durable_at_a_crash_leaves_the_segments_readable() {
    let dir = tempfile::tempdir().unwrap();
    let mut p = open(&dir);
    three_batches(&mut p, 4);
    // Moved in memory, the file work never ran (the broker died first).
    let _ = p.delete_records_before(9).unwrap();
    drop(p);
    let p = open(&dir);
    assert_eq!(p.log_start_offset(), 0);
    assert!(!p.read(0, 1 << 20, 0).unwrap().records.is_empty());
}

#[test]
fn producer_state_is_kept_when_all_its_batches_are_deleted() {
    let dir = tempfile::tempdir().unwrap();
    let mut p = open(&dir);
    three_batches(&mut p, 4);
    p.delete_records_before(HIGH_WATERMARK).unwrap().run(&SelfFence::unchecked()).unwrap();
    assert_eq!(p.log_start_offset(), 12);
    for p in [&mut p, &mut open(&dir)] {
        assert_eq!(p.producers().len(), 1, "the producer stays, as in Kafka");
        // A retry of the last (deleted) batch is still a duplicate (eos-rules 19)...
        assert!(matches!(produce(p, idempotent(8, 4)), Ok(Produced::Duplicate(m)) if m.first_offset == 8));
        // ...and a sequence gap is still refused (eos-rules 16).
        let e = produce(p, idempotent(20, 1)).unwrap_err();
        assert_eq!(e.error(), ResponseError::OutOfOrderSequenceNumber);
    }
}

#[test]
fn the_last_stable_offset_is_never_below_the_log_start() {
    let dir = tempfile::tempdir().unwrap();
    let mut p = open(&dir);
    let txn = Spec {
        producer_id: PID,
        producer_epoch: 0,
        base_sequence: 0,
        records: 2,
        transactional: true,
        ..Spec::default()
    };
    produce(&mut p, txn).unwrap();
    produce(&mut p, Spec { records: 3, ..Spec::default() }).unwrap();
    let end = p.log_end_offset();
    p.advance_high_watermark(end);
    assert_eq!(p.last_stable_offset(), 0);
    // Kafka deletes up to the high watermark, past the open transaction's first offset.
    p.delete_records_before(HIGH_WATERMARK).unwrap().run(&SelfFence::unchecked()).unwrap();
    assert_eq!((p.log_start_offset(), p.last_stable_offset()), (5, 5));
    let open_txn = p.producers().into_iter().find(|e| e.producer_id == PID).unwrap();
    assert_eq!(open_txn.current_txn_first_offset, Some(0), "the transaction stays open");
}

#[test]
fn aborted_transactions_ending_below_the_log_start_leave_the_index() {
    let dir = tempfile::tempdir().unwrap();
    let mut p = open(&dir);
    let txn = Spec {
        producer_id: PID,
        producer_epoch: 0,
        base_sequence: 0,
        records: 2,
        transactional: true,
        ..Spec::default()
    };
    produce(&mut p, txn).unwrap();
    p.write_marker(PID, 0, false, 0, 1, NOW).unwrap();
    produce(&mut p, Spec { records: 3, ..Spec::default() }).unwrap();
    let end = p.log_end_offset();
    p.advance_high_watermark(end);
    assert_eq!(p.read(0, 1 << 20, 1).unwrap().aborted.len(), 1);
    p.delete_records_before(3).unwrap().run(&SelfFence::unchecked()).unwrap();
    assert!(p.read(3, 1 << 20, 1).unwrap().aborted.is_empty());
}

#[test]
fn list_offsets_by_time_never_answers_below_the_log_start() {
    let dir = tempfile::tempdir().unwrap();
    let mut p = open(&dir);
    // Records timestamped 10-13, 20-23, 30-33 at offsets 0-3, 4-7, 8-11.
    for ts in [10, 20, 30] {
        let mut data = BytesMut::from(&crate::store::records::testutil::good_batch(4, 0, ts)[..]);
        crate::store::batch::patch_max_timestamp(&mut data, ts + 3, false);
        let h = BatchHeader::parse(&data).unwrap();
        p.append(crate::store::batch::Incoming::new(data.freeze()).unwrap(), &h, Verified::No, NOW).unwrap();
    }
    let end = p.log_end_offset();
    p.advance_high_watermark(end);
    assert_eq!(p.list_offset(0, 0).unwrap(), (0, 10));
    p.delete_records_before(6).unwrap().run(&SelfFence::unchecked()).unwrap();
    // Now the first record at or after the log start (6, inside the batch at 4).
    assert_eq!(p.list_offset(0, 0).unwrap(), (6, 22));
    assert_eq!(p.list_offset(21, 0).unwrap(), (6, 22));
    assert_eq!(p.list_offset(23, 0).unwrap(), (7, 23));
    assert_eq!(p.list_offset(31, 0).unwrap(), (9, 31));
}

#[test]
fn deletions_finishing_out_of_order_leave_the_later_producer_snapshot() {
    let dir = tempfile::tempdir().unwrap();
    let mut p = open(&dir);
    three_batches(&mut p, 4);
    let first = p.delete_records_before(4).unwrap();
    // Another producer writes after the first deletion's snapshot; a second deletion takes its
    // only batch (every batch has its own segment here) and runs before the first finishes.
    let other = || Spec { producer_id: PID + 1, producer_epoch: 0, base_sequence: 0, records: 2, ..Spec::default() };
    produce(&mut p, other()).unwrap();
    produce(&mut p, idempotent(12, 1)).unwrap();
    let end = p.log_end_offset();
    p.advance_high_watermark(end);
    let second = p.delete_records_before(14).unwrap();
    assert_eq!(second.segments().len(), 3);
    second.run(&SelfFence::unchecked()).unwrap();
    first.run(&SelfFence::unchecked()).unwrap();
    drop(p);
    let mut p = open(&dir);
    assert_eq!(p.log_start_offset(), 14);
    // The second deletion's snapshot stayed: the other producer is known, its retry a duplicate.
    assert!(matches!(produce(&mut p, other()), Ok(Produced::Duplicate(m)) if m.first_offset == 12));
}

#[test]
fn once_the_log_start_moved_every_producer_snapshot_is_durable() {
    let dir = tempfile::tempdir().unwrap();
    let mut p = open(&dir);
    three_batches(&mut p, 4);
    assert!(!p.snapshot_if_changed().unwrap().unwrap().is_durable(), "nothing relies on it yet");
    p.delete_records_before(4).unwrap().run(&SelfFence::unchecked()).unwrap();
    produce(&mut p, idempotent(12, 1)).unwrap();
    // The deleted segment's producers are only in the snapshot now: a newer one must not be a
    // file a power loss can empty.
    assert!(p.snapshot_if_changed().unwrap().unwrap().is_durable());
}

#[test]
fn a_deletion_that_removes_no_file_leaves_the_next_snapshot_due() {
    let dir = tempfile::tempdir().unwrap();
    let mut p = open(&dir);
    three_batches(&mut p, 4);
    p.write_snapshot().unwrap();
    p.fence(PID, 3, NOW);
    // The start moves inside the first segment: no file goes, so no snapshot is written...
    let d = p.delete_records_before(2).unwrap();
    assert!(d.segments().is_empty());
    d.run(&SelfFence::unchecked()).unwrap();
    // ...and the fence still has to reach one.
    assert!(p.snapshot_if_changed().is_some(), "the fence is in no snapshot yet");
}

#[test]
fn no_periodic_snapshot_is_taken_while_the_last_one_is_still_to_be_written() {
    let dir = tempfile::tempdir().unwrap();
    let mut p = open(&dir);
    three_batches(&mut p, 4);
    p.delete_records_before(4).unwrap().run(&SelfFence::unchecked()).unwrap();
    produce(&mut p, idempotent(12, 1)).unwrap();
    // A durable snapshot waits on the blocking pool (a slow disk) while the log moves on.
    let waiting = p.snapshot_if_changed().unwrap().unwrap();
    produce(&mut p, idempotent(13, 1)).unwrap();
    assert!(p.snapshot_if_changed().is_none(), "one snapshot of a partition queued at a time");
    waiting.run().unwrap();
    assert!(p.snapshot_if_changed().is_some(), "the next one is due once it is written");
}
