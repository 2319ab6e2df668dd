//! EndTxn (key 26): v0-4 TV1, v5 TV2 (eos-rules 35-40); v5 answers carry the live pid/epoch.

use std::rc::Rc;

use kafka_protocol::messages::{EndTxnRequest, EndTxnResponse, ProducerId};

use crate::actors::messages::TxnOp;
use crate::error_code::ResponseError;
use crate::protocol::Session;
use crate::store::auth::acl;
use crate::store::txn::{end_txn_is_tv2, CoordinatorApi};

pub async fn handle(s: Rc<Session>, version: i16, req: EndTxnRequest) -> EndTxnResponse {
    // Only a principal with WRITE on the transactional id ends its transaction (Kafka's check).
    if !s.authorized(acl::OP_WRITE, acl::RESOURCE_TRANSACTIONAL_ID, &req.transactional_id.0) {
        let mut r = EndTxnResponse::default();
        r.error_code = ResponseError::TransactionalIdAuthorizationFailed.code();
        if version >= 5 {
            r.producer_id = ProducerId(-1);
            r.producer_epoch = -1;
        }
        return r;
    }
    let op = TxnOp::EndTxn {
        producer_id: req.producer_id.0,
        epoch: req.producer_epoch,
        commit: req.committed,
        tv2: end_txn_is_tv2(version),
    };
    let answer = s.txn_call(&req.transactional_id.0, op).await;
    let mut r = EndTxnResponse::default();
    // eos-rules 35 / E9: -1/-1 on errors, the live ids on NONE (v5 only has the fields).
    let (pid, epoch) = match answer {
        Ok(ids) => (ids.producer_id, ids.epoch),
        Err(e) => {
            r.error_code = e.for_version(CoordinatorApi::EndTxn, version).code();
            (-1, -1)
        }
    };
    if version >= 5 {
        r.producer_id = ProducerId(pid);
        r.producer_epoch = epoch;
    }
    r
}
