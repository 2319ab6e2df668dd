//! One file per Kafka API: request in, response out, the work done by messages to actors.

pub mod add_partitions_to_txn;
pub mod api_versions;
pub mod create_topics;
pub mod delete_topics;
pub mod describe_cluster;
pub mod describe_configs;
pub mod end_txn;
pub mod fetch;
pub mod find_coordinator;
pub mod init_producer_id;
pub mod list_offsets;
pub mod metadata;
pub mod offset_for_leader_epoch;
pub mod produce;
