//! The KIP-848 consumer group protocol on the wire, against the real binary: ApiVersions'
//! group.version, ConsumerGroupHeartbeat (join, revoke-then-assign between two members, fenced
//! epochs, leave, session timeout), ConsumerGroupDescribe, ListGroups' type, DescribeGroups on a
//! consumer group, and OffsetCommit v9 / OffsetFetch v9 with member epochs.

use crate::common;

use std::collections::BTreeSet;
use std::time::Duration;

use common::{Broker, Client};
use kafka_protocol::messages::consumer_group_heartbeat_request::TopicPartitions;
use kafka_protocol::messages::create_topics_request::CreatableTopic;
use kafka_protocol::messages::metadata_request as metadata_request_topic;
use kafka_protocol::messages::offset_commit_request::{OffsetCommitRequestPartition, OffsetCommitRequestTopic};
use kafka_protocol::messages::offset_fetch_request::OffsetFetchRequestGroup;
use kafka_protocol::messages::*;
use kafka_protocol::protocol::StrBytes;
use uuid::Uuid;

const GROUP: &str = "g848";

fn s(v: &str) -> StrBytes {
    StrBytes::from_string(v.to_string())
}

fn create(c: &mut Client, name: &str, partitions: i32) -> Uuid {
    let mut t = CreatableTopic::default();
    t.name = TopicName(s(name));
    t.num_partitions = partitions;
    t.replication_factor = 1;
    let mut req = CreateTopicsRequest::default();
    req.topics = vec![t];
    let resp: CreateTopicsResponse = c.call(ApiKey::CreateTopics, 7, req);
    assert_eq!(resp.topics[0].error_code, 0);
    resp.topics[0].topic_id
}

fn heartbeat(
    c: &mut Client,
    member: &str,
    epoch: i32,
    owned: Option<(Uuid, &BTreeSet<i32>)>,
    join: bool,
) -> ConsumerGroupHeartbeatResponse {
    let mut req = ConsumerGroupHeartbeatRequest::default();
    req.group_id = GroupId(s(GROUP));
    req.member_id = s(member);
    req.member_epoch = epoch;
    req.rebalance_timeout_ms = if join { 30_000 } else { -1 };
    if join {
        req.subscribed_topic_names = Some(vec![TopicName(s("t848"))]);
    }
    req.topic_partitions = owned.map(|(id, ps)| {
        let mut tp = TopicPartitions::default();
        tp.topic_id = id;
        tp.partitions = ps.iter().copied().collect();
        if ps.is_empty() {
            vec![]
        } else {
            vec![tp]
        }
    });
    if join && req.topic_partitions.is_none() {
        req.topic_partitions = Some(vec![]);
    }
    c.call(ApiKey::ConsumerGroupHeartbeat, 1, req)
}

fn assigned(r: &ConsumerGroupHeartbeatResponse) -> Option<BTreeSet<i32>> {
    r.assignment.as_ref().map(|a| a.topic_partitions.iter().flat_map(|tp| tp.partitions.iter().copied()).collect())
}

fn commit(c: &mut Client, member: &str, epoch: i32) -> i16 {
    let mut p = OffsetCommitRequestPartition::default();
    p.partition_index = 0;
    p.committed_offset = 0;
    let mut t = OffsetCommitRequestTopic::default();
    t.name = TopicName(s("t848"));
    t.partitions = vec![p];
    let mut req = OffsetCommitRequest::default();
    req.group_id = GroupId(s(GROUP));
    req.member_id = s(member);
    req.generation_id_or_member_epoch = epoch;
    req.topics = vec![t];
    let resp: OffsetCommitResponse = c.call(ApiKey::OffsetCommit, 9, req);
    resp.topics[0].partitions[0].error_code
}

fn fetch_error(c: &mut Client, member: &str, epoch: i32) -> i16 {
    let mut g = OffsetFetchRequestGroup::default();
    g.group_id = GroupId(s(GROUP));
    g.member_id = Some(s(member));
    g.member_epoch = epoch;
    let mut req = OffsetFetchRequest::default();
    req.groups = vec![g];
    let resp: OffsetFetchResponse = c.call(ApiKey::OffsetFetch, 9, req);
    resp.groups[0].error_code
}

fn describe(c: &mut Client) -> consumer_group_describe_response::DescribedGroup {
    let mut req = ConsumerGroupDescribeRequest::default();
    req.group_ids = vec![GroupId(s(GROUP))];
    let mut resp: ConsumerGroupDescribeResponse = c.call(ApiKey::ConsumerGroupDescribe, 1, req);
    resp.groups.remove(0)
}

#[test]
fn api_versions_finalize_group_version_1_and_list_the_consumer_group_apis() {
    let broker = Broker::start();
    let mut c = broker.client();
    let resp: ApiVersionsResponse = c.call(ApiKey::ApiVersions, 3, ApiVersionsRequest::default());
    let range =
        |k: ApiKey| resp.api_keys.iter().find(|a| a.api_key == k as i16).map(|a| (a.min_version, a.max_version));
    assert_eq!(range(ApiKey::ConsumerGroupHeartbeat), Some((0, 1)));
    assert_eq!(range(ApiKey::ConsumerGroupDescribe), Some((0, 1)));
    let gv = resp.finalized_features.iter().find(|f| f.name.as_str() == "group.version").expect("group.version");
    assert_eq!((gv.min_version_level, gv.max_version_level), (1, 1));

    let off = Broker::start_with_env(&[("KAAS_GROUP_VERSION", "0")]);
    let mut c = off.client();
    let resp: ApiVersionsResponse = c.call(ApiKey::ApiVersions, 3, ApiVersionsRequest::default());
    assert!(!resp.api_keys.iter().any(|a| a.api_key == ApiKey::ConsumerGroupHeartbeat as i16));
    assert!(!resp.finalized_features.iter().any(|f| f.name.as_str() == "group.version"));
    broker.finish();
    off.finish();
}

#[test]
fn two_members_revoke_then_assign_leave_fence_and_time_out() {
    let broker = Broker::start_with_env(&[
        ("KAAS_GROUP_CONSUMER_SESSION_TIMEOUT_MS", "3000"),
        ("KAAS_GROUP_CONSUMER_HEARTBEAT_INTERVAL_MS", "1000"),
    ]);
    let mut c = broker.client();
    let id = create(&mut c, "t848", 4);
    let all: BTreeSet<i32> = (0..4).collect();

    // A joins alone: epoch 1, every partition.
    let a = heartbeat(&mut c, "member-a", 0, None, true);
    assert_eq!((a.error_code, a.member_epoch, a.heartbeat_interval_ms), (0, 1, 1000));
    assert_eq!(a.member_id.as_deref(), Some("member-a"));
    assert_eq!(assigned(&a), Some(all.clone()));

    // B joins: epoch 2 but nothing yet, A still owns its target partitions.
    let b = heartbeat(&mut c, "member-b", 0, None, true);
    assert_eq!((b.error_code, b.member_epoch), (0, 2));
    assert_eq!(assigned(&b), Some(BTreeSet::new()));

    // A must revoke first (it stays at epoch 1), then acknowledges and moves to epoch 2.
    let a = heartbeat(&mut c, "member-a", 1, Some((id, &all)), false);
    assert_eq!((a.error_code, a.member_epoch), (0, 1));
    let kept = assigned(&a).expect("revocation");
    assert_eq!(kept.len(), 2);
    let b_early = heartbeat(&mut c, "member-b", 2, Some((id, &BTreeSet::new())), false);
    assert!(assigned(&b_early).is_none_or(|p| p.is_empty()), "nothing before A revoked: {b_early:?}");
    let a = heartbeat(&mut c, "member-a", 1, Some((id, &kept)), false);
    assert_eq!((a.error_code, a.member_epoch), (0, 2));
    let b = heartbeat(&mut c, "member-b", 2, Some((id, &BTreeSet::new())), false);
    let b_got = assigned(&b).expect("assignment once released");
    assert_eq!(b_got, all.difference(&kept).copied().collect());

    // Fenced epochs, unknown members.
    assert_eq!(heartbeat(&mut c, "member-a", 7, Some((id, &kept)), false).error_code, 110);
    assert_eq!(heartbeat(&mut c, "nobody", 2, Some((id, &kept)), false).error_code, 25);

    // Offsets with member epochs.
    assert_eq!(commit(&mut c, "member-b", 1), 113, "STALE_MEMBER_EPOCH");
    assert_eq!(commit(&mut c, "nobody", 2), 25);
    assert_eq!(commit(&mut c, "member-b", 2), 0);
    assert_eq!(fetch_error(&mut c, "member-b", 1), 113);
    assert_eq!(fetch_error(&mut c, "member-b", 2), 0);

    // ConsumerGroupDescribe, ListGroups, DescribeGroups.
    let heartbeat_b = heartbeat(&mut c, "member-b", 2, Some((id, &b_got)), false);
    assert_eq!(heartbeat_b.error_code, 0);
    let d = describe(&mut c);
    assert_eq!(d.error_code, 0);
    assert_eq!((d.group_state.as_str(), d.group_epoch, d.assignment_epoch), ("Stable", 2, 2));
    assert_eq!(d.assignor_name.as_str(), "uniform");
    assert_eq!(d.members.len(), 2);
    assert!(d.members.iter().all(|m| m.member_type == 1 && m.member_epoch == 2));
    let names: BTreeSet<&str> =
        d.members.iter().flat_map(|m| m.assignment.topic_partitions.iter().map(|t| t.topic_name.0.as_str())).collect();
    assert_eq!(names, BTreeSet::from(["t848"]));
    let mut list = ListGroupsRequest::default();
    list.types_filter = vec![s("consumer")];
    let l: ListGroupsResponse = c.call(ApiKey::ListGroups, 5, list);
    let g = l.groups.iter().find(|g| g.group_id.0.as_str() == GROUP).expect("listed");
    assert_eq!(
        (g.group_type.as_str(), g.protocol_type.as_str(), g.group_state.as_str()),
        ("consumer", "consumer", "Stable")
    );
    let mut list = ListGroupsRequest::default();
    list.types_filter = vec![s("classic")];
    let l: ListGroupsResponse = c.call(ApiKey::ListGroups, 5, list);
    assert!(l.groups.iter().all(|g| g.group_id.0.as_str() != GROUP));
    // DescribeGroups is for classic groups (Apache Kafka 4.4): Dead, and from v6 an error.
    let mut dg = DescribeGroupsRequest::default();
    dg.groups = vec![GroupId(s(GROUP))];
    let v5: DescribeGroupsResponse = c.call(ApiKey::DescribeGroups, 5, dg.clone());
    assert_eq!((v5.groups[0].error_code, v5.groups[0].group_state.as_str()), (0, "Dead"));
    let v6: DescribeGroupsResponse = c.call(ApiKey::DescribeGroups, 6, dg);
    assert_eq!((v6.groups[0].error_code, v6.groups[0].group_state.as_str()), (69, "Dead"));
    assert_eq!(v6.groups[0].error_message.as_deref(), Some(format!("Group {GROUP} is not a classic group.").as_str()));
    // An unknown group likewise, "not found" (kafka-consumer-groups --describe of Kafka 4.4:
    // "GroupIdNotFoundException: Group nope not found.").
    let mut dg = DescribeGroupsRequest::default();
    dg.groups = vec![GroupId(s("nope"))];
    let v5: DescribeGroupsResponse = c.call(ApiKey::DescribeGroups, 5, dg.clone());
    assert_eq!((v5.groups[0].error_code, v5.groups[0].group_state.as_str()), (0, "Dead"));
    let v6: DescribeGroupsResponse = c.call(ApiKey::DescribeGroups, 6, dg);
    assert_eq!((v6.groups[0].error_code, v6.groups[0].group_state.as_str()), (69, "Dead"));
    assert_eq!(v6.groups[0].error_message.as_deref(), Some("Group nope not found."));

    // B leaves: A gets everything at the next epoch.
    let leave = heartbeat(&mut c, "member-b", -1, None, false);
    assert_eq!((leave.error_code, leave.member_epoch), (0, -1));
    let a = heartbeat(&mut c, "member-a", 2, Some((id, &kept)), false);
    assert_eq!((a.error_code, a.member_epoch), (0, 3));
    assert_eq!(assigned(&a), Some(all.clone()));

    // A goes silent: after the session timeout it is gone.
    std::thread::sleep(Duration::from_millis(3600));
    assert_eq!(heartbeat(&mut c, "member-a", 3, Some((id, &all)), false).error_code, 25);
    assert_eq!(describe(&mut c).group_state.as_str(), "Empty");
    broker.finish();
}

#[test]
fn a_static_member_keeps_its_instance_id_through_keepalives() {
    // A client may send the instance id when joining and leave it out after (null:
    // unchanged; franz-go does); ConsumerGroupDescribe must still show it, or an admin tool that removes a
    // static member by instance id (franz-go's test cleanup) finds nobody.
    let broker = Broker::start();
    let mut c = broker.client();
    let id = create(&mut c, "t848", 2);
    let mut join = ConsumerGroupHeartbeatRequest::default();
    join.group_id = GroupId(s(GROUP));
    join.member_id = s("member-s");
    join.instance_id = Some(s("instance-1"));
    join.rebalance_timeout_ms = 30_000;
    join.subscribed_topic_names = Some(vec![TopicName(s("t848"))]);
    join.topic_partitions = Some(vec![]);
    let j: ConsumerGroupHeartbeatResponse = c.call(ApiKey::ConsumerGroupHeartbeat, 1, join);
    assert_eq!((j.error_code, j.member_epoch), (0, 1));
    let got = assigned(&j).expect("assignment");
    let keepalive = heartbeat(&mut c, "member-s", 1, Some((id, &got)), false);
    assert_eq!(keepalive.error_code, 0);
    let d = describe(&mut c);
    assert_eq!(d.members.len(), 1);
    assert_eq!(d.members[0].instance_id.as_deref(), Some("instance-1"));
    // Leaving for a while (-2) without the instance id is refused, as by Apache Kafka 4.4.
    let refused = heartbeat(&mut c, "member-s", -2, None, false);
    assert_eq!((refused.error_code, refused.error_message.as_deref()), (42, Some("InstanceId can't be null.")));
    // A full leave by member id alone (what such a tool sends) frees its partitions at once.
    assert_eq!(heartbeat(&mut c, "member-s", -1, None, false).error_code, 0);
    assert_eq!(describe(&mut c).group_state.as_str(), "Empty");
    broker.finish();
}

#[test]
fn metadata_answers_topics_asked_by_id() {
    // librdkafka resolves the topic ids of a KIP-848 assignment with Metadata by id.
    let broker = Broker::start();
    let mut c = broker.client();
    let id = create(&mut c, "t848", 2);
    let mut known = metadata_request_topic::MetadataRequestTopic::default();
    known.topic_id = id;
    known.name = None;
    let mut unknown = metadata_request_topic::MetadataRequestTopic::default();
    unknown.topic_id = Uuid::from_u128(42);
    unknown.name = None;
    let mut req = MetadataRequest::default();
    req.topics = Some(vec![known, unknown]);
    let resp: MetadataResponse = c.call(ApiKey::Metadata, 12, req);
    assert_eq!(resp.topics[0].error_code, 0);
    assert_eq!(resp.topics[0].name.as_ref().map(|n| n.0.as_str()), Some("t848"));
    assert_eq!(resp.topics[0].partitions.len(), 2);
    assert_eq!((resp.topics[1].error_code, resp.topics[1].topic_id), (100, Uuid::from_u128(42)));
    // The Java client (a SubscriptionPattern consumer) sends an empty name beside the id: still
    // by id, as Kafka answers.
    let mut java = metadata_request_topic::MetadataRequestTopic::default();
    java.topic_id = id;
    java.name = Some(StrBytes::from_static_str("").into());
    let mut req = MetadataRequest::default();
    req.topics = Some(vec![java]);
    let resp: MetadataResponse = c.call(ApiKey::Metadata, 12, req);
    assert_eq!(resp.topics[0].error_code, 0);
    assert_eq!(resp.topics[0].name.as_ref().map(|n| n.0.as_str()), Some("t848"));
    broker.finish();
}
