//! Group APIs over the wire against the real binary: an empty group id is INVALID_GROUP_ID (24)
//! on every group API, as Apache Kafka's GroupCoordinatorService answers (`isGroupIdNotEmpty`),
//! and a TxnOffsetCommit with one adds nothing to the transaction.

use crate::common;

use common::{create_topic, Broker};
use kafka_protocol::messages::join_group_request::JoinGroupRequestProtocol;
use kafka_protocol::messages::leave_group_request::MemberIdentity;
use kafka_protocol::messages::offset_commit_request::{OffsetCommitRequestPartition, OffsetCommitRequestTopic};
use kafka_protocol::messages::txn_offset_commit_request::{
    TxnOffsetCommitRequestPartition, TxnOffsetCommitRequestTopic,
};
use kafka_protocol::messages::*;
use kafka_protocol::protocol::StrBytes;

const INVALID_GROUP_ID: i16 = 24;
const UNKNOWN_TOPIC_OR_PARTITION: i16 = 3;

fn empty() -> GroupId {
    GroupId(StrBytes::from_static_str(""))
}

#[test]
fn an_empty_group_id_is_invalid_group_id_on_every_group_api() {
    let broker = Broker::start();
    let mut c = broker.client();
    // The offset commits below name a partition that exists: unknown ones are answered before
    // the group id is looked at (see the next test).
    create_topic(&mut c, "t");

    let mut join = JoinGroupRequest::default();
    join.group_id = empty();
    join.session_timeout_ms = 10_000;
    join.rebalance_timeout_ms = 10_000;
    join.member_id = StrBytes::from_static_str("m-1");
    join.protocol_type = StrBytes::from_static_str("consumer");
    let mut proto = JoinGroupRequestProtocol::default();
    proto.name = StrBytes::from_static_str("range");
    join.protocols.push(proto);
    let resp: JoinGroupResponse = c.call(ApiKey::JoinGroup, 7, join);
    assert_eq!((resp.error_code, resp.member_id.as_str()), (INVALID_GROUP_ID, "m-1"));

    let mut sync = SyncGroupRequest::default();
    sync.group_id = empty();
    sync.generation_id = 1;
    sync.member_id = StrBytes::from_static_str("m-1");
    let resp: SyncGroupResponse = c.call(ApiKey::SyncGroup, 4, sync);
    assert_eq!(resp.error_code, INVALID_GROUP_ID);

    let mut hb = HeartbeatRequest::default();
    hb.group_id = empty();
    hb.generation_id = 1;
    hb.member_id = StrBytes::from_static_str("m-1");
    let resp: HeartbeatResponse = c.call(ApiKey::Heartbeat, 4, hb);
    assert_eq!(resp.error_code, INVALID_GROUP_ID);

    for version in [1, 3] {
        let mut leave = LeaveGroupRequest::default();
        leave.group_id = empty();
        if version < 3 {
            leave.member_id = StrBytes::from_static_str("m-1");
        } else {
            let mut m = MemberIdentity::default();
            m.member_id = StrBytes::from_static_str("m-1");
            leave.members.push(m);
        }
        let resp: LeaveGroupResponse = c.call(ApiKey::LeaveGroup, version, leave);
        assert_eq!(resp.error_code, INVALID_GROUP_ID, "LeaveGroup v{version}");
    }

    let mut commit = OffsetCommitRequest::default();
    commit.group_id = empty();
    commit.generation_id_or_member_epoch = -1;
    let mut topic = OffsetCommitRequestTopic::default();
    topic.name = TopicName(StrBytes::from_static_str("t"));
    let mut part = OffsetCommitRequestPartition::default();
    part.committed_offset = 5;
    topic.partitions.push(part);
    commit.topics.push(topic);
    let resp: OffsetCommitResponse = c.call(ApiKey::OffsetCommit, 8, commit);
    let codes: Vec<i16> = resp.topics.iter().flat_map(|t| &t.partitions).map(|p| p.error_code).collect();
    assert_eq!(codes, vec![INVALID_GROUP_ID]);

    // TxnOffsetCommit: 24 on every partition, before the transaction membership check (an
    // unknown transactional id would otherwise answer 49 / 48).
    let mut txn = TxnOffsetCommitRequest::default();
    txn.transactional_id = TransactionalId(StrBytes::from_static_str("no-such-txn"));
    txn.group_id = empty();
    txn.producer_id = ProducerId(1000);
    txn.producer_epoch = 0;
    let mut topic = TxnOffsetCommitRequestTopic::default();
    topic.name = TopicName(StrBytes::from_static_str("t"));
    let mut part = TxnOffsetCommitRequestPartition::default();
    part.committed_offset = 5;
    topic.partitions.push(part);
    txn.topics.push(topic);
    let resp: TxnOffsetCommitResponse = c.call(ApiKey::TxnOffsetCommit, 3, txn);
    let codes: Vec<i16> = resp.topics.iter().flat_map(|t| &t.partitions).map(|p| p.error_code).collect();
    assert_eq!(codes, vec![INVALID_GROUP_ID]);

    let groups: ListGroupsResponse = c.call(ApiKey::ListGroups, 4, ListGroupsRequest::default());
    assert!(groups.groups.is_empty(), "no group was created: {:?}", groups.groups);
    broker.finish();
}

fn offset_commit_topic(name: &str, partitions: &[i32]) -> OffsetCommitRequestTopic {
    let mut topic = OffsetCommitRequestTopic::default();
    topic.name = TopicName(StrBytes::from_string(name.to_string()));
    for &p in partitions {
        let mut part = OffsetCommitRequestPartition::default();
        part.partition_index = p;
        part.committed_offset = 7;
        topic.partitions.push(part);
    }
    topic
}

/// Apache Kafka answers a commit for a partition the cluster does not have with
/// UNKNOWN_TOPIC_OR_PARTITION before the group coordinator sees it (eos-rules 56 for
/// TxnOffsetCommit); the known partitions of the same request are committed.
#[test]
fn offsets_for_unknown_partitions_are_unknown_topic_or_partition() {
    let broker = Broker::start();
    let mut c = broker.client();
    create_topic(&mut c, "t");

    let mut commit = OffsetCommitRequest::default();
    commit.group_id = GroupId(StrBytes::from_static_str("g"));
    commit.generation_id_or_member_epoch = -1;
    commit.topics = vec![offset_commit_topic("t", &[0, 5]), offset_commit_topic("no-such-topic", &[0])];
    let resp: OffsetCommitResponse = c.call(ApiKey::OffsetCommit, 8, commit);
    let codes: Vec<(String, i32, i16)> = resp
        .topics
        .iter()
        .flat_map(|t| t.partitions.iter().map(move |p| (t.name.0.to_string(), p.partition_index, p.error_code)))
        .collect();
    assert_eq!(
        codes,
        vec![
            ("t".to_string(), 0, 0),
            ("t".to_string(), 5, UNKNOWN_TOPIC_OR_PARTITION),
            ("no-such-topic".to_string(), 0, UNKNOWN_TOPIC_OR_PARTITION)
        ]
    );

    let mut fetch = OffsetFetchRequest::default();
    fetch.group_id = GroupId(StrBytes::from_static_str("g"));
    fetch.topics = None; // all the group's offsets
    let resp: OffsetFetchResponse = c.call(ApiKey::OffsetFetch, 7, fetch);
    let committed: Vec<(String, i32, i64)> = resp
        .topics
        .iter()
        .flat_map(|t| t.partitions.iter().map(move |p| (t.name.0.to_string(), p.partition_index, p.committed_offset)))
        .collect();
    assert_eq!(committed, vec![("t".to_string(), 0, 7)], "only the known partition was committed");

    // TxnOffsetCommit naming only unknown partitions: 3, before the transaction is looked at
    // (an unknown transactional id would answer otherwise).
    let mut txn = TxnOffsetCommitRequest::default();
    txn.transactional_id = TransactionalId(StrBytes::from_static_str("no-such-txn"));
    txn.group_id = GroupId(StrBytes::from_static_str("g"));
    txn.producer_id = ProducerId(1000);
    let mut topic = TxnOffsetCommitRequestTopic::default();
    topic.name = TopicName(StrBytes::from_static_str("no-such-topic"));
    topic.partitions.push(TxnOffsetCommitRequestPartition::default());
    txn.topics.push(topic);
    let resp: TxnOffsetCommitResponse = c.call(ApiKey::TxnOffsetCommit, 3, txn);
    assert_eq!(resp.topics[0].partitions[0].error_code, UNKNOWN_TOPIC_OR_PARTITION);
    broker.finish();
}
