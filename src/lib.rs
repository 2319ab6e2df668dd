//! kaas: a Kafka-compatible broker with exactly-once semantics.

// Nothing a client or the disk controls may panic the broker: no unwrap()/expect() outside the
// tests (a poisoned lock is taken with `unwrap_or_else(PoisonError::into_inner)`).
#![cfg_attr(not(test), deny(clippy::unwrap_used, clippy::expect_used))]

pub mod actors;
pub mod config;
pub mod error_code;
pub mod limits;
pub mod metrics;
pub mod protocol;
pub mod server;
pub mod store;
pub mod sys;
