//! DescribeCluster (key 60): the live brokers and the controller, as the directory knows them.

use kafka_protocol::messages::describe_cluster_response::DescribeClusterBroker;
use kafka_protocol::messages::{BrokerId, DescribeClusterRequest, DescribeClusterResponse};

use crate::protocol::{str_bytes, Session};
use crate::store::auth::acl;

pub fn handle(s: &Session, _version: i16, req: DescribeClusterRequest) -> DescribeClusterResponse {
    let table = s.directory.ownership();
    let mut r = DescribeClusterResponse::default();
    r.cluster_id = str_bytes(&s.cluster_id);
    r.controller_id = BrokerId(table.controller());
    let listener = s.listener.get().name();
    r.brokers = table
        .brokers()
        .filter_map(|b| {
            let (host, port) = b.address(listener)?;
            let mut d = DescribeClusterBroker::default();
            d.broker_id = BrokerId(b.node_id);
            d.host = str_bytes(host);
            d.port = port;
            d.rack = b.rack.as_deref().map(str_bytes);
            Some(d)
        })
        .collect();
    // Kafka: 0 for a client that may not DESCRIBE the cluster.
    if req.include_cluster_authorized_operations {
        r.cluster_authorized_operations = if s.authorized_cluster(acl::OP_DESCRIBE) {
            s.authorized_operations(&acl::CLUSTER_OPERATIONS, acl::RESOURCE_CLUSTER, acl::CLUSTER_NAME)
        } else {
            0
        };
    }
    r
}
