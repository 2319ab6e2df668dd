//! DescribeGroups (key 15): state, protocol and members (metadata and assignment when Stable).
//! A consumer-protocol group (KIP-848) is not described here, as in Apache Kafka 4.4: state
//! Dead, and from v6 GROUP_ID_NOT_FOUND "Group <id> is not a classic group." (before v6 no
//! error); clients describe it with ConsumerGroupDescribe. An unknown group is the same, with
//! "Group <id> not found." (what `kafka-consumer-groups --describe` of Kafka 4.4 reports).

use std::rc::Rc;

use kafka_protocol::messages::describe_groups_response::{DescribedGroup, DescribedGroupMember};
use kafka_protocol::messages::{DescribeGroupsRequest, DescribeGroupsResponse, GroupId};
use tokio::sync::oneshot;

use crate::actors::messages::{GroupAdmin, GroupAdminAnswer, GroupAdminOp, GroupError};
use crate::protocol::{str_bytes, Session};
use crate::store::auth::acl;
use crate::store::group::GroupState;

pub async fn handle(s: Rc<Session>, version: i16, req: DescribeGroupsRequest) -> DescribeGroupsResponse {
    let mut r = DescribeGroupsResponse::default();
    // DESCRIBE on each group; the others are GROUP_AUTHORIZATION_FAILED.
    let (ids, denied): (Vec<String>, Vec<String>) = req
        .groups
        .iter()
        .map(|g| g.0.to_string())
        .partition(|g| s.authorized(acl::OP_DESCRIBE, acl::RESOURCE_GROUP, g));
    for id in denied {
        let mut g = kafka_protocol::messages::describe_groups_response::DescribedGroup::default();
        g.group_id = kafka_protocol::messages::GroupId(crate::protocol::str_bytes(&id));
        g.error_code = crate::store::group::GroupError::GroupAuthorizationFailed.code();
        r.groups.push(g);
    }
    let (here, elsewhere) = s.split_groups(ids);
    let (tx, rx) = oneshot::channel();
    let answer = if here.is_empty() {
        None
    } else {
        match s.groups.get() {
            Some(groups) => match groups.send(GroupAdmin { op: GroupAdminOp::Describe(here.clone()), reply: tx }).await
            {
                Ok(()) => rx.await.ok(),
                Err(_) => None,
            },
            None => None,
        }
    };
    let mut described = match answer {
        Some(GroupAdminAnswer::Describe(d)) => d,
        _ => here.into_iter().map(|id| (id, Err(GroupError::CoordinatorNotAvailable))).collect(),
    };
    described.extend(elsewhere.into_iter().map(|(id, e)| (id, Err(e))));
    for (id, d) in described {
        let mut g = DescribedGroup::default();
        g.group_id = GroupId(str_bytes(&id));
        match d {
            // An unknown group (the coordinator describes it as Dead): from v6 Kafka 4.4 answers
            // GROUP_ID_NOT_FOUND "Group <id> not found.", before v6 Dead without an error.
            Ok(d) if d.state == GroupState::Dead && version >= 6 => {
                g.group_state = str_bytes(GroupState::Dead.name());
                g.error_code = GroupError::GroupIdNotFound.code();
                g.error_message = Some(str_bytes(&format!("Group {id} not found.")));
            }
            Ok(d) => {
                g.group_state = str_bytes(d.state.name());
                g.protocol_type = str_bytes(&d.protocol_type);
                g.protocol_data = str_bytes(&d.protocol);
                g.members = d
                    .members
                    .into_iter()
                    .map(|m| {
                        let mut dm = DescribedGroupMember::default();
                        dm.member_id = str_bytes(&m.member_id);
                        if version >= 4 {
                            dm.group_instance_id = m.group_instance_id.as_deref().map(str_bytes);
                        }
                        dm.client_id = str_bytes(&m.client_id);
                        dm.client_host = str_bytes(&m.client_host);
                        dm.member_metadata = m.metadata.into();
                        dm.member_assignment = m.assignment.into();
                        dm
                    })
                    .collect();
            }
            Err(GroupError::GroupIdNotFound) => {
                g.group_state = str_bytes(GroupState::Dead.name());
                if version >= 6 {
                    g.error_code = GroupError::GroupIdNotFound.code();
                    g.error_message = Some(str_bytes(&format!("Group {id} is not a classic group.")));
                }
            }
            Err(e) => g.error_code = e.code(),
        }
        // KIP-430: what the client may do on each group described without an error.
        if version >= 3 && req.include_authorized_operations && g.error_code == 0 {
            g.authorized_operations = s.authorized_operations(&acl::GROUP_OPERATIONS, acl::RESOURCE_GROUP, &id);
        }
        r.groups.push(g);
    }
    r
}
