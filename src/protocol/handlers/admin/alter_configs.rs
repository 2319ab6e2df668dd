//! AlterConfigs (key 33, the legacy API): a topic's configs become exactly the request's set
//! (store::topic_config::alter::replace_all); BROKER resources as in IncrementalAlterConfigs;
//! GROUP resources as in IncrementalAlterConfigs (store::group_config); BROKER_LOGGER is an
//! unknown resource type here, as in Kafka.

use std::rc::Rc;

use kafka_protocol::messages::alter_configs_response::AlterConfigsResourceResponse;
use kafka_protocol::messages::{AlterConfigsRequest, AlterConfigsResponse};

use super::incremental_alter_configs::{alter_group_configs, alter_topic};
use crate::actors::topic_configs::ConfigChange;
use crate::protocol::{str_bytes, Session};
use crate::store::config_resources::{self as res, ResourceError};
use crate::store::topic_config::alter::{check_shape, AlterOp, OP_SET};

pub async fn handle(s: Rc<Session>, _version: i16, req: AlterConfigsRequest) -> AlterConfigsResponse {
    let keys: Vec<(i8, String)> =
        req.resources.iter().map(|r| (r.resource_type, r.resource_name.to_string())).collect();
    let duplicates = res::duplicates(&keys);
    let mut resp = AlterConfigsResponse::default();
    for (r, duplicate) in req.resources.into_iter().zip(duplicates) {
        let name = r.resource_name.to_string();
        let entries: Vec<(String, Option<String>)> =
            r.configs.iter().map(|c| (c.name.to_string(), c.value.as_ref().map(|v| v.to_string()))).collect();
        let ops: Vec<AlterOp> =
            entries.iter().map(|(n, v)| AlterOp { name: n.clone(), op: OP_SET, value: v.clone() }).collect();
        let refused = |e: ResourceError| (e.code(), e.to_string());
        let result = match r.resource_type {
            _ if duplicate => Err(refused(ResourceError::Duplicate)),
            res::RESOURCE_TOPIC => match check_shape(&ops) {
                Ok(()) => alter_topic(&s, &name, ConfigChange::Replace(entries), req.validate_only).await,
                Err(e) => Err((e.code(), e.to_string())),
            },
            res::RESOURCE_BROKER => res::broker_change(s.settings.node_id, &name, &ops).map_err(refused),
            res::RESOURCE_GROUP => alter_group_configs(&s, &name, ops, true, req.validate_only).await,
            t => Err(refused(ResourceError::UnknownType(t))),
        };
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
