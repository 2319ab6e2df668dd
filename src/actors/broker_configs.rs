//! Dynamic broker configs (store::configs::dynamic) on the TopicRegistry: a change is checked
//! and written to the shared disk on the blocking pool (store::configs::broker_store), then the
//! topic defaults it gives this broker reach every topic at once: Produce's limits and the
//! leaders' log settings, as a topic's own change does (actors::topic_configs). Peers read the
//! file at their next membership tick (`refresh_topics` calls `reload_dynamic`).

use actix::{ActorFutureExt, AsyncContext, Handler, Message, WrapFuture};

use super::messages::{Reply, SetLogConfig};
use super::topics::{effective, TopicRegistry};
use crate::error_code::ResponseError;
use crate::store::configs::broker_store::{self, Failure};
use crate::store::configs::dynamic::{self, DynamicConfigs};
use crate::store::configs::topic::{self as topic_config, alter::AlterOp};

/// Changes the dynamic configs of this broker (`node` Some) or the cluster default (None).
#[derive(Message)]
#[rtype(result = "()")]
pub struct AlterBrokerConfigs {
    pub node: Option<i32>,
    pub ops: Vec<AlterOp>,
    /// AlterConfigs: the ops are the resource's whole new set.
    pub replace: bool,
    pub validate_only: bool,
    pub reply: Reply<Result<(), Failure>>,
}

impl TopicRegistry {
    /// Reads the dynamic broker configs from the shared disk and applies them (at start, and at
    /// each membership tick for a peer's change). An unreadable file keeps what was applied.
    pub(super) fn reload_dynamic(&mut self) {
        match broker_store::load(&self.settings.broker.data_dir) {
            Ok(all) => self.apply_dynamic(all),
            Err(e) => tracing::warn!("reading the dynamic broker configs: {e}"),
        }
    }

    /// The dynamic broker configs are now `all`: where the topic defaults they give this broker
    /// changed, every topic's Produce limits and its leaders' log settings follow.
    pub(super) fn apply_dynamic(&mut self, all: DynamicConfigs) {
        let layer = all.topic_layer(self.settings.broker.node_id);
        if layer == self.topic_layer {
            return;
        }
        tracing::info!(defaults = ?layer, "topic defaults from the dynamic broker configs changed");
        self.topic_layer = layer;
        let defaults = self.settings.topic_defaults();
        let handles: Vec<_> = self.topics.values().cloned().collect();
        for h in handles {
            let configs = effective(&self.topic_layer, &h.meta.configs);
            h.set_produce_limits(topic_config::produce_limits(&defaults, &configs));
            let config = self.log_config(&h.meta);
            for leader in h.leaders() {
                leader.do_send(SetLogConfig { config: config.clone() });
            }
        }
    }
}

impl Handler<AlterBrokerConfigs> for TopicRegistry {
    type Result = ();

    /// One change at a time (`ctx.wait`): each starts from the file the previous one wrote.
    fn handle(&mut self, msg: AlterBrokerConfigs, ctx: &mut Self::Context) {
        let (data_dir, fence) = (self.settings.broker.data_dir.clone(), self.self_fence());
        let AlterBrokerConfigs { node, ops, replace, validate_only, reply } = msg;
        let work = tokio::task::spawn_blocking(move || {
            broker_store::alter(&data_dir, node, validate_only, &fence, |current| {
                dynamic::alter(current, &ops, replace, node.is_some())
            })
        });
        ctx.wait(work.into_actor(self).map(move |joined, act, _| {
            let result = joined.unwrap_or_else(|e| Err((ResponseError::UnknownServerError.code(), e.to_string())));
            let result = result.map(|all| {
                if !validate_only {
                    act.apply_dynamic(all);
                }
            });
            let _ = reply.send(result);
        }));
    }
}
