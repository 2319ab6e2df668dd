//! ApiVersions (key 18): the advertised ranges from versions.rs and the finalized
//! transaction.version feature.

use kafka_protocol::messages::api_versions_response::{ApiVersion, FinalizedFeatureKey, SupportedFeatureKey};
use kafka_protocol::messages::{ApiKey, ApiVersionsRequest, ApiVersionsResponse};

use crate::error_code::ResponseError;
use crate::protocol::str_bytes;
use crate::protocol::versions::{advertised, supported_range, Offered};

fn ranges(offered: Offered) -> Vec<ApiVersion> {
    advertised(offered)
        .into_iter()
        .map(|(k, min, max)| ApiVersion::default().with_api_key(k as i16).with_min_version(min).with_max_version(max))
        .collect()
}

/// `transaction_version`: the finalized transaction.version (1 or 2); `offered`: what the
/// settings advertise (eos-rules 43, 60) and the finalized group.version.
pub fn handle(
    version: i16,
    transaction_version: i16,
    offered: Offered,
    _req: ApiVersionsRequest,
) -> ApiVersionsResponse {
    let mut r = ApiVersionsResponse::default().with_api_keys(ranges(offered));
    if version >= 3 {
        // eos-rules 60: Java switches to TV2 only when the finalized level is >= 2.
        let feature = |name: &str, max: i16, level: i16| {
            let mut supported = SupportedFeatureKey::default();
            supported.name = str_bytes(name);
            supported.min_version = supported_min_version(version, 0);
            supported.max_version = max;
            let mut finalized = FinalizedFeatureKey::default();
            finalized.name = str_bytes(name);
            (finalized.min_version_level, finalized.max_version_level) = (level, level);
            (supported, finalized)
        };
        let (s_tv, f_tv) = feature("transaction.version", 2, transaction_version);
        // KIP-848: Apache Kafka 4.x finalizes group.version 1 (the consumer group protocol).
        let (s_gv, f_gv) = feature("group.version", 1, offered.group_version);
        r.supported_features = vec![s_tv, s_gv];
        // A level-0 feature is not finalized (Kafka omits it).
        r.finalized_features = [f_tv, f_gv].into_iter().filter(|f| f.max_version_level > 0).collect();
        r.finalized_features_epoch = 1;
    }
    r
}

/// A supported feature's lowest level as a client of `version` may be told it: before v4 the
/// Java client refused 0 (KAFKA-17011), so Kafka reports 1 there; v4 carries 0 as it is.
fn supported_min_version(version: i16, min: i16) -> i16 {
    if version < 4 {
        min.max(1)
    } else {
        min
    }
}

/// Apache Kafka answers a too-new ApiVersions with a v0 response carrying code 35 and only the
/// ApiVersions range (KIP-511), so the client retries with a version both sides know. Listing
/// every API here would be wrong: a client such as franz-go takes a full list at its word (as
/// from a pre-2.4 broker) and keeps that connection on it, without the v3 features.
pub fn unsupported() -> ApiVersionsResponse {
    let (min, max) = supported_range(ApiKey::ApiVersions).unwrap_or((0, 0));
    let key =
        ApiVersion::default().with_api_key(ApiKey::ApiVersions as i16).with_min_version(min).with_max_version(max);
    ApiVersionsResponse::default().with_error_code(ResponseError::UnsupportedVersion.code()).with_api_keys(vec![key])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unsupported_version_lists_only_api_versions() {
        let r = unsupported();
        assert_eq!(r.error_code, ResponseError::UnsupportedVersion.code());
        let keys: Vec<_> = r.api_keys.iter().map(|k| (k.api_key, k.min_version, k.max_version)).collect();
        assert_eq!(keys, vec![(ApiKey::ApiVersions as i16, 0, 4)]);
    }

    #[test]
    fn supported_feature_level_0_is_reported_as_1_before_v4() {
        let min =
            |version| handle(version, 2, Offered::ALL, ApiVersionsRequest::default()).supported_features[0].min_version;
        assert_eq!(min(3), 1);
        assert_eq!(min(4), 0);
    }
}
