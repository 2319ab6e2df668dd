//! InitProducerId (key 22). The idempotent path (null transactional id, eos-rules 1): a fresh
//! cluster-unique producer id at epoch 0, no coordinator state. The transactional path goes to
//! the coordinator shard of the transactional id (eos-rules 3-13).

use std::rc::Rc;

use kafka_protocol::messages::{InitProducerIdRequest, InitProducerIdResponse, ProducerId};

use crate::actors::messages::TxnOp;
use crate::protocol::Session;
use crate::store::auth::acl;
use crate::store::txn::init_producer_id_authorization;
use crate::store::txn::{idempotent_init_producer_id, CoordinatorApi};

fn error(code: i16) -> InitProducerIdResponse {
    let mut r = InitProducerIdResponse::default();
    r.error_code = code;
    r.producer_id = ProducerId(-1);
    r.producer_epoch = -1;
    r
}

pub async fn handle(s: Rc<Session>, version: i16, req: InitProducerIdRequest) -> InitProducerIdResponse {
    // eos-rules 2: WRITE on the transactional id, or (idempotent) IDEMPOTENT_WRITE on the
    // cluster or WRITE on some topic, before anything else.
    let transactional = req.transactional_id.as_ref();
    let may_write_id =
        transactional.is_some_and(|id| s.authorized(acl::OP_WRITE, acl::RESOURCE_TRANSACTIONAL_ID, &id.0));
    let may_write_idempotently = transactional.is_none()
        && (s.authorized_any(acl::OP_WRITE, acl::RESOURCE_TOPIC) || s.authorized_cluster(acl::OP_IDEMPOTENT_WRITE));
    if let Err(e) = init_producer_id_authorization(transactional.is_some(), may_write_id, may_write_idempotently) {
        return error(e.code());
    }
    if let Some(id) = req.transactional_id {
        // eos-rules 3-13 live in store::txn; the claim exists from v3 on.
        let claim = (version >= 3).then_some((req.producer_id.0, req.producer_epoch));
        let op = TxnOp::InitProducerId { timeout_ms: req.transaction_timeout_ms, claim };
        return match s.txn_call(&id.0, op).await {
            Ok(ids) => {
                let mut r = InitProducerIdResponse::default();
                r.producer_id = ProducerId(ids.producer_id);
                r.producer_epoch = ids.epoch;
                r
            }
            Err(e) => error(e.for_version(CoordinatorApi::InitProducerId, version).code()),
        };
    }
    // eos-rules 1: no timeout validation and the claim is ignored on the idempotent path.
    let pid = match s.directory.allocate_producer_id().await {
        Ok(pid) => pid,
        Err(e) => return error(e.code()),
    };
    let claim = (version >= 3).then_some((req.producer_id.0, req.producer_epoch));
    match idempotent_init_producer_id(claim, &mut || pid) {
        Ok(ids) => {
            let mut r = InitProducerIdResponse::default();
            r.producer_id = ProducerId(ids.producer_id);
            r.producer_epoch = ids.epoch;
            r
        }
        Err(e) => error(e.code()),
    }
}
