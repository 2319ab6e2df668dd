//! Offsets of a consumer group (Kafka's ConsumerGroup.validateOffsetCommit /
//! validateOffsetFetch): commits carry the member id and the member epoch.

use super::ConsumerGroup;
use crate::store::group::GroupError;

impl ConsumerGroup {
    /// OffsetCommit (and TxnOffsetCommit with `transactional`): a member epoch below zero is
    /// accepted while the group has no member (admin client, manual assignment); otherwise the
    /// member must exist (UNKNOWN_MEMBER_ID) and the epoch match (STALE_MEMBER_EPOCH, or
    /// ILLEGAL_GENERATION for TxnOffsetCommit, which has no STALE_MEMBER_EPOCH: Kafka's
    /// OffsetMetadataManager converts it). Unlike a classic group, a consumer group does not
    /// accept a transactional commit without member id and epoch while it has members. A classic
    /// member (mixed mode) commits with generation = its member epoch; a mismatch is
    /// ILLEGAL_GENERATION, as for a classic group (Kafka's validateMemberEpoch).
    pub fn validate_offset_commit(
        &self,
        member_id: &str,
        member_epoch: i32,
        transactional: bool,
    ) -> Result<(), GroupError> {
        if member_epoch < 0 && self.members.is_empty() {
            return Ok(());
        }
        let member = self.members.get(member_id).ok_or(GroupError::UnknownMemberId)?;
        if member_epoch != member.member_epoch {
            // A classic member commits with its generation, which is its member epoch.
            let classic = member.uses_classic_protocol();
            return Err(if transactional || classic {
                GroupError::IllegalGeneration
            } else {
                GroupError::StaleMemberEpoch
            });
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
