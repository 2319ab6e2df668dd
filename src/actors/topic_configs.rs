//! Altering a topic's configs (AlterConfigs, IncrementalAlterConfigs) on the TopicRegistry: the
//! topic file is read, changed by `store::configs::topic::alter` and rewritten crash-safely on the
//! blocking pool; then this broker's handles and partition leaders take the new settings. Peers
//! see the file at their next membership tick (`refresh_topics` calls `apply_configs`).

use std::collections::BTreeMap;
use std::path::Path;

use actix::{ActorFutureExt, AsyncContext, Handler, Message, WrapFuture};

use super::messages::{Reply, SetLogConfig};
use super::topics::TopicRegistry;
use crate::error_code::ResponseError;
use crate::store::cluster::fence::SelfFence;
use crate::store::configs::topic::{self as topic_config, alter};
use crate::store::topics::{self, TopicMeta};

/// What a request changes.
#[derive(Debug, Clone)]
pub enum ConfigChange {
    /// IncrementalAlterConfigs.
    Incremental(Vec<alter::AlterOp>),
    /// AlterConfigs: the whole set.
    Replace(Vec<(String, Option<String>)>),
}

/// A refusal with the Kafka error code and message it is answered with.
pub type AlterFailure = (i16, String);

#[derive(Message)]
#[rtype(result = "()")]
pub struct AlterTopicConfigs {
    pub name: String,
    pub change: ConfigChange,
    pub validate_only: bool,
    pub reply: Reply<Result<(), AlterFailure>>,
}

fn unknown(name: &str) -> AlterFailure {
    (ResponseError::UnknownTopicOrPartition.code(), format!("The topic '{name}' does not exist."))
}

/// Reads the topic file, applies the change, writes the file. `None` when nothing was written
/// (validate_only).
fn alter_on_disk(
    data_dir: &Path,
    name: &str,
    id: uuid::Uuid,
    change: &ConfigChange,
    validate_only: bool,
    fence: &SelfFence,
) -> Result<Option<BTreeMap<String, String>>, AlterFailure> {
    let storage =
        |e: topics::TopicError| (ResponseError::KafkaStorageError.code(), format!("topic file of {name}: {e}"));
    // Read, change and rewrite under the topics lock: another broker's alter, CreatePartitions or
    // deletion of the same file is not interleaved with this one.
    let lock = match topics::TopicsLock::acquire(data_dir, topics::TOPICS_LOCK_WAIT) {
        Ok(Some(lock)) => lock,
        Ok(None) => {
            return Err((
                ResponseError::RequestTimedOut.code(),
                "Another broker is changing the topics; try again.".into(),
            ))
        }
        Err(e) => return Err((ResponseError::KafkaStorageError.code(), format!("topics lock: {e}"))),
    };
    let meta =
        topics::load_one(data_dir, name).map_err(storage)?.filter(|m| m.id == id).ok_or_else(|| unknown(name))?;
    let configs = match change {
        ConfigChange::Incremental(ops) => alter::apply_incremental(&meta.configs, ops),
        ConfigChange::Replace(entries) => alter::replace_all(entries),
    }
    .map_err(|e| (e.code(), e.to_string()))?;
    if validate_only {
        return Ok(None);
    }
    if configs != meta.configs {
        topics::replace(data_dir, &TopicMeta { configs: configs.clone(), ..meta }, &lock).map_err(storage)?;
        // Self-fence: answered only while no broker took over from this one (what was written
        // stays; a fenced broker stops).
        fence.check().map_err(|e| (ResponseError::KafkaStorageError.code(), e.to_string()))?;
    }
    Ok(Some(configs))
}

impl TopicRegistry {
    /// The topic's configs are now `configs` (altered here or by a peer): Produce's limits and
    /// the leaders' log settings follow at once.
    pub(super) fn apply_configs(&mut self, name: &str, configs: BTreeMap<String, String>) {
        let defaults = self.settings.topic_defaults();
        let Some(h) = self.topics.get_mut(name) else { return };
        if h.meta.configs == configs {
            return;
        }
        h.meta.configs = configs;
        let effective = super::topics::effective(&self.topic_layer, &h.meta.configs);
        h.set_produce_limits(topic_config::produce_limits(&defaults, &effective));
        let (meta, leaders) = (h.meta.clone(), h.leaders());
        let config = self.log_config(&meta);
        for leader in leaders {
            leader.do_send(SetLogConfig { config: config.clone() });
        }
        tracing::info!(topic = %name, configs = ?meta.configs, "topic configs changed");
    }
}

impl Handler<AlterTopicConfigs> for TopicRegistry {
    type Result = ();

    /// One alter at a time (`ctx.wait`): each starts from the file the previous one wrote.
    fn handle(&mut self, msg: AlterTopicConfigs, ctx: &mut Self::Context) {
        let id = match self.topics.get(&msg.name) {
            Some(h) => Some(h.meta.id),
            None => self.load_from_disk(&msg.name).map(|h| h.meta.id),
        };
        let Some(id) = id else {
            let _ = msg.reply.send(Err(unknown(&msg.name)));
            return;
        };
        let (data_dir, fence) = (self.settings.broker.data_dir.clone(), self.self_fence());
        let (name, change, validate_only) = (msg.name.clone(), msg.change, msg.validate_only);
        let work =
            tokio::task::spawn_blocking(move || alter_on_disk(&data_dir, &name, id, &change, validate_only, &fence));
        let (name, reply) = (msg.name, msg.reply);
        ctx.wait(work.into_actor(self).map(move |joined, act, _| {
            let result = joined.unwrap_or_else(|e| Err((ResponseError::UnknownServerError.code(), e.to_string())));
            let result = result.map(|written| {
                if let Some(configs) = written {
                    act.apply_configs(&name, configs);
                }
            });
            let _ = reply.send(result);
        }));
    }
}
