//! DescribeAcls (key 29): the ACLs matching the filter (store::auth::acl::AclFilter), grouped by
//! resource pattern as Kafka answers. Needs DESCRIBE on the cluster (CLUSTER_AUTHORIZATION_FAILED);
//! without an authorizer SECURITY_DISABLED, as in Kafka.

use std::collections::BTreeMap;
use std::rc::Rc;

use kafka_protocol::messages::describe_acls_response::{AclDescription, DescribeAclsResource};
use kafka_protocol::messages::{DescribeAclsRequest, DescribeAclsResponse};

use super::acl_error;
use crate::protocol::{str_bytes, Session};
use crate::store::auth::acl::{AclFilter, OP_DESCRIBE};

pub async fn handle(s: Rc<Session>, _version: i16, req: DescribeAclsRequest) -> DescribeAclsResponse {
    let mut resp = DescribeAclsResponse::default();
    if let Some((code, message)) = acl_error(&s, OP_DESCRIBE) {
        resp.error_code = code;
        resp.error_message = Some(str_bytes(&message));
        return resp;
    }
    let filter = AclFilter {
        resource_type: req.resource_type_filter,
        name: req.resource_name_filter.as_ref().map(|n| n.to_string()),
        pattern_type: req.pattern_type_filter,
        principal: req.principal_filter.as_ref().map(|p| p.to_string()),
        host: req.host_filter.as_ref().map(|h| h.to_string()),
        operation: req.operation,
        permission: req.permission_type,
    };
    let bindings = s.authorizer.as_ref().map(|a| a.bindings()).unwrap_or_default();
    let mut by_resource: BTreeMap<(i8, String, i8), Vec<AclDescription>> = BTreeMap::new();
    for b in bindings.iter().filter(|b| filter.matches(b)) {
        let mut d = AclDescription::default();
        d.principal = str_bytes(&b.principal);
        d.host = str_bytes(&b.host);
        d.operation = b.operation;
        d.permission_type = b.permission;
        by_resource.entry((b.resource_type, b.name.clone(), b.pattern_type)).or_default().push(d);
    }
    resp.resources = by_resource
        .into_iter()
        .map(|((resource_type, name, pattern_type), acls)| {
            let mut r = DescribeAclsResource::default();
            r.resource_type = resource_type;
            r.resource_name = str_bytes(&name);
            r.pattern_type = pattern_type;
            r.acls = acls;
            r
        })
        .collect();
    resp
}
