//! Opening a partition under a leader epoch, and taking partitions over from a broker that did
//! not hand them over (store::cluster::fence, store::cluster::seal).

use std::collections::HashMap;

use super::{Acquired, TopicRegistry};
use crate::store::clock::now_ms;
use crate::store::cluster::fence;
use crate::store::leases;
use crate::store::log::{LogConfig, LogError};
use crate::store::partition::Partition;
use crate::store::topics;

/// Opens (recovers) partition `p`'s log under leader epoch `leader_epoch`.
pub(super) fn open_log(
    data_dir: &std::path::Path,
    topic: &str,
    p: i32,
    log_config: &LogConfig,
    leader_epoch: i32,
) -> Result<Partition, LogError> {
    let dir = topics::partition_dir(data_dir, topic, p);
    let (partition, info) = Partition::open_at(dir, log_config.clone(), now_ms(), leader_epoch)?;
    match info.took_over_from {
        Some(previous) => tracing::info!(
            topic,
            partition = p,
            previous,
            epoch = leader_epoch,
            unread_bytes = info.truncated_bytes,
            end = partition.log_end_offset(),
            "took the partition over: the predecessor's files are sealed where their valid batches end"
        ),
        None if info.truncated_bytes > 0 => {
            tracing::warn!(topic, partition = p, bytes = info.truncated_bytes, "recovery truncated a torn log tail")
        }
        None => {}
    }
    Ok(partition)
}

impl TopicRegistry {
    /// Fences every broker that held one of `acquired` and did not hand it over (it died, or
    /// it was cut off from the disk and may still run) before anything of those partitions is
    /// read: from then on it acknowledges nothing (store::cluster::fence). A partition whose
    /// predecessor cannot be fenced is let go again.
    pub(super) fn fence_predecessors(&self, acquired: Vec<Acquired>) -> Vec<Acquired> {
        let data_dir = &self.settings.data_dir;
        let mut fenced: HashMap<i32, bool> = HashMap::new();
        acquired
            .into_iter()
            .filter(|a| {
                let Some(prev) = a.lease.unreleased_predecessor else { return true };
                *fenced.entry(prev.node_id).or_insert_with(|| {
                    let incarnation = leases::broker_incarnation(data_dir, prev.node_id);
                    match fence::fence_broker(data_dir, prev.node_id, incarnation) {
                        Ok(()) => {
                            tracing::warn!(
                                node = prev.node_id,
                                incarnation,
                                "fenced a broker that held partitions without handing them over"
                            );
                            true
                        }
                        Err(e) => {
                            tracing::error!(
                                node = prev.node_id,
                                "cannot fence the previous leader, not taking its partitions: {e}"
                            );
                            false
                        }
                    }
                })
            })
            .collect()
    }
}
