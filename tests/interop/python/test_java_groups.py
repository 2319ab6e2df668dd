"""Consumer groups with Apache Kafka's Java client (kafka-clients 4.4) and console consumer.

1. kaas.interop.GroupConsume: two KafkaConsumers (classic protocol, CooperativeStickyAssignor)
   in threads split a topic by an incremental rebalance, one leaves and the other takes over
   all partitions; every record consumed, no duplicates, committed offsets == end offsets.
2. kaas.interop.Ctp: exactly-once consume-transform-produce with sendOffsetsToTransaction; a
   second instance with the same transactional.id fences the first (ProducerFencedException)
   halfway while the first has a transaction open. Run with KAAS_TRANSACTION_VERSION=1 (TV1:
   AddOffsetsToTxn + TxnOffsetCommit v4, EndTxn v4) and with =2 (the default), where
   Java 4.4 uses KIP-890 part 2 (Produce v12, TxnOffsetCommit v5, EndTxn v5); the request
   versions actually used are read from the broker's trace log.
3. Apache Kafka's console consumer (org.apache.kafka.tools.consumer.ConsoleConsumer) with a
   group reads N records, commits; a second run of the group reads nothing again; after more
   records a third run gets exactly the new ones.

Needs java and the built Maven project tests/interop/java (built on demand by javaharness).
"""
import collections
import re

import pytest
from confluent_kafka import ConsumerGroupTopicPartitions, TopicPartition
from confluent_kafka.admin import AdminClient

import javaharness as jh
from conftest import Broker, free_port
from kaashelpers import (assert_no_panic, create_topic, log_tail, produce_confluent, unique_topic,
                         watermarks)

ANSI_RE = re.compile(r"\x1b\[[0-9;]*m")
REQUEST_RE = re.compile(r"\brequest\b.*\bapi=(\w+) version=(\d+)")


def _ctx(broker, *runs) -> str:
    parts = [r.describe() for r in runs if r is not None]
    parts.append("--- kaas log (tail) ---\n" + log_tail(broker, 60))
    return "\n".join(parts)


def _request_versions(broker):
    """{api name: set of versions} from the broker's per-request trace lines."""
    seen = collections.defaultdict(set)
    for line in broker.log_text().splitlines():
        m = REQUEST_RE.search(ANSI_RE.sub("", line))
        if m:
            seen[m.group(1)].add(int(m.group(2)))
    return seen


def _group_offsets(bootstrap, group, topic, partitions):
    admin = AdminClient({"bootstrap.servers": bootstrap})
    res = admin.list_consumer_group_offsets(
        [ConsumerGroupTopicPartitions(group, [TopicPartition(topic, p) for p in range(partitions)])],
        require_stable=True, request_timeout=30)[group].result()
    return {tp.partition: tp.offset for tp in res.topic_partitions}


# ================================================================= 1. cooperative rebalance

def test_java_group_cooperative_split_and_takeover(broker):
    count, partitions = 20_000, 6
    topic = unique_topic("java-grp")
    group = unique_topic("java-grp-g")
    res = jh.group_consume(broker.bootstrap, topic, group, count, partitions)
    ctx = _ctx(broker, res.run)
    s = res.summary
    assert s is not None, "GroupConsume printed no JSON summary\n" + ctx
    assert res.run.returncode == 0 and s["ok"] is True, f"GroupConsume failed: {s['errors']}\n{ctx}"
    # The incremental rebalances, as the members' listeners saw them.
    assert sorted(s["split_a"] + s["split_b"]) == list(range(partitions)), ctx
    assert len(s["split_a"]) == len(s["split_b"]) == partitions // 2, ctx
    assert s["revoked_from_a_when_b_joined"] == s["split_b"], ctx
    assert s["added_to_a_when_b_left"] == s["split_b"], ctx
    assert s["described_state"] == "Stable", ctx
    assert s["described_assignor"] == "cooperative-sticky", ctx
    assert s["described_members"] == 2, ctx
    assert s["first_half_records_a"] > 0 and s["first_half_records_b"] > 0, ctx
    # Every record consumed, once; committed offsets at the end.
    assert s["distinct_consumed"] == count and s["missing_values"] == 0, ctx
    assert s["duplicates"] == 0, ctx
    assert s["records_a"] + s["records_b"] == count, ctx
    assert s["committed"] == s["end_offsets"], ctx
    assert sum(s["end_offsets"].values()) == count, ctx
    assert not any("LOST" in e for e in s["events"]), ctx
    # Cross-check with librdkafka's admin client (OffsetFetch from another client).
    committed = _group_offsets(broker.bootstrap, group, topic, partitions)
    assert {str(p): o for p, o in committed.items()} == s["end_offsets"], ctx
    assert broker.alive(), ctx
    assert_no_panic(broker)


# ================================================================ 2. consume-transform-produce

@pytest.mark.parametrize("txn_version", ["1", "2"], ids=["tv1", "tv2"])
def test_java_consume_transform_produce(tmp_path, txn_version):
    env = {"RUST_LOG": "info,kaas::protocol::connection=trace"}
    env["KAAS_TRANSACTION_VERSION"] = txn_version
    broker = Broker(tmp_path / "data", free_port(), extra_env=env).start()
    try:
        count, partitions = 4_000, 4
        res = jh.ctp(broker.bootstrap, unique_topic("java-ctp-in"), unique_topic("java-ctp-out"),
                     "java-ctp-group", "java-ctp", count, partitions)
        ctx = _ctx(broker, res.run)
        s = res.summary
        assert s is not None, "Ctp printed no JSON summary\n" + ctx
        assert res.run.returncode == 0 and s["ok"] is True, f"Ctp failed: {s['errors']}\n{ctx}"
        assert s["instance1_commit_error"] == "ProducerFencedException", ctx
        assert s["instance1_txns"] >= 5 and s["instance2_txns"] >= 5, ctx
        assert s["open_txn_records"] > 0, ctx
        assert s["instance1_records"] + s["instance2_records"] == count, ctx
        assert s["output_read_committed"] == count, ctx
        assert s["output_missing"] == 0 and s["output_duplicated"] == 0, ctx
        assert s["output_read_uncommitted"] == count + s["open_txn_records"], ctx
        assert s["output_lso"] == s["output_hw"], ctx
        assert s["group_committed"] == s["input_end_offsets"], ctx

        versions = _request_versions(broker)
        assert versions, "no request trace lines in the broker log\n" + ctx
        if txn_version == "2":
            # KIP-890 part 2: implicit partition/offset adds, epoch bump per transaction.
            assert 12 in versions["Produce"], versions
            assert versions["EndTxn"] == {5}, versions
            assert versions["TxnOffsetCommit"] == {5}, versions
            assert "AddPartitionsToTxn" not in versions, versions
        else:
            assert max(versions["Produce"]) <= 11, versions
            assert max(versions["EndTxn"]) <= 4, versions
            assert max(versions["TxnOffsetCommit"]) <= 4, versions
            assert "AddOffsetsToTxn" in versions and "AddPartitionsToTxn" in versions, versions
        assert broker.alive(), ctx
        assert_no_panic(broker)
    finally:
        broker.stop()


# ===================================================================== 3. console consumer

def _lines(run):
    return [ln for ln in run.stdout.splitlines() if ln.strip()]


def test_console_consumer_with_group(broker):
    topic = unique_topic("console-grp")
    group = unique_topic("console-g")
    partitions, n = 3, 3000
    create_topic(broker.bootstrap, topic, partitions)
    produce_confluent(broker.bootstrap, topic,
                      [(f"k{i}".encode(), f"v{i}".encode()) for i in range(n)])
    ends = watermarks(broker.bootstrap, topic, partitions)

    first = jh.console_consumer(broker.bootstrap, topic, "--group", group, "--from-beginning",
                                "--max-messages", str(n))
    ctx = _ctx(broker, first)
    assert first.returncode == 0, ctx
    assert f"Processed a total of {n} messages" in first.stderr, ctx
    values = _lines(first)
    assert len(values) == n, ctx
    assert sorted(values) == sorted(f"v{i}" for i in range(n)), ctx
    assert _group_offsets(broker.bootstrap, group, topic, partitions) == ends, ctx

    # Same group again, --from-beginning only applies without committed offsets: nothing new.
    second = jh.console_consumer(broker.bootstrap, topic, "--group", group, "--from-beginning",
                                 "--timeout-ms", "8000")
    ctx = _ctx(broker, second)
    assert "Processed a total of 0 messages" in second.stderr, ctx
    assert _lines(second) == [], ctx

    # New records: the group resumes at its committed offsets and gets exactly those.
    produce_confluent(broker.bootstrap, topic,
                      [(f"k{i}".encode(), f"w{i}".encode()) for i in range(500)])
    ends2 = watermarks(broker.bootstrap, topic, partitions)
    third = jh.console_consumer(broker.bootstrap, topic, "--group", group, "--from-beginning",
                                "--max-messages", "500")
    ctx = _ctx(broker, third)
    assert third.returncode == 0, ctx
    assert sorted(_lines(third)) == sorted(f"w{i}" for i in range(500)), ctx
    assert _group_offsets(broker.bootstrap, group, topic, partitions) == ends2, ctx
    assert broker.alive(), ctx
    assert_no_panic(broker)
