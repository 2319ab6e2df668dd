//! Admin: topics (CreateTopics, CreatePartitions, DeleteTopics), configs (DescribeConfigs,
//! AlterConfigs, IncrementalAlterConfigs, ListConfigResources) and the other admin APIs kaas
//! answers (DescribeClientQuotas, DescribeUserScramCredentials, DescribeLogDirs, ElectLeaders,
//! ListPartitionReassignments).

pub mod alter_configs;
pub mod alter_user_scram_credentials;
pub mod config_change;
pub mod create_partitions;
pub mod create_topics;
pub mod delete_topics;
pub mod describe_client_quotas;
pub mod describe_configs;
pub mod describe_log_dirs;
pub mod describe_user_scram_credentials;
pub mod elect_leaders;
pub mod incremental_alter_configs;
pub mod list_config_resources;
pub mod list_partition_reassignments;
