"""Apache Kafka 4.4's own admin tools against kaas: the calls that need ApiVersions v4,
ListOffsets v8+ and the internal topics in Metadata."""
import time

from confluent_kafka import Producer

import javaharness
import kaashelpers


def tool(main_class, bootstrap, *args, ok=True):
    run = javaharness.run_java(main_class, "--bootstrap-server", bootstrap, *args, timeout=120)
    if ok:
        assert run.returncode == 0, run.describe()
    return run


def test_get_offsets_with_every_offset_spec(broker):
    topic = kaashelpers.unique_topic("offsets")
    kaashelpers.create_topic(broker.bootstrap, topic, 1)
    p = Producer({"bootstrap.servers": broker.bootstrap, "acks": "all", "enable.idempotence": True})
    base = int(time.time() * 1000) - 60_000
    # Record 3 carries the largest timestamp: max-timestamp must find it, not the first or last.
    for i, ts in enumerate([0, 10, 20, 500, 30, 40, 50]):
        p.produce(topic, value=b"v%d" % i, timestamp=base + ts)
        p.flush(30)
    assert p.flush(30) == 0

    def offsets(spec):
        out = tool("org.apache.kafka.tools.GetOffsetShell", broker.bootstrap, "--topic", topic, "--time", spec).stdout
        return sorted(line.strip() for line in out.splitlines() if line.startswith(topic + ":"))

    assert offsets("-1") == [f"{topic}:0:7"]  # latest
    assert offsets("-2") == [f"{topic}:0:0"]  # earliest
    assert offsets("-3") == [f"{topic}:0:3"]  # max-timestamp (ListOffsets v7)
    assert offsets("-4") == [f"{topic}:0:0"]  # earliest-local (v8): nothing is tiered
    # latest-tiered (v9): Kafka without remote storage answers -1, which the tool leaves out.
    assert offsets("-5") == [], offsets("-5")
    assert "ApiVersions v4 is not supported" not in broker.log_text()
    kaashelpers.assert_no_panic(broker)


def test_topics_tool_lists_internal_topics_as_kafka_does(broker):
    topic = kaashelpers.unique_topic("listed")
    kaashelpers.create_topic(broker.bootstrap, topic, 1)
    listed = tool("org.apache.kafka.tools.TopicCommand", broker.bootstrap, "--list").stdout.split()
    assert topic in listed and "__consumer_offsets" in listed and "__transaction_state" in listed, listed
    external = tool("org.apache.kafka.tools.TopicCommand", broker.bootstrap, "--list", "--exclude-internal").stdout.split()
    assert topic in external and not any(t.startswith("__") for t in external), external
    kaashelpers.assert_no_panic(broker)
