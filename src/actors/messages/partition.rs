//! Messages to a partition leader.

use actix::Message;

use super::Reply;
use crate::store::batch::{BatchHeader, Incoming};
pub use crate::store::log::file_range::Stored;
use crate::store::producer_state::ProducerStateError;

/// Outcome of a Produce to one partition, as the ProduceResponse needs it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AppendAck {
    pub error_code: i16,
    pub base_offset: i64,
    pub log_append_time: i64,
    /// eos-rules 22: -1 where Apache Kafka leaves it unset.
    pub log_start_offset: i64,
}

/// Append one validated client batch. With acks=0 there is no reply.
#[derive(Message)]
#[rtype(result = "()")]
pub struct Append {
    pub data: Incoming,
    pub header: BatchHeader,
    /// For a transactional batch that opens a transaction here: how the coordinator confirmed
    /// the partition (eos-rules 27-29).
    pub verified: Verified,
    pub reply: Option<Reply<AppendAck>>,
}

pub use crate::store::producer_state::Verified;

/// Before the first transactional batch of (producer id, epoch) on a partition: answers None when
/// a transaction is already open here at that epoch, else a guard to verify with the
/// coordinator; a marker for the producer in between invalidates the guard (eos-rules 28).
/// Err: the Produce error code (a lower epoch, eos-rules 18).
#[derive(Message)]
#[rtype(result = "()")]
pub struct BeginVerification {
    pub producer_id: i64,
    pub producer_epoch: i16,
    pub base_sequence: i32,
    /// Produce v12 (TV2): the verification adds the partition (eos-rules 15, 29).
    pub tv2: bool,
    pub reply: Reply<Result<Option<u64>, ProducerStateError>>,
}

#[derive(Debug, Clone, Default)]
pub struct ReadResult {
    pub error_code: i16,
    pub high_watermark: i64,
    pub last_stable_offset: i64,
    pub log_start_offset: i64,
    /// A range of a segment file (sent with sendfile), or bytes in memory.
    pub records: Stored,
    /// read_committed only: (producer id, first offset) of overlapping aborted transactions.
    pub aborted: Vec<(i64, i64)>,
}

/// Read batches from `offset`; `isolation_level` 1 stops at the last stable offset.
#[derive(Message)]
#[rtype(result = "()")]
pub struct Read {
    pub offset: i64,
    pub max_bytes: usize,
    pub isolation_level: i8,
    pub reply: Reply<ReadResult>,
}

/// Completes once the readable end (high watermark) moves past `offset`.
#[derive(Message)]
#[rtype(result = "()")]
pub struct WaitForData {
    pub offset: i64,
    pub reply: Reply<()>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OffsetAnswer {
    pub error_code: i16,
    pub offset: i64,
    pub timestamp: i64,
}

/// ListOffsets for one partition (timestamp or one of the -1..-5 specials).
#[derive(Message)]
#[rtype(result = "()")]
pub struct ListOffset {
    pub timestamp: i64,
    pub isolation_level: i8,
    pub reply: Reply<OffsetAnswer>,
}

/// Write a COMMIT/ABORT marker for `producer_id` (eos-rules 45-49); the reply is the Kafka
/// error code, sent once the marker is durable.
#[derive(Message)]
#[rtype(result = "()")]
pub struct WriteMarkers {
    pub producer_id: i64,
    pub producer_epoch: i16,
    pub commit: bool,
    pub coordinator_epoch: i32,
    /// 0/1 legacy validation, 2+ strict (KIP-1228).
    pub txn_version: i8,
    pub reply: Reply<i16>,
}

/// A coordinator bumped `producer_id` to `epoch`: reject older epochs here from now on.
#[derive(Message, Debug, Clone, Copy)]
#[rtype(result = "()")]
pub struct FenceEpoch {
    pub producer_id: i64,
    pub epoch: i16,
}

/// The topic's configs changed: the leader's log uses these settings from now on.
#[derive(Message)]
#[rtype(result = "()")]
pub struct SetLogConfig {
    pub config: crate::store::log::LogConfig,
}

/// Flush, snapshot producer state and stop.
#[derive(Message)]
#[rtype(result = "()")]
pub struct Shutdown {
    pub reply: Reply<()>,
}

/// DescribeLogDirs: the size of one partition's log (its batches' bytes).
#[derive(Message)]
#[rtype(result = "()")]
pub struct LogSize {
    pub reply: Reply<u64>,
}

/// DescribeProducers: the active producers of one partition.
#[derive(Message)]
#[rtype(result = "()")]
pub struct InspectProducers {
    pub reply: Reply<Vec<crate::store::producer_state::ProducerEntry>>,
}

/// A DeleteRecords answer for one partition: the new log start (the low watermark), or -1 with
/// an error.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DeleteRecordsAnswer {
    pub error_code: i16,
    pub low_watermark: i64,
}

/// DeleteRecords (KIP-107): move the log start to `offset` (-1: the high watermark). Answered
/// once the new start is durable.
#[derive(Message)]
#[rtype(result = "()")]
pub struct DeleteRecordsBefore {
    pub offset: i64,
    pub reply: Reply<DeleteRecordsAnswer>,
}

/// From a log cleaner thread: plan a pass now (eos-rules 62) and send it back (None: nothing
/// to clean, or a pass is already running).
#[derive(Message)]
#[rtype(result = "()")]
pub struct BeginCleaning {
    pub dedupe_buffer_bytes: usize,
    pub max_decoded_bytes: usize,
    /// Set by the leader when it stops: the pass is abandoned before it names a file.
    pub stop: std::sync::Arc<std::sync::atomic::AtomicBool>,
    pub reply: crossbeam_channel::Sender<Option<crate::store::partition::CleanWork>>,
}

/// From a log cleaner thread: the pass ran; install its files (eos-rules 68).
#[derive(Message)]
#[rtype(result = "()")]
pub struct FinishCleaning {
    pub result: Result<crate::store::log::clean::Cleaned, crate::store::cleaner::CleanerError>,
}
