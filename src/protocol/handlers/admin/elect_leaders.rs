//! ElectLeaders (key 43): each partition has one copy, led by the broker holding its lock, so
//! that leader is its preferred replica and there is never anyone else to elect
//! (store::admin::election_outcome). As Kafka's controller, a request for every partition
//! answers only those where an election was wanted and could not be held.

use std::rc::Rc;

use kafka_protocol::messages::elect_leaders_response::{PartitionResult, ReplicaElectionResult};
use kafka_protocol::messages::{ElectLeadersRequest, ElectLeadersResponse, TopicName};

use crate::actors::messages::ListTopics;
use crate::error_code::ResponseError;
use crate::protocol::{str_bytes, Session};
use crate::store::admin::{election_outcome, valid_election_type, ELECTION_PREFERRED};
use crate::store::auth::acl;
use crate::store::ownership::Owned;

fn result(topic: &str, outcomes: Vec<(i32, ResponseError)>) -> ReplicaElectionResult {
    let mut r = ReplicaElectionResult::default();
    r.topic = TopicName(str_bytes(topic));
    r.partition_result = outcomes
        .into_iter()
        .map(|(p, e)| {
            let mut pr = PartitionResult::default();
            pr.partition_id = p;
            pr.error_code = e.code();
            pr.error_message = Some(str_bytes(&e.to_string()));
            pr
        })
        .collect();
    r
}

pub async fn handle(s: Rc<Session>, version: i16, req: ElectLeadersRequest) -> ElectLeadersResponse {
    // ALTER on the cluster, as Kafka checks.
    if !s.authorized_cluster(acl::OP_ALTER) {
        let mut r = ElectLeadersResponse::default();
        r.error_code = crate::error_code::ResponseError::ClusterAuthorizationFailed.code();
        return r;
    }
    let mut resp = ElectLeadersResponse::default();
    // v0 has no election type: preferred.
    let election_type = if version >= 1 { req.election_type } else { ELECTION_PREFERRED };
    if !valid_election_type(election_type) {
        resp.error_code = ResponseError::InvalidRequest.code();
        return resp;
    }
    let led = |topic: &str, p: i32| {
        let what = Owned::Partition { topic: topic.to_string(), partition: p };
        s.directory.ownership().owner(&what).is_some()
    };
    match req.topic_partitions {
        None => {
            let metas = s.directory.topics().send(ListTopics).await.unwrap_or_default();
            for meta in metas {
                let outcomes: Vec<_> = (0..meta.partitions)
                    .map(|p| (p, election_outcome(true, led(&meta.name, p), election_type)))
                    .filter(|(_, e)| *e != ResponseError::ElectionNotNeeded)
                    .collect();
                if !outcomes.is_empty() {
                    resp.replica_election_results.push(result(&meta.name, outcomes));
                }
            }
        }
        Some(topics) => {
            for t in topics {
                let name = t.topic.0.to_string();
                let partitions = s.topic(&name, false).await.map(|h| h.meta.partitions).unwrap_or(0);
                let outcomes = t
                    .partitions
                    .iter()
                    .map(|&p| {
                        let known = p >= 0 && p < partitions;
                        (p, election_outcome(known, known && led(&name, p), election_type))
                    })
                    .collect();
                resp.replica_election_results.push(result(&name, outcomes));
            }
        }
    }
    resp
}
