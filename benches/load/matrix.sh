#!/usr/bin/env bash
# Benchmark matrix: Apache Kafka 4.4 and kaas, load by load, one after the other on fresh data
# dirs; writes benches/load/results/<timestamp>.json + latest.json, PNG charts in
# benches/load/results/, and regenerates BENCHMARKS.md. See benches/load/README.md.
#
# Usage: benches/load/matrix.sh            full profile (about 15 min on 2 cores, plus the build)
#        QUICK=1 benches/load/matrix.sh    smoke run (about 10 min)
# Setup it does when needed: cargo build --release (only if KAAS_BIN is not set), the Kafka jars
# and BenchTool via mvn (benches/load/pom.xml), a venv benches/load/.venv with matplotlib.
# Every setting is an environment variable read by matrix.py (README.md lists them).
# NO_CHARTS=1 skips the charts, NO_DOC=1 skips BENCHMARKS.md. BENCHMARKS_MD is where it is
# written: BENCHMARKS.md at the repository root, or $RESULTS_DIR/BENCHMARKS.md when RESULTS_DIR is
# set (a separate run, e.g. the TLS loads, leaves the published one alone).
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(cd "$HERE/../.." && pwd)"
log() { echo "[matrix.sh] $*" >&2; }

command -v java >/dev/null || { log "java 17+ is needed"; exit 2; }
command -v mvn >/dev/null || { log "mvn is needed (fetches the Apache Kafka jars)"; exit 2; }
command -v python3 >/dev/null || { log "python3 is needed"; exit 2; }

if [ -z "${KAAS_BIN:-}" ]; then
    log "KAAS_BIN not set: cargo build --release"
    (cd "$ROOT" && cargo build --release --bin kaas)
    export KAAS_BIN="$ROOT/target/release/kaas"
fi
[ -x "$KAAS_BIN" ] || { log "kaas binary $KAAS_BIN not found"; exit 2; }

# jars + BenchTool (quiet and quick when up to date; offline first, online when that fails)
if ! mvn -q -o -f "$HERE/pom.xml" package >/dev/null 2>&1; then
    log "fetching Apache Kafka jars (mvn -f benches/load/pom.xml package)"
    mvn -q -f "$HERE/pom.xml" package
fi
touch "$HERE/target/lib/.complete"   # (run_compare.sh's marker)

VENV="$HERE/.venv"
if [ -z "${NO_CHARTS:-}" ]; then
    if [ ! -x "$VENV/bin/python" ] || ! "$VENV/bin/python" -c 'import matplotlib' 2>/dev/null; then
        log "creating $VENV (matplotlib)"
        python3 -m venv "$VENV"
        "$VENV/bin/pip" install -q -r "$HERE/requirements.txt"
    fi
fi

# matrix.py stops every broker and client it started when it ends or gets INT/TERM/HUP;
# forward those signals to it and wait.
child=""
forward() { [ -n "$child" ] && kill -TERM "$child" 2>/dev/null; }
trap forward INT TERM HUP
set +e
python3 "$HERE/matrix.py" &
child=$!
wait "$child"; rc=$?
while kill -0 "$child" 2>/dev/null; do wait "$child"; rc=$?; done
set -e
trap - INT TERM HUP
[ $rc -ge 128 ] && exit $rc

RESULTS="${RESULTS_DIR:-$HERE/results}"
if [ -n "${RESULTS_DIR:-}" ]; then MD="${BENCHMARKS_MD:-$RESULTS/BENCHMARKS.md}"; else MD="${BENCHMARKS_MD:-$ROOT/BENCHMARKS.md}"; fi
if [ -f "$RESULTS/latest.json" ]; then
    if [ -z "${NO_CHARTS:-}" ]; then "$VENV/bin/python" "$HERE/plots.py" "$RESULTS/latest.json" "$RESULTS"; fi
    if [ -z "${NO_DOC:-}" ]; then python3 "$HERE/gen_benchmarks.py" "$RESULTS/latest.json" "$MD"; fi
fi
exit $rc
