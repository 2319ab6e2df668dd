"""Three kaas brokers on one JuiceFS volume, each broker on its own JuiceFS mount (its own
client, session, cache and locks, as on separate machines; see juicefs.py), under an idempotent
confluent-kafka producer (acks=all) writing numbered records v<n> to 6 partitions:

- fault (a), `test_stall_on_juicefs_loses_nothing`: the broker process leading the most
  partitions is stopped (SIGSTOP) for 20 s while its mount keeps running, so it keeps its
  JuiceFS session and every lock it holds; the others must see its heartbeat go stale
  (KAAS_BROKER_SESSION_TIMEOUT_MS=6000), fence it and serve its partitions within the session
  timeout plus a margin; on SIGCONT the stalled broker must find its fence and start again in
  place (when_fenced = rejoin, the default), a second producer (records s<n>) bootstrapped from
  it alone writes to the partitions it led, and rejoined it must lead partitions again.
  Afterwards every broker is restarted and the topic read again. The same fault on a local
  directory, with when_fenced = exit (the broker exits with code 75 and the test restarts it), is
  test_cluster_stall.py, which runs `stall_loses_nothing` from here;
- fault (c), `test_kill9_on_juicefs_loses_nothing`: a partition leader is killed -9 mid-run and
  restarted later;
- fault (b), `test_lost_lock_on_juicefs_loses_nothing`: the FUSE process of a partition leader's
  mount is stopped (SIGSTOP), so the broker keeps running but its file system calls block and,
  ~5 JuiceFS heartbeats later, another mount cleans its session up and with it every lock the
  broker held; the others take its partitions over; then the mount is resumed (SIGCONT) and
  flushes what the stale broker had buffered, and a second producer (records s<n>) bootstrapped
  from the stale broker alone writes to the partitions it led; the fenced broker must start
  again in place. Afterwards every broker is restarted and the topic read again.

In (a) and (b) a raw idempotent producer (idempotent_probe.RetryProbe, records r<n>) writes one
batch to every partition before the fault and sends each again once the others lead: every retry
must be answered as a duplicate (NONE, the first offset) and its record be there once.

Each reads every partition from the beginning (read_committed) and requires every acknowledged
record exactly once, at the partition and offset its acknowledgement named, no (partition,
offset) acknowledged for two records, no record that was never produced, no consumer error, one
high watermark per partition whichever broker is asked; every broker's log is checked
(conftest.Broker.stop). Each test prints what it counted (acknowledged, missing, duplicated,
failover times). Traffic goes to 127.0.0.1 only. Skipped only when /dev/fuse or the juicefs
binary is missing (test_cluster_stall.py imports its helpers from here and is not skipped).
"""
import collections
import datetime
import logging
import os
import re
import signal
import socket
import struct
import subprocess
import threading
import time
import types
from pathlib import Path

import pytest
from confluent_kafka import Consumer, KafkaError, KafkaException, Producer, TopicPartition

import juicefs
from conftest import ANSI_RE, Broker, free_port, poll_until, stop_all
from idempotent_probe import RetryProbe
from kaashelpers import create_topic, read_frame, request_frame, unique_topic, wait_topic_ready

REASON = juicefs.unavailable_reason()
pytestmark = [
    pytest.mark.skipif(REASON is not None, reason=f"JuiceFS cluster tests: {REASON}"),
    pytest.mark.serial,  # conftest.py: bounds by the clock; runs alone
]

PARTITIONS = 6
RATE = 300                 # records per second, steady (the producer keeps going through the fault)
WARMUP_ACKS = 600          # acknowledged records before the fault
HOLD_AFTER_FAILOVER = 5.0  # seconds of producing on the new leaders before the victim comes back
AFTER_RETURN = 8.0         # seconds of producing after the victim is back
FAILOVER_TIMEOUT = 90.0    # the JuiceFS session cleanup alone takes ~5 heartbeats
FLUSH_TIMEOUT = 150.0
READ_TIMEOUT = 120.0
READ_STALL = 20.0          # the reader gives up when no record and no end-of-partition came for this long
TICK = {"KAAS_CLUSTER_TICK_MS": "200", "KAAS_FENCE_POLL_INTERVAL_MS": "200"}
TORN_TAIL = "recovery truncated a torn log tail"


# ----------------------------------------------------------------------------- the cluster

class JuiceCluster:
    """Brokers 1..n, broker i on mount i of one JuiceFS volume, all on the volume's /kaas."""

    def __init__(self, tmp_path):
        self.tmp_path = tmp_path
        self.volume = juicefs.Volume(tmp_path / "jfs")
        self.brokers = []

    def start(self, n=3, env=None):
        """`env`: settings for every broker on top of TICK (only the stall test gives any)."""
        self.volume.format()
        for i in range(1, n + 1):
            mount = self.volume.mount(f"node{i}")
            b = Broker(mount.path / "kaas", free_port(), dict(TICK, **(env or {})), node_id=i)
            b.log_path = self.tmp_path / f"kaas-node{i}.log"   # not on the volume: readable always
            b.mount = mount
            self.brokers.append(b)
        for b in self.brokers:
            b.start()
        return self.brokers

    @property
    def bootstrap(self):
        return ",".join(b.bootstrap for b in self.brokers)

    def close(self):
        """Resumes every mount, stops and checks every broker still running (conftest's checks),
        unmounts; raises the problems found, after everything is cleaned up."""
        problems = []
        for m in self.volume.mounts:
            m.resume()
        for b in self.brokers:
            try:
                b.stop()
            except AssertionError as e:
                problems.append(str(e))
            except Exception as e:  # noqa: BLE001 - clean-up goes on
                problems.append(f"stopping broker {b.node_id}: {e!r}")
                if b.alive():
                    b.proc.kill()
                    b.proc.wait(10)
        problems += self.volume.close()
        assert not problems, "\n\n".join(problems)


@pytest.fixture
def cluster(tmp_path):
    c = JuiceCluster(tmp_path)
    try:
        yield c
    finally:
        c.close()


# ----------------------------------------------------------------------------- metadata

class _Reader:
    def __init__(self, buf):
        self.buf, self.at = buf, 0

    def take(self, fmt):
        (v,) = struct.unpack_from(fmt, self.buf, self.at)
        self.at += struct.calcsize(fmt)
        return v

    def string(self):
        n = self.take(">h")
        if n < 0:
            return None
        s = self.buf[self.at:self.at + n].decode()
        self.at += n
        return s


def _call(port, api_key, version, correlation_id, body, timeout):
    """The answer's bytes to one request on a fresh connection, or None when the broker does
    not answer within `timeout` (a stalled or stopped broker)."""
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=timeout) as s:
            s.sendall(request_frame(api_key, version, correlation_id, body=body))
            return read_frame(s, timeout)
    except (OSError, ConnectionError, AssertionError):
        return None


def metadata_leaders(port, topic, timeout=3.0):
    """{partition: leader node} as the broker on `port` answers Metadata v1 for `topic` (-1 for
    a partition with an error), or None when it does not answer within `timeout`."""
    t = topic.encode()
    resp = _call(port, 3, 1, 11, struct.pack(">ih", 1, len(t)) + t, timeout)
    if resp is None:
        return None
    r = _Reader(resp)
    r.take(">i")                                  # correlation id
    for _ in range(r.take(">i")):                 # brokers
        r.take(">i"), r.string(), r.take(">i"), r.string()
    r.take(">i")                                  # controller
    out = {}
    for _ in range(r.take(">i")):
        error, name = r.take(">h"), r.string()
        r.take(">b")                              # is_internal
        for _ in range(r.take(">i")):
            perr, index, leader = r.take(">h"), r.take(">i"), r.take(">i")
            for _ in range(2):                    # replicas, isr
                for _ in range(r.take(">i")):
                    r.take(">i")
            if name == topic and error == 0:
                out[index] = leader if perr == 0 else -1
    return out if len(out) == PARTITIONS else None


def metadata_brokers(port, timeout=3.0):
    """The node ids the broker on `port` lists in a Metadata v1 answer for no topic, or None when
    it does not answer within `timeout`."""
    resp = _call(port, 3, 1, 13, struct.pack(">i", 0), timeout)
    if resp is None:
        return None
    r = _Reader(resp)
    r.take(">i")                                  # correlation id
    nodes = []
    for _ in range(r.take(">i")):
        nodes.append(r.take(">i"))
        r.string(), r.take(">i"), r.string()      # host, port, rack
    return sorted(nodes)


def list_offsets(port, topic, timeout=3.0):
    """{partition: (error code, latest offset)} as the broker on `port` answers ListOffsets v1
    (LATEST) for every partition of `topic`, or None when it does not answer within `timeout`."""
    t = topic.encode()
    body = struct.pack(">iih", -1, 1, len(t)) + t + struct.pack(">i", PARTITIONS)
    body += b"".join(struct.pack(">iq", p, -1) for p in range(PARTITIONS))
    resp = _call(port, 2, 1, 12, body, timeout)
    if resp is None:
        return None
    r = _Reader(resp)
    r.take(">i")                                  # correlation id
    out = {}
    for _ in range(r.take(">i")):
        r.string()
        for _ in range(r.take(">i")):
            index, error = r.take(">i"), r.take(">h")
            r.take(">q")                          # timestamp
            out[index] = (error, r.take(">q"))
    return out


def pick_victim(brokers, topic):
    """The broker leading the most partitions (the highest node id on a tie) and its partitions."""
    leaders = poll_until(lambda: metadata_leaders(brokers[0].port, topic), 30,
                         f"the leaders of {topic}")
    counts = collections.Counter(leaders.values())
    node = max((n for n in counts if n >= 0), key=lambda n: (counts[n], n))
    victim = next(b for b in brokers if b.node_id == node)
    return victim, sorted(p for p, n in leaders.items() if n == node), leaders


def wait_taken_over(survivors, victim, topic, timeout=FAILOVER_TIMEOUT):
    """Waits until every survivor answers Metadata with every partition led by a survivor;
    returns that answer."""
    ids = {b.node_id for b in survivors}

    def taken():
        views = [metadata_leaders(b.port, topic) for b in survivors]
        if all(v is not None and set(v.values()) <= ids for v in views):
            return views[0]
        return None
    return poll_until(taken, timeout, f"brokers {sorted(ids)} to lead every partition of {topic} "
                      f"(broker {victim.node_id} gone)", interval=0.2)


def leader_ports(brokers, topic):
    """{partition: port of its leader} as the first of `brokers` that answers Metadata says,
    or None."""
    ports = {b.node_id: b.port for b in brokers}
    for b in brokers:
        view = metadata_leaders(b.port, topic, timeout=2.0) if b.alive() else None
        if view:
            return {p: ports[n] for p, n in view.items() if n in ports}
    return None


def retry_probe(brokers, topic):
    """A RetryProbe with its batch of one record written to every partition of `topic`."""
    return RetryProbe(topic, range(PARTITIONS)).send(brokers[0].port, lambda: leader_ports(brokers, topic))


def retried_as_duplicates(probe, survivors, topic, label):
    """Sends the probe's batches again, to the partitions' leaders among `survivors` (after a
    takeover): each must be answered NONE with its first offset (eos-rules 19)."""
    answers = probe.retry(lambda: leader_ports(survivors, topic))
    bad = probe.check_retries(answers)
    print(f"[{label}] idempotent retries of batches written before the fault, after the takeover: "
          f"{ {p: a for p, a in answers.items()} } (partition: (error, base offset)); first offsets "
          f"{ {a[0]: a[1] for a in probe.acked.values()} }")
    assert not bad, (f"[{label}] idempotent retries of batches acknowledged before the fault not "
                     f"answered as duplicates (NONE, the first offset) by the new leaders: "
                     f"(partition, first offset, (error, base offset)) {bad}")


# ----------------------------------------------------------------------------- load

def _client_debug(log_path):
    """librdkafka debug contexts written to `log_path` (none when it is None)."""
    if log_path is None:
        return {}
    # Not registered with logging's manager: gone with the producer.
    log = logging.Logger(f"rdkafka:{log_path}", logging.DEBUG)
    handler = logging.FileHandler(log_path)
    handler.setFormatter(logging.Formatter("%(created).3f %(message)s"))
    log.addHandler(handler)
    return {"debug": "eos,msg,broker,topic,metadata", "logger": log}


# What librdkafka logs when its idempotence state moves (a PID, an epoch bump, a sequence reset,
# a drain, an implicit or duplicate acknowledgement, a failed batch) or it starts over from its
# bootstrap servers.
EOS_EVENTS = re.compile(r"IDEMPSTATE|GETPID|NEWPID|RESETSEQ|[Dd]rain|IMPLICITACK|DUPSEQ|ERRSEQ|ERRPID|"
                        r"encountered error|FATAL|REBOOTSTRAP|DECOMMISSION")


def eos_events(load, keep=60):
    """The last `keep` idempotence lines of `load`'s librdkafka log, and where the whole is."""
    if load.log_path is None or not load.log_path.exists():
        return ""
    with open(load.log_path, errors="replace") as f:
        lines = [line.rstrip()[:300] for line in f if EOS_EVENTS.search(line)]
    return (f"\n--- producer {load.prefix.decode()!r}: last {min(keep, len(lines))} of {len(lines)} "
            f"idempotence lines of librdkafka (all of its log: {load.log_path}) ---\n"
            + "\n".join(lines[-keep:]))


def client_log_dir(cluster):
    """Where the clients' logs go: beside the brokers' logs."""
    return Path(cluster.brokers[0].log_path).parent


class Load:
    """An idempotent producer (acks=all) writing records <prefix><n>, n = 0, 1, ..., to partition
    partitions[n % len(partitions)] at `rate` per second on its own thread until `finish()`."""

    def __init__(self, bootstrap, topic, prefix=b"v", partitions=tuple(range(PARTITIONS)), rate=RATE,
                 message_timeout_ms=120_000, log_dir=None):
        self.topic = topic
        # librdkafka's own account of the idempotent producer (PIDs, sequences, retries, acks),
        # for a failure to be explained after the fact.
        self.log_path = Path(log_dir) / f"rdkafka-{prefix.decode()}.log" if log_dir else None
        self.prefix = prefix
        self.partitions = tuple(partitions)
        self.rate = rate
        self.client_errors = []
        self.producer = Producer({
            "bootstrap.servers": bootstrap, "enable.idempotence": True, "acks": "all",
            "linger.ms": 5, "message.timeout.ms": message_timeout_ms, "request.timeout.ms": 30_000,
            "topic.metadata.refresh.interval.ms": 1_000, "reconnect.backoff.ms": 50,
            "reconnect.backoff.max.ms": 500, "error_cb": self.client_errors.append,
            **_client_debug(self.log_path)})
        self.lock = threading.Lock()
        self.acked = {}         # n -> (partition, offset, time acknowledged)
        self.failed = {}        # n -> KafkaError
        self.raised = []        # exceptions from produce/poll/flush
        self.produced = 0
        self.unflushed = None
        self.stopping = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)

    def partition_of(self, n):
        return self.partitions[n % len(self.partitions)]

    def start(self):
        self.started = time.time()
        self.thread.start()
        return self

    def _on_delivery(self, err, msg):
        n = int(msg.value()[len(self.prefix):])
        with self.lock:
            if err is None:
                self.acked[n] = (msg.partition(), msg.offset(), time.time())
            else:
                self.failed[n] = err

    def _run(self):
        p = self.producer
        try:
            n = 0
            while not self.stopping.is_set():
                while True:
                    try:
                        p.produce(self.topic, key=b"k%d" % n, value=self.prefix + b"%d" % n,
                                  partition=self.partition_of(n), on_delivery=self._on_delivery)
                        break
                    except BufferError:
                        p.poll(0.05)
                n += 1
                self.produced = n
                if n % 10 == 0:
                    p.poll(0)
                    lag = self.started + n / self.rate - time.time()
                    if lag > 0:
                        time.sleep(lag)
        except KafkaException as e:
            self.raised.append(e)
        try:
            deadline = time.time() + FLUSH_TIMEOUT
            while len(p) > 0 and time.time() < deadline:
                p.flush(1.0)
            p.poll(0)
            self.unflushed = len(p)
        except KafkaException as e:
            self.raised.append(e)
            self.unflushed = len(p)

    def acks(self):
        with self.lock:
            return len(self.acked)

    def first_ack_after(self, t, partitions):
        """{partition: seconds after t of its first acknowledgement at or after t} (None: none)."""
        with self.lock:
            firsts = {}
            for part, _, at in self.acked.values():
                if part in partitions and at >= t and (firsts.get(part) is None or at < firsts[part]):
                    firsts[part] = at
        return {q: (round(firsts[q] - t, 2) if q in firsts else None) for q in partitions}

    def finish(self):
        finish_all([self])

    def fatal(self):
        return ([e for e in self.client_errors if e.fatal()]
                + [e.args[0] for e in self.raised if e.args and isinstance(e.args[0], KafkaError)
                   and e.args[0].fatal()])


def finish_all(loads):
    """Stops every producer at once, then waits for each to flush (bounded)."""
    for load in loads:
        load.stopping.set()
    for load in loads:
        load.thread.join(FLUSH_TIMEOUT + 30)
        assert not load.thread.is_alive(), f"producer {load.prefix!r}: its thread did not finish"


# ----------------------------------------------------------------------------- reading back

def high_watermarks(brokers, topic, timeout=30.0):
    """The high watermark of every partition, from ListOffsets sent to every running broker (a
    broker that does not lead a partition answers NOT_LEADER_OR_FOLLOWER for it). Returns
    ({partition: highest watermark answered}, {partition: {node: watermark}} for the partitions
    two brokers answered for with different watermarks: two brokers claiming one partition)."""
    answers = {}

    def complete():
        answers.clear()
        for b in brokers:
            got = list_offsets(b.port, topic) if b.alive() else None
            for p, (error, offset) in (got or {}).items():
                if error == 0:
                    answers.setdefault(p, {})[b.node_id] = offset
        return len(answers) == PARTITIONS
    poll_until(complete, timeout, f"a high watermark for every partition of {topic} "
               f"(answers so far: {answers})", interval=0.5)
    hw = {p: max(by_node.values()) for p, by_node in sorted(answers.items())}
    split = {p: by_node for p, by_node in sorted(answers.items()) if len(set(by_node.values())) > 1}
    return hw, split


def read_back(brokers, topic, timeout=READ_TIMEOUT):
    """Every partition from offset 0 with a read_committed consumer (assign, no group) until each
    reports end-of-partition at its high watermark (the highest any broker answers). Returns
    (records {p: [(offset, value)]}, consumer errors [str], high watermarks {p: hw}, partitions
    two brokers answered for with different high watermarks {p: {node: hw}})."""
    targets, split = high_watermarks(brokers, topic)
    c = Consumer({"bootstrap.servers": ",".join(b.bootstrap for b in brokers), "group.id": unique_topic("jfs-reader"),
                  "enable.auto.commit": False, "enable.auto.offset.store": False,
                  "auto.offset.reset": "earliest", "fetch.wait.max.ms": 100,
                  "enable.partition.eof": True, "isolation.level": "read_committed"})
    out = {p: [] for p in range(PARTITIONS)}
    errors = []
    eof_at = {p: None for p in range(PARTITIONS)}
    try:
        c.assign([TopicPartition(topic, p, 0) for p in range(PARTITIONS)])
        deadline = time.time() + timeout
        progress = time.time()
        while not all(eof_at[p] is not None and eof_at[p] >= targets[p] for p in range(PARTITIONS)):
            now = time.time()
            if now > deadline or now > progress + READ_STALL:
                errors.append(f"reader stopped: the high watermarks {targets} not reached "
                              f"({'timeout ' + str(timeout) if now > deadline else 'no progress for ' + str(READ_STALL)}s); "
                              f"end-of-partition offsets {eof_at}, records read per partition "
                              f"{ {p: len(v) for p, v in out.items()} }")
                break
            msg = c.poll(0.5)
            if msg is None:
                continue
            if msg.error() is None or msg.error().code() == KafkaError._PARTITION_EOF:
                progress = time.time()
            if msg.error():
                if msg.error().code() == KafkaError._PARTITION_EOF:
                    eof_at[msg.partition()] = msg.offset()
                else:
                    errors.append(f"partition {msg.partition()} offset {msg.offset()}: {msg.error()}")
                    if len(errors) > 50:
                        break
                continue
            out[msg.partition()].append((msg.offset(), msg.value()))
    finally:
        c.close()
    return out, errors, targets, split


def tally(loads, read, errors, hw, label):
    """Compares what was read with what the producers in `loads` had acknowledged; prints and
    returns the counts. Records are named (prefix, n), e.g. (b"v", 17) for b"v17". `hw`: the
    high watermarks the reader aimed at (reported next to the offset each partition was read to)."""
    by_prefix = {load.prefix: load for load in loads}
    acked = {(load.prefix, n): a for load in loads for n, a in load.acked.items()}
    where = collections.defaultdict(list)       # (prefix, n) -> [(partition, offset)]
    strangers = []
    for p, records in read.items():
        for offset, value in records:
            m = re.fullmatch(rb"([a-z]+)(\d+)", value or b"")
            load = by_prefix.get(m.group(1)) if m else None
            n = int(m.group(2)) if m else None
            if load is None or n >= load.produced or load.partition_of(n) != p:
                strangers.append((p, offset, value[:40] if value else value))
                continue
            where[(load.prefix, n)].append((p, offset))
    missing = sorted(r for r in acked if r not in where)
    duplicated = {r: w for r, w in where.items() if len(w) > 1}
    misplaced = {r: (acked[r][:2], where[r]) for r in acked if r in where and acked[r][:2] not in where[r]}
    # one (partition, offset) acknowledged for two different records: two brokers appended there
    at = collections.defaultdict(list)
    for r, a in acked.items():
        at[a[:2]].append(r)
    double_acked = {pos: rs for pos, rs in at.items() if len(rs) > 1}
    counts = {
        "label": label, "produced": sum(load.produced for load in loads), "acked": len(acked),
        "failed": sum(len(load.failed) for load in loads),
        "read": sum(len(v) for v in read.values()), "distinct": len(where),
        "missing": len(missing),
        "missing_by_partition": dict(sorted(collections.Counter(acked[r][0] for r in missing).items())),
        "duplicated": len(duplicated), "misplaced": len(misplaced),
        "misplaced_by_partition": dict(sorted(collections.Counter(acked[r][0] for r in misplaced).items())),
        "strangers": len(strangers), "consumer_errors": len(errors),
        "offsets_acked_twice": len(double_acked),
        "offsets_acked_twice_by_partition": dict(sorted(collections.Counter(p for p, _ in double_acked).items())),
        # partition: (offset after the last record read, high watermark)
        "read_to_of_hw": {p: (recs[-1][0] + 1 if recs else 0, hw.get(p)) for p, recs in read.items()},
    }
    if len(loads) > 1:
        counts["acked_per_producer"] = {load.prefix.decode(): len(load.acked) for load in loads}
        counts["missing_per_producer"] = dict(collections.Counter(r[0].decode() for r in missing))
    print(f"[{label}] " + " ".join(f"{k}={v}" for k, v in counts.items() if k != "label"))
    counts.update(double_acked_map=double_acked, acked_map=acked, missing_list=missing, duplicated_map=duplicated,
                  misplaced_map=misplaced, strangers_list=strangers, errors_list=errors,
                  keys=set(where))
    return counts


def _name(r):
    return r[0].decode() + str(r[1])


def assert_nothing_lost(c, extra=""):
    label, acked = c["label"], c["acked_map"]
    first_missing = [(_name(r), acked[r][:2]) for r in c["missing_list"][:10]]
    assert not c["missing"], (
        f"[{label}] {c['missing']} of {c['acked']} acknowledged records missing, per partition "
        f"{c['missing_by_partition']}; first (record, (partition, acknowledged offset)): "
        f"{first_missing}; each partition read to (offset, of high watermark): "
        f"{c['read_to_of_hw']}; (partition, offset)s acknowledged for two different records: "
        f"{c['offsets_acked_twice']} (per partition {c['offsets_acked_twice_by_partition']}, e.g. "
        f"{[(pos, [_name(r) for r in rs]) for pos, rs in list(c['double_acked_map'].items())[:5]]}); "
        f"consumer errors: {c['errors_list'][:4]}{extra}")
    assert not c["duplicated"], (
        f"[{label}] {c['duplicated']} records read more than once (idempotent producers), e.g. "
        f"{[(_name(r), w) for r, w in list(c['duplicated_map'].items())[:10]]}{extra}")
    assert not c["strangers"], (
        f"[{label}] {c['strangers']} records that were never produced (or in the wrong partition): "
        f"(partition, offset, value) {c['strangers_list'][:10]}{extra}")
    assert not c["consumer_errors"], (
        f"[{label}] {c['consumer_errors']} consumer errors: {c['errors_list'][:10]}{extra}")
    assert not c["offsets_acked_twice"], (
        f"[{label}] {c['offsets_acked_twice']} (partition, offset)s acknowledged for two different "
        f"records, per partition {c['offsets_acked_twice_by_partition']}, e.g. "
        f"{[(pos, [_name(r) for r in rs]) for pos, rs in list(c['double_acked_map'].items())[:5]]}{extra}")
    assert not c["misplaced"], (
        f"[{label}] {c['misplaced']} acknowledged records not at the (partition, offset) of their "
        f"acknowledgement, per partition {c['misplaced_by_partition']}: record: (acknowledged, "
        f"read at) {[(_name(r), m) for r, m in list(c['misplaced_map'].items())[:10]]}{extra}")


def assert_producer_healthy(load):
    who = f"producer {load.prefix.decode()!r}"
    assert load.unflushed == 0, (f"{who}: {load.unflushed} records never got a delivery report "
                                 f"within {FLUSH_TIMEOUT}s; client errors {load.client_errors[:10]}")
    assert not load.fatal(), f"{who}: the idempotent producer hit a fatal error: {load.fatal()}"
    assert not load.raised, f"{who} raised: {load.raised[:5]}"
    assert not load.failed, (f"{who}: {len(load.failed)} deliveries failed, e.g. "
                             f"{list(load.failed.items())[:5]}; client errors {load.client_errors[:10]}")


def read_live_and_after_restart(cluster, topic, load, stale, label, others=()):
    """Reads the topic back (read_back, tally) with every broker as it is, then stops (and checks,
    conftest.Broker.stop) every broker of `cluster`, starts them again and reads it back again:
    what a later open of the logs keeps. `load`: the producer that ran throughout, `stale`: the
    one bootstrapped from the faulty broker alone, `others`: more writers counted the same way
    (a RetryProbe). Prints what it found; returns it for assert_all_kept."""
    brokers = cluster.brokers
    loads = [load, stale, *others]
    read1, errors1, hw1, split1 = read_back(brokers, topic)
    c1 = tally(loads, read1, errors1, hw1, f"{label}, live")
    print(f"high watermarks {hw1}, partitions two brokers answer for with different high "
          f"watermarks {split1}; client errors: main producer {len(load.client_errors)} "
          f"{[str(e) for e in load.client_errors[:3]]}, stale-view producer "
          f"{len(stale.client_errors)} {[str(e) for e in stale.client_errors[:3]]}")

    # every broker stopped (and checked) and started again: what a later open of the logs keeps
    problems = stop_all(brokers)
    torn_before = set(grep_logs(brokers, TORN_TAIL))
    for b in brokers:
        b.start()
    wait_topic_ready(cluster.bootstrap, topic, PARTITIONS, timeout=60)
    read2, errors2, hw2, split2 = read_back(brokers, topic)
    c2 = tally(loads, read2, errors2, hw2, f"{label}, after restarting every broker")
    torn = [line for line in grep_logs(brokers, TORN_TAIL) if line not in torn_before]
    lost_at_reopen = sorted(c1["keys"] - c2["keys"])
    print(f"high watermarks after the restart {hw2}; torn tails truncated at the restart: "
          f"{len(torn)} {torn[:6]}; records read before but not after the restart: "
          f"{len(lost_at_reopen)}")
    return types.SimpleNamespace(c1=c1, split1=split1, c2=c2, split2=split2, problems=problems,
                                 torn=torn, lost_at_reopen=lost_at_reopen)


def assert_all_kept(checked, load, stale, extra):
    """The checks on what read_live_and_after_restart found, `extra` added to each message."""
    c1, split1, c2, split2 = checked.c1, checked.split1, checked.c2, checked.split2
    lost_at_reopen, torn, problems = checked.lost_at_reopen, checked.torn, checked.problems
    extra += eos_events(load) + eos_events(stale)
    assert_nothing_lost(c1, extra)
    assert not split1, (f"after SIGCONT two brokers answer for one partition with different high "
                        f"watermarks, {{partition: {{node: high watermark}}}}: {split1}{extra}")
    assert not lost_at_reopen, (
        f"{len(lost_at_reopen)} records read before restarting the brokers are gone after it "
        f"({sum(1 for r in lost_at_reopen if r in c1['acked_map'])} of them acknowledged), e.g. "
        f"{[(_name(r), c1['acked_map'].get(r)) for r in lost_at_reopen[:10]]}; torn tails "
        f"truncated: {torn}{extra}")
    assert_nothing_lost(c2, extra)
    assert not split2, f"after the restart brokers disagree on high watermarks: {split2}{extra}"
    assert not problems, "\n\n".join(problems)
    assert_producer_healthy(load)
    # the stale-view producer's records may fail (not lost: never acknowledged) when its only
    # bootstrap broker stopped, but it must not have gone fatal
    assert not stale.fatal(), f"the stale-view producer hit a fatal error: {stale.fatal()}"


def grep_logs(brokers, needle):
    return [f"node {b.node_id}: {ANSI_RE.sub('', line)}" for b in brokers
            for line in b.log_text().splitlines() if needle in line]


def _juicefs_time(line):
    """The timestamp of a juicefs log line ("2026/12/04 21:34:10.944309 juicefs[..."), local time."""
    m = re.match(r"(\d{4}/\d\d/\d\d \d\d:\d\d:\d\d\.\d+)", line)
    return datetime.datetime.strptime(m.group(1), "%Y/%m/%d %H:%M:%S.%f").timestamp() if m else None


def start_load(cluster, topic):
    wait_members(cluster.brokers)     # else the topic is placed on the brokers its creator saw
    create_topic(cluster.brokers[0].bootstrap, topic, PARTITIONS)
    wait_topic_ready(cluster.bootstrap, topic, PARTITIONS)
    load = Load(cluster.bootstrap, topic, log_dir=client_log_dir(cluster)).start()
    poll_until(lambda: load.acks() >= WARMUP_ACKS, 90, f"{WARMUP_ACKS} acknowledged records",
               interval=0.1)
    return load


# ----------------------------------------------------------------------------- the tests

def test_kill9_on_juicefs_loses_nothing(cluster):
    brokers = cluster.start()
    topic = unique_topic("jfs-kill9")
    load = start_load(cluster, topic)
    victim, victim_parts, before = pick_victim(brokers, topic)
    survivors = [b for b in brokers if b is not victim]
    print(f"\nleaders before: {before}; killing broker {victim.node_id} (partitions {victim_parts}) "
          f"after {load.acks()} acks")

    t_fault = time.time()
    victim.kill()
    after = wait_taken_over(survivors, victim, topic)
    failover = time.time() - t_fault
    time.sleep(HOLD_AFTER_FAILOVER)
    acks_after = load.first_ack_after(t_fault, victim_parts)

    t_back = time.time()
    victim.start()
    time.sleep(AFTER_RETURN)
    back = metadata_leaders(victim.port, topic)
    load.finish()
    print(f"failover: survivors lead every partition {failover:.2f}s after kill -9 (leaders {after}); "
          f"first acknowledgement per victim partition after the kill, s: {acks_after}; "
          f"restarted at +{t_back - t_fault:.1f}s, leaders {AFTER_RETURN}s later: {back}")

    read, errors, hw, split = read_back(brokers, topic)
    c = tally([load], read, errors, hw, "kill -9")
    print(f"high watermarks {hw}; client errors {len(load.client_errors)}")
    assert not split, f"brokers answer different high watermarks for one partition: {split}"
    assert_nothing_lost(c, f"\n(broker {victim.node_id} killed, it led {victim_parts}; "
                           f"failover {failover:.1f}s)")
    assert_producer_healthy(load)


# What the broker whose mount was stopped may log once it is back: that it was fenced (another
# broker took over what it served), and that it stops, then starts again in place as a new
# incarnation (when_fenced = rejoin, REJOINING) or exits with FENCED_EXIT_CODE (when_fenced =
# exit; then the test restarts it, as its supervisor would). These are the messages of the fencing being added
# to kaas (src/store/cluster/fence.rs, src/actors/membership.rs, src/actors/partition.rs); only
# the stale broker may log them, anything else is a failure.
STALE_BROKER_ERRORS = (
    r"ERROR kaas::actors::membership: stopping: this broker \(node \d+, incarnation \d+\) was fenced",
    r"ERROR kaas::actors::partition: fenced, nothing more is acknowledged",
)
FENCED_EXIT_CODE = 75
REJOINING = r"WARN kaas::actors::membership: rejoining the cluster as a new incarnation"
STALE_CLIENT_RATE = 100
STALE_CLIENT_TIMEOUT_MS = 30_000   # its records may fail (its only bootstrap broker may be gone)


def test_lost_lock_on_juicefs_loses_nothing(cluster):
    """Fault (b). Besides the producer that runs throughout (records v<n>, bootstrapped from all
    three brokers), a second idempotent producer (records s<n>, to the victim's partitions) is
    started after SIGCONT bootstrapped from the stale broker alone: a client whose metadata comes
    from the broker that lost its locks, as any client's may (Metadata is answered by every
    broker). Whatever either producer got acknowledged must be there once, where acknowledged."""
    brokers = cluster.start()
    topic = unique_topic("jfs-lostlock")
    load = start_load(cluster, topic)
    victim, victim_parts, before = pick_victim(brokers, topic)
    survivors = [b for b in brokers if b is not victim]
    probe = retry_probe(brokers, topic)
    mount = victim.mount
    print(f"\nleaders before: {before}; stopping the JuiceFS mount of broker {victim.node_id} "
          f"(partitions {victim_parts}) after {load.acks()} acks")

    tries = mount.pause()
    t_fault = time.time()
    try:
        after = wait_taken_over(survivors, victim, topic)
        failover = time.time() - t_fault
        retried_as_duplicates(probe, survivors, topic, "lost lock")
        time.sleep(HOLD_AFTER_FAILOVER)
        acks_before_return = load.first_ack_after(t_fault, victim_parts)
    finally:
        t_back = time.time()
        mount.resume()
    stale = Load(victim.bootstrap, topic, prefix=b"s", partitions=victim_parts,
                 rate=STALE_CLIENT_RATE, message_timeout_ms=STALE_CLIENT_TIMEOUT_MS,
                 log_dir=client_log_dir(cluster)).start()
    time.sleep(AFTER_RETURN)
    stale_view = metadata_leaders(victim.port, topic)
    acks_after = load.first_ack_after(t_fault, victim_parts)
    finish_all([load, stale])
    for pattern in STALE_BROKER_ERRORS:
        victim.allow_log_errors(pattern)
    exit_code = victim.proc.poll()
    assert exit_code is None, (
        f"the broker whose mount was stopped exited with code {exit_code}; fenced, it must start "
        f"again in place (when_fenced = rejoin, the default):\n" + victim.log_tail())
    print(f"broker {victim.node_id} after SIGCONT: 'was fenced' logged "
          f"{len(_lines(victim, FENCED_SELF))} times, rejoined in place {len(_lines(victim, REJOINING))} times")

    cleaned = [line for m in cluster.volume.mounts if m is not mount
               for line in m.session_lines() if "clean up stale session" in line]
    cleaned_after = [round(t - t_fault, 1) for t in map(_juicefs_time, cleaned) if t]
    print(f"SIGSTOP took {tries} tries; JuiceFS cleaned the stale session up "
          f"{cleaned_after} s after SIGSTOP; the stopped mount logged on SIGCONT: "
          f"{[line[:140] for line in mount.session_lines() if 'stale' in line]}")
    print(f"failover: survivors lead every partition {failover:.2f}s after SIGSTOP (leaders {after}); "
          f"first acknowledgement per victim partition after the fault, s: before SIGCONT "
          f"{acks_before_return}, by the end {acks_after}; SIGCONT at +{t_back - t_fault:.1f}s; "
          f"the stale broker's Metadata {AFTER_RETURN}s after SIGCONT: {stale_view}; stale-view "
          f"producer: {len(stale.acked)} acknowledged, {len(stale.failed)} failed")

    checked = read_live_and_after_restart(cluster, topic, load, stale, "lost lock", others=(probe,))
    extra = (f"\n(victim broker {victim.node_id} led {victim_parts}; failover {failover:.1f}s after "
             f"SIGSTOP; SIGCONT at +{t_back - t_fault:.1f}s; acknowledged: main producer "
             f"{len(load.acked)}, stale-view producer {len(stale.acked)})")
    assert_all_kept(checked, load, stale, extra)


# ----------------------------------------------------------------------------- fault (a): a stall

SESSION_TIMEOUT_MS = 6000   # KAAS_BROKER_SESSION_TIMEOUT_MS, given explicitly to the stall tests' brokers
STALL_ENV = {"KAAS_BROKER_SESSION_TIMEOUT_MS": str(SESSION_TIMEOUT_MS)}
STALL = 20.0                # seconds the broker process stays stopped
FAILOVER_MARGIN = 6.0       # on top of the session timeout: a functional bound, not a benchmark
FENCED_EXIT_WITHIN = 10.0   # seconds after SIGCONT for the stalled broker to exit as fenced
REJOIN_WITHIN = 20.0        # seconds after its restart for it to lead a partition again
# What the stalled broker may log (WARN or ERROR) while it cannot prove its heartbeat is fresh;
# only the stalled broker may.
LEASE_NOT_FRESH = r"lease is not fresh"
TAKEOVER = r"took partitions from a broker|fenced the coordinator's previous owner"
FENCED_SELF = r"this broker \(node \d+, incarnation \d+\) was fenced"   # in both STALE_BROKER_ERRORS


def wait_members(brokers, timeout=30.0):
    """Waits until every broker lists every broker in Metadata (a topic created before would be
    placed on the brokers its creator saw, and its partitions would move under the test)."""
    ids = sorted(b.node_id for b in brokers)
    poll_until(lambda: all(metadata_brokers(b.port) == ids for b in brokers), timeout,
               f"every broker listing brokers {ids} in Metadata", interval=0.2)


def wait_leads_again(brokers, node, topic, timeout=REJOIN_WITHIN):
    """Waits until every running broker answers Metadata with `node` leading at least one
    partition of `topic` (one that exited is reported by the caller); returns {node id:
    {partition: leader}}. The AssertionError on a timeout names the last answers."""
    last = {}

    def leads():
        last.clear()
        last.update({b.node_id: metadata_leaders(b.port, topic) for b in brokers if b.alive()})
        return dict(last) if all(v is not None and node in v.values() for v in last.values()) else None
    try:
        return poll_until(leads, timeout, f"broker {node} to lead a partition of {topic} in every "
                          f"broker's Metadata", interval=0.2)
    except AssertionError as e:
        raise AssertionError(f"{e}; the last answers {{node: {{partition: leader}}}}: {last}") from None


def _lines(broker, pattern, since=None):
    """`broker`'s log lines matching `pattern` (from every run), only those stamped at or after
    `since` (seconds since the epoch) when given."""
    lines = [line for line in ANSI_RE.sub("", broker.log_text()).splitlines() if re.search(pattern, line)]
    return lines if since is None else [line for line in lines if (_kaas_time(line) or 0) >= since]


def _kaas_time(line):
    """The timestamp of a kaas log line ("2026-12-04T21:34:10.944309Z  INFO ..."), UTC."""
    m = re.match(r"(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{1,6})\d*Z", line)
    return (datetime.datetime.strptime(m.group(1), "%Y-%m-%dT%H:%M:%S.%f")
            .replace(tzinfo=datetime.timezone.utc).timestamp() if m else None)


def stall_loses_nothing(cluster, topic_prefix, label="stall", when_fenced="rejoin"):
    """Fault (a) on `cluster` (its brokers started with STALL_ENV and KAAS_WHEN_FENCED =
    `when_fenced`; anything with `.brokers` and `.bootstrap`): under the steady idempotent
    producer, the broker process leading the most partitions is stopped (SIGSTOP) for STALL
    seconds: it keeps every lock and, on JuiceFS, its session. The others must lead every
    partition within the session timeout + FAILOVER_MARGIN, and answer an idempotent retry of a
    batch written before the stall as a duplicate. On SIGCONT a second producer (records s<n>,
    to the stalled broker's partitions) is started bootstrapped from the stalled broker alone;
    that broker must find its fence within FENCED_EXIT_WITHIN and either start again in place
    (rejoin: the process stays, logs REJOINING) or exit with FENCED_EXIT_CODE and be restarted
    (exit, as its supervisor would), then lead a partition again within REJOIN_WITHIN. Then every
    acknowledged record must be there once, where acknowledged, before and after restarting every
    broker (as in fault (b))."""
    brokers = cluster.brokers
    wait_members(brokers)
    topic = unique_topic(topic_prefix)
    load = start_load(cluster, topic)
    victim, victim_parts, before = pick_victim(brokers, topic)
    survivors = [b for b in brokers if b is not victim]
    probe = retry_probe(brokers, topic)
    for pattern in STALE_BROKER_ERRORS + (LEASE_NOT_FRESH,):
        victim.allow_log_errors(pattern)
    bound = SESSION_TIMEOUT_MS / 1000 + FAILOVER_MARGIN
    assert victim.alive(), f"broker {victim.node_id} exited before the stall:\n" + victim.log_tail()
    pid = victim.proc.pid
    print(f"\nleaders before: {before}; stopping broker {victim.node_id} (pid {pid}, partitions "
          f"{victim_parts}) with SIGSTOP for {STALL:.0f}s after {load.acks()} acks")

    t_fault = time.time()
    os.kill(pid, signal.SIGSTOP)
    after = failover = None
    try:
        poll_until(lambda: juicefs._process_state(pid) in ("T", "t"), 5, f"broker process {pid} to stop")
        try:
            after = wait_taken_over(survivors, victim, topic, timeout=STALL)
            failover = time.time() - t_fault
        except AssertionError:
            pass                                  # not during the stall: reported after SIGCONT
        if failover is not None:
            retried_as_duplicates(probe, survivors, topic, label)
        time.sleep(max(0.0, t_fault + STALL - 1.0 - time.time()))
        acks_stalled = load.first_ack_after(t_fault, victim_parts)
        views_stalled = {b.node_id: metadata_leaders(b.port, topic) for b in survivors}
        time.sleep(max(0.0, t_fault + STALL - time.time()))
    finally:
        t_back = time.time()
        os.kill(pid, signal.SIGCONT)
    assert failover is not None and failover <= bound, (
        f"[{label}] broker {victim.node_id} (partitions {victim_parts}) stopped with SIGSTOP: the "
        f"others did not lead every partition within {bound:.0f}s (session timeout "
        f"{SESSION_TIMEOUT_MS} ms + {FAILOVER_MARGIN:.0f}s): "
        + (f"they did after {failover:.1f}s" if failover is not None else
           f"not during the whole {STALL:.0f}s stall")
        + f"; their Metadata {{node: {{partition: leader}}}} then: {views_stalled}; first "
        f"acknowledgement per stalled partition after SIGSTOP, s: {acks_stalled}"
        + "".join(f"\n--- broker {b.node_id} log tail ---\n{b.log_tail(15)}" for b in survivors))

    stale = Load(victim.bootstrap, topic, prefix=b"s", partitions=victim_parts,
                 rate=STALE_CLIENT_RATE, message_timeout_ms=STALE_CLIENT_TIMEOUT_MS,
                 log_dir=client_log_dir(cluster)).start()
    if when_fenced == "exit":
        try:
            exit_code = victim.proc.wait(timeout=FENCED_EXIT_WITHIN)
        except subprocess.TimeoutExpired:
            exit_code = None
        exited_after = time.time() - t_back
        assert exit_code == FENCED_EXIT_CODE and _lines(victim, FENCED_SELF), (
            f"[{label}] broker {victim.node_id}, resumed (SIGCONT) after {t_back - t_fault:.1f}s "
            f"stopped, "
            + (f"did not exit within {FENCED_EXIT_WITHIN:.0f}s" if exit_code is None else
               f"exited with code {exit_code} {exited_after:.1f}s later")
            + f": not as a fenced broker (code {FENCED_EXIT_CODE}, after logging that it was "
            f"fenced):\n" + victim.log_tail())
        t_restart = time.time()
        victim.start()
    else:
        try:
            poll_until(lambda: _lines(victim, REJOINING, since=t_back - 1) or not victim.alive(),
                       FENCED_EXIT_WITHIN, "the fenced broker to rejoin", interval=0.1)
        except AssertionError:
            pass
        exit_code = victim.proc.poll()
        exited_after = time.time() - t_back
        assert exit_code is None and _lines(victim, FENCED_SELF) and _lines(victim, REJOINING), (
            f"[{label}] broker {victim.node_id}, resumed (SIGCONT) after {t_back - t_fault:.1f}s "
            f"stopped, "
            + (f"exited with code {exit_code}" if exit_code is not None else
               f"did not log that it was fenced and rejoins within {FENCED_EXIT_WITHIN:.0f}s")
            + " (when_fenced = rejoin: it must start again in place):\n" + victim.log_tail())
        t_restart = _kaas_time(_lines(victim, REJOINING, since=t_back - 1)[0]) or time.time()
    # what the stalled broker took over between SIGCONT and its exit (nobody else was gone)
    resumed_takeovers = [line[:220] for line in _lines(victim, TAKEOVER, since=t_back)
                         if (_kaas_time(line) or 0) < t_restart]
    try:
        rejoined, rejoin_error = wait_leads_again(brokers, victim.node_id, topic), None
        rejoin = time.time() - t_restart
    except AssertionError as e:
        rejoined, rejoin_error, rejoin = None, str(e), None
    time.sleep(AFTER_RETURN)
    back = metadata_leaders(victim.port, topic)
    acks_after = load.first_ack_after(t_fault, victim_parts)
    finish_all([load, stale])
    fenced_survivors = {b.node_id: (b.proc.poll(), [line[:220] for line in _lines(b, FENCED_SELF)][:3])
                        for b in survivors if not b.alive() or _lines(b, FENCED_SELF)}

    not_fresh = _lines(victim, LEASE_NOT_FRESH)
    print(f"failover: survivors lead every partition {failover:.2f}s after SIGSTOP (bound "
          f"{bound:.0f}s; leaders {after}); first acknowledgement per stalled partition after "
          f"SIGSTOP, s: during the stall {acks_stalled}, by the end {acks_after}; SIGCONT at "
          f"+{t_back - t_fault:.1f}s; broker {victim.node_id} "
          + (f"exited with code {exit_code}" if when_fenced == "exit" else "started again in place")
          + f" {exited_after:.2f}s after SIGCONT; restarted, it led "
          + (f"{sorted(p for p, n in rejoined[victim.node_id].items() if n == victim.node_id)} "
             f"{rejoin:.2f}s later" if rejoined else f"nothing within {REJOIN_WITHIN:.0f}s")
          + f"; leaders {AFTER_RETURN:.0f}s after its restart: {back}; stale-view producer: "
          f"{len(stale.acked)} acknowledged, {len(stale.failed)} failed")
    print(f"broker {victim.node_id} logged: {[line[:200] for line in _lines(victim, FENCED_SELF)][:3]}; "
          f"'{LEASE_NOT_FRESH}' lines {len(not_fresh)} {[line[:200] for line in not_fresh[:2]]}; "
          f"the others' lines on fencing: "
          f"{[f'{b.node_id}: ' + line[:200] for b in survivors for line in _lines(b, 'fenc')][:4]}; "
          f"taken over by broker {victim.node_id} after SIGCONT, before its exit: "
          f"{len(resumed_takeovers)} {resumed_takeovers[:4]}")

    checked = read_live_and_after_restart(cluster, topic, load, stale, label, others=(probe,))
    extra = (f"\n(stalled broker {victim.node_id} led {victim_parts}; failover {failover:.1f}s after "
             f"SIGSTOP; SIGCONT at +{t_back - t_fault:.1f}s; it was fenced {exited_after:.1f}s after "
             f"SIGCONT; acknowledged: main producer {len(load.acked)}, stale-view producer "
             f"{len(stale.acked)})")
    assert not fenced_survivors, (
        f"[{label}] brokers that were never stopped were fenced or exited {{node: (exit code or None "
        f"if running, its 'was fenced' lines)}}: {fenced_survivors}; what the stalled broker "
        f"{victim.node_id} took over after SIGCONT, before it exited: {resumed_takeovers}{extra}")
    assert rejoined, (f"[{label}] broker {victim.node_id}, restarted after it exited as fenced, leads "
                      f"no partition: {rejoin_error}{extra}\n--- its log tail ---\n"
                      + victim.log_tail(40))
    assert_all_kept(checked, load, stale, extra)


def test_stall_on_juicefs_loses_nothing(cluster):
    """Fault (a) on JuiceFS (stall_loses_nothing): only the broker process is stopped, its mount
    keeps its session and the broker's locks, so the others take over on its stale heartbeat
    alone, without its locks."""
    cluster.start(env=STALL_ENV)
    try:
        stall_loses_nothing(cluster, "jfs-stall")
    finally:
        cleaned = [f"{m.label}: {line[:160]}" for m in cluster.volume.mounts
                   for line in m.session_lines() if "clean up stale session" in line]
        print(f"JuiceFS sessions cleaned up as stale (none expected: no mount was stopped): "
              f"{len(cleaned)} {cleaned[:3]}")
