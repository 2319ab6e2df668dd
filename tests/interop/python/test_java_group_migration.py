"""KIP-848 online migration and group configs with Apache Kafka 4.4's Java client and tools
against the real kaas (store::group::migration, store::group_config).

1. kaas.interop.MigrateGroup: a classic Java consumer group commits offsets for half a topic;
   once the classic member left, the same group id consumed with group.protocol=consumer resumes
   at the committed offsets: nothing read twice, nothing skipped. kafka-consumer-groups lists the
   group as Classic before and Consumer after, and --describe shows the offsets with lag 0.
1b. kaas.interop.MixedGroup (store::group::mixed): a classic Java group of two members
   consuming; one restarted with group.protocol=consumer (online upgrade, the other stays a
   classic member inside the consumer group); both keep consuming; the consumer-protocol member
   leaves and the group is downgraded to classic; every record read exactly once, the committed
   offsets at the end of the topic.
2. kafka-configs --describe --entity-type groups: Kafka's group configs with the broker's values
   (DEFAULT_CONFIG), for a group that does not exist too; --alter is refused (an unknown name with
   Kafka's message).
3. Apache Kafka's VerifiableConsumer with --group-protocol consumer consumes what a producer
   wrote and commits it.
"""
import json
import re

import javaharness as jh
from kaashelpers import assert_no_panic, create_topic, log_tail, produce_confluent, unique_topic, watermarks


def _ctx(broker, *runs) -> str:
    parts = [r.describe() for r in runs if r is not None]
    parts.append("--- kaas log (tail) ---\n" + log_tail(broker, 60))
    return "\n".join(parts)


def _groups_tool(bootstrap, *args):
    return jh.run_java("org.apache.kafka.tools.consumer.group.ConsumerGroupCommand",
                       "--bootstrap-server", bootstrap, *args, timeout=120)


def _configs(bootstrap, *args):
    return jh.run_java("org.apache.kafka.tools.ConfigCommand", "--bootstrap-server", bootstrap,
                       "--entity-type", "groups", *args, timeout=120)


def _listed_type(bootstrap, group):
    run = _groups_tool(bootstrap, "--list", "--type")
    m = re.search(rf"^{re.escape(group)}\s+(\w+)\s*$", run.stdout, re.M)
    return (m.group(1) if m else None), run


def _committed_rows(bootstrap, group, topic):
    run = _groups_tool(bootstrap, "--describe", "--group", group)
    rows = {}
    for ln in run.stdout.splitlines():
        f = ln.split()
        if len(f) >= 6 and f[0] == group and f[1] == topic:
            rows[int(f[2])] = (f[3], f[4], f[5])
    return rows, run


def test_java_classic_group_moves_to_the_consumer_protocol_with_its_offsets(broker):
    topic = unique_topic("mig")
    group = unique_topic("mig-g")
    partitions, n = 3, 3000
    create_topic(broker.bootstrap, topic, partitions)
    produce_confluent(broker.bootstrap, topic, [(f"k{i}".encode(), f"v{i}".encode()) for i in range(n)])
    ends = watermarks(broker.bootstrap, topic, partitions)

    res = jh.run_java("kaas.interop.MigrateGroup", broker.bootstrap, topic, group, str(n), timeout=300)
    s = jh.last_json_line(res.stdout)
    ctx = _ctx(broker, res)
    assert s is not None, "MigrateGroup printed no JSON summary\n" + ctx
    assert res.returncode == 0 and s["ok"] is True, f"MigrateGroup failed: {s['errors']}\n{ctx}"
    assert s["classic_records"] >= n // 2 and s["consumer_records"] > 0, ctx
    assert s["classic_records"] + s["consumer_records"] == n and s["duplicates"] == 0 and s["missing"] == 0, ctx
    # Resumed exactly at the classic consumer's commits, on every partition it had read.
    for p, offset in s["classic_committed"].items():
        if offset < ends[int(p)]:
            assert s["consumer_first"][p] == offset, ctx
    assert s["described_type"] == "Consumer", ctx

    kind, listed = _listed_type(broker.bootstrap, group)
    assert kind == "Consumer", _ctx(broker, listed)
    rows, described = _committed_rows(broker.bootstrap, group, topic)
    ctx = _ctx(broker, described)
    assert sorted(rows) == list(range(partitions)), ctx
    for p, (current, end, lag) in rows.items():
        assert int(current) == ends[p] and int(end) == ends[p] and lag == "0", ctx
    assert broker.alive(), ctx
    assert_no_panic(broker)


def test_java_group_in_use_upgrades_and_downgrades_online(broker):
    topic = unique_topic("mix")
    group = unique_topic("mix-g")
    partitions, n = 3, 3000
    create_topic(broker.bootstrap, topic, partitions)
    produce_confluent(broker.bootstrap, topic, [(f"k{i}".encode(), f"v{i}".encode()) for i in range(n)])
    ends = watermarks(broker.bootstrap, topic, partitions)

    res = jh.run_java("kaas.interop.MixedGroup", broker.bootstrap, topic, group, str(n), timeout=400)
    s = jh.last_json_line(res.stdout)
    ctx = _ctx(broker, res)
    assert s is not None, "MixedGroup printed no JSON summary\n" + ctx
    assert res.returncode == 0 and s["ok"] is True, f"MixedGroup failed: {s['errors']}\n{ctx}"
    assert s["read"] == n and s["duplicates"] == 0 and s["missing"] == 0, ctx
    assert s["classic_a"] > 0 and s["classic_b"] > 0 and s["consumer_c"] > 0, ctx
    assert (s["classic_type"], s["mixed_type"], s["final_type"]) == ("Classic", "Consumer", "Classic"), ctx
    rows, described = _committed_rows(broker.bootstrap, group, topic)
    ctx = _ctx(broker, res, described)
    assert {p: int(r[0]) for p, r in rows.items()} == {p: ends[p] for p in range(partitions)}, ctx
    kind, listed = _listed_type(broker.bootstrap, group)
    assert kind == "Classic", _ctx(broker, listed)
    assert broker.alive(), ctx
    assert_no_panic(broker)


def test_console_consumer_classic_group_is_listed_classic_then_consumer(broker):
    """The group type as kafka-consumer-groups shows it, before and after the migration."""
    topic = unique_topic("migc")
    group = unique_topic("migc-g")
    create_topic(broker.bootstrap, topic, 1)
    produce_confluent(broker.bootstrap, topic, [(b"k", f"v{i}".encode()) for i in range(10)])
    first = jh.console_consumer(broker.bootstrap, topic, "--group", group, "--from-beginning",
                                "--max-messages", "10")
    assert first.returncode == 0, _ctx(broker, first)
    kind, listed = _listed_type(broker.bootstrap, group)
    assert kind == "Classic", _ctx(broker, first, listed)
    produce_confluent(broker.bootstrap, topic, [(b"k", f"w{i}".encode()) for i in range(5)])
    second = jh.console_consumer(broker.bootstrap, topic, "--group", group, "--max-messages", "5",
                                 "--consumer-property", "group.protocol=consumer")
    ctx = _ctx(broker, first, second)
    assert second.returncode == 0, ctx
    lines = [ln for ln in second.stdout.splitlines() if ln.strip() and not ln.startswith("Option ")]
    assert lines == [f"w{i}" for i in range(5)], ctx
    kind, listed = _listed_type(broker.bootstrap, group)
    assert kind == "Consumer", _ctx(broker, listed)
    assert_no_panic(broker)


def test_kafka_configs_describes_group_configs(broker):
    group = unique_topic("cfg-g")
    run = _configs(broker.bootstrap, "--entity-name", group, "--describe", "--all")
    ctx = _ctx(broker, run)
    assert run.returncode == 0, ctx
    assert f"All configs for group {group} are:" in run.stdout, ctx
    lines = {ln.strip().split("=", 1)[0]: ln.strip() for ln in run.stdout.splitlines() if "=" in ln}
    assert lines["consumer.session.timeout.ms"].startswith("consumer.session.timeout.ms=45000 "), ctx
    assert "DEFAULT_CONFIG:consumer.session.timeout.ms=45000" in lines["consumer.session.timeout.ms"], ctx
    assert lines["consumer.heartbeat.interval.ms"].startswith("consumer.heartbeat.interval.ms=5000 "), ctx
    assert "share.record.lock.duration.ms" in lines and "streams.num.standby.replicas" in lines, ctx
    assert "consumer.assignor.offload.enable" not in lines, "an internal config is not described\n" + ctx
    # Without --all: only the configs set on the group, and none is set yet.
    dynamic = _configs(broker.bootstrap, "--entity-name", group, "--describe")
    assert dynamic.returncode == 0 and "consumer.session.timeout.ms" not in dynamic.stdout, _ctx(broker, dynamic)

    bad = _configs(broker.bootstrap, "--entity-name", group, "--alter", "--add-config", "session.timeout.ms=1")
    out = bad.stdout + bad.stderr
    assert bad.returncode != 0, _ctx(broker, bad)
    assert "InvalidConfigurationException: Unknown group config name: session.timeout.ms" in out, _ctx(broker, bad)
    # A share-group config: kaas serves no share groups, so it cannot hold one.
    refused = _configs(broker.bootstrap, "--entity-name", group, "--alter", "--add-config",
                       "share.session.timeout.ms=50000")
    assert refused.returncode != 0 and "InvalidConfigurationException" in refused.stdout + refused.stderr, \
        _ctx(broker, refused)
    # The consumer group timers are kept per group (test_kafka_configs_tool.py goes further).
    taken = _configs(broker.bootstrap, "--entity-name", group, "--alter", "--add-config",
                     "consumer.session.timeout.ms=50000")
    assert taken.returncode == 0, _ctx(broker, taken)
    assert_no_panic(broker)


def test_verifiable_consumer_with_the_consumer_protocol(broker):
    topic = unique_topic("vc")
    group = unique_topic("vc-g")
    partitions, n = 3, 1500
    create_topic(broker.bootstrap, topic, partitions)
    produce_confluent(broker.bootstrap, topic, [(f"k{i}".encode(), f"v{i}".encode()) for i in range(n)])
    ends = watermarks(broker.bootstrap, topic, partitions)
    run = jh.run_java("org.apache.kafka.tools.VerifiableConsumer", "--bootstrap-server", broker.bootstrap,
                      "--topic", topic, "--group-id", group, "--group-protocol", "consumer",
                      "--reset-policy", "earliest", "--max-messages", str(n), timeout=180)
    ctx = _ctx(broker, run)
    assert run.returncode == 0, ctx
    events = []
    for ln in run.stdout.splitlines():
        try:
            events.append(json.loads(ln))
        except ValueError:
            continue
    names = [e.get("name") for e in events]
    assert "startup_complete" in names and "shutdown_complete" in names, ctx
    assert sum(e["count"] for e in events if e.get("name") == "records_consumed") == n, ctx
    commits = [e for e in events if e.get("name") == "offsets_committed"]
    assert commits and all(e["success"] for e in commits), ctx
    last = {}
    for e in commits:
        for o in e["offsets"]:
            last[o["partition"]] = o["offset"]
    assert last == {p: ends[p] for p in range(partitions)}, ctx
    rows, described = _committed_rows(broker.bootstrap, group, topic)
    ctx = _ctx(broker, run, described)
    assert {p: int(r[0]) for p, r in rows.items()} == {p: ends[p] for p in range(partitions)}, ctx
    kind, listed = _listed_type(broker.bootstrap, group)
    assert kind == "Consumer", _ctx(broker, listed)
    assert_no_panic(broker)
