//! ListPartitionReassignments (key 46): kaas never reassigns replicas (one copy per partition on
//! the shared disk; a failover moves the lock, not the data), so none is ever in progress: an
//! empty list, as Kafka answers with no reassignment ongoing.

use std::rc::Rc;

use kafka_protocol::messages::{ListPartitionReassignmentsRequest, ListPartitionReassignmentsResponse};

use crate::protocol::Session;

pub async fn handle(
    _s: Rc<Session>,
    _version: i16,
    _req: ListPartitionReassignmentsRequest,
) -> ListPartitionReassignmentsResponse {
    ListPartitionReassignmentsResponse::default()
}
