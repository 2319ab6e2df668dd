//! DeleteGroups (key 42): only Empty groups (NON_EMPTY_GROUP otherwise).

use std::rc::Rc;

use kafka_protocol::messages::delete_groups_response::DeletableGroupResult;
use kafka_protocol::messages::{DeleteGroupsRequest, DeleteGroupsResponse, GroupId};
use tokio::sync::oneshot;

use crate::actors::messages::{GroupAdmin, GroupAdminAnswer, GroupAdminOp};
use crate::protocol::{str_bytes, Session};

pub async fn handle(s: Rc<Session>, _version: i16, req: DeleteGroupsRequest) -> DeleteGroupsResponse {
    let ids: Vec<String> = req.groups_names.iter().map(|g| g.0.to_string()).collect();
    let (tx, rx) = oneshot::channel();
    let answer = match s.groups.send(GroupAdmin { op: GroupAdminOp::Delete(ids.clone()), reply: tx }).await {
        Ok(()) => rx.await.ok(),
        Err(_) => None,
    };
    let results = match answer {
        Some(GroupAdminAnswer::Delete(r)) => r,
        _ => ids.into_iter().map(|id| (id, 15)).collect(),
    };
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
