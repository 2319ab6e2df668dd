//! Topic metadata on disk: `<data>/__cluster/topics/<topic>.json` (write tmp + fsync + rename).

use std::collections::BTreeMap;
use std::fs::File;
use std::path::{Path, PathBuf};

use crate::error_code::ResponseError;
use crate::store::durable::{create_atomic, replace_durably, write_atomic};
use serde::{Deserialize, Serialize};
use thiserror::Error;
use uuid::Uuid;

#[derive(Debug, Error)]
pub enum TopicError {
    #[error("io: {0}")]
    Io(#[from] std::io::Error),
    #[error("bad topic file {0}: {1}")]
    Parse(PathBuf, serde_json::Error),
    /// Kafka's message for the name (`Topic.validate`).
    #[error("{0}")]
    InvalidName(String),
    #[error("invalid partition count {0}")]
    InvalidPartitions(i32),
    /// Another broker sharing the disk created it first.
    #[error("topic {0} already exists")]
    AlreadyExists(String),
}

/// Kafka's KRaft controller writes at most this many records for one user operation
/// (QuorumController.MAX_RECORDS_PER_USER_OP, bounding the controller's BoundedList).
pub const MAX_RECORDS_PER_USER_OP: usize = 10_000;

/// What Kafka's controller answers when a request would exceed MAX_RECORDS_PER_USER_OP
/// (its EventHandlerExceptionInfo turns the BoundedListTooLongException into POLICY_VIOLATION).
pub const EXCESSIVE_BATCH_MESSAGE: &str = "Unable to perform excessively large batch operation.";

/// The partition limit used when `max_partitions` is 0 (auto). Partitions hold no open file
/// (segments are opened through a bounded cache, leases are bytes of one lock file); what bounds
/// them is memory: about 5 KiB each while idle (see `max_partitions` in docs/configuration.md),
/// so this many take about 1 GiB.
pub const DEFAULT_MAX_PARTITIONS: u32 = 200_000;

/// A refusal of a topic creation, with the Kafka error code it is answered with.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum LimitError {
    /// Kafka's ReplicationControlManager: a count of 0 or below -1.
    #[error("Number of partitions was set to an invalid non-positive value.")]
    NonPositive,
    /// The records of one CreateTopics request exceed MAX_RECORDS_PER_USER_OP.
    #[error("{EXCESSIVE_BATCH_MESSAGE}")]
    ExcessiveBatch,
    /// The broker-wide `max_partitions` would be exceeded.
    #[error(
        "Creating {requested} partitions would bring this broker to {total} partitions, above its limit \
         max_partitions = {max}."
    )]
    BrokerLimit { requested: i32, total: u64, max: u32 },
}

impl LimitError {
    pub fn code(&self) -> i16 {
        match self {
            LimitError::NonPositive => ResponseError::InvalidPartitions.code(),
            LimitError::ExcessiveBatch | LimitError::BrokerLimit { .. } => ResponseError::PolicyViolation.code(),
        }
    }
}

/// The partition count a CreateTopics entry asks for: -1 means the broker's default; 0 and other
/// negative values are INVALID_PARTITIONS as in Kafka.
pub fn resolve_partitions(requested: i32, default: i32) -> Result<i32, LimitError> {
    match requested {
        -1 => Ok(default),
        n if n >= 1 => Ok(n),
        _ => Err(LimitError::NonPositive),
    }
}

/// Records Kafka's controller writes for one new topic: a TopicRecord, one PartitionRecord per
/// partition and one ConfigRecord per config.
pub fn creation_records(partitions: i32, configs: usize) -> usize {
    1 + usize::try_from(partitions).unwrap_or(0) + configs
}

/// Kafka's bound on one CreateTopics request: all or none of its topics are created.
pub fn check_request_records(records: usize) -> Result<(), LimitError> {
    if records > MAX_RECORDS_PER_USER_OP {
        Err(LimitError::ExcessiveBatch)
    } else {
        Ok(())
    }
}

/// The broker-wide partition limit: `existing` partitions plus `requested` new ones must not
/// exceed `max`.
pub fn check_broker_limit(existing: u64, requested: i32, max: u32) -> Result<(), LimitError> {
    let total = existing.saturating_add(u64::try_from(requested).unwrap_or(0));
    if total > u64::from(max) {
        Err(LimitError::BrokerLimit { requested, total, max })
    } else {
        Ok(())
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TopicMeta {
    pub name: String,
    pub id: Uuid,
    pub partitions: i32,
    #[serde(default)]
    pub configs: BTreeMap<String, String>,
    /// The live brokers when the topic was created: each partition's first leader is the one
    /// placement picked among them, at leader epoch 0, without a lease file of its own (creating
    /// 100,000 partitions writes one file, not 100,000). Empty in topic files of older kaas.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub placed_on: Vec<i32>,
    /// Partitions added by CreatePartitions, each batch with the brokers live when it was added
    /// (their first leaders are placed among those, as `placed_on` places the first ones).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub added: Vec<AddedPartitions>,
    /// How its partitions are placed; topic files of older kaas have none (`Scheme::Slots`).
    #[serde(default)]
    pub placement: Scheme,
    /// How its partitions' lease files are named (store::leases::partition_lease_path); topic
    /// files of older kaas have none (`LeaseNames::ByName`).
    #[serde(default)]
    pub leases: LeaseNames,
}

/// How a topic's partition lease files are named.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum LeaseNames {
    /// `<topic>-<p>.lease`: topics of older kaas. A broker finishing the deletion of such a
    /// topic removes them by name, so they are not safe against the topic being created again
    /// meanwhile; kept for topics created before `ById`.
    #[default]
    ByName,
    /// `<topic id>/<p>.lease`: a topic created again under the name has other files, which the
    /// deletion of the earlier one never touches.
    ById,
}

/// How a topic's partitions are placed on brokers (store::placement).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Scheme {
    /// Rendezvous hashing of each partition's slot over the live brokers: topic files of kaas
    /// versions that locked partitions by slot (no `placement` field).
    #[default]
    Slots,
    /// Kafka's round-robin: each partition has a preference list over the brokers live at its
    /// creation and is led by the first live one. All live: a topic's leaders differ by at
    /// most one per broker; a broker gone: its partitions spread over the others in turn, and
    /// go back to it when it returns.
    RoundRobin,
}

/// Partitions `from..` (up to the next batch) added to a topic while `placed_on` were live.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AddedPartitions {
    pub from: i32,
    pub placed_on: Vec<i32>,
}

impl TopicMeta {
    /// The brokers live when partition `p` was created (its first leader is placed among them).
    pub fn placed_on_for(&self, p: i32) -> &[i32] {
        self.added.iter().rev().find(|a| a.from <= p).map_or(&self.placed_on, |a| &a.placed_on)
    }
}

/// Kafka's longest topic name (`Topic.MAX_NAME_LENGTH`): its partition directories,
/// `<name>-<partition>`, stay within a file name's 255 bytes.
pub const MAX_NAME_LENGTH: usize = 249;

/// Kafka's legal topic names (`Topic.validate`): 1..=249 chars of [a-zA-Z0-9._-], not "." or
/// "..", refused with Kafka's messages.
pub fn validate_name(name: &str) -> Result<(), TopicError> {
    let why = if name.is_empty() {
        "Topic name is illegal, it can't be empty".to_string()
    } else if name == "." || name == ".." {
        format!("Topic name is invalid: '{name}' is not allowed")
    } else if name.len() > MAX_NAME_LENGTH {
        format!("Topic name is invalid: the length of '{name}' is longer than the max allowed length {MAX_NAME_LENGTH}")
    } else if !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '.' || c == '_' || c == '-') {
        format!(
            "Topic name is invalid: '{name}' contains one or more characters other than ASCII alphanumerics, '.', '_' and '-'"
        )
    } else {
        return Ok(());
    };
    Err(TopicError::InvalidName(why))
}

/// Kafka refuses a topic whose name differs from an existing one only by '.' against '_'
/// (`Topic.hasCollisionChars` / `unifyCollisionChars`: the two would share metric names):
/// the existing topic `name` collides with, if any.
pub fn collision<'a>(name: &str, existing: impl IntoIterator<Item = &'a str>) -> Option<&'a str> {
    if !name.contains(['.', '_']) {
        return None;
    }
    let unified = |n: &str| n.replace('.', "_");
    let wanted = unified(name);
    existing.into_iter().find(|e| *e != name && e.len() == name.len() && unified(e) == wanted)
}

/// Kafka's internal topics. kaas keeps what they hold elsewhere (group offsets and transaction
/// state in the coordinators' sled databases), so they always exist, as they do on a Kafka
/// cluster that has served a group or a transaction, and no log of that name is ever made.
pub const INTERNAL_TOPICS: [&str; 2] = ["__consumer_offsets", "__transaction_state"];

pub fn is_internal(name: &str) -> bool {
    INTERNAL_TOPICS.contains(&name)
}

/// The partitions an internal topic shows: `__consumer_offsets` Kafka's 50 (one per group
/// coordinator shard), `__transaction_state` one per transaction-coordinator shard.
pub fn internal_partitions(name: &str, txn_shards: usize) -> Option<i32> {
    match name {
        "__consumer_offsets" => Some(super::coordinator_key::OFFSETS_PARTITIONS),
        "__transaction_state" => Some(i32::try_from(txn_shards).unwrap_or(i32::MAX)),
        _ => None,
    }
}

/// The topic id of an internal topic: the same on every broker of the cluster and across
/// restarts (Kafka draws one when it creates the topic; kaas never creates them).
pub fn internal_topic_id(cluster_id: &str, name: &str) -> Uuid {
    let mut h: u128 = 0x6c62_272e_07bb_0142_62b8_2175_6295_c58d;
    for b in cluster_id.bytes().chain([0]).chain(name.bytes()) {
        h ^= u128::from(b);
        h = h.wrapping_mul(0x0000_0000_0100_0000_0000_0000_0000_013b);
    }
    Uuid::from_u128(h)
}

pub fn topics_dir(data_dir: &Path) -> PathBuf {
    data_dir.join("__cluster").join("topics")
}

pub fn partition_dir(data_dir: &Path, topic: &str, partition: i32) -> PathBuf {
    data_dir.join("topics").join(format!("{topic}-{partition}"))
}

pub fn load_all(data_dir: &Path) -> Result<Vec<TopicMeta>, TopicError> {
    let dir = topics_dir(data_dir);
    crate::store::durable::create_dir_all_durable(&dir)?;
    let mut out = Vec::new();
    for entry in std::fs::read_dir(&dir)? {
        let path = entry?.path();
        if path.extension().and_then(|e| e.to_str()) != Some("json") {
            continue;
        }
        let text = std::fs::read(&path)?;
        let meta: TopicMeta = serde_json::from_slice(&text).map_err(|e| TopicError::Parse(path.clone(), e))?;
        out.push(meta);
    }
    out.sort_by(|a, b| a.name.cmp(&b.name));
    Ok(out)
}

/// The topic file of `name`, if there is one (None too for a name no topic can have).
pub fn load_one(data_dir: &Path, name: &str) -> Result<Option<TopicMeta>, TopicError> {
    if validate_name(name).is_err() {
        return Ok(None);
    }
    let path = topics_dir(data_dir).join(format!("{name}.json"));
    let text = match std::fs::read(&path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(e.into()),
    };
    serde_json::from_slice(&text).map(Some).map_err(|e| TopicError::Parse(path, e))
}

pub fn save(data_dir: &Path, meta: &TopicMeta) -> Result<(), TopicError> {
    validate_name(&meta.name)?;
    if meta.partitions < 1 {
        return Err(TopicError::InvalidPartitions(meta.partitions));
    }
    let bytes = serde_json::to_vec_pretty(meta).map_err(|e| TopicError::Parse(PathBuf::from(&meta.name), e))?;
    // Two brokers creating one topic at once: one file wins, the other answers TOPIC_ALREADY_EXISTS.
    if !create_atomic(&topics_dir(data_dir).join(format!("{}.json", meta.name)), &bytes)? {
        return Err(TopicError::AlreadyExists(meta.name.clone()));
    }
    Ok(())
}

/// Rewrites the topic file of a topic that exists (CreatePartitions' commit point): durably and
/// atomically (tmp, fsync, rename, fsync dir), so a crash leaves the old file or the new one.
/// Only under [`TopicsLock`], which deletions take too, so a topic deleted meanwhile is not
/// written back.
pub fn replace(data_dir: &Path, meta: &TopicMeta, _lock: &TopicsLock) -> Result<(), TopicError> {
    validate_name(&meta.name)?;
    if meta.partitions < 1 {
        return Err(TopicError::InvalidPartitions(meta.partitions));
    }
    let bytes = serde_json::to_vec_pretty(meta).map_err(|e| TopicError::Parse(PathBuf::from(&meta.name), e))?;
    write_atomic(&topics_dir(data_dir).join(format!("{}.json", meta.name)), &bytes)?;
    Ok(())
}

/// The lock brokers sharing the disk take to change or delete an existing topic file
/// (`__cluster/topics.lock`, an OFD lock dropped with the file, or by the kernel when the
/// process dies): a read, check and rewrite of a topic file is not interleaved with another.
#[derive(Debug)]
pub struct TopicsLock {
    _file: File,
}

/// How long a change waits for another broker's change of the topic files (each takes
/// milliseconds).
pub const TOPICS_LOCK_WAIT: std::time::Duration = std::time::Duration::from_secs(5);

impl TopicsLock {
    /// Takes the lock, waiting up to `wait` for another holder; None when it is still held.
    pub fn acquire(data_dir: &Path, wait: std::time::Duration) -> std::io::Result<Option<TopicsLock>> {
        let path = data_dir.join("__cluster").join("topics.lock");
        crate::store::durable::create_dir_all_durable(path.parent().unwrap_or(Path::new(".")))?;
        let file = std::fs::OpenOptions::new().create(true).truncate(false).read(true).write(true).open(&path)?;
        let deadline = std::time::Instant::now() + wait;
        loop {
            if crate::store::cluster::file_lock::try_lock(&file)? {
                return Ok(Some(TopicsLock { _file: file }));
            }
            if std::time::Instant::now() >= deadline {
                return Ok(None);
            }
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
    }
}

/// What start-up may serve: at most `max_partitions` partitions are started (the rest of a
/// topic left by an older kaas is not served), so the broker's memory stays bounded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StartupBudget {
    partitions_left: u64,
}

impl StartupBudget {
    pub fn new(max_partitions: u32) -> StartupBudget {
        StartupBudget { partitions_left: u64::from(max_partitions) }
    }

    /// How many of a topic's `partitions` are started (the first ones).
    pub fn take_topic(&mut self, partitions: i32) -> i32 {
        let started = u64::try_from(partitions).unwrap_or(0).min(self.partitions_left);
        self.partitions_left -= started;
        i32::try_from(started).unwrap_or(0)
    }
}

/// True when the topic file of `name` exists (a topic created here or by a peer broker on the
/// shared disk).
pub fn exists_on_disk(data_dir: &Path, name: &str) -> bool {
    topics_dir(data_dir).join(format!("{name}.json")).exists()
}

/// The file in a partition directory naming the topic (by id) the directory belongs to.
const PARTITION_METADATA: &str = "partition.metadata";

/// Makes `dir` a directory of the topic with `id` before its partition is opened: created with
/// `partition.metadata` naming the topic when absent; kept when it names this topic (or names
/// none: an older kaas); emptied and made this topic's when it names another (an earlier topic
/// of the same name, deleted, or a creation that failed), and only while `still_current` says
/// this topic is the one its file names now: a broker that stalled holding a deleted topic
/// must not empty the directory of the topic created again under the name. True when it
/// replaced one.
pub fn adopt_partition_dir(
    dir: &Path,
    id: Uuid,
    still_current: impl FnOnce() -> std::io::Result<bool>,
) -> std::io::Result<bool> {
    let file = dir.join(PARTITION_METADATA);
    let replaced = match partition_dir_owner(dir)? {
        Some(owner) if owner == id => return Ok(false),
        // New, or written by an older kaas (whose creation removed left-overs first): this
        // topic's.
        None if !file.exists() => false,
        Some(_) | None => {
            if !still_current()? {
                return Err(std::io::Error::other(format!(
                    "{} belongs to another topic of this name and this one ({}) was deleted",
                    dir.display(),
                    id.simple()
                )));
            }
            std::fs::remove_dir_all(dir)?;
            true
        }
    };
    let wanted = format!("topic_id: {}\n", id.simple());
    crate::store::durable::create_dir_all_durable(dir)?;
    replace_durably(&file, wanted.as_bytes())?;
    Ok(replaced)
}

/// Deletes the topic: its file (from then on no broker serves it) and the directories of the
/// `partitions` whose leaders this broker has stopped. In a cluster each broker removes the
/// partitions it led once its leaders stopped (a peer's leader may still be writing its own);
/// what nobody removed goes when a topic of that name is created again.
pub fn remove(data_dir: &Path, meta: &TopicMeta, partitions: &[i32]) -> Result<(), TopicError> {
    // Not while a peer rewrites the file (CreatePartitions), which would bring it back.
    let lock = TopicsLock::acquire(data_dir, TOPICS_LOCK_WAIT)?;
    if lock.is_none() {
        tracing::warn!(topic = %meta.name, "deleting without the topics lock: another broker held it too long");
    }
    // The delete record first: a peer takes a topic for deleted only by it, never
    // because one listing of the directory missed its file.
    let record = delete_record_path(data_dir, &meta.name, meta.id);
    crate::store::durable::create_dir_all_durable(record.parent().unwrap_or(Path::new(".")))?;
    File::create(&record)?.sync_all()?;
    crate::store::durable::sync_dir(record.parent().unwrap_or(Path::new(".")))?;
    std::fs::remove_file(topics_dir(data_dir).join(format!("{}.json", meta.name)))?;
    drop(lock);
    remove_partitions(data_dir, &meta.name, meta.id, partitions)
}

/// The delete record of topic `name` with id `id`: `__cluster/topics/deleted/<name>.<id>`, the
/// name cut short where the whole would pass a file name's 255 bytes (the id tells topics apart).
fn delete_record_path(data_dir: &Path, name: &str, id: Uuid) -> PathBuf {
    const ROOM: usize = 255 - 1 - 32;
    let shown = name.get(..ROOM).unwrap_or(name);
    topics_dir(data_dir).join("deleted").join(format!("{shown}.{}", id.simple()))
}

/// What became of a topic this broker serves whose file one listing did not show.
#[derive(Debug, PartialEq, Eq)]
pub enum Missing {
    /// Its delete record exists: deleted.
    Deleted,
    /// Its file is there after all (the listing missed it).
    Present,
    /// Replaced by a topic of the same name with another id (deleted, then created again).
    Replaced,
    /// No file and no delete record: nothing is deleted on a guess.
    Unexplained,
}

/// Looks again at topic `meta`, missing from a listing.
pub fn missing(data_dir: &Path, meta: &TopicMeta) -> Result<Missing, TopicError> {
    if delete_record_path(data_dir, &meta.name, meta.id).exists() {
        return Ok(Missing::Deleted);
    }
    Ok(match load_one(data_dir, &meta.name)? {
        Some(m) if m.id == meta.id => Missing::Present,
        Some(_) => Missing::Replaced,
        None => Missing::Unexplained,
    })
}

/// Removes the directories of `partitions` of the topic `topic` with `id` (those that exist and
/// are that topic's: a directory a later topic of the name already took is left to it).
pub fn remove_partitions(data_dir: &Path, topic: &str, id: Uuid, partitions: &[i32]) -> Result<(), TopicError> {
    remove_partitions_if(data_dir, topic, partitions, |owner| owner.is_none_or(|o| o == id))
}

/// Removes the directories of `partitions` of `topic` that are not the topic `id`'s: left-overs
/// of an earlier topic of the name, before partitions of those numbers are added.
pub fn remove_foreign_partitions(data_dir: &Path, topic: &str, id: Uuid, partitions: &[i32]) -> Result<(), TopicError> {
    remove_partitions_if(data_dir, topic, partitions, |owner| owner != Some(id))
}

fn remove_partitions_if(
    data_dir: &Path,
    topic: &str,
    partitions: &[i32],
    remove: impl Fn(Option<Uuid>) -> bool,
) -> Result<(), TopicError> {
    // Every partition is tried (a roll-back leaves as little as it can); the first error is
    // returned. Anything but a directory in a partition's place is nobody's partition: left.
    let mut first_error = None;
    for p in partitions {
        let dir = partition_dir(data_dir, topic, *p);
        let removed = match partition_dir_owner(&dir) {
            Ok(owner) if dir.is_dir() && remove(owner) => std::fs::remove_dir_all(&dir),
            Ok(_) => Ok(()),
            Err(e) => Err(e),
        };
        if let Err(e) = removed {
            first_error.get_or_insert(e);
        }
    }
    first_error.map_or(Ok(()), |e| Err(e.into()))
}

/// The topic id a partition directory names (None: none, an older kaas without topic ids).
fn partition_dir_owner(dir: &Path) -> std::io::Result<Option<Uuid>> {
    match std::fs::read_to_string(dir.join(PARTITION_METADATA)) {
        Ok(text) => Ok(text.trim().strip_prefix("topic_id: ").and_then(|id| Uuid::parse_str(id).ok())),
        Err(e) if matches!(e.kind(), std::io::ErrorKind::NotFound | std::io::ErrorKind::NotADirectory) => Ok(None),
        Err(e) => Err(e),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn internal_topics_are_kafkas_two() {
        assert!(is_internal("__consumer_offsets"));
        assert!(is_internal("__transaction_state"));
        assert!(!is_internal("__cluster_metadata"), "KRaft's log is not a topic clients see");
        assert!(!is_internal("__consumer_offsets2"));
    }

    #[test]
    fn topic_names_follow_kafka_rules() {
        assert!(validate_name("orders.v1_x-2").is_ok());
        assert!(validate_name(&"x".repeat(MAX_NAME_LENGTH)).is_ok());
        for bad in ["", ".", "..", "a b", "ü", &"x".repeat(250)] {
            assert!(validate_name(bad).is_err(), "{bad:?}");
        }
        assert_eq!(validate_name("..").unwrap_err().to_string(), "Topic name is invalid: '..' is not allowed");
    }

    #[test]
    fn a_name_differing_from_a_topic_only_by_dot_against_underscore_collides() {
        let existing = ["a.b", "c_d", "plain", "x.y_z"];
        assert_eq!(collision("a_b", existing), Some("a.b"));
        assert_eq!(collision("c.d", existing), Some("c_d"));
        assert_eq!(collision("x_y.z", existing), Some("x.y_z"));
        // The same name is TOPIC_ALREADY_EXISTS, not a collision; no '.' or '_', no collision.
        assert_eq!(collision("a.b", existing), None);
        assert_eq!(collision("plain", existing), None);
        assert_eq!(collision("a_bc", existing), None);
    }

    #[test]
    fn a_delete_record_name_fits_a_file_name_for_the_longest_topic_names() {
        let id = Uuid::new_v4();
        let long = "y".repeat(MAX_NAME_LENGTH);
        let record = delete_record_path(Path::new("/d"), &long, id);
        let file = record.file_name().unwrap().to_string_lossy().into_owned();
        assert_eq!(file.len(), 255);
        assert!(file.ends_with(&id.simple().to_string()));
        let short = delete_record_path(Path::new("/d"), "orders", id);
        assert_eq!(short.file_name().unwrap().to_string_lossy(), format!("orders.{}", id.simple()));
    }

    #[test]
    fn partition_count_minus_one_is_the_default_and_zero_is_invalid_partitions() {
        assert_eq!(resolve_partitions(-1, 3), Ok(3));
        assert_eq!(resolve_partitions(5, 3), Ok(5));
        for bad in [0, -2, i32::MIN] {
            assert_eq!(resolve_partitions(bad, 3).map_err(|e| e.code()), Err(ResponseError::InvalidPartitions.code()));
        }
    }

    #[test]
    fn a_request_is_bounded_by_kafkas_records_per_user_operation() {
        // Kafka: one TopicRecord + 9,999 PartitionRecords fit; 10,000 partitions do not.
        assert!(check_request_records(creation_records(9_999, 0)).is_ok());
        let e = check_request_records(creation_records(10_000, 0)).unwrap_err();
        assert_eq!(
            (e.code(), e.to_string().as_str()),
            (ResponseError::PolicyViolation.code(), EXCESSIVE_BATCH_MESSAGE)
        );
        assert!(check_request_records(creation_records(9_998, 2)).is_err(), "config records count too");
        assert!(check_request_records(creation_records(1_000_000, 0)).is_err());
    }

    #[test]
    fn the_broker_wide_partition_limit_counts_existing_partitions() {
        assert!(check_broker_limit(90, 10, 100).is_ok());
        let e = check_broker_limit(90, 11, 100).unwrap_err();
        assert_eq!(e, LimitError::BrokerLimit { requested: 11, total: 101, max: 100 });
        assert_eq!(e.code(), ResponseError::PolicyViolation.code());
        assert!(check_broker_limit(0, i32::MAX, u32::MAX).is_ok());
    }

    #[test]
    fn start_up_starts_at_most_max_partitions() {
        let mut b = StartupBudget::new(10);
        assert_eq!((b.take_topic(4), b.take_topic(1_000_000), b.take_topic(3)), (4, 6, 0));
        assert_eq!(b.take_topic(-1), 0);
    }

    #[test]
    fn a_partition_directory_of_an_earlier_topic_of_the_name_is_replaced_at_open() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("t-0");
        let (old, new) = (Uuid::new_v4(), Uuid::new_v4());
        assert!(!adopt_partition_dir(&p, old, || Ok(true)).unwrap(), "a new directory");
        std::fs::write(p.join("00000000000000000000.log"), b"old data").unwrap();
        assert!(!adopt_partition_dir(&p, old, || Ok(true)).unwrap(), "its own");
        assert!(p.join("00000000000000000000.log").exists());
        assert!(adopt_partition_dir(&p, new, || Ok(true)).unwrap(), "another topic's");
        assert!(!p.join("00000000000000000000.log").exists());
        assert!(!adopt_partition_dir(&p, new, || Ok(true)).unwrap());
        // A broker that stalled holding the deleted topic leaves the new one's directory alone.
        std::fs::write(p.join("00000000000000000000.log"), b"new data").unwrap();
        assert!(adopt_partition_dir(&p, old, || Ok(false)).is_err());
        assert_eq!(std::fs::read(p.join("00000000000000000000.log")).unwrap(), b"new data");
        // An older kaas wrote no partition.metadata: adopted as it is.
        let legacy = dir.path().join("t-1");
        std::fs::create_dir_all(&legacy).unwrap();
        std::fs::write(legacy.join("00000000000000000000.log"), b"data").unwrap();
        assert!(!adopt_partition_dir(&legacy, new, || Ok(true)).unwrap());
        assert!(legacy.join("00000000000000000000.log").exists());
    }

    #[test]
    fn a_topic_is_deleted_only_by_its_delete_record() {
        let dir = tempfile::tempdir().unwrap();
        let meta = meta_t();
        save(dir.path(), &meta).unwrap();
        assert_eq!(missing(dir.path(), &meta).unwrap(), Missing::Present, "a listing that missed it");
        std::fs::remove_file(topics_dir(dir.path()).join("t.json")).unwrap();
        assert_eq!(missing(dir.path(), &meta).unwrap(), Missing::Unexplained, "gone without a record");
        save(dir.path(), &meta).unwrap();
        remove(dir.path(), &meta, &[]).unwrap();
        assert_eq!(missing(dir.path(), &meta).unwrap(), Missing::Deleted);
        let again = meta_t();
        save(dir.path(), &again).unwrap();
        assert_eq!(missing(dir.path(), &again).unwrap(), Missing::Present, "the old record is not the new topic's");
        assert_eq!(load_all(dir.path()).unwrap().len(), 1, "delete records are not topics");
    }

    fn meta_t() -> TopicMeta {
        TopicMeta {
            name: "t".into(),
            id: Uuid::new_v4(),
            partitions: 3,
            configs: BTreeMap::new(),
            placed_on: vec![],
            added: vec![],
            placement: Scheme::RoundRobin,
            leases: LeaseNames::ById,
        }
    }

    #[test]
    fn one_topic_is_read_by_name_and_no_name_escapes_the_directory() {
        let dir = tempfile::tempdir().unwrap();
        let meta = meta_t();
        assert_eq!(load_one(dir.path(), "t").unwrap(), None);
        save(dir.path(), &meta).unwrap();
        assert_eq!(load_one(dir.path(), "t").unwrap(), Some(meta));
        std::fs::write(dir.path().join("secret.json"), b"{}").unwrap();
        assert_eq!(load_one(dir.path(), "../secret").unwrap(), None);
        assert_eq!(load_one(dir.path(), "").unwrap(), None);
    }

    #[test]
    fn topics_round_trip_and_remove() {
        let dir = tempfile::tempdir().unwrap();
        let meta = meta_t();
        assert!(!exists_on_disk(dir.path(), "t"));
        save(dir.path(), &meta).unwrap();
        assert!(exists_on_disk(dir.path(), "t"));
        assert_eq!(load_all(dir.path()).unwrap(), vec![meta.clone()]);
        std::fs::create_dir_all(partition_dir(dir.path(), "t", 1)).unwrap();
        remove(dir.path(), &meta, &[0, 1, 2]).unwrap();
        assert!(load_all(dir.path()).unwrap().is_empty());
        assert!(!partition_dir(dir.path(), "t", 1).exists());
    }

    #[test]
    fn replacing_a_topic_file_keeps_one_file_with_the_new_configs() {
        let dir = tempfile::tempdir().unwrap();
        let mut meta = meta_t();
        save(dir.path(), &meta).unwrap();
        meta.configs.insert("retention.ms".into(), "1000".into());
        let lock = TopicsLock::acquire(dir.path(), TOPICS_LOCK_WAIT).unwrap().unwrap();
        replace(dir.path(), &meta, &lock).unwrap();
        assert_eq!(load_all(dir.path()).unwrap(), vec![meta]);
        assert_eq!(std::fs::read_dir(topics_dir(dir.path())).unwrap().count(), 1, "no temporary file left");
    }

    #[test]
    fn a_topic_file_is_replaced_whole_under_the_topics_lock() {
        let dir = tempfile::tempdir().unwrap();
        let meta = meta_t();
        save(dir.path(), &meta).unwrap();
        let lock = TopicsLock::acquire(dir.path(), TOPICS_LOCK_WAIT).unwrap().unwrap();
        // A second holder (another broker: another open file) waits, then gives up.
        assert!(TopicsLock::acquire(dir.path(), std::time::Duration::from_millis(20)).unwrap().is_none());
        let grown = TopicMeta { partitions: 5, added: vec![AddedPartitions { from: 3, placed_on: vec![0] }], ..meta };
        replace(dir.path(), &grown, &lock).unwrap();
        drop(lock);
        assert_eq!(load_one(dir.path(), "t").unwrap(), Some(grown.clone()));
        assert!(TopicsLock::acquire(dir.path(), TOPICS_LOCK_WAIT).unwrap().is_some(), "released with its holder");
        let files: Vec<_> =
            std::fs::read_dir(topics_dir(dir.path())).unwrap().map(|e| e.unwrap().file_name()).collect();
        assert_eq!(files.len(), 1, "no temporary file left: {files:?}");
    }

    #[test]
    fn topic_files_of_older_kaas_have_no_added_partitions() {
        let old = br#"{"name":"t","id":"67e55044-10b1-426f-9247-bb680e5fe0c8","partitions":2,"placed_on":[0,1]}"#;
        let meta: TopicMeta = serde_json::from_slice(old).unwrap();
        assert!(meta.added.is_empty());
        assert_eq!(meta.placed_on_for(1), &[0, 1]);
    }
}
