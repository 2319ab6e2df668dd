//! OffsetFetch (key 9): v1-7 one group, v8+ several; require_stable (v7+) answers
//! UNSTABLE_OFFSET_COMMIT for partitions with pending transactional offsets (eos-rules 59).

use std::rc::Rc;

use kafka_protocol::messages::offset_fetch_response::{
    OffsetFetchResponseGroup, OffsetFetchResponsePartition, OffsetFetchResponsePartitions, OffsetFetchResponseTopic,
    OffsetFetchResponseTopics,
};
use kafka_protocol::messages::{OffsetFetchRequest, OffsetFetchResponse, TopicName};
use tokio::sync::oneshot;

use crate::actors::messages::{FetchOffsets, FetchedOffset, GroupError};
use crate::protocol::{str_bytes, Session};
use crate::store::auth::acl;
use crate::store::group::error_code;

async fn fetch(
    s: &Session,
    group_id: &str,
    partitions: Option<Vec<(String, i32)>>,
    require_stable: bool,
    member: Option<(String, i32)>,
) -> Result<Vec<FetchedOffset>, GroupError> {
    // DESCRIBE on the group; then only the topics the client may describe: one it named is
    // TOPIC_AUTHORIZATION_FAILED, the others of an all-topics fetch are left out (as Kafka).
    if !s.authorized(acl::OP_DESCRIBE, acl::RESOURCE_GROUP, group_id) {
        return Err(GroupError::GroupAuthorizationFailed);
    }
    let named = partitions.is_some();
    let (tx, rx) = oneshot::channel();
    let msg = FetchOffsets { group_id: group_id.to_string(), partitions, require_stable, member, reply: tx };
    s.group_coordinator(group_id)?.send(msg).await.map_err(|_| GroupError::CoordinatorNotAvailable)?;
    let offsets = rx.await.map_err(|_| GroupError::CoordinatorNotAvailable)??;
    Ok(offsets
        .into_iter()
        .filter_map(|o| match s.authorized(acl::OP_DESCRIBE, acl::RESOURCE_TOPIC, &o.topic) {
            true => Some(o),
            false if named => Some(FetchedOffset {
                offset: -1,
                leader_epoch: -1,
                metadata: String::new(),
                error: Some(GroupError::TopicAuthorizationFailed),
                ..o
            }),
            false => None,
        })
        .collect())
}

/// Groups fetched offsets by topic, keeping the order they came in.
fn by_topic(offsets: Vec<FetchedOffset>) -> Vec<(String, Vec<FetchedOffset>)> {
    let mut out: Vec<(String, Vec<FetchedOffset>)> = Vec::new();
    for o in offsets {
        match out.iter_mut().find(|(t, _)| *t == o.topic) {
            Some((_, v)) => v.push(o),
            None => out.push((o.topic.clone(), vec![o])),
        }
    }
    out
}

pub async fn handle(s: Rc<Session>, version: i16, req: OffsetFetchRequest) -> OffsetFetchResponse {
    let mut r = OffsetFetchResponse::default();
    let require_stable = version >= 7 && req.require_stable;
    if version < 8 {
        let partitions = req.topics.as_ref().map(|ts| {
            ts.iter().flat_map(|t| t.partition_indexes.iter().map(move |p| (t.name.0.to_string(), *p))).collect()
        });
        match fetch(&s, &req.group_id.0, partitions, require_stable, None).await {
            Ok(offsets) => {
                r.topics = by_topic(offsets)
                    .into_iter()
                    .map(|(topic, ps)| {
                        let mut t = OffsetFetchResponseTopic::default();
                        t.name = TopicName(str_bytes(&topic));
                        t.partitions = ps
                            .into_iter()
                            .map(|o| {
                                let mut p = OffsetFetchResponsePartition::default();
                                p.partition_index = o.partition;
                                p.committed_offset = o.offset;
                                if version >= 5 {
                                    p.committed_leader_epoch = o.leader_epoch;
                                }
                                p.metadata = Some(str_bytes(&o.metadata));
                                p.error_code = error_code(o.error);
                                p
                            })
                            .collect();
                        t
                    })
                    .collect();
            }
            Err(e) => {
                if version >= 2 {
                    r.error_code = e.code();
                }
            }
        }
        return r;
    }
    for g in &req.groups {
        let partitions = g.topics.as_ref().map(|ts| {
            ts.iter().flat_map(|t| t.partition_indexes.iter().map(move |p| (t.name.0.to_string(), *p))).collect()
        });
        let mut rg = OffsetFetchResponseGroup::default();
        rg.group_id = g.group_id.clone();
        // v9: a consumer group's member says who it is (checked against its member epoch).
        let member =
            (version >= 9).then(|| (g.member_id.as_ref().map_or(String::new(), |m| m.to_string()), g.member_epoch));
        match fetch(&s, &g.group_id.0, partitions, require_stable, member).await {
            Ok(offsets) => {
                rg.topics = by_topic(offsets)
                    .into_iter()
                    .map(|(topic, ps)| {
                        let mut t = OffsetFetchResponseTopics::default();
                        t.name = TopicName(str_bytes(&topic));
                        t.partitions = ps
                            .into_iter()
                            .map(|o| {
                                let mut p = OffsetFetchResponsePartitions::default();
                                p.partition_index = o.partition;
                                p.committed_offset = o.offset;
                                p.committed_leader_epoch = o.leader_epoch;
                                p.metadata = Some(str_bytes(&o.metadata));
                                p.error_code = error_code(o.error);
                                p
                            })
                            .collect();
                        t
                    })
                    .collect();
            }
            Err(e) => rg.error_code = e.code(),
        }
        r.groups.push(rg);
    }
    r
}
