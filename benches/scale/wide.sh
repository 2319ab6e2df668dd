#!/usr/bin/env bash
# 100,000 partitions under `ulimit -n 4096` (issue E2): benches/scale/wide.py with the test venv
# (confluent-kafka). Settings: WIDE_TOPICS (20), WIDE_PARTITIONS (5000), WIDE_NOFILE (4096),
# KAAS_BIN (target/release/kaas, built when missing). Prints one JSON line per phase.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
if [ -z "${KAAS_BIN:-}" ]; then
    (cd "$ROOT" && cargo build --release --bin kaas)
fi
if [ ! -x "$ROOT/.venv/bin/python" ] || ! "$ROOT/.venv/bin/python" -c 'import confluent_kafka' 2>/dev/null; then
    python3 -m venv "$ROOT/.venv"
    "$ROOT/.venv/bin/pip" install -q -r "$ROOT/tests/interop/python/requirements.txt"
fi
exec "$ROOT/.venv/bin/python" "$ROOT/benches/scale/wide.py"
