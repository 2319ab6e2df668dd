//! No acknowledged commit is lost to a crash, through the real binary: an OffsetCommit, and a TxnOffsetCommit whose
//! transaction was committed (EndTxn answered), is there after a kill -9 that follows the answer
//! at once: the group coordinator flushes its state before it answers, and a committed
//! transaction's offsets become visible once its markers are written again after the restart
//! (OffsetFetch with require_stable says UNSTABLE_OFFSET_COMMIT until then, as Kafka's does);
//! an aborted one's never become visible, before or after the crash.

use crate::common;

use std::time::{Duration, Instant};

use common::groups::{commit, str_bytes as s};
use common::txn::{end_txn, init_producer_id, topic_name, transactional_id};
use common::{create_topic, Broker, Client};
use kafka_protocol::messages::*;

const TOPIC: &str = "acked";
const UNSTABLE_OFFSET_COMMIT: i16 = 88;

/// OffsetFetch v7 (require_stable) of `group`'s offset for partition 0: (error, offset).
fn fetch_stable(c: &mut Client, group: &str) -> (i16, i64) {
    let mut t = offset_fetch_request::OffsetFetchRequestTopic::default();
    t.name = topic_name(TOPIC);
    t.partition_indexes = vec![0];
    let mut req = OffsetFetchRequest::default();
    req.group_id = GroupId(s(group));
    req.topics = Some(vec![t]);
    req.require_stable = true;
    let resp: OffsetFetchResponse = c.call(ApiKey::OffsetFetch, 7, req);
    let p = &resp.topics[0].partitions[0];
    (if resp.error_code != 0 { resp.error_code } else { p.error_code }, p.committed_offset)
}

/// The stable committed offset, waiting (at most 20 s) while a transaction's markers are written.
fn stable_offset(c: &mut Client, group: &str) -> i64 {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        match fetch_stable(c, group) {
            (0, offset) => return offset,
            (UNSTABLE_OFFSET_COMMIT, _) if Instant::now() < deadline => std::thread::sleep(Duration::from_millis(100)),
            (code, _) => panic!("OffsetFetch answered {code}"),
        }
    }
}

fn txn_offset_commit(c: &mut Client, txn: &str, group: &str, pid: i64, epoch: i16, offset: i64) -> i16 {
    common::txn::txn_offset_commit(c, txn, group, TOPIC, (pid, epoch), offset)
}

fn add_offsets(c: &mut Client, txn: &str, group: &str, pid: i64, epoch: i16) -> i16 {
    let mut req = AddOffsetsToTxnRequest::default();
    req.transactional_id = transactional_id(txn);
    req.producer_id = ProducerId(pid);
    req.producer_epoch = epoch;
    req.group_id = GroupId(s(group));
    let resp: AddOffsetsToTxnResponse = c.call(ApiKey::AddOffsetsToTxn, 2, req);
    resp.error_code
}

#[test]
fn an_acknowledged_offset_commit_is_there_after_kill_9_right_after_its_answer() {
    let mut broker = Broker::start();
    create_topic(&mut broker.client(), TOPIC);
    for round in 1..=3 {
        let mut c = broker.client();
        let offset = 1_000 * round;
        // A simple (group-less) commit: generation -1, no member, as kafka-consumer-groups and
        // assign()-consumers send it.
        assert_eq!(commit(&mut c, "plain", TOPIC, "", -1, offset), 0);
        broker.crash_and_restart();
        assert_eq!(stable_offset(&mut broker.client(), "plain"), offset, "round {round}");
    }
    broker.finish();
}

#[test]
fn a_committed_transactions_offsets_are_there_after_kill_9_right_after_end_txn() {
    let mut broker = Broker::start();
    create_topic(&mut broker.client(), TOPIC);
    for round in 1..=3 {
        let mut c = broker.client();
        let (err, pid, epoch) = init_producer_id(&mut c, "copier");
        assert_eq!(err, 0);
        assert_eq!(add_offsets(&mut c, "copier", "eos", pid, epoch), 0);
        let offset = 10 * round;
        assert_eq!(txn_offset_commit(&mut c, "copier", "eos", pid, epoch, offset), 0);
        assert_eq!(end_txn(&mut c, "copier", pid, epoch, true), 0);
        broker.crash_and_restart();
        let mut c = broker.client();
        assert_eq!(stable_offset(&mut c, "eos"), offset, "round {round}: the committed offsets");
        let (err, pid, epoch) = init_producer_id(&mut c, "copier");
        assert_eq!(err, 0);
        assert_eq!(add_offsets(&mut c, "copier", "eos", pid, epoch), 0);
        assert_eq!(txn_offset_commit(&mut c, "copier", "eos", pid, epoch, offset + 5), 0);
        assert_eq!(end_txn(&mut c, "copier", pid, epoch, false), 0);
        broker.crash_and_restart();
        assert_eq!(stable_offset(&mut broker.client(), "eos"), offset, "round {round}: the abort is not applied");
    }
    broker.finish();
}
