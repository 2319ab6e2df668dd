//! JoinGroup (key 11), classic protocol: rules in store::group; the answer may wait for the
//! rebalance to finish.

use std::rc::Rc;

use kafka_protocol::messages::join_group_response::JoinGroupResponseMember;
use kafka_protocol::messages::{JoinGroupRequest, JoinGroupResponse};

use crate::actors::messages::{GroupOp, GroupResponse, JoinRequest};
use crate::error_code::ResponseError;
use crate::protocol::{str_bytes, Session};
use crate::store::auth::acl;
use crate::store::group::error_code;

pub async fn handle(s: Rc<Session>, version: i16, req: JoinGroupRequest) -> JoinGroupResponse {
    let mut r = JoinGroupResponse::default();
    if version < 7 {
        r.protocol_name = Some(str_bytes(""));
    }
    if !s.authorized(acl::OP_READ, acl::RESOURCE_GROUP, &req.group_id.0) {
        r.error_code = ResponseError::GroupAuthorizationFailed.code();
        return r;
    }
    let join = JoinRequest {
        version,
        member_id: req.member_id.to_string(),
        group_instance_id: req.group_instance_id.as_ref().map(|i| i.to_string()),
        client_id: s.client_id.borrow().clone(),
        client_host: format!("/{}", s.peer),
        session_timeout_ms: req.session_timeout_ms,
        // v0 has no rebalance timeout: it is the session timeout.
        rebalance_timeout_ms: if version == 0 { req.session_timeout_ms } else { req.rebalance_timeout_ms },
        protocol_type: req.protocol_type.to_string(),
        protocols: req.protocols.iter().map(|p| (p.name.to_string(), p.metadata.to_vec())).collect(),
    };
    let j = match s.group_call(&req.group_id.0, GroupOp::Join(join)).await {
        Ok(GroupResponse::Join(j)) => j,
        Ok(_) => {
            r.error_code = ResponseError::CoordinatorNotAvailable.code();
            return r;
        }
        Err(e) => {
            // Kafka echoes the member id with INVALID_GROUP_ID / NOT_COORDINATOR.
            r.error_code = e.code();
            r.member_id = req.member_id.clone();
            return r;
        }
    };
    r.error_code = error_code(j.error);
    r.generation_id = j.generation_id;
    if version >= 7 {
        r.protocol_type = j.protocol_type.as_deref().map(str_bytes);
        r.protocol_name = j.protocol_name.as_deref().map(str_bytes);
    } else {
        r.protocol_name = Some(str_bytes(j.protocol_name.as_deref().unwrap_or("")));
    }
    r.leader = str_bytes(&j.leader);
    if version >= 9 {
        r.skip_assignment = j.skip_assignment;
    }
    r.member_id = str_bytes(&j.member_id);
    r.members = j
        .members
        .into_iter()
        .map(|m| {
            let mut jm = JoinGroupResponseMember::default();
            jm.member_id = str_bytes(&m.member_id);
            if version >= 5 {
                jm.group_instance_id = m.group_instance_id.as_deref().map(str_bytes);
            }
            jm.metadata = m.metadata.into();
            jm
        })
        .collect();
    r
}
