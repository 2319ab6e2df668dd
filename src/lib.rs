//! kaas: a Kafka-compatible broker with exactly-once semantics.

pub mod store;
