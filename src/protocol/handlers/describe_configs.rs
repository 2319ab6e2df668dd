//! DescribeConfigs (key 32): every Kafka topic config with its value, source, synonyms and
//! documentation (store::topic_config::describe), and the broker's own settings.

use std::rc::Rc;

use kafka_protocol::messages::describe_configs_response::{
    DescribeConfigsResourceResult, DescribeConfigsResult, DescribeConfigsSynonym,
};
use kafka_protocol::messages::{DescribeConfigsRequest, DescribeConfigsResponse};

use crate::error_code::ResponseError;
use crate::protocol::{str_bytes, Session};
use crate::store::topic_config::describe::{describe_topic, Described};

const RESOURCE_TOPIC: i8 = 2;
const RESOURCE_BROKER: i8 = 4;
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

pub async fn handle(s: Rc<Session>, version: i16, req: DescribeConfigsRequest) -> DescribeConfigsResponse {
    let st = &s.settings;
    let defaults = st.topic_defaults();
    let mut resp = DescribeConfigsResponse::default();
    for res in req.resources {
        let mut r = DescribeConfigsResult::default();
        r.resource_type = res.resource_type;
        r.resource_name = res.resource_name.clone();
        match res.resource_type {
            RESOURCE_TOPIC => match s.lookup(&res.resource_name, false).await {
                Ok(h) => {
                    for d in describe_topic(&defaults, &h.meta.configs) {
                        if wanted(&res.configuration_keys, d.name) {
                            r.configs.push(topic_entry(d, req.include_synonyms, req.include_documentation, version));
                        }
                    }
                }
                Err(_) => r.error_code = ResponseError::UnknownTopicOrPartition.code(),
            },
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
