//! IncrementalAlterConfigs (key 44): SET, DELETE, APPEND and SUBTRACT on topic configs
//! (store::topic_config::alter, applied and persisted by the TopicRegistry); BROKER and
//! BROKER_LOGGER resources answered as Kafka answers changes it cannot make
//! (store::config_resources); GROUP resources: the consumer group timers stored per group
//! (store::group_config, store::group_config_store), Kafka's other group configs refused.

use std::rc::Rc;

use kafka_protocol::messages::incremental_alter_configs_response::AlterConfigsResourceResponse;
use kafka_protocol::messages::{IncrementalAlterConfigsRequest, IncrementalAlterConfigsResponse};
use tokio::sync::oneshot;

use crate::actors::group_coordinator::SetGroupConfigs;
use crate::actors::topic_configs::{AlterFailure, AlterTopicConfigs, ConfigChange};
use crate::error_code::ResponseError;
use crate::protocol::{str_bytes, Session};
use crate::store::config_resources::{self as res, ResourceError};
use crate::store::group_config::alter_group;
use crate::store::group_config_store;
use crate::store::topic_config::alter::{check_shape, AlterOp};

fn refused(e: ResourceError) -> AlterFailure {
    (e.code(), e.to_string())
}

/// Alters the configs of topic `name` (shared with AlterConfigs).
pub async fn alter_topic(
    s: &Session,
    name: &str,
    change: ConfigChange,
    validate_only: bool,
) -> Result<(), AlterFailure> {
    res::check_topic_name(name).map_err(refused)?;
    let (reply, rx) = oneshot::channel();
    let msg = AlterTopicConfigs { name: name.to_string(), change, validate_only, reply };
    let gone = || (ResponseError::UnknownServerError.code(), "the topic registry stopped".to_string());
    s.directory.topics().send(msg).await.map_err(|_| gone())?;
    rx.await.map_err(|_| gone())?
}

/// Alters the configs of group `name` (shared with AlterConfigs; `replace`: the ops are the
/// whole set): in the store on the blocking pool, then this broker's group coordinator, if it
/// runs here, takes them at once (another broker's reads them within seconds).
pub async fn alter_group_configs(
    s: &Session,
    name: &str,
    ops: Vec<AlterOp>,
    replace: bool,
    validate_only: bool,
) -> Result<(), AlterFailure> {
    let defaults = super::describe_configs::group_defaults(&s.settings);
    let (dir, group) = (s.settings.data_dir.clone(), name.to_string());
    let alter = move || {
        group_config_store::alter(&dir, &group, validate_only, |current| {
            alter_group(&group, &ops, replace, current, defaults)
        })
    };
    let gone = |e: tokio::task::JoinError| (ResponseError::UnknownServerError.code(), e.to_string());
    let all = tokio::task::spawn_blocking(alter).await.map_err(gone)??;
    if !validate_only {
        if let Some(groups) = s.groups.get() {
            groups.do_send(SetGroupConfigs(all));
        }
    }
    Ok(())
}

pub async fn handle(
    s: Rc<Session>,
    _version: i16,
    req: IncrementalAlterConfigsRequest,
) -> IncrementalAlterConfigsResponse {
    let keys: Vec<(i8, String)> =
        req.resources.iter().map(|r| (r.resource_type, r.resource_name.to_string())).collect();
    let duplicates = res::duplicates(&keys);
    let mut resp = IncrementalAlterConfigsResponse::default();
    for (r, duplicate) in req.resources.into_iter().zip(duplicates) {
        let name = r.resource_name.to_string();
        let ops: Vec<AlterOp> = r
            .configs
            .iter()
            .map(|c| AlterOp {
                name: c.name.to_string(),
                op: c.config_operation,
                value: c.value.as_ref().map(|v| v.to_string()),
            })
            .collect();
        let node = s.settings.node_id;
        let result = match r.resource_type {
            _ if duplicate => Err(refused(ResourceError::Duplicate)),
            res::RESOURCE_TOPIC => match check_shape(&ops) {
                Ok(()) => alter_topic(&s, &name, ConfigChange::Incremental(ops), req.validate_only).await,
                Err(e) => Err((e.code(), e.to_string())),
            },
            res::RESOURCE_BROKER => res::broker_change(node, &name, &ops).map_err(refused),
            res::RESOURCE_BROKER_LOGGER => res::logger_change(node, &name, &ops).map_err(refused),
            res::RESOURCE_GROUP => alter_group_configs(&s, &name, ops, false, req.validate_only).await,
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
