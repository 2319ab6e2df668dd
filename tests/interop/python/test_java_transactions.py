"""Apache Kafka's Java client (kafka-clients 4.4) transactional producer against kaas, once
with transaction.version=1 finalized (TV1: explicit AddPartitionsToTxn, EndTxn <= v4, one epoch
per producer session) and once with transaction.version=2 (KIP-890: Produce v12 adds
partitions implicitly, EndTxn v5 bumps the epoch every transaction).

Needs java and the built Maven project tests/interop/java (built on demand by javaharness).
"""
import pytest

import javaharness as jh
from conftest import Broker, free_port
from kaashelpers import assert_no_panic


@pytest.fixture(params=["tv1", "tv2"])
def tv_broker(request, tmp_path):
    env = {"KAAS_TRANSACTION_VERSION": "2" if request.param == "tv2" else "1"}
    b = Broker(tmp_path / "data", free_port(), extra_env=env).start()
    yield b
    b.stop()


def _ctx(broker, *runs) -> str:
    parts = [r.describe() for r in runs if r is not None]
    if not broker.alive():
        parts.append(f"!!! kaas is not running (exit code {broker.proc.poll()}): killed or crashed")
    parts.append("--- kaas log (tail) ---\n" + broker.log_text()[-4000:])
    return "\n".join(parts)


def test_java_transactions_commit_abort(tv_broker):
    """45 transactions over 3 partitions, every 3rd aborted: read_committed shows exactly the
    committed records once each and in order; read_uncommitted shows the aborted ones too."""
    broker = tv_broker
    txns, partitions, per = 45, 3, 20
    res = jh.transactions_run(broker.bootstrap, "java-txn", txns, partitions, per)
    ctx = _ctx(broker, res.run)
    s = res.summary
    assert s is not None, f"Transactions printed no JSON summary\n{ctx}"
    assert res.run.returncode == 0 and s["ok"] is True, f"Transactions run failed: {s['errors']}\n{ctx}"
    assert s["committed"] == 30 and s["aborted"] == 15, ctx
    assert s["read_committed_records"] == 30 * partitions * per, ctx
    assert s["read_uncommitted_records"] == txns * partitions * per, ctx
    assert s["high_watermarks"] == {str(p): txns * (per + 1) for p in range(partitions)}, ctx
    assert s["lso"] == s["high_watermarks"], ctx
    assert_no_panic(broker)


def test_java_zombie_fencing(tv_broker):
    """A second KafkaProducer with the same transactional.id fences the first: its
    commitTransaction()/send() throw ProducerFencedException or InvalidProducerEpochException,
    and only the new producer's transaction is visible read_committed."""
    broker = tv_broker
    res = jh.transactions_zombie(broker.bootstrap, "java-zombie")
    ctx = _ctx(broker, res.run)
    s = res.summary
    assert s is not None, f"Transactions printed no JSON summary\n{ctx}"
    assert res.run.returncode == 0 and s["ok"] is True, f"zombie checks failed: {s['errors']}\n{ctx}"
    print(f"\nzombie 1 commit: {s['zombie1_commit_error']}\nzombie 2 send: {s['zombie2_send_error']}"
          f"\nzombie 2 commit: {s['zombie2_commit_error']}")
    assert sorted(s["read_committed"]) == sorted(
        [f"z1-b-{i}" for i in range(6)] + [f"z2-b-{i}" for i in range(6)]), ctx
    assert "z1-a-0" in s["read_uncommitted"] and "z2-a-0" in s["read_uncommitted"], ctx
    assert_no_panic(broker)


def test_kafka_producer_perf_test_transactional(broker):
    """kafka-producer-perf-test --transactional-id perf-txn --transaction-duration-ms 100:
    50,000 x 1 KiB, acks=all; no errors, and read_committed shows exactly the records sent."""
    num_records = 50_000
    created = jh.create_topic(broker.bootstrap, "perf-txn", partitions=3)
    assert created.returncode == 0, _ctx(broker, created)

    res = jh.producer_performance_with_args(
        broker.bootstrap, "perf-txn", num_records, record_size=1024, acks="all",
        tool_args=["--transactional-id", "perf-txn", "--transaction-duration-ms", "100"],
        timeout=300)
    ctx = _ctx(broker, res.run)
    assert res.run.returncode == 0, ctx
    assert res.exception_lines == [], f"send callbacks failed: {res.exception_lines[:5]}\n{ctx}"
    assert res.summary is not None, f"no final summary line from ProducerPerformance\n{ctx}"
    assert res.summary["sent"] == num_records, ctx
    print(f"\ntransactional kafka-producer-perf-test against kaas: {res.summary['rps']:.0f} "
          f"records/s, {res.summary['mbps']:.2f} MB/s, avg {res.summary['avg']:.1f} ms, "
          f"p99 {res.summary['p99']:.0f} ms")

    count = jh.transactions_count(broker.bootstrap, "perf-txn", "read_committed")
    ctx = _ctx(broker, res.run, count.run)
    c = count.summary
    assert c is not None and count.run.returncode == 0 and c["ok"] is True, ctx
    assert c["records"] == num_records, f"read_committed count {c['records']} != {num_records}\n{ctx}"
    assert c["lso"] == c["high_watermarks"], ctx
    # every transaction leaves a marker per partition it touched: the log holds more offsets
    # than records, and at least one marker per partition
    hw_total = sum(c["high_watermarks"].values())
    print(f"log offsets {hw_total} for {num_records} records: {hw_total - num_records} markers")
    assert hw_total > num_records + 3, f"no transaction markers? high watermarks {c['high_watermarks']}\n{ctx}"
    assert broker.alive(), "kaas exited during the test\n" + broker.log_text()[-4000:]
    assert_no_panic(broker)
