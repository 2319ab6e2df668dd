//! OffsetCommit (key 8): answered once the offsets are flushed.

use std::collections::{BTreeSet, HashMap, HashSet};
use std::rc::Rc;

use kafka_protocol::messages::offset_commit_response::{OffsetCommitResponsePartition, OffsetCommitResponseTopic};
use kafka_protocol::messages::{OffsetCommitRequest, OffsetCommitResponse};
use tokio::sync::oneshot;

use crate::actors::messages::{CommitOffsets, OffsetCommit};
use crate::error_code::ResponseError;
use crate::protocol::Session;
use crate::store::auth::acl;
use crate::store::group::{offsets, validate_group_id};

/// A commit for the group coordinator (plain, or transactional with `txn`).
pub struct Commit {
    pub group_id: String,
    pub generation_id: i32,
    pub member_id: String,
    pub group_instance_id: Option<String>,
    pub offsets: Vec<OffsetCommit>,
    pub txn: Option<(i64, i16)>,
}

/// Sends a commit and waits until it is durable; the Kafka error code.
pub async fn send(s: &Session, c: Commit) -> i16 {
    let (tx, rx) = oneshot::channel();
    let msg = CommitOffsets {
        group_id: c.group_id,
        generation_id: c.generation_id,
        member_id: c.member_id,
        group_instance_id: c.group_instance_id,
        offsets: c.offsets,
        txn: c.txn,
        reply: tx,
    };
    let groups = match s.group_coordinator(&msg.group_id) {
        Ok(groups) => groups,
        Err(e) => return e.code(),
    };
    match groups.send(msg).await {
        Ok(()) => match rx.await {
            Ok(Ok(())) => 0,
            Ok(Err(e)) => e.code(),
            Err(_) => ResponseError::CoordinatorNotAvailable.code(),
        },
        Err(_) => ResponseError::CoordinatorNotAvailable.code(),
    }
}

/// The requested partitions this cluster does not have (store::group::offsets::unknown_partitions,
/// eos-rules 56); each distinct topic is looked up once.
/// The topics of `names` the client may not read (all of them when `all_denied`): their
/// partitions are answered TOPIC_AUTHORIZATION_FAILED.
pub fn unreadable_topics<'a>(s: &Session, names: impl Iterator<Item = &'a str>, all_denied: bool) -> BTreeSet<String> {
    names.filter(|t| all_denied || !s.authorized(acl::OP_READ, acl::RESOURCE_TOPIC, t)).map(str::to_string).collect()
}

/// The partitions of `wanted` a commit leaves out: those of `unreadable` topics and those the
/// cluster does not have.
pub async fn left_out(s: &Session, wanted: &[(String, i32)], unreadable: &BTreeSet<String>) -> HashSet<(String, i32)> {
    let readable = wanted.iter().filter(|(t, _)| !unreadable.contains(t)).map(|(t, p)| (t.as_str(), *p));
    let mut out = unknown_partitions(s, readable).await;
    out.extend(wanted.iter().filter(|(t, _)| unreadable.contains(t)).cloned());
    out
}

pub async fn unknown_partitions<'a>(
    s: &Session,
    wanted: impl IntoIterator<Item = (&'a str, i32)> + Clone,
) -> HashSet<(String, i32)> {
    let mut counts: HashMap<&str, i32> = HashMap::new();
    let mut missing: HashSet<&str> = HashSet::new();
    for (topic, _) in wanted.clone() {
        if counts.contains_key(topic) || missing.contains(topic) {
            continue;
        }
        if let Ok(h) = s.topic(topic, false).await {
            counts.insert(topic, h.meta.partitions);
        } else {
            missing.insert(topic);
        }
    }
    offsets::unknown_partitions(wanted, &counts)
}

pub async fn handle(s: Rc<Session>, _version: i16, req: OffsetCommitRequest) -> OffsetCommitResponse {
    // READ on the group (every partition refused otherwise), then READ on each topic.
    let group_denied = !s.authorized(acl::OP_READ, acl::RESOURCE_GROUP, &req.group_id.0);
    let unauthorized = unreadable_topics(&s, req.topics.iter().map(|t| t.name.0.as_str()), group_denied);
    let wanted: Vec<(String, i32)> = req
        .topics
        .iter()
        .flat_map(|t| t.partitions.iter().map(move |p| (t.name.0.to_string(), p.partition_index)))
        .collect();
    let unknown = left_out(&s, &wanted, &unauthorized).await;
    let offsets: Vec<OffsetCommit> = req
        .topics
        .iter()
        .flat_map(|t| {
            t.partitions.iter().map(move |p| OffsetCommit {
                topic: t.name.0.to_string(),
                partition: p.partition_index,
                offset: p.committed_offset,
                leader_epoch: p.committed_leader_epoch,
                metadata: p.committed_metadata.as_ref().map(|m| m.to_string()).unwrap_or_default(),
            })
        })
        .filter(|o| !unknown.contains(&(o.topic.clone(), o.partition)))
        .collect();
    let code = if offsets.is_empty() {
        0
    } else if let Err(e) = validate_group_id(&req.group_id.0) {
        e.code()
    } else {
        let commit = Commit {
            group_id: req.group_id.0.to_string(),
            generation_id: req.generation_id_or_member_epoch,
            member_id: req.member_id.to_string(),
            group_instance_id: req.group_instance_id.as_ref().map(|i| i.to_string()),
            offsets,
            txn: None,
        };
        send(&s, commit).await
    };
    let mut r = OffsetCommitResponse::default();
    r.topics = req
        .topics
        .iter()
        .map(|t| {
            let mut rt = OffsetCommitResponseTopic::default();
            rt.name = t.name.clone();
            rt.partitions = t
                .partitions
                .iter()
                .map(|p| {
                    let mut rp = OffsetCommitResponsePartition::default();
                    rp.partition_index = p.partition_index;
                    rp.error_code = if group_denied {
                        ResponseError::GroupAuthorizationFailed.code()
                    } else if unauthorized.contains(t.name.0.as_str()) {
                        ResponseError::TopicAuthorizationFailed.code()
                    } else if unknown.contains(&(t.name.0.to_string(), p.partition_index)) {
                        ResponseError::UnknownTopicOrPartition.code()
                    } else {
                        code
                    };
                    rp
                })
                .collect();
            rt
        })
        .collect();
    r
}
