"""Apache Kafka 4.4's own admin tools against kaas: the calls that need ApiVersions v4,
ListOffsets v8+ and the internal topics in Metadata, DescribeQuorum, ListConfigResources and
DescribeConfigs of the internal topics and of a broker."""
import time

from confluent_kafka import Producer

import javaharness
import kaashelpers
from conftest import Broker, free_port, poll_until


def tool(main_class, bootstrap, *args, ok=True):
    run = javaharness.run_java(main_class, "--bootstrap-server", bootstrap, *args, timeout=120)
    if ok:
        assert run.returncode == 0, run.describe()
    # Kafka's tools print some failures (an API the broker does not serve) and still exit 0.
    assert "Exception" not in run.stdout + run.stderr, run.describe()
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
    # earliest-pending-upload (v11, KIP-1023): likewise none without remote storage.
    assert offsets("-6") == [], offsets("-6")
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


def test_log_dirs_tool_describes_the_partitions_led_here(broker):
    topic = kaashelpers.unique_topic("dirs")
    kaashelpers.create_topic(broker.bootstrap, topic, 2)
    kaashelpers.produce_confluent(broker.bootstrap, topic, [(None, b"x" * 1000) for _ in range(20)])
    out = tool("org.apache.kafka.tools.LogDirsCommand", broker.bootstrap, "--describe", "--topic-list", topic).stdout
    report = javaharness.last_json_line(out)
    assert report is not None, out
    (b,) = report["brokers"]
    (d,) = b["logDirs"]
    assert d["error"] is None and d["logDir"].endswith("/topics"), d
    sizes = {p["partition"]: p["size"] for p in d["partitions"]}
    assert set(sizes) == {f"{topic}-0", f"{topic}-1"}, sizes
    # Kafka's size of a log: its batches' bytes (20 records of 1,000 bytes, at most one batch of
    # 61 bytes of header and 10 or so of record framing each), not the zeros kaas writes ahead of
    # the appends nor its index and state files (which made it 4 KiB and more a partition).
    assert 20_000 < sum(sizes.values()) <= 21_500, sizes
    kaashelpers.assert_no_panic(broker)


def test_leader_election_and_reassignment_tools_find_nothing_to_do(broker):
    topic = kaashelpers.unique_topic("elect")
    kaashelpers.create_topic(broker.bootstrap, topic, 2)
    run = tool("org.apache.kafka.tools.LeaderElectionCommand", broker.bootstrap, "--election-type", "preferred",
               "--topic", topic, "--partition", "0", ok=False)
    # One copy per partition: its leader is the preferred replica already (ELECTION_NOT_NEEDED).
    assert "Valid replica already elected for partitions" in run.stdout, run.describe()
    run = tool("org.apache.kafka.tools.LeaderElectionCommand", broker.bootstrap, "--election-type", "preferred",
               "--all-topic-partitions")
    # Every partition is led by its preferred replica: nothing to report, and no error.
    assert run.stdout.strip() == "", run.describe()
    run = tool("org.apache.kafka.tools.LeaderElectionCommand", broker.bootstrap, "--election-type", "unclean",
               "--topic", topic, "--partition", "1")
    assert "Valid replica already elected for partitions " + topic + "-1" in run.stdout, run.describe()
    listed = tool("org.apache.kafka.tools.reassign.ReassignPartitionsCommand", broker.bootstrap, "--list").stdout
    assert "No partition reassignments found." in listed, listed
    kaashelpers.assert_no_panic(broker)


def test_configs_tool_describes_no_quotas_and_no_scram_users(broker):
    users = tool("org.apache.kafka.tools.ConfigCommand", broker.bootstrap, "--describe", "--entity-type", "users")
    clients = tool("org.apache.kafka.tools.ConfigCommand", broker.bootstrap, "--describe", "--entity-type", "clients")
    # Nothing configured: no quota lines, no SCRAM credential lines.
    assert "Quota configs" not in users.stdout + clients.stdout, users.describe() + clients.describe()
    assert "SCRAM credential configs" not in users.stdout, users.describe()
    alice = tool("org.apache.kafka.tools.ConfigCommand", broker.bootstrap, "--describe", "--entity-type", "users",
                 "--entity-name", "alice")
    assert "SCRAM credential configs" not in alice.stdout, alice.describe()
    kaashelpers.assert_no_panic(broker)


def quorum_status(bootstrap):
    """kafka-metadata-quorum describe --status as {field: value}."""
    out = tool("org.apache.kafka.tools.MetadataQuorumCommand", bootstrap, "describe", "--status").stdout
    return dict(line.split(":", 1) for line in out.splitlines() if ":" in line), out


def test_metadata_quorum_tool_describes_the_live_brokers_as_the_quorum(tmp_path):
    tick = {"KAAS_CLUSTER_TICK_MS": "200"}
    brokers = [Broker(tmp_path / "shared", free_port(), tick, node_id=i).start() for i in (1, 2)]
    endpoints = [f'{{"id": {b.node_id}, "endpoints": ["PLAINTEXT://{b.bootstrap}"]}}' for b in brokers]

    def both_voters(b):
        status, out = quorum_status(b.bootstrap)
        return (status if status["CurrentVoters"].strip() == "[" + ", ".join(endpoints) + "]" else None), out

    for b in brokers:  # each broker answers, and both tell the same story
        status = poll_until(lambda: both_voters(b)[0], 15, f"both voters via {b.bootstrap}")
        assert status["LeaderId"].strip() == "1", status  # the controller: the lowest live id
        assert status["LeaderEpoch"].strip() == "0", status  # never elected
        assert status["HighWatermark"].strip() == "-1", status  # no metadata log
        assert status["MaxFollowerLag"].strip() == "0", status
        assert status["MaxFollowerLagTimeMs"].strip() == "0", status
        assert status["CurrentObservers"].strip() == "[]", status
    for extra in ([], ["--human-readable"]):
        out = tool("org.apache.kafka.tools.MetadataQuorumCommand", brokers[1].bootstrap, "describe", "--replication",
                   *extra).stdout
        rows = [line.split() for line in out.splitlines()[1:] if line.strip()]
        assert [(r[0], r[2], r[3], r[-1]) for r in rows] == [("1", "-1", "0", "Leader"), ("2", "-1", "0", "Follower")], out
    brokers[0].kill()
    brokers[0].finished = True  # killed for good; its log is still checked for panics below
    alone = f'[{{"id": 2, "endpoints": ["PLAINTEXT://{brokers[1].bootstrap}"]}}]'
    status = poll_until(lambda: (lambda st: st if st["CurrentVoters"].strip() == alone else None)(
        quorum_status(brokers[1].bootstrap)[0]), 15, "the survivor alone")
    assert status["LeaderId"].strip() == "2", status
    brokers[1].stop()
    for b in brokers:
        kaashelpers.assert_no_panic(b)


def test_topics_tool_describes_the_internal_topics(broker):
    topic = kaashelpers.unique_topic("described")
    kaashelpers.create_topic(broker.bootstrap, topic, 1)

    def configs(out, name):
        line = next(l for l in out.splitlines() if l.startswith(f"Topic: {name}\t"))
        return line, dict(kv.split("=", 1) for kv in line.split("Configs:")[1].strip().split(",") if kv)

    out = tool("org.apache.kafka.tools.TopicCommand", broker.bootstrap, "--describe", "--topic", "__consumer_offsets").stdout
    line, cfg = configs(out, "__consumer_offsets")
    assert "PartitionCount: 50" in line, out
    # min.insync.replicas=1 is the cluster default a new Kafka 4.4 cluster records (KIP-966), which
    # kafka-topics shows for every topic, as against Kafka.
    assert cfg == {"cleanup.policy": "compact", "compression.type": "producer", "segment.bytes": "104857600",
                   "min.insync.replicas": "1"}, line
    assert sum(1 for l in out.splitlines() if "Partition: " in l) == 50, out
    every = tool("org.apache.kafka.tools.TopicCommand", broker.bootstrap, "--describe").stdout
    assert configs(every, "__transaction_state")[1] == {
        "cleanup.policy": "compact", "compression.type": "uncompressed", "min.insync.replicas": "1",
        "segment.bytes": "104857600", "unclean.leader.election.enable": "false"}, every
    assert configs(every, "__consumer_offsets")[1] == cfg, every
    assert configs(every, topic)[1] == {"min.insync.replicas": "1"}, every
    external = tool("org.apache.kafka.tools.TopicCommand", broker.bootstrap, "--describe", "--exclude-internal").stdout
    assert f"Topic: {topic}\t" in external and "__consumer_offsets" not in external, external
    # Kafka lets their configs be changed; kaas keeps that state in sled and says so.
    run = javaharness.run_java("org.apache.kafka.tools.ConfigCommand", "--bootstrap-server", broker.bootstrap,
                               "--alter", "--entity-type", "topics", "--entity-name", "__consumer_offsets",
                               "--add-config", "retention.ms=1000", timeout=120)
    assert "InvalidRequestException: The configs of internal topic __consumer_offsets cannot be changed on kaas" \
        in run.stdout + run.stderr, run.describe()
    kaashelpers.assert_no_panic(broker)


def test_config_resources_are_listed_to_the_admin_client_and_the_tools(broker):
    topic = kaashelpers.unique_topic("resources")
    kaashelpers.create_topic(broker.bootstrap, topic, 1)

    def listed(*types):
        run = javaharness.run_java("kaas.interop.ListConfigResources", broker.bootstrap, *types, timeout=120)
        report = javaharness.last_json_line(run.stdout)
        assert report is not None and "error" not in report, run.describe()
        return report["resources"]

    node = broker.node_id
    assert listed() == sorted([f"BROKER:{node}", f"BROKER_LOGGER:{node}", "TOPIC:__consumer_offsets",
                               "TOPIC:__transaction_state", f"TOPIC:{topic}"])
    assert listed("BROKER") == [f"BROKER:{node}"]
    assert listed("GROUP", "CLIENT_METRICS") == []
    # The tools that list through it: nothing to show, and no error.
    run = tool("org.apache.kafka.tools.ClientMetricsCommand", broker.bootstrap, "--list")
    assert run.stdout.strip() == "", run.describe()
    run = tool("org.apache.kafka.tools.ConfigCommand", broker.bootstrap, "--describe", "--entity-type", "client-metrics")
    assert run.stdout.strip() == "", run.describe()
    run = tool("org.apache.kafka.tools.ConfigCommand", broker.bootstrap, "--describe", "--entity-type", "client-metrics",
               "--entity-name", "sub")
    assert "The client-metric 'sub' doesn't exist" in run.stdout, run.describe()
    run = tool("org.apache.kafka.tools.ConfigCommand", broker.bootstrap, "--describe", "--entity-type",
               "broker-loggers", "--entity-name", str(node))
    assert run.stdout.strip() == f"Dynamic configs for broker-logger {node} are:", run.describe()
    kaashelpers.assert_no_panic(broker)


def test_configs_tool_describes_a_brokers_configs(broker):
    node = str(broker.node_id)
    out = tool("org.apache.kafka.tools.ConfigCommand", broker.bootstrap, "--describe", "--entity-type", "brokers",
               "--entity-name", node, "--all").stdout
    lines = {l.strip().split("=", 1)[0]: l.strip() for l in out.splitlines() if " sensitive=" in l}
    assert lines["log.cleaner.enable"] == ("log.cleaner.enable=true sensitive=false synonyms="
                                           "{DEFAULT_CONFIG:log.cleaner.enable=true}"), out
    assert lines["message.max.bytes"] == ("message.max.bytes=1048588 sensitive=false synonyms="
                                          "{DEFAULT_CONFIG:message.max.bytes=1048588}"), out
    assert lines["listeners"].startswith(f"listeners=PLAINTEXT://{broker.bootstrap} "), out
    # Only dynamic configs by default: none is set yet.
    dynamic = tool("org.apache.kafka.tools.ConfigCommand", broker.bootstrap, "--describe", "--entity-type", "brokers",
                   "--entity-name", node).stdout
    assert dynamic.strip() == f"Dynamic configs for broker {node} are:", dynamic
    default = tool("org.apache.kafka.tools.ConfigCommand", broker.bootstrap, "--describe", "--entity-type", "brokers",
                   "--entity-default").stdout
    # As on a new Apache Kafka 4.4 cluster, whose controller records min.insync.replicas as a
    # cluster default at bootstrap (KIP-966).
    assert default.strip().splitlines() == [
        "Default configs for brokers in the cluster are:",
        "  min.insync.replicas=1 sensitive=false synonyms={DYNAMIC_DEFAULT_BROKER_CONFIG:min.insync.replicas=1}"
    ], default
    assert lines["min.insync.replicas"] == (
        "min.insync.replicas=1 sensitive=false synonyms={DYNAMIC_DEFAULT_BROKER_CONFIG:min.insync.replicas=1, "
        "DEFAULT_CONFIG:min.insync.replicas=1}"), out
    kaashelpers.assert_no_panic(broker)
