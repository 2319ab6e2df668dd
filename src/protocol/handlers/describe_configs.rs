//! DescribeConfigs (key 32): topic configs (explicit ones plus the broker defaults that apply)
//! and the broker's own settings, enough for admin tools.

use std::rc::Rc;

use kafka_protocol::messages::describe_configs_response::{DescribeConfigsResourceResult, DescribeConfigsResult};
use kafka_protocol::messages::{DescribeConfigsRequest, DescribeConfigsResponse};

use crate::error_code::ResponseError;
use crate::protocol::{str_bytes, Session};

const RESOURCE_TOPIC: i8 = 2;
const RESOURCE_BROKER: i8 = 4;
/// ConfigSource values of DescribeConfigs v1+.
const SOURCE_TOPIC: i8 = 1;
const SOURCE_STATIC_BROKER: i8 = 4;
const SOURCE_DEFAULT: i8 = 5;

fn entry(name: &str, value: &str, source: i8, read_only: bool) -> DescribeConfigsResourceResult {
    let mut e = DescribeConfigsResourceResult::default();
    e.name = str_bytes(name);
    e.value = Some(str_bytes(value));
    e.config_source = source;
    e.read_only = read_only;
    e
}

fn wanted(keys: &Option<Vec<kafka_protocol::protocol::StrBytes>>, name: &str) -> bool {
    keys.as_ref().is_none_or(|k| k.iter().any(|x| x.as_str() == name))
}

pub async fn handle(s: Rc<Session>, _version: i16, req: DescribeConfigsRequest) -> DescribeConfigsResponse {
    let st = &s.settings;
    let defaults = [
        ("cleanup.policy", "delete".to_string()),
        ("retention.ms", st.retention_ms.to_string()),
        ("retention.bytes", st.retention_bytes.to_string()),
        ("segment.bytes", st.segment_bytes.to_string()),
        ("max.message.bytes", st.max_message_bytes.to_string()),
        ("message.timestamp.type", "CreateTime".to_string()),
        ("min.insync.replicas", "1".to_string()),
        ("compression.type", "producer".to_string()),
    ];
    let mut resp = DescribeConfigsResponse::default();
    for res in req.resources {
        let mut r = DescribeConfigsResult::default();
        r.resource_type = res.resource_type;
        r.resource_name = res.resource_name.clone();
        match res.resource_type {
            RESOURCE_TOPIC => match s.lookup(&res.resource_name, false).await {
                Ok(h) => {
                    for (name, default) in &defaults {
                        if !wanted(&res.configuration_keys, name) {
                            continue;
                        }
                        match h.meta.configs.get(*name) {
                            Some(v) => r.configs.push(entry(name, v, SOURCE_TOPIC, false)),
                            None => r.configs.push(entry(name, default, SOURCE_DEFAULT, false)),
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
