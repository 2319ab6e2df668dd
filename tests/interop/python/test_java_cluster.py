"""Apache Kafka's Java client (kafka-clients 4.4) against three kaas brokers sharing one data
directory, transaction.version 2: partition leaders, transaction shards and the group
coordinator are spread over the three, so partitions are added to transactions over the wire,
markers (also for the group's offsets) go over the wire, and an epoch bump reaches other
brokers' partitions through the fence files.

Needs java and the built Maven project tests/interop/java (built on demand by javaharness)."""
import pytest

import javaharness as jh
from conftest import Broker, free_port
from kaashelpers import assert_no_panic, unique_topic

TICK = {"KAAS_CLUSTER_TICK_MS": "200", "KAAS_FENCE_POLL_INTERVAL_MS": "200"}


@pytest.fixture
def cluster(tmp_path):
    brokers = [Broker(tmp_path / "shared", free_port(), TICK, node_id=i).start() for i in (1, 2, 3)]
    yield brokers
    for b in brokers:
        b.stop()


def _ctx(brokers, *runs) -> str:
    parts = [r.describe() for r in runs if r is not None]
    for b in brokers:
        if not b.alive():
            parts.append(f"!!! kaas {b.node_id} is not running (exit code {b.proc.poll()})")
        parts.append(f"--- kaas {b.node_id} log (tail) ---\n" + b.log_text()[-2500:])
    return "\n".join(parts)


def _bootstrap(brokers):
    return ",".join(b.bootstrap for b in brokers)


def test_java_transactions_on_a_cluster(cluster):
    """45 transactions over 6 partitions, every 3rd aborted: read_committed shows exactly the
    committed records once each and in order; read_uncommitted shows the aborted ones too."""
    txns, partitions, per = 45, 6, 10
    res = jh.transactions_run(_bootstrap(cluster), unique_topic("java-cluster-txn"), txns, partitions, per)
    ctx = _ctx(cluster, res.run)
    s = res.summary
    assert s is not None, f"Transactions printed no JSON summary\n{ctx}"
    assert res.run.returncode == 0 and s["ok"] is True, f"Transactions run failed: {s['errors']}\n{ctx}"
    assert s["committed"] == 30 and s["aborted"] == 15, ctx
    assert s["read_committed_records"] == 30 * partitions * per, ctx
    assert s["read_uncommitted_records"] == txns * partitions * per, ctx
    assert s["high_watermarks"] == {str(p): txns * (per + 1) for p in range(partitions)}, ctx
    assert s["lso"] == s["high_watermarks"], ctx
    for b in cluster:
        assert_no_panic(b)


def test_java_consume_transform_produce_on_a_cluster(cluster):
    """Exactly-once consume-transform-produce with sendOffsetsToTransaction; a second instance
    with the same transactional.id fences the first halfway (kaas.interop.Ctp)."""
    count, partitions = 3_000, 6
    res = jh.ctp(_bootstrap(cluster), unique_topic("java-cctp-in"), unique_topic("java-cctp-out"),
                 unique_topic("java-cctp-group"), unique_topic("java-cctp"), count, partitions)
    ctx = _ctx(cluster, res.run)
    s = res.summary
    assert s is not None, "Ctp printed no JSON summary\n" + ctx
    assert res.run.returncode == 0 and s["ok"] is True, f"Ctp failed: {s['errors']}\n{ctx}"
    assert s["instance1_commit_error"] == "ProducerFencedException", ctx
    assert s["instance1_records"] + s["instance2_records"] == count, ctx
    assert s["output_read_committed"] == count, ctx
    assert s["output_missing"] == 0 and s["output_duplicated"] == 0, ctx
    assert s["output_read_uncommitted"] == count + s["open_txn_records"], ctx
    assert s["output_lso"] == s["output_hw"], ctx
    assert s["group_committed"] == s["input_end_offsets"], ctx
    for b in cluster:
        assert_no_panic(b)


def test_java_zombie_fencing_on_a_cluster(cluster):
    """A second KafkaProducer with the same transactional.id fences the first, whichever broker
    leads the partitions: only the new producer's transaction is visible read_committed."""
    res = jh.transactions_zombie(_bootstrap(cluster), unique_topic("java-cluster-zombie"))
    ctx = _ctx(cluster, res.run)
    s = res.summary
    assert s is not None, f"Transactions printed no JSON summary\n{ctx}"
    assert res.run.returncode == 0 and s["ok"] is True, f"zombie checks failed: {s['errors']}\n{ctx}"
    assert sorted(s["read_committed"]) == sorted(
        [f"z1-b-{i}" for i in range(6)] + [f"z2-b-{i}" for i in range(6)]), ctx
    for b in cluster:
        assert_no_panic(b)
