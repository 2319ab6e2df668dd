"""Kafka Streams 4.4 with processing.guarantee=exactly_once_v2 against kaas (the Java program
tests/interop/java/.../StreamsEos.java): a word count whose groupBy goes through a repartition
topic and whose counts live in a state store backed by a compacted changelog topic, both
created by Streams itself (it found that kaas refused cleanup.policy=compact, so no stateful
Streams application could start).

With the record cache off, every input record emits exactly one count update; a read_committed
reader of the output must see, for each word, the counts 1..n once each and in order. The
application is killed with SIGKILL while it processes, started again, and the broker is killed
with SIGKILL and restarted under the second instance: the committed output must still hold
every update exactly once (no duplicate from a zombie's transaction, no gap).
"""
import os
import signal
import subprocess
import time

import pytest

import javaharness as jh
from conftest import Broker, free_port
from kaashelpers import assert_no_panic

WORDS = 50
PER_PHASE = 20_000


def _start_app(bootstrap, state_dir, log_path, seconds=300):
    jh.ensure_built()
    cmd = ["java", "-Xmx512m", "-cp", jh.classpath(), "kaas.interop.StreamsEos", "run", bootstrap,
           "wordcount-eos", "words-in", "counts-out", str(state_dir), str(seconds)]
    log = open(log_path, "w")
    return subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, start_new_session=True), log


def _wait_running(log_path, timeout, proc):
    deadline = time.time() + timeout
    while time.time() < deadline:
        with open(log_path, errors="replace") as f:
            text = f.read()
        if "-> RUNNING" in text:
            return
        assert proc.poll() is None, f"Streams exited early:\n{text[-4000:]}"
        time.sleep(0.2)
    with open(log_path, errors="replace") as f:
        raise AssertionError(f"Streams did not reach RUNNING within {timeout}s:\n{f.read()[-4000:]}")


def _produce(bootstrap, n):
    run = jh.run_java("kaas.interop.StreamsEos", "produce", bootstrap, "words-in", str(WORDS), str(n),
                      timeout=120)
    assert run.returncode == 0, run.describe()


@pytest.mark.parametrize("txn_version", ["1", "2"], ids=["tv1", "tv2"])
def test_kafka_streams_exactly_once_v2_survives_kill_9_of_app_and_broker(tmp_path, txn_version):
    broker = Broker(tmp_path / "data", free_port(), extra_env={"KAAS_TRANSACTION_VERSION": txn_version}).start()
    bs = broker.bootstrap
    apps = []
    try:
        created = jh.run_java("kaas.interop.CreateTopic", bs, "words-in", "3", timeout=60)
        assert created.returncode == 0, created.describe()
        _produce(bs, PER_PHASE)
        first, log1 = _start_app(bs, tmp_path / "state", tmp_path / "app1.log")
        apps.append((first, log1))
        _wait_running(tmp_path / "app1.log", 90, first)
        # More input while it processes, then SIGKILL: its open transaction is a zombie's.
        _produce(bs, PER_PHASE)
        os.killpg(first.pid, signal.SIGKILL)
        first.wait(10)

        second, log2 = _start_app(bs, tmp_path / "state", tmp_path / "app2.log")
        apps.append((second, log2))
        _wait_running(tmp_path / "app2.log", 120, second)
        time.sleep(1)
        broker.restart()  # SIGKILL and start again on the same data and port
        verify = jh.run_java("kaas.interop.StreamsEos", "verify", bs, "counts-out", str(WORDS),
                             str(2 * PER_PHASE), "180", timeout=240)
        summary = jh.last_json_line(verify.stdout)
        with open(tmp_path / "app2.log", errors="replace") as f:
            app_log = f.read()
        ctx = (verify.describe() + f"\n--- second instance (tail) ---\n{app_log[-5000:]}"
               + f"\n--- kaas log (tail) ---\n{broker.log_text()[-3000:]}")
        assert summary is not None, ctx
        print(f"\nStreams EOS (TV{txn_version}): {summary}")
        assert summary["duplicates"] == 0 and summary["gaps"] == 0, ctx
        assert summary["wrong_final"] == 0 and summary["words"] == WORDS, ctx
        assert summary["records"] == 2 * PER_PHASE, f"one committed update per input record\n{ctx}"
        assert second.poll() is None, f"the second instance stopped (Streams ERROR?)\n{ctx}"
        assert "ERROR" not in [line.split(" -> ")[-1].strip() for line in app_log.splitlines()
                               if line.startswith("state ")], ctx
        assert_no_panic(broker)
    finally:
        for proc, log in apps:
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait(10)
            log.close()
        broker.stop()
