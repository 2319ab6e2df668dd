//! CreatePartitions (key 37, KIP-195): adds partitions to existing topics, as Kafka's controller
//! answers it: a repeated topic name is INVALID_REQUEST once (none of its entries applied), the
//! other topics each get their own answer (store::create_partitions); `validate_only` checks
//! and changes nothing. Existing partitions are untouched.

use std::rc::Rc;

use kafka_protocol::messages::create_partitions_response::CreatePartitionsTopicResult;
use kafka_protocol::messages::{CreatePartitionsRequest, CreatePartitionsResponse};

use crate::actors::messages::CreatePartitions;
use crate::error_code::ResponseError;
use crate::protocol::{str_bytes, Session};
use crate::store::auth::acl;
use crate::store::create_partitions::{duplicate_topics, CreatePartitionsError};

pub async fn handle(s: Rc<Session>, _version: i16, req: CreatePartitionsRequest) -> CreatePartitionsResponse {
    let mut resp = CreatePartitionsResponse::default();
    let answer = |name, code: i16, message: Option<String>| {
        let mut r = CreatePartitionsTopicResult::default();
        r.name = name;
        r.error_code = code;
        r.error_message = message.map(|m| str_bytes(&m));
        r
    };
    let duplicates = duplicate_topics(req.topics.iter().map(|t| t.name.0.as_str()));
    let mut answered_duplicates = std::collections::HashSet::new();
    for t in req.topics {
        let name = t.name.0.to_string();
        if duplicates.contains(&name) {
            if answered_duplicates.insert(name) {
                let e = CreatePartitionsError::DuplicateTopic;
                resp.results.push(answer(t.name, e.code(), e.message()));
            }
            continue;
        }
        if !s.authorized(acl::OP_ALTER, acl::RESOURCE_TOPIC, &name) {
            let why = Some("Authorization failed.".to_string());
            resp.results.push(answer(t.name, ResponseError::TopicAuthorizationFailed.code(), why));
            continue;
        }
        let msg = CreatePartitions {
            name,
            count: t.count,
            assignments: t
                .assignments
                .map(|a| a.into_iter().map(|b| b.broker_ids.into_iter().map(|id| id.0).collect()).collect()),
            validate_only: req.validate_only,
        };
        let result = match s.directory.topics().send(msg).await {
            Ok(Ok(_)) => answer(t.name.clone(), 0, None),
            // An unknown topic is answered without a message, as Kafka does.
            Ok(Err(f)) => answer(t.name.clone(), f.error_code, Some(f.message).filter(|m| !m.is_empty())),
            Err(e) => answer(t.name.clone(), ResponseError::UnknownServerError.code(), Some(e.to_string())),
        };
        // Connections that cached the topic ask the registry again (TopicHandle::is_current);
        // this one too.
        s.evict(&t.name.0);
        resp.results.push(result);
    }
    resp
}
