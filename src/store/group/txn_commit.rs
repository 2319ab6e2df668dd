//! TxnOffsetCommit (eos-rules 56-59): offsets committed inside a transaction stay pending for
//! their producer until the transaction's marker reaches the group's `__consumer_offsets`
//! partition; COMMIT makes them the committed offsets, ABORT drops them.

use serde::{Deserialize, Serialize};

use super::offsets::PartitionOffsets;
use super::{Group, GroupError, OffsetCommit};

/// Who a TxnOffsetCommit says it is: (generation, member id, group instance id). eos-rules 57:
/// from v3 on the request carries them and the coordinator checks them; before v3 it does not,
/// and Kafka commits as an unknown member of any generation (-1, "", none).
pub fn txn_commit_member(
    request_version: i16,
    generation_id: i32,
    member_id: &str,
    group_instance_id: Option<&str>,
) -> (i32, String, Option<String>) {
    if request_version >= 3 {
        (generation_id, member_id.to_string(), group_instance_id.map(str::to_string))
    } else {
        (-1, String::new(), None)
    }
}

/// The offsets one producer committed in its open transaction.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct PendingTxn {
    pub producer_epoch: i16,
    pub offsets: PartitionOffsets,
}

impl Group {
    /// TxnOffsetCommit: offsets stay pending for `producer_id` until [`Group::complete_txn`].
    /// Producer-epoch fencing is the transaction layer's job; the epoch is only recorded.
    #[allow(clippy::too_many_arguments)]
    pub fn txn_offset_commit(
        &mut self,
        now_ms: u64,
        producer_id: i64,
        producer_epoch: i16,
        generation_id: i32,
        member_id: &str,
        group_instance_id: Option<&str>,
        offsets: Vec<OffsetCommit>,
    ) -> Result<(), GroupError> {
        // eos-rules 57: member, generation and static-member fencing (the caller passes
        // generation -1 and no member below v3, which skips them).
        self.validate_offset_commit(generation_id, member_id, group_instance_id, true)?;
        self.store_txn_offsets(now_ms, producer_id, producer_epoch, offsets);
        Ok(())
    }

    /// Pending transactional offsets someone else validated (a consumer-protocol group's).
    pub fn store_txn_offsets(
        &mut self,
        now_ms: u64,
        producer_id: i64,
        producer_epoch: i16,
        offsets: Vec<OffsetCommit>,
    ) {
        let entries = self.entries(now_ms, offsets);
        let pending = self.offsets.pending_txn.entry(producer_id).or_default();
        pending.producer_epoch = producer_epoch;
        for (t, p, e) in entries {
            pending.offsets.entry(t).or_default().insert(p, e);
        }
    }

    /// eos-rules 59: the transaction marker. Commit moves the producer's pending offsets into the committed
    /// ones (unless a later plain commit already overwrote a partition); abort drops them.
    /// Returns whether the producer had pending offsets.
    pub fn complete_txn(&mut self, producer_id: i64, commit: bool) -> bool {
        let Some(pending) = self.offsets.pending_txn.remove(&producer_id) else {
            return false;
        };
        if commit {
            for (t, parts) in pending.offsets {
                let committed = self.offsets.committed.entry(t).or_default();
                for (p, e) in parts {
                    if committed.get(&p).is_none_or(|c| c.seq < e.seq) {
                        committed.insert(p, e);
                    }
                }
            }
        }
        true
    }

    /// eos-rules 59: a pending transactional offset makes OffsetFetch with RequireStable answer
    /// UNSTABLE_OFFSET_COMMIT for the partition.
    pub fn has_pending_txn_offset(&self, topic: &str, partition: i32) -> bool {
        let has = |p: &PendingTxn| p.offsets.get(topic).is_some_and(|m| m.contains_key(&partition));
        self.offsets.pending_txn.values().any(has)
    }
}
