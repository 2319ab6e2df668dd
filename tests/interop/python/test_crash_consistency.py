"""Crash consistency with a real power loss, not just a SIGKILL.

A SIGKILL leaves the page cache alone, so a broker that forgets to fsync still passes every
kill -9 test. Here kaas runs with its data dir on lazyfs (tests/lazyfs, a FUSE file system in
the spirit of Jepsen's LazyFS): it passes everything through but remembers what was not yet
fsynced, and on "power-loss" drops it (file bytes and sizes written since the file's last
fsync/fdatasync, and directory entries changed since the directory's last fsync; by default
only a directory fsync makes an entry durable, see LAZYFS_ENTRIES and tests/lazyfs/src/model.rs).

Each round: idempotent producer load (acks=all, enable.idempotence) runs while a transactional
producer commits and aborts transactions that also commit consumer-group offsets
(send_offsets_to_transaction); every other round leaves a last transaction open (records
acknowledged, offsets sent); then kill -9, power loss, restart on the same mount, and check
everything acknowledged so far, from every round:
- every acknowledged record is at its offset, for read_uncommitted and read_committed readers;
- every committed transaction's records are visible to read_committed, none of an aborted or
  left-open one is (the coordinator aborts the open one when it times out);
- the group's committed offsets are the last ones committed.

test_lost_fsync_is_detected runs the same round with KAAS_DEBUG_SKIP_FSYNC=true (kaas acks
without fdatasync) and must see acknowledged records lost: this proves the harness can fail.

lazyfs is built by scripts/build-lazyfs.sh; LAZYFS_BIN overrides where to find it. A missing
binary or a failed mount fails the test. LAZYFS_ENTRIES (dir, the default; own; path) picks the
directory model, see below.
"""
import os
import socket
import subprocess
import threading
import time
from pathlib import Path

import pytest
from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition

from conftest import Broker, free_port
from kaashelpers import assert_no_panic, consume_to_end, create_topic, log_tail, wait_topic_ready

pytestmark = pytest.mark.serial  # conftest.py: bounds by the clock; runs alone

ROOT = Path(__file__).resolve().parents[3]
LAZYFS_BIN = os.environ.get("LAZYFS_BIN", str(ROOT / "tests" / "lazyfs" / "target" / "release" / "lazyfs"))
# "dir": only a directory fsync makes its entries durable (POSIX to the letter); "own": a file's
# fsync also keeps its own entry (ext4 in practice); "path": and the entries on the path to it.
LAZYFS_ENTRIES = os.environ.get("LAZYFS_ENTRIES", "dir")

IDEM_TOPIC = "crash-idem"
IDEM_PARTS = 3
TXN_TOPIC = "crash-txn"
TXN_PARTS = 2
GROUP = "crash-group"
TXN_ID = "crash-txn-producer"
ROUNDS = int(os.environ.get("KAAS_CRASH_ROUNDS", "8"))  # a longer campaign: KAAS_CRASH_ROUNDS=100
TXNS_PER_ROUND = 12
RECORDS_PER_TXN = 4
TXN_TIMEOUT_MS = 5_000          # so the coordinator aborts a transaction the crash left open
ABORT_CHECK_MS = "500"          # KAAS_TRANSACTION_ABORT_CHECK_INTERVAL_MS
SEGMENT_BYTES = "1048576"       # KAAS_SEGMENT_BYTES: the smallest Kafka allows
# KAAS_ZERO_AHEAD_BYTES: kaas's default on ext4 and XFS (on FUSE, lazyfs's kind, the default is
# none): a power loss then also puts back the zeros that appends not yet fsynced wrote over.
ZERO_AHEAD_BYTES = "524288"
PAD_KEY = b"k" * 400            # so that segments roll every round (new files under power loss)
MIN_ACKED_PER_ROUND = 2_000     # idempotent acks to see before the crash
MAX_PER_ROUND = 50_000          # cap on idempotent records produced per round
RATE = 10_000                   # idempotent records per second, so some are in flight at the kill


class LazyFs:
    """One lazyfs process mounting `mnt` over `backing`, driven through its control socket."""

    def __init__(self, tmp_path: Path):
        self.backing = tmp_path / "backing"
        self.mnt = tmp_path / "mnt"
        self.ctl = tmp_path / "lazyfs.sock"
        self.log_path = tmp_path / "lazyfs.log"
        self.proc = None
        self.summaries = []

    def mount(self):
        if not os.access(LAZYFS_BIN, os.X_OK):
            pytest.fail(f"lazyfs binary {LAZYFS_BIN} is missing: run scripts/build-lazyfs.sh")
        self.backing.mkdir()
        self.mnt.mkdir()
        log = open(self.log_path, "ab")
        self.proc = subprocess.Popen(
            [LAZYFS_BIN, "--backing", str(self.backing), "--mount", str(self.mnt),
             "--control", str(self.ctl), "--entries", LAZYFS_ENTRIES],
            stdout=log, stderr=subprocess.STDOUT)
        deadline = time.time() + 15
        while True:
            try:
                self.command("pending")
                break
            except OSError:
                if self.proc.poll() is not None or time.time() > deadline:
                    pytest.fail(f"lazyfs did not mount on {self.mnt}:\n{self.log_text()}")
                time.sleep(0.05)
        assert os.path.ismount(self.mnt), f"{self.mnt} is not a mount point:\n{self.log_text()}"
        return self

    def command(self, cmd: str) -> str:
        with socket.socket(socket.AF_UNIX) as s:
            s.settimeout(60)
            s.connect(str(self.ctl))
            s.sendall(cmd.encode() + b"\n")
            reply = b""
            while not reply.endswith(b"\n"):
                chunk = s.recv(4096)
                if not chunk:
                    break
                reply += chunk
        return reply.decode().strip()

    def power_loss(self) -> str:
        # Requests the kernel queued for the killed broker are answered before this stat is.
        os.stat(self.mnt)
        reply = self.command("power-loss")
        assert reply.startswith("ok"), f"lazyfs power-loss failed: {reply}\n{self.log_text()}"
        self.summaries.append(reply)
        return reply

    def unmount(self):
        if self.proc is None:
            return
        if self.proc.poll() is None:
            try:
                self.command("unmount")
                self.proc.wait(timeout=15)
            except (OSError, subprocess.TimeoutExpired):
                self.proc.kill()
                self.proc.wait()
        if os.path.ismount(self.mnt):
            subprocess.run(["fusermount3", "-u", "-z", str(self.mnt)], check=False)

    def log_text(self) -> str:
        try:
            return self.log_path.read_text(errors="replace")
        except OSError:
            return ""


def durable_mkdir(parent: Path, name: str) -> Path:
    """The operator's part: the data dir exists, durably, before kaas starts."""
    path = parent / name
    path.mkdir()
    fd = os.open(parent, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
    return path


class Ledger:
    """Everything kaas acknowledged, over all rounds."""

    def __init__(self):
        self.acked = {}                  # value -> (partition, offset)
        self.committed = set()           # values of committed transactions
        self.aborted = set()             # values of aborted transactions
        self.offsets = {}                # partition of IDEM_TOPIC -> last committed group offset
        self.offset_seq = 0
        self.lock = threading.Lock()


def idempotent_load(bootstrap, rnd, ledger, stop, errors):
    """Produces to IDEM_TOPIC until `stop` is set; records every acknowledgement."""
    p = Producer({"bootstrap.servers": bootstrap, "acks": "all", "enable.idempotence": True,
                  "linger.ms": 2, "message.timeout.ms": 30_000, "error_cb": errors.append})

    def on_delivery(err, msg):
        if err is None:
            with ledger.lock:
                ledger.acked[msg.value().decode()] = (msg.partition(), msg.offset())

    i = 0
    start = time.time()
    while not stop.is_set() and i < MAX_PER_ROUND:
        try:
            p.produce(IDEM_TOPIC, key=PAD_KEY, value=f"r{rnd}-i{i}".encode(),
                      partition=i % IDEM_PARTS, on_delivery=on_delivery)
            i += 1
        except BufferError:
            p.poll(0.01)
        if i % 100 == 0:
            p.poll(0)
            ahead = start + i / RATE - time.time()
            if ahead > 0:
                time.sleep(ahead)       # pacing only
    while not stop.is_set():
        p.poll(0.05)
    # The broker is dead now: whatever is still in flight was never acknowledged.
    p.purge()
    p.flush(0)


def transactional_load(bootstrap, rnd, ledger, leave_open):
    """Commits and aborts transactions on TXN_TOPIC, each also sending group offsets. With
    `leave_open`, a last transaction is left open (records acknowledged, offsets sent) for the
    crash to hit: it was never committed, so none of it may ever become visible. Returns the
    producer, for the caller to drop once the broker is dead."""
    p = Producer({"bootstrap.servers": bootstrap, "transactional.id": TXN_ID,
                  "transaction.timeout.ms": TXN_TIMEOUT_MS, "linger.ms": 2})
    group_meta = Consumer({"bootstrap.servers": bootstrap, "group.id": GROUP,
                           "enable.auto.commit": False})
    try:
        p.init_transactions(60)
        for t in range(TXNS_PER_ROUND):
            commit = t % 3 != 2
            values = [f"r{rnd}-t{t}-{j}" for j in range(RECORDS_PER_TXN)]
            p.begin_transaction()
            for j, v in enumerate(values):
                p.produce(TXN_TOPIC, value=v.encode(), partition=j % TXN_PARTS)
            ledger.offset_seq += 1
            offsets = {part: ledger.offset_seq * 10 + part for part in range(IDEM_PARTS)}
            p.send_offsets_to_transaction(
                [TopicPartition(IDEM_TOPIC, part, off) for part, off in offsets.items()],
                group_meta.consumer_group_metadata(), 30)
            if commit:
                p.commit_transaction(60)
                ledger.committed.update(values)
                ledger.offsets.update(offsets)
            else:
                p.abort_transaction(60)
                ledger.aborted.update(values)
        if leave_open:
            values = [f"r{rnd}-open-{j}" for j in range(RECORDS_PER_TXN)]
            p.begin_transaction()
            for j, v in enumerate(values):
                p.produce(TXN_TOPIC, value=v.encode(), partition=j % TXN_PARTS)
            p.flush(30)
            p.send_offsets_to_transaction(
                [TopicPartition(IDEM_TOPIC, part, 10**9 + part) for part in range(IDEM_PARTS)],
                group_meta.consumer_group_metadata(), 30)
            ledger.aborted.update(values)
    finally:
        group_meta.close()
    return p


def run_round(broker, rnd, ledger):
    stop = threading.Event()
    errors = []
    acked_before = len(ledger.acked)
    producer = threading.Thread(target=idempotent_load,
                                args=(broker.bootstrap, rnd, ledger, stop, errors), daemon=True)
    producer.start()
    txn_producer = None
    try:
        txn_producer = transactional_load(broker.bootstrap, rnd, ledger, leave_open=rnd % 2 == 1)
        deadline = time.time() + 60
        while len(ledger.acked) - acked_before < MIN_ACKED_PER_ROUND:
            assert time.time() < deadline, (
                f"round {rnd}: only {len(ledger.acked) - acked_before} idempotent acks in 60s; "
                f"client errors {errors[:5]}\n{log_tail(broker)}")
            assert producer.is_alive(), f"round {rnd}: idempotent producer stopped early"
            time.sleep(0.05)
    finally:
        broker.kill()         # mid-stream: the idempotent producer is still producing
        stop.set()
        producer.join(30)
        if txn_producer is not None:
            txn_producer.purge()
            del txn_producer


def check(broker, ledger):
    """What survived, against the ledger. Returns a list of problems (empty: nothing lost)."""
    problems = []
    for topic, parts in ((IDEM_TOPIC, IDEM_PARTS), (TXN_TOPIC, TXN_PARTS)):
        try:
            wait_topic_ready(broker.bootstrap, topic, parts)
        except AssertionError as e:
            problems.append(f"topic {topic} is not back with its {parts} partitions: {e}")
    if problems:
        return problems
    with ledger.lock:
        acked = dict(ledger.acked)
    for iso in ("read_uncommitted", "read_committed"):
        got = consume_to_end(broker.bootstrap, IDEM_TOPIC, IDEM_PARTS, iso)
        at = {(p, off): v.decode() for p, recs in got.items() for off, _, v in recs}
        lost = sorted(((p, off), v) for v, (p, off) in acked.items() if at.get((p, off)) != v)
        if lost:
            problems.append(f"{len(lost)} of {len(acked)} acknowledged records lost ({iso}); "
                            f"first: {[f'{v}@{p}:{off}' for (p, off), v in lost[:10]]}")
        txn = consume_to_end(broker.bootstrap, TXN_TOPIC, TXN_PARTS, iso)
        seen = {v.decode() for recs in txn.values() for _, _, v in recs}
        missing = sorted(ledger.committed - seen)
        if missing:
            problems.append(f"{len(missing)} of {len(ledger.committed)} records of committed "
                            f"transactions lost ({iso}); first: {missing[:10]}")
        if iso == "read_committed":
            visible = sorted(ledger.aborted & seen)
            if visible:
                problems.append(f"{len(visible)} records of aborted transactions visible to "
                                f"read_committed; first: {visible[:10]}")
    c = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": GROUP,
                  "enable.auto.commit": False})
    try:
        tps = c.committed([TopicPartition(IDEM_TOPIC, p) for p in range(IDEM_PARTS)], timeout=30)
        have = {tp.partition: tp.offset for tp in tps}
    except KafkaException as e:
        have = f"unreadable ({e})"
    finally:
        c.close()
    want = {p: ledger.offsets.get(p, -1001) for p in range(IDEM_PARTS)}
    if have != want:
        problems.append(f"group {GROUP} committed offsets {have}, last committed were {want}")
    return problems


def crash_rounds(tmp_path, rounds, extra_env):
    """Runs `rounds` rounds of load, kill -9, power loss, restart and check. Returns
    (problems of the first round that lost something, or [], ledger, lazyfs, broker)."""
    fs = LazyFs(tmp_path).mount()
    broker = None
    try:
        data = durable_mkdir(fs.mnt, "data")
        env = {"KAAS_TRANSACTION_ABORT_CHECK_INTERVAL_MS": ABORT_CHECK_MS,
               "KAAS_SEGMENT_BYTES": SEGMENT_BYTES, "KAAS_ZERO_AHEAD_BYTES": ZERO_AHEAD_BYTES,
               **extra_env}
        broker = Broker(data, free_port(), env)
        broker.log_path = tmp_path / "kaas.log"      # the log must not live on the lazy disk
        if extra_env.get("KAAS_DEBUG_SKIP_FSYNC") == "true":
            broker.allow_log_errors("debug_skip_fsync is set")
        broker.start()
        create_topic(broker.bootstrap, IDEM_TOPIC, IDEM_PARTS)
        create_topic(broker.bootstrap, TXN_TOPIC, TXN_PARTS)
        ledger = Ledger()
        for rnd in range(rounds):
            run_round(broker, rnd, ledger)
            fs.power_loss()
            broker.start()
            problems = check(broker, ledger)
            assert broker.alive(), f"broker died after round {rnd}:\n{log_tail(broker)}"
            assert_no_panic(broker)
            if problems:
                return [f"round {rnd}: {p}" for p in problems], ledger, fs, broker
        return [], ledger, fs, broker
    finally:
        try:
            if broker is not None:
                broker.stop()       # raises if the broker died or logged a panic
        finally:
            fs.unmount()


def describe(ledger, fs):
    return (f"acknowledged records {len(ledger.acked)}, committed transaction records "
            f"{len(ledger.committed)}, aborted {len(ledger.aborted)}, group offsets "
            f"{ledger.offsets}; lazyfs power losses: {fs.summaries}")


def test_power_loss_keeps_everything_acknowledged(tmp_path):
    problems, ledger, fs, broker = crash_rounds(tmp_path, ROUNDS, {})
    assert not problems, ("lost after a power loss:\n" + "\n".join(problems) + "\n"
                          + describe(ledger, fs) + "\nkaas log:\n" + log_tail(broker))
    print(f"{ROUNDS} rounds, nothing lost: {describe(ledger, fs)}")


def test_lost_fsync_is_detected(tmp_path):
    problems, ledger, fs, broker = crash_rounds(tmp_path, 1, {"KAAS_DEBUG_SKIP_FSYNC": "true"})
    assert "debug_skip_fsync is set" in broker.log_text(), "kaas did not warn about the hook"
    assert any("acknowledged records lost" in p for p in problems), (
        "kaas acked without fdatasync, yet the harness saw no acknowledged record lost: "
        f"{problems}; {describe(ledger, fs)}")
    print(f"detected as expected: {problems}; {describe(ledger, fs)}")
