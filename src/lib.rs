//! kaas: a Kafka-compatible broker with exactly-once semantics.

pub mod actors;
pub mod config;
pub mod error_code;
pub mod limits;
pub mod metrics;
pub mod protocol;
pub mod server;
pub mod store;
