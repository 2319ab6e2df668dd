"""Authorized operations (KIP-430) as librdkafka asks for them (its test 0081 DescribeTopics and
DescribeCluster): Metadata v8+ with include_topic/cluster_authorized_operations, DescribeCluster
and DescribeTopicPartitions answer what the client may do. Without an authorizer, as Apache
Kafka 4.4 answers (checked with the same scenario): every operation a topic (8) and the cluster
(7) support; before, kaas left them unset and the client saw none."""
from confluent_kafka import TopicCollection
from confluent_kafka.admin import AclOperation, AdminClient

from kaashelpers import create_topic, unique_topic

TOPIC_OPS = {AclOperation.READ, AclOperation.WRITE, AclOperation.CREATE, AclOperation.DESCRIBE,
             AclOperation.DELETE, AclOperation.ALTER, AclOperation.DESCRIBE_CONFIGS,
             AclOperation.ALTER_CONFIGS}
CLUSTER_OPS = {AclOperation.CREATE, AclOperation.CLUSTER_ACTION, AclOperation.DESCRIBE_CONFIGS,
               AclOperation.ALTER_CONFIGS, AclOperation.IDEMPOTENT_WRITE, AclOperation.ALTER,
               AclOperation.DESCRIBE}


def scenario(bootstrap):
    topic = unique_topic("authops")
    create_topic(bootstrap, topic, 2)
    admin = AdminClient({"bootstrap.servers": bootstrap})
    d = admin.describe_topics(TopicCollection([topic]), include_authorized_operations=True)[topic].result(30)
    assert set(d.authorized_operations or []) == TOPIC_OPS, d.authorized_operations
    c = admin.describe_cluster(include_authorized_operations=True).result(30)
    assert set(c.authorized_operations or []) == CLUSTER_OPS, c.authorized_operations
    return d, c


def test_topic_and_cluster_authorized_operations_without_an_authorizer(broker):
    scenario(broker.bootstrap)
