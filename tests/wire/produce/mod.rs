//! Produce: idempotence across crashes, and batches a hostile client sends.

mod hostile_batches;
pub(crate) mod idempotence;
