//! Apache Kafka 4.4's topic configs (its LogConfig definitions, as `kafka-configs --describe
//! --all` lists them): type, validator, default, broker synonym, and whether kaas honours it.

/// ConfigDef types, with their DescribeConfigs `config_type` ids.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Bool = 1,
    Str = 2,
    Int = 3,
    /// Broker configs only (store::configs::dynamic), as are Class and Password.
    Short = 4,
    Long = 5,
    Double = 6,
    List = 7,
    Class = 8,
    Password = 9,
}

/// ConfigDef validators Kafka attaches to topic configs.
#[derive(Debug, Clone, Copy)]
pub enum Valid {
    Any,
    AtLeast(i64),
    /// Range.between(min, max).
    Between(i64, i64),
    /// compression.gzip.level: 1..=9 or -1.
    GzipLevel,
    OneOf(&'static [&'static str]),
    ListOf(&'static [&'static str]),
    /// `*` or `partition:broker` pairs (throttled replicas).
    Replicas,
}

/// What kaas does with a config.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Honour {
    /// Every valid value takes effect.
    Yes,
    /// Only these values (others are INVALID_CONFIG).
    Only(&'static [&'static str]),
    /// Only Kafka's default value, which is what kaas does anyway.
    DefaultOnly,
}

#[derive(Debug, Clone, Copy)]
pub struct ConfigDef {
    pub name: &'static str,
    pub kind: Kind,
    pub valid: Valid,
    /// Kafka's default.
    pub default: &'static str,
    /// The broker config the default comes from, if Kafka names one.
    pub synonym: Option<&'static str>,
    pub honour: Honour,
    pub doc: &'static str,
}

const LONG_MAX: &str = "9223372036854775807";

const fn def(
    name: &'static str,
    kind: Kind,
    valid: Valid,
    default: &'static str,
    synonym: Option<&'static str>,
    honour: Honour,
    doc: &'static str,
) -> ConfigDef {
    ConfigDef { name, kind, valid, default, synonym, honour, doc }
}

use Honour::{DefaultOnly, Yes};
use Kind::*;
use Valid::*;

/// All 37, in Kafka's (alphabetical) order.
#[rustfmt::skip]
pub const TOPIC_CONFIGS: &[ConfigDef] = &[
    def("cleanup.policy", List, ListOf(&["compact", "delete"]), "delete", Some("log.cleanup.policy"), Yes,
        "delete: retention removes old segments. compact: every record needs a key, and the log cleaner keeps the latest record of each key, drops aborted transactions' records, and removes tombstones and transaction markers delete.retention.ms after they were first cleaned (Kafka's rules, docs/compaction.md); compact,delete does both."),
    def("compression.gzip.level", Int, GzipLevel, "-1", Some("compression.gzip.level"), Yes,
        "gzip level of batches recompressed for compression.type=gzip (-1: gzip's default, 6); the log cleaner recompresses a batch it rewrote at gzip's default level."),
    def("compression.lz4.level", Int, Between(1, 17), "9", Some("compression.lz4.level"), Yes,
        "lz4 level of batches recompressed for compression.type=lz4; the log cleaner recompresses a batch it rewrote at lz4's fast default."),
    def("compression.type", Str, OneOf(&["uncompressed", "zstd", "lz4", "snappy", "gzip", "producer"]), "producer",
        Some("compression.type"), Yes,
        "Compression of stored batches: producer keeps what the producer sent; a codec (or uncompressed) has every batch sent in another one recompressed before it is appended (store::recompress; MESSAGE_TOO_LARGE when it then exceeds max.message.bytes)."),
    def("compression.zstd.level", Int, Between(-131072, 22), "3", Some("compression.zstd.level"), Yes,
        "zstd level of batches recompressed for compression.type=zstd; the log cleaner recompresses a batch it rewrote at level 3."),
    def("delete.retention.ms", Long, AtLeast(0), "86400000", Some("log.cleaner.delete.retention.ms"), Yes,
        "How long the log cleaner keeps a tombstone or a transaction marker after the pass that first found it removable (KIP-534's delete horizon)."),
    def("errors.deadletterqueue.group.enable", Bool, Any, "false", None, DefaultOnly,
        "Share-group dead letter queues; not in kaas."),
    def("file.delete.delay.ms", Long, AtLeast(0), "60000", Some("log.segment.delete.delay.ms"), Yes,
        "Kafka waits this long before it deletes a segment file that left the log, so that reads in progress end first; kaas unlinks the file at once and a read in progress keeps its open descriptor, so every value is met."),
    def("flush.messages", Long, AtLeast(1), LONG_MAX, Some("log.flush.interval.messages"), Yes,
        "Messages between forced fsyncs; kaas fsyncs every acks=all write before answering, which meets any value."),
    def("flush.ms", Long, AtLeast(0), LONG_MAX, None, Yes,
        "Time between forced fsyncs; kaas fsyncs every acks=all write before answering, which meets any value."),
    def("follower.replication.throttled.replicas", List, Replicas, "", None, DefaultOnly,
        "Replication throttling; kaas keeps one copy on the shared disk and does not replicate."),
    def("index.interval.bytes", Int, AtLeast(0), "4096", Some("log.index.interval.bytes"), Yes,
        "Bytes between offset-index entries."),
    def("leader.replication.throttled.replicas", List, Replicas, "", None, DefaultOnly,
        "Replication throttling; kaas keeps one copy on the shared disk and does not replicate."),
    def("local.retention.bytes", Long, AtLeast(-2), "-2", Some("log.local.retention.bytes"), DefaultOnly,
        "Tiered storage local retention; not in kaas."),
    def("local.retention.ms", Long, AtLeast(-2), "-2", Some("log.local.retention.ms"), DefaultOnly,
        "Tiered storage local retention; not in kaas."),
    def("max.compaction.lag.ms", Long, AtLeast(1), LONG_MAX, Some("log.cleaner.max.compaction.lag.ms"), Yes,
        "A record is compacted at the latest this long after it was written (KIP-354): the active segment rolls and the log is cleaned whatever its dirty ratio."),
    def("max.decompressed.message.bytes", Int, AtLeast(1), "2147483639", Some("max.decompressed.message.bytes"),
        DefaultOnly, "Bound on a batch's decompressed size; kaas applies its own fixed bound."),
    def("max.message.bytes", Int, AtLeast(0), "1048588", Some("message.max.bytes"), Yes,
        "Largest record batch a Produce may write to this topic (up to the broker's max_request_bytes)."),
    def("message.timestamp.after.max.ms", Long, AtLeast(0), "3600000", Some("log.message.timestamp.after.max.ms"), Yes,
        "How far ahead of the broker's clock a CreateTime timestamp may be."),
    def("message.timestamp.before.max.ms", Long, AtLeast(0), LONG_MAX, Some("log.message.timestamp.before.max.ms"),
        Yes, "How far behind the broker's clock a CreateTime timestamp may be."),
    def("message.timestamp.type", Str, OneOf(&["CreateTime", "LogAppendTime"]), "CreateTime",
        Some("log.message.timestamp.type"), Yes, "CreateTime keeps the producer's timestamps; LogAppendTime stamps the broker's."),
    def("min.cleanable.dirty.ratio", Double, Between(0, 1), "0.5", Some("log.cleaner.min.cleanable.ratio"), Yes,
        "The log is cleaned once its dirty bytes reach this share of its cleanable bytes."),
    def("min.compaction.lag.ms", Long, AtLeast(0), "0", Some("log.cleaner.min.compaction.lag.ms"), Yes,
        "How long a record stays uncompacted at least: segments holding newer records are not cleaned."),
    def("min.insync.replicas", Int, AtLeast(1), "1", Some("min.insync.replicas"), Honour::Only(&["1"]),
        "Copies an acks=all write needs; kaas keeps exactly one, on the shared disk."),
    def("preallocate", Bool, Any, "false", Some("log.preallocate"), DefaultOnly,
        "Preallocating segment files; kaas does not."),
    def("remote.copy.lag.bytes", Long, AtLeast(-1), "-1", Some("log.remote.copy.lag.bytes"), DefaultOnly,
        "Tiered storage; not in kaas."),
    def("remote.copy.lag.ms", Long, AtLeast(-1), "0", Some("log.remote.copy.lag.ms"), DefaultOnly,
        "Tiered storage; not in kaas."),
    def("remote.log.copy.disable", Bool, Any, "false", None, DefaultOnly, "Tiered storage; not in kaas."),
    def("remote.log.delete.on.disable", Bool, Any, "false", None, DefaultOnly, "Tiered storage; not in kaas."),
    def("remote.storage.enable", Bool, Any, "false", None, DefaultOnly, "Tiered storage; not in kaas."),
    def("retention.bytes", Long, Any, "-1", Some("log.retention.bytes"), Yes,
        "Size a partition may reach before its oldest segments are removed (-1: no limit)."),
    def("retention.ms", Long, AtLeast(-1), "604800000", Some("log.retention.ms"), Yes,
        "Age after which a segment is removed (-1: keep forever)."),
    def("segment.bytes", Int, AtLeast(1_048_576), "1073741824", Some("log.segment.bytes"), Yes,
        "Size at which a new segment file is started."),
    def("segment.index.bytes", Int, AtLeast(4), "10485760", Some("log.index.size.max.bytes"), DefaultOnly,
        "Offset-index file size; kaas sizes its indexes itself."),
    def("segment.jitter.ms", Long, AtLeast(0), "0", None, DefaultOnly, "Jitter of time-based rolling; not in kaas."),
    def("segment.ms", Long, AtLeast(1), "604800000", None, Yes,
        "Time-based rolling, Kafka's rule: an append starts a new segment when its batch's timestamp is more than this past the active segment's first batch's (without timestamps: the segment is older than this)."),
    def("unclean.leader.election.enable", Bool, Any, "false", Some("unclean.leader.election.enable"), DefaultOnly,
        "Electing an out-of-sync replica; kaas has one copy, so never."),
];

/// The definition of `name`, if Kafka has such a topic config.
pub fn find(name: &str) -> Option<&'static ConfigDef> {
    TOPIC_CONFIGS.iter().find(|d| d.name == name)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_table_has_kafkas_37_topic_configs_in_order() {
        assert_eq!(TOPIC_CONFIGS.len(), 37);
        assert!(TOPIC_CONFIGS.windows(2).all(|w| w[0].name < w[1].name));
    }
}
