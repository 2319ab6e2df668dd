//! Retention against the real binary: size retention removes the oldest segment files and
//! keeps none of them open; time retention expires an idle partition's last segment too and
//! keeps its idempotent producers.

use crate::common::{create_topic, old_batch as batch, Broker};
use crate::produce::idempotence::{fetch_error, init_pid, latest_offset, produce};
use crate::topics::delete_topics::{deleted_open_files, fetch_from_start, produce as produce_seq, TOPIC};

/// Time retention takes an idle partition's last (active) segment too, as Kafka's does (it rolls
/// a new empty one at the log end first): the log start moves to the end, the offsets below are
/// OFFSET_OUT_OF_RANGE, the file goes from the disk, offsets go on from the end, also after a
/// crash. The idempotent producer's state stays (Kafka keeps producers until
/// producer.id.expiration.ms, not until their records expire): its next sequence is taken and a
/// retry of a batch whose records expired is still answered as the duplicate it is.
#[test]
fn time_retention_expires_an_idle_partition_and_keeps_its_producers() {
    // These batches are stamped in 2023: past the default 7 days of retention.ms.
    let mut broker = Broker::start_with_env(&[("KAAS_RETENTION_CHECK_INTERVAL_MS", "100")]);
    let mut c = broker.client();
    create_topic(&mut c, "idle");
    let pid = init_pid(&mut c);
    assert_eq!(produce(&mut c, "idle", batch(pid, 0, 0, 3, "a")).0, 0);
    assert_eq!(produce(&mut c, "idle", batch(pid, 0, 3, 2, "b")).0, 0);
    let first_segment = broker.data_dir().join("topics").join("idle-0").join("00000000000000000000.log");
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while first_segment.exists() {
        assert!(std::time::Instant::now() < deadline, "the expired active segment is still on disk");
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    const OFFSET_OUT_OF_RANGE: i16 = 1;
    assert_eq!(fetch_error(&mut c, "idle", 0), OFFSET_OUT_OF_RANGE);
    assert_eq!(fetch_error(&mut c, "idle", 5), 0);
    assert_eq!(latest_offset(&mut c, "idle"), 5);
    // eos-rules 19: the retry of an expired batch is still a duplicate (its original offsets).
    assert_eq!(produce(&mut c, "idle", batch(pid, 0, 3, 2, "b")), (0, 3, 5));
    // eos-rules 15/16: the next sequence goes on; a gap is still out of order.
    assert_eq!(produce(&mut c, "idle", batch(pid, 0, 5, 1, "c")), (0, 5, 5));
    assert_eq!(produce(&mut c, "idle", batch(pid, 0, 9, 1, "gap")).0, 45);

    broker.crash_and_restart();
    let mut c = broker.client();
    let (err, base, log_start) = produce(&mut c, "idle", batch(pid, 0, 6, 1, "d"));
    assert_eq!((err, base), (0, 6), "offsets are never given out twice");
    assert!(log_start >= 5, "the log start survived the crash: {log_start}");
    broker.finish();
}

/// The segment files of a partition's log, oldest first.
fn segment_files(broker: &Broker) -> Vec<String> {
    let dir = broker.data_dir().join("topics").join(format!("{TOPIC}-0"));
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .expect("partition dir")
        .filter_map(|e| e.ok())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".log"))
        .collect();
    names.sort();
    names
}

#[test]
fn retention_removes_segment_files_and_keeps_none_open() {
    let broker = Broker::start_with_env(&[
        ("KAAS_SEGMENT_BYTES", "1048576"),
        ("KAAS_RETENTION_BYTES", "1048576"),
        ("KAAS_RETENTION_CHECK_INTERVAL_MS", "100"),
        // Size retention only: the test batches are stamped in 2023.
        ("KAAS_RETENTION_MS", "-1"),
    ]);
    let mut c = broker.client();
    create_topic(&mut c, TOPIC);
    for i in 0..30 {
        produce_seq(&mut c, i * 100);
    }
    fetch_from_start(&mut c);
    // About 3 MiB in 1 MiB segments against a 1 MiB limit: the oldest segments go, from the
    // disk too (the files are removed off the partition's thread, so wait for them).
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    loop {
        let files = segment_files(&broker);
        let left = deleted_open_files(broker.pid());
        if files.len() <= 2 && !files.contains(&"00000000000000000000.log".to_string()) && left.is_empty() {
            break;
        }
        assert!(std::time::Instant::now() < deadline, "segments {files:?}, deleted but open {left:?}");
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    broker.finish();
}
