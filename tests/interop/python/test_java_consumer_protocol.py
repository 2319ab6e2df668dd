"""The KIP-848 consumer group protocol (group.protocol=consumer) with Apache Kafka's Java client
4.4 and its tools against the real kaas.

1. kaas.interop.GroupConsume with group.protocol=consumer: two KafkaConsumers of one group split
   a 6-partition topic (the broker's `uniform` assignor: 3 + 3, disjoint and complete, the first
   member revoking exactly what the second gets), both consume, one leaves and the other takes
   its partitions; every record is read exactly once between them and the committed offsets
   (OffsetCommit v9 with member epochs) equal the end offsets. Admin.describeConsumerGroups
   (ConsumerGroupDescribe) shows a Consumer group, Stable, two members, assignor "uniform".
2. kaas.interop.Ctp with group.protocol=consumer: exactly-once consume-transform-produce
   (sendOffsetsToTransaction with the consumer's group metadata: TxnOffsetCommit carries the
   member id and member epoch); a second instance with the same transactional.id fences the
   first halfway; the output holds every input record exactly once and the group's committed
   offsets equal the input end offsets.
3. The console consumer with --consumer-property group.protocol=consumer reads N records and
   commits them; kafka-consumer-groups --describe (ConsumerGroupCommand) then shows the group's
   offsets with lag 0, and --list --type consumer lists it.
"""
import re

import javaharness as jh
from conftest import Broker, free_port
from kaashelpers import assert_no_panic, create_topic, log_tail, produce_confluent, unique_topic, watermarks


def _ctx(broker, *runs) -> str:
    parts = [r.describe() for r in runs if r is not None]
    parts.append("--- kaas log (tail) ---\n" + log_tail(broker, 60))
    return "\n".join(parts)


def _lines(run):
    # 4.4 prints a deprecation note for --consumer-property on stdout.
    return [ln for ln in run.stdout.splitlines() if ln.strip() and not ln.startswith("Option ")]


def _groups_tool(bootstrap, *args):
    return jh.run_java("org.apache.kafka.tools.consumer.group.ConsumerGroupCommand",
                       "--bootstrap-server", bootstrap, *args, timeout=120)


def test_java_consumer_protocol_split_and_takeover(broker):
    count, partitions = 12_000, 6
    topic = unique_topic("java-848")
    group = unique_topic("java-848-g")
    res = jh.group_consume(broker.bootstrap, topic, group, count, partitions, protocol="consumer")
    ctx = _ctx(broker, res.run)
    s = res.summary
    assert s is not None, "GroupConsume printed no JSON summary\n" + ctx
    assert res.run.returncode == 0 and s["ok"] is True, f"GroupConsume failed: {s['errors']}\n{ctx}"
    assert sorted(s["split_a"] + s["split_b"]) == list(range(partitions)), ctx
    assert len(s["split_a"]) == len(s["split_b"]) == partitions // 2, ctx
    # Revoke first, then assign: A gave up exactly what B got; B's share came back to A.
    assert s["revoked_from_a_when_b_joined"] == s["split_b"], ctx
    assert s["added_to_a_when_b_left"] == s["split_b"], ctx
    assert s["described_type"] == "Consumer", ctx
    assert s["described_state"] == "Stable", ctx
    assert s["described_assignor"] == "uniform", ctx
    assert s["described_members"] == 2, ctx
    assert s["first_half_records_a"] > 0 and s["first_half_records_b"] > 0, ctx
    assert s["distinct_consumed"] == count and s["missing_values"] == 0, ctx
    assert s["duplicates"] == 0, ctx
    assert s["records_a"] + s["records_b"] == count, ctx
    assert s["committed"] == s["end_offsets"], ctx
    assert not any("LOST" in e for e in s["events"]), ctx
    assert broker.alive(), ctx
    assert_no_panic(broker)


def test_console_consumer_and_groups_tool_with_consumer_protocol(broker):
    topic = unique_topic("console-848")
    group = unique_topic("console-848-g")
    partitions, n = 3, 2000
    create_topic(broker.bootstrap, topic, partitions)
    produce_confluent(broker.bootstrap, topic, [(f"k{i}".encode(), f"v{i}".encode()) for i in range(n)])
    ends = watermarks(broker.bootstrap, topic, partitions)

    run = jh.console_consumer(broker.bootstrap, topic, "--group", group, "--from-beginning",
                              "--max-messages", str(n),
                              "--consumer-property", "group.protocol=consumer")
    ctx = _ctx(broker, run)
    assert run.returncode == 0, ctx
    assert f"Processed a total of {n} messages" in run.stderr, ctx
    assert sorted(_lines(run)) == sorted(f"v{i}" for i in range(n)), ctx

    listed = _groups_tool(broker.bootstrap, "--list", "--type", "consumer")
    ctx = _ctx(broker, listed)
    assert listed.returncode == 0, ctx
    assert re.search(rf"^{re.escape(group)}\s+Consumer\s*$", listed.stdout, re.M), ctx

    described = _groups_tool(broker.bootstrap, "--describe", "--group", group)
    ctx = _ctx(broker, described)
    assert described.returncode == 0, ctx
    rows = {}
    for ln in described.stdout.splitlines():
        f = ln.split()
        if len(f) >= 6 and f[0] == group and f[1] == topic:
            rows[int(f[2])] = (f[3], f[4], f[5])
    assert sorted(rows) == list(range(partitions)), ctx
    for p, (current, end, lag) in rows.items():
        assert int(current) == ends[p] and int(end) == ends[p] and lag == "0", ctx
    state = _groups_tool(broker.bootstrap, "--describe", "--group", group, "--state")
    ctx = _ctx(broker, state)
    assert state.returncode == 0 and re.search(r"\buniform\b", state.stdout), ctx
    assert re.search(r"\bEmpty\b", state.stdout), ctx
    assert broker.alive(), ctx
    assert_no_panic(broker)


def test_java_consume_transform_produce_with_consumer_protocol(tmp_path):
    env = {"RUST_LOG": "info,kaas::protocol::connection=trace"}
    broker = Broker(tmp_path / "data", free_port(), extra_env=env).start()
    try:
        count, partitions = 4_000, 4
        res = jh.ctp(broker.bootstrap, unique_topic("ctp848-in"), unique_topic("ctp848-out"),
                     unique_topic("ctp848-g"), "ctp848", count, partitions, protocol="consumer")
        ctx = _ctx(broker, res.run)
        s = res.summary
        assert s is not None, "Ctp printed no JSON summary\n" + ctx
        assert res.run.returncode == 0 and s["ok"] is True, f"Ctp failed: {s['errors']}\n{ctx}"
        assert s["instance1_commit_error"] == "ProducerFencedException", ctx
        assert s["instance1_records"] + s["instance2_records"] == count, ctx
        assert s["output_read_committed"] == count, ctx
        assert s["output_missing"] == 0 and s["output_duplicated"] == 0, ctx
        assert s["group_committed"] == s["input_end_offsets"], ctx
        log = re.sub(r"\x1b\[[0-9;]*m", "", broker.log_text())
        assert re.search(r"api=ConsumerGroupHeartbeat", log), "the consumers did not use KIP-848\n" + ctx
        assert re.search(r"api=TxnOffsetCommit", log), ctx
        assert broker.alive(), ctx
        assert_no_panic(broker)
    finally:
        broker.stop()
