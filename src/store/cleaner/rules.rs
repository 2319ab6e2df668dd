//! What a cleaning pass keeps of one batch (Kafka's LogCleaner.cleanInto with
//! MemoryRecords.filterTo), and what the key map learns from one batch (buildOffsetMap).

use std::collections::HashMap;

use bytes::Bytes;

use super::batch_records::{self, delete_horizon, Record};
use super::offset_map::OffsetMap;
use super::transactions::CleanedTransactions;
use super::CleanerError;
use crate::store::batch::BatchHeader;
use crate::store::control;

/// The inputs of one pass that are the same for every batch.
#[derive(Debug)]
pub struct PassContext<'a> {
    pub now_ms: i64,
    pub delete_retention_ms: i64,
    /// Producer id -> the last offset of its last data batch (its producer state).
    pub last_data_offsets: &'a HashMap<i64, i64>,
    /// Largest decompressed records section decoded; a larger batch is kept as it is.
    pub max_decoded_bytes: usize,
}

/// What a pass writes for one batch.
#[derive(Debug, PartialEq, Eq)]
pub enum Verdict {
    /// The batch as it is.
    Keep,
    /// Nothing.
    Drop,
    /// The batch rebuilt (fewer records, or a delete horizon set); CRC and leader epoch unset.
    Rewrite(Vec<u8>),
}

/// eos-rules 61/65: whether a data record at `offset` stays. Past what the map covers every
/// record stays; else the latest record of its key stays, a tombstone only until the delete
/// horizon of its batch (KIP-534: none yet means it was never cleaned before). eos-rules 70: a
/// record without a key goes.
pub fn retain_record(map: &OffsetMap, offset: i64, r: &Record, horizon: Option<i64>, now_ms: i64) -> bool {
    if offset > map.latest_offset() {
        return true;
    }
    let Some(key) = &r.key else { return false };
    let latest = offset >= map.get(key);
    latest && (!r.is_tombstone() || horizon.is_none_or(|h| now_ms < h))
}

/// One batch of a pass, walking the log in offset order (`txns` and the map see every batch).
pub fn clean_batch(
    batch: &Bytes,
    h: &BatchHeader,
    txns: &mut CleanedTransactions,
    map: &OffsetMap,
    ctx: &PassContext,
) -> Result<Verdict, CleanerError> {
    let verdict = decide(batch, h, txns, map, ctx)?;
    if !h.is_control() && verdict != Verdict::Drop {
        txns.retained(h);
    }
    Ok(verdict)
}

fn decide(
    batch: &Bytes,
    h: &BatchHeader,
    txns: &mut CleanedTransactions,
    map: &OffsetMap,
    ctx: &PassContext,
) -> Result<Verdict, CleanerError> {
    let horizon = delete_horizon(h);
    // eos-rules 63/64: aborted data goes; a marker may go once no data of its transaction is left.
    let can_discard = if h.is_control() { txns.on_control(h, control::parse_marker(batch)) } else { txns.on_batch(h) };
    // eos-rules 64: a marker goes only after its delete horizon (set when first found discardable).
    let discard_records =
        if h.is_control() { can_discard && horizon.is_some_and(|t| t <= ctx.now_ms) } else { can_discard };
    // eos-rules 66: the last batch of a producer stays, emptied if need be, so that its sequence
    // and epoch survive the cleaning.
    let last_of_producer =
        h.has_producer_id() && !h.is_control() && ctx.last_data_offsets.get(&h.producer_id) == Some(&h.last_offset());
    if discard_records && !last_of_producer {
        return Ok(Verdict::Drop);
    }
    if h.is_control() {
        // A marker stays whole; one that may go gets its delete horizon first.
        return Ok(match (can_discard, horizon) {
            (true, None) => Verdict::Rewrite(with_horizon(batch, h, ctx)?),
            _ => Verdict::Keep,
        });
    }
    let records = if discard_records {
        Vec::new()
    } else {
        match batch_records::decode(batch, h, ctx.max_decoded_bytes) {
            Ok(r) => r,
            // Too large to rewrite here: kept as it is (keeping a record is always safe).
            Err(CleanerError::TooLarge) => return Ok(Verdict::Keep),
            Err(e) => return Err(e),
        }
    };
    let total = records.len();
    let kept: Vec<Record> = records
        .into_iter()
        .filter(|r| retain_record(map, h.base_offset + i64::from(r.offset_delta), r, horizon, ctx.now_ms))
        .collect();
    // eos-rules 65: a batch keeping a tombstone gets a delete horizon when it has none.
    let set_horizon = horizon.is_none() && kept.iter().any(Record::is_tombstone);
    if kept.len() == total && !set_horizon && !discard_records {
        return Ok(Verdict::Keep);
    }
    if kept.is_empty() && !last_of_producer {
        return Ok(Verdict::Drop);
    }
    let horizon = if set_horizon { Some(ctx.now_ms.saturating_add(ctx.delete_retention_ms)) } else { horizon };
    Ok(Verdict::Rewrite(batch_records::encode(h, &kept, horizon)?))
}

/// A control batch rebuilt with a delete horizon (its one record unchanged).
fn with_horizon(batch: &Bytes, h: &BatchHeader, ctx: &PassContext) -> Result<Vec<u8>, CleanerError> {
    let records = batch_records::decode(batch, h, ctx.max_decoded_bytes)?;
    batch_records::encode(h, &records, Some(ctx.now_ms.saturating_add(ctx.delete_retention_ms)))
}

/// eos-rules 67: an empty batch ending at `last_offset`, written at a cleaned segment's end when
/// its last batch went, so that the segment still ends where the segments it replaced ended.
pub fn end_filler(last: &BatchHeader) -> Result<Vec<u8>, CleanerError> {
    let h = BatchHeader {
        attributes: 0,
        producer_id: -1,
        producer_epoch: -1,
        base_sequence: -1,
        records_count: 0,
        ..*last
    };
    batch_records::encode(&h, &[], None)
}

/// Whether the map could take the keys of a batch: how many records it adds, None when full.
/// eos-rules 61/63: aborted data and markers map nothing; keys of records before `from` (the
/// first dirty offset) are not mapped. Returns false when the map filled up: `map.latest_offset`
/// then ends the mapped part.
pub fn map_batch(
    batch: &Bytes,
    h: &BatchHeader,
    from: i64,
    txns: &mut CleanedTransactions,
    map: &mut OffsetMap,
    max_decoded_bytes: usize,
) -> Result<bool, CleanerError> {
    if h.is_control() {
        txns.on_control(h, control::parse_marker(batch));
        return Ok(true);
    }
    if txns.on_batch(h) || h.last_offset() < from {
        return Ok(true);
    }
    let records = match batch_records::decode(batch, h, max_decoded_bytes) {
        Ok(r) => r,
        // Not mapped: its keys' older records stay (safe), the batch stays as it is.
        Err(CleanerError::TooLarge) => {
            map.advance_to(h.last_offset());
            return Ok(true);
        }
        Err(e) => return Err(e),
    };
    for r in &records {
        let offset = h.base_offset + i64::from(r.offset_delta);
        if offset < from {
            continue;
        }
        if let Some(key) = &r.key {
            if !map.put(key, offset) {
                return Ok(false);
            }
        }
    }
    map.advance_to(h.last_offset());
    Ok(true)
}
