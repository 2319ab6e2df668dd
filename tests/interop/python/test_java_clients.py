"""Black-box tests of kaas with Apache Kafka's Java client (kafka-clients 4.x) and its
kafka-producer-perf-test (org.apache.kafka.tools.ProducerPerformance).

Needs java and the built Maven project tests/interop/java (built on demand by javaharness).
"""
import pytest

import javaharness as jh


def _fail_context(broker, *runs) -> str:
    parts = [r.describe() for r in runs if r is not None]
    parts.append("--- kaas log (tail) ---\n" + broker.log_text()[-4000:])
    return "\n".join(parts)


def _check_produce_consume(broker, res, count, partitions=3, preexisting=0):
    ctx = _fail_context(broker, res.run)
    s = res.summary
    assert s is not None, f"ProduceConsume printed no JSON summary\n{ctx}"
    assert res.run.returncode == 0 and s["ok"] is True, f"ProduceConsume failed: {s['errors']}\n{ctx}"
    # (s["sent"] is the count we passed in; what the broker acknowledged and what was read
    # back are what count)
    assert s["acked"] == count, ctx
    assert s["send_errors"] == 0, ctx
    assert s["received"] == count, ctx
    assert s["records_read"] == count, ctx
    assert s["duplicates"] == 0, ctx
    assert s["missing"] == 0, ctx
    assert s["out_of_order"] == 0, ctx
    assert s["ack_order_violations"] == 0, ctx
    assert s["ack_mismatch"] == 0, ctx
    assert s["key_mismatch"] == 0, ctx
    assert s["foreign"] == 0, ctx
    assert s["preexisting"] == preexisting, ctx
    assert s["partitions"] == partitions, ctx
    per_partition = s["per_partition"]
    assert sorted(int(p) for p in per_partition) == list(range(partitions)), ctx
    assert sum(per_partition.values()) == count, ctx
    assert all(n > 0 for n in per_partition.values()), ctx


def test_java_default_producer_then_assign_consumer(broker):
    """20,000 records from an idempotent acks=all KafkaProducer, read back exactly once and in order."""
    count = 20_000
    res = jh.produce_consume(broker.bootstrap, "java-pc", count, partitions=3)
    _check_produce_consume(broker, res, count)
    assert res.summary["created"] is True, _fail_context(broker, res.run)

    # ListOffsets agrees: exactly `count` records in the topic, starting at offset 0.
    run, offsets = jh.topic_offsets(broker.bootstrap, "java-pc")
    assert run.returncode == 0 and offsets is not None, _fail_context(broker, run)
    assert offsets["total"] == count, _fail_context(broker, run)
    assert set(offsets["earliest"].values()) == {0}, _fail_context(broker, run)
    assert offsets["latest"] == res.summary["per_partition"], _fail_context(broker, res.run, run)
    assert broker.alive(), "kaas exited during the test\n" + broker.log_text()[-4000:]


def test_java_existing_topic_and_restart(broker):
    """CreateTopics on an existing topic reports TopicExists (tolerated); acknowledged records
    survive a SIGKILL of the broker and are read again, followed by new ones."""
    first = jh.produce_consume(broker.bootstrap, "java-again", 3_000, partitions=3)
    _check_produce_consume(broker, first, 3_000)

    broker.restart()  # SIGKILL, same data dir and port

    run, offsets = jh.topic_offsets(broker.bootstrap, "java-again")
    assert run.returncode == 0 and offsets is not None, _fail_context(broker, run)
    assert offsets["total"] == 3_000, _fail_context(broker, run)
    assert offsets["latest"] == first.summary["per_partition"], _fail_context(broker, run)

    second = jh.produce_consume(broker.bootstrap, "java-again", 2_000, partitions=3)
    _check_produce_consume(broker, second, 2_000, preexisting=3_000)
    assert second.summary["created"] is False, _fail_context(broker, second.run)

    run, offsets = jh.topic_offsets(broker.bootstrap, "java-again")
    assert run.returncode == 0 and offsets is not None, _fail_context(broker, run)
    assert offsets["total"] == 5_000, _fail_context(broker, run)


def test_kafka_producer_perf_test(broker):
    """Apache Kafka's kafka-producer-perf-test: 200,000 x 1 KiB records, acks=all, unthrottled."""
    num_records = 200_000
    created = jh.create_topic(broker.bootstrap, "perf", partitions=3)
    assert created.returncode == 0, _fail_context(broker, created)

    res = jh.producer_performance(broker.bootstrap, "perf", num_records, record_size=1024,
                                  acks="all", throughput=-1)
    ctx = _fail_context(broker, res.run)
    assert res.run.returncode == 0, ctx
    assert res.exception_lines == [], f"send callbacks failed: {res.exception_lines[:5]}\n{ctx}"
    assert res.summary is not None, f"no final summary line from ProducerPerformance\n{ctx}"
    assert res.summary["sent"] == num_records, ctx
    assert res.summary["rps"] > 0, ctx
    print(f"\nkafka-producer-perf-test against kaas: {res.summary['rps']:.0f} records/s, "
          f"{res.summary['mbps']:.2f} MB/s, avg {res.summary['avg']:.1f} ms, "
          f"p99 {res.summary['p99']:.0f} ms, max {res.summary['max']:.0f} ms")

    # The log holds exactly the acknowledged records: none lost, none written twice.
    run, offsets = jh.topic_offsets(broker.bootstrap, "perf")
    assert run.returncode == 0 and offsets is not None, _fail_context(broker, run)
    assert offsets["total"] == num_records, _fail_context(broker, res.run, run)
    assert broker.alive(), "kaas exited during the test\n" + broker.log_text()[-4000:]
