//! Which coordinator shard owns a key: the same hashing Apache Kafka uses, so a key keeps its
//! shard (and its state on disk) as long as the shard count stays the same.

/// Partitions of Kafka's `__consumer_offsets`, which transactions name (eos-rules 34).
pub const OFFSETS_PARTITIONS: i32 = 50;

/// FindCoordinator's key types.
pub const KEY_TYPE_GROUP: i8 = 0;
pub const KEY_TYPE_TRANSACTION: i8 = 1;

/// Why FindCoordinator refuses `key` of `key_type`, if it does: an unknown key type, or an
/// empty transactional id (eos-rules 4: never a valid transactional id). Both INVALID_REQUEST.
pub fn key_error(key_type: i8, key: &str) -> Option<&'static str> {
    match key_type {
        KEY_TYPE_GROUP => None,
        KEY_TYPE_TRANSACTION if key.is_empty() => Some("empty transactional id"),
        KEY_TYPE_TRANSACTION => None,
        _ => Some("unsupported coordinator key type"),
    }
}

/// Java's `String.hashCode`.
pub fn java_hash(s: &str) -> i32 {
    s.encode_utf16().fold(0i32, |h, c| h.wrapping_mul(31).wrapping_add(c as i32))
}

/// The transaction-coordinator shard of `transactional_id` among `shards`.
pub fn txn_shard(transactional_id: &str, shards: usize) -> usize {
    (java_hash(transactional_id).unsigned_abs() as usize) % shards.max(1)
}

/// Kafka's `Utils.abs(groupId.hashCode) % offsets.topic.num.partitions`.
pub fn offsets_partition(group_id: &str) -> i32 {
    let h = java_hash(group_id);
    let abs = if h == i32::MIN { 0 } else { h.abs() };
    abs % OFFSETS_PARTITIONS
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rule_04_find_coordinator_refuses_an_empty_transactional_id() {
        assert_eq!(key_error(KEY_TYPE_TRANSACTION, ""), Some("empty transactional id"));
        assert_eq!(key_error(KEY_TYPE_TRANSACTION, "t"), None);
        assert_eq!(key_error(KEY_TYPE_GROUP, ""), None, "group ids are checked by the group APIs");
        assert!(key_error(2, "k").is_some());
    }

    #[test]
    fn java_hash_is_string_hash_code() {
        // Values of Java's "…".hashCode().
        assert_eq!(java_hash("my-group"), -1_906_497_762);
        assert_eq!(java_hash("txn-1"), 110_810_510);
        assert_eq!(java_hash("polygenelubricants"), i32::MIN);
        assert_eq!(java_hash(""), 0);
    }

    #[test]
    fn offsets_partition_matches_kafka() {
        assert_eq!(offsets_partition("my-group"), 12);
        // Kafka's Utils.abs maps i32::MIN to 0.
        assert_eq!(offsets_partition("polygenelubricants"), 0);
        assert!((0..OFFSETS_PARTITIONS).contains(&offsets_partition("")));
    }

    #[test]
    fn txn_shard_is_stable_and_in_range() {
        assert_eq!(txn_shard("txn-1", 16), 110_810_510 % 16);
        assert_eq!(txn_shard("x", 0), 0);
    }
}
