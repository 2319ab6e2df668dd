//! DescribeClientQuotas (key 48): kaas has no client quotas to configure, so every valid filter
//! matches nothing, as on a Kafka cluster where none was set; an invalid filter is refused with
//! INVALID_REQUEST as Kafka refuses it (store::admin::check_quota_filter).

use std::rc::Rc;

use kafka_protocol::messages::{DescribeClientQuotasRequest, DescribeClientQuotasResponse};

use crate::error_code::ResponseError;
use crate::protocol::{str_bytes, Session};
use crate::store::admin::check_quota_filter;
use crate::store::auth::acl;

pub async fn handle(s: Rc<Session>, _version: i16, req: DescribeClientQuotasRequest) -> DescribeClientQuotasResponse {
    // DESCRIBE_CONFIGS on the cluster, as Kafka checks.
    if !s.authorized_cluster(acl::OP_DESCRIBE_CONFIGS) {
        let mut r = DescribeClientQuotasResponse::default();
        r.error_code = crate::error_code::ResponseError::ClusterAuthorizationFailed.code();
        r.error_message = Some(crate::protocol::str_bytes("Cluster authorization failed."));
        return r;
    }
    let components: Vec<_> = req
        .components
        .iter()
        .map(|c| (c.entity_type.to_string(), c.match_type, c._match.as_ref().map(|m| m.to_string())))
        .collect();
    let mut resp = DescribeClientQuotasResponse::default();
    match check_quota_filter(&components) {
        Ok(()) => resp.entries = Some(Vec::new()),
        Err(message) => {
            resp.error_code = ResponseError::InvalidRequest.code();
            resp.error_message = Some(str_bytes(&message));
        }
    }
    resp
}
