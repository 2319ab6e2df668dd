//! What ApiVersions advertises: only versions kaas implements and kafka-protocol decodes.

use kafka_protocol::messages::ApiKey;

use crate::config::Settings;

/// (api, min, max) kaas decodes. Fetch stops at v12 (v13+ need topic ids), Produce at v12.
/// Produce v12 and EndTxn v5 are the TV2 versions: advertised only with transaction.version=2
/// finalized (eos-rules 60), see [`advertised`].
pub const SUPPORTED: &[(ApiKey, i16, i16)] = &[
    (ApiKey::Produce, 3, 12),
    (ApiKey::Fetch, 4, 12),
    (ApiKey::ListOffsets, 1, 11),
    (ApiKey::Metadata, 0, 12),
    (ApiKey::ApiVersions, 0, 4),
    // v0 of SaslHandshake is followed by raw SASL tokens outside Kafka's framing
    // (connection::raw_sasl_token); Kafka 4.4 still offers it, and clients check for it
    // (librdkafka 2.0's feature map, Debian's kcat, asks for v0 to log in at all).
    (ApiKey::SaslHandshake, 0, 1),
    (ApiKey::SaslAuthenticate, 0, 2),
    (ApiKey::DescribeAcls, 1, 3),
    (ApiKey::CreateAcls, 1, 3),
    (ApiKey::DeleteAcls, 1, 3),
    (ApiKey::CreateTopics, 2, 7),
    (ApiKey::DeleteTopics, 1, 6),
    (ApiKey::DeleteRecords, 0, 2),
    (ApiKey::InitProducerId, 0, 5),
    (ApiKey::OffsetForLeaderEpoch, 2, 4),
    (ApiKey::DescribeConfigs, 1, 4),
    (ApiKey::AlterConfigs, 0, 2),
    (ApiKey::IncrementalAlterConfigs, 0, 1),
    (ApiKey::DescribeCluster, 0, 1),
    (ApiKey::FindCoordinator, 0, 4),
    (ApiKey::AddPartitionsToTxn, 0, 5),
    (ApiKey::EndTxn, 0, 5),
    (ApiKey::JoinGroup, 0, 9),
    (ApiKey::SyncGroup, 0, 5),
    (ApiKey::Heartbeat, 0, 4),
    (ApiKey::LeaveGroup, 0, 5),
    (ApiKey::OffsetCommit, 2, 9),
    (ApiKey::OffsetFetch, 1, 9),
    (ApiKey::ListGroups, 0, 5),
    (ApiKey::DescribeGroups, 0, 6),
    (ApiKey::DeleteGroups, 0, 2),
    (ApiKey::OffsetDelete, 0, 0),
    (ApiKey::AddOffsetsToTxn, 0, 4),
    (ApiKey::TxnOffsetCommit, 0, 5),
    (ApiKey::DescribeTransactions, 0, 0),
    (ApiKey::ListTransactions, 0, 1),
    (ApiKey::DescribeProducers, 0, 0),
    (ApiKey::WriteTxnMarkers, 1, 2),
    (ApiKey::ElectLeaders, 0, 2),
    (ApiKey::ListPartitionReassignments, 0, 0),
    (ApiKey::DescribeClientQuotas, 0, 1),
    (ApiKey::DescribeUserScramCredentials, 0, 0),
    (ApiKey::AlterUserScramCredentials, 0, 0),
    (ApiKey::DescribeLogDirs, 1, 4),
    (ApiKey::DescribeQuorum, 0, 2),
    (ApiKey::ListConfigResources, 0, 1),
    (ApiKey::DescribeTopicPartitions, 0, 0),
    (ApiKey::CreatePartitions, 0, 3),
    (ApiKey::ConsumerGroupHeartbeat, 0, 1),
    (ApiKey::ConsumerGroupDescribe, 0, 1),
];

/// What this broker's settings take out of [`SUPPORTED`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Offered {
    /// transaction.version = 2 is finalized (eos-rules 60).
    pub tv2: bool,
    /// `write_txn_markers_max_version`: 1 hides and refuses KIP-1228's v2 (eos-rules 43).
    pub write_txn_markers_max: i16,
    /// The finalized group.version: 1 serves the consumer group protocol (KIP-848).
    pub group_version: i16,
}

impl Offered {
    /// Everything kaas implements.
    pub const ALL: Offered = Offered { tv2: true, write_txn_markers_max: 2, group_version: 1 };

    pub fn from_settings(settings: &Settings) -> Offered {
        Offered {
            tv2: settings.transactions.transaction_version >= 2,
            write_txn_markers_max: settings.transactions.write_txn_markers_max_version,
            group_version: settings.groups.group_version,
        }
    }

    /// Whether a request of this version is decoded at all. Versions hidden for TV1 stay
    /// accepted (Java caps itself), but a WriteTxnMarkers version above the setting is refused
    /// like any unsupported version.
    pub fn accepts(&self, key: ApiKey, version: i16) -> bool {
        is_supported(key, version)
            && !(key == ApiKey::WriteTxnMarkers && version > self.write_txn_markers_max)
            && (self.group_version >= 1 || !is_consumer_group_api(key))
    }
}

/// What ApiVersions lists: with TV1 Java caps Produce at v11 and EndTxn at v4 itself, but
/// other clients pick the highest advertised version, so the TV2 versions are hidden.
pub fn advertised(offered: Offered) -> Vec<(ApiKey, i16, i16)> {
    let tv2 = offered.tv2;
    SUPPORTED
        .iter()
        .filter(|(k, _, _)| offered.group_version >= 1 || !is_consumer_group_api(*k))
        .map(|&(k, min, max)| match k {
            ApiKey::Produce if !tv2 => (k, min, 11),
            ApiKey::EndTxn if !tv2 => (k, min, 4),
            ApiKey::TxnOffsetCommit if !tv2 => (k, min, 4),
            ApiKey::WriteTxnMarkers => (k, min, max.min(offered.write_txn_markers_max)),
            _ => (k, min, max),
        })
        .collect()
}

/// The KIP-848 APIs, served only with group.version 1 (as Kafka's ApiVersions filters them).
fn is_consumer_group_api(key: ApiKey) -> bool {
    matches!(key, ApiKey::ConsumerGroupHeartbeat | ApiKey::ConsumerGroupDescribe)
}

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
    fn rule_60_tv2_versions_only_with_tv2() {
        let find = |tv2, key| {
            advertised(Offered { tv2, ..Offered::ALL }).into_iter().find(|(k, _, _)| *k == key).map(|(_, _, max)| max)
        };
        assert_eq!(find(false, ApiKey::Produce), Some(11));
        assert_eq!(find(false, ApiKey::EndTxn), Some(4));
        assert_eq!(find(true, ApiKey::Produce), Some(12));
        assert_eq!(find(true, ApiKey::EndTxn), Some(5));
    }

    #[test]
    fn rule_43_write_txn_markers_v2_only_up_to_the_setting() {
        let max = |o: Offered| {
            advertised(o).into_iter().find(|(k, _, _)| *k == ApiKey::WriteTxnMarkers).map(|(_, min, max)| (min, max))
        };
        assert_eq!(max(Offered::ALL), Some((1, 2)));
        let v1 = Offered { write_txn_markers_max: 1, ..Offered::ALL };
        assert_eq!(max(v1), Some((1, 1)));
        assert!(Offered::ALL.accepts(ApiKey::WriteTxnMarkers, 2));
        assert!(v1.accepts(ApiKey::WriteTxnMarkers, 1));
        assert!(!v1.accepts(ApiKey::WriteTxnMarkers, 2), "refused like any unadvertised version");
        assert!(v1.accepts(ApiKey::Produce, 12), "other APIs are untouched");
        assert_eq!(Offered::from_settings(&Settings::default()), Offered::ALL);
    }

    #[test]
    fn advertised_versions_are_decodable_by_kafka_protocol() {
        for (key, min, max) in SUPPORTED {
            // v2 is decoded by protocol::txn_markers_codec, not by kafka-protocol.
            let max = if *key == ApiKey::WriteTxnMarkers { &1 } else { max };
            let lib = key.valid_versions();
            assert!(*min >= lib.min && *max <= lib.max, "{key:?} {min}..{max} outside {lib}");
        }
    }

    #[test]
    fn consumer_group_apis_only_with_group_version_1() {
        let listed = |o: Offered| advertised(o).iter().any(|(k, _, _)| *k == ApiKey::ConsumerGroupHeartbeat);
        let gv0 = Offered { group_version: 0, ..Offered::ALL };
        assert!(listed(Offered::ALL));
        assert!(!listed(gv0));
        assert!(!gv0.accepts(ApiKey::ConsumerGroupDescribe, 0));
        assert!(Offered::ALL.accepts(ApiKey::ConsumerGroupHeartbeat, 1));
    }

    #[test]
    fn unknown_versions_are_not_supported() {
        assert!(is_supported(ApiKey::Produce, 9));
        assert!(!is_supported(ApiKey::Produce, 13));
        assert!(!is_supported(ApiKey::ApiVersions, 99));
        assert!(!is_supported(ApiKey::JoinGroup, 10));
        assert!(is_supported(ApiKey::SaslHandshake, 0), "raw tokens follow it (connection::raw_sasl_token)");
    }
}
