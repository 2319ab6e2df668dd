"""Authorized operations (KIP-430) as librdkafka asks for them (its test 0081 DescribeTopics,
DescribeCluster and DescribeConsumerGroups): Metadata v8+ with
include_topic/cluster_authorized_operations, DescribeCluster, DescribeTopicPartitions,
DescribeGroups and ConsumerGroupDescribe answer what the client may do. Without an authorizer, as
Apache Kafka 4.4 answers (checked with the same scenario): every operation a topic (8), the
cluster (7) and a group (5) support, for a classic and a consumer-protocol group and for an
unknown one (Dead); before, kaas left them unset and the client saw none."""
import time

from confluent_kafka import Consumer, TopicCollection
from confluent_kafka.admin import AclOperation, AdminClient

from kaashelpers import create_topic, unique_topic

TOPIC_OPS = {AclOperation.READ, AclOperation.WRITE, AclOperation.CREATE, AclOperation.DESCRIBE,
             AclOperation.DELETE, AclOperation.ALTER, AclOperation.DESCRIBE_CONFIGS,
             AclOperation.ALTER_CONFIGS}
CLUSTER_OPS = {AclOperation.CREATE, AclOperation.CLUSTER_ACTION, AclOperation.DESCRIBE_CONFIGS,
               AclOperation.ALTER_CONFIGS, AclOperation.IDEMPOTENT_WRITE, AclOperation.ALTER,
               AclOperation.DESCRIBE}
GROUP_OPS = {AclOperation.READ, AclOperation.DELETE, AclOperation.DESCRIBE, AclOperation.DESCRIBE_CONFIGS,
             AclOperation.ALTER_CONFIGS}


def scenario(bootstrap):
    topic = unique_topic("authops")
    create_topic(bootstrap, topic, 2)
    admin = AdminClient({"bootstrap.servers": bootstrap})
    d = admin.describe_topics(TopicCollection([topic]), include_authorized_operations=True)[topic].result(30)
    assert set(d.authorized_operations or []) == TOPIC_OPS, d.authorized_operations
    c = admin.describe_cluster(include_authorized_operations=True).result(30)
    assert set(c.authorized_operations or []) == CLUSTER_OPS, c.authorized_operations
    for protocol in ("classic", "consumer"):
        group = unique_topic(f"authops-{protocol}")
        consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": group, "group.protocol": protocol})
        try:
            consumer.subscribe([topic])
            deadline = time.monotonic() + 30
            while not consumer.assignment() and time.monotonic() < deadline:
                consumer.poll(0.2)
            assert consumer.assignment(), f"the {protocol} member got no partitions"
            g = admin.describe_consumer_groups([group], include_authorized_operations=True)[group].result(30)
            assert set(g.authorized_operations or []) == GROUP_OPS, (protocol, g.authorized_operations)
        finally:
            consumer.close()
    unknown = unique_topic("authops-none")
    g = admin.describe_consumer_groups([unknown], include_authorized_operations=True)[unknown].result(30)
    assert set(g.authorized_operations or []) == GROUP_OPS, g.authorized_operations
    return d, c


def test_topic_and_cluster_authorized_operations_without_an_authorizer(broker):
    scenario(broker.bootstrap)
