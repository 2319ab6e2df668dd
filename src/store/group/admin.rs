//! The admin side of groups: ListGroups, DescribeGroups, DeleteGroups, and when an idle group
//! is forgotten.

use super::membership::Member;
use super::{Group, GroupError, GroupState};

#[derive(Debug, Clone, PartialEq)]
pub struct MemberDescription {
    pub member_id: String,
    pub group_instance_id: Option<String>,
    pub client_id: String,
    pub client_host: String,
    pub metadata: Vec<u8>,
    pub assignment: Vec<u8>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct GroupDescription {
    pub state: GroupState,
    pub protocol_type: String,
    /// Only set when Stable (Kafka's summary), else "".
    pub protocol: String,
    pub members: Vec<MemberDescription>,
}

impl Group {
    /// An Empty group that holds nothing (no offsets, no pending transactional offsets, no
    /// member being admitted) is forgotten, as Kafka drops such a group at its expiration check.
    pub fn is_removable(&self) -> bool {
        matches!(self.state, GroupState::Empty | GroupState::Dead)
            && self.members.is_empty()
            && self.pending_members.is_empty()
            && self.offsets.committed.is_empty()
            && self.offsets.pending_txn.is_empty()
    }

    /// DeleteGroups precondition.
    pub fn can_delete_group(&self) -> Result<(), GroupError> {
        match self.state {
            GroupState::Dead => Err(GroupError::GroupIdNotFound),
            GroupState::Empty => Ok(()),
            _ => Err(GroupError::NonEmptyGroup),
        }
    }

    /// DeleteGroups: group becomes Dead and its offsets are dropped.
    pub fn delete_group(&mut self) -> Result<(), GroupError> {
        self.can_delete_group()?;
        self.state = GroupState::Dead;
        self.pending_members.clear();
        self.join_deadline_ms = None;
        self.offsets.committed.clear();
        self.offsets.pending_txn.clear();
        Ok(())
    }

    /// DescribeGroups (metadata/assignment and protocol only when Stable, as Kafka).
    pub fn describe(&self) -> GroupDescription {
        let stable = self.state == GroupState::Stable;
        let protocol = if stable { self.protocol_name.clone().unwrap_or_default() } else { String::new() };
        let members = if self.state == GroupState::Dead { &[][..] } else { &self.members[..] };
        let describe_member = |m: &Member| MemberDescription {
            member_id: m.member_id.clone(),
            group_instance_id: m.group_instance_id.clone(),
            client_id: m.client_id.clone(),
            client_host: m.client_host.clone(),
            metadata: if stable { m.metadata(&protocol) } else { Vec::new() },
            assignment: if stable { m.assignment.clone() } else { Vec::new() },
        };
        GroupDescription {
            state: self.state,
            protocol_type: self.protocol_type.clone().unwrap_or_default(),
            protocol: protocol.clone(),
            members: members.iter().map(describe_member).collect(),
        }
    }

    /// ListGroups entry: (protocol type, state name).
    pub fn list_entry(&self) -> (String, &'static str) {
        (self.protocol_type.clone().unwrap_or_default(), self.state.name())
    }
}
