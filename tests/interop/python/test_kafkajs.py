"""kafkajs 2.2.4 (Node.js, a pure-JavaScript client) against kaas: tests/interop/node/eos.js creates
topics, writes through an idempotent producer, runs a consume-transform-produce loop with a
transactional producer (send, sendOffsets, commit; one transaction aborted on purpose) and reads
the output back read_committed in a consumer group: every record exactly once, no aborted one,
the group's committed offsets at the end of the input. kafkajs speaks older protocol versions
(EndTxn v1, AddPartitionsToTxn v1, JoinGroup v5), so on a TV2 broker it stays on the TV1 way.

The node_modules come from `npm install` in tests/interop/node (scripts/test.sh does it; this
test does it when they are missing). Never skipped: without node and npm the test fails.
"""
import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from conftest import Broker, free_port
from kaashelpers import assert_no_panic

NODE_DIR = Path(__file__).resolve().parents[1] / "node"


def _ensure_modules():
    node, npm = shutil.which("node"), shutil.which("npm")
    assert node and npm, "kafkajs tests need node and npm on PATH (Debian: apt-get install nodejs npm)"
    if not (NODE_DIR / "node_modules" / "kafkajs").is_dir():
        proc = subprocess.run([npm, "install", "--no-audit", "--no-fund"], cwd=NODE_DIR,
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=300)
        assert proc.returncode == 0, f"npm install failed:\n{proc.stdout[-4000:]}"
    return node


@pytest.mark.parametrize("txn_version", ["1", "2"], ids=["tv1", "tv2"])
def test_kafkajs_transactions_and_groups(tmp_path, txn_version):
    node = _ensure_modules()
    broker = Broker(tmp_path / "data", free_port(), extra_env={"KAAS_TRANSACTION_VERSION": txn_version}).start()
    try:
        env = dict(os.environ, KAFKAJS_NO_PARTITIONER_WARNING="1")
        proc = subprocess.run([node, "eos.js", broker.bootstrap, f"js-tv{txn_version}", "300"], cwd=NODE_DIR,
                              env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=240)
        lines = [x for x in proc.stdout.splitlines() if x.startswith('{"ok"')]
        ctx = f"exit {proc.returncode}\n{proc.stdout[-6000:]}\n--- kaas log ---\n{broker.log_text()[-3000:]}"
        assert lines, ctx
        summary = json.loads(lines[-1])
        print(f"\nkafkajs (TV{txn_version}): {summary}")
        assert summary["ok"] and proc.returncode == 0, ctx
        assert summary["distinct"] == 300 and summary["duplicates"] == 0 and summary["aborted_seen"] == 0, ctx
        assert summary["aborted"] > 0 and summary["committed"] == 300, ctx
        assert_no_panic(broker)
    finally:
        broker.stop()
