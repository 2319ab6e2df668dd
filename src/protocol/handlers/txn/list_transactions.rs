//! ListTransactions (key 66) v0-1: state, producer-id and (v1) duration filters.

use std::rc::Rc;

use kafka_protocol::messages::list_transactions_response::TransactionState;
use kafka_protocol::messages::{ListTransactionsRequest, ListTransactionsResponse, ProducerId, TransactionalId};
use tokio::sync::oneshot;

use crate::actors::messages::InspectTxns;
use crate::protocol::{str_bytes, Session};
use crate::store::auth::acl;
use crate::store::clock::now_ms;
use crate::store::txn::ListFilter;

pub async fn handle(s: Rc<Session>, version: i16, req: ListTransactionsRequest) -> ListTransactionsResponse {
    let mut r = ListTransactionsResponse::default();
    let filter = ListFilter {
        states: req.state_filters.iter().map(|s| s.to_string()).collect(),
        producer_ids: req.producer_id_filters.iter().map(|p| p.0).collect(),
        // v1: only transactions running longer than the duration (ms).
        min_duration_ms: (version >= 1 && req.duration_filter >= 0).then_some(req.duration_filter),
    };
    r.unknown_state_filters = filter.unknown_states().iter().map(|f| str_bytes(f)).collect();
    let now = now_ms();
    // Each broker lists the transactions of the shards it runs (the admin client asks them all).
    for shard in s.txn.iter().filter_map(|slot| slot.get()) {
        let (tx, rx) = oneshot::channel();
        if shard.send(InspectTxns { ids: None, reply: tx }).await.is_err() {
            continue;
        }
        for (id, e) in rx.await.unwrap_or_default() {
            let Some(e) = e else { continue };
            // Only the transactional ids the client may describe, as Kafka lists them.
            if !filter.matches(&e, now) || !s.authorized(acl::OP_DESCRIBE, acl::RESOURCE_TRANSACTIONAL_ID, &id) {
                continue;
            }
            let mut t = TransactionState::default();
            t.transactional_id = TransactionalId(str_bytes(&id));
            t.producer_id = ProducerId(e.producer_id);
            t.transaction_state = str_bytes(e.state.name());
            r.transaction_states.push(t);
        }
    }
    r
}
