//! WriteTxnMarkers (key 27) v1/v2: a coordinator (a peer broker, or kafka-transactions' abort)
//! asks this broker's partition leaders to write markers (eos-rules 43-49). The response is sent
//! once every marker of the request is durable, grouped by producer id.

use std::rc::Rc;

use kafka_protocol::messages::write_txn_markers_response::{
    WritableTxnMarkerPartitionResult, WritableTxnMarkerResult, WritableTxnMarkerTopicResult,
};
use kafka_protocol::messages::{ProducerId, TopicName, WriteTxnMarkersResponse};
use tokio::sync::oneshot;

use crate::actors::directory::Location;
use crate::actors::group_coordinator::complete_txn_offsets;
use crate::actors::messages::WriteMarkers;
use crate::error_code::ResponseError;
use crate::protocol::txn_markers_codec::{MarkerTopic, TxnMarker};
use crate::protocol::{str_bytes, Session};
use crate::store::auth::acl;
use crate::store::coordinator_key::OFFSETS_PARTITIONS;
use crate::store::ownership::Owned;
use crate::store::partition::marker_txn_version;
use crate::store::txn::write_txn_markers_authorization;
use crate::store::txn::CONSUMER_OFFSETS_TOPIC;

pub async fn handle(s: Rc<Session>, version: i16, markers: Vec<TxnMarker>) -> WriteTxnMarkersResponse {
    let mut r = WriteTxnMarkersResponse::default();
    // eos-rules 43: markers come only from a transaction coordinator (CLUSTER_ACTION on the
    // cluster: the brokers) or an administrator (ALTER on it, Kafka's abortTransaction); anyone
    // else gets CLUSTER_AUTHORIZATION_FAILED on every partition and writes nothing.
    let may_alter = s.authorized_cluster(acl::OP_ALTER);
    let may_act = may_alter || s.authorized_cluster(acl::OP_CLUSTER_ACTION);
    if let Err(e) = write_txn_markers_authorization(may_alter, may_act) {
        r.markers = markers.iter().map(|m| refused_marker(m, e.code())).collect();
        return r;
    }
    for m in markers {
        let mut mr = WritableTxnMarkerResult::default();
        mr.producer_id = ProducerId(m.producer_id);
        for t in &m.topics {
            if t.name == CONSUMER_OFFSETS_TOPIC {
                mr.topics.push(offsets_markers(&s, version, &m, t).await);
                continue;
            }
            let handle = s.topic(&t.name, false).await.ok();
            let mut tr = WritableTxnMarkerTopicResult::default();
            tr.name = TopicName(str_bytes(&t.name));
            for &p in &t.partitions {
                let leader =
                    handle.as_ref().ok_or(ResponseError::UnknownTopicOrPartition.code()).and_then(|h| s.leader(h, p));
                let code = match leader {
                    // eos-rules 44: a partition not hosted here is UNKNOWN_TOPIC_OR_PARTITION; one a
                    // peer leads is NOT_LEADER_OR_FOLLOWER, which the sending coordinator retries.
                    Err(code) => code,
                    Ok(l) => {
                        let (tx, rx) = oneshot::channel();
                        let msg = WriteMarkers {
                            producer_id: m.producer_id,
                            producer_epoch: m.producer_epoch,
                            commit: m.commit,
                            coordinator_epoch: m.coordinator_epoch,
                            txn_version: marker_txn_version(version, m.transaction_version),
                            reply: tx,
                        };
                        match l.send(msg).await {
                            Ok(()) => rx.await.unwrap_or(ResponseError::UnknownTopicOrPartition.code()),
                            Err(_) => ResponseError::UnknownTopicOrPartition.code(),
                        }
                    }
                };
                let mut pr = WritableTxnMarkerPartitionResult::default();
                pr.partition_index = p;
                pr.error_code = code;
                tr.partitions.push(pr);
            }
            mr.topics.push(tr);
        }
        r.markers.push(mr);
    }
    r
}

/// Markers for `__consumer_offsets` partitions: the transaction's offsets become visible (commit)
/// or are dropped (abort) in the group coordinator, when this broker runs it; a coordinator on
/// another broker is NOT_LEADER_OR_FOLLOWER, which the sending coordinator retries (eos-rules 50).
async fn offsets_markers(s: &Session, version: i16, m: &TxnMarker, t: &MarkerTopic) -> WritableTxnMarkerTopicResult {
    let mut tr = WritableTxnMarkerTopicResult::default();
    tr.name = TopicName(str_bytes(&t.name));
    for &p in &t.partitions {
        let code = if !(0..OFFSETS_PARTITIONS).contains(&p) {
            ResponseError::UnknownTopicOrPartition.code()
        } else {
            match s.directory.locate(&Owned::GroupShard(p), || s.groups.get()) {
                Location::Local(g) => {
                    let txn_version = marker_txn_version(version, m.transaction_version);
                    let (pid, epoch, commit) = (m.producer_id, m.producer_epoch, m.commit);
                    complete_txn_offsets(&g, p, pid, epoch, m.coordinator_epoch, txn_version, commit)
                        .await
                        .unwrap_or(ResponseError::NotLeaderOrFollower.code())
                }
                Location::Peer(_) | Location::Offline => ResponseError::NotLeaderOrFollower.code(),
            }
        };
        let mut pr = WritableTxnMarkerPartitionResult::default();
        pr.partition_index = p;
        pr.error_code = code;
        tr.partitions.push(pr);
    }
    tr
}

/// Every partition of marker `m` answered `code`.
fn refused_marker(m: &TxnMarker, code: i16) -> WritableTxnMarkerResult {
    let mut mr = WritableTxnMarkerResult::default();
    mr.producer_id = ProducerId(m.producer_id);
    mr.topics = m
        .topics
        .iter()
        .map(|t| {
            let mut tr = WritableTxnMarkerTopicResult::default();
            tr.name = TopicName(str_bytes(&t.name));
            tr.partitions = t
                .partitions
                .iter()
                .map(|&p| {
                    let mut pr = WritableTxnMarkerPartitionResult::default();
                    pr.partition_index = p;
                    pr.error_code = code;
                    pr
                })
                .collect();
            tr
        })
        .collect();
    mr
}
