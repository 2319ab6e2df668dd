//! DeleteTopics (key 20): by name (v0-5) or by name or id (v6+).

use crate::error_code::ResponseError;
use std::rc::Rc;

use kafka_protocol::messages::delete_topics_response::DeletableTopicResult;
use kafka_protocol::messages::{DeleteTopicsRequest, DeleteTopicsResponse, TopicName};

use crate::actors::messages::DeleteTopic;
use crate::actors::messages::ListTopics;
use crate::protocol::{str_bytes, Session};
use crate::store::auth::acl;

pub async fn handle(s: Rc<Session>, version: i16, req: DeleteTopicsRequest) -> DeleteTopicsResponse {
    let targets: Vec<(Option<String>, Option<uuid::Uuid>)> = if version >= 6 {
        req.topics
            .iter()
            .map(|t| {
                (t.name.as_ref().map(|n| n.0.to_string()), if t.topic_id.is_nil() { None } else { Some(t.topic_id) })
            })
            .collect()
    } else {
        req.topic_names.iter().map(|n| (Some(n.0.to_string()), None)).collect()
    };
    let mut resp = DeleteTopicsResponse::default();
    for (name, id) in targets {
        let mut r = DeletableTopicResult::default();
        r.name = name.as_deref().map(|n| TopicName(str_bytes(n)));
        if version >= 6 {
            r.topic_id = id.unwrap_or_default();
        }
        // DELETE on the topic; a topic named by its id only is looked up by name first.
        let named = match (&name, id) {
            (None, Some(id)) if s.authorizer.is_some() => {
                let all = s.directory.topics().send(ListTopics).await.unwrap_or_default();
                all.into_iter().find(|m| m.id == id).map(|m| m.name)
            }
            _ => name.clone(),
        };
        if named.as_deref().is_some_and(|n| !s.authorized(acl::OP_DELETE, acl::RESOURCE_TOPIC, n)) {
            r.error_code = ResponseError::TopicAuthorizationFailed.code();
            resp.responses.push(r);
            continue;
        }
        match s.directory.topics().send(DeleteTopic { name: name.clone(), id }).await {
            Ok(Ok(meta)) => {
                r.name = Some(TopicName(str_bytes(&meta.name)));
                if version >= 6 {
                    r.topic_id = meta.id;
                }
                s.evict(&meta.name);
            }
            Ok(Err(e)) => r.error_code = e.code(),
            Err(_) => r.error_code = ResponseError::UnknownServerError.code(),
        }
        resp.responses.push(r);
    }
    resp
}
