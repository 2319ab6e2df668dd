#!/usr/bin/env bash
# Load comparison: Apache Kafka's own producer perf test (kafka-producer-perf-test, i.e.
# org.apache.kafka.tools.ProducerPerformance) against
#   apache        Apache Kafka (KRaft, single combined broker+controller node), default flushing
#   apache-flush  the same with log.flush.interval.messages=1 (fsync every appended batch, as kaas does)
#   kaas          the kaas binary
# with the same parameters, then prints records/s, MB/s, avg/p99/max latency and kaas/Apache ratios.
#
# Usage: benches/load/run_compare.sh
# Environment (all optional):
#   NUM_RECORDS=200000  RECORD_SIZE=1024  THROUGHPUT=-1  ACKS=all  PARTITIONS=1
#   WARMUP_RECORDS=0            passed as --warmup-records when > 0
#   PRODUCER_PROPS=""           extra producer props, space separated (e.g. "linger.ms=5 batch.size=65536")
#   TARGETS="apache apache-flush kaas"   which runs, in this order
#   KAAS_BIN=target/release/kaas   KAAS_EXTRA_ARGS=""   KAAS_PORT=19094
#   KAFKA_PORT=19092  CONTROLLER_PORT=19093  BROKER_HEAP=1g  PERF_HEAP=512m
#   WORK_DIR=<mktemp -d>        data dirs and logs; removed at exit unless KEEP_WORK_DIR=1
#   PERF_TIMEOUT=900            seconds allowed for one perf-test run
# Needs: java 17+, mvn (the jars are fetched once into benches/load/target/lib).
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(cd "$HERE/../.." && pwd)"

NUM_RECORDS="${NUM_RECORDS:-200000}"
RECORD_SIZE="${RECORD_SIZE:-1024}"
THROUGHPUT="${THROUGHPUT:--1}"
ACKS="${ACKS:-all}"
PARTITIONS="${PARTITIONS:-1}"
WARMUP_RECORDS="${WARMUP_RECORDS:-0}"
PRODUCER_PROPS="${PRODUCER_PROPS:-}"
TARGETS="${TARGETS:-apache apache-flush kaas}"
KAAS_BIN="${KAAS_BIN:-$ROOT/target/release/kaas}"
KAAS_EXTRA_ARGS="${KAAS_EXTRA_ARGS:-}"
KAAS_PORT="${KAAS_PORT:-19094}"
KAFKA_PORT="${KAFKA_PORT:-19092}"
CONTROLLER_PORT="${CONTROLLER_PORT:-19093}"
BROKER_HEAP="${BROKER_HEAP:-1g}"
PERF_HEAP="${PERF_HEAP:-512m}"
PERF_TIMEOUT="${PERF_TIMEOUT:-900}"
TOPIC="perf"
EXPECTED_SENT=$((NUM_RECORDS - (WARMUP_RECORDS > 0 ? WARMUP_RECORDS : 0)))

LIB="$HERE/target/lib"
CP="$LIB/*"
LOG4J="-Dlog4j2.configurationFile=file:$HERE/log4j2.properties"

WORK_DIR="${WORK_DIR:-$(mktemp -d /tmp/kaas-compare.XXXXXX)}"
mkdir -p "$WORK_DIR"
PIDS=()

log() { echo "[run_compare] $*" >&2; }

stop_pid() {
    local pid="$1"
    if kill -0 "$pid" 2>/dev/null; then
        kill -TERM "$pid" 2>/dev/null || true
        for _ in $(seq 1 100); do
            kill -0 "$pid" 2>/dev/null || break
            sleep 0.2
        done
        if kill -0 "$pid" 2>/dev/null; then
            log "pid $pid ignored SIGTERM for 20 s; sending SIGKILL"
            kill -KILL "$pid" 2>/dev/null || true
        fi
        wait "$pid" 2>/dev/null || true
    fi
}

cleanup() {
    local rc=$?
    for pid in "${PIDS[@]:-}"; do
        [ -n "$pid" ] && stop_pid "$pid"
    done
    if [ "${KEEP_WORK_DIR:-0}" = "1" ] || [ $rc -ne 0 ]; then
        log "logs and data kept in $WORK_DIR"
    else
        rm -rf "$WORK_DIR"
    fi
    exit $rc
}
trap cleanup EXIT
trap 'exit 130' INT TERM

wait_port() {
    local port="$1" pid="$2" what="$3" deadline=$((SECONDS + 60))
    while ! (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; do
        if ! kill -0 "$pid" 2>/dev/null; then
            log "$what exited before listening on $port"
            return 1
        fi
        if [ $SECONDS -ge $deadline ]; then
            log "$what did not listen on $port within 60 s"
            return 1
        fi
        sleep 0.2
    done
}

port_free() {
    ! (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null
}

ensure_jars() {
    if [ ! -f "$LIB/.complete" ]; then
        log "fetching Apache Kafka jars (mvn -f benches/load/pom.xml package)"
        mvn -q -f "$HERE/pom.xml" package
        touch "$LIB/.complete"
    fi
}

# ---- Apache Kafka (KRaft combined mode) ------------------------------------------------
start_apache() {
    local name="$1" flush="$2" dir="$WORK_DIR/$1"
    mkdir -p "$dir/logs" || return 1
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
num.partitions=$PARTITIONS
offsets.topic.replication.factor=1
transaction.state.log.replication.factor=1
transaction.state.log.min.isr=1
share.coordinator.state.topic.replication.factor=1
share.coordinator.state.topic.min.isr=1
group.initial.rebalance.delay.ms=0
auto.create.topics.enable=true
EOF
    if [ "$flush" = "1" ]; then
        cat >> "$dir/server.properties" <<EOF
# fsync after every appended batch, like kaas
log.flush.interval.messages=1
EOF
    fi
    local cluster_id
    cluster_id="$(java -cp "$CP" $LOG4J kafka.tools.StorageTool random-uuid 2>/dev/null | tail -1)"
    [ -n "$cluster_id" ] || { log "kafka.tools.StorageTool random-uuid failed"; return 1; }
    java -Xmx256m -cp "$CP" $LOG4J kafka.tools.StorageTool format --config "$dir/server.properties" \
        --cluster-id "$cluster_id" --standalone >"$dir/format.log" 2>&1 \
        || { cat "$dir/format.log" >&2; return 1; }
    java -Xms"$BROKER_HEAP" -Xmx"$BROKER_HEAP" -XX:+UseG1GC -XX:MaxGCPauseMillis=20 -Djava.awt.headless=true \
        $LOG4J -Dkaas.log.level=INFO -cp "$CP" kafka.Kafka "$dir/server.properties" \
        >"$dir/broker.log" 2>&1 &
    BROKER_PID=$!
    PIDS+=("$BROKER_PID")
    wait_port "$KAFKA_PORT" "$BROKER_PID" "Apache Kafka ($name)" || { tail -50 "$dir/broker.log" >&2; return 1; }
    BOOTSTRAP="127.0.0.1:$KAFKA_PORT"
    BROKER_LOG="$dir/broker.log"
}

# ---- kaas ------------------------------------------------------------------------------
start_kaas() {
    local dir="$WORK_DIR/kaas"
    mkdir -p "$dir/data"
    if [ ! -x "$KAAS_BIN" ]; then
        log "kaas binary $KAAS_BIN not found (build it with cargo build --release)"
        return 1
    fi
    port_free "$KAAS_PORT" || { log "port $KAAS_PORT is busy"; return 1; }
    # shellcheck disable=SC2086
    RUST_LOG="${RUST_LOG:-warn}" "$KAAS_BIN" serve --data-dir "$dir/data" --listen "127.0.0.1:$KAAS_PORT" \
        $KAAS_EXTRA_ARGS >"$dir/broker.log" 2>&1 &
    BROKER_PID=$!
    PIDS+=("$BROKER_PID")
    wait_port "$KAAS_PORT" "$BROKER_PID" "kaas" || { tail -50 "$dir/broker.log" >&2; return 1; }
    BOOTSTRAP="127.0.0.1:$KAAS_PORT"
    BROKER_LOG="$dir/broker.log"
}

create_topic() {
    java -Xmx256m -cp "$CP" $LOG4J org.apache.kafka.tools.TopicCommand --bootstrap-server "$1" \
        --create --if-not-exists --topic "$TOPIC" --partitions "$PARTITIONS" --replication-factor 1 \
        >"$2" 2>&1 || { cat "$2" >&2; return 1; }
}

# Runs the perf test against $BOOTSTRAP; writes stdout to $1.out, stderr to $1.err.
run_perf() {
    local out="$1"
    local extra=()
    if [ "$WARMUP_RECORDS" -gt 0 ]; then extra+=(--warmup-records "$WARMUP_RECORDS"); fi
    # shellcheck disable=SC2086
    timeout --signal=TERM "$PERF_TIMEOUT" \
        java -Xmx"$PERF_HEAP" -cp "$CP" $LOG4J org.apache.kafka.tools.ProducerPerformance \
        --topic "$TOPIC" --num-records "$NUM_RECORDS" --record-size "$RECORD_SIZE" \
        --throughput "$THROUGHPUT" "${extra[@]}" \
        --producer-props bootstrap.servers="$BOOTSTRAP" acks="$ACKS" $PRODUCER_PROPS \
        >"$out.out" 2>"$out.err"
}

# Parses the perf test's final summary line
#   N records sent, R records/sec (M MB/sec), A ms avg latency, X ms max latency, P50 ms 50th, P95 ms 95th, P99 ms 99th, P999 ms 99.9th.
# (the "N steady state records sent, ..." line when warm-up is on) into
#   "sent rps mbps avg max p50 p95 p99 p999"
parse_summary() {
    local re='^[0-9]+ records sent, .* ms 99\.9th\.$'
    if [ "$WARMUP_RECORDS" -gt 0 ]; then re='^[0-9]+ steady state records sent, .* ms 99\.9th\.$'; fi
    local line
    line="$(grep -E "$re" "$1" | tail -1 || true)"
    [ -n "$line" ] || return 1
    echo "$line" | sed -e 's/ steady state//' -e 's/(//' \
        | awk '{ print $1, $4, $6, $8, $12, $16, $19, $22, $25 }'
}

# Exceptions the perf test's callback printed (printStackTrace: a line starting with the class
# name); the client's own WARN log lines start with "[" and are not counted.
count_errors() {
    grep -cE '^[A-Za-z_$][A-Za-z0-9_.$]*(Exception|Error)([: ]|$)' "$1" || true
}

declare -A RES

run_target() {
    local name="$1"
    log "=== $name: $NUM_RECORDS records x $RECORD_SIZE B, acks=$ACKS, throughput=$THROUGHPUT, partitions=$PARTITIONS ==="
    # (set -e does not apply inside a function called from an `||` list: check each step)
    BROKER_PID=""
    BOOTSTRAP=""
    case "$name" in
        apache) start_apache apache 0 || return 1 ;;
        apache-flush) start_apache apache-flush 1 || return 1 ;;
        kaas) start_kaas || return 1 ;;
        *) log "unknown target $name"; return 1 ;;
    esac
    if ! create_topic "$BOOTSTRAP" "$WORK_DIR/$name.topic.log"; then
        log "$name: creating topic $TOPIC failed"
        return 1
    fi
    local out="$WORK_DIR/$name.perf" rc=0
    run_perf "$out" || rc=$?
    local errors
    errors="$(count_errors "$out.err")"
    local summary=""
    summary="$(parse_summary "$out.out" || true)"
    if [ $rc -ne 0 ] || [ -z "$summary" ]; then
        log "$name: perf test exit code $rc, no summary line; last output:"
        tail -5 "$out.out" >&2 || true
        tail -20 "$out.err" >&2 || true
        RES[$name]="FAILED"
    else
        RES[$name]="$summary $errors"
        read -r s r m a x p50 p95 p99 p999 <<<"$summary"
        log "$name: $s records sent, $r rec/s, $m MB/s, avg $a ms, p99 $p99 ms, max $x ms, errors $errors"
        if [ "$errors" -gt 0 ]; then
            log "$name: the perf test printed exceptions; first ones:"
            grep -m5 -E '^[A-Za-z_$][A-Za-z0-9_.$]*(Exception|Error)([: ]|$)' "$out.err" >&2 || true
        fi
        if [ "$s" != "$EXPECTED_SENT" ]; then
            log "$name: only $s of $EXPECTED_SENT records were acknowledged"
        fi
    fi
    stop_pid "$BROKER_PID"
    if [ "$name" = "kaas" ] && grep -qiE 'panic' "$BROKER_LOG"; then
        log "kaas log mentions a panic:"; grep -m5 -iE 'panic' "$BROKER_LOG" >&2 || true
    fi
}

ensure_jars
for t in $TARGETS; do
    if ! run_target "$t"; then
        RES[$t]="FAILED"
        if [ -n "${BROKER_PID:-}" ]; then stop_pid "$BROKER_PID"; fi
    fi
done

echo
printf 'kafka-producer-perf-test: %s records x %s B, acks=%s, throughput=%s, partitions=%s%s\n' \
    "$NUM_RECORDS" "$RECORD_SIZE" "$ACKS" "$THROUGHPUT" "$PARTITIONS" \
    "$( [ -n "$PRODUCER_PROPS" ] && echo ", props: $PRODUCER_PROPS" )"
printf '%-13s %10s %12s %9s %9s %8s %8s %9s %7s\n' target sent records/s MB/s avg_ms p50_ms p99_ms max_ms errors
for t in $TARGETS; do
    v="${RES[$t]:-FAILED}"
    if [ "$v" = "FAILED" ]; then
        printf '%-13s %10s\n' "$t" FAILED
        continue
    fi
    read -r s r m a x p50 p95 p99 p999 e <<<"$v"
    printf '%-13s %10s %12.1f %9.2f %9.2f %8s %8s %9.1f %7s\n' "$t" "$s" "$r" "$m" "$a" "$p50" "$p99" "$x" "$e"
done

ratio() { # ratio NUMERATOR DENOMINATOR
    awk -v a="$1" -v b="$2" 'BEGIN { if (b + 0 == 0) print "n/a"; else printf "%.2f", a / b }'
}
if [ -n "${RES[kaas]:-}" ] && [ "${RES[kaas]}" != FAILED ]; then
    read -r ks kr km ka kx k50 k95 k99 k999 ke <<<"${RES[kaas]}"
    for a in apache apache-flush; do
        if [ -n "${RES[$a]:-}" ] && [ "${RES[$a]}" != FAILED ]; then
            read -r as ar am aa ax a50 a95 a99 a999 ae <<<"${RES[$a]}"
            printf 'kaas/%-13s throughput x%s, avg latency x%s, p99 latency x%s\n' \
                "$a" "$(ratio "$kr" "$ar")" "$(ratio "$ka" "$aa")" "$(ratio "$k99" "$a99")"
        fi
    done
fi

failed=0
for t in $TARGETS; do
    v="${RES[$t]:-FAILED}"
    if [ "$v" = FAILED ]; then failed=1; continue; fi
    read -r s _ _ _ _ _ _ _ _ e <<<"$v"
    if [ "$s" != "$EXPECTED_SENT" ] || [ "$e" != 0 ]; then failed=1; fi
done
exit $failed
