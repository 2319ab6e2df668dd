//! What ApiVersions advertises: only versions kaas implements and kafka-protocol decodes.

use kafka_protocol::messages::ApiKey;

/// (api, min, max). Produce stops at v11 and Fetch at v12: v12+/v13+ need TV2 / topic ids.
pub const SUPPORTED: &[(ApiKey, i16, i16)] = &[
    (ApiKey::Produce, 3, 11),
    (ApiKey::Fetch, 4, 12),
    (ApiKey::ListOffsets, 1, 7),
    (ApiKey::Metadata, 0, 12),
    (ApiKey::ApiVersions, 0, 3),
    (ApiKey::CreateTopics, 2, 7),
    (ApiKey::DeleteTopics, 1, 6),
    (ApiKey::InitProducerId, 0, 5),
    (ApiKey::OffsetForLeaderEpoch, 2, 4),
    (ApiKey::DescribeConfigs, 1, 4),
    (ApiKey::DescribeCluster, 0, 1),
    (ApiKey::FindCoordinator, 0, 4),
    (ApiKey::AddPartitionsToTxn, 0, 5),
    (ApiKey::EndTxn, 0, 4),
];

pub fn supported_range(key: ApiKey) -> Option<(i16, i16)> {
    SUPPORTED.iter().find(|(k, _, _)| *k == key).map(|(_, min, max)| (*min, *max))
}

pub fn is_supported(key: ApiKey, version: i16) -> bool {
    supported_range(key).is_some_and(|(min, max)| version >= min && version <= max)
}

#[cfg(test)]
mod tests {
    use super::*;
    use kafka_protocol::messages::ApiKey;

    #[test]
    fn advertised_versions_are_decodable_by_kafka_protocol() {
        for (key, min, max) in SUPPORTED {
            let lib = key.valid_versions();
            assert!(*min >= lib.min && *max <= lib.max, "{key:?} {min}..{max} outside {lib}");
        }
    }

    #[test]
    fn unknown_versions_are_not_supported() {
        assert!(is_supported(ApiKey::Produce, 9));
        assert!(!is_supported(ApiKey::Produce, 12));
        assert!(!is_supported(ApiKey::ApiVersions, 99));
        assert!(!is_supported(ApiKey::JoinGroup, 0));
    }
}
