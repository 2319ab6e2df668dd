"""Dynamic broker configs, as `kafka-configs --entity-type brokers --alter` and the admin clients
set them on Apache Kafka 4.4: a log default set for the cluster (`--entity-default`) or for one
broker (`--entity-name N`) becomes at once the default of the topics that exist and have no value
of their own (Produce's size limit, LogAppendTime, compaction's key rule), is described with
Kafka's sources and synonyms, survives a restart, and reaches the other brokers of a cluster;
what librdkafka's own suite (0081-admin) sets is taken; what Kafka refuses is refused with its
message."""
import os
import time

from confluent_kafka import Consumer, KafkaError, Producer, TopicPartition
from confluent_kafka.admin import (AdminClient, AlterConfigOpType, ConfigEntry, ConfigResource, ConfigSource,
                                   ResourceType)

import kaashelpers
from conftest import Broker, free_port, poll_until
from test_kafka_configs_tool import configs

TICK = {"KAAS_CLUSTER_TICK_MS": "200", "KAAS_FENCE_POLL_INTERVAL_MS": "200"}


def kafka_configs(bootstrap, *args, ok=True, entity_type="brokers"):
    """kafka-configs (ConfigCommand) on brokers unless `entity_type` says otherwise."""
    return configs(bootstrap, *args, ok=ok, entity_type=entity_type)


def send(bootstrap, topic, size, partition=0, key=b"k", timestamp=0):
    """One record of `size` bytes; the delivery error code, or None."""
    p = Producer({"bootstrap.servers": bootstrap, "acks": "all", "message.max.bytes": 10 * 1024 * 1024,
                  "enable.idempotence": False, "retries": 0})
    result = []
    p.produce(topic, key=key, value=os.urandom(size), partition=partition, timestamp=timestamp,
              on_delivery=lambda err, msg: result.append(err))
    assert p.flush(30) == 0 and len(result) == 1
    return None if result[0] is None else result[0].code()


def error_code(futures):
    """The error code of an admin call's one result, or None."""
    try:
        list(futures.values())[0].result()
        return None
    except Exception as e:  # noqa: BLE001 - the KafkaException's error is the answer
        return e.args[0].code()


def incremental(admin, name, *ops):
    """IncrementalAlterConfigs of BROKER `name` through librdkafka; the error code or None."""
    entries = [ConfigEntry(n, v, incremental_operation=op) for n, op, v in ops]
    return error_code(admin.incremental_alter_configs(
        [ConfigResource(ResourceType.BROKER, name, incremental_configs=entries)]))


def delete_records(admin, topic, offset):
    """DeleteRecords of partition 0 before `offset`; the error code or None."""
    return error_code(admin.delete_records([TopicPartition(topic, 0, offset)]))


def broker_config(admin, name, config):
    res = ConfigResource(ResourceType.BROKER, name)
    return list(admin.describe_configs([res]).values())[0].result().get(config)


def topic_config(admin, topic, config):
    res = ConfigResource(ResourceType.TOPIC, topic)
    return list(admin.describe_configs([res]).values())[0].result()[config]


def test_log_defaults_reach_existing_topics_at_once_and_survive_a_restart(broker):
    bs, node = broker.bootstrap, str(broker.node_id)
    admin = AdminClient({"bootstrap.servers": bs})
    topic = kaashelpers.unique_topic("dyncfg")
    kaashelpers.create_topic(bs, topic, 1)
    assert send(bs, topic, 5000) is None

    run = kafka_configs(bs, "--entity-default", "--alter", "--add-config", "message.max.bytes=2000")
    assert "Completed updating default config for brokers in the cluster" in run.stdout, run.describe()
    assert send(bs, topic, 5000) == KafkaError.MSG_SIZE_TOO_LARGE, "the topic takes the cluster default at once"
    c = topic_config(admin, topic, "max.message.bytes")
    assert (c.value, c.source) == ("2000", ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG.value)

    # One broker's own value goes over the cluster's.
    assert incremental(admin, node, ("message.max.bytes", AlterConfigOpType.SET, "8000")) is None
    assert send(bs, topic, 5000) is None
    out = kafka_configs(bs, "--entity-name", topic, "--describe", "--all", entity_type="topics").stdout
    line = [x.strip() for x in out.splitlines() if x.strip().startswith("max.message.bytes=")]
    assert line == ["max.message.bytes=8000 sensitive=false synonyms={DYNAMIC_BROKER_CONFIG:message.max.bytes=8000, "
                    "DYNAMIC_DEFAULT_BROKER_CONFIG:message.max.bytes=2000, DEFAULT_CONFIG:message.max.bytes=1048588}"], out

    # LogAppendTime from the cluster default stamps the next records of the topic.
    kafka_configs(bs, "--entity-default", "--alter", "--add-config", "log.message.timestamp.type=LogAppendTime")
    before = int(time.time() * 1000)
    assert send(bs, topic, 10, timestamp=1000) is None
    broker.restart()
    described = kafka_configs(bs, "--entity-default", "--describe").stdout
    assert "message.max.bytes=2000 " in described and "log.message.timestamp.type=LogAppendTime" in described
    assert send(bs, topic, 5000) is None, "the broker's 8000 holds after the restart"
    got = kaashelpers.consume_to_end(bs, topic, 1, "read_uncommitted")
    c = Consumer({"bootstrap.servers": bs, "group.id": topic, "enable.auto.commit": False})
    c.assign([TopicPartition(topic, 0, 2)])
    msg = c.poll(15)
    c.close()
    assert msg is not None and msg.error() is None, got
    ts_type, ts = msg.timestamp()
    assert ts_type == 2 and ts >= before - 1000, (ts_type, ts, before)

    assert incremental(admin, node, ("message.max.bytes", AlterConfigOpType.DELETE, "")) is None
    assert send(bs, topic, 5000) == KafkaError.MSG_SIZE_TOO_LARGE
    kafka_configs(bs, "--entity-default", "--alter", "--delete-config",
                  "message.max.bytes,log.message.timestamp.type")
    assert send(bs, topic, 5000) is None
    assert topic_config(admin, topic, "max.message.bytes").source == ConfigSource.DEFAULT_CONFIG.value
    kaashelpers.assert_no_panic(broker)


def test_what_librdkafkas_suite_sets_is_taken_and_compaction_follows_the_default(broker):
    """0081-admin's broker resources: SET background.threads and APPEND compact to
    log.cleanup.policy, then DELETE and SUBTRACT them; its AlterConfigs of
    sasl.kerberos.min.time.before.relogin on the broker. The compact default makes an existing
    topic refuse a record without a key, as a compacted topic does."""
    bs, node = broker.bootstrap, str(broker.node_id)
    admin = AdminClient({"bootstrap.servers": bs})
    topic = kaashelpers.unique_topic("dyncompact")
    kaashelpers.create_topic(bs, topic, 1)
    assert send(bs, topic, 10, key=None) is None

    assert incremental(admin, node, ("background.threads", AlterConfigOpType.SET, "9"),
                       ("log.cleanup.policy", AlterConfigOpType.APPEND, "compact")) is None
    c = broker_config(admin, node, "background.threads")
    assert (c.value, c.source, c.is_read_only) == ("9", ConfigSource.DYNAMIC_BROKER_CONFIG.value, False)
    assert broker_config(admin, node, "log.cleanup.policy").value == "delete,compact"
    assert topic_config(admin, topic, "cleanup.policy").value == "delete,compact"
    assert send(bs, topic, 10, key=None) == KafkaError.INVALID_RECORD
    assert send(bs, topic, 10, key=b"k") is None

    assert incremental(admin, node, ("background.threads", AlterConfigOpType.DELETE, ""),
                       ("log.cleanup.policy", AlterConfigOpType.SUBTRACT, "compact")) is None
    assert broker_config(admin, node, "background.threads").source == ConfigSource.DEFAULT_CONFIG.value
    assert send(bs, topic, 10, key=None) is None

    # Compact only: DeleteRecords is refused, as on a compacted topic.
    assert incremental(admin, node, ("log.cleanup.policy", AlterConfigOpType.SET, "compact")) is None
    assert delete_records(admin, topic, 1) == KafkaError.POLICY_VIOLATION
    assert incremental(admin, node, ("log.cleanup.policy", AlterConfigOpType.DELETE, "")) is None
    assert delete_records(admin, topic, 1) is None

    res = ConfigResource(ResourceType.BROKER, node, set_config={"sasl.kerberos.min.time.before.relogin": "58000"})
    list(admin.alter_configs([res]).values())[0].result()
    c = broker_config(admin, node, "sasl.kerberos.min.time.before.relogin")
    assert (c.value, c.source) == ("58000", ConfigSource.DYNAMIC_BROKER_CONFIG.value)

    # Refused as Kafka 4.4 refuses them.
    assert incremental(admin, node, ("log.dirs", AlterConfigOpType.SET, "/x")) == KafkaError.INVALID_REQUEST
    assert incremental(admin, node, ("log.retention.ms", AlterConfigOpType.SET, "abc")) == KafkaError.INVALID_REQUEST
    assert incremental(admin, node, ("min.insync.replicas", AlterConfigOpType.SET, "1")) == KafkaError.INVALID_CONFIG
    assert incremental(admin, node, ("background.threads", AlterConfigOpType.APPEND, "1")) == \
        KafkaError.INVALID_CONFIG
    run = kafka_configs(bs, "--entity-default", "--alter", "--add-config",
                        "sasl.kerberos.min.time.before.relogin=58000", ok=False)
    assert "broker id must be specified" in run.stdout + run.stderr, run.describe()
    kaashelpers.assert_no_panic(broker)


def test_a_cluster_default_set_on_one_broker_reaches_the_others(tmp_path):
    shared = tmp_path / "shared"
    brokers = [Broker(shared, free_port(), TICK, node_id=i).start() for i in (1, 2)]
    for b in brokers:
        a = AdminClient({"bootstrap.servers": b.bootstrap})
        poll_until(lambda: len(a.list_topics(timeout=5).brokers) == 2, 30, f"broker {b.node_id} seeing both")
    bootstrap = ",".join(b.bootstrap for b in brokers)
    topic = kaashelpers.unique_topic("dyncluster")
    kaashelpers.create_topic(brokers[0].bootstrap, topic, 4)
    kaashelpers.wait_topic_ready(bootstrap, topic, 4)
    admin = AdminClient({"bootstrap.servers": bootstrap})
    leaders = {}

    def both_lead():
        parts = admin.list_topics(topic, timeout=10).topics[topic].partitions.values()
        leaders.update({p.id: p.leader for p in parts})
        return set(leaders.values()) == {1, 2}
    poll_until(both_lead, 30, "the partitions led by both brokers")
    assert all(send(bootstrap, topic, 5000, partition=p) is None for p in leaders)

    kafka_configs(brokers[0].bootstrap, "--entity-default", "--alter", "--add-config", "message.max.bytes=2000")
    poll_until(lambda: all(send(bootstrap, topic, 5000, partition=p) == KafkaError.MSG_SIZE_TOO_LARGE
                           for p in leaders), 20, "every leader refusing 5000 bytes")
    # A broker's own value applies to the partitions it leads only.
    assert incremental(AdminClient({"bootstrap.servers": brokers[1].bootstrap}), "2",
                       ("message.max.bytes", AlterConfigOpType.SET, "8000")) is None
    for p, leader in leaders.items():
        expected = None if leader == 2 else KafkaError.MSG_SIZE_TOO_LARGE
        assert send(bootstrap, topic, 5000, partition=p) == expected, (p, leader)
    for b in brokers:
        kaashelpers.assert_no_panic(b)
