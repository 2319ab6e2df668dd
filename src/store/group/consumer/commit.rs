//! Offsets of a consumer group (Kafka's ConsumerGroup.validateOffsetCommit /
//! validateOffsetFetch): commits carry the member id and the member epoch.

use uuid::Uuid;

use super::ConsumerGroup;
use crate::store::group::GroupError;

impl ConsumerGroup {
    /// OffsetCommit (and TxnOffsetCommit with `transactional`) of `partitions` (topic id when
    /// the topic exists, partition), as Kafka 4.4's validateOffsetCommit: a member epoch below
    /// zero is accepted while the group has no member (admin client, manual assignment);
    /// otherwise the member must exist (UNKNOWN_MEMBER_ID). Its current epoch commits anything;
    /// a newer one is refused; an older one (a commit sent before its last reconciliation
    /// reached it) commits only partitions it has held since that epoch or before (KIP-1251's
    /// assignment epochs; any other partition refuses the whole commit). A refusal is
    /// STALE_MEMBER_EPOCH, or ILLEGAL_GENERATION for TxnOffsetCommit, which has no
    /// STALE_MEMBER_EPOCH (Kafka's OffsetMetadataManager converts it), and for a classic member
    /// in mixed mode, which commits with generation = its member epoch. Unlike a classic group,
    /// a consumer group does not accept a transactional commit without member id and epoch while
    /// it has members.
    pub fn validate_offset_commit(
        &self,
        member_id: &str,
        member_epoch: i32,
        transactional: bool,
        partitions: &[(Option<Uuid>, i32)],
    ) -> Result<(), GroupError> {
        if member_epoch < 0 && self.members.is_empty() {
            return Ok(());
        }
        let member = self.members.get(member_id).ok_or(GroupError::UnknownMemberId)?;
        let refused = || {
            if transactional || member.uses_classic_protocol() {
                GroupError::IllegalGeneration
            } else {
                GroupError::StaleMemberEpoch
            }
        };
        if member_epoch == member.member_epoch {
            return Ok(());
        }
        if member_epoch > member.member_epoch {
            return Err(refused());
        }
        // eos-rules 57 (4.4, KIP-1251): an older epoch for partitions held since then only.
        for &(topic, partition) in partitions {
            match topic.and_then(|t| member.held_since(t, partition)) {
                Some(since) if since <= member_epoch => {}
                _ => return Err(refused()),
            }
        }
        Ok(())
    }

    /// OffsetFetch v9 with a member id and epoch: the member must exist and the epoch match.
    /// Without them (admin client, older versions) the fetch is accepted.
    pub fn validate_offset_fetch(&self, member: Option<(&str, i32)>) -> Result<(), GroupError> {
        let Some((member_id, epoch)) = member else { return Ok(()) };
        if epoch < 0 && member_id.is_empty() {
            return Ok(());
        }
        let m = self.members.get(member_id).ok_or(GroupError::UnknownMemberId)?;
        if m.member_epoch != epoch {
            return Err(GroupError::StaleMemberEpoch);
        }
        Ok(())
    }
}
