//! Which coordinator shard owns a key: the same hashing Apache Kafka uses, so a key keeps its
//! shard (and its state on disk) as long as the shard count stays the same.

/// Partitions of Kafka's `__consumer_offsets`, which transactions name (eos-rules 34).
pub const OFFSETS_PARTITIONS: i32 = 50;

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
