//! LeaveGroup (key 13): v0-2 one member, v3+ a batch (static members by instance id).

use crate::error_code::ResponseError;
use std::rc::Rc;

use kafka_protocol::messages::leave_group_response::MemberResponse;
use kafka_protocol::messages::{LeaveGroupRequest, LeaveGroupResponse};

use crate::actors::messages::{GroupOp, GroupResponse, LeaveMember};
use crate::protocol::{str_bytes, Session};
use crate::store::auth::acl;
use crate::store::group::error_code;

pub async fn handle(s: Rc<Session>, version: i16, req: LeaveGroupRequest) -> LeaveGroupResponse {
    if !s.authorized(acl::OP_READ, acl::RESOURCE_GROUP, &req.group_id.0) {
        let mut r = LeaveGroupResponse::default();
        r.error_code = ResponseError::GroupAuthorizationFailed.code();
        return r;
    }
    let leaving: Vec<LeaveMember> = if version < 3 {
        vec![LeaveMember { member_id: req.member_id.to_string(), group_instance_id: None }]
    } else {
        req.members
            .iter()
            .map(|m| LeaveMember {
                member_id: m.member_id.to_string(),
                group_instance_id: m.group_instance_id.as_ref().map(|i| i.to_string()),
            })
            .collect()
    };
    let mut r = LeaveGroupResponse::default();
    match s.group_call(&req.group_id.0, GroupOp::Leave(leaving)).await {
        Ok(GroupResponse::Leave(l)) => {
            if version < 3 {
                // v0-2 carry the member's error at the top level.
                r.error_code = error_code(l.error.or_else(|| l.members.first().and_then(|m| m.error)));
            } else {
                r.error_code = error_code(l.error);
                r.members = l
                    .members
                    .into_iter()
                    .map(|m| {
                        let mut mr = MemberResponse::default();
                        mr.member_id = str_bytes(&m.member_id);
                        mr.group_instance_id = m.group_instance_id.as_deref().map(str_bytes);
                        mr.error_code = error_code(m.error);
                        mr
                    })
                    .collect();
            }
        }
        Ok(_) => r.error_code = ResponseError::CoordinatorNotAvailable.code(),
        Err(e) => r.error_code = e.code(),
    }
    r
}
