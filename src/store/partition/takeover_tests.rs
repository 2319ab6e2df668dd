//! Epoch-owned files (store::cluster::seal), one test per file kind: a handle of the old epoch (a
//! broker cut off from the disk while it runs) writes after another broker took the partition over
//! at a newer epoch, and the new owner's reads, recovery and answers stay what they were at its
//! takeover.

use bytes::BytesMut;
use tempfile::TempDir;

use super::{Partition, PartitionError, Produced};
use crate::store::batch::testutil::{batch, Spec};
use crate::store::batch::{iter_batches, BatchHeader};
use crate::store::cluster::fence::SelfFence;
use crate::store::log::{LogConfig, LogError};
use crate::store::producer_state::Verified;

const NOW: i64 = 1_000;
const PID: i64 = 7;

fn config(segment_bytes: u64) -> LogConfig {
    LogConfig {
        segment_bytes,
        retention_ms: -1,
        retention_bytes: -1,
        index_interval_bytes: 100,
        ..LogConfig::default()
    }
}

fn open_at(dir: &TempDir, epoch: i32) -> Partition {
    Partition::open_at(dir.path().to_path_buf(), config(1 << 20), NOW, epoch).unwrap().0
}

fn produce(p: &mut Partition, seq: i32, records: i32) -> Result<Produced, PartitionError> {
    let data: BytesMut = batch(Spec { producer_id: PID, base_sequence: seq, records, ..Spec::default() });
    let h = BatchHeader::parse(&data).unwrap();
    let r = p.append(crate::store::batch::Incoming::new(data.freeze()).unwrap(), &h, Verified::No, NOW);
    let end = p.log_end_offset();
    p.sync_handles().sync().unwrap();
    p.advance_high_watermark(end);
    r
}

/// (base offset, base sequence) of every batch fetches from the log start return (a fetch
/// reads one segment).
fn batches(p: &Partition) -> Vec<(i64, i32)> {
    let mut out = Vec::new();
    let mut at = p.log_start_offset();
    while at < p.high_watermark() {
        let fetched = p.read(at, 1 << 30, 0).unwrap();
        let got: Vec<(i64, i32, i64)> =
            iter_batches(&fetched.records).map(|(h, _)| (h.base_offset, h.base_sequence, h.last_offset())).collect();
        let Some(last) = got.last() else { break };
        at = last.2 + 1;
        out.extend(got.iter().map(|(b, s, _)| (*b, *s)));
    }
    out
}

/// Epoch 0 wrote two batches; epoch 1 took over. The old handle is still open.
fn taken_over() -> (TempDir, Partition, Partition) {
    let dir = tempfile::tempdir().unwrap();
    let mut old = open_at(&dir, 0);
    produce(&mut old, 0, 2).unwrap();
    produce(&mut old, 2, 2).unwrap();
    let new = open_at(&dir, 1);
    (dir, old, new)
}

#[test]
fn a_predecessors_late_append_lands_past_the_seal_and_is_never_read() {
    let (dir, mut old, mut new) = taken_over();
    assert_eq!(batches(&new), vec![(0, 0), (2, 2)]);
    // The cut-off broker appends (its page cache reaching the disk late, or a write in flight).
    produce(&mut old, 4, 2).unwrap();
    assert!(matches!(produce(&mut new, 4, 3).unwrap(), Produced::Appended(h) if h.base_offset == 4));
    assert_eq!(batches(&new), vec![(0, 0), (2, 2), (4, 4)]);
    drop((old, new));
    // Reopened by its own epoch, and taken over again: the same log.
    assert_eq!(batches(&open_at(&dir, 1)), vec![(0, 0), (2, 2), (4, 4)]);
    let next = open_at(&dir, 2);
    assert_eq!(batches(&next), vec![(0, 0), (2, 2), (4, 4)]);
    assert_eq!(next.log_end_offset(), 7);
}

#[test]
fn a_predecessors_late_roll_does_not_touch_the_new_owners_segment() {
    let dir = tempfile::tempdir().unwrap();
    let mut old = Partition::open_at(dir.path().to_path_buf(), config(1), NOW, 0).unwrap().0;
    produce(&mut old, 0, 2).unwrap();
    let mut new = Partition::open_at(dir.path().to_path_buf(), config(1), NOW, 1).unwrap().0;
    produce(&mut new, 2, 2).unwrap();
    // Both roll a segment at offset 2 (segment_bytes 1): the names carry their epochs.
    produce(&mut old, 2, 5).unwrap();
    assert_eq!(batches(&new), vec![(0, 0), (2, 2)]);
    drop((old, new));
    let again = Partition::open_at(dir.path().to_path_buf(), config(1), NOW, 1).unwrap().0;
    assert_eq!(batches(&again), vec![(0, 0), (2, 2)]);
}

#[test]
fn the_old_epoch_cannot_reopen_a_sealed_log() {
    let (dir, old, _new) = taken_over();
    drop(old);
    let reopened = Partition::open_at(dir.path().to_path_buf(), config(1 << 20), NOW, 0);
    assert!(matches!(reopened, Err(LogError::Superseded { newer: 1 })));
}

#[test]
fn a_predecessors_late_producer_snapshot_is_not_trusted() {
    let (dir, mut old, new) = taken_over();
    // The old epoch appends sequence 4..5 and snapshots it (its file, after the seal).
    produce(&mut old, 4, 2).unwrap();
    old.write_snapshot().unwrap();
    drop((old, new));
    // The new owner's reopen neither serves the batch nor counts its sequences: the producer's
    // retry of 4..5 is appended (not a duplicate of a batch nobody can read).
    std::fs::remove_file(dir.path().join("producer-state.e1.json")).unwrap();
    let mut p = open_at(&dir, 1);
    assert!(matches!(produce(&mut p, 4, 2).unwrap(), Produced::Appended(h) if h.base_offset == 4));
}

#[test]
fn a_predecessors_late_log_start_does_not_move_the_new_owners() {
    let (dir, mut old, new) = taken_over();
    // A DeleteRecords the cut-off broker took: its log start file moves (and it deletes nothing
    // the seal names: its segment holds offsets past the start).
    old.delete_records_before(3).unwrap().run(&SelfFence::unchecked()).unwrap();
    drop((old, new));
    let p = open_at(&dir, 1);
    assert_eq!(p.log_start_offset(), 0);
    assert_eq!(batches(&p), vec![(0, 0), (2, 2)]);
}

#[test]
fn a_predecessors_late_recovery_point_does_not_skip_the_new_owners_checks() {
    let (dir, old, mut new) = taken_over();
    produce(&mut new, 4, 2).unwrap();
    drop(new);
    // The old epoch checkpoints a recovery point past everything; the new owner's torn tail
    // must still be found by its own recovery (its own recovery point is separate).
    std::fs::write(dir.path().join("recovery-point"), b"1000").unwrap();
    drop(old);
    let own = dir.path().join("00000000000000000004.e1.log");
    // Where its batches end: the zeros written ahead of them follow (store::log::segment).
    let bytes = bytes::Bytes::from(std::fs::read(&own).unwrap());
    let len: usize = iter_batches(&bytes).map(|(h, _)| h.total_size()).sum();
    assert!(bytes.len() > len, "zeros were written ahead of the appends");
    std::fs::OpenOptions::new().write(true).open(&own).unwrap().set_len(len as u64 - 3).unwrap();
    let p = open_at(&dir, 1);
    assert_eq!(p.log_end_offset(), 4, "the torn batch is cut");
    assert_eq!(batches(&p), vec![(0, 0), (2, 2)]);
}

#[test]
fn a_takeover_never_changes_a_predecessors_file() {
    let dir = tempfile::tempdir().unwrap();
    let mut old = open_at(&dir, 0);
    produce(&mut old, 0, 2).unwrap();
    drop(old);
    let path = dir.path().join("00000000000000000000.log");
    // A torn tail: half a batch.
    let mut bytes = std::fs::read(&path).unwrap();
    let whole = bytes.len();
    let head = bytes[..20].to_vec();
    bytes.extend_from_slice(&head);
    std::fs::write(&path, &bytes).unwrap();
    let p = open_at(&dir, 1);
    assert_eq!(p.log_end_offset(), 2);
    // The file is the same (reached through the new owner's link); only its old name went.
    let linked = dir.path().join("00000000000000000000.s1.log");
    assert_eq!(std::fs::read(&linked).unwrap().len(), whole + 20, "not truncated: it is the predecessor's");
    assert!(!path.exists(), "the predecessor's name is no one's after the seal");
}

/// Every segment file name of `epoch` in `dir` (what a cut-off broker may still unlink).
fn names_of_epoch(dir: &std::path::Path, epoch: i32) -> Vec<std::path::PathBuf> {
    let names = std::fs::read_dir(dir).unwrap().map(|e| e.unwrap().path());
    names
        .filter(|p| {
            let name = p.file_name().unwrap().to_string_lossy().to_string();
            crate::store::cluster::seal::parse_segment_name(&name).is_some_and(|id| id.epoch == epoch)
        })
        .collect()
}

#[test]
fn a_predecessors_late_unlink_removes_nothing_the_new_owner_reads() {
    let dir = tempfile::tempdir().unwrap();
    let open = |epoch| Partition::open_at(dir.path().to_path_buf(), config(1), NOW, epoch).unwrap().0;
    let mut old = open(0);
    for seq in [0, 2, 4] {
        produce(&mut old, seq, 2).unwrap();
    }
    // The cut-off broker checked its fence before the takeover and unlinks after it (retention,
    // or the files a cleaning replaced or could not install): here, every name it had, taken
    // just before the new owner's takeover and unlinked after it.
    let its_names = names_of_epoch(dir.path(), 0);
    assert!(its_names.len() >= 3, "a segment a batch: {its_names:?}");
    let new = open(1);
    for p in &its_names {
        let _ = std::fs::remove_file(p);
    }
    drop((old, new));
    // The new owner, reopened (every file opened again by the name its seal gives), and its
    // successor read the whole log.
    let kept = vec![(0, 0), (2, 2), (4, 4)];
    assert_eq!(batches(&open(1)), kept);
    let next = open(2);
    assert_eq!((next.log_start_offset(), next.log_end_offset()), (0, 6));
    assert_eq!(batches(&next), kept);
    assert!(names_of_epoch(dir.path(), 0).is_empty());
}

#[test]
fn deleting_every_sealed_segment_and_some_own_ones_keeps_the_rest_at_reopen_and_takeover() {
    let dir = tempfile::tempdir().unwrap();
    let open = |epoch| Partition::open_at(dir.path().to_path_buf(), config(1), NOW, epoch).unwrap().0;
    let mut first = open(0);
    for seq in [0, 2, 4] {
        produce(&mut first, seq, 2).unwrap();
    }
    drop(first);
    let mut second = open(1);
    for seq in [6, 8, 10] {
        produce(&mut second, seq, 2).unwrap();
    }
    // Every sealed segment and epoch 1's first one go: the log starts inside its second.
    second.delete_records_before(9).unwrap().run(&SelfFence::unchecked()).unwrap();
    let kept = vec![(8, 8), (10, 10)];
    assert_eq!(batches(&second), kept);
    drop(second);
    let again = open(1);
    assert_eq!((again.log_start_offset(), again.log_end_offset()), (9, 12));
    assert_eq!(batches(&again), kept);
    drop(again);
    let third = open(2);
    assert_eq!((third.log_start_offset(), third.log_end_offset()), (9, 12));
    assert_eq!(batches(&third), kept);
}

#[test]
fn a_fenced_broker_neither_acknowledges_a_deletion_nor_unlinks_its_segments() {
    let dir = tempfile::tempdir().unwrap();
    let mut p = Partition::open_at(dir.path().join("t-0"), config(1), NOW, 0).unwrap().0;
    for seq in [0, 2, 4] {
        produce(&mut p, seq, 2).unwrap();
    }
    let files = || {
        let names = std::fs::read_dir(dir.path().join("t-0")).unwrap();
        names.filter(|e| e.as_ref().unwrap().file_name().to_string_lossy().ends_with(".log")).count()
    };
    let before = files();
    let fence = crate::store::cluster::fence::SelfFence::new(dir.path(), 1, 7);
    crate::store::cluster::fence::fence_broker(dir.path(), 1, 7).unwrap();
    let deletion = p.delete_records_before(5).unwrap();
    assert!(!deletion.segments().is_empty());
    assert!(matches!(deletion.run(&fence), Err(super::DeletionError::Fenced(_))));
    // No segment a newer owner's seal may name was removed.
    assert_eq!(files(), before);
}
