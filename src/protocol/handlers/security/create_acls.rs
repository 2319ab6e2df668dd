//! CreateAcls (key 30): ACLs added to the cluster's (store::auth::acl_store, on the blocking
//! pool), each checked as Kafka checks it (store::auth::acl::check_binding: INVALID_REQUEST).
//! Needs ALTER on the cluster (CLUSTER_AUTHORIZATION_FAILED); without an authorizer every
//! creation is SECURITY_DISABLED, as in Kafka.

use std::rc::Rc;

use kafka_protocol::messages::create_acls_response::AclCreationResult;
use kafka_protocol::messages::{CreateAclsRequest, CreateAclsResponse};

use super::acl_error;
use crate::error_code::ResponseError;
use crate::protocol::{str_bytes, Session};
use crate::store::auth::acl::{check_binding, AclBinding, OP_ALTER};
use crate::store::auth::acl_store;

pub async fn handle(s: Rc<Session>, _version: i16, req: CreateAclsRequest) -> CreateAclsResponse {
    let mut resp = CreateAclsResponse::default();
    let result = |e: Option<(i16, String)>| {
        let mut r = AclCreationResult::default();
        if let Some((code, message)) = e {
            r.error_code = code;
            r.error_message = Some(str_bytes(&message));
        }
        r
    };
    let refused = acl_error(&s, OP_ALTER);
    if let Some(e) = refused {
        resp.results = req.creations.iter().map(|_| result(Some(e.clone()))).collect();
        return resp;
    }
    let bindings: Vec<Result<AclBinding, String>> = req
        .creations
        .iter()
        .map(|c| {
            let b = AclBinding {
                resource_type: c.resource_type,
                name: c.resource_name.to_string(),
                pattern_type: c.resource_pattern_type,
                principal: c.principal.to_string(),
                host: c.host.to_string(),
                operation: c.operation,
                permission: c.permission_type,
            };
            check_binding(&b).map(|()| b)
        })
        .collect();
    let valid: Vec<AclBinding> = bindings.iter().filter_map(|b| b.as_ref().ok().cloned()).collect();
    let dir = s.settings.broker.data_dir.clone();
    let add = move || {
        acl_store::change(&dir, |current| {
            let mut next = current.to_vec();
            for b in valid {
                if !next.contains(&b) {
                    next.push(b);
                }
            }
            (next, ())
        })
    };
    let stored = match tokio::task::spawn_blocking(add).await {
        Ok(Ok((all, ()))) => {
            if let Some(a) = &s.authorizer {
                a.replace_bindings(all);
            }
            Ok(())
        }
        Ok(Err(e)) => Err((ResponseError::UnknownServerError.code(), e.to_string())),
        Err(e) => Err((ResponseError::UnknownServerError.code(), e.to_string())),
    };
    resp.results = bindings
        .into_iter()
        .map(|b| match (b, &stored) {
            (Err(why), _) => result(Some((ResponseError::InvalidRequest.code(), why))),
            (Ok(_), Err(e)) => result(Some(e.clone())),
            (Ok(_), Ok(())) => result(None),
        })
        .collect();
    resp
}
