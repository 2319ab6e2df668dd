//! The log cleaner's rules (`cleanup.policy=compact`), as Apache Kafka's LogCleaner applies
//! them, without I/O: what a pass keeps of each batch (`rules`), which transactional data and
//! markers may go (`transactions`), the key map (`offset_map`), the records of a batch and the
//! batch rebuilt from those kept (`batch_records`), and which log to clean first (`select`).
//! The file work (reading segments, writing the cleaned file, the atomic swap) is
//! `store::log::clean`; the threads are `actors::cleaner`. eos-rules 61-70 (docs/eos-rules.md),
//! tested one test per rule in `store/log/clean_tests.rs` (on real logs).

pub mod batch_records;
pub mod offset_map;
pub mod rules;
pub mod select;
pub mod transactions;

use thiserror::Error;

#[derive(Debug, Error)]
pub enum CleanerError {
    /// A stored batch's records could not be read or rebuilt.
    #[error("records: {0}")]
    Records(String),
    /// A batch's records are larger than the cleaner decodes: it is kept as it is.
    #[error("batch records over the cleaner's limit")]
    TooLarge,
    #[error("io: {0}")]
    Io(#[from] std::io::Error),
    /// The log changed under the pass (its partition stopped, retention removed a segment).
    #[error("cleaning abandoned: {0}")]
    Abandoned(String),
}

/// A compacted topic's cleaning settings (its topic configs over the broker's defaults).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Compaction {
    /// min.cleanable.dirty.ratio.
    pub min_cleanable_dirty_ratio: f64,
    /// min.compaction.lag.ms: a record stays uncompacted at least this long.
    pub min_compaction_lag_ms: i64,
    /// max.compaction.lag.ms: a record is compacted at the latest this long after it was written
    /// (KIP-354).
    pub max_compaction_lag_ms: i64,
    /// delete.retention.ms: tombstones and markers stay this long after they were first cleaned.
    pub delete_retention_ms: i64,
}

impl Default for Compaction {
    /// Kafka's defaults.
    fn default() -> Self {
        Compaction {
            min_cleanable_dirty_ratio: 0.5,
            min_compaction_lag_ms: 0,
            max_compaction_lag_ms: i64::MAX,
            delete_retention_ms: 86_400_000,
        }
    }
}
