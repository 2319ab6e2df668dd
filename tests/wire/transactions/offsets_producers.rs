//! The producer state of a `__consumer_offsets` partition against the real binary
//! (store::group::offsets_producers): a transaction marker written there at a higher epoch (as
//! `kafka-transactions abort` or a coordinator after a fence writes it) raises the producer's
//! epoch on that partition, so a TxnOffsetCommit below it is INVALID_PRODUCER_EPOCH before the
//! transaction coordinator is asked (Apache Kafka 4.4 checks its producer state when the
//! verification starts; the coordinator here would still accept epoch 0), a legacy marker below
//! it is refused too (eos-rules 46), and both hold after a restart.

use crate::common;

use std::time::Duration;

use common::txn::{init_producer_id, topic_name, transactional_id};
use common::{create_topic, Broker, Client};
use kafka_protocol::messages::write_txn_markers_request::{WritableTxnMarker, WritableTxnMarkerTopic};
use kafka_protocol::messages::*;
use kafka_protocol::protocol::StrBytes;

const GROUP: &str = "g";
const INVALID_PRODUCER_EPOCH: i16 = 47;

fn txn_offset_commit(c: &mut Client, pid: i64, epoch: i16) -> i16 {
    common::txn::txn_offset_commit(c, "tx", GROUP, "t", (pid, epoch), 5)
}

/// WriteTxnMarkers v1 ABORT for the group's offsets partition: its error code.
fn abort_marker(c: &mut Client, pid: i64, epoch: i16) -> i16 {
    let mut topic = WritableTxnMarkerTopic::default();
    topic.name = topic_name("__consumer_offsets");
    topic.partition_indexes = vec![kaas::store::coordinator_key::offsets_partition(GROUP)];
    let mut m = WritableTxnMarker::default();
    m.producer_id = ProducerId(pid);
    m.producer_epoch = epoch;
    m.transaction_result = false;
    m.coordinator_epoch = 0;
    m.topics.push(topic);
    let mut req = WriteTxnMarkersRequest::default();
    req.markers.push(m);
    let resp: WriteTxnMarkersResponse = c.call(ApiKey::WriteTxnMarkers, 1, req);
    resp.markers[0].topics[0].partitions[0].error_code
}

fn committed_offset(c: &mut Client) -> i64 {
    let mut t = offset_fetch_request::OffsetFetchRequestTopic::default();
    t.name = topic_name("t");
    t.partition_indexes = vec![0];
    let mut req = OffsetFetchRequest::default();
    req.group_id = GroupId(StrBytes::from_static_str(GROUP));
    req.topics = Some(vec![t]);
    let resp: OffsetFetchResponse = c.call(ApiKey::OffsetFetch, 5, req);
    resp.topics[0].partitions[0].committed_offset
}

#[test]
fn a_marker_at_a_higher_epoch_fences_older_txn_offset_commits_across_a_restart() {
    let mut broker = Broker::start();
    let mut c = broker.client();
    create_topic(&mut c, "t");
    let (err, pid, epoch) = init_producer_id(&mut c, "tx");
    assert_eq!((err, epoch), (0, 0));
    let mut add = AddOffsetsToTxnRequest::default();
    add.transactional_id = transactional_id("tx");
    add.producer_id = ProducerId(pid);
    add.producer_epoch = 0;
    add.group_id = GroupId(StrBytes::from_static_str(GROUP));
    let resp: AddOffsetsToTxnResponse = c.call(ApiKey::AddOffsetsToTxn, 2, add);
    assert_eq!(resp.error_code, 0);
    assert_eq!(txn_offset_commit(&mut c, pid, 0), 0);

    // A hand-written abort at epoch 3 ends the pending offsets and raises the epoch there.
    assert_eq!(abort_marker(&mut c, pid, 3), 0);
    assert_eq!(committed_offset(&mut c), -1, "the aborted offsets never became visible");
    // The coordinator still has (pid, 0) Ongoing with the offsets partition in it, so only the
    // offsets partition's producer state refuses this.
    assert_eq!(txn_offset_commit(&mut c, pid, 0), INVALID_PRODUCER_EPOCH);
    // eos-rules 46: a legacy marker below the producer's epoch there.
    assert_eq!(abort_marker(&mut c, pid, 2), INVALID_PRODUCER_EPOCH);

    broker.stop_clean(Duration::from_secs(20));
    broker.restart_in_place();
    let mut c = broker.client();
    assert_eq!(txn_offset_commit(&mut c, pid, 0), INVALID_PRODUCER_EPOCH, "the epoch survives a restart");
    assert_eq!(abort_marker(&mut c, pid, 2), INVALID_PRODUCER_EPOCH);
    assert_eq!(abort_marker(&mut c, pid, 3), 0, "a marker at the producer's epoch is still written");
    assert_eq!(committed_offset(&mut c), -1);
    broker.finish();
}
