//! FindCoordinator (key 10): group (0) and transaction (1) coordinators, single (v0-3) and
//! batched (v4+): the broker the directory says owns the key's shard.

use kafka_protocol::messages::find_coordinator_response::Coordinator;
use kafka_protocol::messages::{BrokerId, FindCoordinatorRequest, FindCoordinatorResponse};
use kafka_protocol::protocol::StrBytes;

use crate::error_code::ResponseError;
use crate::protocol::{str_bytes, Session};
use crate::store::coordinator_key::{key_error, offsets_partition, txn_shard, KEY_TYPE_GROUP};
use crate::store::ownership::{Broker, Owned};

/// The shard `key` maps to.
fn shard(s: &Session, key_type: i8, key: &str) -> Owned {
    if key_type == KEY_TYPE_GROUP {
        Owned::GroupShard(offsets_partition(key))
    } else {
        Owned::TxnShard(u32::try_from(txn_shard(key, s.txn.len())).unwrap_or(u32::MAX))
    }
}

/// The broker coordinating `key`, or (error code, message).
fn locate(s: &Session, key_type: i8, key: &str) -> Result<Broker, (i16, &'static str)> {
    if let Some(refused) = key_error(key_type, key) {
        return Err((ResponseError::InvalidRequest.code(), refused));
    }
    let table = s.directory.ownership();
    table
        .owner(&shard(s, key_type, key))
        .cloned()
        .ok_or((ResponseError::CoordinatorNotAvailable.code(), "The coordinator is not available."))
}

pub fn handle(s: &Session, version: i16, req: FindCoordinatorRequest) -> FindCoordinatorResponse {
    let mut resp = FindCoordinatorResponse::default();
    if version < 4 {
        match locate(s, req.key_type, &req.key) {
            Err((code, msg)) => {
                resp.error_code = code;
                resp.error_message = Some(str_bytes(msg));
                resp.node_id = BrokerId(-1);
                resp.port = -1;
            }
            Ok(b) => {
                resp.node_id = BrokerId(b.node_id);
                resp.host = str_bytes(&b.host);
                resp.port = b.port;
            }
        }
        return resp;
    }
    resp.coordinators = req
        .coordinator_keys
        .into_iter()
        .map(|key: StrBytes| {
            let mut c = Coordinator::default();
            match locate(s, req.key_type, &key) {
                Err((code, msg)) => {
                    c.error_code = code;
                    c.error_message = Some(str_bytes(msg));
                    c.node_id = BrokerId(-1);
                    c.port = -1;
                }
                Ok(b) => {
                    c.node_id = BrokerId(b.node_id);
                    c.host = str_bytes(&b.host);
                    c.port = b.port;
                }
            }
            c.key = key;
            c
        })
        .collect();
    resp
}
