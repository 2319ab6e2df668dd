//! TxnOffsetCommit (key 28): offsets that become visible with the transaction's COMMIT marker
//! (eos-rules 56-59). v0-4 need the offsets partition added by AddOffsetsToTxn; v5 (TV2) adds it.

use std::collections::BTreeSet;
use std::rc::Rc;

use kafka_protocol::messages::txn_offset_commit_response::{
    TxnOffsetCommitResponsePartition, TxnOffsetCommitResponseTopic,
};
use kafka_protocol::messages::{TxnOffsetCommitRequest, TxnOffsetCommitResponse};

use super::offset_commit::{left_out, send, unreadable_topics, Commit};
use crate::actors::messages::{BeginTxnOffsetCommit, OffsetCommit};
use crate::error_code::ResponseError;
use crate::protocol::Session;
use crate::store::auth::acl;
use crate::store::coordinator_key::offsets_partition;
use crate::store::group::{txn_commit_member, validate_group_id};
use crate::store::txn::{txn_offset_commit_error, CONSUMER_OFFSETS_TOPIC};
use tokio::sync::oneshot;

/// eos-rules 58: is the group's offsets partition part of the transaction? (error code if not)
async fn check_membership(s: &Session, version: i16, req: &TxnOffsetCommitRequest) -> i16 {
    // eos-rules 18: the group coordinator checks the producer's epoch on the offsets partition
    // first (Kafka's verification start on that partition), and says whether its transaction
    // is already open there, in which case the transaction coordinator is not asked.
    match begin(s, req).await {
        Err(code) => return code,
        Ok(true) => return 0,
        Ok(false) => {}
    }
    let id = req.transactional_id.0.to_string();
    let partitions = BTreeSet::from([(CONSUMER_OFFSETS_TOPIC.to_string(), offsets_partition(&req.group_id.0))]);
    // v5+ (TV2) adds the offsets partition; older versions verify it (eos-rules 58).
    let result = s.add_to_transaction(&id, req.producer_id.0, req.producer_epoch, partitions, version < 5).await;
    result.err().map_or(0, |e| txn_offset_commit_error(e, version))
}

async fn begin(s: &Session, req: &TxnOffsetCommitRequest) -> Result<bool, i16> {
    let groups = s.group_coordinator(&req.group_id.0).map_err(|e| e.code())?;
    let (tx, rx) = oneshot::channel();
    let msg = BeginTxnOffsetCommit {
        group_id: req.group_id.0.to_string(),
        producer_id: req.producer_id.0,
        producer_epoch: req.producer_epoch,
        reply: tx,
    };
    groups.send(msg).await.map_err(|_| ResponseError::CoordinatorNotAvailable.code())?;
    match rx.await {
        Ok(answer) => answer.map_err(|e| e.code()),
        Err(_) => Err(ResponseError::CoordinatorNotAvailable.code()),
    }
}

pub async fn handle(s: Rc<Session>, version: i16, req: TxnOffsetCommitRequest) -> TxnOffsetCommitResponse {
    // WRITE on the transactional id, READ on the group, then READ on each topic, as Kafka
    // checks; a refused id or group answers every partition.
    let whole = if !s.authorized(acl::OP_WRITE, acl::RESOURCE_TRANSACTIONAL_ID, &req.transactional_id.0) {
        Some(ResponseError::TransactionalIdAuthorizationFailed.code())
    } else if !s.authorized(acl::OP_READ, acl::RESOURCE_GROUP, &req.group_id.0) {
        Some(ResponseError::GroupAuthorizationFailed.code())
    } else {
        None
    };
    if let Some(code) = whole {
        return answer(&req, |_, _| code);
    }
    let unauthorized = unreadable_topics(&s, req.topics.iter().map(|t| t.name.0.as_str()), false);
    // eos-rules 56: partitions the cluster does not have are answered first, and alone; a topic
    // the client may not read is answered TOPIC_AUTHORIZATION_FAILED and left out too.
    let wanted: Vec<(String, i32)> = req
        .topics
        .iter()
        .flat_map(|t| t.partitions.iter().map(move |p| (t.name.0.to_string(), p.partition_index)))
        .collect();
    let unknown = left_out(&s, &wanted, &unauthorized).await;
    let all_unknown = req
        .topics
        .iter()
        .all(|t| t.partitions.iter().all(|p| unknown.contains(&(t.name.0.to_string(), p.partition_index))));
    // An empty group id is INVALID_GROUP_ID on every partition, before the membership check.
    let mut code = match validate_group_id(&req.group_id.0) {
        _ if all_unknown => 0,
        Ok(()) => check_membership(&s, version, &req).await,
        Err(e) => e.code(),
    };
    if code == 0 && !all_unknown {
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
        let (generation_id, member_id, instance) = txn_commit_member(
            version,
            req.generation_id,
            &req.member_id,
            req.group_instance_id.as_ref().map(|i| i.as_str()),
        );
        let commit = Commit {
            group_id: req.group_id.0.to_string(),
            generation_id,
            member_id,
            group_instance_id: instance,
            offsets,
            txn: Some((req.producer_id.0, req.producer_epoch)),
        };
        code = send(&s, commit).await;
    }
    answer(&req, |topic, p| {
        if unauthorized.contains(topic) {
            ResponseError::TopicAuthorizationFailed.code()
        } else if unknown.contains(&(topic.to_string(), p)) {
            ResponseError::UnknownTopicOrPartition.code()
        } else {
            code
        }
    })
}

/// The answer with each partition's code from `code_of(topic, partition)`.
fn answer(req: &TxnOffsetCommitRequest, code_of: impl Fn(&str, i32) -> i16) -> TxnOffsetCommitResponse {
    let mut r = TxnOffsetCommitResponse::default();
    r.topics = req
        .topics
        .iter()
        .map(|t| {
            let mut rt = TxnOffsetCommitResponseTopic::default();
            rt.name = t.name.clone();
            rt.partitions = t
                .partitions
                .iter()
                .map(|p| {
                    let mut rp = TxnOffsetCommitResponsePartition::default();
                    rp.partition_index = p.partition_index;
                    rp.error_code = code_of(t.name.0.as_str(), p.partition_index);
                    rp
                })
                .collect();
            rt
        })
        .collect();
    r
}
