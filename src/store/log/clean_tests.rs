//! eos-rules 61-70: the cleaner's rules, one test each, on real logs in a temporary directory
//! (a pass planned, run and installed as the partition does it).

use std::collections::HashMap;
use std::sync::atomic::AtomicBool;

use bytes::Bytes;

use super::clean::PassInputs;
use super::{Log, LogConfig};
use crate::store::batch::{self, BatchHeader};
use crate::store::cleaner::batch_records::{self, Record};
use crate::store::cleaner::select::{self, SegmentStat};
use crate::store::cleaner::Compaction;
use crate::store::control;
use crate::store::producer_state::CompletedTxn;

const NOW: i64 = 1_000_000;
const DAY: i64 = 86_400_000;

type Kv<'a> = (&'a str, Option<&'a str>);
/// (offset, key, value) of a record read back.
type Rec = (i64, String, Option<String>);

/// A data batch of `recs` (key, value; None is a tombstone) from producer `pid`.
fn data(pid: i64, seq: i32, txn: bool, recs: &[Kv]) -> Vec<u8> {
    let records: Vec<Record> = recs
        .iter()
        .enumerate()
        .map(|(i, (k, v))| Record {
            offset_delta: i as i32,
            timestamp: NOW,
            key: Some(Bytes::copy_from_slice(k.as_bytes())),
            value: v.map(|v| Bytes::copy_from_slice(v.as_bytes())),
            headers: Bytes::from_static(&[0]),
        })
        .collect();
    let n = records.len() as i32;
    let h = BatchHeader {
        base_offset: 0,
        batch_length: 0,
        magic: 2,
        crc: 0,
        attributes: if txn { 0x10 } else { 0 },
        last_offset_delta: n - 1,
        base_timestamp: NOW,
        max_timestamp: NOW,
        producer_id: pid,
        producer_epoch: if pid >= 0 { 0 } else { -1 },
        base_sequence: if pid >= 0 { seq } else { -1 },
        records_count: n,
    };
    let mut b = batch_records::encode(&h, &records, None).unwrap();
    batch_records::seal_batch(&mut b, 0);
    b
}

fn plain(recs: &[Kv]) -> Vec<u8> {
    data(-1, -1, false, recs)
}

fn marker(pid: i64, commit: bool) -> Vec<u8> {
    control::marker_batch(pid, 0, control::Marker { commit, coordinator_epoch: 0 }, NOW).to_vec()
}

/// A log of one segment per batch appended so far (so that each can be cleaned).
struct TestLog {
    _dir: tempfile::TempDir,
    log: Log,
    aborted: Vec<CompletedTxn>,
    last_data: HashMap<i64, i64>,
    /// ABORT markers the installed passes removed.
    dropped_aborts: Vec<i64>,
}

impl TestLog {
    fn new() -> TestLog {
        let dir = tempfile::tempdir().unwrap();
        let (log, _) = Log::open(dir.path(), LogConfig::for_tests(1 << 20)).unwrap();
        TestLog { _dir: dir, log, aborted: Vec::new(), last_data: HashMap::new(), dropped_aborts: Vec::new() }
    }

    /// Appends and rolls: returns the batch's base offset.
    fn append(&mut self, b: Vec<u8>) -> i64 {
        let h = self.log.append(Bytes::from(b)).unwrap();
        if h.has_producer_id() && !h.is_control() {
            self.last_data.insert(h.producer_id, h.last_offset());
        }
        self.log.roll().unwrap();
        h.base_offset
    }

    fn abort(&mut self, pid: i64, first: i64) {
        let at = self.append(marker(pid, false));
        self.aborted.push(CompletedTxn { producer_id: pid, first_offset: first, last_offset: at, aborted: true });
    }

    /// One pass over everything but the active segment, at `now`, with `buffer` bytes of key map.
    fn clean_with(&mut self, now: i64, buffer: usize) {
        let end = self.log.next_offset();
        let job = self.log.plan_cleaning(end, true).expect("something to clean");
        let inputs = PassInputs {
            aborted: self.aborted.clone(),
            last_data_offsets: self.last_data.clone(),
            now_ms: now,
            delete_retention_ms: DAY,
            dedupe_buffer_bytes: buffer,
            max_decoded_bytes: 1 << 20,
        };
        let cleaned = job.run(&inputs, &mut |_| {}, || Ok(()), &AtomicBool::new(false)).unwrap();
        let installed = self.log.install_cleaned(cleaned);
        assert!(installed.unused.is_empty());
        self.dropped_aborts.extend(installed.dropped_aborts);
        for p in installed.replaced {
            std::fs::remove_file(p).unwrap();
        }
    }

    fn clean(&mut self, now: i64) {
        self.clean_with(now, 1 << 20);
    }

    /// Every batch: (base offset, last offset, records as (offset, key, value)).
    fn batches(&self) -> Vec<(BatchHeader, Vec<Rec>)> {
        read_all(&self.log)
            .into_iter()
            .map(|(h, b)| {
                let recs = batch_records::decode(&b, &h, 1 << 20).unwrap();
                let s = |b: &Bytes| String::from_utf8_lossy(b).into_owned();
                let recs = recs
                    .iter()
                    .map(|r| {
                        (
                            h.base_offset + i64::from(r.offset_delta),
                            r.key.as_ref().map(s).unwrap_or_default(),
                            r.value.as_ref().map(s),
                        )
                    })
                    .collect();
                (h, recs)
            })
            .collect()
    }

    /// The data records left: (offset, key, value).
    fn records(&self) -> Vec<Rec> {
        self.batches().into_iter().filter(|(h, _)| !h.is_control()).flat_map(|(_, r)| r).collect()
    }

    fn markers(&self) -> Vec<i64> {
        self.batches().into_iter().filter(|(h, _)| h.is_control()).map(|(h, _)| h.base_offset).collect()
    }
}

/// What a pass needs when the log has no producer state or aborted transaction.
fn no_producers_at(now_ms: i64) -> PassInputs {
    PassInputs {
        aborted: vec![],
        last_data_offsets: HashMap::new(),
        now_ms,
        delete_retention_ms: DAY,
        dedupe_buffer_bytes: 1 << 20,
        max_decoded_bytes: 1 << 20,
    }
}

/// Every batch of the log, across its segments (a read returns one segment's).
fn read_all(log: &Log) -> Vec<(BatchHeader, Bytes)> {
    let mut out = Vec::new();
    let mut at = log.log_start_offset();
    while at < log.next_offset() {
        let got = log.read(at, log.next_offset(), usize::MAX).unwrap();
        let before = out.len();
        for (h, b) in batch::iter_batches(&got) {
            at = h.last_offset() + 1;
            out.push((h, b));
        }
        if out.len() == before {
            break;
        }
    }
    out
}

fn rec(offset: i64, key: &str, value: Option<&str>) -> Rec {
    (offset, key.to_string(), value.map(str::to_string))
}

#[test]
fn rule_61_the_latest_record_of_each_key_stays_at_its_offset() {
    let mut t = TestLog::new();
    t.append(plain(&[("a", Some("1")), ("b", Some("1"))]));
    t.append(plain(&[("a", Some("2"))]));
    t.append(plain(&[("c", Some("1")), ("b", Some("2"))]));
    t.clean(NOW);
    assert_eq!(t.records(), vec![rec(2, "a", Some("2")), rec(3, "c", Some("1")), rec(4, "b", Some("2"))]);
    // Offsets never move, and a read from an offset cleaned away starts at the next one.
    let from_0 = t.log.read(0, t.log.next_offset(), 1 << 20).unwrap();
    assert_eq!(batch::iter_batches(&from_0).next().map(|(h, _)| h.base_offset), Some(2));
    assert_eq!(t.log.next_offset(), 5);
}

#[test]
fn rule_62_cleaning_stops_before_the_active_segment_the_last_stable_offset_and_the_min_lag() {
    let seg = |base, next, ts| SegmentStat {
        base,
        next_offset: next,
        size: 10,
        max_timestamp: ts,
        first_batch_timestamp: ts,
    };
    let segs = [seg(0, 10, 100), seg(10, 20, 200), seg(20, 30, 300), seg(30, 35, 400)];
    let c = Compaction::default();
    assert_eq!(select::cleanable_end(&segs, 0, 1_000, NOW, &c), 30, "never the active segment");
    assert_eq!(select::cleanable_end(&segs, 0, 25, NOW, &c), 20, "never at or past the last stable offset");
    let lag = Compaction { min_compaction_lag_ms: NOW - 250, ..c };
    assert_eq!(select::cleanable_end(&segs, 0, 1_000, NOW, &lag), 20, "nothing newer than min.compaction.lag.ms");
}

#[test]
fn rule_62_the_dirtiest_log_first_and_max_compaction_lag_forces_a_pass() {
    let seg =
        |base, next, size| SegmentStat { base, next_offset: next, size, max_timestamp: 5, first_batch_timestamp: 5 };
    let segs = [seg(0, 10, 100), seg(10, 20, 100), seg(20, 30, 10)];
    let c = Compaction::default();
    let half = select::dirtiness(&segs, 10, 100, NOW, &c);
    assert_eq!((half.dirty_bytes, half.clean_bytes, half.cleanable_end), (100, 100, 20));
    assert!(half.needs_cleaning(&c), "0.5 reaches the default ratio");
    let clean = select::dirtiness(&segs, 20, 100, NOW, &c);
    assert!(!clean.needs_cleaning(&c));
    let all = select::dirtiness(&segs, 0, 100, NOW, &c);
    let (a, b) = ("a", "b");
    assert_eq!(select::dirtiest([(&a, &half, &c), (&b, &all, &c)]), Some(&"b"));
    let strict = Compaction { min_cleanable_dirty_ratio: 0.9, ..c };
    assert!(!half.needs_cleaning(&strict));
    let due = Compaction { max_compaction_lag_ms: 10, ..strict };
    let late = select::dirtiness(&segs, 10, 100, NOW, &due);
    assert!(late.compaction_delay_ms > 0 && late.needs_cleaning(&due), "KIP-354: past max.compaction.lag.ms");
    let active = SegmentStat { base: 20, next_offset: 30, size: 10, max_timestamp: 5, first_batch_timestamp: 5 };
    assert!(select::must_roll_active(&active, NOW, &due) && !select::must_roll_active(&active, NOW, &c));
}

#[test]
fn rule_63_the_records_of_an_aborted_transaction_go_and_are_not_mapped() {
    let mut t = TestLog::new();
    t.append(plain(&[("a", Some("kept"))]));
    let first = t.append(data(7, 0, true, &[("a", Some("aborted")), ("b", Some("aborted"))]));
    t.abort(7, first);
    t.append(plain(&[("c", Some("1"))]));
    t.last_data.clear(); // producer 7 wrote again since (its last batch is elsewhere)
    t.clean(NOW);
    assert_eq!(t.records(), vec![rec(0, "a", Some("kept")), rec(4, "c", Some("1"))]);
}

#[test]
fn rule_64_a_marker_stays_while_its_transaction_has_data_then_goes_after_delete_retention() {
    let mut t = TestLog::new();
    let first = t.append(data(7, 0, true, &[("a", Some("committed"))]));
    let commit = t.append(marker(7, true));
    let aborted = t.append(data(8, 0, true, &[("b", Some("aborted"))]));
    t.abort(8, aborted);
    t.append(plain(&[("a", Some("newer"))]));
    t.last_data.clear();
    assert_eq!(first, 0);
    // The pass removes the data; no data of either transaction is left, so the markers get
    // their delete horizon and stay until it.
    t.clean(NOW);
    assert_eq!(t.markers(), vec![commit, 3]);
    assert!(t
        .batches()
        .iter()
        .filter(|(h, _)| h.is_control())
        .all(|(h, _)| batch_records::delete_horizon(h) == Some(NOW + DAY)));
    assert!(t.log.horizon_due(NOW + DAY) && !t.log.horizon_due(NOW + DAY - 1));
    t.clean(NOW + DAY - 1);
    assert_eq!(t.markers().len(), 2, "not before delete.retention.ms");
    t.clean(NOW + DAY);
    assert_eq!(t.markers(), Vec::<i64>::new());
    assert_eq!(t.records(), vec![rec(4, "a", Some("newer"))]);
    // A marker whose transaction still has data stays, horizon or not.
    let mut t = TestLog::new();
    t.append(data(7, 0, true, &[("a", Some("committed"))]));
    let commit = t.append(marker(7, true));
    t.last_data.clear();
    t.clean(NOW);
    t.clean(NOW + 2 * DAY);
    assert_eq!((t.markers(), t.records()), (vec![commit], vec![rec(0, "a", Some("committed"))]));
}

#[test]
fn rule_65_a_tombstone_goes_delete_retention_after_it_was_first_cleaned() {
    let mut t = TestLog::new();
    t.append(plain(&[("a", Some("1"))]));
    t.append(plain(&[("a", None)]));
    t.append(plain(&[("z", Some("1"))]));
    t.clean(NOW);
    assert_eq!(t.records(), vec![rec(1, "a", None), rec(2, "z", Some("1"))], "the tombstone stays, the value goes");
    t.clean(NOW + DAY - 1);
    assert_eq!(t.records().len(), 2);
    t.clean(NOW + DAY);
    assert_eq!(t.records(), vec![rec(2, "z", Some("1"))]);
}

#[test]
fn rule_66_the_last_batch_of_each_producer_stays_emptied() {
    let mut t = TestLog::new();
    t.append(data(5, 0, false, &[("a", Some("1"))]));
    t.append(data(5, 1, false, &[("a", Some("2"))]));
    t.append(plain(&[("a", Some("3"))]));
    t.clean(NOW);
    let b = t.batches();
    let (h, recs) = b.iter().find(|(h, _)| h.producer_id == 5).expect("producer 5's last batch stays");
    assert_eq!((h.base_offset, h.base_sequence, h.producer_epoch, recs.len()), (1, 1, 0, 0));
    assert_eq!(b.iter().filter(|(h, _)| h.producer_id == 5).count(), 1, "its older batch goes");
    assert_eq!(t.records(), vec![rec(2, "a", Some("3"))]);
}

#[test]
fn rule_67_a_cleaned_segment_ends_where_the_segments_it_replaces_ended() {
    let mut t = TestLog::new();
    t.append(plain(&[("a", Some("1")), ("b", Some("1"))]));
    t.append(plain(&[("a", Some("2")), ("b", Some("2"))]));
    t.append(plain(&[("a", Some("3")), ("b", Some("3"))]));
    // The pass cleans [0, 6): with segments of 1 MiB, one group, whose last batch stays whole.
    t.clean(NOW);
    assert_eq!(t.records(), vec![rec(4, "a", Some("3")), rec(5, "b", Some("3"))]);
    let dir = t._dir.path().to_path_buf();
    // Reopened: the cleaned file is one segment ending at 6, the active one follows.
    drop(t.log);
    let (log, info) = Log::open(&dir, LogConfig::for_tests(1 << 20)).unwrap();
    assert_eq!((info.truncated_bytes, log.next_offset()), (0, 6));
    // A later group whose last batch went entirely still ends at its old end (an empty batch).
    let mut t = TestLog::new();
    t.append(plain(&[("a", Some("1"))]));
    t.append(plain(&[("b", Some("1"))]));
    t.append(plain(&[("b", Some("2"))]));
    t.append(plain(&[("a", Some("2"))]));
    let end = t.log.next_offset();
    let job = t.log.plan_cleaning(3, false).unwrap();
    assert_eq!(job.cleanable_end(), 3);
    let inputs = no_producers_at(NOW);
    let cleaned = job.run(&inputs, &mut |_| {}, || Ok(()), &AtomicBool::new(false)).unwrap();
    t.log.install_cleaned(cleaned);
    assert_eq!(t.log.next_offset(), end);
    let dir = t._dir.path().to_path_buf();
    drop(t.log);
    let (log, _) = Log::open(&dir, LogConfig::for_tests(1 << 20)).unwrap();
    assert_eq!(log.next_offset(), end, "no gap at the cleaned segment's end: nothing after it was cut");
}

#[test]
fn rule_68_a_crash_during_the_swap_leaves_the_old_files_or_the_new_one() {
    let mut t = TestLog::new();
    t.append(plain(&[("a", Some("1"))]));
    t.append(plain(&[("a", Some("2"))]));
    t.append(plain(&[("b", Some("1"))]));
    let dir = t._dir.path().to_path_buf();
    let before = t.records();
    let end = t.log.next_offset();
    let job = t.log.plan_cleaning(end, false).unwrap();
    let inputs = no_producers_at(NOW);
    // The crash after the new file was named, before the old ones were deleted.
    let cleaned = job.run(&inputs, &mut |_| {}, || Ok(()), &AtomicBool::new(false)).unwrap();
    drop(cleaned);
    // A crash of another pass before its file was named: an unfinished file.
    std::fs::write(dir.join("00000000000000000000.c9.log.cleaning"), b"half").unwrap();
    drop(t.log);
    let (log, info) = Log::open(&dir, LogConfig::for_tests(1 << 20)).unwrap();
    assert_eq!((info.truncated_bytes, log.next_offset()), (0, end));
    let offsets: Vec<i64> = read_all(&log).iter().map(|(h, _)| h.base_offset).collect();
    assert_eq!(offsets, vec![1, 2], "the cleaned file, once: no duplicate of the covered files");
    let names: Vec<String> =
        std::fs::read_dir(&dir).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect();
    assert!(!names.iter().any(|n| n.ends_with(".cleaning")), "{names:?}");
    assert!(!names.contains(&"00000000000000000001.log".to_string()), "the covered files are deleted: {names:?}");
    assert_eq!(before.len(), 3);
    // A takeover by a later epoch trusts the cleaned file, skips what it covers.
    drop(log);
    let (log, info) = Log::open_at(&dir, LogConfig::for_tests(1 << 20), 2).unwrap();
    assert_eq!((info.took_over_from, log.next_offset()), (Some(0), end));
    assert_eq!(read_all(&log).iter().map(|(h, _)| h.base_offset).collect::<Vec<_>>(), vec![1, 2]);
}

#[test]
fn rule_68_a_takeover_skips_files_a_predecessors_cleaning_covers() {
    let mut t = TestLog::new();
    t.append(plain(&[("a", Some("1"))]));
    t.append(plain(&[("a", Some("2"))]));
    let dir = t._dir.path().to_path_buf();
    let end = t.log.next_offset();
    let job = t.log.plan_cleaning(end, false).unwrap();
    let inputs = no_producers_at(NOW);
    // The predecessor named its cleaned file and was cut off before deleting what it covers.
    drop(job.run(&inputs, &mut |_| {}, || Ok(()), &AtomicBool::new(false)).unwrap());
    drop(t.log);
    let (log, _) = Log::open_at(&dir, LogConfig::for_tests(1 << 20), 3).unwrap();
    assert_eq!(log.next_offset(), end);
    assert_eq!(read_all(&log).iter().map(|(h, _)| h.base_offset).collect::<Vec<_>>(), vec![1]);
    assert!(
        !dir.join("00000000000000000001.log").exists(),
        "a file the predecessor's cleaning covers is no one's: the successor deletes it after its seal"
    );
    assert!(dir.join("00000000000000000000.c1.s3.log").exists(), "the cleaned file it trusts, through its own link");
}

#[test]
fn rule_69_a_log_with_more_keys_than_the_map_holds_is_cleaned_in_several_passes() {
    let mut t = TestLog::new();
    for round in 0..2 {
        for k in 0..4 {
            let v = format!("{round}");
            t.append(plain(&[(&format!("k{k}"), Some(&v))]));
        }
    }
    // 24 bytes an entry at 90%: a 100-byte map holds 3 keys.
    t.clean_with(NOW, 100);
    assert!(t.records().len() > 4, "one pass cannot dedupe every key: {:?}", t.records());
    for _ in 0..4 {
        if t.log.plan_cleaning(t.log.next_offset(), false).is_none() {
            break;
        }
        t.clean_with(NOW, 100);
    }
    let keys: Vec<String> = t.records().into_iter().map(|r| format!("{}={}", r.1, r.2.unwrap_or_default())).collect();
    assert_eq!(keys, vec!["k0=1", "k1=1", "k2=1", "k3=1"]);
}

#[test]
fn rule_70_a_record_without_a_key_goes() {
    let mut t = TestLog::new();
    let mut r = Record {
        offset_delta: 0,
        timestamp: NOW,
        key: None,
        value: Some(Bytes::from_static(b"v")),
        headers: Bytes::from_static(&[0]),
    };
    let h = BatchHeader::parse(&plain(&[("x", Some("1"))])).unwrap();
    let mut b = batch_records::encode(&h, std::slice::from_ref(&r), None).unwrap();
    batch_records::seal_batch(&mut b, 0);
    t.append(b);
    r.key = Some(Bytes::from_static(b"k"));
    t.append(plain(&[("k", Some("1"))]));
    t.clean(NOW);
    assert_eq!(t.records(), vec![rec(1, "k", Some("1"))]);
}

#[test]
fn rule_63_a_committed_transaction_after_an_aborted_one_stays_once_the_abort_marker_went() {
    let mut t = TestLog::new();
    let first = t.append(data(7, 0, true, &[("a", Some("aborted"))]));
    t.abort(7, first);
    t.append(data(7, 1, true, &[("b", Some("committed"))]));
    t.append(marker(7, true));
    t.append(plain(&[("z", Some("1"))]));
    t.last_data.clear();
    t.clean(NOW);
    t.clean(NOW + DAY);
    assert!(!t.markers().contains(&1), "the abort marker went");
    assert_eq!(t.dropped_aborts, vec![1], "its aborted-index entry goes with it");
    // The aborted index still names the aborted transaction: a later pass must not take the
    // producer's next (committed) transaction for it.
    t.clean(NOW + 2 * DAY);
    assert_eq!(t.records(), vec![rec(2, "b", Some("committed")), rec(4, "z", Some("1"))]);
}

#[test]
fn rule_65_a_past_horizon_left_on_a_batch_does_not_make_passes_due() {
    let mut t = TestLog::new();
    t.append(plain(&[("a", Some("1")), ("b", None)]));
    t.append(plain(&[("z", Some("1"))]));
    t.clean(NOW);
    assert!(t.log.horizon_due(NOW + DAY), "the tombstone's horizon makes a pass due");
    t.clean(NOW + DAY);
    assert_eq!(t.records(), vec![rec(0, "a", Some("1")), rec(2, "z", Some("1"))]);
    // The batch keeps its (past) horizon with "a" in it: nothing more can go by time alone.
    assert!(!t.log.horizon_due(NOW + 2 * DAY), "no pass is due again and again");
}

#[test]
fn rule_67_a_read_goes_past_segments_left_with_only_empty_batches() {
    let mut t = TestLog::new();
    // Three groups whose records all go to later versions: each keeps only its end batch.
    for _ in 0..3 {
        t.append(plain(&[("a", Some("old"))]));
    }
    t.append(plain(&[("a", Some("new"))]));
    let end = t.log.next_offset();
    // One segment a group (1 byte of segment.bytes each): four cleaned files.
    t.log.set_config(LogConfig::for_tests(1));
    t.clean(NOW);
    let first = t.log.read(0, end, 1 << 20).unwrap();
    let got: Vec<(i64, i32)> = batch::iter_batches(&first).map(|(h, _)| (h.base_offset, h.records_count)).collect();
    assert_eq!(got, vec![(3, 1)], "one read reaches the record, past the empty end batches");
    // With nothing after them below the bound, the empty batches are answered: the reader moves on.
    let tail = t.log.read(0, 3, 1 << 20).unwrap();
    assert_eq!(batch::iter_batches(&tail).map(|(h, _)| h.records_count).collect::<Vec<_>>(), vec![0]);
}
