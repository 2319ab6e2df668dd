//! DescribeConfigs (key 32): every Kafka topic config with its value, source, synonyms and
//! documentation (store::configs::topic::describe), Kafka's internal topics with the configs Kafka
//! creates them with, the broker configs kaas has a true value for (store::configs::broker);
//! a GROUP's configs (store::configs::group: Kafka's group configs with the broker's values);
//! BROKER_LOGGER and CLIENT_METRICS resources have no configs here (kaas has no Log4j loggers
//! and no client-metrics subscriptions).

use std::collections::BTreeMap;
use std::rc::Rc;

use kafka_protocol::messages::describe_configs_response::{
    DescribeConfigsResourceResult, DescribeConfigsResult, DescribeConfigsSynonym,
};
use kafka_protocol::messages::{DescribeConfigsRequest, DescribeConfigsResponse};

use crate::config::{plain, Settings};
use crate::error_code::ResponseError;
use crate::protocol::{str_bytes, Session};
use crate::store::auth::acl;
use crate::store::configs::broker::{describe_broker, BrokerSetting};
use crate::store::configs::broker_store;
use crate::store::configs::dynamic::{self, DynamicConfigs};
use crate::store::configs::group::{describe_group, GroupDefaults, GroupOverrides};
use crate::store::configs::group_store;
use crate::store::configs::resources::{
    describe_target, RESOURCE_BROKER, RESOURCE_BROKER_LOGGER, RESOURCE_CLIENT_METRICS, RESOURCE_GROUP, RESOURCE_TOPIC,
};
use crate::store::configs::topic::describe::{describe_topic, internal_topic_configs};
use crate::store::configs::ConfigEntry;

/// Every kaas setting that is a Kafka broker config, with its value (config/settings.rs declares
/// which; the documentation is the setting's).
fn broker_settings(st: &Settings) -> Vec<BrokerSetting> {
    let mut out = Vec::new();
    for d in Settings::declared() {
        let doc = format!("{} (kaas setting: {})", plain(d.doc), d.key);
        for k in &d.kafka {
            let value = (k.value)(st);
            out.push(BrokerSetting {
                name: k.name,
                config_type: k.config_type,
                kafka_default: k.kafka_default,
                value,
                doc: doc.clone(),
            });
        }
    }
    out
}

/// One config of any resource on the wire: synonyms when asked for, type and documentation from
/// v3 (earlier versions cannot carry them).
fn wire_entry(e: ConfigEntry, synonyms: bool, documentation: bool, version: i16) -> DescribeConfigsResourceResult {
    let mut out = DescribeConfigsResourceResult::default();
    out.name = str_bytes(&e.name);
    out.value = e.value.as_deref().map(str_bytes);
    out.config_source = e.source;
    out.read_only = e.read_only;
    if synonyms {
        out.synonyms = e
            .synonyms
            .into_iter()
            .map(|syn| {
                let mut out = DescribeConfigsSynonym::default();
                out.name = str_bytes(&syn.name);
                out.value = syn.value.as_deref().map(str_bytes);
                out.source = syn.source;
                out
            })
            .collect();
    }
    if version >= 3 {
        out.config_type = e.config_type;
        if documentation {
            out.documentation = Some(str_bytes(&e.doc));
        }
    }
    out
}

pub(super) fn group_defaults(st: &Settings) -> GroupDefaults {
    GroupDefaults {
        consumer_session_timeout_ms: st.groups.group_consumer_session_timeout_ms,
        consumer_heartbeat_interval_ms: st.groups.group_consumer_heartbeat_interval_ms,
    }
}

/// Group `name`'s config overrides (store::configs::group_store, read on the blocking pool).
async fn group_overrides(s: &Session, name: &str) -> Option<GroupOverrides> {
    let dir = s.settings.broker.data_dir.clone();
    match tokio::task::spawn_blocking(move || group_store::load(&dir)).await {
        Ok(Ok(mut all)) => all.remove(name),
        Ok(Err(e)) => {
            tracing::warn!("reading the group configs: {e}");
            None
        }
        Err(_) => None,
    }
}

/// The dynamic broker configs (store::configs::broker_store, read on the blocking pool); none
/// when the file cannot be read (logged).
async fn dynamic_configs(s: &Session) -> DynamicConfigs {
    let dir = s.settings.broker.data_dir.clone();
    match tokio::task::spawn_blocking(move || broker_store::load(&dir)).await {
        Ok(Ok(all)) => all,
        Ok(Err(e)) => {
            tracing::warn!("reading the dynamic broker configs: {e}");
            DynamicConfigs::default()
        }
        Err(_) => DynamicConfigs::default(),
    }
}

/// Kafka describes every config when the key list is null or empty.
fn wanted(keys: &Option<Vec<kafka_protocol::protocol::StrBytes>>, name: &str) -> bool {
    keys.as_ref().is_none_or(|k| k.is_empty() || k.iter().any(|x| x.as_str() == name))
}

/// A topic's own configs: an internal topic's are the ones Kafka creates it with (kaas keeps no
/// log for it); `None` for a topic that does not exist.
async fn topic_configs(s: &Session, name: &str) -> Option<BTreeMap<String, String>> {
    match internal_topic_configs(name) {
        Some(configs) => Some(configs),
        None => s.lookup(name, false).await.ok().map(|h| h.meta.configs.clone()),
    }
}

pub async fn handle(s: Rc<Session>, version: i16, req: DescribeConfigsRequest) -> DescribeConfigsResponse {
    let st = &s.settings;
    let defaults = st.topic_defaults();
    let node = st.broker.node_id;
    let needs_dynamic = req.resources.iter().any(|r| [RESOURCE_TOPIC, RESOURCE_BROKER].contains(&r.resource_type));
    let dynamic = if needs_dynamic { dynamic_configs(&s).await } else { DynamicConfigs::default() };
    let mut resp = DescribeConfigsResponse::default();
    for res in req.resources {
        let mut r = DescribeConfigsResult::default();
        r.resource_type = res.resource_type;
        r.resource_name = res.resource_name.clone();
        // Kafka 4.4 sends "" (its DescribeConfigsResult default) when there is no error and for
        // an unknown topic; only a refusal carries a message.
        r.error_message = Some(str_bytes(""));
        // DESCRIBE_CONFIGS on the topic, the group or (brokers, loggers) the cluster.
        let (resource, name, denied) = match res.resource_type {
            RESOURCE_TOPIC => {
                (acl::RESOURCE_TOPIC, res.resource_name.as_str(), ResponseError::TopicAuthorizationFailed)
            }
            RESOURCE_GROUP => {
                (acl::RESOURCE_GROUP, res.resource_name.as_str(), ResponseError::GroupAuthorizationFailed)
            }
            _ => (acl::RESOURCE_CLUSTER, acl::CLUSTER_NAME, ResponseError::ClusterAuthorizationFailed),
        };
        if !s.authorized(acl::OP_DESCRIBE_CONFIGS, resource, name) {
            r.error_code = denied.code();
            r.error_message = Some(str_bytes("Authorization failed."));
            resp.results.push(r);
            continue;
        }
        match res.resource_type {
            RESOURCE_TOPIC => match topic_configs(&s, &res.resource_name).await {
                Some(configs) => {
                    for d in describe_topic(&defaults, (&dynamic, node), &configs) {
                        if wanted(&res.configuration_keys, &d.name) {
                            r.configs.push(wire_entry(d, req.include_synonyms, req.include_documentation, version));
                        }
                    }
                }
                None => r.error_code = ResponseError::UnknownTopicOrPartition.code(),
            },
            // Kafka lists the broker's Log4j loggers; kaas logs through `tracing` and has none.
            RESOURCE_BROKER_LOGGER => {
                if let Err(e) = describe_target(&res.resource_name, st.broker.node_id, true) {
                    r.error_code = e.code();
                    r.error_message = Some(str_bytes(&e.to_string()));
                }
            }
            // A client-metrics subscription has only the configs set on it; kaas sets none.
            RESOURCE_CLIENT_METRICS if res.resource_name.is_empty() => {
                r.error_code = ResponseError::InvalidRequest.code();
                r.error_message = Some(str_bytes("Client metrics subscription name must not be empty"));
            }
            RESOURCE_CLIENT_METRICS => {}
            // This broker: its settings and what kaas does (store::configs::broker) under its
            // dynamic values (store::configs::dynamic). The cluster default (an empty name)
            // lists the cluster's dynamic values.
            RESOURCE_BROKER => match describe_target(&res.resource_name, node, false) {
                Ok(Some(())) => {
                    for e in dynamic::describe_broker(describe_broker(broker_settings(st)), &dynamic, node) {
                        if wanted(&res.configuration_keys, &e.name) {
                            r.configs.push(wire_entry(e, req.include_synonyms, req.include_documentation, version));
                        }
                    }
                }
                Ok(None) => {
                    for e in dynamic::describe_cluster(&dynamic) {
                        if wanted(&res.configuration_keys, &e.name) {
                            r.configs.push(wire_entry(e, req.include_synonyms, req.include_documentation, version));
                        }
                    }
                }
                Err(e) => {
                    r.error_code = e.code();
                    r.error_message = Some(str_bytes(&e.to_string()));
                }
            },
            // Any group name, known or not, as Kafka's ConfigHelper (store::configs::group).
            RESOURCE_GROUP => match describe_group(
                &res.resource_name,
                group_defaults(st),
                group_overrides(&s, &res.resource_name).await.as_ref(),
            ) {
                Ok(entries) => {
                    for e in entries.into_iter().filter(|e| wanted(&res.configuration_keys, &e.name)) {
                        r.configs.push(wire_entry(e, req.include_synonyms, req.include_documentation, version));
                    }
                }
                Err(e) => {
                    r.error_code = e.code();
                    r.error_message = Some(str_bytes(&e.to_string()));
                }
            },
            _ => {
                r.error_code = ResponseError::InvalidRequest.code();
                r.error_message = Some(str_bytes("Unsupported resource type"));
            }
        }
        resp.results.push(r);
    }
    resp
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::configs::broker::BROKER_FACTS;

    #[test]
    fn the_broker_configs_are_the_declared_settings_and_the_facts_each_once() {
        let settings = broker_settings(&Settings::default());
        let mut names: Vec<&str> = settings.iter().map(|s| s.name).chain(BROKER_FACTS.iter().map(|f| f.name)).collect();
        let count = names.len();
        names.sort();
        names.dedup();
        assert_eq!(names.len(), count, "a broker config listed twice");
        let find = |n: &str| settings.iter().find(|s| s.name == n).cloned().unwrap();
        assert_eq!(find("log.dirs").value, "./kaas-data/topics");
        assert_eq!(find("listeners").value, "PLAINTEXT://127.0.0.1:9092");
        assert_eq!(find("advertised.listeners").value, "PLAINTEXT://127.0.0.1:9092");
        assert_eq!(find("transaction.state.log.num.partitions").value, "4");
        assert_eq!(find("group.consumer.assignors").value, "uniform,range");
        assert!(find("message.max.bytes").doc.ends_with("(kaas setting: max_message_bytes)"));
    }
}
