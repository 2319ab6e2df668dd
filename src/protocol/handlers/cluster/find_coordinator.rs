//! FindCoordinator (key 10): group (0) and transaction (1) coordinators, single (v0-3) and
//! batched (v4+): the broker the directory says owns the key's shard.

use kafka_protocol::messages::find_coordinator_response::Coordinator;
use kafka_protocol::messages::{BrokerId, FindCoordinatorRequest, FindCoordinatorResponse};
use kafka_protocol::protocol::StrBytes;

use crate::error_code::ResponseError;
use crate::protocol::{str_bytes, Session};
use crate::store::auth::acl;
use crate::store::coordinator_key::{key_error, offsets_partition, txn_shard, KEY_TYPE_GROUP};
use crate::store::ownership::Owned;

/// The shard `key` maps to.
fn shard(s: &Session, key_type: i8, key: &str) -> Owned {
    if key_type == KEY_TYPE_GROUP {
        Owned::GroupShard(offsets_partition(key))
    } else {
        Owned::TxnShard(u32::try_from(txn_shard(key, s.txn.len())).unwrap_or(u32::MAX))
    }
}

/// The broker coordinating `key` as (node, host, port) on the client's listener, or (error code,
/// message).
fn locate(s: &Session, key_type: i8, key: &str) -> Result<(i32, String, i32), (i16, &'static str)> {
    if let Some(refused) = key_error(key_type, key) {
        return Err((ResponseError::InvalidRequest.code(), refused));
    }
    // DESCRIBE on the group or the transactional id, as Kafka checks.
    let (resource, denied, why) = if key_type == KEY_TYPE_GROUP {
        (acl::RESOURCE_GROUP, ResponseError::GroupAuthorizationFailed, "Group authorization failed.")
    } else {
        let why = "Transactional Id authorization failed.";
        (acl::RESOURCE_TRANSACTIONAL_ID, ResponseError::TransactionalIdAuthorizationFailed, why)
    };
    if !s.authorized(acl::OP_DESCRIBE, resource, key) {
        return Err((denied.code(), why));
    }
    let table = s.directory.ownership();
    let unavailable = (ResponseError::CoordinatorNotAvailable.code(), "The coordinator is not available.");
    let b = table.owner(&shard(s, key_type, key)).ok_or(unavailable)?;
    // A coordinator without the client's listener is one it cannot reach.
    let (host, port) = b.address(s.listener.get().name()).ok_or(unavailable)?;
    Ok((b.node_id, host.to_string(), port))
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
            Ok((id, host, port)) => {
                resp.node_id = BrokerId(id);
                resp.host = str_bytes(&host);
                resp.port = port;
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
                Ok((id, host, port)) => {
                    c.node_id = BrokerId(id);
                    c.host = str_bytes(&host);
                    c.port = port;
                }
            }
            c.key = key;
            c
        })
        .collect();
    resp
}
