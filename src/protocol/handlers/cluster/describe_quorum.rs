//! DescribeQuorum (key 55): kaas has no KRaft quorum; the live brokers share the cluster's
//! metadata through the data directory and its file locks. Every broker answers itself (Kafka's
//! brokers forward to the controller) from the same ownership table, so each describes the same
//! quorum: the live brokers as voters, the controller of Metadata and DescribeCluster (the lowest
//! live node id) as leader, and no metadata log (store::quorum).

use std::rc::Rc;

use kafka_protocol::messages::describe_quorum_response::{Listener, Node, PartitionData, ReplicaState, TopicData};
use kafka_protocol::messages::{BrokerId, DescribeQuorumRequest, DescribeQuorumResponse, TopicName};

use crate::error_code::ResponseError;
use crate::protocol::{str_bytes, Session};
use crate::store::auth::acl;
use crate::store::clock::now_ms;
use crate::store::quorum::{asks_for_metadata_partition, describe, Replica, METADATA_PARTITION, METADATA_TOPIC};

/// The listener name a voter's endpoint is given: kaas serves plaintext Kafka only.
const LISTENER: &str = "PLAINTEXT";

fn replica_state(r: &Replica) -> ReplicaState {
    let mut out = ReplicaState::default();
    out.replica_id = BrokerId(r.node_id);
    out.log_end_offset = r.log_end_offset;
    out.last_fetch_timestamp = r.last_fetch_ms;
    out.last_caught_up_timestamp = r.last_caught_up_ms;
    out
}

/// Kafka's answer to a request for anything but the metadata partition: every partition asked
/// gets UNKNOWN_TOPIC_OR_PARTITION, with no top-level error.
fn unknown_partitions(req: DescribeQuorumRequest) -> DescribeQuorumResponse {
    let e = ResponseError::UnknownTopicOrPartition;
    let mut resp = DescribeQuorumResponse::default();
    resp.topics = req
        .topics
        .into_iter()
        .map(|t| {
            let mut out = TopicData::default();
            out.topic_name = t.topic_name;
            out.partitions = t
                .partitions
                .iter()
                .map(|p| {
                    let mut pd = PartitionData::default();
                    pd.partition_index = p.partition_index;
                    pd.error_code = e.code();
                    pd.error_message = Some(str_bytes(&e.to_string()));
                    pd
                })
                .collect();
            out
        })
        .collect();
    resp
}

pub async fn handle(s: Rc<Session>, version: i16, req: DescribeQuorumRequest) -> DescribeQuorumResponse {
    // DESCRIBE on the cluster, as Kafka checks.
    if !s.authorized_cluster(acl::OP_DESCRIBE) {
        let mut r = DescribeQuorumResponse::default();
        r.error_code = crate::error_code::ResponseError::ClusterAuthorizationFailed.code();
        r.error_message = Some(crate::protocol::str_bytes("Cluster authorization failed."));
        return r;
    }
    let asked: Vec<(String, Vec<i32>)> = req
        .topics
        .iter()
        .map(|t| (t.topic_name.0.to_string(), t.partitions.iter().map(|p| p.partition_index).collect()))
        .collect();
    if !asks_for_metadata_partition(&asked) {
        return unknown_partitions(req);
    }
    let table = s.directory.ownership();
    let live: Vec<i32> = table.brokers().map(|b| b.node_id).collect();
    let quorum = describe(&live, table.controller(), now_ms());

    let mut partition = PartitionData::default();
    partition.partition_index = METADATA_PARTITION;
    partition.leader_id = BrokerId(quorum.leader_id);
    partition.leader_epoch = quorum.leader_epoch;
    partition.high_watermark = quorum.high_watermark;
    partition.current_voters = quorum.voters.iter().map(replica_state).collect();
    partition.observers = quorum.observers.iter().map(replica_state).collect();
    let mut topic = TopicData::default();
    topic.topic_name = TopicName(str_bytes(METADATA_TOPIC));
    topic.partitions = vec![partition];
    let mut resp = DescribeQuorumResponse::default();
    resp.topics = vec![topic];
    if version >= 2 {
        // Each voter's endpoint, as Kafka lists its controllers' listeners.
        resp.nodes = quorum
            .voters
            .iter()
            .map(|v| {
                let mut node = Node::default();
                node.node_id = BrokerId(v.node_id);
                node.listeners = table
                    .broker(v.node_id)
                    .and_then(|b| Some((b, u16::try_from(b.port).ok()?)))
                    .map(|(b, port)| {
                        let mut l = Listener::default();
                        l.name = str_bytes(LISTENER);
                        l.host = str_bytes(&b.host);
                        l.port = port;
                        vec![l]
                    })
                    .unwrap_or_default();
                node
            })
            .collect();
    }
    resp
}
