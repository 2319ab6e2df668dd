//! Produce: the checks a client batch passes before it is appended (eos-rules 14-20, 26-29), and
//! the append itself. The request was parsed and validated batch by batch before it got here
//! (store/validate.rs); this is what the partition leader decides per batch.

use std::collections::BTreeSet;

use super::{Partition, PartitionError};
use crate::error_code::ResponseError;
use crate::store::batch::{self, BatchError, BatchHeader, Incoming};
use crate::store::log::LogError;
use crate::store::producer_state::{AppendDecision, BatchMetadata, Verified};
use crate::store::records;
use crate::store::validate;

/// What an accepted batch became.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Produced {
    /// Written at the log end; the header carries the assigned offsets. Durable (and answerable)
    /// once the high watermark passes its last offset.
    Appended(BatchHeader),
    /// eos-rules 19: a retry of a cached batch: nothing written, answer with the original.
    Duplicate(BatchMetadata),
}

/// Request-wide rules of a Produce, checked before any batch goes to a partition: `headers` are
/// the parseable batch headers of every partition in the request. A refused request answers
/// every partition with the same error.
pub fn check_request<'a>(
    acks: i16,
    has_transactional_id: bool,
    headers: impl IntoIterator<Item = &'a BatchHeader>,
) -> Result<(), ResponseError> {
    if !matches!(acks, -1..=1) {
        return Err(ResponseError::InvalidRequiredAcks);
    }
    let txn_ids: BTreeSet<(i64, i16)> =
        headers.into_iter().filter(|h| h.is_transactional()).map(|h| (h.producer_id, h.producer_epoch)).collect();
    // eos-rules 24: transactional batches need a transactional id.
    if !txn_ids.is_empty() && !has_transactional_id {
        return Err(ResponseError::TransactionalIdAuthorizationFailed);
    }
    // eos-rules 25: every transactional batch of one request has the same (pid, epoch).
    if txn_ids.len() > 1 {
        return Err(ResponseError::InvalidProducerIdMapping);
    }
    Ok(())
}

/// The checks of one partition's records that need no partition state (Kafka's
/// ProduceRequest.validateRecords and the size limit): exactly one v2 batch with a valid CRC,
/// at most `max_message_bytes`, and zstd only from Produce v7. Returns its header.
pub fn check_partition_data(
    records: Option<&[u8]>,
    max_message_bytes: usize,
    produce_version: i16,
) -> Result<BatchHeader, ResponseError> {
    let parsed = records.and_then(|r| BatchHeader::parse(r).ok());
    check_parsed_partition_data(records, parsed, max_message_bytes, produce_version)
}

/// `check_partition_data` for records whose header the request-wide checks already parsed
/// (`None`: it did not parse).
pub fn check_parsed_partition_data(
    records: Option<&[u8]>,
    parsed: Option<BatchHeader>,
    max_message_bytes: usize,
    produce_version: i16,
) -> Result<BatchHeader, ResponseError> {
    let records = records.ok_or(ResponseError::InvalidRecord)?;
    if records.len() > max_message_bytes {
        return Err(ResponseError::MessageTooLarge);
    }
    let header = parsed.filter(|_| !records.is_empty()).ok_or(ResponseError::InvalidRecord)?;
    batch::validate_parsed(records, &header).map_err(|e| match e {
        BatchError::Crc { .. } => ResponseError::CorruptMessage,
        _ => ResponseError::InvalidRecord,
    })?;
    if produce_version < 7 && header.compression() == records::CODEC_ZSTD {
        return Err(ResponseError::UnsupportedCompressionType);
    }
    Ok(header)
}

impl Partition {
    /// Every rule a client batch must pass here, in Apache Kafka's order. Pure.
    pub fn check_batch(&self, header: &BatchHeader, verified: Verified) -> Result<AppendDecision, PartitionError> {
        if self.offline {
            return Err(PartitionError::Offline);
        }
        // eos-rules 14: shape checks (answered with LogStartOffset, rule 22).
        validate::validate_batch_shape(header)?;
        // eos-rules 27/28: a transaction may only open here after the coordinator verified the
        // partition, and only if no marker for this producer slipped in since; 29 for TV2.
        self.producers.check_verification(header, verified)?;
        // eos-rules 15-20, 26: epoch, duplicate and sequence checks.
        Ok(self.producers.check_append(header)?)
    }

    /// Checks `header` (the parsed header of `data`) and appends the batch when it passes.
    pub fn append(
        &mut self,
        data: Incoming,
        header: &BatchHeader,
        verified: Verified,
        now_ms: i64,
    ) -> Result<Produced, PartitionError> {
        match self.check_batch(header, verified)? {
            AppendDecision::Duplicate(m) => Ok(Produced::Duplicate(m)),
            AppendDecision::Append => match self.log.append_incoming(data) {
                Ok(h) => {
                    self.producers.record_append(&h, now_ms);
                    Ok(Produced::Appended(h))
                }
                // A batch the log refuses leaves it unchanged: INVALID_RECORD, stay online.
                Err(LogError::InvalidBatch(e)) => Err(PartitionError::LogRefused(e)),
                // Nothing counted as written (the log end did not move): the producer retries;
                // only a failed fsync takes the partition offline.
                Err(e) => Err(PartitionError::NotWritten(e)),
            },
        }
    }
}
