//! Thin actors: each owns one piece of state and turns messages into calls on the core.

pub mod cluster;
pub mod connection;
pub mod group_coordinator;
pub mod messages;
pub mod partition;
pub mod quotas;
pub mod supervisor;
pub mod syncer;
pub mod txn_coordinator;
