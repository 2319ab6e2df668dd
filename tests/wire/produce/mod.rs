//! Produce: idempotence across crashes, batches a hostile client sends, the segment's zeros ahead.

mod hostile_batches;
pub(crate) mod idempotence;
mod zero_ahead;
