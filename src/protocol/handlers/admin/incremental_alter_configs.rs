//! IncrementalAlterConfigs (key 44): SET, DELETE, APPEND and SUBTRACT on topic configs
//! (store::configs::topic::alter, applied and persisted by the TopicRegistry); BROKER and
//! BROKER_LOGGER resources answered as Kafka answers changes it cannot make
//! (store::configs::resources); GROUP resources: the consumer group timers stored per group
//! (store::configs::group, group_store), Kafka's other group configs refused. The body is
//! AlterConfigs' (config_change).

use std::rc::Rc;

use kafka_protocol::messages::incremental_alter_configs_response::AlterConfigsResourceResponse;
use kafka_protocol::messages::{IncrementalAlterConfigsRequest, IncrementalAlterConfigsResponse};

use super::config_change::{alter_resources, ResourceChange};
use crate::actors::topic_configs::ConfigChange;
use crate::protocol::{str_bytes, Session};
use crate::store::configs::topic::alter::AlterOp;

pub async fn handle(
    s: Rc<Session>,
    _version: i16,
    req: IncrementalAlterConfigsRequest,
) -> IncrementalAlterConfigsResponse {
    let changes = req
        .resources
        .iter()
        .map(|r| ResourceChange {
            resource_type: r.resource_type,
            name: r.resource_name.to_string(),
            change: ConfigChange::Incremental(
                r.configs
                    .iter()
                    .map(|c| AlterOp {
                        name: c.name.to_string(),
                        op: c.config_operation,
                        value: c.value.as_ref().map(|v| v.to_string()),
                    })
                    .collect(),
            ),
        })
        .collect();
    let results = alter_resources(&s, changes, req.validate_only).await;
    let mut resp = IncrementalAlterConfigsResponse::default();
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
