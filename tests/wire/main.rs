//! The black-box tests: each starts the real `kaas` binary (or, `cluster::routing_in_process`,
//! a broker's actors in this process) and speaks the Kafka protocol to it. One test binary,
//! grouped as Kafka groups its APIs; `cargo test --test wire groups::` runs one group.
//! The real clients (Java, librdkafka, kafka-python, franz-go, kafkajs) are in tests/interop.

#[path = "../common/mod.rs"]
mod common;

mod broker;
mod cluster;
mod fetch;
mod groups;
mod produce;
mod topics;
mod transactions;
