//! What AlterConfigs (33) and IncrementalAlterConfigs (44) share: the checks of every resource
//! and the change of each, by resource type. Topic configs are changed by the TopicRegistry
//! (actors::topic_configs: store::configs::topic::alter), group configs in
//! store::configs::group_store and then this broker's group coordinator, BROKER configs by the
//! TopicRegistry (actors::broker_configs: store::configs::dynamic), BROKER_LOGGER changes
//! refused as Kafka refuses changes it cannot make (store::configs::resources). The
//! two APIs differ only in what a change is: AlterConfigs replaces a resource's whole set (and
//! has no BROKER_LOGGER resources), IncrementalAlterConfigs applies its operations.

use tokio::sync::oneshot;

use crate::actors::broker_configs::AlterBrokerConfigs;
use crate::actors::group_coordinator::SetGroupConfigs;
use crate::actors::topic_configs::{AlterFailure, AlterTopicConfigs, ConfigChange};
use crate::error_code::ResponseError;
use crate::protocol::Session;
use crate::store::auth::acl;
use crate::store::configs::group::alter_group;
use crate::store::configs::group_store;
use crate::store::configs::resources::{self as res, ResourceError};
use crate::store::configs::topic::alter::{check_shape, AlterOp};

/// One resource of a request: its type, its name and its change.
pub struct ResourceChange {
    pub resource_type: i8,
    pub name: String,
    pub change: ConfigChange,
}

impl ResourceChange {
    /// The change as operations (AlterConfigs' entries are SETs of the whole set).
    fn ops(&self) -> Vec<AlterOp> {
        match &self.change {
            ConfigChange::Incremental(ops) => ops.clone(),
            ConfigChange::Replace(entries) => entries
                .iter()
                .map(|(n, v)| AlterOp {
                    name: n.clone(),
                    op: crate::store::configs::topic::alter::OP_SET,
                    value: v.clone(),
                })
                .collect(),
        }
    }
}

fn refused(e: ResourceError) -> AlterFailure {
    (e.code(), e.to_string())
}

/// Applies (or, `validate_only`, checks) every resource's change: one result per resource, in
/// the request's order.
pub async fn alter_resources(
    s: &Session,
    resources: Vec<ResourceChange>,
    validate_only: bool,
) -> Vec<Result<(), AlterFailure>> {
    let keys: Vec<(i8, String)> = resources.iter().map(|r| (r.resource_type, r.name.clone())).collect();
    let duplicates = res::duplicates(&keys);
    let mut out = Vec::with_capacity(resources.len());
    for (r, duplicate) in resources.into_iter().zip(duplicates) {
        out.push(if duplicate { Err(refused(ResourceError::Duplicate)) } else { alter_one(s, r, validate_only).await });
    }
    out
}

async fn alter_one(s: &Session, r: ResourceChange, validate_only: bool) -> Result<(), AlterFailure> {
    let node = s.settings.broker.node_id;
    // ALTER_CONFIGS on the topic, the group or (brokers, loggers) the cluster.
    let (resource, name, denied) = match r.resource_type {
        res::RESOURCE_TOPIC => (acl::RESOURCE_TOPIC, r.name.as_str(), ResponseError::TopicAuthorizationFailed),
        res::RESOURCE_GROUP => (acl::RESOURCE_GROUP, r.name.as_str(), ResponseError::GroupAuthorizationFailed),
        _ => (acl::RESOURCE_CLUSTER, acl::CLUSTER_NAME, ResponseError::ClusterAuthorizationFailed),
    };
    if !s.authorized(acl::OP_ALTER_CONFIGS, resource, name) {
        return Err((denied.code(), "Authorization failed.".into()));
    }
    let ops = r.ops();
    let replace = matches!(r.change, ConfigChange::Replace(_));
    match r.resource_type {
        res::RESOURCE_TOPIC => {
            check_shape(&ops).map_err(|e| (e.code(), e.to_string()))?;
            alter_topic(s, &r.name, r.change, validate_only).await
        }
        res::RESOURCE_BROKER => {
            let target = res::broker_target(node, &r.name).map_err(refused)?;
            alter_broker(s, target, ops, replace, validate_only).await
        }
        // Kafka's AlterConfigs has no BROKER_LOGGER resource: an unknown type there.
        res::RESOURCE_BROKER_LOGGER if !replace => res::logger_change(node, &r.name, &ops).map_err(refused),
        res::RESOURCE_GROUP => alter_group_configs(s, &r.name, ops, replace, validate_only).await,
        t => Err(refused(ResourceError::UnknownType(t))),
    }
}

/// Alters the configs of topic `name` on the TopicRegistry.
async fn alter_topic(s: &Session, name: &str, change: ConfigChange, validate_only: bool) -> Result<(), AlterFailure> {
    res::check_topic_name(name).map_err(refused)?;
    let (reply, rx) = oneshot::channel();
    let msg = AlterTopicConfigs { name: name.to_string(), change, validate_only, reply };
    let gone = || (ResponseError::UnknownServerError.code(), "the topic registry stopped".to_string());
    s.directory.topics().send(msg).await.map_err(|_| gone())?;
    rx.await.map_err(|_| gone())?
}

/// Alters the dynamic configs of this broker (`node`) or the cluster default (None) on the
/// TopicRegistry, which applies their topic defaults.
async fn alter_broker(
    s: &Session,
    node: Option<i32>,
    ops: Vec<AlterOp>,
    replace: bool,
    validate_only: bool,
) -> Result<(), AlterFailure> {
    let (reply, rx) = oneshot::channel();
    let msg = AlterBrokerConfigs { node, ops, replace, validate_only, reply };
    let gone = || (ResponseError::UnknownServerError.code(), "the topic registry stopped".to_string());
    s.directory.topics().send(msg).await.map_err(|_| gone())?;
    rx.await.map_err(|_| gone())?
}

/// Alters the configs of group `name` (`replace`: the ops are the whole set): in the store on
/// the blocking pool, then this broker's group coordinator, if it runs here, takes them at once
/// (another broker's reads them within seconds).
async fn alter_group_configs(
    s: &Session,
    name: &str,
    ops: Vec<AlterOp>,
    replace: bool,
    validate_only: bool,
) -> Result<(), AlterFailure> {
    let defaults = super::describe_configs::group_defaults(&s.settings);
    let (dir, group) = (s.settings.broker.data_dir.clone(), name.to_string());
    let alter = move || {
        group_store::alter(&dir, &group, validate_only, |current| alter_group(&group, &ops, replace, current, defaults))
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
