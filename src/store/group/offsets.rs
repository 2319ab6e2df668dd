//! Committed offsets: OffsetCommit (Kafka's validateOffsetCommit), OffsetFetch, OffsetDelete
//! (KIP-496) and offset expiration (offsets.retention.minutes, KIP-211).

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};

use serde::{Deserialize, Serialize};

use super::txn_commit::PendingTxn;
use super::{Group, GroupError, GroupState};

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct OffsetEntry {
    pub offset: i64,
    pub leader_epoch: i32,
    pub metadata: String,
    pub commit_timestamp_ms: u64,
    /// Order of the commit (stands in for Kafka's log append offset).
    pub seq: u64,
}

pub type PartitionOffsets = BTreeMap<String, BTreeMap<i32, OffsetEntry>>;

/// Persistent offset state: committed offsets and pending transactional offsets.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct OffsetStore {
    pub committed: PartitionOffsets,
    pub pending_txn: BTreeMap<i64, PendingTxn>,
    pub next_seq: u64,
}

#[derive(Debug, Clone, PartialEq)]
pub struct OffsetCommit {
    pub topic: String,
    pub partition: i32,
    pub offset: i64,
    pub leader_epoch: i32,
    pub metadata: String,
}

#[derive(Debug, Clone, PartialEq)]
pub struct FetchedOffset {
    pub topic: String,
    pub partition: i32,
    /// -1 when none.
    pub offset: i64,
    /// -1 when none.
    pub leader_epoch: i32,
    pub metadata: String,
    pub error: Option<GroupError>,
}

impl Group {
    /// Kafka's validateOffsetCommit; returns the committing member's index, if any.
    pub(super) fn validate_offset_commit(
        &self,
        generation: i32,
        member_id: &str,
        inst: Option<&str>,
        transactional: bool,
    ) -> Result<Option<usize>, GroupError> {
        if self.state == GroupState::Dead {
            return Err(GroupError::CoordinatorNotAvailable);
        }
        if generation < 0 && self.state == GroupState::Empty {
            return Ok(None); // standalone consumer / admin client
        }
        let mut idx = None;
        if generation >= 0 || !member_id.is_empty() || inst.is_some() {
            idx = Some(self.validate_member(member_id, inst)?);
            if generation != self.generation_id {
                return Err(GroupError::IllegalGeneration);
            }
        } else if !transactional && self.state != GroupState::Empty {
            return Err(GroupError::UnknownMemberId);
        }
        if !transactional && self.state == GroupState::CompletingRebalance {
            return Err(GroupError::RebalanceInProgress);
        }
        Ok(idx)
    }

    pub(super) fn entries(&mut self, now_ms: u64, offsets: Vec<OffsetCommit>) -> Vec<(String, i32, OffsetEntry)> {
        let mut v = Vec::with_capacity(offsets.len());
        for o in offsets {
            let seq = self.offsets.next_seq;
            self.offsets.next_seq += 1;
            let e = OffsetEntry {
                offset: o.offset,
                leader_epoch: o.leader_epoch,
                metadata: o.metadata,
                commit_timestamp_ms: now_ms,
                seq,
            };
            v.push((o.topic, o.partition, e));
        }
        v
    }

    /// OffsetCommit. Group-level checks only (metadata size etc. is the caller's business).
    /// A successful member commit also counts as a heartbeat, as in Kafka.
    pub fn commit_offsets(
        &mut self,
        now_ms: u64,
        generation_id: i32,
        member_id: &str,
        group_instance_id: Option<&str>,
        offsets: Vec<OffsetCommit>,
    ) -> Result<(), GroupError> {
        let idx = self.validate_offset_commit(generation_id, member_id, group_instance_id, false)?;
        if let Some(i) = idx {
            self.members[i].touch(now_ms);
        }
        self.store_offsets(now_ms, offsets);
        Ok(())
    }

    /// Stores committed offsets someone else validated (a consumer-protocol group's commit).
    pub fn store_offsets(&mut self, now_ms: u64, offsets: Vec<OffsetCommit>) {
        for (t, p, e) in self.entries(now_ms, offsets) {
            self.offsets.committed.entry(t).or_default().insert(p, e);
        }
    }

    /// OffsetFetch. `partitions: None` = all committed partitions.
    pub fn fetch_offsets(&self, partitions: Option<&[(String, i32)]>, require_stable: bool) -> Vec<FetchedOffset> {
        let wanted: Vec<(String, i32)> = match partitions {
            Some(p) => p.to_vec(),
            None => {
                let c = &self.offsets.committed;
                c.iter().flat_map(|(t, m)| m.keys().map(move |p| (t.clone(), *p))).collect()
            }
        };
        let fetch = |(topic, partition): (String, i32)| {
            let entry = self.offsets.committed.get(&topic).and_then(|m| m.get(&partition));
            let unstable = require_stable && self.has_pending_txn_offset(&topic, partition);
            match entry {
                Some(e) if !unstable => FetchedOffset {
                    offset: e.offset,
                    leader_epoch: e.leader_epoch,
                    metadata: e.metadata.clone(),
                    error: None,
                    topic,
                    partition,
                },
                _ => FetchedOffset {
                    offset: -1,
                    leader_epoch: -1,
                    metadata: String::new(),
                    error: unstable.then_some(GroupError::UnstableOffsetCommit),
                    topic,
                    partition,
                },
            }
        };
        wanted.into_iter().map(fetch).collect()
    }

    /// OffsetDelete (KIP-496). `decode_topics` parses one member's protocol metadata into its
    /// subscribed topics (None = unparseable: treated as subscribed to everything). Only
    /// consulted for non-empty "consumer" groups; other non-empty groups → NON_EMPTY_GROUP.
    pub fn delete_offsets(
        &mut self,
        partitions: &[(String, i32)],
        decode_topics: impl Fn(&[u8]) -> Option<Vec<String>>,
    ) -> Result<Vec<(String, i32, Option<GroupError>)>, GroupError> {
        if self.state == GroupState::Dead {
            return Err(GroupError::GroupIdNotFound);
        }
        let mut subscribed: Option<BTreeSet<String>> = Some(BTreeSet::new()); // None = all
        if self.state != GroupState::Empty {
            if self.protocol_type.as_deref() != Some("consumer") {
                return Err(GroupError::NonEmptyGroup);
            }
            for m in &self.members {
                let proto = self.protocol_name.as_deref();
                let meta = proto.map(|p| m.metadata(p)).or_else(|| m.protocols.first().map(|(_, md)| md.clone()));
                match (decode_topics(&meta.unwrap_or_default()), subscribed.as_mut()) {
                    (Some(topics), Some(set)) => set.extend(topics),
                    _ => subscribed = None,
                }
            }
        }
        let mut results = Vec::new();
        for (topic, partition) in partitions {
            let is_sub = subscribed.as_ref().is_none_or(|s| s.contains(topic));
            if is_sub {
                results.push((topic.clone(), *partition, Some(GroupError::GroupSubscribedToTopic)));
                continue;
            }
            if let Some(m) = self.offsets.committed.get_mut(topic) {
                m.remove(partition);
                if m.is_empty() {
                    self.offsets.committed.remove(topic);
                }
            }
            for p in self.offsets.pending_txn.values_mut() {
                if let Some(m) = p.offsets.get_mut(topic) {
                    m.remove(partition);
                }
            }
            results.push((topic.clone(), *partition, None));
        }
        Ok(results)
    }

    /// Kafka's offset expiration (offsets.retention.minutes, KIP-211): while the group is Empty,
    /// a committed offset expires `offsets_retention_ms` after its commit. Pending transactional
    /// offsets never expire here (the transaction coordinator ends them). Returns how many expired.
    pub fn expire_offsets(&mut self, now_ms: u64) -> usize {
        if self.state != GroupState::Empty {
            return 0;
        }
        let retention = self.config.offsets_retention_ms;
        let mut expired = 0;
        for partitions in self.offsets.committed.values_mut() {
            let before = partitions.len();
            partitions.retain(|_, e| e.commit_timestamp_ms.saturating_add(retention) > now_ms);
            expired += before - partitions.len();
        }
        self.offsets.committed.retain(|_, partitions| !partitions.is_empty());
        expired
    }
}

/// The partitions of a commit that the cluster does not have, given each requested topic's
/// partition count (absent: no such topic). eos-rules 56: Apache Kafka answers them
/// UNKNOWN_TOPIC_OR_PARTITION before the group coordinator sees the commit (KafkaApis' metadata
/// check), for OffsetCommit and TxnOffsetCommit alike, and commits the others.
pub fn unknown_partitions<'a>(
    wanted: impl IntoIterator<Item = (&'a str, i32)>,
    partition_counts: &HashMap<&str, i32>,
) -> HashSet<(String, i32)> {
    wanted
        .into_iter()
        .filter(|(topic, p)| !partition_counts.get(topic).is_some_and(|n| (0..*n).contains(p)))
        .map(|(topic, p)| (topic.to_string(), p))
        .collect()
}

#[cfg(test)]
mod commit_tests {
    use super::*;

    #[test]
    fn rule_56_unknown_topics_and_partitions_are_picked_out_of_a_commit() {
        let counts = HashMap::from([("t", 2)]);
        let wanted = [("t", 0), ("t", 1), ("t", 2), ("t", -1), ("gone", 0)];
        let unknown = unknown_partitions(wanted, &counts);
        let expected: HashSet<(String, i32)> =
            [("t", 2), ("t", -1), ("gone", 0)].into_iter().map(|(t, p)| (t.to_string(), p)).collect();
        assert_eq!(unknown, expected);
        assert!(unknown_partitions([("t", 1)], &counts).is_empty());
    }
}
