//! ListTransactions (key 66) v0-1: state, producer-id and (v1) duration filters.

use std::rc::Rc;

use kafka_protocol::messages::list_transactions_response::TransactionState;
use kafka_protocol::messages::{ListTransactionsRequest, ListTransactionsResponse, ProducerId, TransactionalId};
use tokio::sync::oneshot;

use crate::actors::messages::InspectTxns;
use crate::protocol::handlers::describe_transactions::state_name;
use crate::protocol::{str_bytes, Session};
use crate::store::clock::now_ms;

const STATES: [&str; 8] = [
    "Empty",
    "Ongoing",
    "PrepareCommit",
    "PrepareAbort",
    "CompleteCommit",
    "CompleteAbort",
    "PrepareEpochFence",
    "Dead",
];

pub async fn handle(s: Rc<Session>, version: i16, req: ListTransactionsRequest) -> ListTransactionsResponse {
    let mut r = ListTransactionsResponse::default();
    let states: Vec<String> = req.state_filters.iter().map(|s| s.to_string()).collect();
    r.unknown_state_filters = states.iter().filter(|f| !STATES.contains(&f.as_str())).map(|f| str_bytes(f)).collect();
    let pids: Vec<i64> = req.producer_id_filters.iter().map(|p| p.0).collect();
    let now = now_ms();
    for shard in s.txn.iter() {
        let (tx, rx) = oneshot::channel();
        if shard.send(InspectTxns { ids: None, reply: tx }).await.is_err() {
            continue;
        }
        for (id, e) in rx.await.unwrap_or_default() {
            let Some(e) = e else { continue };
            let name = state_name(&e);
            if !states.is_empty() && !states.iter().any(|f| f == name) {
                continue;
            }
            if !pids.is_empty() && !pids.contains(&e.producer_id) {
                continue;
            }
            // v1: only transactions running longer than the duration (ms).
            if version >= 1
                && req.duration_filter >= 0
                && (e.txn_start_ms < 0 || now - e.txn_start_ms < req.duration_filter)
            {
                continue;
            }
            let mut t = TransactionState::default();
            t.transactional_id = TransactionalId(str_bytes(&id));
            t.producer_id = ProducerId(e.producer_id);
            t.transaction_state = str_bytes(name);
            r.transaction_states.push(t);
        }
    }
    r
}
