//! Thin actors: each owns one piece of state and turns messages into calls on the core.

pub mod broker_configs;
pub mod cleaner;
pub mod coordinators;
pub mod directory;
pub mod fence_watcher;
pub mod fence_writer;
pub mod group_coordinator;
pub mod heartbeat;
pub mod local_actor;
pub mod membership;
pub mod messages;
pub mod partition;
pub mod producer_ids;
pub mod quotas;
pub mod supervisor;
pub mod sync_queue;
pub mod syncer;
pub mod topic_configs;
pub mod topics;
pub mod txn_coordinator;
