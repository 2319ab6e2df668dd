//! DeleteTopics in the TopicRegistry: the topic leaves the registry at once (no new leader,
//! no lookup finds it), its leaders stop and close their files, then the topic file and the
//! partition directories this broker should remove go, on the blocking pool.

use std::sync::PoisonError;

use actix::{ActorFutureExt, Handler, ResponseActFuture, WrapFuture};

use super::{stop_all, TopicRegistry};
use crate::actors::messages::DeleteTopic;
use crate::error_code::ResponseError;
use crate::store::leases;
use crate::store::ownership::Owned;
use crate::store::topics::{self, TopicMeta};

impl Handler<DeleteTopic> for TopicRegistry {
    type Result = ResponseActFuture<Self, Result<TopicMeta, ResponseError>>;

    fn handle(&mut self, msg: DeleteTopic, _: &mut Self::Context) -> Self::Result {
        let name = match (&msg.name, msg.id) {
            (Some(n), _) => Some(n.clone()),
            (None, Some(id)) => self.topics.values().find(|h| h.meta.id == id).map(|h| h.meta.name.clone()),
            (None, None) => None,
        };
        let missing =
            if msg.name.is_some() { ResponseError::UnknownTopicOrPartition } else { ResponseError::UnknownTopicId };
        let Some(handle) = name.and_then(|n| self.topics.remove(&n)) else {
            return Box::pin(async move { Err(missing) }.into_actor(self));
        };
        let data_dir = self.settings.broker.data_dir.clone();
        self.deleting.insert(handle.meta.name.clone());
        let stops = handle.leaders();
        // The directories this broker removes once its leaders stopped: the partitions led here
        // and those no live peer leads (a peer removes its own when it sees the topic gone).
        let me = self.local_node();
        let led: Vec<i32> = {
            let table = self.ownership.read().unwrap_or_else(PoisonError::into_inner);
            (0..handle.meta.partitions)
                .filter(|p| {
                    let what = Owned::Partition { topic: handle.meta.name.clone(), partition: *p };
                    table.lease(&what).is_none_or(|l| l.node_id == me)
                })
                .collect()
        };
        for p in 0..handle.meta.partitions {
            self.held.remove(&(handle.meta.name.clone(), p));
            self.table_mut().revoke(&Owned::Partition { topic: handle.meta.name.clone(), partition: p });
        }
        for cell in handle.partitions.iter() {
            cell.set(None);
        }
        let meta = handle.meta.clone();
        // The leaders stop first (their files close); then the files are removed on the
        // blocking pool: unlinking a large log frees its blocks synchronously (seconds with
        // discard on some disks), which must not hold up this registry's thread.
        let removal = async move {
            stop_all(stops).await;
            let remove = move || -> Result<(), String> {
                if let Err(e) = leases::remove_partition_leases(&data_dir, &meta.name, meta.id, &led) {
                    tracing::warn!(topic = %meta.name, "removing the lease files of a deleted topic: {e}");
                }
                topics::remove(&data_dir, &meta, &led).map_err(|e| e.to_string())
            };
            tokio::task::spawn_blocking(remove).await.unwrap_or_else(|e| Err(e.to_string()))
        };
        Box::pin(removal.into_actor(self).map(move |removed, act, _| {
            act.deleting.remove(&handle.meta.name);
            act.metrics.remove_topic(&handle.meta.name);
            removed.map_err(|e| {
                tracing::error!(topic = %handle.meta.name, "delete: {e}");
                ResponseError::UnknownServerError
            })?;
            tracing::info!(topic = %handle.meta.name, "deleted topic");
            Ok(handle.meta)
        }))
    }
}
