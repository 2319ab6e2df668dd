//! DescribeConfigs (key 32): every Kafka topic config with its value, source, synonyms and
//! documentation (store::topic_config::describe), Kafka's internal topics with the configs Kafka
//! creates them with, the broker's own settings; BROKER_LOGGER and CLIENT_METRICS resources
//! have no configs here (kaas has no Log4j loggers and no client-metrics subscriptions).

use std::rc::Rc;

use kafka_protocol::messages::describe_configs_response::{
    DescribeConfigsResourceResult, DescribeConfigsResult, DescribeConfigsSynonym,
};
use kafka_protocol::messages::{DescribeConfigsRequest, DescribeConfigsResponse};

use crate::error_code::ResponseError;
use crate::protocol::{str_bytes, Session};
use crate::store::config_resources::{
    check_node, RESOURCE_BROKER, RESOURCE_BROKER_LOGGER, RESOURCE_CLIENT_METRICS, RESOURCE_TOPIC,
};
use crate::store::topic_config::describe::{describe_topic, internal_topic_configs, Described};
/// ConfigSource of DescribeConfigs v1+.
const SOURCE_STATIC_BROKER: i8 = 4;

fn entry(name: &str, value: &str, source: i8, read_only: bool) -> DescribeConfigsResourceResult {
    let mut e = DescribeConfigsResourceResult::default();
    e.name = str_bytes(name);
    e.value = Some(str_bytes(value));
    e.config_source = source;
    e.read_only = read_only;
    e
}

/// One topic config; synonyms when asked for, type and documentation from v3 (earlier versions
/// cannot carry them).
fn topic_entry(d: Described, synonyms: bool, documentation: bool, version: i16) -> DescribeConfigsResourceResult {
    let mut e = entry(d.name, &d.value, d.source, false);
    if synonyms {
        e.synonyms = d
            .synonyms
            .into_iter()
            .map(|syn| {
                let mut out = DescribeConfigsSynonym::default();
                out.name = str_bytes(&syn.name);
                out.value = Some(str_bytes(&syn.value));
                out.source = syn.source;
                out
            })
            .collect();
    }
    if version >= 3 {
        e.config_type = d.config_type;
        if documentation {
            e.documentation = Some(str_bytes(d.doc));
        }
    }
    e
}

/// Kafka describes every config when the key list is null or empty.
fn wanted(keys: &Option<Vec<kafka_protocol::protocol::StrBytes>>, name: &str) -> bool {
    keys.as_ref().is_none_or(|k| k.is_empty() || k.iter().any(|x| x.as_str() == name))
}

/// A topic's own configs: an internal topic's are the ones Kafka creates it with (kaas keeps no
/// log for it); `None` for a topic that does not exist.
async fn topic_configs(s: &Session, name: &str) -> Option<std::collections::BTreeMap<String, String>> {
    match internal_topic_configs(name) {
        Some(configs) => Some(configs),
        None => s.lookup(name, false).await.ok().map(|h| h.meta.configs.clone()),
    }
}

pub async fn handle(s: Rc<Session>, version: i16, req: DescribeConfigsRequest) -> DescribeConfigsResponse {
    let st = &s.settings;
    let defaults = st.topic_defaults();
    let mut resp = DescribeConfigsResponse::default();
    for res in req.resources {
        let mut r = DescribeConfigsResult::default();
        r.resource_type = res.resource_type;
        r.resource_name = res.resource_name.clone();
        match res.resource_type {
            RESOURCE_TOPIC => match topic_configs(&s, &res.resource_name).await {
                Some(configs) => {
                    for d in describe_topic(&defaults, &configs) {
                        if wanted(&res.configuration_keys, d.name) {
                            r.configs.push(topic_entry(d, req.include_synonyms, req.include_documentation, version));
                        }
                    }
                }
                None => r.error_code = ResponseError::UnknownTopicOrPartition.code(),
            },
            // Kafka lists the broker's Log4j loggers; kaas logs through `tracing` and has none.
            RESOURCE_BROKER_LOGGER => {
                if let Err(e) = check_node(&res.resource_name, st.node_id) {
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
            RESOURCE_BROKER => {
                let broker = [
                    ("broker.id", st.node_id.to_string()),
                    ("num.partitions", st.num_partitions.to_string()),
                    ("auto.create.topics.enable", st.auto_create_topics.to_string()),
                    ("message.max.bytes", st.max_message_bytes.to_string()),
                    ("socket.request.max.bytes", st.max_request_bytes.to_string()),
                    ("log.segment.bytes", st.segment_bytes.to_string()),
                    ("log.retention.ms", st.retention_ms.to_string()),
                    ("producer.id.expiration.ms", st.producer_id_expiration_ms.to_string()),
                ];
                for (name, v) in broker {
                    if wanted(&res.configuration_keys, name) {
                        r.configs.push(entry(name, &v, SOURCE_STATIC_BROKER, true));
                    }
                }
            }
            _ => {
                r.error_code = ResponseError::InvalidRequest.code();
                r.error_message = Some(str_bytes("Unsupported resource type"));
            }
        }
        resp.results.push(r);
    }
    resp
}
