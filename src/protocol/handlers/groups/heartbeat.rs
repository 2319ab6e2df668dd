//! Heartbeat (key 12): keeps a member's session alive and tells it about rebalances.

use crate::error_code::ResponseError;
use std::rc::Rc;

use kafka_protocol::messages::{HeartbeatRequest, HeartbeatResponse};

use crate::actors::messages::{GroupOp, GroupResponse};
use crate::protocol::Session;
use crate::store::auth::acl;
use crate::store::group::error_code;

pub async fn handle(s: Rc<Session>, _version: i16, req: HeartbeatRequest) -> HeartbeatResponse {
    if !s.authorized(acl::OP_READ, acl::RESOURCE_GROUP, &req.group_id.0) {
        let mut r = HeartbeatResponse::default();
        r.error_code = ResponseError::GroupAuthorizationFailed.code();
        return r;
    }
    let op = GroupOp::Heartbeat {
        generation_id: req.generation_id,
        member_id: req.member_id.to_string(),
        group_instance_id: req.group_instance_id.as_ref().map(|i| i.to_string()),
    };
    let mut r = HeartbeatResponse::default();
    r.error_code = match s.group_call(&req.group_id.0, op).await {
        Ok(GroupResponse::Heartbeat(e)) => error_code(e),
        Ok(_) => ResponseError::CoordinatorNotAvailable.code(),
        Err(e) => e.code(),
    };
    r
}
