//! Offsets a reader sees: the high watermark (durable end), the last stable offset (eos-rules
//! 51), fetches bounded by either, and ListOffsets lookups.

use bytes::Bytes;

use super::txn_index::last_stable_offset;
use super::{Partition, PartitionError};
use crate::store::batch;
use crate::store::log::file_range::Stored;
use crate::store::log::LogError;
use crate::store::records::{self, RecordsError};

/// What a fetch gets from the log: the batches in memory, or (`Fetched<Stored>`) where they are.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Fetched<R = Bytes> {
    pub records: R,
    /// read_committed only: (producer id, first offset) of overlapping aborted transactions.
    pub aborted: Vec<(i64, i64)>,
}

/// ListOffsets specials (KIP-734, KIP-1005). LATEST_TIERED (-5) and EARLIEST_PENDING_UPLOAD (-6,
/// ListOffsets v11, KIP-1023) find nothing: kaas keeps no remote tier, and Kafka answers (-1, -1)
/// for them without one.
const LATEST: i64 = -1;
const EARLIEST: i64 = -2;
const MAX_TIMESTAMP: i64 = -3;
const EARLIEST_LOCAL: i64 = -4;

impl Partition {
    pub fn high_watermark(&self) -> i64 {
        self.high_watermark
    }

    /// The syncer made everything below `upto` durable: readers may see it.
    pub fn advance_high_watermark(&mut self, upto: i64) {
        self.high_watermark = self.high_watermark.max(upto);
        self.txns.advance(self.high_watermark);
    }

    /// eos-rules 51: min(first offset of the earliest transaction open or with its marker not
    /// yet durable, high watermark).
    pub fn last_stable_offset(&self) -> i64 {
        last_stable_offset(&self.producers, &self.txns, self.high_watermark, self.log_start_offset())
    }

    /// The end a reader at `isolation_level` may read to: 1 (read_committed) stops at the LSO.
    pub fn readable_end(&self, isolation_level: i8) -> i64 {
        if isolation_level == 1 {
            self.last_stable_offset()
        } else {
            self.high_watermark
        }
    }

    /// Batches from `offset` up to the readable end; read_committed also gets the aborted
    /// transactions overlapping [offset, LSO) (eos-rules 52).
    pub fn read(&self, offset: i64, max_bytes: usize, isolation_level: i8) -> Result<Fetched, PartitionError> {
        let Fetched { records, aborted } = self.read_stored(offset, max_bytes, isolation_level)?;
        let records = records.load().map_err(|e| PartitionError::Read(LogError::Io(e)))?;
        Ok(Fetched { records, aborted })
    }

    /// As [`Partition::read`], the batches left where they are stored (a range of a segment
    /// file, sent with sendfile).
    pub fn read_stored(
        &self,
        offset: i64,
        max_bytes: usize,
        isolation_level: i8,
    ) -> Result<Fetched<Stored>, PartitionError> {
        if self.offline {
            return Err(PartitionError::Offline);
        }
        let upper = self.readable_end(isolation_level);
        let range = self.log.read_range(offset, upper, max_bytes).map_err(|e| match e {
            LogError::OffsetOutOfRange { .. } => PartitionError::OffsetOutOfRange,
            e => PartitionError::Read(e),
        })?;
        let records = range.map_or_else(Stored::default, Stored::File);
        let aborted = if isolation_level == 1 { self.txns.overlapping(offset, upper) } else { Vec::new() };
        Ok(Fetched { records, aborted })
    }

    /// ListOffsets: (offset, timestamp) for a timestamp or one of the -1..-5 specials; (-1, -1)
    /// when nothing matches. `Records` when the batch found by the time index cannot be walked
    /// (Apache Kafka answers that as not found).
    pub fn list_offset(&self, timestamp: i64, isolation_level: i8) -> Result<(i64, i64), PartitionError> {
        if self.offline {
            return Err(PartitionError::Offline);
        }
        let latest = self.readable_end(isolation_level);
        let found = match timestamp {
            LATEST => Ok(Some((latest, -1))),
            EARLIEST | EARLIEST_LOCAL => Ok(Some((self.log_start_offset(), -1))),
            MAX_TIMESTAMP => self.find_by_timestamp(self.log.max_timestamp(), latest, true),
            ts if ts >= 0 => self.find_by_timestamp(ts, latest, false),
            _ => Ok(None),
        };
        Ok(found.map_err(PartitionError::Records)?.unwrap_or((-1, -1)))
    }

    /// First record in [log start, `upper`) with timestamp >= `ts` (or, with `exact_max`, the
    /// record holding the maximum).
    fn find_by_timestamp(&self, ts: i64, upper: i64, exact_max: bool) -> Result<Option<(i64, i64)>, RecordsError> {
        if ts < 0 {
            return Ok(None);
        }
        let wanted = |t: i64| if exact_max { t == ts } else { t >= ts };
        let start = self.log_start_offset();
        let Ok(Some((base, batch))) = self.log.batch_for_timestamp(ts) else {
            return Ok(None);
        };
        // Streams through the records: a compressed batch is never held decompressed.
        let found = records::find_record(&batch, start, upper, wanted)?;
        if found.is_some() || base >= start {
            return Ok(found);
        }
        // The time index found a batch below the log start (a DeleteRecords moved it into a
        // segment): as Kafka's findOffsetByTimestamp from the log start, scan on from there.
        self.scan_for_timestamp(start, upper, ts, wanted)
    }

    fn scan_for_timestamp(
        &self,
        start: i64,
        upper: i64,
        ts: i64,
        wanted: impl Fn(i64) -> bool,
    ) -> Result<Option<(i64, i64)>, RecordsError> {
        let mut pos = start;
        loop {
            let Ok(data) = self.log.read(pos, upper, 1 << 20) else {
                return Ok(None);
            };
            let before = pos;
            for (h, batch) in batch::iter_batches(&data) {
                if h.max_timestamp >= ts {
                    if let Some(found) = records::find_record(&batch, start, upper, &wanted)? {
                        return Ok(Some(found));
                    }
                }
                pos = h.last_offset() + 1;
            }
            if pos == before {
                return Ok(None);
            }
        }
    }
}
