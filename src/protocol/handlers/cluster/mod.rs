//! The cluster as clients discover it: ApiVersions, Metadata, DescribeCluster,
//! DescribeTopicPartitions, DescribeQuorum, FindCoordinator.

pub mod api_versions;
pub mod describe_cluster;
pub mod describe_quorum;
pub mod describe_topic_partitions;
pub mod find_coordinator;
pub mod metadata;
