//! DeleteRecords (key 21, KIP-107): moves each partition's log start forward (kafka-delete-records,
//! AdminClient.deleteRecords). Answered per partition as Apache Kafka's leader does
//! (KafkaApis.handleDeleteRecordsRequest, ReplicaManager.deleteRecordsOnLocalLog): an unknown
//! topic or partition is UNKNOWN_TOPIC_OR_PARTITION (Kafka's internal topics
//! INVALID_TOPIC_EXCEPTION), a partition led elsewhere (or by nobody)
//! NOT_LEADER_OR_FOLLOWER, then the partition's own checks. `timeout_ms` bounds Kafka's wait for
//! followers to move their log start too; a kaas partition has one copy on the shared disk, so,
//! as a Kafka partition without followers, it is answered once the leader's new start is durable.

use std::rc::Rc;

use kafka_protocol::messages::delete_records_response::{DeleteRecordsPartitionResult, DeleteRecordsTopicResult};
use kafka_protocol::messages::{DeleteRecordsRequest, DeleteRecordsResponse};
use tokio::sync::oneshot;

use crate::actors::messages::{DeleteRecordsAnswer, DeleteRecordsBefore};
use crate::actors::topics::TopicHandle;
use crate::error_code::ResponseError;
use crate::protocol::Session;
use crate::store::auth::acl;
use crate::store::partition::{check_cleanup_policy, check_not_internal};

pub async fn handle(s: Rc<Session>, _version: i16, req: DeleteRecordsRequest) -> DeleteRecordsResponse {
    let mut resp = DeleteRecordsResponse::default();
    for t in req.topics {
        let name = t.name.0.to_string();
        let handle = if s.authorized(acl::OP_DELETE, acl::RESOURCE_TOPIC, &name) {
            s.topic(&name, false).await
        } else {
            Err(ResponseError::TopicAuthorizationFailed.code())
        };
        let mut out = DeleteRecordsTopicResult::default();
        out.name = t.name;
        for p in t.partitions {
            let answer = delete_one(&s, &name, &handle, p.partition_index, p.offset).await;
            let mut r = DeleteRecordsPartitionResult::default();
            r.partition_index = p.partition_index;
            r.error_code = answer.error_code;
            r.low_watermark = answer.low_watermark;
            out.partitions.push(r);
        }
        resp.topics.push(out);
    }
    resp
}

fn failed(e: ResponseError) -> DeleteRecordsAnswer {
    DeleteRecordsAnswer { error_code: e.code(), low_watermark: -1 }
}

async fn delete_one(
    s: &Session,
    name: &str,
    handle: &Result<TopicHandle, i16>,
    partition: i32,
    offset: i64,
) -> DeleteRecordsAnswer {
    // Kafka's internal topics always exist there, and are refused before anything else.
    if let Err(e) = check_not_internal(name) {
        return failed(e);
    }
    let leader = match handle.as_ref().map_err(|c| *c).and_then(|h| s.leader(h, partition).map(|l| (h, l))) {
        Ok(found) => found,
        // Kafka's leader answers a partition it does not lead, led by another broker or by none.
        Err(c) if c == ResponseError::LeaderNotAvailable.code() => return failed(ResponseError::NotLeaderOrFollower),
        Err(code) => return DeleteRecordsAnswer { error_code: code, low_watermark: -1 },
    };
    let (topic, leader) = leader;
    if let Err(e) = check_cleanup_policy(topic.produce_limits().deletes) {
        return failed(e.error());
    }
    let (tx, rx) = oneshot::channel();
    let gone = failed(super::LEADER_GONE);
    match leader.send(DeleteRecordsBefore { offset, reply: tx }).await {
        Ok(()) => rx.await.unwrap_or(gone),
        Err(_) => gone,
    }
}
