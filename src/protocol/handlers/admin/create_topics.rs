//! CreateTopics (key 19). Replication factor must be -1 or 1 (one copy on the shared disk); a
//! manual assignment is honoured where it names the broker kaas's placement picks.
//! Partition counts are bounded per request (Kafka's controller limit) and per broker
//! (`max_partitions`); topic configs are range-checked as Kafka checks them.

use std::rc::Rc;

use kafka_protocol::messages::create_topics_response::CreatableTopicResult;
use kafka_protocol::messages::{CreateTopicsRequest, CreateTopicsResponse};

use crate::actors::messages::CreateTopic;
use crate::error_code::ResponseError;
use crate::protocol::{str_bytes, Session};
use crate::store::auth::acl;
use crate::store::topics;

pub async fn handle(s: Rc<Session>, version: i16, req: CreateTopicsRequest) -> CreateTopicsResponse {
    let mut resp = CreateTopicsResponse::default();
    // Kafka's controller writes every record of one request as one bounded batch: past
    // MAX_RECORDS_PER_USER_OP the whole request fails with POLICY_VIOLATION and nothing is created.
    let records = req.topics.iter().fold(0usize, |sum, t| {
        let partitions = match (t.assignments.len(), t.num_partitions) {
            (0, -1) => s.settings.log.num_partitions,
            (0, n) => n,
            (n, _) => i32::try_from(n).unwrap_or(i32::MAX),
        };
        sum.saturating_add(topics::creation_records(partitions, t.configs.len()))
    });
    if let Err(e) = topics::check_request_records(records) {
        for t in req.topics {
            let mut r = CreatableTopicResult::default();
            r.name = t.name;
            r.error_code = e.code();
            r.error_message = Some(str_bytes(&e.to_string()));
            resp.topics.push(r);
        }
        return resp;
    }
    for t in req.topics {
        let mut r = CreatableTopicResult::default();
        r.name = t.name.clone();
        // Kafka 4.4 leaves a created topic's ErrorMessage null; a refusal sets it.
        r.error_message = None;
        let fail = |r: &mut CreatableTopicResult, code: i16, msg: String| {
            r.error_code = code;
            r.error_message = Some(str_bytes(&msg));
        };
        let may_create =
            s.authorized_cluster(acl::OP_CREATE) || s.authorized(acl::OP_CREATE, acl::RESOURCE_TOPIC, &t.name.0);
        if !may_create {
            fail(&mut r, ResponseError::TopicAuthorizationFailed.code(), "Authorization failed.".into());
        } else if !t.assignments.is_empty() && t.num_partitions != -1 {
            fail(
                &mut r,
                ResponseError::InvalidRequest.code(),
                "A manual partition assignment was specified, but numPartitions was not set to -1.".into(),
            );
        } else if !t.assignments.is_empty() && t.replication_factor != -1 {
            fail(
                &mut r,
                ResponseError::InvalidRequest.code(),
                "A manual partition assignment was specified, but replication factor was not set to -1.".into(),
            );
        } else if !matches!(t.replication_factor, -1 | 1) {
            fail(
                &mut r,
                ResponseError::InvalidReplicationFactor.code(),
                format!("Replication factor must be 1 on kaas, got {}.", t.replication_factor),
            );
        } else {
            let configs =
                t.configs.iter().map(|c| (c.name.to_string(), c.value.as_ref().map(|v| v.to_string()))).collect();
            let msg = CreateTopic {
                name: t.name.0.to_string(),
                partitions: t.num_partitions,
                configs,
                validate_only: req.validate_only,
                assignments: t
                    .assignments
                    .iter()
                    .map(|a| (a.partition_index, a.broker_ids.iter().map(|b| b.0).collect()))
                    .collect(),
            };
            match s.directory.topics().send(msg).await {
                Ok(Ok(meta)) => {
                    if version >= 7 {
                        r.topic_id = meta.id;
                    }
                    if version >= 5 {
                        r.num_partitions = meta.partitions;
                        r.replication_factor = 1;
                    }
                }
                Ok(Err(f)) => fail(&mut r, f.error_code, f.message),
                Err(e) => fail(&mut r, -1, e.to_string()),
            }
        }
        resp.topics.push(r);
    }
    resp
}
