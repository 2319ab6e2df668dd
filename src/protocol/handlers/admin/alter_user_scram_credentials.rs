//! AlterUserScramCredentials (key 51, KIP-554): SCRAM credentials added, replaced or deleted
//! (store::auth::credentials::alter, Kafka's checks and answers per user), written under the
//! credentials' lock on the shared disk (on the blocking pool), and used by every broker of the
//! cluster, this one too, within two seconds (they read the file again that often). The client salts the password;
//! kaas keeps the derived keys, never the salted password. Needs ALTER on the cluster
//! (CLUSTER_AUTHORIZATION_FAILED per user).

use std::rc::Rc;

use kafka_protocol::messages::alter_user_scram_credentials_response::AlterUserScramCredentialsResult;
use kafka_protocol::messages::{AlterUserScramCredentialsRequest, AlterUserScramCredentialsResponse};

use crate::error_code::ResponseError;
use crate::protocol::{str_bytes, Session};
use crate::store::auth::acl;
use crate::store::auth::credentials::{self, Deletion, Upsertion};

/// The users a request names, each once, in order.
fn users_of(deletions: &[Deletion], upsertions: &[Upsertion]) -> Vec<String> {
    let mut users: Vec<String> = Vec::new();
    for u in deletions.iter().map(|d| &d.user).chain(upsertions.iter().map(|u| &u.user)) {
        if !users.contains(u) {
            users.push(u.clone());
        }
    }
    users
}

fn result(user: &str, error: Option<(i16, String)>) -> AlterUserScramCredentialsResult {
    let mut r = AlterUserScramCredentialsResult::default();
    r.user = str_bytes(user);
    if let Some((code, message)) = error {
        r.error_code = code;
        r.error_message = Some(str_bytes(&message));
    }
    r
}

pub async fn handle(
    s: Rc<Session>,
    _version: i16,
    req: AlterUserScramCredentialsRequest,
) -> AlterUserScramCredentialsResponse {
    let deletions: Vec<Deletion> =
        req.deletions.iter().map(|d| Deletion { user: d.name.to_string(), mechanism: d.mechanism }).collect();
    let upsertions: Vec<Upsertion> = req
        .upsertions
        .iter()
        .map(|u| Upsertion {
            user: u.name.to_string(),
            mechanism: u.mechanism,
            iterations: u.iterations,
            salt: u.salt.to_vec(),
            salted_password: u.salted_password.to_vec(),
        })
        .collect();
    let mut resp = AlterUserScramCredentialsResponse::default();
    if !s.authorized_cluster(acl::OP_ALTER) {
        let denied = (ResponseError::ClusterAuthorizationFailed.code(), "Cluster authorization failed.".to_string());
        resp.results = users_of(&deletions, &upsertions).iter().map(|u| result(u, Some(denied.clone()))).collect();
        return resp;
    }
    let dir = s.settings.broker.data_dir.clone();
    let (del, ups) = (deletions.clone(), upsertions.clone());
    let change = move || credentials::change(&dir, |current| credentials::alter(current, &del, &ups));
    match tokio::task::spawn_blocking(change).await {
        Ok(Ok((_, results))) => {
            resp.results =
                results.into_iter().map(|(user, r)| result(&user, r.err().map(|(e, why)| (e.code(), why)))).collect();
        }
        failed => {
            let why = match failed {
                Ok(Err(e)) => e.to_string(),
                _ => "changing the SCRAM credentials stopped".into(),
            };
            let e = (ResponseError::UnknownServerError.code(), why);
            resp.results = users_of(&deletions, &upsertions).iter().map(|u| result(u, Some(e.clone()))).collect();
        }
    }
    resp
}
