//! ListGroups (key 16), with the v4 state filter and the v5 type filter.

use crate::error_code::ResponseError;
use std::rc::Rc;

use kafka_protocol::messages::list_groups_response::ListedGroup;
use kafka_protocol::messages::{GroupId, ListGroupsRequest, ListGroupsResponse};
use tokio::sync::oneshot;

use crate::actors::messages::{GroupAdmin, GroupAdminAnswer, GroupAdminOp};
use crate::protocol::{str_bytes, Session};
use crate::store::auth::acl;

pub async fn handle(s: Rc<Session>, version: i16, req: ListGroupsRequest) -> ListGroupsResponse {
    let mut r = ListGroupsResponse::default();
    // Each broker lists the groups it coordinates (Kafka's admin client asks every broker).
    let Some(groups) = s.groups.get() else { return r };
    let (tx, rx) = oneshot::channel();
    let answer = match groups.send(GroupAdmin { op: GroupAdminOp::List, reply: tx }).await {
        Ok(()) => rx.await.ok(),
        Err(_) => None,
    };
    let Some(GroupAdminAnswer::List(groups)) = answer else {
        r.error_code = ResponseError::CoordinatorNotAvailable.code();
        return r;
    };
    let states: Vec<String> = req.states_filter.iter().map(|s| s.to_lowercase()).collect();
    let types: Vec<String> = req.types_filter.iter().map(|s| s.to_lowercase()).collect();
    // DESCRIBE on the cluster lists every group; else the groups the client may describe.
    let all = s.authorized_cluster(acl::OP_DESCRIBE);
    for (id, protocol_type, state, group_type) in groups {
        if !all && !s.authorized(acl::OP_DESCRIBE, acl::RESOURCE_GROUP, &id) {
            continue;
        }
        if version >= 4 && !states.is_empty() && !states.contains(&state.to_lowercase()) {
            continue;
        }
        if version >= 5 && !types.is_empty() && !types.iter().any(|t| t == group_type.name()) {
            continue;
        }
        let mut g = ListedGroup::default();
        g.group_id = GroupId(str_bytes(&id));
        g.protocol_type = str_bytes(&protocol_type);
        if version >= 4 {
            g.group_state = str_bytes(&state);
        }
        if version >= 5 {
            g.group_type = str_bytes(group_type.name());
        }
        r.groups.push(g);
    }
    r
}
