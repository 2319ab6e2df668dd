//! DescribeLogDirs (key 35): kaas has one log directory, `<data_dir>/topics`; each broker
//! describes the partitions it leads there (on a shared disk the others' are theirs to report),
//! with their size: the bytes of their batches as each partition's leader counts them (Kafka's
//! `UnifiedLog.size`: not the zeros written ahead of the appends, nor the index and state
//! files). The file system's space, and the size of a partition whose leader does not answer
//! (its directory's files), are read on the blocking pool.

use std::path::PathBuf;
use std::rc::Rc;

use futures::StreamExt;
use kafka_protocol::messages::describe_log_dirs_response::{
    DescribeLogDirsPartition, DescribeLogDirsResult, DescribeLogDirsTopic,
};
use kafka_protocol::messages::{DescribeLogDirsRequest, DescribeLogDirsResponse, TopicName};

use crate::actors::messages::{ListTopics, LogSize};
use crate::error_code::ResponseError;
use crate::protocol::{str_bytes, Session};
use crate::store::auth::acl;
use crate::store::ownership::Owned;
use crate::store::topics::partition_dir;

/// Bytes of the files in one partition directory (0 when it cannot be read).
fn dir_size(dir: &PathBuf) -> i64 {
    let Ok(entries) = std::fs::read_dir(dir) else { return 0 };
    let bytes: u64 = entries.filter_map(|e| e.ok()?.metadata().ok()).filter(|m| m.is_file()).map(|m| m.len()).sum();
    i64::try_from(bytes).unwrap_or(i64::MAX)
}

/// How many leaders one DescribeLogDirs asks for their size at once.
const SIZES_IN_FLIGHT: usize = 256;

/// A partition and its size as its leader counted it (None: no answer).
type Counted = (i32, Option<i64>);

/// The bytes of a partition's batches, as its leader counts them; None when it does not answer.
async fn log_size(leader: &actix::Addr<crate::actors::partition::PartitionLeader>) -> Option<i64> {
    let (reply, rx) = tokio::sync::oneshot::channel();
    leader.send(LogSize { reply }).await.ok()?;
    rx.await.ok().and_then(|n| i64::try_from(n).ok())
}

/// (total, usable) bytes of the file system holding `dir` (-1 each when unknown).
fn space(dir: &std::path::Path) -> (i64, i64) {
    let Ok(st) = crate::sys::statvfs(dir) else { return (-1, -1) };
    let frag = st.f_frsize as u128;
    let clamp = |blocks: u128| i64::try_from(blocks * frag).unwrap_or(i64::MAX);
    (clamp(st.f_blocks as u128), clamp(st.f_bavail as u128))
}

pub async fn handle(s: Rc<Session>, version: i16, req: DescribeLogDirsRequest) -> DescribeLogDirsResponse {
    // DESCRIBE on the cluster, as Kafka checks.
    if !s.authorized_cluster(acl::OP_DESCRIBE) {
        let mut r = DescribeLogDirsResponse::default();
        r.error_code = crate::error_code::ResponseError::ClusterAuthorizationFailed.code();
        return r;
    }
    let data_dir = s.settings.broker.data_dir.clone();
    // The partitions asked about (all when null) that this broker leads.
    let metas = s.directory.topics().send(ListTopics).await.unwrap_or_default();
    let mut hosted: Vec<(String, Vec<i32>)> = Vec::new();
    {
        let table = s.directory.ownership();
        let here = |topic: &str, p: i32| table.is_local(&Owned::Partition { topic: topic.to_string(), partition: p });
        match &req.topics {
            None => {
                for m in &metas {
                    let ps: Vec<i32> = (0..m.partitions).filter(|p| here(&m.name, *p)).collect();
                    if !ps.is_empty() {
                        hosted.push((m.name.clone(), ps));
                    }
                }
            }
            Some(topics) => {
                for t in topics {
                    let Some(m) = metas.iter().find(|m| m.name.as_str() == t.topic.0.as_str()) else { continue };
                    let mut ps: Vec<i32> = t
                        .partitions
                        .iter()
                        .copied()
                        .filter(|p| *p >= 0 && *p < m.partitions && here(&m.name, *p))
                        .collect();
                    ps.sort_unstable();
                    ps.dedup();
                    if !ps.is_empty() {
                        hosted.push((m.name.clone(), ps));
                    }
                }
            }
        }
    }
    let mut counted: Vec<(String, Vec<Counted>)> = Vec::with_capacity(hosted.len());
    for (t, ps) in hosted {
        let handle = s.topic(&t, false).await.ok();
        // The leaders are asked together, at most SIZES_IN_FLIGHT at a time: a broker leading
        // 100,000 partitions answers in a few round trips' time, not 100,000.
        let asks = ps.into_iter().map(|p| {
            let leader = handle.as_ref().and_then(|h| s.leader(h, p).ok());
            async move {
                match leader {
                    Some(l) => (p, log_size(&l).await),
                    None => (p, None),
                }
            }
        });
        let sizes: Vec<Counted> = futures::stream::iter(asks).buffered(SIZES_IN_FLIGHT).collect().await;
        counted.push((t, sizes));
    }
    let log_dir = data_dir.join("topics");
    let measured = tokio::task::spawn_blocking(move || {
        let topics: Vec<(String, Vec<(i32, i64)>)> = counted
            .into_iter()
            .map(|(t, ps)| {
                let size = |p, n: Option<i64>| n.unwrap_or_else(|| dir_size(&partition_dir(&data_dir, &t, p)));
                let sizes = ps.into_iter().map(|(p, n)| (p, size(p, n))).collect();
                (t, sizes)
            })
            .collect();
        (topics, space(&log_dir), log_dir)
    })
    .await;
    let mut resp = DescribeLogDirsResponse::default();
    let Ok((topics, (total, usable), log_dir)) = measured else {
        resp.error_code = ResponseError::UnknownServerError.code();
        return resp;
    };
    let mut dir = DescribeLogDirsResult::default();
    dir.log_dir = str_bytes(&log_dir.to_string_lossy());
    if version >= 4 {
        dir.total_bytes = total;
        dir.usable_bytes = usable;
    }
    dir.topics = topics
        .into_iter()
        .map(|(name, sizes)| {
            let mut t = DescribeLogDirsTopic::default();
            t.name = TopicName(str_bytes(&name));
            t.partitions = sizes
                .into_iter()
                .map(|(p, size)| {
                    let mut dp = DescribeLogDirsPartition::default();
                    dp.partition_index = p;
                    dp.partition_size = size;
                    dp
                })
                .collect();
            t
        })
        .collect();
    resp.results = vec![dir];
    resp
}
