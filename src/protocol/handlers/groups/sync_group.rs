//! SyncGroup (key 14): the leader hands out assignments; followers wait for them.

use std::rc::Rc;

use kafka_protocol::messages::{SyncGroupRequest, SyncGroupResponse};

use crate::actors::messages::{GroupOp, GroupResponse, SyncRequest};
use crate::error_code::ResponseError;
use crate::protocol::{str_bytes, Session};
use crate::store::auth::acl;
use crate::store::group::error_code;

pub async fn handle(s: Rc<Session>, version: i16, req: SyncGroupRequest) -> SyncGroupResponse {
    let mut r = SyncGroupResponse::default();
    if !s.authorized(acl::OP_READ, acl::RESOURCE_GROUP, &req.group_id.0) {
        r.error_code = ResponseError::GroupAuthorizationFailed.code();
        return r;
    }
    let sync = SyncRequest {
        generation_id: req.generation_id,
        member_id: req.member_id.to_string(),
        group_instance_id: req.group_instance_id.as_ref().map(|i| i.to_string()),
        protocol_type: if version >= 5 { req.protocol_type.as_ref().map(|p| p.to_string()) } else { None },
        protocol_name: if version >= 5 { req.protocol_name.as_ref().map(|p| p.to_string()) } else { None },
        assignments: req.assignments.iter().map(|a| (a.member_id.to_string(), a.assignment.to_vec())).collect(),
    };
    match s.group_call(&req.group_id.0, GroupOp::Sync(sync)).await {
        Ok(GroupResponse::Sync(sr)) => {
            r.error_code = error_code(sr.error);
            if version >= 5 {
                r.protocol_type = sr.protocol_type.as_deref().map(str_bytes);
                r.protocol_name = sr.protocol_name.as_deref().map(str_bytes);
            }
            r.assignment = sr.assignment.into();
        }
        Ok(_) => r.error_code = ResponseError::CoordinatorNotAvailable.code(),
        Err(e) => r.error_code = e.code(),
    }
    r
}
