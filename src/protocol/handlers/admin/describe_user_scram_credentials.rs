//! DescribeUserScramCredentials (key 50): the cluster's SCRAM users (store::auth::credentials,
//! read from the shared disk on the blocking pool), each with its mechanisms and iterations, as
//! Kafka answers (never a salt or a key).

use std::rc::Rc;

use kafka_protocol::messages::describe_user_scram_credentials_response::{
    CredentialInfo, DescribeUserScramCredentialsResult,
};
use kafka_protocol::messages::{DescribeUserScramCredentialsRequest, DescribeUserScramCredentialsResponse};

use crate::error_code::ResponseError;
use crate::protocol::{str_bytes, Session};
use crate::store::auth::acl;
use crate::store::auth::credentials;

pub async fn handle(
    s: Rc<Session>,
    _version: i16,
    req: DescribeUserScramCredentialsRequest,
) -> DescribeUserScramCredentialsResponse {
    // DESCRIBE on the cluster, as Kafka checks.
    if !s.authorized_cluster(acl::OP_DESCRIBE) {
        let mut r = DescribeUserScramCredentialsResponse::default();
        r.error_code = crate::error_code::ResponseError::ClusterAuthorizationFailed.code();
        r.error_message = Some(crate::protocol::str_bytes("Cluster authorization failed."));
        return r;
    }
    let users: Option<Vec<String>> = req.users.map(|u| u.iter().map(|n| n.name.to_string()).collect());
    let mut resp = DescribeUserScramCredentialsResponse::default();
    let dir = s.settings.broker.data_dir.clone();
    let map = match tokio::task::spawn_blocking(move || credentials::load(&dir)).await {
        Ok(Ok(map)) => map,
        failed => {
            let why = match failed {
                Ok(Err(e)) => e.to_string(),
                _ => "reading the SCRAM credentials stopped".into(),
            };
            resp.error_code = ResponseError::UnknownServerError.code();
            resp.error_message = Some(str_bytes(&why));
            return resp;
        }
    };
    resp.results = credentials::describe(users.as_deref(), &map)
        .into_iter()
        .map(|u| {
            let mut r = DescribeUserScramCredentialsResult::default();
            r.user = str_bytes(&u.user);
            match u.result {
                Ok(infos) => {
                    r.credential_infos = infos
                        .into_iter()
                        .map(|(mechanism, iterations)| {
                            let mut i = CredentialInfo::default();
                            i.mechanism = mechanism;
                            i.iterations = iterations;
                            i
                        })
                        .collect();
                }
                Err((error, message)) => {
                    r.error_code = error.code();
                    r.error_message = Some(str_bytes(&message));
                }
            }
            r
        })
        .collect();
    resp
}
