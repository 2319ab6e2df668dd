//! ApiVersions (key 18): the advertised ranges from versions.rs.

use kafka_protocol::messages::api_versions_response::ApiVersion;
use kafka_protocol::messages::{ApiVersionsRequest, ApiVersionsResponse};

use crate::protocol::versions::SUPPORTED;

/// UNSUPPORTED_VERSION: a client asked for a version newer than this broker speaks.
pub const UNSUPPORTED_VERSION: i16 = 35;

fn ranges() -> Vec<ApiVersion> {
    SUPPORTED
        .iter()
        .map(|(k, min, max)| {
            ApiVersion::default().with_api_key(*k as i16).with_min_version(*min).with_max_version(*max)
        })
        .collect()
}

pub fn handle(_version: i16, _req: ApiVersionsRequest) -> ApiVersionsResponse {
    ApiVersionsResponse::default().with_api_keys(ranges())
}

/// Apache Kafka answers a too-new ApiVersions with a v0 response carrying code 35 and the
/// supported ranges, so the client can retry with a version both sides know.
pub fn unsupported() -> ApiVersionsResponse {
    ApiVersionsResponse::default().with_error_code(UNSUPPORTED_VERSION).with_api_keys(ranges())
}
