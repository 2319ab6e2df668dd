//! OffsetForLeaderEpoch (key 23): kaas partitions have one leader epoch, 0, whose end is the
//! high watermark; consumers use this to validate their position after a metadata change.

use std::rc::Rc;

use kafka_protocol::messages::offset_for_leader_epoch_response::{EpochEndOffset, OffsetForLeaderTopicResult};
use kafka_protocol::messages::{OffsetForLeaderEpochRequest, OffsetForLeaderEpochResponse};
use tokio::sync::oneshot;

use crate::actors::messages::ListOffset;
use crate::error_code::ResponseError;
use crate::protocol::Session;

pub async fn handle(s: Rc<Session>, _version: i16, req: OffsetForLeaderEpochRequest) -> OffsetForLeaderEpochResponse {
    let mut resp = OffsetForLeaderEpochResponse::default();
    for t in req.topics {
        let handle = s.topic(&t.topic.0, false).await;
        let mut out = OffsetForLeaderTopicResult::default();
        out.topic = t.topic;
        for p in t.partitions {
            let mut e = EpochEndOffset::default();
            e.partition = p.partition;
            e.leader_epoch = -1;
            e.end_offset = -1;
            let leader = handle.as_ref().map_err(|c| *c).and_then(|h| s.leader(h, p.partition));
            match leader {
                Err(code) => e.error_code = code,
                Ok(_) if p.current_leader_epoch > 0 => e.error_code = ResponseError::UnknownLeaderEpoch.code(),
                Ok(_) if p.current_leader_epoch < -1 => e.error_code = ResponseError::FencedLeaderEpoch.code(),
                Ok(_) if p.leader_epoch > 0 => {}
                Ok(leader) => {
                    let (tx, rx) = oneshot::channel();
                    if leader.send(ListOffset { timestamp: -1, isolation_level: 0, reply: tx }).await.is_ok() {
                        if let Ok(a) = rx.await {
                            e.leader_epoch = 0;
                            e.end_offset = a.offset;
                        }
                    }
                }
            }
            out.partitions.push(e);
        }
        resp.topics.push(out);
    }
    resp
}
