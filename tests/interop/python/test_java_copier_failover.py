"""Apache Kafka's own exactly-once copier through broker hand-overs: three kaas brokers on one
data directory, a source topic of 6 partitions
seeded with RECORDS values by Apache Kafka's VerifiableProducer, then two
`org.apache.kafka.tools.TransactionalMessageCopier` (kafka-tools 4.4, the copier of Kafka's own
transaction system tests) sharing one consumer group (--group-mode --use-group-metadata, KIP-447
fencing by group generation, --enable-random-aborts: about a third of the transactions abort
and the copier rewinds to its committed offsets) copy it to an output topic of 6 partitions
(a record keeps its partition number). Meanwhile one Apache Kafka ConsoleConsumer per output
partition (assign(), no group, read_committed) reads the output. While they copy, each broker
in turn is killed with SIGKILL, stays down DOWN_SECONDS, is started again and the test waits
until it has rejoined (every broker lists it, every partition has a leader) before the next.

Requires: no copier and no consumer dies or logs an error or a stack trace; each copier ends
normally with remaining=0; the read_committed output (read from the beginning afterwards, its
last stable offsets equal to its high watermarks) holds, partition by partition, exactly the
source partition's values in source order, so every source record once; each concurrent
consumer (started before the copiers, from offset 0) saw no value twice and nothing that is not
a source value of its partition, in offset order, and read its whole partition; the group's
committed offsets are the source's end offsets.
Every broker's log is checked by conftest (Broker.stop). Prints what it counted.

Needs java and the Maven project tests/interop/java (built on demand by javaharness)."""
import json
import re
import socket
import struct
import time

import pytest

import javaharness as jh
from confluent_kafka import Consumer, TopicPartition
from conftest import Broker, free_port
from kaashelpers import (consume_to_end, create_topic, end_offsets, find_coordinator, read_frame,
                         request_frame, settled_end_offsets, unique_topic)

pytestmark = pytest.mark.serial  # conftest.py: bounds by the clock; runs alone

TICK = {"KAAS_CLUSTER_TICK_MS": "200", "KAAS_FENCE_POLL_INTERVAL_MS": "200"}
PARTITIONS = 6
RECORDS = 30_000
COPIERS = 2
TXN_SIZE = 10              # records per copier transaction (the copier's max.poll.records)
DOWN_SECONDS = 4.0         # how long a killed broker stays down
REJOIN_TIMEOUT = 45.0
COPY_TIMEOUT = 180.0       # from the copiers' start to their end
CONSUMER_IDLE_MS = 120_000  # a concurrent consumer gives up after this long without a record
JVM_OPTS = ["-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-Xss512k"]

COPIER = "org.apache.kafka.tools.TransactionalMessageCopier"
CONSOLE_CONSUMER = "org.apache.kafka.tools.consumer.ConsoleConsumer"

# slf4j-simple as tests/interop/java's simplelogger.properties sets it up:
# "HH:mm:ss.SSS LEVEL LoggerName - message"; stack traces and uncaught exceptions as the JVM prints them
ERROR_LOG_RE = re.compile(r"^\S+ ERROR ")
WARN_LOG_RE = re.compile(r"^\S+ WARN ")
STACK_RE = re.compile(r"^(Exception in thread|Caused by:|[A-Za-z_$][\w.$]*(Exception|Error)(:|$))")
OFFSET_LINE_RE = re.compile(r"^Offset:(\d+)\t(.*)$")


# ----------------------------------------------------------------------------- processes

class JavaProc:
    """A background Java program (javaharness.start_java) with its output in files."""

    def __init__(self, name, tmp_path, main_class, *args, heap="256m"):
        self.name = name
        self.out_path = tmp_path / f"{name}.out"
        self.err_path = tmp_path / f"{name}.err"
        self.args = args
        self.proc = jh.start_java(main_class, *args, stdout_path=self.out_path,
                                  stderr_path=self.err_path, heap=heap, jvm_opts=JVM_OPTS)
        self.started = time.time()
        self.ended = None

    def poll(self):
        code = self.proc.poll()
        if code is not None and self.ended is None:
            self.ended = time.time()
        return code

    def stdout(self):
        return self.out_path.read_text(errors="replace")

    def stderr(self):
        return self.err_path.read_text(errors="replace")

    def problems(self):
        """What says this program failed: a non-zero exit code, ERROR log lines, stack traces."""
        bad = []
        code = self.poll()
        if code not in (None, 0):
            bad.append(f"exit code {code}")
        bad += [ln for ln in self.stderr().splitlines() if ERROR_LOG_RE.match(ln) or STACK_RE.match(ln)]
        return bad

    def warnings(self):
        return [ln for ln in self.stderr().splitlines() if WARN_LOG_RE.match(ln)]

    def describe(self, lines=40):
        err = self.stderr().splitlines()
        out = self.stdout().splitlines()
        return (f"--- {self.name} (exit code {self.poll()}): {' '.join(self.args)}\n"
                f"stdout tail:\n" + "\n".join(out[-8:]) + "\nstderr tail:\n" + "\n".join(err[-lines:]))

    def kill(self):
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(10)


def copier_status(copier):
    """(JSON status lines, the shutdown line or None) of a TransactionalMessageCopier."""
    lines = []
    for ln in copier.stdout().splitlines():
        ln = ln.strip()
        if ln.startswith("{") and ln.endswith("}"):
            try:
                lines.append(json.loads(ln))
            except json.JSONDecodeError:
                pass
    # kafka-tools 4.4 prints {"stage": "ShutdownComplete", ...}; older ones {"shutdown_complete": id, ...}
    shutdown = next((s for s in reversed(lines)
                     if s.get("stage") == "ShutdownComplete" or "shutdown_complete" in s), None)
    return lines, shutdown


def consumer_records(consumer):
    """[(offset, value)] a ConsoleConsumer printed (print.offset=true), in the order read."""
    out = []
    for ln in consumer.stdout().splitlines():
        m = OFFSET_LINE_RE.match(ln)
        if m:
            out.append((int(m.group(1)), m.group(2)))
    return out


# ----------------------------------------------------------------------------- metadata

def _metadata(port, topics, timeout=3.0):
    """({node ids}, {(topic, partition): leader or -1 on a partition error}) as the broker on
    `port` answers Metadata v1, or None when it does not answer."""
    body = struct.pack(">i", len(topics))
    for t in topics:
        body += struct.pack(">h", len(t)) + t.encode()
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=timeout) as s:
            s.sendall(request_frame(3, 1, 21, body=body))
            buf = read_frame(s, timeout)
    except (OSError, ConnectionError, AssertionError):
        return None
    at = 4  # correlation id

    def take(fmt):
        nonlocal at
        (v,) = struct.unpack_from(fmt, buf, at)
        at += struct.calcsize(fmt)
        return v

    def string():
        nonlocal at
        n = take(">h")
        if n < 0:
            return None
        v = buf[at:at + n].decode()
        at += n
        return v

    nodes = set()
    for _ in range(take(">i")):
        nodes.add(take(">i"))
        string(), take(">i"), string()
    take(">i")  # controller
    leaders = {}
    for _ in range(take(">i")):
        error, name = take(">h"), string()
        take(">b")
        for _ in range(take(">i")):
            perr, index, leader = take(">h"), take(">i"), take(">i")
            for _ in range(2):
                for _ in range(take(">i")):
                    take(">i")
            if error == 0:
                leaders[(name, index)] = leader if perr == 0 else -1
    return nodes, leaders


def wait_rejoined(brokers, node, topics, timeout=REJOIN_TIMEOUT, grace=10.0):
    """Waits until every broker lists every broker, answers a leader among them for every
    partition of `topics`, all with the same leaders, and `node` (unless None) leads one of
    those partitions again (or, since placement may give it none of them, `grace` seconds passed
    with the rest true). Returns (seconds waited, the leaders)."""
    t0 = time.time()
    ids = {b.node_id for b in brokers}
    want = len(topics) * PARTITIONS
    last = None
    while True:
        answers = [_metadata(b.port, topics) for b in brokers]
        last = answers
        ok = all(a is not None and a[0] == ids and len(a[1]) == want
                 and all(v in ids for v in a[1].values()) for a in answers)
        if ok and all(a[1] == answers[0][1] for a in answers):
            leaders = answers[0][1]
            if node is None or node in leaders.values() or time.time() - t0 > grace:
                return time.time() - t0, leaders
        if time.time() - t0 > timeout:
            raise AssertionError(f"broker {node} did not rejoin within {timeout}s (None: the "
                                 f"cluster did not form); last Metadata answers: {last}")
        time.sleep(0.2)


# ----------------------------------------------------------------------------- the test

@pytest.fixture
def cluster(tmp_path):
    brokers = [Broker(tmp_path / "shared", free_port(), TICK, node_id=i).start() for i in (1, 2, 3)]
    yield brokers
    for b in brokers:
        b.stop()


def _bootstrap(brokers):
    return ",".join(b.bootstrap for b in brokers)


def _values(records):
    return [v.decode() if v is not None else None for _o, _k, v in records]


def test_transactional_copier_survives_broker_kills(cluster, tmp_path):
    t_start = time.time()
    bs = _bootstrap(cluster)
    src, out = unique_topic("copier-src"), unique_topic("copier-out")
    group = unique_topic("copier-group")
    wait_rejoined(cluster, None, [])    # every broker sees the three before the topics are placed
    create_topic(bs, src, PARTITIONS)
    create_topic(bs, out, PARTITIONS)
    _, leaders = wait_rejoined(cluster, None, [src, out])
    print(f"\nleaders at the start: {sorted(leaders.items())}")

    # --- seed the source with Apache Kafka's VerifiableProducer (values "0".."RECORDS-1")
    seed = jh.run_java("org.apache.kafka.tools.VerifiableProducer", "--topic", src,
                       "--max-messages", str(RECORDS), "--acks", "-1", "--bootstrap-server", bs,
                       "--repeating-keys", "1000",   # keyed: spread over every partition by hash
                       timeout=180)
    events = [json.loads(ln) for ln in seed.stdout.splitlines() if ln.startswith("{")]
    acked = sum(1 for e in events if e.get("name") == "producer_send_success")
    failed = [e for e in events if e.get("name") == "producer_send_error"]
    assert seed.returncode == 0 and acked == RECORDS and not failed, (
        f"VerifiableProducer acknowledged {acked}/{RECORDS}, errors {failed[:3]}\n{seed.describe()}")
    source = {p: _values(recs) for p, recs in
              consume_to_end(bs, src, PARTITIONS, "read_uncommitted", timeout=60).items()}
    all_source = [v for p in range(PARTITIONS) for v in source[p]]
    assert sorted(all_source, key=int) == [str(i) for i in range(RECORDS)], "source not as produced"
    per_partition = {p: len(source[p]) for p in range(PARTITIONS)}
    assert all(per_partition.values()), f"a source partition got no record: {per_partition}"
    t_seeded = time.time()
    print(f"seeded {RECORDS} records in {t_seeded - t_start:.1f}s, per partition {per_partition}")

    procs = []
    try:
        # --- one read_committed ConsoleConsumer per output partition (assign(), no group)
        consumers = {p: JavaProc(f"consumer-{p}", tmp_path, CONSOLE_CONSUMER,
                                 "--bootstrap-server", bs, "--topic", out, "--partition", str(p),
                                 "--offset", "earliest", "--isolation-level", "read_committed",
                                 "--max-messages", str(per_partition[p]),
                                 "--timeout-ms", str(CONSUMER_IDLE_MS),
                                 "--command-property", "enable.auto.commit=false",
                                 "--formatter-property", "print.offset=true", heap="128m")
                     for p in range(PARTITIONS) if per_partition[p] > 0}
        procs += consumers.values()
        # --- the copiers, one consumer group
        copiers = [JavaProc(f"copier-{i}", tmp_path, COPIER, "--broker-list", bs,
                            "--input-topic", src, "--input-partition", "0", "--output-topic", out,
                            "--transactional-id", f"{group}-copier-{i}", "--consumer-group", group,
                            "--transaction-size", str(TXN_SIZE), "--enable-random-aborts",
                            "--group-mode", "--use-group-metadata")
                   for i in range(COPIERS)]
        procs += copiers
        t_copy = time.time()

        def copied():
            return sum(end_offsets(bs, out, PARTITIONS, "read_committed").values())

        def fail_fast(what):
            dead = [p for p in procs if p.poll() not in (None, 0)]
            assert not dead, f"{what}: a client died\n" + "\n".join(p.describe() for p in dead)

        # --- wait until the copy is under way, then kill and restart each broker in turn
        deadline = time.time() + 90
        while copied() < RECORDS // 100:
            fail_fast("before the first kill")
            assert time.time() < deadline, ("the copy did not get under way within 90s\n"
                                            + "\n".join(p.describe() for p in procs))
            time.sleep(0.5)
        rounds = []
        for b in cluster:
            before = copied()
            coordinators = {"group": find_coordinator(bs, group, key_type=0)[1],
                            **{c.name: find_coordinator(bs, f"{group}-{c.name}")[1] for c in copiers}}
            copying = [c.name for c in copiers if c.poll() is None]
            t_kill = time.time()
            b.kill()
            time.sleep(DOWN_SECONDS)
            b.start()
            waited, leaders = wait_rejoined(cluster, b.node_id, [src, out])
            led = sorted(f"{t[-3:]}-{p}" for (t, p), n in leaders.items() if n == b.node_id)
            rounds.append(dict(node=b.node_id, at=round(t_kill - t_copy, 1),
                               output_lso_sum=before, copiers_running=copying,
                               coordinators=coordinators,
                               rejoined_after=round(time.time() - t_kill, 1),
                               leads=led))
            print(f"killed broker {b.node_id} at +{t_kill - t_copy:.1f}s of copying "
                  f"(output LSOs sum to {before}, copiers running {copying}, coordinator nodes "
                  f"{coordinators}); restarted after "
                  f"{DOWN_SECONDS}s, rejoined {waited:.1f}s later, leads {led}")
            fail_fast(f"after the kill of broker {b.node_id}")

        # --- the copiers end by themselves, then the concurrent consumers
        deadline = t_copy + COPY_TIMEOUT
        while any(c.poll() is None for c in copiers) and time.time() < deadline:
            fail_fast("while the copiers finish")
            time.sleep(0.5)
        t_copied = time.time()
        running = [c.name for c in copiers if c.poll() is None]
        assert not running, (f"copiers {running} still running {COPY_TIMEOUT}s after they "
                             f"started; committed {copied()}/{RECORDS}\n"
                             + "\n".join(p.describe() for p in procs))
        deadline = time.time() + 90
        while any(c.poll() is None for c in consumers.values()) and time.time() < deadline:
            time.sleep(0.5)
        t_consumed = time.time()
    finally:
        for p in procs:
            p.kill()

    # --- every client lived and ended well
    takeovers = [ln for b in cluster for ln in b.log_text().splitlines() if "did not hand" in ln]
    print(f"broker logs: {len(takeovers)} take-overs of partitions or coordinators from a killed "
          f"broker (fenced first)")
    copier_report = []
    for c in copiers:
        lines, shutdown = copier_status(c)
        stages = [s.get("stage") for s in lines if "stage" in s]
        copier_report.append(dict(name=c.name, exit=c.poll(), shutdown=shutdown,
                                  rebalances=stages.count("RebalanceComplete"),
                                  ran=round(c.ended - c.started, 1),
                                  warnings=len(c.warnings())))
    consumer_report = {p: dict(exit=c.poll(), read=len(consumer_records(c)),
                               warnings=len(c.warnings()))
                       for p, c in consumers.items()}
    print(f"copy took {t_copied - t_copy:.1f}s; copiers: {copier_report}")
    print(f"concurrent consumers (partition: exit, records read, WARN lines): {consumer_report}, "
          f"done {t_consumed - t_copy:.1f}s after the copiers started")
    client_problems = {p.name: p.problems() for p in procs if p.problems()}
    ctx = "\n".join(p.describe() for p in procs)
    assert not client_problems, f"clients failed or logged errors: {client_problems}\n{ctx}"
    for c, rep in zip(copiers, copier_report):
        assert rep["exit"] == 0 and rep["shutdown"] is not None, f"{c.name} did not end normally\n{ctx}"
        assert rep["shutdown"]["remaining"] == 0, f"{c.name} ended with {rep['shutdown']}\n{ctx}"
    assert all(r["copiers_running"] for r in rounds), (
        f"the copy ended before every broker was killed (make RECORDS larger): {rounds}")

    # --- the output, read from the beginning (read_committed): the source, once, in order
    # No transaction left open: the LSO reaches the high watermark (the last commits' markers
    # land after EndTxn answers, so this waits for them).
    try:
        hw = settled_end_offsets(bs, out, PARTITIONS)
    except AssertionError as e:
        raise AssertionError(f"transactions left open in the output: {e}")
    output = {p: _values(recs) for p, recs in
              consume_to_end(bs, out, PARTITIONS, "read_committed", timeout=90, targets=hw).items()}
    all_output = [v for p in range(PARTITIONS) for v in output[p]]
    counts = {}
    for v in all_output:
        counts[v] = counts.get(v, 0) + 1
    source_set = set(all_source)
    duplicated = sorted((v for v, n in counts.items() if n > 1), key=int)
    missing = sorted(source_set - set(counts), key=int)
    foreign = sorted(set(counts) - source_set)
    source_sets = {p: set(source[p]) for p in range(PARTITIONS)}
    misplaced = {p: sum(1 for v in output[p] if v not in source_sets[p]) for p in range(PARTITIONS)}
    out_of_order = [p for p in range(PARTITIONS) if output[p] != source[p]]
    aborted = sum(len(v) for v in consume_to_end(bs, out, PARTITIONS, "read_uncommitted",
                                                 timeout=90, targets=hw).values()) - len(all_output)
    print(f"output read_committed: {len(all_output)} records ({len(counts)} distinct values), "
          f"missing {len(missing)}, duplicated {len(duplicated)}, not from the source "
          f"{len(foreign)}, in another partition {sum(misplaced.values())}; read_uncommitted "
          f"also shows {aborted} records of aborted transactions; high watermarks (and last "
          f"stable offsets) {hw}")
    assert not missing and not duplicated and not foreign, (
        f"output is not the source exactly once: missing {missing[:20]}, duplicated "
        f"{duplicated[:20]} (counts {[counts[v] for v in duplicated[:20]]}), foreign {foreign[:20]}")
    assert len(all_output) == RECORDS and not any(misplaced.values()), misplaced
    assert not out_of_order, f"partitions whose output order differs from the source: {out_of_order}"

    # --- what the concurrent consumers saw: no value twice, only source values, in order
    for p, c in consumers.items():
        recs = consumer_records(c)
        vals = [v for _o, v in recs]
        offsets = [o for o, _v in recs]
        seen, twice = set(), []
        for v in vals:
            if v in seen:
                twice.append(v)
            seen.add(v)
        strange = [v for v in vals if v not in source_sets[p]]
        assert not twice and not strange, (
            f"concurrent read_committed consumer of partition {p} saw values twice {twice[:20]} "
            f"or values not in source partition {p} {strange[:20]}\n{c.describe()}")
        assert offsets == sorted(offsets) and vals == source[p][:len(vals)], (
            f"concurrent consumer of partition {p} read out of order\n{c.describe()}")
        assert len(vals) == per_partition[p], (
            f"concurrent consumer of partition {p} read {len(vals)}/{per_partition[p]}\n{c.describe()}")

    # --- the group's committed offsets are the source's end offsets
    reader = Consumer({"bootstrap.servers": bs, "group.id": group, "enable.auto.commit": False})
    try:
        committed = {tp.partition: tp.offset for tp in
                     reader.committed([TopicPartition(src, p) for p in range(PARTITIONS)], timeout=30)}
    finally:
        reader.close()
    src_end = end_offsets(bs, src, PARTITIONS, "read_uncommitted")
    print(f"group {group} committed {committed}, source end offsets {src_end}; "
          f"test took {time.time() - t_start:.1f}s")
    assert committed == src_end, f"committed offsets {committed} != source end offsets {src_end}"
