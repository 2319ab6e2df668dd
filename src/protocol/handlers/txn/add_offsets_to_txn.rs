//! AddOffsetsToTxn (key 25): adds the group's `__consumer_offsets` partition to the transaction
//! (eos-rules 34, behaving as rule 32).

use std::rc::Rc;

use kafka_protocol::messages::{AddOffsetsToTxnRequest, AddOffsetsToTxnResponse};

use crate::actors::messages::TxnOp;
use crate::error_code::ResponseError;
use crate::protocol::Session;
use crate::store::auth::acl;
use crate::store::coordinator_key::offsets_partition;
use crate::store::txn::CoordinatorApi;

pub async fn handle(s: Rc<Session>, version: i16, req: AddOffsetsToTxnRequest) -> AddOffsetsToTxnResponse {
    let op = TxnOp::AddOffsets {
        producer_id: req.producer_id.0,
        epoch: req.producer_epoch,
        offsets_partition: offsets_partition(&req.group_id.0),
    };
    let mut r = AddOffsetsToTxnResponse::default();
    // WRITE on the transactional id, then READ on the group, as Kafka checks.
    if !s.authorized(acl::OP_WRITE, acl::RESOURCE_TRANSACTIONAL_ID, &req.transactional_id.0) {
        r.error_code = ResponseError::TransactionalIdAuthorizationFailed.code();
        return r;
    }
    if !s.authorized(acl::OP_READ, acl::RESOURCE_GROUP, &req.group_id.0) {
        r.error_code = ResponseError::GroupAuthorizationFailed.code();
        return r;
    }
    if let Err(e) = s.txn_call(&req.transactional_id.0, op).await {
        r.error_code = e.for_version(CoordinatorApi::AddOffsetsToTxn, version).code();
    }
    r
}
