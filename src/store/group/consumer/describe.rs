//! ConsumerGroupDescribe, and the consumer group's state as ListGroups and the describe APIs
//! name it (Kafka's ConsumerGroup.ConsumerGroupState).

use super::{Assignment, ConsumerGroup, ConsumerMember};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ConsumerGroupState {
    Empty,
    Assigning,
    Reconciling,
    Stable,
}

impl ConsumerGroupState {
    pub fn name(self) -> &'static str {
        match self {
            ConsumerGroupState::Empty => "Empty",
            ConsumerGroupState::Assigning => "Assigning",
            ConsumerGroupState::Reconciling => "Reconciling",
            ConsumerGroupState::Stable => "Stable",
        }
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct DescribedMember {
    pub member: ConsumerMember,
    pub target: Assignment,
}

#[derive(Debug, Clone, PartialEq)]
pub struct DescribedConsumerGroup {
    pub group_id: String,
    pub state: ConsumerGroupState,
    pub group_epoch: i32,
    pub assignment_epoch: i32,
    pub assignor: String,
    pub members: Vec<DescribedMember>,
}

impl ConsumerGroup {
    /// Empty without members; Assigning while the target is behind the group epoch;
    /// Reconciling while a member has not reached its target; else Stable.
    pub fn state(&self) -> ConsumerGroupState {
        if self.members.is_empty() {
            ConsumerGroupState::Empty
        } else if self.group_epoch > self.assignment_epoch {
            ConsumerGroupState::Assigning
        } else if self.members.values().any(|m| !m.is_reconciled_to(self.assignment_epoch)) {
            ConsumerGroupState::Reconciling
        } else {
            ConsumerGroupState::Stable
        }
    }

    /// `default_assignor`: the name reported when no assignment was computed yet.
    pub fn describe(&self, default_assignor: &str) -> DescribedConsumerGroup {
        DescribedConsumerGroup {
            group_id: self.group_id.clone(),
            state: self.state(),
            group_epoch: self.group_epoch,
            assignment_epoch: self.assignment_epoch,
            assignor: self.assignor.map_or(default_assignor, |a| a.name()).to_string(),
            members: self
                .members
                .values()
                .map(|m| DescribedMember {
                    member: m.clone(),
                    target: self.target.get(&m.member_id).cloned().unwrap_or_default(),
                })
                .collect(),
        }
    }
}
