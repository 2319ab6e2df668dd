//! AlterConfigs (key 33, the legacy API): each resource's configs become exactly the request's
//! set (a topic's: store::configs::topic::alter::replace_all; a group's: store::configs::group);
//! BROKER resources refused as Kafka refuses a static config; BROKER_LOGGER is an unknown
//! resource type here, as in Kafka. The body is IncrementalAlterConfigs' (config_change).

use std::rc::Rc;

use kafka_protocol::messages::alter_configs_response::AlterConfigsResourceResponse;
use kafka_protocol::messages::{AlterConfigsRequest, AlterConfigsResponse};

use super::config_change::{alter_resources, ResourceChange};
use crate::actors::topic_configs::ConfigChange;
use crate::protocol::{str_bytes, Session};

pub async fn handle(s: Rc<Session>, _version: i16, req: AlterConfigsRequest) -> AlterConfigsResponse {
    let changes = req
        .resources
        .iter()
        .map(|r| ResourceChange {
            resource_type: r.resource_type,
            name: r.resource_name.to_string(),
            change: ConfigChange::Replace(
                r.configs.iter().map(|c| (c.name.to_string(), c.value.as_ref().map(|v| v.to_string()))).collect(),
            ),
        })
        .collect();
    let results = alter_resources(&s, changes, req.validate_only).await;
    let mut resp = AlterConfigsResponse::default();
    for (r, result) in req.resources.into_iter().zip(results) {
        let mut out = AlterConfigsResourceResponse::default();
        out.resource_type = r.resource_type;
        out.resource_name = r.resource_name;
        if let Err((code, message)) = result {
            out.error_code = code;
            out.error_message = Some(str_bytes(&message));
        }
        resp.responses.push(out);
    }
    resp
}
