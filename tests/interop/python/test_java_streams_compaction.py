"""Kafka Streams 4.4 (processing.guarantee=exactly_once_v2) restoring its state from a changelog
that kaas's log cleaner compacted (the Java program tests/interop/java/.../StreamsEos.java, mode
`run-store`: the word count with its store named "counts", so that its changelog is
`<app>-counts-changelog`, a cleanup.policy=compact topic Streams creates itself).

Streams creates its internal topics with segment.bytes = 1 MiB, min.cleanable.dirty.ratio 0.01
and min.compaction.lag.ms one hour: nothing may be cleaned while phase 1 writes the changelog.

Phase 1: the application counts N1 words (50 distinct words, so many updates of few keys); it
is killed with SIGKILL while it processes (its open transaction, changelog writes included, is
aborted when the next instance starts with the same state dir and so the same transactional
ids), a second instance finishes and is stopped cleanly. Then a transactional producer writes,
and aborts, a huge count for every word into the changelog: aborted data that is the latest
record of each key. Before cleaning, read_committed must read exactly one changelog update per
input record and read_uncommitted more (the aborted ones).

The changelog's min.compaction.lag.ms is then set to 0 and max.compaction.lag.ms to 1 s (KIP-354:
the active segment rolls, so the whole log is cleanable): the broker must write cleaned
segments (`<base>.c<gen>.log`) in every partition directory, count passes in
kaas_log_cleaner_passes, and leave one record per word, holding phase 1's final count, for
read_committed and read_uncommitted alike (the cleaner removes aborted data).

Phase 2: the application's local state is deleted and a new instance restores the counts from
the compacted changelog while the cleaner keeps compacting it; it counts N2 more words. The
read_committed output must hold, for every word, the counts 1..n exactly once and in order, the
first count of phase 2 being phase 1's last plus one (the latest committed value of every key
was restored, no aborted one, no restart from 1). After it stopped, the changelog compacts again
to one record per word with the final count.
"""
import os
import re
import shutil
import signal
import struct
import subprocess
import time
import urllib.request

from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, AlterConfigOpType, ConfigEntry, ConfigResource

import javaharness as jh
from conftest import Broker, free_ports, poll_until
from kaashelpers import assert_no_panic, consume_to_end, end_offsets

APP = "wordcount-compact"
IN = "words-in"
OUT = "counts-out"
CHANGELOG = f"{APP}-counts-changelog"
PARTITIONS = 3
WORDS = 50
N1 = 100_000
N2 = 20_000
PAD = 64  # each word is "w<i>-" and 64 "x": changelog records of about 90 bytes, several MiB
ABORTED_BASE = 1_000_000_000  # the counts of the aborted transaction: far above any real count
CLEANED_RE = re.compile(r"^\d+\.c\d+\.log$")


def _word(i):
    return f"w{i}-" + "x" * PAD


def _start_app(bootstrap, state_dir, stop_file, log_path, *topic_configs, seconds=300):
    jh.ensure_built()
    cmd = ["java", f"-Xmx{jh.JAVA_HEAP}", "-cp", jh.classpath(), "kaas.interop.StreamsEos", "run-store",
           bootstrap, APP, IN, OUT, str(state_dir), str(seconds), str(stop_file), *topic_configs]
    log = open(log_path, "w")
    return subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, start_new_session=True), log


def _text(path):
    with open(path, errors="replace") as f:
        return f.read()


def _wait_running(log_path, timeout, proc):
    deadline = time.time() + timeout
    while time.time() < deadline:
        text = _text(log_path)
        if "-> RUNNING" in text:
            return
        assert proc.poll() is None, f"Streams exited early:\n{text[-4000:]}"
        time.sleep(0.2)
    raise AssertionError(f"Streams did not reach RUNNING within {timeout}s:\n{_text(log_path)[-4000:]}")


def _stop_app(proc, stop_file, log_path):
    """Asks the instance to close (STOP_FILE) and checks it closed cleanly."""
    stop_file.touch()
    try:
        code = proc.wait(60)
    except subprocess.TimeoutExpired:
        raise AssertionError(f"Streams did not stop within 60s:\n{_text(log_path)[-4000:]}")
    summary = jh.last_json_line(_text(log_path))
    assert code == 0 and summary is not None and summary["failures"] == 0 and summary["closed"], \
        f"Streams did not close cleanly (exit {code}):\n{_text(log_path)[-5000:]}"
    stop_file.unlink()


def _produce(bootstrap, n):
    run = jh.run_java("kaas.interop.StreamsEos", "produce", bootstrap, IN, str(WORDS), str(n), str(PAD),
                      timeout=120)
    assert run.returncode == 0, run.describe()


def _verify(bootstrap, n):
    """Waits (StreamsEos verify) until the read_committed output holds every count of n inputs."""
    run = jh.run_java("kaas.interop.StreamsEos", "verify", bootstrap, OUT, str(WORDS), str(n), "120",
                      str(PAD), timeout=180)
    summary = jh.last_json_line(run.stdout)
    assert summary is not None, run.describe()
    return summary, run


def _read(bootstrap, topic, isolation):
    """{partition: [(offset, key str, value long)]} of `topic` from its beginning."""
    got = consume_to_end(bootstrap, topic, PARTITIONS, isolation, timeout=60)
    return {p: [(o, k.decode(), struct.unpack(">q", v)[0]) for o, k, v in recs] for p, recs in got.items()}


def _count(records):
    return sum(len(r) for r in records.values())


def _latest(records):
    """{key: (partition, latest value)}; also checks no key is in two partitions."""
    out = {}
    for p, recs in records.items():
        for _, k, v in recs:
            assert out.get(k, (p,))[0] == p, f"key {k} in partitions {out[k][0]} and {p}"
            out[k] = (p, v)
    return out


class _Ends:
    """The changelog's high watermarks and last stable offsets (two long-lived consumers)."""

    def __init__(self, bootstrap):
        self.consumers = {iso: Consumer({"bootstrap.servers": bootstrap, "group.id": f"ends-{iso}",
                                         "enable.auto.commit": False, "isolation.level": iso})
                          for iso in ("read_committed", "read_uncommitted")}

    def _ends(self, iso):
        c = self.consumers[iso]
        return [c.get_watermark_offsets(TopicPartition(CHANGELOG, p), timeout=5)[1]
                for p in range(PARTITIONS)]

    def total(self):
        return sum(self._ends("read_uncommitted"))

    def open_partitions(self):
        """Partitions where an open transaction holds data (high watermark > LSO)."""
        lso = self._ends("read_committed")
        hwm = self._ends("read_uncommitted")
        return [p for p in range(PARTITIONS) if hwm[p] > lso[p]]

    def close(self):
        for c in self.consumers.values():
            c.close()


def _partition_dirs(broker):
    return [broker.data_dir / "topics" / f"{CHANGELOG}-{p}" for p in range(PARTITIONS)]


def _listing(broker):
    lines = []
    for d in _partition_dirs(broker):
        lines.append(f"{d}:")
        for f in sorted(d.iterdir()) if d.is_dir() else []:
            lines.append(f"  {f.name} {f.stat().st_size}")
    return "\n".join(lines)


def _cleaned_files(broker):
    """{partition: sorted names of its cleaned segment files}."""
    return {p: sorted(f.name for f in d.iterdir() if CLEANED_RE.match(f.name)) if d.is_dir() else []
            for p, d in enumerate(_partition_dirs(broker))}


def _passes(metrics_port):
    with urllib.request.urlopen(f"http://127.0.0.1:{metrics_port}/metrics", timeout=10) as resp:
        text = resp.read().decode()
    m = re.search(r"^kaas_log_cleaner_passes(?:_total)? (\S+)$", text, re.MULTILINE)
    assert m, "kaas_log_cleaner_passes not exposed"
    return float(m.group(1))


def _alter_changelog(bootstrap, configs):
    admin = AdminClient({"bootstrap.servers": bootstrap})
    res = ConfigResource(ConfigResource.Type.TOPIC, CHANGELOG, incremental_configs=[
        ConfigEntry(k, v, incremental_operation=AlterConfigOpType.SET) for k, v in configs.items()])
    for f in admin.incremental_alter_configs([res]).values():
        f.result(timeout=30)
    described = admin.describe_configs([ConfigResource(ConfigResource.Type.TOPIC, CHANGELOG)])
    entries = list(described.values())[0].result(timeout=30)
    for k, v in configs.items():
        assert entries[k].value == v, f"{k} of {CHANGELOG} is {entries[k].value}, not {v}"


def _abort_huge_counts(bootstrap, partition_of):
    """A transaction writing ABORTED_BASE + i as the count of every word, aborted."""
    p = Producer({"bootstrap.servers": bootstrap, "transactional.id": "compaction-test-aborter"})
    p.init_transactions(30)
    p.begin_transaction()
    for i, (word, part) in enumerate(sorted(partition_of.items())):
        p.produce(CHANGELOG, key=word.encode(), value=struct.pack(">q", ABORTED_BASE + i), partition=part)
    p.flush(30)
    p.abort_transaction(30)


def _wait_compacted(bootstrap, broker, expected, timeout, ctx):
    """Polls until both isolation levels read exactly one record per word, holding `expected`."""
    last = {}

    def compacted():
        for iso in ("read_committed", "read_uncommitted"):
            recs = _read(bootstrap, CHANGELOG, iso)
            last[iso] = (_count(recs), sorted({v for _, (_, v) in _latest(recs).items()}))
            if _count(recs) != WORDS:
                return False
        return True

    try:
        poll_until(compacted, timeout, "the changelog compacted to one record per word", interval=1.0)
    except AssertionError as e:
        raise AssertionError(f"{e}: last reads (records, distinct latest values) {last}\n"
                             f"{_listing(broker)}\n{ctx()}")
    for iso in ("read_committed", "read_uncommitted"):
        recs = _read(bootstrap, CHANGELOG, iso)
        latest = _latest(recs)
        assert _count(recs) == WORDS and len(latest) == WORDS, \
            f"{iso}: {_count(recs)} records\n{_listing(broker)}"
        wrong = {k: v for k, (_, v) in latest.items() if v != expected}
        assert not wrong, \
            f"{iso}: compacted changelog values other than {expected}: {wrong}\n{_listing(broker)}"


def test_kafka_streams_eos_restores_from_a_compacted_changelog(tmp_path):
    metrics_port, port = free_ports(2)
    broker = Broker(tmp_path / "data", port, extra_env={
        "KAAS_CLEANER_BACKOFF_MS": "500", "KAAS_METRICS_LISTEN": f"127.0.0.1:{metrics_port}"}).start()
    bs = broker.bootstrap
    state = tmp_path / "state"
    stop = tmp_path / "stop"
    apps = []
    t0 = time.time()
    marks = []

    def mark(what):
        marks.append(f"{time.time() - t0:6.1f}s {what}")
        print(marks[-1], flush=True)

    def ctx():
        logs = "".join(f"\n--- {log.name} (tail) ---\n{_text(log.name)[-3000:]}" for _, log in apps)
        return "\n".join(marks) + logs + f"\n--- kaas log (tail) ---\n{broker.log_tail(40)}"

    try:
        for topic in (IN, OUT):
            created = jh.run_java("kaas.interop.CreateTopic", bs, topic, str(PARTITIONS), timeout=60)
            assert created.returncode == 0, created.describe()
        _produce(bs, N1)
        mark("phase 1 input produced")

        # topic.*: the configs of the internal topics Streams creates; producer.linger.ms=0: the
        # changelog writes of a transaction reach the broker before it commits (Streams' default
        # 100 ms holds them until the commit flushes), so the SIGKILL leaves aborted data.
        topic_configs = ["topic.segment.bytes=1048576", "topic.min.cleanable.dirty.ratio=0.01",
                         "topic.min.compaction.lag.ms=3600000", "producer.linger.ms=0"]
        # SIGKILL while a transaction of the application holds changelog writes (the high
        # watermark past the last stable offset): the zombie's data is aborted when the next
        # instance starts with the same state dir (so the same transactional ids). A kill that
        # found no such transaction (Streams committed just before it) is tried again.
        ends = _Ends(bs)
        try:
            for attempt in range(1, 6):
                log_path = tmp_path / f"app1-{attempt}.log"
                first, log1 = _start_app(bs, state, stop, log_path, *topic_configs)
                apps.append((first, log1))
                _wait_running(log_path, 90, first)
                poll_until(lambda: ends.total() > N1 // 5 and ends.open_partitions(), 60,
                           "an open Streams transaction with changelog data", interval=0.02)
                os.killpg(first.pid, signal.SIGKILL)
                first.wait(10)
                time.sleep(0.5)  # requests the broker had received are answered
                zombie = ends.open_partitions()
                mark(f"instance killed with changelog data open in partitions {zombie}")
                if zombie:
                    break
            else:
                raise AssertionError(f"no kill left an open transaction with changelog data\n{ctx()}")
        finally:
            ends.close()

        second, log2 = _start_app(bs, state, stop, tmp_path / "app2.log", *topic_configs)
        apps.append((second, log2))
        _wait_running(tmp_path / "app2.log", 120, second)
        summary, run = _verify(bs, N1)
        assert summary["duplicates"] == 0 and summary["gaps"] == 0 and summary["wrong_final"] == 0 \
            and summary["records"] == N1, f"phase 1 output: {summary}\n{run.describe()}\n{ctx()}"
        _stop_app(second, stop, tmp_path / "app2.log")
        mark("phase 1 processed, second instance stopped")

        # Before cleaning: read_committed reads every count of every word once, in order.
        final1 = N1 // WORDS
        committed = _read(bs, CHANGELOG, "read_committed")
        latest1 = _latest(committed)
        assert _count(committed) == N1, f"one committed changelog update per input record\n{ctx()}"
        assert sorted(latest1) == sorted(_word(i) for i in range(WORDS)), ctx()
        for p, recs in committed.items():
            for word in {k for _, k, _ in recs}:
                counts = [v for _, k, v in recs if k == word]
                assert counts == list(range(1, final1 + 1)), \
                    f"changelog counts of {word}: {counts[:5]}..{counts[-5:]} ({len(counts)})\n{ctx()}"
        partition_of = {k: p for k, (p, _) in latest1.items()}
        _abort_huge_counts(bs, partition_of)
        uncommitted = _read(bs, CHANGELOG, "read_uncommitted")
        aborted = _count(uncommitted) - N1
        assert aborted > WORDS, (f"no aborted Streams transaction in the changelog "
                                 f"({aborted - WORDS} aborted Streams records)\n{ctx()}")
        assert max(v for _, (_, v) in _latest(uncommitted).items()) >= ABORTED_BASE
        logs = {p: [f for f in d.iterdir() if f.suffix == ".log"]
                for p, d in enumerate(_partition_dirs(broker))}
        segments = {p: len(files) for p, files in logs.items()}
        size = sum(f.stat().st_size for files in logs.values() for f in files)
        assert not any(_cleaned_files(broker).values()), \
            f"cleaned before min.compaction.lag.ms allowed it\n{_listing(broker)}"
        assert all(n >= 2 for n in segments.values()), \
            f"the changelog should span several 1 MiB segments\n{_listing(broker)}"
        passes_before = _passes(metrics_port)
        mark(f"changelog before cleaning: {N1} committed + {aborted} aborted records, "
             f"{size} bytes, segments {segments}")

        _alter_changelog(bs, {"min.compaction.lag.ms": "0", "max.compaction.lag.ms": "1000"})
        poll_until(lambda: all(_cleaned_files(broker).values()), 30,
                   f"cleaned segments in every partition of {CHANGELOG}", interval=0.2)
        _wait_compacted(bs, broker, final1, 30, ctx)
        passes1 = _passes(metrics_port)
        assert passes1 >= passes_before + PARTITIONS, (passes_before, passes1)
        cleaned1 = _cleaned_files(broker)
        mark(f"changelog compacted to {WORDS} records, {passes1} passes, cleaned files {cleaned1}")
        print(_listing(broker))

        # Phase 2: no local state, restored from the compacted changelog.
        out_end1 = end_offsets(bs, OUT, PARTITIONS, "read_committed")
        shutil.rmtree(state)
        third, log3 = _start_app(bs, state, stop, tmp_path / "app3.log", *topic_configs)
        apps.append((third, log3))
        _wait_running(tmp_path / "app3.log", 120, third)
        _produce(bs, N2)
        summary, run = _verify(bs, N1 + N2)
        passes2 = _passes(metrics_port)
        mark(f"phase 2 processed: {summary}, {passes2} passes")
        assert summary["duplicates"] == 0 and summary["gaps"] == 0 and summary["wrong_final"] == 0 \
            and summary["words"] == WORDS and summary["records"] == N1 + N2, \
            f"phase 2 output: {summary}\n{run.describe()}\n{ctx()}"
        out = _read(bs, OUT, "read_committed")
        phase2 = {}
        for p, recs in out.items():
            for o, k, v in recs:
                if o >= out_end1[p]:
                    phase2.setdefault(k, []).append(v)
        final2 = (N1 + N2) // WORDS
        wrong = {k: (v[:3], v[-1:], len(v)) for k, v in phase2.items()
                 if v != list(range(final1 + 1, final2 + 1))}
        assert len(phase2) == WORDS and not wrong, \
            f"phase 2 counts not {final1 + 1}..{final2} (first, last, number): {wrong}\n{ctx()}"
        assert passes2 > passes1, f"no cleaning while the restored application ran\n{ctx()}"
        _stop_app(third, stop, tmp_path / "app3.log")
        mark("third instance stopped")

        _wait_compacted(bs, broker, final2, 30, ctx)
        cleaned2 = _cleaned_files(broker)
        assert cleaned2 != cleaned1, f"no pass after phase 2\n{_listing(broker)}"
        mark(f"changelog compacted again, {_passes(metrics_port)} passes, cleaned files {cleaned2}")
        assert_no_panic(broker)
    finally:
        for proc, log in apps:
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait(10)
            log.close()
        broker.stop()
