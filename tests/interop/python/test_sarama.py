"""IBM/sarama (Go) against kaas: the program in tests/interop/go/sarama (a file per scenario), built from its committed go.mod /
go.sum (github.com/IBM/sarama v1.61.1 through the Go module proxy), runs one scenario per test
against a fresh broker and prints what it saw as one JSON line ("RESULT {...}"); the assertions
are here.

  sync   idempotent SyncProducer (MaxOpenRequests 1, WaitForAll, retries): 2,000 records over a
         6-partition topic made with ClusterAdmin.CreateTopic, read back: each once, at its
         acknowledged offset, in order per partition
  async  the same with an idempotent AsyncProducer and 5,000 records
  txn    transactional SyncProducer: a committed (300), an aborted (200) and a third (30)
         transaction; while the third is open, ListOffsets read_committed stops at its first
         record in each partition; read_committed sees 330 records and no aborted one,
         read_uncommitted 530
  lso    60 transactions, each followed at once by ListOffsets read_committed and
         read_uncommitted: the last stable offset must not pass a transaction whose marker is
         not below the high watermark yet (kaas let it until 2026-12-07)
  ctp    consume-transform-produce: a classic ConsumerGroup (read_committed, no auto-commit)
         and one transactional producer per claimed partition, offsets sent with
         AddMessageToTxnWithGroupMetadata (TxnOffsetCommit with the session's member id and
         generation); the first batch is aborted once (its offsets must not be committed) and
         redone: the output holds each input record once read_committed, the group's offsets
         equal the input's end offsets
  group  two ConsumerGroup members sharing a generation before the records are written: every
         record consumed once across them, offsets committed, ListConsumerGroups /
         DescribeConsumerGroups (Stable, two members covering the six partitions; Empty after)
  admin  ClusterAdmin: CreateTopic (with a config; again: TOPIC_ALREADY_EXISTS), ListTopics,
         DescribeTopics, DescribeConfig, CreatePartitions (grow; shrink: INVALID_PARTITIONS),
         a write to a new partition, DescribeCluster, DeleteTopic (again: UNKNOWN_TOPIC)

Each runs with sarama's default Config.Version (V2_8_0_0: what users who never set Version get)
and with sarama.MaxVersion (V4_3_1_0 in v1.61.1), which changes the request versions (checked
from the broker's per-request trace lines). sarama speaks the TV1 transaction protocol (EndTxn
v3, AddPartitionsToTxn v3) on kaas's default transaction.version 2, as on Apache Kafka 4.x.

Timing on the 2-core dev machine: all 14 tests about 31 s; the first `go build` with a cold
module and build cache adds about 30 s. Never skipped: without a Go toolchain (`go` on
PATH, /usr/local/go/bin/go, $GOROOT/bin/go) the tests fail and say so.
"""
import collections
import json
import os
import subprocess
from pathlib import Path

import pytest

from conftest import ANSI_RE, Broker, free_port
from kaashelpers import assert_no_panic, go_build, request_counts


GO_DIR = Path(__file__).resolve().parents[1] / "go" / "sarama"
VERSIONS = {"default": "2.8.0", "max": "4.3.1"}  # sarama v1.61.1: DefaultVersion, MaxVersion


@pytest.fixture(scope="module")
def sarama_bin(tmp_path_factory):
    """The scenario program, built with the committed go.sum (-mod=readonly, the default: a
    go.sum that does not match go.mod fails the build instead of being rewritten)."""
    out = tmp_path_factory.mktemp("sarama-bin") / "sarama-interop"
    return go_build(GO_DIR, out, "the sarama interop tests need Go >= 1.26 (sarama v1.61.1's minimum)")


def _versions(broker):
    v = collections.defaultdict(set)
    for api, version in request_counts(broker):
        v[api].add(version)
    return v


def _run(sarama_bin, tmp_path, version, scenario):
    """Starts a broker, runs one scenario against it; (result, broker, context for messages)."""
    broker = Broker(tmp_path / "data", free_port(),
                    extra_env={"RUST_LOG": "info,kaas::protocol::connection=trace"}).start()
    env = dict(os.environ, SARAMA_LOG="1")
    try:
        proc = subprocess.run([sarama_bin, "-bootstrap", broker.bootstrap, "-version", version,
                               "-scenario", scenario, "-prefix", f"sarama-{version}"],
                              env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                              timeout=120)
        out, err, rc = proc.stdout, proc.stderr, proc.returncode
    except subprocess.TimeoutExpired as e:
        out, err, rc = e.stdout or "", e.stderr or "", None
        out, err = (x.decode(errors="replace") if isinstance(x, bytes) else x for x in (out, err))
    lines = [line[len("RESULT "):] for line in out.splitlines() if line.startswith("RESULT ")]
    ctx = (f"sarama-interop -version {version} -scenario {scenario}: exit code {rc}\n"
           f"--- stdout ---\n{out[-4000:]}\n--- sarama log (tail) ---\n{err[-6000:]}\n"
           f"--- kaas log (tail) ---\n"
           + "\n".join(line for line in ANSI_RE.sub("", broker.log_text()).splitlines()
                       if " TRACE " not in line)[-4000:])
    assert lines, "no RESULT line\n" + ctx
    result = json.loads(lines[-1])
    assert "fatal" not in result and rc == 0, ctx
    print(f"\nsarama {scenario} ({version}): {json.dumps(result)}")
    assert result["sarama_version"] == VERSIONS[version], ctx
    assert broker.alive(), "kaas exited\n" + ctx
    assert_no_panic(broker)
    versions = _versions(broker)
    print("requests seen: " + ", ".join(f"{api} v{sorted(v)}" for api, v in sorted(versions.items())))
    # The two parametrisations really speak different protocol versions (v0: Broker.start's probe).
    assert versions["ApiVersions"] - {0} == ({3} if version == "default" else {4}), dict(versions)
    return result, broker, ctx + f"\n--- requests ---\n{dict(versions)}"


def _check_read_back(r, produced, ctx):
    assert r["produced"] == produced and r["acked"] == produced, ctx
    assert r["partitions_used"] == 6, ctx
    assert r["acked_offsets_increase"], ctx
    assert r["end_offsets_sum"] == produced, ctx
    assert r["read"] == produced and r["distinct"] == produced, ctx
    assert r["duplicates"] == 0 and r["missing"] == 0 and r["unknown"] == 0, ctx
    assert r["misplaced"] == 0, ctx  # every record read at the partition/offset it was acked at
    assert r["partitions_out_of_order"] == 0, ctx


@pytest.mark.parametrize("version", list(VERSIONS))
def test_sarama_idempotent_sync_producer(sarama_bin, tmp_path, version):
    r, broker, ctx = _run(sarama_bin, tmp_path, version, "sync")
    _check_read_back(r, 2000, ctx)
    v = _versions(broker)
    assert "InitProducerId" in v and "CreateTopics" in v, dict(v)
    broker.stop()


@pytest.mark.parametrize("version", list(VERSIONS))
def test_sarama_idempotent_async_producer(sarama_bin, tmp_path, version):
    r, broker, ctx = _run(sarama_bin, tmp_path, version, "async")
    assert not r["produce_errors"], ctx
    _check_read_back(r, 5000, ctx)
    broker.stop()


@pytest.mark.parametrize("version", list(VERSIONS))
def test_sarama_transactions(sarama_bin, tmp_path, version):
    r, broker, ctx = _run(sarama_bin, tmp_path, version, "txn")
    assert r["status_after_commit"] == "ProducerTxnStateReady", ctx
    assert r["status_after_abort"] == "ProducerTxnStateReady", ctx
    # While the third transaction is open its records are past the last stable offset.
    assert r["open_txn_partitions"] == 3, ctx
    assert not r["open_txn_offset_problems"], ctx
    # 530 records and a marker per transaction per partition (3 transactions x 3 partitions).
    assert r["expected_log_end_offsets_sum"] == 539, ctx
    assert r["log_end_offsets_sum"] == 539 and r["lso_equals_leo_after_commit"], ctx
    rc, ru = r["read_committed"], r["read_uncommitted"]
    assert rc["by_txn"] == {"c1": 300, "c3": 30}, ctx
    assert rc["committed"] == 330 and rc["aborted"] == 0, ctx
    assert ru["by_txn"] == {"c1": 300, "a2": 200, "c3": 30}, ctx
    assert ru["committed"] == 330 and ru["aborted"] == 200, ctx
    assert rc["duplicates"] == 0 and ru["duplicates"] == 0, ctx
    assert rc["ordered"] and ru["ordered"], ctx
    v = _versions(broker)
    assert v["EndTxn"] == {3} and v["AddPartitionsToTxn"] == {3}, dict(v)
    broker.stop()


@pytest.mark.parametrize("version", list(VERSIONS))
def test_sarama_lso_waits_for_the_marker(sarama_bin, tmp_path, version):
    """60 transactions (commit, abort, ...) of one record per partition; right after each
    EndTxn answer, ListOffsets read_committed then read_uncommitted. Where read_uncommitted (the
    high watermark) does not include the marker yet, read_committed must still stop at the
    transaction's record: in Kafka the last stable offset is min(first offset of the undecided
    transactions, first offset of the decided ones whose marker is at or above the high
    watermark, high watermark)."""
    r, broker, ctx = _run(sarama_bin, tmp_path, version, "lso")
    assert r["observations"] == 180, ctx
    assert r["lso_past_invisible_marker"] == 0, ctx
    broker.stop()


@pytest.mark.parametrize("version", list(VERSIONS))
def test_sarama_consume_transform_produce(sarama_bin, tmp_path, version):
    r, broker, ctx = _run(sarama_bin, tmp_path, version, "ctp")
    assert not r["handler_errors"] and "consume_error" not in r, ctx
    assert r["processed"] == 1200, ctx
    assert r["generations"] == [1], ctx  # one member, one generation, no rebalance
    # The aborted transaction's offsets were not committed (nothing was before it).
    after_abort = r["after_abort"]
    assert after_abort["error"] == "" and after_abort["block_error"] == "", ctx
    assert after_abort["offset"] == -1, ctx
    assert r["aborted_records"] > 0 and r["transactions"] >= 7, ctx
    # The offsets committed with the transactions are the input's end offsets.
    assert not r["offset_differences"], ctx
    assert sum(r["committed_offsets"].values()) == 1200, ctx
    rc, ru = r["read_committed"], r["read_uncommitted"]
    assert rc == {"read": 1200, "distinct": 1200, "missing": 0, "duplicates": 0,
                  "wrong_partition": 0, "ordered": True}, ctx
    # read_uncommitted also sees the aborted transaction's copies, nothing else.
    assert ru["read"] == 1200 + r["aborted_records"], ctx
    assert ru["duplicates"] == r["aborted_records"] and ru["missing"] == 0, ctx
    assert ru["wrong_partition"] == 0 and ru["ordered"], ctx
    v = _versions(broker)
    assert v["TxnOffsetCommit"] == {3} and "AddOffsetsToTxn" in v, dict(v)
    assert "OffsetCommit" not in v, dict(v)  # offsets only through the transactions
    broker.stop()


@pytest.mark.parametrize("version", list(VERSIONS))
def test_sarama_consumer_group(sarama_bin, tmp_path, version):
    r, broker, ctx = _run(sarama_bin, tmp_path, version, "group")
    group = f"sarama-{version}-group"
    assert "group_error" not in r, ctx
    assert r["produced"] == 1200 and r["consumed"] == 1200, ctx
    assert r["distinct"] == 1200 and r["duplicates"] == 0 and r["missing"] == 0, ctx
    assert r["per_member"]["0"] > 0 and r["per_member"]["1"] > 0, ctx
    # One session each, no rebalance after both joined.
    assert len(r["sessions"]["0"]) == 1 and len(r["sessions"]["1"]) == 1, ctx
    assert not r["offset_differences"], ctx
    assert sum(r["committed_offsets"].values()) == 1200, ctx
    assert r["listed"] and r["listed_protocol_type"] == "consumer", ctx
    running = r["describe_while_running"]
    assert running["error_code"] == 0 and running["group"] == group, ctx
    assert running["state"] == "Stable" and running["members"] == 2, ctx
    assert running["protocol_type"] == "consumer" and running["protocol"] == "range", ctx
    assert running["assigned"] == [f"{group}/{p}" for p in range(6)], ctx
    after = r["describe_after_close"]
    assert after["state"] == "Empty" and after["members"] == 0 and after["error_code"] == 0, ctx
    v = _versions(broker)
    assert v["JoinGroup"] == ({7} if version == "default" else {8}), dict(v)
    assert "OffsetCommit" in v and "LeaveGroup" in v, dict(v)
    broker.stop()


@pytest.mark.parametrize("version", list(VERSIONS))
def test_sarama_cluster_admin(sarama_bin, tmp_path, version):
    r, broker, ctx = _run(sarama_bin, tmp_path, version, "admin")
    topic = f"sarama-{version}-admin"
    assert r["create_again_is_exists"], ctx
    assert r["list_topics"] == {"partitions": 3, "replication_factor": 1, "retention.ms": "3600000"}, ctx
    d = r["describe_topics"]
    assert d["name"] == topic and d["topic_error"] == "" and d["partitions"] == 3, ctx
    assert not d["partition_problems"] and not d["internal"], ctx
    cfg = r["describe_config"]
    assert cfg["retention.ms"] == {"value": "3600000", "default": False, "read_only": False,
                                   "source": "Topic", "sensitive": False}, ctx
    assert cfg["cleanup.policy"]["value"] == "delete" and cfg["cleanup.policy"]["default"], ctx
    assert cfg["entries"] >= 20, ctx
    assert r["describe_config_named"] == ["retention.ms=3600000"], ctx
    grown = r["after_create_partitions"]
    assert grown["partitions"] == 5 and not grown["partition_problems"], ctx
    assert r["shrink_is_invalid_partitions"], ctx
    assert r["produce_new_partition"] == {"partition": 4, "offset": 0, "error": ""}, ctx
    assert r["cluster"] == {"brokers": [broker.bootstrap], "ids": [0], "controller": 0}, ctx
    assert r["listed_after_delete"] is False, ctx
    assert r["describe_after_delete"]["topic_error_code"] == 3, ctx  # UNKNOWN_TOPIC_OR_PARTITION
    assert r["delete_again_is_unknown"], ctx
    v = _versions(broker)
    for api in ("CreateTopics", "DescribeConfigs", "CreatePartitions", "DeleteTopics", "DescribeCluster"):
        assert api in v, f"sarama never sent {api}: {dict(v)}"
    broker.stop()
