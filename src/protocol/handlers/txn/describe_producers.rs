//! DescribeProducers (key 61): the producer state of partitions (kafka-transactions
//! `describe-producers`, and finding hanging transactions).

use std::rc::Rc;

use kafka_protocol::messages::describe_producers_response::{PartitionResponse, ProducerState, TopicResponse};
use kafka_protocol::messages::{DescribeProducersRequest, DescribeProducersResponse, ProducerId};
use tokio::sync::oneshot;

use crate::actors::messages::InspectProducers;
use crate::error_code::ResponseError;
use crate::protocol::Session;
use crate::store::auth::acl;

pub async fn handle(s: Rc<Session>, _version: i16, req: DescribeProducersRequest) -> DescribeProducersResponse {
    let mut r = DescribeProducersResponse::default();
    for t in req.topics {
        let readable = s.authorized(acl::OP_READ, acl::RESOURCE_TOPIC, &t.name.0);
        let handle = if readable { s.topic(&t.name.0, false).await.ok() } else { None };
        let mut out = TopicResponse::default();
        out.name = t.name;
        for p in t.partition_indexes {
            let mut pr = PartitionResponse::default();
            pr.partition_index = p;
            let missing = if readable {
                ResponseError::UnknownTopicOrPartition.code()
            } else {
                ResponseError::TopicAuthorizationFailed.code()
            };
            let leader = handle.as_ref().ok_or(missing).and_then(|h| s.leader(h, p));
            let entries = match leader {
                Ok(l) => {
                    let (tx, rx) = oneshot::channel();
                    match l.send(InspectProducers { reply: tx }).await {
                        Ok(()) => rx.await.map_err(|_| ResponseError::UnknownTopicOrPartition.code()),
                        Err(_) => Err(ResponseError::UnknownTopicOrPartition.code()),
                    }
                }
                Err(code) => Err(code),
            };
            match entries {
                Err(code) => pr.error_code = code,
                Ok(entries) => {
                    pr.active_producers = entries
                        .into_iter()
                        .map(|e| {
                            let mut ps = ProducerState::default();
                            ps.producer_id = ProducerId(e.producer_id);
                            ps.producer_epoch = e.epoch as i32;
                            ps.last_sequence = e.batches.back().map_or(-1, |b| b.last_seq);
                            ps.last_timestamp = e.batches.back().map_or(-1, |b| b.timestamp);
                            ps.coordinator_epoch = e.coordinator_epoch;
                            ps.current_txn_start_offset = e.current_txn_first_offset.unwrap_or(-1);
                            ps
                        })
                        .collect();
                }
            }
            out.partitions.push(pr);
        }
        r.topics.push(out);
    }
    r
}
