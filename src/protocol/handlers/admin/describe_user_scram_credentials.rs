//! DescribeUserScramCredentials (key 50): kaas has no SASL/SCRAM users (no authentication, see
//! docs/compatibility.md), so no user has credentials: as a Kafka cluster where none were created
//! (store::admin::scram_user_results).

use std::rc::Rc;

use kafka_protocol::messages::describe_user_scram_credentials_response::DescribeUserScramCredentialsResult;
use kafka_protocol::messages::{DescribeUserScramCredentialsRequest, DescribeUserScramCredentialsResponse};

use crate::protocol::{str_bytes, Session};
use crate::store::admin::scram_user_results;

pub async fn handle(
    _s: Rc<Session>,
    _version: i16,
    req: DescribeUserScramCredentialsRequest,
) -> DescribeUserScramCredentialsResponse {
    let users: Option<Vec<String>> = req.users.map(|u| u.iter().map(|n| n.name.to_string()).collect());
    let mut resp = DescribeUserScramCredentialsResponse::default();
    resp.results = scram_user_results(users.as_deref())
        .into_iter()
        .map(|(user, error, message)| {
            let mut r = DescribeUserScramCredentialsResult::default();
            r.user = str_bytes(&user);
            r.error_code = error.code();
            r.error_message = Some(str_bytes(&message));
            r
        })
        .collect();
    resp
}
