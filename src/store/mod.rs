//! The functional core and the on-disk formats: no actors here.

pub mod admin;
pub mod batch;
pub mod clock;
pub mod config_resources;
pub mod control;
pub mod coordinator_key;
pub mod create_partitions;
pub mod durable;
pub mod fence_log;
pub mod fence_watch;
pub mod file_lock;
pub mod group;
pub mod known_fences;
pub mod leases;
pub mod log;
pub mod ownership;
pub mod partition;
pub mod placement;
pub mod producer_ids;
pub mod producer_state;
pub mod quorum;
pub mod records;
pub mod topic_config;
pub mod topics;
pub mod txn;
pub mod validate;
