"""Apache Kafka's kafka-configs tool (org.apache.kafka.tools.ConfigCommand in 4.4) against kaas:
altering a topic's max.message.bytes up and down changes what Produce accepts (confluent-kafka
producer), --describe shows the value as DYNAMIC_TOPIC_CONFIG, --delete-config restores the
default, and the value survives a broker restart; compression.type altered with it applies to
the next batches."""
import os

from confluent_kafka import KafkaError, Producer

import javaharness
import kaashelpers
from test_topic_compression import stored_codecs

TWO_MIB = 2 * 1024 * 1024


def configs(bootstrap, *args, ok=True, entity_type="topics"):
    run = javaharness.run_java("org.apache.kafka.tools.ConfigCommand", "--bootstrap-server", bootstrap,
                               "--entity-type", entity_type, *args, timeout=120)
    if ok:
        assert run.returncode == 0, run.describe()
    return run


def described(bootstrap, topic, name):
    """The `name=value sensitive=... synonyms={...}` line of --describe --all."""
    out = configs(bootstrap, "--entity-name", topic, "--describe", "--all").stdout
    lines = [line.strip() for line in out.splitlines() if line.strip().startswith(name + "=")]
    assert len(lines) == 1, out
    return lines[0]


def send(bootstrap, topic, size):
    """Produces one record of `size` random bytes; returns the delivery error code or None."""
    p = Producer({"bootstrap.servers": bootstrap, "acks": "all", "message.max.bytes": 10 * 1024 * 1024,
                  "enable.idempotence": False, "retries": 0})
    result = []
    p.produce(topic, value=os.urandom(size), on_delivery=lambda err, msg: result.append(err))
    assert p.flush(30) == 0 and len(result) == 1
    return None if result[0] is None else result[0].code()


def test_max_message_bytes_altered_with_kafka_configs(broker):
    bs = broker.bootstrap
    topic = kaashelpers.unique_topic("cfg")
    kaashelpers.create_topic(bs, topic, 1)
    assert send(bs, topic, TWO_MIB) == KafkaError.MSG_SIZE_TOO_LARGE
    assert "DEFAULT_CONFIG:message.max.bytes=1048588" in described(bs, topic, "max.message.bytes")

    run = configs(bs, "--entity-name", topic, "--alter", "--add-config", "max.message.bytes=5000000")
    assert "Completed updating config" in run.stdout, run.describe()
    assert send(bs, topic, TWO_MIB) is None
    line = described(bs, topic, "max.message.bytes")
    assert line.startswith("max.message.bytes=5000000 ") and "DYNAMIC_TOPIC_CONFIG:max.message.bytes=5000000" in line
    dynamic = configs(bs, "--entity-name", topic, "--describe").stdout
    assert "max.message.bytes=5000000" in dynamic, dynamic

    # Down: a 5 kB record no longer fits.
    configs(bs, "--entity-name", topic, "--alter", "--add-config", "max.message.bytes=1000")
    assert send(bs, topic, 5000) == KafkaError.MSG_SIZE_TOO_LARGE

    configs(bs, "--entity-name", topic, "--alter", "--add-config", "max.message.bytes=5000000")
    broker.restart()
    assert described(bs, topic, "max.message.bytes").startswith("max.message.bytes=5000000 ")
    assert send(bs, topic, TWO_MIB) is None

    configs(bs, "--entity-name", topic, "--alter", "--delete-config", "max.message.bytes")
    assert described(bs, topic, "max.message.bytes").startswith("max.message.bytes=1048588 ")
    assert send(bs, topic, TWO_MIB) == KafkaError.MSG_SIZE_TOO_LARGE
    kaashelpers.assert_no_panic(broker)


def test_kafka_configs_refusals(broker):
    bs = broker.bootstrap
    topic = kaashelpers.unique_topic("cfgbad")
    kaashelpers.create_topic(bs, topic, 1)
    run = configs(bs, "--entity-name", topic, "--alter", "--add-config", "min.insync.replicas=2", ok=False)
    assert run.returncode != 0 and "InvalidConfigurationException" in run.stdout + run.stderr, run.describe()
    run = configs(bs, "--entity-name", topic, "--alter", "--add-config", "retention.ms=abc", ok=False)
    assert "Not a number of type LONG" in run.stdout + run.stderr, run.describe()
    run = configs(bs, "--entity-name", topic + "-missing", "--alter", "--add-config", "retention.ms=1", ok=False)
    assert "UnknownTopicOrPartitionException" in run.stdout + run.stderr, run.describe()
    configs(bs, "--entity-name", topic, "--alter", "--add-config", "retention.ms=60000")
    line = described(bs, topic, "retention.ms")
    assert line.startswith("retention.ms=60000 ") and "DYNAMIC_TOPIC_CONFIG" in line, line
    # The cluster default min.insync.replicas (a dynamic default, as on a new Kafka 4.4): setting
    # what it is succeeds; 2 is refused as on a topic; a config kaas cannot change at runtime is
    # Kafka's "Cannot update these configs dynamically" (log.dirs is not dynamic in Kafka either).
    configs(bs, "--entity-default", "--alter", "--add-config", "min.insync.replicas=1", entity_type="brokers")
    run = configs(bs, "--entity-default", "--alter", "--add-config", "min.insync.replicas=2", ok=False,
                  entity_type="brokers")
    assert "InvalidConfigurationException" in run.stdout + run.stderr, run.describe()
    run = configs(bs, "--entity-default", "--alter", "--add-config", "log.dirs=/tmp/elsewhere", ok=False,
                  entity_type="brokers")
    assert "Cannot update these configs dynamically" in run.stdout + run.stderr, run.describe()


def test_compression_type_altered_with_kafka_configs_recompresses_the_next_batches(broker):
    bs = broker.bootstrap
    topic = kaashelpers.unique_topic("cfgcomp")
    kaashelpers.create_topic(bs, topic, 1)
    log_dir = broker.data_dir / "topics" / f"{topic}-0"
    kaashelpers.produce_confluent(bs, topic, [(b"k", b"before " * 50)], conf={"compression.type": "none"})
    assert stored_codecs(log_dir) == {0}
    configs(bs, "--entity-name", topic, "--alter", "--add-config", "compression.type=lz4")
    line = described(bs, topic, "compression.type")
    assert line.startswith("compression.type=lz4 ") and "DYNAMIC_TOPIC_CONFIG" in line, line
    kaashelpers.produce_confluent(bs, topic, [(b"k", b"after " * 50)], conf={"compression.type": "none"})
    assert stored_codecs(log_dir) == {0, 3}, "the second batch stored lz4"
    got = kaashelpers.consume_to_end(bs, topic, 1, "read_uncommitted")[0]
    assert [v for _, _, v in got] == [b"before " * 50, b"after " * 50]


def group_configs(bootstrap, *args, ok=True):
    return configs(bootstrap, *args, ok=ok, entity_type="groups")


def test_group_configs_with_kafka_configs(broker):
    """kafka-configs --entity-type groups: a consumer group's session timeout set, described as
    GROUP_CONFIG, kept across a restart, deleted; an out-of-range value refused with Kafka's
    message."""
    bs = broker.bootstrap
    group = kaashelpers.unique_topic("cfg-group")
    run = group_configs(bs, "--entity-name", group, "--alter", "--add-config", "consumer.session.timeout.ms=50000")
    assert "Completed updating config" in run.stdout, run.describe()
    out = group_configs(bs, "--entity-name", group, "--describe").stdout
    assert "consumer.session.timeout.ms=50000" in out, out
    broker.restart()
    out = group_configs(bs, "--entity-name", group, "--describe", "--all").stdout
    line = [x.strip() for x in out.splitlines() if x.strip().startswith("consumer.session.timeout.ms=")]
    assert line and line[0].startswith("consumer.session.timeout.ms=50000 ") and "GROUP_CONFIG" in line[0], out
    run = group_configs(bs, "--entity-name", group, "--alter", "--add-config", "consumer.session.timeout.ms=10",
                        ok=False)
    assert run.returncode != 0 and "must be in the range" in run.stdout + run.stderr, run.describe()
    group_configs(bs, "--entity-name", group, "--alter", "--delete-config", "consumer.session.timeout.ms")
    out = group_configs(bs, "--entity-name", group, "--describe").stdout
    assert "consumer.session.timeout.ms" not in out, out
    kaashelpers.assert_no_panic(broker)
