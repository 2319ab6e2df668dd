"""Apache Kafka's kafka-delete-records tool (org.apache.kafka.tools.DeleteRecordsCommand, through
AdminClient.deleteRecords) against kaas: the low watermarks it prints, an offset past the high
watermark, and consumers that then start at the new log start: Kafka's console consumer told to
read from offset 0 (OFFSET_OUT_OF_RANGE, reset to earliest) and a librdkafka consumer from 0."""
import json
import re

from confluent_kafka import Producer

import javaharness
import kaashelpers


def delete_records(bootstrap, tmp_path, partitions):
    f = tmp_path / "offsets.json"
    f.write_text(json.dumps({"version": 1, "partitions": [
        {"topic": t, "partition": p, "offset": o} for t, p, o in partitions]}))
    run = javaharness.run_java("org.apache.kafka.tools.DeleteRecordsCommand", "--bootstrap-server", bootstrap,
                               "--offset-json-file", str(f), timeout=120)
    # The tool exits 0 even when a partition failed: its output says which.
    assert run.returncode == 0, run.describe()
    assert "Records delete operation completed:" in run.stdout, run.describe()
    return run.stdout


def test_delete_records_tool_moves_the_log_start(broker, tmp_path):
    topic = kaashelpers.unique_topic("delrec")
    kaashelpers.create_topic(broker.bootstrap, topic, 2)
    p = Producer({"bootstrap.servers": broker.bootstrap, "acks": "all", "enable.idempotence": True})
    for partition, n in ((0, 10), (1, 5)):
        for i in range(n):
            p.produce(topic, value=b"v%d" % i, partition=partition)
    assert p.flush(30) == 0
    assert kaashelpers.end_offsets(broker.bootstrap, topic, 2) == {0: 10, 1: 5}

    out = delete_records(broker.bootstrap, tmp_path, [(topic, 0, 4), (topic, 1, -1)])
    assert f"partition: {topic}-0\tlow_watermark: 4" in out, out
    assert f"partition: {topic}-1\tlow_watermark: 5" in out, out

    # Past the high watermark: the tool reports Kafka's OffsetOutOfRangeException.
    out = delete_records(broker.bootstrap, tmp_path, [(topic, 0, 11)])
    assert re.search(rf"partition: {re.escape(topic)}-0\terror: .*OffsetOutOfRange", out), out

    # Kafka's console consumer, told to start at 0, is answered OFFSET_OUT_OF_RANGE and resets to
    # the earliest offset, the new log start.
    run = javaharness.run_java(
        "org.apache.kafka.tools.consumer.ConsoleConsumer", "--bootstrap-server", broker.bootstrap,
        "--topic", topic, "--partition", "0", "--offset", "0", "--max-messages", "6", "--timeout-ms", "30000",
        "--consumer-property", "auto.offset.reset=earliest", "--property", "print.offset=true", timeout=120)
    assert run.returncode == 0, run.describe()
    offsets = [int(m) for m in re.findall(r"Offset:(\d+)", run.stdout)]
    assert offsets == list(range(4, 10)), run.describe()

    # librdkafka from offset 0 with auto.offset.reset=earliest: the same.
    got = kaashelpers.consume_to_end(broker.bootstrap, topic, 2, isolation="read_uncommitted")
    assert [o for o, _, _ in got[0]] == list(range(4, 10)), got
    assert got[1] == [], got
    kaashelpers.assert_no_panic(broker)
