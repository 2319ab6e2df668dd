//! The request paths in one process, without sockets: a broker's actors on a temp dir, a
//! `Session`, and requests through the dispatch table. The Directory is local-only first; then
//! leases handed to a peer in the ownership table show what the shared-disk cluster will see
//! (NOT_LEADER_OR_FOLLOWER / NOT_COORDINATOR, Metadata and FindCoordinator naming the peer).

use crate::common;

use std::rc::Rc;
use std::sync::Arc;

use kaas::protocol::{dispatch, Decoded, Request, Session};
use kaas::server::Broker;
use kaas::store::coordinator_key::{offsets_partition, txn_shard};
use kaas::store::ownership::{self, Lease, Owned};
use kafka_protocol::messages::create_topics_request::CreatableTopic;
use kafka_protocol::messages::fetch_request::{FetchPartition, FetchTopic};
use kafka_protocol::messages::list_offsets_request::{ListOffsetsPartition, ListOffsetsTopic};
use kafka_protocol::messages::produce_request::{PartitionProduceData, TopicProduceData};
use kafka_protocol::messages::*;
use kafka_protocol::protocol::StrBytes;

const NOT_LEADER_OR_FOLLOWER: i16 = 6;
const NOT_COORDINATOR: i16 = 16;
const SHARDS: usize = 2;

fn s(v: &str) -> StrBytes {
    StrBytes::from_string(v.to_string())
}

async fn call(session: &Rc<Session>, key: ApiKey, version: i16, request: RequestKind) -> ResponseKind {
    let header = RequestHeader::default().with_request_api_key(key as i16).with_request_api_version(version);
    let d = Decoded { header, api_key: key, request: Request::Kafka(Box::new(request)) };
    dispatch(session.clone(), d).await.await.expect("an answer").response
}

async fn create(session: &Rc<Session>, topic: &str, partitions: i32) {
    let mut t = CreatableTopic::default();
    t.name = TopicName(s(topic));
    t.num_partitions = partitions;
    t.replication_factor = 1;
    let mut req = CreateTopicsRequest::default();
    req.topics.push(t);
    req.timeout_ms = 5_000;
    let ResponseKind::CreateTopics(r) = call(session, ApiKey::CreateTopics, 5, RequestKind::CreateTopics(req)).await
    else {
        panic!("CreateTopics answer")
    };
    assert_eq!(r.topics[0].error_code, 0, "{:?}", r.topics[0].error_message);
}

/// Produce (acks=all) of one record; (error, base offset). (The test encoder puts records
/// without sequence numbers in one batch each, and Produce takes one batch per partition.)
async fn produce(session: &Rc<Session>, topic: &str, partition: i32) -> (i16, i64) {
    let mut p = PartitionProduceData::default();
    p.index = partition;
    p.records = Some(common::batch(-1, -1, -1, 1, "in-process"));
    let mut t = TopicProduceData::default();
    t.name = TopicName(s(topic));
    t.partition_data.push(p);
    let mut req = ProduceRequest::default();
    req.acks = -1;
    req.timeout_ms = 5_000;
    req.topic_data.push(t);
    let ResponseKind::Produce(r) = call(session, ApiKey::Produce, 9, RequestKind::Produce(req)).await else {
        panic!("Produce answer")
    };
    let p = &r.responses[0].partition_responses[0];
    (p.error_code, p.base_offset)
}

/// Fetch from offset 0; (error, high watermark, record bytes).
async fn fetch(session: &Rc<Session>, topic: &str, partition: i32) -> (i16, i64, usize) {
    let mut p = FetchPartition::default();
    p.partition = partition;
    p.partition_max_bytes = 1 << 20;
    let mut t = FetchTopic::default();
    t.topic = TopicName(s(topic));
    t.partitions.push(p);
    let mut req = FetchRequest::default();
    req.max_wait_ms = 0;
    req.max_bytes = 1 << 20;
    req.topics.push(t);
    let ResponseKind::Fetch(r) = call(session, ApiKey::Fetch, 11, RequestKind::Fetch(req)).await else {
        panic!("Fetch answer")
    };
    let p = &r.responses[0].partitions[0];
    (p.error_code, p.high_watermark, p.records.as_ref().map_or(0, |b| b.len()))
}

/// ListOffsets for `timestamp` (-1 latest, -2 earliest); (error, offset).
async fn list_offset(session: &Rc<Session>, topic: &str, partition: i32, timestamp: i64) -> (i16, i64) {
    let mut p = ListOffsetsPartition::default();
    p.partition_index = partition;
    p.timestamp = timestamp;
    let mut t = ListOffsetsTopic::default();
    t.name = TopicName(s(topic));
    t.partitions.push(p);
    let mut req = ListOffsetsRequest::default();
    req.replica_id = BrokerId(-1);
    req.topics.push(t);
    let ResponseKind::ListOffsets(r) = call(session, ApiKey::ListOffsets, 4, RequestKind::ListOffsets(req)).await
    else {
        panic!("ListOffsets answer")
    };
    let p = &r.topics[0].partitions[0];
    (p.error_code, p.offset)
}

/// Runs `body` against a fresh broker on a temp dir, then shuts it down.
fn with_broker<F>(body: impl FnOnce(Rc<Session>) -> F)
where
    F: std::future::Future<Output = ()>,
{
    let dir = tempfile::tempdir().expect("temp dir");
    let settings = Arc::new(common::cluster::in_process_settings(dir.path(), SHARDS));
    let system = actix::System::new();
    let broker = system.block_on(async { Broker::start(&settings) }).expect("broker starts");
    let cluster_id: Arc<str> = "in-process".into();
    let session = broker.session(&settings, &cluster_id, "127.0.0.1:1".into());
    system.block_on(body(session));
    system.block_on(broker.shutdown());
    broker.join();
}

#[test]
fn produce_fetch_and_list_offsets_through_a_local_directory() {
    with_broker(|session| async move {
        create(&session, "t", 2).await;
        assert_eq!(produce(&session, "t", 0).await, (0, 0));
        assert_eq!(produce(&session, "t", 0).await, (0, 1));
        let (code, hw, bytes) = fetch(&session, "t", 0).await;
        assert_eq!((code, hw), (0, 2));
        assert!(bytes > 0, "the records come back");
        assert_eq!(list_offset(&session, "t", 0, -1).await, (0, 2));
        assert_eq!(list_offset(&session, "t", 0, -2).await, (0, 0));
        assert_eq!(list_offset(&session, "t", 1, -1).await, (0, 0));
        // Past the topic's partitions.
        assert_eq!(produce(&session, "t", 2).await.0, 3);
    });
}

#[test]
fn what_a_peer_owns_is_answered_with_the_peer() {
    with_broker(|session| async move {
        create(&session, "t", 2).await;
        let peer = ownership::Broker {
            node_id: 2,
            host: "peer.example".into(),
            port: 9999,
            rack: None,
            endpoints: Vec::new(),
        };
        let moved = Owned::Partition { topic: "t".into(), partition: 1 };
        let txn = Owned::TxnShard(u32::try_from(txn_shard("tx", SHARDS)).expect("shard"));
        let group = Owned::GroupShard(offsets_partition("g"));
        session.directory.update(|o| {
            o.set_peers([peer.clone()]);
            for what in [moved.clone(), txn.clone(), group.clone()] {
                assert!(o.grant(what, Lease { node_id: 2, epoch: 1 }));
            }
        });

        // The partition a peer leads: every partition API sends the client there.
        assert_eq!(produce(&session, "t", 1).await.0, NOT_LEADER_OR_FOLLOWER);
        assert_eq!(fetch(&session, "t", 1).await.0, NOT_LEADER_OR_FOLLOWER);
        assert_eq!(list_offset(&session, "t", 1, -1).await.0, NOT_LEADER_OR_FOLLOWER);
        assert_eq!(produce(&session, "t", 0).await, (0, 0), "the local partition still serves");

        let mut req = MetadataRequest::default();
        let mut topic = metadata_request::MetadataRequestTopic::default();
        topic.name = Some(TopicName(s("t")));
        req.topics = Some(vec![topic]);
        let ResponseKind::Metadata(m) = call(&session, ApiKey::Metadata, 9, RequestKind::Metadata(req)).await else {
            panic!("Metadata answer")
        };
        let leaders: Vec<(i32, i32, i32)> =
            m.topics[0].partitions.iter().map(|p| (p.partition_index, p.leader_id.0, p.leader_epoch)).collect();
        assert_eq!(leaders, vec![(0, session.node_id(), 0), (1, 2, 1)]);
        assert!(m.brokers.iter().any(|b| b.node_id.0 == 2 && b.host.as_str() == "peer.example" && b.port == 9999));

        // The transaction coordinator of "tx" is the peer's.
        let mut req = FindCoordinatorRequest::default();
        req.key_type = 1;
        req.coordinator_keys = vec![s("tx")];
        let ResponseKind::FindCoordinator(f) =
            call(&session, ApiKey::FindCoordinator, 4, RequestKind::FindCoordinator(req)).await
        else {
            panic!("FindCoordinator answer")
        };
        assert_eq!((f.coordinators[0].node_id.0, f.coordinators[0].host.as_str()), (2, "peer.example"));
        let mut req = InitProducerIdRequest::default();
        req.transactional_id = Some(TransactionalId(s("tx")));
        req.transaction_timeout_ms = 60_000;
        req.producer_id = ProducerId(-1);
        req.producer_epoch = -1;
        let ResponseKind::InitProducerId(r) =
            call(&session, ApiKey::InitProducerId, 4, RequestKind::InitProducerId(req)).await
        else {
            panic!("InitProducerId answer")
        };
        assert_eq!(r.error_code, NOT_COORDINATOR);

        // The group coordinator of "g" too.
        let mut hb = HeartbeatRequest::default();
        hb.group_id = GroupId(s("g"));
        hb.generation_id = 1;
        hb.member_id = s("m");
        let ResponseKind::Heartbeat(h) = call(&session, ApiKey::Heartbeat, 4, RequestKind::Heartbeat(hb)).await else {
            panic!("Heartbeat answer")
        };
        assert_eq!(h.error_code, NOT_COORDINATOR);
        let mut req = DescribeGroupsRequest::default();
        req.groups = vec![GroupId(s("g"))];
        let ResponseKind::DescribeGroups(d) =
            call(&session, ApiKey::DescribeGroups, 5, RequestKind::DescribeGroups(req)).await
        else {
            panic!("DescribeGroups answer")
        };
        assert_eq!(d.groups[0].error_code, NOT_COORDINATOR);

        // Nobody leads it for a moment (the peer died), then this broker takes it back.
        session.directory.update(|o| o.revoke(&moved));
        // Kafka answers NOT_LEADER_OR_FOLLOWER there too (only Metadata says LEADER_NOT_AVAILABLE).
        assert_eq!(produce(&session, "t", 1).await.0, NOT_LEADER_OR_FOLLOWER);
        let here = session.node_id();
        session.directory.update(|o| o.grant(moved.clone(), Lease { node_id: here, epoch: 2 }));
        assert_eq!(produce(&session, "t", 1).await, (0, 0));
    });
}
