//! OffsetForLeaderEpoch (key 23): consumers validate their position after a metadata change
//! (a leader moved). A partition's leader epoch is its lease epoch (bumped when it changes hands
//! in a cluster; 0 on a single broker). A takeover never truncates what a consumer could read
//! (only fsynced data is below the high watermark), so every epoch up to the current one ends at
//! the log end: no consumer ever sees a truncation.

use std::rc::Rc;

use kafka_protocol::messages::offset_for_leader_epoch_response::{EpochEndOffset, OffsetForLeaderTopicResult};
use kafka_protocol::messages::{OffsetForLeaderEpochRequest, OffsetForLeaderEpochResponse};
use tokio::sync::oneshot;

use crate::actors::messages::ListOffset;
use crate::error_code::ResponseError;
use crate::protocol::Session;
use crate::store::auth::acl;
use crate::store::ownership::{check_leader_epoch, Owned};

pub async fn handle(s: Rc<Session>, _version: i16, req: OffsetForLeaderEpochRequest) -> OffsetForLeaderEpochResponse {
    let mut resp = OffsetForLeaderEpochResponse::default();
    for t in req.topics {
        let handle = if s.authorized(acl::OP_DESCRIBE, acl::RESOURCE_TOPIC, &t.topic.0) {
            s.topic(&t.topic.0, false).await
        } else {
            Err(ResponseError::TopicAuthorizationFailed.code())
        };
        let mut out = OffsetForLeaderTopicResult::default();
        out.topic = t.topic;
        for p in t.partitions {
            let mut e = EpochEndOffset::default();
            e.partition = p.partition;
            e.leader_epoch = -1;
            e.end_offset = -1;
            let leader = handle.as_ref().map_err(|c| *c).and_then(|h| s.leader(h, p.partition));
            let epoch = s.directory.lease(&Owned::Partition { topic: out.topic.0.to_string(), partition: p.partition });
            let epoch = epoch.map_or(0, |l| l.epoch);
            match leader {
                Err(code) => e.error_code = code,
                Ok(_) if p.current_leader_epoch < -1 => e.error_code = ResponseError::FencedLeaderEpoch.code(),
                Ok(_) if check_leader_epoch(p.current_leader_epoch, epoch).is_err() => {
                    e.error_code = check_leader_epoch(p.current_leader_epoch, epoch).err().map_or(0, |x| x.code());
                }
                // An epoch this leader never had: undefined, as Kafka answers.
                Ok(_) if p.leader_epoch > epoch => {}
                Ok(leader) => {
                    // A leader gone meanwhile is never "no error" with an undefined epoch and
                    // offset: the Java consumer takes that for a truncation and resets its
                    // position (SubscriptionState.maybeCompleteValidation).
                    let (tx, rx) = oneshot::channel();
                    let answered = match leader.send(ListOffset { timestamp: -1, isolation_level: 0, reply: tx }).await
                    {
                        Ok(()) => rx.await.ok(),
                        Err(_) => None,
                    };
                    match answered {
                        Some(a) => {
                            e.leader_epoch = p.leader_epoch.max(0);
                            e.end_offset = a.offset;
                        }
                        None => e.error_code = super::LEADER_GONE.code(),
                    }
                }
            }
            out.partitions.push(e);
        }
        resp.topics.push(out);
    }
    resp
}
