//! ConsumerGroupDescribe (key 69, KIP-848): a consumer group's epochs, assignor and members with
//! their current and target assignments. A classic or unknown group is GROUP_ID_NOT_FOUND
//! (the admin client then asks DescribeGroups).

use std::collections::HashMap;
use std::rc::Rc;

use kafka_protocol::messages::consumer_group_describe_response::{Assignment, DescribedGroup, Member, TopicPartitions};
use kafka_protocol::messages::{ConsumerGroupDescribeRequest, ConsumerGroupDescribeResponse, GroupId, TopicName};
use tokio::sync::oneshot;
use uuid::Uuid;

use crate::actors::messages::{DescribeConsumerGroups, DescribedConsumerGroup, DescribedConsumerGroups};
use crate::error_code::ResponseError;
use crate::protocol::{str_bytes, Session};
use crate::store::auth::acl;
use crate::store::group::consumer;

/// Kafka's MemberType for a member on the consumer protocol (v1).
const CONSUMER_MEMBER: i8 = 1;

fn assignment(a: &consumer::Assignment, names: &HashMap<Uuid, String>) -> Assignment {
    let mut w = Assignment::default();
    w.topic_partitions = a
        .iter()
        .map(|(id, ps)| {
            let mut tp = TopicPartitions::default();
            tp.topic_id = *id;
            tp.topic_name = TopicName(str_bytes(names.get(id).map_or("", |n| n.as_str())));
            tp.partitions = ps.iter().copied().collect();
            tp
        })
        .collect();
    w
}

fn described(d: DescribedConsumerGroup, version: i16, names: &HashMap<Uuid, String>) -> DescribedGroup {
    let mut g = DescribedGroup::default();
    g.group_id = GroupId(str_bytes(&d.group_id));
    g.group_state = str_bytes(d.state.name());
    g.group_epoch = d.group_epoch;
    g.assignment_epoch = d.assignment_epoch;
    g.assignor_name = str_bytes(&d.assignor);
    g.members = d
        .members
        .into_iter()
        .map(|dm| {
            let m = dm.member;
            let mut w = Member::default();
            w.member_id = str_bytes(&m.member_id);
            w.instance_id = m.instance_id.as_deref().map(str_bytes);
            w.rack_id = m.rack_id.as_deref().map(str_bytes);
            w.member_epoch = m.member_epoch;
            w.client_id = str_bytes(&m.client_id);
            w.client_host = str_bytes(&m.client_host);
            w.subscribed_topic_names = m.subscribed_topic_names.iter().map(|t| TopicName(str_bytes(t))).collect();
            w.subscribed_topic_regex = m.subscribed_topic_regex.as_deref().map(str_bytes);
            w.assignment = assignment(&m.assigned, names);
            w.target_assignment = assignment(&dm.target, names);
            if version >= 1 {
                w.member_type = CONSUMER_MEMBER;
            }
            w
        })
        .collect();
    g
}

fn failed(id: &str, e: ResponseError, message: Option<String>) -> DescribedGroup {
    let mut g = DescribedGroup::default();
    g.group_id = GroupId(str_bytes(id));
    g.error_code = e.code();
    g.error_message = message.map(|m| str_bytes(&m));
    g
}

pub async fn handle(s: Rc<Session>, version: i16, req: ConsumerGroupDescribeRequest) -> ConsumerGroupDescribeResponse {
    let mut r = ConsumerGroupDescribeResponse::default();
    let (empty, ids): (Vec<String>, Vec<String>) =
        req.group_ids.iter().map(|g| g.0.to_string()).partition(|id| id.is_empty());
    // DESCRIBE on each group; the others are GROUP_AUTHORIZATION_FAILED.
    let (ids, denied): (Vec<String>, Vec<String>) =
        ids.into_iter().partition(|g| s.authorized(acl::OP_DESCRIBE, acl::RESOURCE_GROUP, g));
    r.groups.extend(denied.iter().map(|id| failed(id, ResponseError::GroupAuthorizationFailed, None)));
    r.groups.extend(empty.iter().map(|id| failed(id, ResponseError::InvalidGroupId, None)));
    let (here, elsewhere) = s.split_groups(ids);
    r.groups.extend(elsewhere.into_iter().map(|(id, e)| failed(&id, e.error(), None)));
    if here.is_empty() {
        return r;
    }
    let (tx, rx) = oneshot::channel();
    let answer = match s.groups.get() {
        Some(groups) => match groups.send(DescribeConsumerGroups { group_ids: here.clone(), reply: tx }).await {
            Ok(()) => rx.await.ok(),
            Err(_) => None,
        },
        None => None,
    };
    let Some(DescribedConsumerGroups { groups, topic_names }) = answer else {
        r.groups.extend(here.iter().map(|id| failed(id, ResponseError::CoordinatorNotAvailable, None)));
        return r;
    };
    for (id, d) in groups {
        r.groups.push(match d {
            Ok(d) => {
                let mut g = described(d, version, &topic_names);
                // KIP-430: what the client may do on the group.
                if req.include_authorized_operations {
                    g.authorized_operations = s.authorized_operations(&acl::GROUP_OPERATIONS, acl::RESOURCE_GROUP, &id);
                }
                g
            }
            Err(e) => failed(&id, e.error(), Some(e.to_string())),
        });
    }
    r
}
