//! ListConfigResources (key 74, KIP-1142; v0 was ListClientMetricsResources): the config
//! resources of the types asked (store::configs::resources::listed): the live brokers (BROKER and
//! BROKER_LOGGER), every topic with the internal ones, the groups with configs set
//! (store::configs::group_store), and no client-metrics subscriptions (kaas has none).

use std::rc::Rc;

use kafka_protocol::messages::list_config_resources_response::ConfigResource;
use kafka_protocol::messages::{ListConfigResourcesRequest, ListConfigResourcesResponse};

use crate::actors::messages::ListTopics;
use crate::error_code::ResponseError;
use crate::protocol::{str_bytes, Session};
use crate::store::auth::acl;
use crate::store::configs::group_store;
use crate::store::configs::resources::{listed, RESOURCE_GROUP, RESOURCE_TOPIC};
use crate::store::topics::INTERNAL_TOPICS;

pub async fn handle(s: Rc<Session>, version: i16, req: ListConfigResourcesRequest) -> ListConfigResourcesResponse {
    // DESCRIBE_CONFIGS on the cluster, as Kafka checks.
    if !s.authorized_cluster(acl::OP_DESCRIBE_CONFIGS) {
        let mut r = ListConfigResourcesResponse::default();
        r.error_code = crate::error_code::ResponseError::ClusterAuthorizationFailed.code();
        return r;
    }
    let mut resp = ListConfigResourcesResponse::default();
    let wants_topics = version >= 1 && (req.resource_types.is_empty() || req.resource_types.contains(&RESOURCE_TOPIC));
    let mut topics: Vec<String> = INTERNAL_TOPICS.iter().map(|t| t.to_string()).collect();
    if wants_topics {
        match s.directory.topics().send(ListTopics).await {
            Ok(metas) => topics.extend(metas.into_iter().map(|m| m.name)),
            Err(_) => {
                resp.error_code = ResponseError::UnknownServerError.code();
                return resp;
            }
        }
    }
    topics.sort();
    topics.dedup();
    let brokers: Vec<i32> = s.directory.ownership().brokers().map(|b| b.node_id).collect();
    let wants_groups = version >= 1 && (req.resource_types.is_empty() || req.resource_types.contains(&RESOURCE_GROUP));
    let mut groups = Vec::new();
    if wants_groups {
        let dir = s.settings.broker.data_dir.clone();
        match tokio::task::spawn_blocking(move || group_store::load(&dir)).await {
            Ok(Ok(all)) => groups.extend(all.into_keys()),
            _ => {
                resp.error_code = ResponseError::KafkaStorageError.code();
                return resp;
            }
        }
    }
    match listed(version, &req.resource_types, &topics, &brokers, &groups) {
        Ok(resources) => {
            resp.config_resources = resources
                .into_iter()
                .map(|(name, resource_type)| {
                    let mut r = ConfigResource::default();
                    r.resource_name = str_bytes(&name);
                    r.resource_type = resource_type;
                    r
                })
                .collect();
        }
        Err(e) => resp.error_code = e.code(),
    }
    resp
}
