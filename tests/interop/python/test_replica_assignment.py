"""Topics created and grown with a manual replica assignment, by librdkafka's AdminClient and by
Apache Kafka's kafka-topics tool, against the real kaas.

kaas keeps one copy of every partition on the shared disk and places the leaders itself; an
assignment that names the broker its placement picks is honoured (with one broker, any assignment
of that broker), as Kafka accepts a valid assignment. librdkafka's own test 0081
(do_test_CreateTopics, do_test_CreatePartitions) creates topics this way; kaas refused every
assignment with INVALID_REPLICA_ASSIGNMENT before.

The refusals are Kafka 4.4's (checked against it by hand): both a partition count and an
assignment is INVALID_REQUEST; partition indexes other than 0..n, an unknown broker, a broker
named twice or an empty list are INVALID_REPLICA_ASSIGNMENT, each with Kafka's message.
"""
import pytest
from confluent_kafka import KafkaError, KafkaException
from confluent_kafka.admin import AdminClient, NewPartitions, NewTopic

import javaharness
import kaashelpers


def node_id(admin):
    brokers = admin.list_topics(timeout=15).brokers
    assert len(brokers) == 1, brokers
    return next(iter(brokers))


def created(admin, topic):
    f = admin.create_topics([topic], request_timeout=15)[topic.topic]
    try:
        f.result()
        return 0, None
    except KafkaException as e:
        return e.args[0].code(), e.args[0].str()


def partitions(admin, topic):
    md = admin.list_topics(topic, timeout=15).topics[topic]
    assert md.error is None, md.error
    return sorted((p.id, p.leader, list(p.replicas)) for p in md.partitions.values())


def test_librdkafka_creates_and_grows_topics_with_a_replica_assignment(broker):
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    node = node_id(admin)
    topic = kaashelpers.unique_topic("assigned")
    assert created(admin, NewTopic(topic, 3, replica_assignment=[[node], [node], [node]])) == (0, None)
    assert partitions(admin, topic) == [(p, node, [node]) for p in range(3)]

    grown = admin.create_partitions([NewPartitions(topic, 5, replica_assignment=[[node], [node]])],
                                    request_timeout=15)
    grown[topic].result()
    assert partitions(admin, topic) == [(p, node, [node]) for p in range(5)]
    records = [(b"k%d" % i, b"v%d" % i) for i in range(20)]
    written = kaashelpers.produce_confluent(broker.bootstrap, topic, records)
    assert {w[2] for w in written} <= set(range(5))

    refusals = {
        "unknown broker": ([[node + 7]], KafkaError.INVALID_REPLICA_ASSIGNMENT,
                           f"The manual partition assignment includes broker {node + 7}, but no such broker is "
                           "registered."),
        "broker twice": ([[node, node]], KafkaError.INVALID_REPLICA_ASSIGNMENT,
                         f"The manual partition assignment includes the broker {node} more than once."),
    }
    for what, (assignment, code, message) in refusals.items():
        name = kaashelpers.unique_topic("refused")
        assert created(admin, NewTopic(name, len(assignment), replica_assignment=assignment)) == (code, message), what
        assert name not in admin.list_topics(timeout=15).topics, what


def test_kafka_topics_tool_creates_a_topic_with_a_replica_assignment(broker):
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    node = node_id(admin)
    topic = kaashelpers.unique_topic("tool-assigned")
    run = javaharness.run_java("org.apache.kafka.tools.TopicCommand", "--bootstrap-server", broker.bootstrap,
                               "--create", "--topic", topic, "--replica-assignment", f"{node},{node}",
                               timeout=120)
    assert run.returncode == 0, run.describe()
    assert partitions(admin, topic) == [(0, node, [node]), (1, node, [node])]
    # kafka-topics and librdkafka refuse --partitions with an assignment themselves; kafka-python
    # sends both, which is Kafka's INVALID_REQUEST.
    from kafka import KafkaAdminClient
    from kafka.admin import NewTopic as PyNewTopic
    from kafka.errors import InvalidReplicationAssignmentError, InvalidRequestError
    py = KafkaAdminClient(bootstrap_servers=broker.bootstrap)
    try:
        both = PyNewTopic(kaashelpers.unique_topic("both"), 2, -1, replica_assignments={0: [node], 1: [node]})
        with pytest.raises(InvalidRequestError, match="numPartitions was not set to -1"):
            py.create_topics([both], timeout_ms=15000)
        # librdkafka refuses an empty list itself.
        empty = PyNewTopic(kaashelpers.unique_topic("empty"), -1, -1, replica_assignments={0: [node], 1: []})
        with pytest.raises(InvalidReplicationAssignmentError, match="includes an empty replica list"):
            py.create_topics([empty], timeout_ms=15000)
        gap = PyNewTopic(kaashelpers.unique_topic("gap"), -1, -1, replica_assignments={0: [node], 2: [node]})
        with pytest.raises(InvalidReplicationAssignmentError, match="consecutive 0-based integer sequence"):
            py.create_topics([gap], timeout_ms=15000)
    finally:
        py.close()
