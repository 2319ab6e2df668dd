//! DeleteGroups (key 42): only Empty groups (NON_EMPTY_GROUP otherwise).

use std::rc::Rc;

use kafka_protocol::messages::delete_groups_response::DeletableGroupResult;
use kafka_protocol::messages::{DeleteGroupsRequest, DeleteGroupsResponse, GroupId};
use tokio::sync::oneshot;

use crate::actors::messages::{GroupAdmin, GroupAdminAnswer, GroupAdminOp, GroupError};
use crate::protocol::{str_bytes, Session};
use crate::store::auth::acl;

pub async fn handle(s: Rc<Session>, _version: i16, req: DeleteGroupsRequest) -> DeleteGroupsResponse {
    // DELETE on each group; the others are GROUP_AUTHORIZATION_FAILED.
    let (ids, denied): (Vec<String>, Vec<String>) = req
        .groups_names
        .iter()
        .map(|g| g.0.to_string())
        .partition(|g| s.authorized(acl::OP_DELETE, acl::RESOURCE_GROUP, g));
    let (here, elsewhere) = s.split_groups(ids);
    let (tx, rx) = oneshot::channel();
    let answer = if here.is_empty() {
        None
    } else {
        match s.groups.get() {
            Some(groups) => match groups.send(GroupAdmin { op: GroupAdminOp::Delete(here.clone()), reply: tx }).await {
                Ok(()) => rx.await.ok(),
                Err(_) => None,
            },
            None => None,
        }
    };
    let mut results = match answer {
        Some(GroupAdminAnswer::Delete(r)) => r,
        _ => here.into_iter().map(|id| (id, GroupError::CoordinatorNotAvailable.code())).collect(),
    };
    results.extend(elsewhere.into_iter().map(|(id, e)| (id, e.code())));
    results.extend(denied.into_iter().map(|id| (id, GroupError::GroupAuthorizationFailed.code())));
    let mut r = DeleteGroupsResponse::default();
    r.results = results
        .into_iter()
        .map(|(id, code)| {
            let mut d = DeletableGroupResult::default();
            d.group_id = GroupId(str_bytes(&id));
            d.error_code = code;
            d
        })
        .collect();
    r
}
