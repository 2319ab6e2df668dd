//! FindCoordinator (key 10): group (0) and transaction (1) coordinators, single (v0-3) and
//! batched (v4+). On one node every coordinator is this broker.

use kafka_protocol::messages::find_coordinator_response::Coordinator;
use kafka_protocol::messages::{BrokerId, FindCoordinatorRequest, FindCoordinatorResponse};
use kafka_protocol::protocol::StrBytes;

use crate::error_code::ResponseError;
use crate::protocol::{str_bytes, Session};
const KEY_GROUP: i8 = 0;
const KEY_TRANSACTION: i8 = 1;

/// (error code, message) for one key.
fn check(key_type: i8, key: &str) -> Option<(i16, &'static str)> {
    match key_type {
        KEY_GROUP => None,
        // eos-rules 4: an empty transactional id is never valid.
        KEY_TRANSACTION if key.is_empty() => Some((ResponseError::InvalidRequest.code(), "empty transactional id")),
        KEY_TRANSACTION => None,
        _ => Some((ResponseError::InvalidRequest.code(), "unsupported coordinator key type")),
    }
}

pub fn handle(s: &Session, version: i16, req: FindCoordinatorRequest) -> FindCoordinatorResponse {
    let (host, port) = s.settings.advertised();
    let mut resp = FindCoordinatorResponse::default();
    if version < 4 {
        match check(req.key_type, &req.key) {
            Some((code, msg)) => {
                resp.error_code = code;
                resp.error_message = Some(str_bytes(msg));
                resp.node_id = BrokerId(-1);
                resp.port = -1;
            }
            None => {
                resp.node_id = BrokerId(s.node_id());
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
            match check(req.key_type, &key) {
                Some((code, msg)) => {
                    c.error_code = code;
                    c.error_message = Some(str_bytes(msg));
                    c.node_id = BrokerId(-1);
                    c.port = -1;
                }
                None => {
                    c.node_id = BrokerId(s.node_id());
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
