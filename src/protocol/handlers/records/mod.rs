//! Records: Produce and Fetch, and the offsets of a partition (ListOffsets, OffsetForLeaderEpoch,
//! DeleteRecords).

use crate::error_code::ResponseError;

pub mod delete_records;
pub mod fetch;
pub mod list_offsets;
pub mod offset_for_leader_epoch;
pub mod produce;

/// The answer for a partition whose leader stopped while a request was on its way to it (a
/// shutdown, a hand-over, a deletion): Kafka's ReplicaManager answers a partition it does not host,
/// of a topic it knows, NOT_LEADER_OR_FOLLOWER. The client refreshes its metadata and goes to the
/// new leader; a deleted topic then reads as unknown.
pub(crate) const LEADER_GONE: ResponseError = ResponseError::NotLeaderOrFollower;
