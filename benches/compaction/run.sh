#!/usr/bin/env bash
# Log cleaner benchmark: Apache Kafka 4.4 (KRaft, one combined node) and kaas, one after the
# other on the same machine and disk, each on a fresh data dir. For each broker (bench.py broker):
#   1. two 1-partition topics cmp-a and cmp-b, cleanup.policy=compact, segment.bytes=SEGMENT_BYTES,
#      min.cleanable.dirty.ratio=0.5, and min.compaction.lag.ms of a week while RECORDS records
#      (KEYS distinct keys drawn at random with a fixed seed, VALUE_SIZE-byte values, uncompressed,
#      acks=all, idempotent librdkafka producer) are written to each: nothing is cleaned yet
#      (plus WARM_RECORDS, 100000, to cmp-warm with 1 MiB segments, cleaned first as a warm-up, so
#      that the measured pass is not the broker's first: JIT, buffers);
#   2. min.compaction.lag.ms=0 on cmp-a: the cleaner (backoff 1 s, 1 thread, 128 MiB dedupe
#      buffer on both) makes one pass over the sealed segments, with nothing else running. From
#      the broker's log lines at the pass's start and end: wall time, MiB of log cleaned / s, the
#      broker process's CPU (utime+stime from /proc) per GB cleaned, the cleaner's bytes read and
#      written, the log's size on disk before and after;
#   3. a consumer reads cmp-a from the start: in the cleaned part exactly the last record of each
#      key must be left (records there = distinct keys there), everything after it untouched;
#   4. a fixed-rate producer (LAG_RATE records/s of LAG_SIZE B, acks=all, idempotent) writes to a
#      third, non-compacted topic: its latencies with no cleaning (max(10 s, pass time)), then
#      while a pass over cmp-b runs (same data as cmp-a); cmp-b is verified as in 3.
# Results: benches/compaction/results/<timestamp>.json and .md, latest.json, latest.md, with the
# ratios kaas / Kafka of the same run. Exit code 1 when a verification failed.
#
# Usage: benches/compaction/run.sh [--quick] [--records N] [--brokers "kafka kaas"]
#   --quick             RECORDS=200000 (about 2-3 minutes for both brokers)
# Environment (all optional): RECORDS (2000000), KEYS (100000), VALUE_SIZE (256),
#   SEGMENT_BYTES (16777216), WARM_RECORDS (100000), PASS_TIMEOUT (300 s; --quick 90), LAG_RATE (20000), LAG_SIZE (512), LAG_PARTITIONS (4), SEED (42),
#   BROKERS ("kafka kaas"), KAAS_BIN (target/release/kaas, built when missing), KAFKA_PORT
#   (29092), CONTROLLER_PORT (29093), KAAS_PORT (29094), KAAS_METRICS_PORT (29404),
#   BROKER_HEAP (1g), DEDUPE_BUFFER (134217728), WORK_DIR (mktemp under /tmp: the data dirs are
#   on the same disk for both; removed at exit unless KEEP_WORK_DIR=1 or a run failed),
#   QUIET_MAX_BUSY (unset: no wait; e.g. 0.1 waits before each broker until the whole machine
#   is at most 10% busy over 5 s, for at most QUIET_MAX_WAIT=900 s in all),
#   RESULTS_DIR (benches/compaction/results), PYTHON (.venv/bin/python with confluent-kafka).
# Needs: java 17+, mvn (Apache Kafka's jars, fetched once into benches/load/target/lib as
# benches/load does), python with confluent-kafka, cargo when the kaas binary is missing.
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(cd "$HERE/../.." && pwd)"
log() { echo "[compaction/run.sh $(date +%H:%M:%S)] $*" >&2; }

while [ $# -gt 0 ]; do
    case "$1" in
        --quick) RECORDS="${RECORDS:-200000}"; PASS_TIMEOUT="${PASS_TIMEOUT:-90}"; QUICK=1 ;;
        --records) RECORDS="$2"; shift ;;
        --brokers) BROKERS="$2"; shift ;;
        -h|--help) sed -n '2,32p' "$0"; exit 0 ;;
        *) log "unknown argument $1"; exit 2 ;;
    esac
    shift
done

export PASS_TIMEOUT="${PASS_TIMEOUT:-300}" RECORDS="${RECORDS:-2000000}" KEYS="${KEYS:-100000}" VALUE_SIZE="${VALUE_SIZE:-256}"
export SEGMENT_BYTES="${SEGMENT_BYTES:-16777216}" LAG_RATE="${LAG_RATE:-20000}"
export LAG_SIZE="${LAG_SIZE:-512}" LAG_PARTITIONS="${LAG_PARTITIONS:-4}" SEED="${SEED:-42}"
BROKERS="${BROKERS:-kafka kaas}"
KAAS_BIN="${KAAS_BIN:-$ROOT/target/release/kaas}"
KAFKA_PORT="${KAFKA_PORT:-29092}"
CONTROLLER_PORT="${CONTROLLER_PORT:-29093}"
KAAS_PORT="${KAAS_PORT:-29094}"
KAAS_METRICS_PORT="${KAAS_METRICS_PORT:-29404}"
BROKER_HEAP="${BROKER_HEAP:-1g}"
DEDUPE_BUFFER="${DEDUPE_BUFFER:-134217728}"
RESULTS_DIR="${RESULTS_DIR:-$HERE/results}"
PYTHON="${PYTHON:-$ROOT/.venv/bin/python}"
LIB="$ROOT/benches/load/target/lib"
CP="$LIB/*"

command -v java >/dev/null || { log "java 17+ is needed"; exit 2; }
"$PYTHON" -c 'import confluent_kafka' 2>/dev/null || { log "$PYTHON has no confluent_kafka (set PYTHON)"; exit 2; }

if [ ! -x "$KAAS_BIN" ]; then
    log "$KAAS_BIN missing: cargo build --release --bin kaas"
    (cd "$ROOT" && cargo build --release --bin kaas)
fi
if [ ! -f "$LIB/kafka_2.13-4.4.0.jar" ] || [ ! -f "$LIB/kafka-tools-4.4.0.jar" ]; then
    command -v mvn >/dev/null || { log "mvn is needed (fetches the Apache Kafka jars)"; exit 2; }
    log "fetching Apache Kafka jars (mvn -f benches/load/pom.xml package)"
    mvn -q -o -f "$ROOT/benches/load/pom.xml" package >/dev/null 2>&1 || mvn -q -f "$ROOT/benches/load/pom.xml" package
fi

WORK_DIR="${WORK_DIR:-$(mktemp -d /tmp/kaas-compaction.XXXXXX)}"
mkdir -p "$WORK_DIR"
PIDS=()

stop_pid() {
    local pid="$1"
    if kill -0 "$pid" 2>/dev/null; then
        kill -TERM "$pid" 2>/dev/null || true
        for _ in $(seq 1 150); do kill -0 "$pid" 2>/dev/null || break; sleep 0.2; done
        if kill -0 "$pid" 2>/dev/null; then
            log "pid $pid ignored SIGTERM for 30 s; SIGKILL"
            kill -KILL "$pid" 2>/dev/null || true
        fi
        wait "$pid" 2>/dev/null || true
    fi
}

FAILED=0
cleanup() {
    local rc=$?
    for pid in "${PIDS[@]:-}"; do [ -n "$pid" ] && stop_pid "$pid"; done
    if [ "${KEEP_WORK_DIR:-0}" = "1" ] || [ $rc -ne 0 ] || [ $FAILED -ne 0 ]; then
        log "logs and data kept in $WORK_DIR"
    else
        rm -rf "$WORK_DIR"
    fi
    exit $rc
}
trap cleanup EXIT
trap 'exit 130' INT TERM HUP

wait_port() {
    local port="$1" pid="$2" what="$3" deadline=$((SECONDS + 90))
    while ! (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; do
        kill -0 "$pid" 2>/dev/null || { log "$what exited before listening on $port"; return 1; }
        [ $SECONDS -lt $deadline ] || { log "$what did not listen on $port within 90 s"; return 1; }
        sleep 0.2
    done
}
port_free() { ! (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

start_kafka() {
    local dir="$WORK_DIR/kafka"
    mkdir -p "$dir/logs"
    port_free "$KAFKA_PORT" || { log "port $KAFKA_PORT is busy"; return 1; }
    port_free "$CONTROLLER_PORT" || { log "port $CONTROLLER_PORT is busy"; return 1; }
    cat > "$dir/server.properties" <<EOF
process.roles=broker,controller
node.id=1
controller.quorum.bootstrap.servers=127.0.0.1:$CONTROLLER_PORT
listeners=PLAINTEXT://127.0.0.1:$KAFKA_PORT,CONTROLLER://127.0.0.1:$CONTROLLER_PORT
advertised.listeners=PLAINTEXT://127.0.0.1:$KAFKA_PORT
controller.listener.names=CONTROLLER
inter.broker.listener.name=PLAINTEXT
listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT
log.dirs=$dir/logs
num.partitions=1
offsets.topic.replication.factor=1
transaction.state.log.replication.factor=1
transaction.state.log.min.isr=1
share.coordinator.state.topic.replication.factor=1
share.coordinator.state.topic.min.isr=1
group.initial.rebalance.delay.ms=0
log.cleaner.enable=true
log.cleaner.threads=1
log.cleaner.backoff.ms=1000
log.cleaner.dedupe.buffer.size=$DEDUPE_BUFFER
log.segment.delete.delay.ms=1000
EOF
    # the cleaner's INFO lines (pass start, statistics) go to log-cleaner.log, as Kafka ships it
    cat > "$dir/log4j2.properties" <<EOF
status = warn
name = kaas-compaction-bench
appender.console.type = Console
appender.console.name = STDOUT
appender.console.layout.type = PatternLayout
appender.console.layout.pattern = [%d{HH:mm:ss,SSS}] %p %m (%c{1})%n
appender.cleaner.type = File
appender.cleaner.name = CLEANER
appender.cleaner.fileName = $dir/log-cleaner.log
appender.cleaner.immediateFlush = true
appender.cleaner.layout.type = PatternLayout
appender.cleaner.layout.pattern = [%d{HH:mm:ss,SSS}] %p %m (%c)%n
rootLogger.level = WARN
rootLogger.appenderRef.stdout.ref = STDOUT
# the package: the statistics come from LogCleaner.CleanerThread's logger
logger.c1.name = org.apache.kafka.storage.internals.log
logger.c1.level = INFO
logger.c1.additivity = false
logger.c1.appenderRef.cleaner.ref = CLEANER
logger.c2.name = kafka.log.LogCleaner
logger.c2.level = INFO
logger.c2.additivity = false
logger.c2.appenderRef.cleaner.ref = CLEANER
EOF
    local l4j="-Dlog4j2.configurationFile=file:$dir/log4j2.properties" cluster_id
    cluster_id="$(java -cp "$CP" $l4j kafka.tools.StorageTool random-uuid 2>/dev/null | tail -1)"
    java -Xmx256m -cp "$CP" $l4j kafka.tools.StorageTool format --config "$dir/server.properties" \
        --cluster-id "$cluster_id" --standalone >"$dir/format.log" 2>&1 || { cat "$dir/format.log" >&2; return 1; }
    java -Xms"$BROKER_HEAP" -Xmx"$BROKER_HEAP" -XX:+UseG1GC -XX:MaxGCPauseMillis=20 -Djava.awt.headless=true \
        $l4j -cp "$CP" kafka.Kafka "$dir/server.properties" >"$dir/broker.log" 2>&1 &
    BROKER_PID=$!
    PIDS+=("$BROKER_PID")
    wait_port "$KAFKA_PORT" "$BROKER_PID" "Apache Kafka" || { tail -50 "$dir/broker.log" >&2; return 1; }
    BOOTSTRAP="127.0.0.1:$KAFKA_PORT"
    CLEANER_LOG="$dir/log-cleaner.log"
    DATA_DIR="$dir/logs"
    METRICS_URL=""
}

start_kaas() {
    local dir="$WORK_DIR/kaas"
    mkdir -p "$dir/data"
    port_free "$KAAS_PORT" || { log "port $KAAS_PORT is busy"; return 1; }
    port_free "$KAAS_METRICS_PORT" || { log "port $KAAS_METRICS_PORT is busy"; return 1; }
    RUST_LOG="warn,kaas::actors::cleaner=info" \
    KAAS_CLEANER_ENABLE=true KAAS_CLEANER_THREADS=1 KAAS_CLEANER_BACKOFF_MS=1000 \
    KAAS_CLEANER_DEDUPE_BUFFER_SIZE="$DEDUPE_BUFFER" KAAS_CLEANER_IO_MAX_BYTES_PER_SECOND=0 \
    KAAS_METRICS_LISTEN="127.0.0.1:$KAAS_METRICS_PORT" \
        "$KAAS_BIN" serve --data-dir "$dir/data" --listen "127.0.0.1:$KAAS_PORT" >"$dir/broker.log" 2>&1 &
    BROKER_PID=$!
    PIDS+=("$BROKER_PID")
    wait_port "$KAAS_PORT" "$BROKER_PID" "kaas" || { tail -50 "$dir/broker.log" >&2; return 1; }
    BOOTSTRAP="127.0.0.1:$KAAS_PORT"
    CLEANER_LOG="$dir/broker.log"
    DATA_DIR="$dir/data"
    METRICS_URL="http://127.0.0.1:$KAAS_METRICS_PORT/metrics"
}

# The machine's busy fraction (all cores) over $1 seconds, from /proc/stat.
busy_frac() {
    local a b
    a=($(head -1 /proc/stat)); sleep "$1"; b=($(head -1 /proc/stat))
    awk -v u1="${a[1]}" -v n1="${a[2]}" -v s1="${a[3]}" -v i1="${a[4]}" -v w1="${a[5]}" -v q1="${a[6]}" -v sq1="${a[7]}" -v st1="${a[8]}" \
        -v u2="${b[1]}" -v n2="${b[2]}" -v s2="${b[3]}" -v i2="${b[4]}" -v w2="${b[5]}" -v q2="${b[6]}" -v sq2="${b[7]}" -v st2="${b[8]}" \
        'BEGIN { busy = (u2-u1)+(n2-n1)+(s2-s1)+(q2-q1)+(sq2-sq1)+(st2-st1); idle = (i2-i1)+(w2-w1);
                 printf "%.2f", ((busy+idle) > 0 ? busy/(busy+idle) : 0) }'
}
# QUIET_MAX_BUSY=0.1: before each broker, wait until the machine is at most 10% busy (over 5 s),
# for at most QUIET_MAX_WAIT seconds in all (900), then go on anyway (the JSON says so).
QUIET_WAITED=0
wait_quiet() {
    [ -n "${QUIET_MAX_BUSY:-}" ] || return 0
    local f
    while :; do
        f="$(busy_frac 5)"
        if awk -v f="$f" -v m="$QUIET_MAX_BUSY" 'BEGIN { exit !(f <= m) }'; then break; fi
        if [ "$QUIET_WAITED" -ge "${QUIET_MAX_WAIT:-900}" ]; then log "machine still $f busy; going on"; break; fi
        log "machine $f busy (> $QUIET_MAX_BUSY); waiting"
        sleep 10; QUIET_WAITED=$((QUIET_WAITED + 15))
    done
    BUSY_AT_START+="\"$1\": $f, "
}
BUSY_AT_START=""

T0=$SECONDS
LOADAVG_START="${LOADAVG_START:-$(cut -d" " -f1-3 /proc/loadavg)}"
OUTS=()
for b in $BROKERS; do
    log "=== $b: $RECORDS records, $KEYS keys, $VALUE_SIZE B values, segment.bytes=$SEGMENT_BYTES ==="
    wait_quiet "$b"
    case "$b" in
        kafka) start_kafka ;;
        kaas) start_kaas ;;
        *) log "unknown broker $b"; exit 2 ;;
    esac
    out="$WORK_DIR/$b.json"
    if ! "$PYTHON" "$HERE/bench.py" broker --name "$b" --bootstrap "$BOOTSTRAP" --pid "$BROKER_PID" \
        --cleaner-log "$CLEANER_LOG" --data-dir "$DATA_DIR" --metrics-url "$METRICS_URL" --out "$out"; then
        log "$b: the benchmark failed (logs in $WORK_DIR/$b)"
        FAILED=1
    fi
    stop_pid "$BROKER_PID"
    [ -f "$out" ] && OUTS+=("$out")
    if [ "$FAILED" = 0 ] && [ "${KEEP_WORK_DIR:-0}" != "1" ]; then rm -rf "${WORK_DIR:?}/$b/logs" "${WORK_DIR:?}/$b/data"; fi
done

[ ${#OUTS[@]} -gt 0 ] || { log "no results"; exit 1; }
META="$(cat <<EOF
{"timestamp": "$(date -u +%Y%m%dT%H%M%S)", "date": "$(date -u +%Y-%m-%d)",
 "commit": "$(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo unknown)",
 "tree_dirty": $(if [ -n "$(git -C "$ROOT" status --porcelain --untracked-files=no 2>/dev/null)" ]; then echo true; else echo false; fi),
 "kaas_bin_sha256": "$(sha256sum "$KAAS_BIN" | cut -c1-16)",
 "machine": "$(nproc) cores, $(awk '/MemTotal/ {printf "%.1f GiB", $2/1048576}' /proc/meminfo), $(uname -r)",
 "java": "$(java -version 2>&1 | head -1 | tr -d '"')",
 "kafka_version": "4.4.0", "quick": ${QUICK:-0}, "records": $RECORDS, "keys": $KEYS,
 "value_size": $VALUE_SIZE, "segment_bytes": $SEGMENT_BYTES, "dedupe_buffer": $DEDUPE_BUFFER,
 "loadavg_start": "${LOADAVG_START:-$(cut -d' ' -f1-3 /proc/loadavg)}",
 "loadavg_end": "$(cut -d' ' -f1-3 /proc/loadavg)", "seconds": $((SECONDS - T0)),
 "busy_frac_before": {${BUSY_AT_START%, }}, "quiet_waited_s": $QUIET_WAITED}
EOF
)"
export BENCH_META="$META"
rc=0
"$PYTHON" "$HERE/bench.py" report --out-dir "$RESULTS_DIR" "${OUTS[@]}" || rc=$?
[ $FAILED -eq 0 ] || rc=1
log "done in $((SECONDS - T0)) s; results in $RESULTS_DIR"
exit $rc
