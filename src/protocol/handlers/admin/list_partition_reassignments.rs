//! ListPartitionReassignments (key 46): kaas never reassigns replicas (one copy per partition on
//! the shared disk; a failover moves the lock, not the data), so none is ever in progress: an
//! empty list, as Kafka answers with no reassignment ongoing.

use std::rc::Rc;

use kafka_protocol::messages::{ListPartitionReassignmentsRequest, ListPartitionReassignmentsResponse};

use crate::protocol::Session;
use crate::store::auth::acl;

pub async fn handle(
    s: Rc<Session>,
    _version: i16,
    _req: ListPartitionReassignmentsRequest,
) -> ListPartitionReassignmentsResponse {
    // DESCRIBE on the cluster, as Kafka checks.
    if !s.authorized_cluster(acl::OP_DESCRIBE) {
        let mut r = ListPartitionReassignmentsResponse::default();
        r.error_code = crate::error_code::ResponseError::ClusterAuthorizationFailed.code();
        r.error_message = Some(crate::protocol::str_bytes("Cluster authorization failed."));
        return r;
    }
    ListPartitionReassignmentsResponse::default()
}
