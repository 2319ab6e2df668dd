//! DescribeTransactions (key 65): what kafka-transactions' `describe` shows: DESCRIBE on each
//! transactional id, and only the partitions of topics the client may describe.

use std::rc::Rc;

use kafka_protocol::messages::describe_transactions_response::{TopicData, TransactionState};
use kafka_protocol::messages::{DescribeTransactionsRequest, DescribeTransactionsResponse, ProducerId, TopicName};
use tokio::sync::oneshot;

use crate::actors::messages::InspectTxns;
use crate::error_code::ResponseError;
use crate::protocol::{str_bytes, Session};
use crate::store::auth::acl;

pub async fn handle(s: Rc<Session>, _version: i16, req: DescribeTransactionsRequest) -> DescribeTransactionsResponse {
    let mut r = DescribeTransactionsResponse::default();
    for id in req.transactional_ids {
        let (tx, rx) = oneshot::channel();
        let mut t = TransactionState::default();
        if !s.authorized(acl::OP_DESCRIBE, acl::RESOURCE_TRANSACTIONAL_ID, &id.0) {
            t.transactional_id = id;
            t.error_code = ResponseError::TransactionalIdAuthorizationFailed.code();
            r.transaction_states.push(t);
            continue;
        }
        let Ok(shard) = s.txn_shard(&id.0) else {
            t.transactional_id = id;
            t.error_code = ResponseError::NotCoordinator.code();
            r.transaction_states.push(t);
            continue;
        };
        let found = match shard.send(InspectTxns { ids: Some(vec![id.0.to_string()]), reply: tx }).await {
            Ok(()) => rx.await.ok().and_then(|mut v| v.pop()).and_then(|(_, e)| e),
            Err(_) => None,
        };
        t.transactional_id = id;
        match found {
            None => t.error_code = ResponseError::TransactionalIdNotFound.code(),
            Some(e) => {
                t.transaction_state = str_bytes(e.state.name());
                t.transaction_timeout_ms = e.timeout_ms;
                t.transaction_start_time_ms = e.txn_start_ms;
                t.producer_id = ProducerId(e.producer_id);
                t.producer_epoch = e.producer_epoch;
                let mut topics: Vec<TopicData> = Vec::new();
                // Kafka lists only the partitions of topics the client may describe.
                let describable = |topic: &str| s.authorized(acl::OP_DESCRIBE, acl::RESOURCE_TOPIC, topic);
                for (topic, p) in e.partitions.iter().filter(|(topic, _)| describable(topic)) {
                    match topics.iter_mut().find(|d| d.topic.0.as_str() == topic) {
                        Some(d) => d.partitions.push(*p),
                        None => {
                            let mut d = TopicData::default();
                            d.topic = TopicName(str_bytes(topic));
                            d.partitions.push(*p);
                            topics.push(d);
                        }
                    }
                }
                t.topics = topics;
            }
        }
        r.transaction_states.push(t);
    }
    r
}
