//! ApiVersions (key 18): the advertised ranges from versions.rs and the finalized
//! transaction.version feature.

use kafka_protocol::messages::api_versions_response::{ApiVersion, FinalizedFeatureKey, SupportedFeatureKey};
use kafka_protocol::messages::{ApiVersionsRequest, ApiVersionsResponse};

use crate::error_code::ResponseError;
use crate::protocol::str_bytes;
use crate::protocol::versions::{advertised, Offered};

fn ranges(offered: Offered) -> Vec<ApiVersion> {
    advertised(offered)
        .into_iter()
        .map(|(k, min, max)| ApiVersion::default().with_api_key(k as i16).with_min_version(min).with_max_version(max))
        .collect()
}

/// `transaction_version`: the finalized transaction.version (1 or 2); `offered`: what the
/// settings advertise (eos-rules 43, 60).
pub fn handle(
    version: i16,
    transaction_version: i16,
    offered: Offered,
    _req: ApiVersionsRequest,
) -> ApiVersionsResponse {
    let mut r = ApiVersionsResponse::default().with_api_keys(ranges(offered));
    if version >= 3 {
        // eos-rules 60: Java switches to TV2 only when the finalized level is >= 2.
        let mut supported = SupportedFeatureKey::default();
        supported.name = str_bytes("transaction.version");
        supported.min_version = 0;
        supported.max_version = 2;
        r.supported_features = vec![supported];
        let mut finalized = FinalizedFeatureKey::default();
        finalized.name = str_bytes("transaction.version");
        finalized.min_version_level = transaction_version;
        finalized.max_version_level = transaction_version;
        r.finalized_features = vec![finalized];
        r.finalized_features_epoch = 1;
    }
    r
}

/// Apache Kafka answers a too-new ApiVersions with a v0 response carrying code 35 and the
/// supported ranges, so the client can retry with a version both sides know.
pub fn unsupported() -> ApiVersionsResponse {
    let offered = Offered { tv2: false, ..Offered::ALL };
    ApiVersionsResponse::default()
        .with_error_code(ResponseError::UnsupportedVersion.code())
        .with_api_keys(ranges(offered))
}
