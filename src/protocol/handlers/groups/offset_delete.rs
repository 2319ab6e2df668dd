//! OffsetDelete (key 47): GROUP_SUBSCRIBED_TO_TOPIC for topics a member still consumes.

use std::rc::Rc;

use kafka_protocol::messages::offset_delete_response::{OffsetDeleteResponsePartition, OffsetDeleteResponseTopic};
use kafka_protocol::messages::{OffsetDeleteRequest, OffsetDeleteResponse, TopicName};
use tokio::sync::oneshot;

use crate::actors::messages::{GroupAdmin, GroupAdminAnswer, GroupAdminOp, GroupError};
use crate::protocol::{str_bytes, Session};
use crate::store::auth::acl;

pub async fn handle(s: Rc<Session>, _version: i16, req: OffsetDeleteRequest) -> OffsetDeleteResponse {
    // DELETE on the group, READ on each topic (TOPIC_AUTHORIZATION_FAILED for the others).
    if !s.authorized(acl::OP_DELETE, acl::RESOURCE_GROUP, &req.group_id.0) {
        let mut r = OffsetDeleteResponse::default();
        r.error_code = crate::store::group::GroupError::GroupAuthorizationFailed.code();
        return r;
    }
    if req.topics.iter().any(|t| !s.authorized(acl::OP_READ, acl::RESOURCE_TOPIC, &t.name.0)) {
        return denied_topics(&s, &req);
    }
    let partitions: Vec<(String, i32)> = req
        .topics
        .iter()
        .flat_map(|t| t.partitions.iter().map(move |p| (t.name.0.to_string(), p.partition_index)))
        .collect();
    let (tx, rx) = oneshot::channel();
    let op = GroupAdminOp::DeleteOffsets { group_id: req.group_id.0.to_string(), partitions };
    let answer = match s.group_coordinator(&req.group_id.0) {
        Ok(groups) => match groups.send(GroupAdmin { op, reply: tx }).await {
            Ok(()) => rx.await.ok(),
            Err(_) => None,
        },
        Err(e) => Some(GroupAdminAnswer::DeleteOffsets(Err(e))),
    };
    let mut r = OffsetDeleteResponse::default();
    match answer {
        Some(GroupAdminAnswer::DeleteOffsets(Ok(results))) => {
            for (topic, partition, code) in results {
                let mut p = OffsetDeleteResponsePartition::default();
                p.partition_index = partition;
                p.error_code = code;
                match r.topics.iter_mut().find(|t| t.name.0.as_str() == topic) {
                    Some(t) => t.partitions.push(p),
                    None => {
                        let mut t = OffsetDeleteResponseTopic::default();
                        t.name = TopicName(str_bytes(&topic));
                        t.partitions.push(p);
                        r.topics.push(t);
                    }
                }
            }
        }
        Some(GroupAdminAnswer::DeleteOffsets(Err(e))) => r.error_code = e.code(),
        _ => r.error_code = GroupError::CoordinatorNotAvailable.code(),
    }
    r
}

/// Every partition answered: TOPIC_AUTHORIZATION_FAILED for a topic the client may not read,
/// the rest not attempted (nothing deleted), as one refused topic fails the request.
fn denied_topics(s: &Session, req: &OffsetDeleteRequest) -> OffsetDeleteResponse {
    let mut r = OffsetDeleteResponse::default();
    for t in &req.topics {
        let code = if s.authorized(acl::OP_READ, acl::RESOURCE_TOPIC, &t.name.0) {
            crate::error_code::ResponseError::OperationNotAttempted.code()
        } else {
            crate::error_code::ResponseError::TopicAuthorizationFailed.code()
        };
        let mut rt = OffsetDeleteResponseTopic::default();
        rt.name = t.name.clone();
        rt.partitions = t
            .partitions
            .iter()
            .map(|p| {
                let mut rp = OffsetDeleteResponsePartition::default();
                rp.partition_index = p.partition_index;
                rp.error_code = code;
                rp
            })
            .collect();
        r.topics.push(rt);
    }
    r
}
