//! DeleteAcls (key 31): every ACL matching each filter is removed (store::auth::acl_store, on the
//! blocking pool) and listed in that filter's result. Needs ALTER on the cluster
//! (CLUSTER_AUTHORIZATION_FAILED); without an authorizer SECURITY_DISABLED, as in Kafka.

use std::rc::Rc;

use kafka_protocol::messages::delete_acls_response::{DeleteAclsFilterResult, DeleteAclsMatchingAcl};
use kafka_protocol::messages::{DeleteAclsRequest, DeleteAclsResponse};

use super::acl_error;
use crate::error_code::ResponseError;
use crate::protocol::{str_bytes, Session};
use crate::store::auth::acl::{AclBinding, AclFilter, OP_ALTER};
use crate::store::auth::acl_store;

fn matching(b: &AclBinding) -> DeleteAclsMatchingAcl {
    let mut m = DeleteAclsMatchingAcl::default();
    m.resource_type = b.resource_type;
    m.resource_name = str_bytes(&b.name);
    m.pattern_type = b.pattern_type;
    m.principal = str_bytes(&b.principal);
    m.host = str_bytes(&b.host);
    m.operation = b.operation;
    m.permission_type = b.permission;
    m
}

pub async fn handle(s: Rc<Session>, _version: i16, req: DeleteAclsRequest) -> DeleteAclsResponse {
    let mut resp = DeleteAclsResponse::default();
    if let Some((code, message)) = acl_error(&s, OP_ALTER) {
        resp.filter_results = req
            .filters
            .iter()
            .map(|_| {
                let mut r = DeleteAclsFilterResult::default();
                r.error_code = code;
                r.error_message = Some(str_bytes(&message));
                r
            })
            .collect();
        return resp;
    }
    let filters: Vec<AclFilter> = req
        .filters
        .iter()
        .map(|f| AclFilter {
            resource_type: f.resource_type_filter,
            name: f.resource_name_filter.as_ref().map(|n| n.to_string()),
            pattern_type: f.pattern_type_filter,
            principal: f.principal_filter.as_ref().map(|p| p.to_string()),
            host: f.host_filter.as_ref().map(|h| h.to_string()),
            operation: f.operation,
            permission: f.permission_type,
        })
        .collect();
    let dir = s.settings.broker.data_dir.clone();
    let remove = move || {
        acl_store::change(&dir, |current| {
            let removed: Vec<Vec<AclBinding>> =
                filters.iter().map(|f| current.iter().filter(|b| f.matches(b)).cloned().collect()).collect();
            let kept = current.iter().filter(|b| !filters.iter().any(|f| f.matches(b))).cloned().collect();
            (kept, removed)
        })
    };
    match tokio::task::spawn_blocking(remove).await {
        Ok(Ok((all, removed))) => {
            if let Some(a) = &s.authorizer {
                a.replace_bindings(all);
            }
            resp.filter_results = removed
                .into_iter()
                .map(|gone| {
                    let mut r = DeleteAclsFilterResult::default();
                    r.matching_acls = gone.iter().map(matching).collect();
                    r
                })
                .collect();
        }
        failed => {
            let why = match failed {
                Ok(Err(e)) => e.to_string(),
                _ => "changing the ACLs stopped".to_string(),
            };
            resp.filter_results = req
                .filters
                .iter()
                .map(|_| {
                    let mut r = DeleteAclsFilterResult::default();
                    r.error_code = ResponseError::UnknownServerError.code();
                    r.error_message = Some(str_bytes(&why));
                    r
                })
                .collect();
        }
    }
    resp
}
