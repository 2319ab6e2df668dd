//! Online migration between the classic and the consumer group protocols (KIP-848, Apache Kafka
//! 4.x's GroupMetadataManager: getOrMaybeCreateConsumerGroup, maybeDeleteEmptyClassicGroup,
//! validateOnlineUpgrade, classicGroupJoin, maybeDeleteEmptyConsumerGroup) and
//! `group.consumer.migration.policy` (Kafka's ConsumerGroupMigrationPolicy).
//!
//! The rules, as Kafka applies them:
//!
//! 1. A ConsumerGroupHeartbeat join (member epoch 0) on an **Empty classic group** replaces it by
//!    a new consumer group (group epoch 0), whatever the policy: Kafka writes a tombstone of the
//!    classic group's metadata only, so its committed offsets stay (`maybeDeleteEmptyClassicGroup`).
//! 2. On a **classic group with members** the join converts the group (`convertToConsumerGroup`)
//!    only when `validateOnlineUpgrade` passes: the policy enables upgrades, the group's protocol
//!    type is `consumer`, and it has no more members than `group.consumer.max.size`. Otherwise,
//!    and for any heartbeat that is not a join, GROUP_ID_NOT_FOUND "Group <id> is not a consumer
//!    group.".
//! 3. A classic JoinGroup on an **Empty consumer group** replaces it by a classic group, whatever
//!    the policy (`maybeDeleteEmptyConsumerGroup`); offsets stay.
//! 4. A classic JoinGroup on a **consumer group with members** joins it as a classic member
//!    (`classicGroupJoinToConsumerGroup`), the policy is not consulted; a member whose protocol
//!    type is not `consumer` (or whose protocols the group's classic members do not share) gets
//!    INCONSISTENT_GROUP_PROTOCOL.
//! 5. Downgrade (`validateOnlineDowngradeWithFencedMember`): when the last consumer-protocol
//!    member leaves a group whose other members are classic ones, the policy enables downgrades
//!    and the classic group max size allows, the group becomes a classic group and rebalances.
//!
//! Rules 1-5 are Kafka's; the classic members of rules 2, 4 and 5 are served by
//! [`super::mixed_mode`] and [`super::consumer::classic_members`].

use super::{Group, GroupState};

/// Kafka's `group.consumer.migration.policy`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum MigrationPolicy {
    #[default]
    Bidirectional,
    Upgrade,
    Downgrade,
    Disabled,
}

impl MigrationPolicy {
    /// Kafka's values, case-insensitive (ConsumerGroupMigrationPolicy.parse); None for another.
    pub fn parse(name: &str) -> Option<MigrationPolicy> {
        match name.to_ascii_lowercase().as_str() {
            "bidirectional" => Some(MigrationPolicy::Bidirectional),
            "upgrade" => Some(MigrationPolicy::Upgrade),
            "downgrade" => Some(MigrationPolicy::Downgrade),
            "disabled" => Some(MigrationPolicy::Disabled),
            _ => None,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            MigrationPolicy::Bidirectional => "bidirectional",
            MigrationPolicy::Upgrade => "upgrade",
            MigrationPolicy::Downgrade => "downgrade",
            MigrationPolicy::Disabled => "disabled",
        }
    }

    pub fn is_upgrade_enabled(self) -> bool {
        matches!(self, MigrationPolicy::Bidirectional | MigrationPolicy::Upgrade)
    }

    pub fn is_downgrade_enabled(self) -> bool {
        matches!(self, MigrationPolicy::Bidirectional | MigrationPolicy::Downgrade)
    }
}

/// Why a classic group with members does not become a consumer group (Kafka's
/// validateOnlineUpgrade).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum UpgradeRefused {
    Disabled,
    NotConsumerProtocol,
    TooManyMembers,
}

impl UpgradeRefused {
    pub fn reason(self) -> &'static str {
        match self {
            UpgradeRefused::Disabled => "online upgrade is disabled",
            UpgradeRefused::NotConsumerProtocol => "the group does not use the consumer embedded protocol",
            UpgradeRefused::TooManyMembers => "the group size exceeds the consumer group maximum size",
        }
    }
}

/// What a ConsumerGroupHeartbeat join does to the classic group of its id.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OnConsumerJoin {
    /// Rule 1: replaced by a new consumer group; offsets kept.
    ReplaceEmpty,
    /// Rule 2 refused: GROUP_ID_NOT_FOUND.
    Refuse(UpgradeRefused),
    /// Rule 2: converted to a consumer group with its members (Kafka's convertToConsumerGroup).
    Upgrade,
}

impl Group {
    /// Kafka's ClassicGroup.isEmpty (the Empty state) as maybeDeleteEmptyClassicGroup reads it.
    pub fn is_empty_classic(&self) -> bool {
        self.state == GroupState::Empty && self.members.is_empty()
    }

    /// Kafka's ClassicGroup.usesConsumerGroupProtocol.
    pub fn uses_consumer_protocol(&self) -> bool {
        self.protocol_type.as_deref() == Some("consumer")
    }

    /// Rule 1 then Kafka's validateOnlineUpgrade (rule 2).
    pub fn on_consumer_join(&self, policy: MigrationPolicy, consumer_max_size: usize) -> OnConsumerJoin {
        if self.is_empty_classic() {
            return OnConsumerJoin::ReplaceEmpty;
        }
        if !policy.is_upgrade_enabled() {
            OnConsumerJoin::Refuse(UpgradeRefused::Disabled)
        } else if !self.uses_consumer_protocol() {
            OnConsumerJoin::Refuse(UpgradeRefused::NotConsumerProtocol)
        } else if self.members.len() > consumer_max_size {
            OnConsumerJoin::Refuse(UpgradeRefused::TooManyMembers)
        } else {
            OnConsumerJoin::Upgrade
        }
    }

    /// The classic group that replaces this one when it becomes a consumer group (rule 1) or a
    /// consumer group becomes classic (rule 3): Kafka deletes the group's metadata and starts
    /// the new one from scratch, generation 0; the committed offsets (kept apart by Kafka's
    /// OffsetMetadataManager) stay, and so do pending transactional offsets.
    pub fn reset_membership(&mut self) {
        let offsets = std::mem::take(&mut self.offsets);
        *self = Group::new(self.group_id.clone(), self.config.clone());
        self.offsets = offsets;
        // No membership kept any more: written as such.
        self.stored_changed = true;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::group::{GroupConfig, JoinRequest, OffsetCommit};

    fn join(protocol_type: &str) -> JoinRequest {
        JoinRequest {
            version: 3,
            member_id: String::new(),
            group_instance_id: None,
            client_id: "c".into(),
            client_host: "/h".into(),
            session_timeout_ms: 10_000,
            rebalance_timeout_ms: 10_000,
            protocol_type: protocol_type.into(),
            protocols: vec![("range".into(), vec![0, 1])],
        }
    }

    fn group_with_member(protocol_type: &str) -> Group {
        let mut g = Group::new("g", GroupConfig::default());
        g.join(0, 1, join(protocol_type), || "m1".into());
        assert_eq!(g.members().len(), 1);
        g
    }

    #[test]
    fn migration_policy_parses_kafkas_values_case_insensitively() {
        assert_eq!(MigrationPolicy::parse("BIDIRECTIONAL"), Some(MigrationPolicy::Bidirectional));
        assert_eq!(MigrationPolicy::parse("upgrade"), Some(MigrationPolicy::Upgrade));
        assert_eq!(MigrationPolicy::parse("Downgrade"), Some(MigrationPolicy::Downgrade));
        assert_eq!(MigrationPolicy::parse("disabled"), Some(MigrationPolicy::Disabled));
        assert_eq!(MigrationPolicy::parse("both"), None);
        assert_eq!(MigrationPolicy::default(), MigrationPolicy::Bidirectional);
        let enabled: Vec<(bool, bool)> = ["bidirectional", "upgrade", "downgrade", "disabled"]
            .iter()
            .filter_map(|n| MigrationPolicy::parse(n))
            .map(|p| (p.is_upgrade_enabled(), p.is_downgrade_enabled()))
            .collect();
        assert_eq!(enabled, [(true, true), (true, false), (false, true), (false, false)]);
    }

    #[test]
    fn rule_1_an_empty_classic_group_is_replaced_whatever_the_policy() {
        let g = Group::new("g", GroupConfig::default());
        for p in ["bidirectional", "upgrade", "downgrade", "disabled"].iter().filter_map(|n| MigrationPolicy::parse(n))
        {
            assert_eq!(g.on_consumer_join(p, 10), OnConsumerJoin::ReplaceEmpty);
        }
    }

    #[test]
    fn rule_2_a_classic_group_with_members_upgrades_only_when_the_policy_allows() {
        let g = group_with_member("consumer");
        assert_eq!(g.on_consumer_join(MigrationPolicy::Disabled, 10), OnConsumerJoin::Refuse(UpgradeRefused::Disabled));
        assert_eq!(
            g.on_consumer_join(MigrationPolicy::Downgrade, 10),
            OnConsumerJoin::Refuse(UpgradeRefused::Disabled)
        );
    }

    #[test]
    fn rule_2_only_a_group_of_the_consumer_protocol_type_upgrades() {
        let g = group_with_member("connect");
        assert_eq!(
            g.on_consumer_join(MigrationPolicy::Bidirectional, 10),
            OnConsumerJoin::Refuse(UpgradeRefused::NotConsumerProtocol)
        );
    }

    #[test]
    fn rule_2_a_group_larger_than_the_consumer_group_max_size_does_not_upgrade() {
        let g = group_with_member("consumer");
        assert_eq!(
            g.on_consumer_join(MigrationPolicy::Upgrade, 0),
            OnConsumerJoin::Refuse(UpgradeRefused::TooManyMembers)
        );
    }

    #[test]
    fn rule_2_an_eligible_group_with_members_upgrades() {
        let g = group_with_member("consumer");
        assert_eq!(g.on_consumer_join(MigrationPolicy::Bidirectional, 10), OnConsumerJoin::Upgrade);
        assert_eq!(g.on_consumer_join(MigrationPolicy::Upgrade, 1), OnConsumerJoin::Upgrade);
    }

    #[test]
    fn rules_1_and_3_a_replaced_group_keeps_its_offsets_and_starts_from_generation_0() {
        let mut g = group_with_member("consumer");
        g.store_offsets(
            0,
            vec![OffsetCommit {
                topic: "t".into(),
                partition: 0,
                offset: 7,
                leader_epoch: -1,
                metadata: String::new(),
            }],
        );
        g.reset_membership();
        assert_eq!((g.generation_id(), g.protocol_type(), g.members().len()), (0, None, 0));
        assert!(g.is_empty_classic());
        let fetched = g.fetch_offsets(Some(&[("t".to_string(), 0)]), false);
        assert_eq!(fetched[0].offset, 7);
    }
}
