//! Consumer-group requests of the KIP-848 wire tests (groups::migration, groups::mixed_protocols):
//! a broker with the group's topic, a classic member's JoinGroup, LeaveGroup and OffsetCommit, a
//! consumer-protocol member's leave, and the group's type as ListGroups v5 shows it.

use kafka_protocol::messages::create_topics_request::CreatableTopic;
use kafka_protocol::messages::join_group_request::JoinGroupRequestProtocol;
use kafka_protocol::messages::leave_group_request::MemberIdentity;
use kafka_protocol::messages::offset_commit_request::{OffsetCommitRequestPartition, OffsetCommitRequestTopic};
use kafka_protocol::messages::*;
use kafka_protocol::protocol::StrBytes;

use super::{Broker, Client};

pub fn str_bytes(v: &str) -> StrBytes {
    StrBytes::from_string(v.to_string())
}

/// A broker started with `env` and a two-partition `topic` (CreateTopics v7).
pub fn start_with_topic(env: &[(&str, &str)], topic: &str) -> (Broker, Client) {
    let broker = Broker::start_with_env(env);
    let mut c = broker.client();
    let mut t = CreatableTopic::default();
    t.name = TopicName(str_bytes(topic));
    t.num_partitions = 2;
    t.replication_factor = 1;
    let mut req = CreateTopicsRequest::default();
    req.topics = vec![t];
    let resp: CreateTopicsResponse = c.call(ApiKey::CreateTopics, 7, req);
    assert_eq!(resp.topics[0].error_code, 0);
    (broker, c)
}

/// A classic JoinGroup offering the "range" assignor with `metadata` (10 s session and
/// rebalance timeouts); `member` is empty on a first join.
pub fn join_request(group: &str, member: &str, protocol_type: &str, metadata: Vec<u8>) -> JoinGroupRequest {
    let mut join = JoinGroupRequest::default();
    join.group_id = GroupId(str_bytes(group));
    join.member_id = str_bytes(member);
    join.session_timeout_ms = 10_000;
    join.rebalance_timeout_ms = 10_000;
    join.protocol_type = str_bytes(protocol_type);
    let mut proto = JoinGroupRequestProtocol::default();
    proto.name = str_bytes("range");
    proto.metadata = metadata.into();
    join.protocols.push(proto);
    join
}

/// LeaveGroup v3 of one classic member, which must succeed.
pub fn classic_leave(c: &mut Client, group: &str, member: &str) {
    let mut leave = LeaveGroupRequest::default();
    leave.group_id = GroupId(str_bytes(group));
    let mut m = MemberIdentity::default();
    m.member_id = str_bytes(member);
    leave.members.push(m);
    let resp: LeaveGroupResponse = c.call(ApiKey::LeaveGroup, 3, leave);
    assert_eq!((resp.error_code, resp.members[0].error_code), (0, 0));
}

/// OffsetCommit v8 of `offset` on `topic`'s partition 0 by a member at `generation` (a classic
/// member inside a consumer group sends its member epoch there): the partition's error code.
pub fn commit(c: &mut Client, group: &str, topic: &str, member: &str, generation: i32, offset: i64) -> i16 {
    let mut p = OffsetCommitRequestPartition::default();
    p.partition_index = 0;
    p.committed_offset = offset;
    let mut t = OffsetCommitRequestTopic::default();
    t.name = TopicName(str_bytes(topic));
    t.partitions = vec![p];
    let mut req = OffsetCommitRequest::default();
    req.group_id = GroupId(str_bytes(group));
    req.member_id = str_bytes(member);
    req.generation_id_or_member_epoch = generation;
    req.topics = vec![t];
    let resp: OffsetCommitResponse = c.call(ApiKey::OffsetCommit, 8, req);
    resp.topics[0].partitions[0].error_code
}

/// A consumer-protocol member leaves (ConsumerGroupHeartbeat with member epoch -1), which must
/// succeed.
pub fn consumer_leave(c: &mut Client, group: &str, member: &str) {
    let mut req = ConsumerGroupHeartbeatRequest::default();
    req.group_id = GroupId(str_bytes(group));
    req.member_id = str_bytes(member);
    req.member_epoch = -1;
    let resp: ConsumerGroupHeartbeatResponse = c.call(ApiKey::ConsumerGroupHeartbeat, 1, req);
    assert_eq!(resp.error_code, 0);
}

/// The group's type in ListGroups v5 ("classic" or "consumer").
pub fn group_type(c: &mut Client, group: &str) -> String {
    let l: ListGroupsResponse = c.call(ApiKey::ListGroups, 5, ListGroupsRequest::default());
    let g = l.groups.iter().find(|g| g.group_id.0.as_str() == group).expect("listed");
    g.group_type.to_string()
}
