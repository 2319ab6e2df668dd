"""Apache Kafka's kafka-topics tool (org.apache.kafka.tools.TopicCommand) adds partitions to a
topic on kaas (CreatePartitions): a Java consumer group subscribed to the topic rebalances onto
the new partition (it notices through its metadata refresh, as against Kafka), records produced
to the new partition are read back, and a restarted broker still has the partitions and records;
asking for fewer partitions fails with Kafka's message."""
import re
import subprocess

from confluent_kafka import Producer

import javaharness
import kaashelpers


def topics_tool(bootstrap, *args, expect_ok=True):
    run = javaharness.run_java("org.apache.kafka.tools.TopicCommand", "--bootstrap-server", bootstrap, *args,
                               timeout=120)
    if expect_ok:
        assert run.returncode == 0, run.describe()
    return run


def partition_count(bootstrap, topic):
    out = topics_tool(bootstrap, "--describe", "--topic", topic).stdout
    m = re.search(r"PartitionCount:\s*(\d+)", out)
    assert m, out
    return int(m.group(1))


def produce_to(bootstrap, topic, partition, value):
    p = Producer({"bootstrap.servers": bootstrap, "enable.idempotence": True})
    delivered = []
    p.produce(topic, value=value, partition=partition, on_delivery=lambda err, msg: delivered.append((err, msg)))
    assert p.flush(30) == 0
    (err, msg), = delivered
    assert err is None, err
    return msg.offset()


def test_topics_tool_adds_partitions_a_group_consumes_them_and_a_restart_keeps_them(broker):
    b = broker.bootstrap
    topic = kaashelpers.unique_topic("grow")
    kaashelpers.create_topic(b, topic, 1)
    assert produce_to(b, topic, 0, b"before") == 0

    # A Java consumer group member subscribed to the topic, refreshing metadata every second.
    javaharness.ensure_built()
    consumer = subprocess.Popen(
        ["java", "-Xmx256m", "-cp", javaharness.classpath(), "org.apache.kafka.tools.consumer.ConsoleConsumer",
         "--bootstrap-server", b, "--topic", topic, "--group", kaashelpers.unique_topic("g"), "--from-beginning",
         "--max-messages", "2", "--timeout-ms", "90000",
         "--command-property", "metadata.max.age.ms=1000",
         "--formatter-property", "print.partition=true"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        topics_tool(b, "--alter", "--topic", topic, "--partitions", "3")
        assert partition_count(b, topic) == 3
        # Fewer partitions: refused with Kafka's INVALID_PARTITIONS message, nothing changes.
        refused = topics_tool(b, "--alter", "--topic", topic, "--partitions", "2", expect_ok=False)
        said = refused.stdout + refused.stderr
        assert refused.returncode != 0, refused.describe()
        assert "InvalidPartitionsException" in said, refused.describe()
        assert f"The topic {topic} currently has 3 partition(s); 2 would not be an increase." in said, said
        assert partition_count(b, topic) == 3
        kaashelpers.wait_topic_ready(b, topic, 3)
        assert produce_to(b, topic, 2, b"after") == 0

        out, err = consumer.communicate(timeout=120)
    finally:
        if consumer.poll() is None:
            consumer.kill()
            consumer.wait()
    lines = [line for line in out.splitlines() if line.strip()]
    # The group member was given the new partition after its metadata refresh and read it.
    assert "Partition:0\tbefore" in lines and "Partition:2\tafter" in lines, (out, err[-4000:])

    broker.restart()
    assert partition_count(b, topic) == 3
    got = kaashelpers.consume_to_end(b, topic, 3, "read_uncommitted")
    assert [v for (_, _, v) in got[2]] == [b"after"], got
    assert [v for (_, _, v) in got[0]] == [b"before"], got
    assert got[1] == [], got
    # And the new partition still takes writes after the restart.
    assert produce_to(b, topic, 2, b"again") == 1
    kaashelpers.assert_no_panic(broker)
