//! Opening a partition under a leader epoch, and taking partitions over from a broker that did
//! not hand them over (store::cluster::fence, store::cluster::seal).

use super::{Acquired, TopicRegistry};
use crate::store::clock::now_ms;
use crate::store::log::{LogConfig, LogError};
use crate::store::partition::Partition;
use crate::store::topics;

/// Opens (recovers) partition `p`'s log under leader epoch `leader_epoch`.
pub(super) fn open_log(
    data_dir: &std::path::Path,
    meta: &topics::TopicMeta,
    p: i32,
    log_config: &LogConfig,
    leader_epoch: i32,
) -> Result<Partition, LogError> {
    let topic = meta.name.as_str();
    let dir = topics::partition_dir(data_dir, topic, p);
    // A directory of an earlier topic of this name is not this one's (its partition.metadata
    // names another topic id: store::topics::adopt_partition_dir).
    let still_current = || {
        let on_disk = topics::load_one(data_dir, topic).map_err(std::io::Error::other)?;
        Ok(on_disk.is_some_and(|m| m.id == meta.id))
    };
    if topics::adopt_partition_dir(&dir, meta.id, still_current)? {
        tracing::info!(topic, partition = p, "replaced the directory an earlier topic of this name left");
    }
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
    /// Logs, once per broker, that `acquired` were taken from a broker that did not hand them
    /// over and was fenced first (store::leases::try_acquire).
    pub(super) fn log_fenced(acquired: &[Acquired]) {
        let mut nodes: Vec<i32> =
            acquired.iter().filter_map(|a| a.lease.unreleased_predecessor).map(|r| r.node_id).collect();
        nodes.sort_unstable();
        nodes.dedup();
        for node in nodes {
            let partitions =
                acquired.iter().filter(|a| a.lease.unreleased_predecessor.is_some_and(|r| r.node_id == node)).count();
            tracing::warn!(
                node,
                partitions,
                "took partitions from a broker that did not hand them over; it was fenced first"
            );
        }
    }
}
