//! Consumer groups: the classic protocol (JoinGroup, SyncGroup, Heartbeat, LeaveGroup), KIP-848
//! (ConsumerGroupHeartbeat, ConsumerGroupDescribe), offsets (OffsetCommit, OffsetFetch,
//! OffsetDelete, TxnOffsetCommit) and the group admin APIs (ListGroups, DescribeGroups,
//! DeleteGroups).

pub mod consumer_group_describe;
pub mod consumer_group_heartbeat;
pub mod delete_groups;
pub mod describe_groups;
pub mod heartbeat;
pub mod join_group;
pub mod leave_group;
pub mod list_groups;
pub mod offset_commit;
pub mod offset_delete;
pub mod offset_fetch;
pub mod sync_group;
pub mod txn_offset_commit;
