//! The active segment is zeroed ahead of its appends (`zero_ahead_bytes`, store::log::segment;
//! set here, as its default depends on the file system the test's directory is on):
//! its file ends in zeros past the last batch, and a restart after kill -9 reads every batch
//! and appends after them; a clean stop cuts the zeros; `0` leaves a file that ends at its last
//! batch.

use std::path::PathBuf;

use crate::common;

use common::fetch::{fetch_request, records};
use common::{batch, create_topic, Broker, Client};
use kafka_protocol::messages::{ApiKey, FetchResponse};

use super::idempotence::produce;

/// The default on ext4 and XFS.
const ZEROS: (&str, &str) = ("KAAS_ZERO_AHEAD_BYTES", "524288");

/// The partition's one segment file.
fn segment(broker: &Broker, topic: &str) -> PathBuf {
    let dir = broker.data_dir().join("topics").join(format!("{topic}-0"));
    let logs: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "log"))
        .collect();
    assert_eq!(logs.len(), 1, "{logs:?}");
    logs[0].clone()
}

/// Where the batches of a segment file end: each is its base offset (8 bytes), its length (4)
/// and that many bytes, with magic 2 at byte 16.
fn batches_end(bytes: &[u8]) -> usize {
    let mut pos = 0;
    while let Some(head) = bytes.get(pos..pos + 17) {
        let len = i32::from_be_bytes(head[8..12].try_into().unwrap());
        let end = pos + 12 + usize::try_from(len).unwrap_or(0);
        if len <= 0 || head[16] != 2 || end > bytes.len() {
            break;
        }
        pos = end;
    }
    pos
}

/// Every record from offset 0 on (a Fetch answers from one segment at a time).
fn read_all(c: &mut Client, topic: &str) -> usize {
    let mut count = 0;
    loop {
        let resp: FetchResponse = c.call(ApiKey::Fetch, 11, fetch_request(topic, 0, count as i64, 0));
        let p = &resp.responses[0].partitions[0];
        assert_eq!(p.error_code, 0);
        match records(p).unwrap().len() {
            0 => return count,
            n => count += n,
        }
    }
}

#[test]
fn the_active_segment_ends_in_zeros_that_a_restart_reads_past() {
    let mut broker = Broker::start_with_env(&[ZEROS]);
    let mut c = broker.client();
    create_topic(&mut c, "zeros");
    // One record a batch: kafka-protocol encodes n records without sequences as n batches.
    for i in 0..3 {
        assert_eq!(produce(&mut c, "zeros", batch(-1, -1, -1, 1, "z")), (0, i, 0));
    }
    let bytes = std::fs::read(segment(&broker, "zeros")).unwrap();
    let end = batches_end(&bytes);
    assert!(end > 0 && bytes.len() > end, "{} bytes, batches end at {end}", bytes.len());
    assert!(bytes[end..].iter().all(|b| *b == 0), "past the batches: zeros only");

    broker.crash_and_restart();
    let mut c = broker.client();
    assert_eq!(read_all(&mut c, "zeros"), 3);
    assert_eq!(produce(&mut c, "zeros", batch(-1, -1, -1, 1, "after")), (0, 3, 0));
    broker.crash_and_restart();
    let mut c = broker.client();
    assert_eq!(read_all(&mut c, "zeros"), 4);
    broker.finish();
}

#[test]
fn a_clean_stop_cuts_the_zeros_and_the_next_start_zeroes_ahead_again() {
    let mut broker = Broker::start_with_env(&[ZEROS]);
    let mut c = broker.client();
    create_topic(&mut c, "trimmed");
    assert_eq!(produce(&mut c, "trimmed", batch(-1, -1, -1, 1, "z")), (0, 0, 0));
    drop(c);
    broker.stop_clean(std::time::Duration::from_secs(20));
    let bytes = std::fs::read(segment(&broker, "trimmed")).unwrap();
    assert_eq!(batches_end(&bytes), bytes.len(), "no zeros left past the last batch");
    // A clean stop: the next start goes on with the same file.
    broker.restart_in_place();
    let mut c = broker.client();
    assert_eq!(produce(&mut c, "trimmed", batch(-1, -1, -1, 1, "y")), (0, 1, 0));
    assert_eq!(read_all(&mut c, "trimmed"), 2);
    let bytes = std::fs::read(segment(&broker, "trimmed")).unwrap();
    assert!(bytes.len() > batches_end(&bytes), "zeros ahead again");
    broker.finish();
}

#[test]
fn zero_ahead_bytes_0_leaves_a_file_ending_at_its_last_batch() {
    let broker = Broker::start_with_env(&[("KAAS_ZERO_AHEAD_BYTES", "0")]);
    let mut c = broker.client();
    create_topic(&mut c, "nozeros");
    assert_eq!(produce(&mut c, "nozeros", batch(-1, -1, -1, 1, "z")), (0, 0, 0));
    let bytes = std::fs::read(segment(&broker, "nozeros")).unwrap();
    assert_eq!(batches_end(&bytes), bytes.len());
    broker.finish();
}
