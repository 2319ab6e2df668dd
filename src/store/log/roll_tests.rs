//! segment.ms: the time-based roll of `Log::append_incoming` (Kafka's LogSegment.shouldRoll).

use super::*;
use crate::store::batch::testutil::{batch, Spec};

#[test]
fn a_batch_more_than_segment_ms_past_the_first_batch_of_the_active_segment_rolls_it() {
    let dir = tempfile::tempdir().unwrap();
    let config = LogConfig { segment_ms: 1_000, ..LogConfig::for_tests(1 << 20) };
    let (mut log, _) = Log::open(dir.path(), config).unwrap();
    let rec = |records, timestamp| batch(Spec { records, timestamp, ..Spec::default() });
    let bases = |log: &Log| log.segment_stats().iter().map(|s| s.base).collect::<Vec<_>>();
    log.append(rec(2, 10_000)).unwrap();
    log.append(rec(1, 11_000)).unwrap();
    assert_eq!(bases(&log), [0], "1,000 ms past the first batch: not more than segment.ms");
    log.append(rec(1, 11_001)).unwrap();
    assert_eq!(bases(&log), [0, 3], "1,001 ms past it: a new segment");
    log.append(rec(1, 9_000)).unwrap();
    assert_eq!(bases(&log), [0, 3], "an older timestamp rolls nothing");
}
