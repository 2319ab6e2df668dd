//! ListOffsets (key 2): earliest, latest (LSO for read_committed), max timestamp, by timestamp.

use std::collections::HashSet;
use std::rc::Rc;

use kafka_protocol::messages::list_offsets_response::{ListOffsetsPartitionResponse, ListOffsetsTopicResponse};
use kafka_protocol::messages::{ListOffsetsRequest, ListOffsetsResponse};
use tokio::sync::oneshot;

use crate::actors::messages::{ListOffset, OffsetAnswer};
use crate::error_code::ResponseError;
use crate::protocol::Session;
use crate::store::auth::acl;
use crate::store::ownership::{check_leader_epoch, Owned};

pub async fn handle(s: Rc<Session>, version: i16, req: ListOffsetsRequest) -> ListOffsetsResponse {
    let mut resp = ListOffsetsResponse::default();
    let duplicates = duplicate_partitions(&req);
    let mut refused = HashSet::new();
    for t in req.topics {
        let name = t.name.0.to_string();
        let authorized = s.authorized(acl::OP_DESCRIBE, acl::RESOURCE_TOPIC, &name);
        let handle = if !authorized {
            Err(ResponseError::TopicAuthorizationFailed.code())
        } else if s.internal_partition(&name, 0).is_some() {
            Err(ResponseError::UnknownTopicOrPartition.code())
        } else {
            s.topic(&name, false).await
        };
        let mut out = ListOffsetsTopicResponse::default();
        out.name = t.name;
        for p in t.partitions {
            // A partition named twice is answered once, INVALID_REQUEST (Kafka's
            // ReplicaManager.fetchOffset with ListOffsetsRequest.duplicatePartitions).
            let key = || (name.clone(), p.partition_index);
            let duplicate = authorized && !duplicates.is_empty() && duplicates.contains(&key());
            if duplicate && !refused.insert(key()) {
                continue;
            }
            let missing =
                OffsetAnswer { error_code: ResponseError::UnknownTopicOrPartition.code(), offset: -1, timestamp: -1 };
            let mut answer = missing;
            // The partition's leader epoch is its lease epoch; a client's stale or future one is
            // refused as Kafka's leader does (v4+ carry it).
            let epoch = s.directory.lease(&Owned::Partition { topic: name.clone(), partition: p.partition_index });
            let epoch = epoch.map_or(0, |l| l.epoch);
            let leader = handle.as_ref().map_err(|c| *c).and_then(|h| s.leader(h, p.partition_index)).and_then(|l| {
                let current = if version >= 4 { p.current_leader_epoch } else { -1 };
                check_leader_epoch(current, epoch).map(|()| l).map_err(|e| e.code())
            });
            if duplicate {
                answer.error_code = ResponseError::InvalidRequest.code();
            } else if let Some(here) = s.internal_partition(&name, p.partition_index) {
                answer = internal_offset(here, p.timestamp);
            } else if let Err(code) = leader {
                answer.error_code = code;
            } else if let Ok(leader) = leader {
                let (tx, rx) = oneshot::channel();
                let msg = ListOffset { timestamp: p.timestamp, isolation_level: req.isolation_level, reply: tx };
                let gone = OffsetAnswer { error_code: super::LEADER_GONE.code(), offset: -1, timestamp: -1 };
                answer = match leader.send(msg).await {
                    Ok(()) => rx.await.unwrap_or(gone),
                    Err(_) => gone,
                };
            }
            let mut r = ListOffsetsPartitionResponse::default();
            r.partition_index = p.partition_index;
            r.error_code = answer.error_code;
            r.offset = answer.offset;
            r.timestamp = answer.timestamp;
            if version >= 4 && answer.offset >= 0 {
                r.leader_epoch = epoch;
            }
            out.partitions.push(r);
        }
        resp.topics.push(out);
    }
    resp
}

/// The (topic, partition) pairs the request names more than once.
fn duplicate_partitions(req: &ListOffsetsRequest) -> HashSet<(String, i32)> {
    let mut seen = HashSet::new();
    let mut duplicates = HashSet::new();
    for t in &req.topics {
        for p in &t.partitions {
            let key = (t.name.0.to_string(), p.partition_index);
            if !seen.insert(key.clone()) {
                duplicates.insert(key);
            }
        }
    }
    duplicates
}

/// ListOffsets of an internal topic's partition (Session::internal_partition): an empty log,
/// whose earliest and latest offsets are 0 and which has no record for a timestamp lookup.
fn internal_offset(here: Result<(), i16>, timestamp: i64) -> OffsetAnswer {
    match here {
        // -1 latest, -2 earliest, -4 earliest-local, -5 earliest-pending-upload.
        Ok(()) if matches!(timestamp, -1 | -2 | -4 | -5) => OffsetAnswer { error_code: 0, offset: 0, timestamp: -1 },
        Ok(()) => OffsetAnswer { error_code: 0, offset: -1, timestamp: -1 },
        Err(code) => OffsetAnswer { error_code: code, offset: -1, timestamp: -1 },
    }
}
