//! Records: Produce and Fetch, and the offsets of a partition (ListOffsets, OffsetForLeaderEpoch,
//! DeleteRecords).

pub mod delete_records;
pub mod fetch;
pub mod list_offsets;
pub mod offset_for_leader_epoch;
pub mod produce;
