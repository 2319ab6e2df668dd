//! DescribeCluster (key 60): this broker is the whole cluster and its controller.

use kafka_protocol::messages::describe_cluster_response::DescribeClusterBroker;
use kafka_protocol::messages::{BrokerId, DescribeClusterRequest, DescribeClusterResponse};

use crate::protocol::{str_bytes, Session};

pub fn handle(s: &Session, _version: i16, _req: DescribeClusterRequest) -> DescribeClusterResponse {
    let (host, port) = s.settings.advertised();
    let mut r = DescribeClusterResponse::default();
    r.cluster_id = str_bytes(&s.cluster_id);
    r.controller_id = BrokerId(s.node_id());
    let mut b = DescribeClusterBroker::default();
    b.broker_id = BrokerId(s.node_id());
    b.host = str_bytes(&host);
    b.port = port;
    r.brokers = vec![b];
    r
}
