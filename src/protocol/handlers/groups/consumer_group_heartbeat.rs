//! ConsumerGroupHeartbeat (key 68, KIP-848): join, heartbeat, reconcile and leave a consumer
//! group. The rules are in store::group::consumer; this translates the request, looks up the
//! subscribed topics (so a join sees topics created just before) and answers.

use std::rc::Rc;

use kafka_protocol::messages::consumer_group_heartbeat_response::{Assignment as WireAssignment, TopicPartitions};
use kafka_protocol::messages::{ConsumerGroupHeartbeatRequest, ConsumerGroupHeartbeatResponse};
use tokio::sync::oneshot;

use crate::actors::messages::{ConsumerHeartbeat, ConsumerHeartbeatRequest, ConsumerHeartbeatResponse, TopicInfo};
use crate::error_code::ResponseError;
use crate::protocol::{str_bytes, Session};
use crate::store::auth::acl;
use crate::store::group::consumer::Assignment;
use crate::store::group::validate_group_id;

fn request(s: &Session, version: i16, req: &ConsumerGroupHeartbeatRequest) -> ConsumerHeartbeatRequest {
    let owned = req.topic_partitions.as_ref().map(|tps| {
        let mut a = Assignment::new();
        for tp in tps {
            a.entry(tp.topic_id).or_default().extend(tp.partitions.iter().copied());
        }
        a
    });
    ConsumerHeartbeatRequest {
        version,
        member_id: req.member_id.to_string(),
        member_epoch: req.member_epoch,
        instance_id: req.instance_id.as_ref().map(|i| i.to_string()),
        rack_id: req.rack_id.as_ref().map(|i| i.to_string()),
        rebalance_timeout_ms: req.rebalance_timeout_ms,
        subscribed_topic_names: req
            .subscribed_topic_names
            .as_ref()
            .map(|n| n.iter().map(|t| t.0.to_string()).collect()),
        subscribed_topic_regex: req.subscribed_topic_regex.as_ref().map(|r| r.to_string()),
        server_assignor: req.server_assignor.as_ref().map(|a| a.to_string()),
        owned,
        client_id: s.client_id.borrow().clone(),
        client_host: s.peer.clone(),
        principal: s.principal.borrow().to_string(),
    }
}

async fn call(
    s: &Session,
    version: i16,
    req: &ConsumerGroupHeartbeatRequest,
) -> Result<ConsumerHeartbeatResponse, (ResponseError, Option<String>)> {
    let group_id = req.group_id.0.as_str();
    validate_group_id(group_id).map_err(|e| (e.error(), None))?;
    let groups = s.group_coordinator(group_id).map_err(|e| (e.error(), None))?;
    let mut topics = Vec::new();
    for name in req.subscribed_topic_names.iter().flatten() {
        let info = match s.internal_topic_info(&name.0) {
            Some(internal) => Some(internal),
            None => {
                let found = s.directory.topic(&name.0, false).await.ok();
                found.map(|h| TopicInfo { id: h.meta.id, partitions: h.meta.partitions })
            }
        };
        topics.push((name.0.to_string(), info));
    }
    let (tx, rx) = oneshot::channel();
    let msg =
        ConsumerHeartbeat { group_id: group_id.to_string(), request: request(s, version, req), topics, reply: tx };
    let unavailable = || (ResponseError::CoordinatorNotAvailable, None);
    groups.send(msg).await.map_err(|_| unavailable())?;
    rx.await.map_err(|_| unavailable())?.map_err(|e| (e.error(), Some(e.to_string())))
}

fn wire_assignment(a: &Assignment) -> WireAssignment {
    let mut w = WireAssignment::default();
    w.topic_partitions = a
        .iter()
        .map(|(id, ps)| {
            let mut tp = TopicPartitions::default();
            tp.topic_id = *id;
            tp.partitions = ps.iter().copied().collect();
            tp
        })
        .collect();
    w
}

pub async fn handle(
    s: Rc<Session>,
    version: i16,
    req: ConsumerGroupHeartbeatRequest,
) -> ConsumerGroupHeartbeatResponse {
    let mut r = ConsumerGroupHeartbeatResponse::default();
    if !s.authorized(acl::OP_READ, acl::RESOURCE_GROUP, &req.group_id.0) {
        r.error_code = ResponseError::GroupAuthorizationFailed.code();
        r.error_message = Some(crate::protocol::str_bytes("Group authorization failed."));
        return r;
    }
    // A member may subscribe only to topics it may describe (Kafka's check of the names).
    let hidden: Vec<String> = req
        .subscribed_topic_names
        .iter()
        .flatten()
        .map(|t| t.to_string())
        .filter(|t| !s.authorized(acl::OP_DESCRIBE, acl::RESOURCE_TOPIC, t))
        .collect();
    if !hidden.is_empty() {
        r.error_code = ResponseError::TopicAuthorizationFailed.code();
        let why = format!("The member is not authorized to access topics: [{}]", hidden.join(", "));
        r.error_message = Some(crate::protocol::str_bytes(&why));
        return r;
    }
    let answer = call(&s, version, &req).await;
    if req.member_epoch < 0 || answer.is_err() {
        tracing::debug!(group = %req.group_id.0, member = %req.member_id, epoch = req.member_epoch,
            instance = ?req.instance_id, error = ?answer.as_ref().err(), "consumer group leave or refused heartbeat");
    }
    match answer {
        Ok(ok) => {
            r.member_id = Some(str_bytes(&ok.member_id));
            r.member_epoch = ok.member_epoch;
            r.heartbeat_interval_ms = ok.heartbeat_interval_ms;
            r.assignment = ok.assignment.as_ref().map(wire_assignment);
        }
        Err((e, message)) => {
            r.error_code = e.code();
            r.error_message = message.map(|m| str_bytes(&m));
        }
    }
    r
}
