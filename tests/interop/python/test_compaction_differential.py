"""Differential test of the log cleaner (cleanup.policy=compact, eos-rules 61-70): the same
produce sequences go to Apache Kafka 4.4 (one KRaft node, the jars of benches/load) and to kaas,
both cleaners are made to run until they have nothing left to do, and what clients see of each
partition is compared.

Sequences: a few seeds, each a deterministic list of operations on one topic (1 partition,
compacted, 1 MiB segments), run one request at a time, the same on both brokers, so that every
record and every transaction marker gets the same offset on both (checked: the written logs and
the high watermark after every operation must be equal):
  - librdkafka idempotent producer: batches of 1-15 records (updates and tombstones);
  - librdkafka transactional producer: transactions of 1-3 flushed batches, committed or aborted
    (abort_transaction); in the middle a second producer with the same transactional.id calls
    init_transactions while the first has an open transaction holding data (fenced; the broker
    aborts it), later a plain re-init (epoch bump, no open transaction);
  - two raw idempotent producers (InitProducerId, batches built with kafka-python's
    DefaultRecordBatchBuilder with an explicit producer id, epoch and base sequence, sent with
    Produce v3): R0 stays at its epoch and its last batch is overwritten later (the cleaner
    empties it), R1 bumps its epoch itself half way (KIP-360: epoch + 1, sequence 0) and its
    last batch holds keys written nowhere else (the cleaner keeps it whole).
Values are 500-1000 bytes, so each seed writes ~2.5 MB and spans several segments.

Then a record of a separate key (FLUSH) is appended to every topic of both brokers every
ROLL_WAIT seconds (Kafka rolls a segment only on an append, after max.compaction.lag.ms;
its cleaner never cleans the active segment), until both brokers show, for both isolation levels,
exactly the latest committed record of every key whose latest record is not a tombstone: every
older version, aborted record and tombstone gone (tombstones go delete.retention.ms after the
pass that first kept them, so this takes more than one pass). Compared then (exact):
  - each view: offsets increasing, every record the one written at its offset, no aborted record
    in a read_committed view, the latest value of every key that of the written log;
  - the views of both brokers, read_committed and read_uncommitted, record for record;
  - log start offset (ListOffsets earliest), high watermark, last stable offset.
Transaction markers and emptied batches are invisible to clients and not compared (kaas drops
a marker one pass before Kafka, eos-rules 64; that cannot show here).
Reported, not compared (both brokers may differ there, ACCEPTED below): the records of the FLUSH
key, and at the first look after producing, which older versions, tombstones and aborted
records each broker still had (the cleaners run at different moments).

Finally each raw producer's last batch (and its first and second-to-last) is sent again, byte
for byte, before and after restarting both brokers (kaas: kill -9; Kafka: SIGTERM), and the
answers (error code, base offset) of both are compared; the views and offsets must be the same
after the restart as before.
"""
import concurrent.futures as cf
import gc
import random
import time

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic
from kafka.record.default_records import DefaultRecordBatchBuilder

import apache_kafka
from apache_kafka import ApacheKafka
from conftest import Broker, free_port
from idempotent_probe import init_producer_id, produce as raw_produce
from kaashelpers import consume_to_end, unique_topic, wait_topic_ready

SEEDS = (11, 23, 37, 41)
FLUSH = b"~flush"
DELETE_RETENTION_MS = 2000
MAX_COMPACTION_LAG_MS = 1000          # Kafka rolls a compacted log's segment after it (on append)
ROLL_WAIT = 1.3                       # seconds between two FLUSH appends (> the lag above)
CONVERGE_TIMEOUT = 75.0
TOPIC_CONFIG = {
    "cleanup.policy": "compact",
    "segment.bytes": "1048576",
    "min.cleanable.dirty.ratio": "0.01",
    "delete.retention.ms": str(DELETE_RETENTION_MS),
    "max.compaction.lag.ms": str(MAX_COMPACTION_LAG_MS),
}
KAFKA_EXTRA = [
    "log.cleaner.backoff.ms=500",
    "auto.create.topics.enable=false",
    "offsets.topic.num.partitions=1",
    "transaction.state.log.num.partitions=1",
    "group.initial.rebalance.delay.ms=0",
    "log.segment.delete.delay.ms=1000",
]
KAAS_ENV = {"KAAS_CLEANER_BACKOFF_MS": "500"}

# Differences between the brokers that do not fail the test: (what, reason). Each difference
# found is printed with the entry that accepts it.
ACCEPTED = {
    "flush-key": "The FLUSH key's records are appended to make the segments roll; which of its "
                 "older versions are left depends on when each broker rolled its active segment "
                 "(kaas rolls it by itself after max.compaction.lag.ms, Kafka only on an append) "
                 "and is not compared.",
    "transient": "Before both cleaners have finished (the first look after producing), which "
                 "older versions, tombstones and aborted records are left depends on when each "
                 "cleaner ran its passes; only the end state is compared.",
    "older-batch-retry-after-restart":
        "A raw producer's second-to-last batch sent again after the restart: Kafka answers "
        "OUT_OF_ORDER_SEQUENCE_NUMBER (45), kaas NONE with the batch's original base offset. "
        "Kafka's producer snapshot keeps only the last batch of each producer "
        "(ProducerStateManager.writeSnapshot), so after a restart it no longer recognises the "
        "older of its last 5 batches; kaas's snapshot keeps all 5 (eos-rules 19, 21, E5: a "
        "duplicate within the last 5 batches must succeed, 45 must mean a real gap). Before "
        "the restart both answer NONE with the original offset. Not a cleaner matter: the "
        "answer is the same whether the batch's records were cleaned away or not.",
}


def accepted_retry_difference(when, which, answer, written):
    """The ACCEPTED entry that covers a difference between the answers to a raw retry, or None."""
    if (when, which) == ("after restart", "second-to-last") and answer == {
            "kafka": (45, -1), "kaas": (0, written), "written": written}:
        return "older-batch-retry-after-restart"
    return None


# ------------------------------------------------------------------------------ sequences

def sequence(seed):
    """The operations of one seed (deterministic): ("idem", recs), ("txn", [recs, ...],
    "commit"|"abort"), ("fence", recs), ("reinit",), ("raw", r, recs), ("bump", r); recs are
    [(key bytes, value bytes or None)]."""
    rng = random.Random(seed)
    keys = [b"k%02d" % i for i in range(rng.randint(25, 60))]
    weights = [rng.choice((1, 1, 1, 3, 8)) for _ in keys]
    serial = iter(range(10 ** 9))
    size = [0]

    def rec(tag):
        k = rng.choices(keys, weights)[0]
        if rng.random() < 0.06:
            return k, None
        body = rng.randbytes(rng.randint(230, 480)).hex()
        v = f"s{seed}/{next(serial)}/{tag}/{k.decode()}/{body}".encode()
        size[0] += len(v) + 40
        return k, v

    def recs(tag, lo=1, hi=15):
        return [rec(tag) for _ in range(rng.randint(lo, hi))]

    target = rng.randint(2_300_000, 2_900_000)
    last_r0 = recs("R0")
    ops = [("raw", "R0", last_r0), ("raw", "R1", recs("R1")),
           ("txn", [recs("txn")], "commit"), ("txn", [recs("txn"), recs("txn")], "abort")]
    done = set()
    while size[0] < target:
        at = size[0] / target
        if at > 0.35 and "fence" not in done:
            done.add("fence")
            ops.append(("fence", recs("fenced", 3, 10)))
            continue
        if at > 0.5 and "bump" not in done:
            done.add("bump")
            ops.append(("bump", "R1"))
            continue
        if at > 0.65 and "reinit" not in done:
            done.add("reinit")
            ops.append(("reinit",))
            continue
        if at > 0.8 and "overwrite" not in done:
            # every key of R0's last batch written again: the cleaner empties that batch, which
            # stays (the last batch of its producer) for its sequence state
            done.add("overwrite")
            ops.append(("idem", [(k, b"overwrite-" + k + b"-" + rng.randbytes(300).hex().encode())
                                 for k in sorted({k for k, _ in last_r0})]))
            # R1's last batch: keys nobody writes again, so that it stays whole
            ops.append(("raw", "R1", [(b"r1-last-%d" % i, b"r1-last-" + rng.randbytes(300).hex().encode())
                                      for i in range(rng.randint(2, 6))]))
            continue
        x = rng.random()
        if x < 0.2 and at < 0.8:
            r = "R0" if rng.random() < 0.5 else "R1"
            batch = recs(r)
            if r == "R0":
                last_r0 = batch
            ops.append(("raw", r, batch))
        elif x < 0.55:
            ops.append(("idem", recs("idem")))
        else:
            ops.append(("txn", [recs("txn") for _ in range(rng.randint(1, 3))],
                        "abort" if rng.random() < 0.4 else "commit"))
    return ops


def flush_value(i):
    return b"flush-%d-" % i + b"f" * 900


# ------------------------------------------------------------------------------ drivers

class Target:
    """One broker (kaas or Kafka) as the test drives it."""

    def __init__(self, name, broker):
        self.name = name
        self.broker = broker
        self.bootstrap = broker.bootstrap
        self.port = broker.port


class Run:
    """One seed's sequence on one broker: what was written at which offset, and the high
    watermark after every operation."""

    def __init__(self, target, topic, seed):
        self.t = target
        self.topic = topic
        self.seed = seed
        self.written = {}        # offset -> (key, value, "committed" | "aborted")
        self.hws = []            # (operation, high watermark after it)
        self.hw = 0
        self.idem = None
        self.txn = None
        self.dead = []           # fenced or replaced producers, kept until the end
        self.raw = {}            # name -> {"pid", "epoch", "seq", "batches": [(bytes, base, n)]}
        self.wm = Consumer({"bootstrap.servers": self.t.bootstrap, "group.id": unique_topic("wm"),
                            "enable.auto.commit": False})

    # -- helpers
    def _high(self):
        _, high = self.wm.get_watermark_offsets(TopicPartition(self.topic, 0), timeout=10, cached=False)
        return high

    def _wait_hw(self, expected, what):
        deadline = time.time() + 30
        while True:
            high = self._high()
            if high == expected:
                return
            assert high < expected and time.time() < deadline, (
                f"{self.t.name} {self.topic}: high watermark {high} after {what}, expected {expected}")
            time.sleep(0.01)

    def _produce(self, producer, records, status):
        got = [None] * len(records)

        def cb(i):
            def on_delivery(err, msg):
                got[i] = err if err is not None else msg.offset()
            return on_delivery

        for i, (k, v) in enumerate(records):
            producer.produce(self.topic, key=k, value=v, partition=0, on_delivery=cb(i))
        left = producer.flush(30)
        assert left == 0 and all(isinstance(o, int) for o in got), \
            f"{self.t.name} {self.topic}: delivery failed: {[g for g in got if not isinstance(g, int)][:3]}"
        for o, (k, v) in zip(got, records):
            assert o not in self.written
            self.written[o] = (k, v, status)
        self.hw = max(self.hw, max(got) + 1)
        return got

    def _txn_producer(self):
        p = Producer({"bootstrap.servers": self.t.bootstrap, "transactional.id": f"{self.topic}-tx",
                      "linger.ms": 1000, "acks": "all"})
        p.init_transactions(60)
        return p

    def _note(self, op):
        self._wait_hw(self.hw, op)
        self.hws.append((op, self.hw))

    # -- operations
    def op(self, op):
        kind = op[0]
        if kind == "idem":
            if self.idem is None:
                self.idem = Producer({"bootstrap.servers": self.t.bootstrap, "enable.idempotence": True,
                                      "linger.ms": 1000, "acks": "all"})
            self._produce(self.idem, op[1], "committed")
        elif kind == "txn":
            if self.txn is None:
                self.txn = self._txn_producer()
            _, chunks, outcome = op
            self.txn.begin_transaction()
            offsets = []
            for c in chunks:
                offsets += self._produce(self.txn, c, "pending")
            status = "committed" if outcome == "commit" else "aborted"
            for o in offsets:
                k, v, _ = self.written[o]
                self.written[o] = (k, v, status)
            (self.txn.commit_transaction if outcome == "commit" else self.txn.abort_transaction)(30)
            self.hw += 1                                   # the marker
        elif kind == "fence":
            if self.txn is None:
                self.txn = self._txn_producer()
            self.txn.begin_transaction()
            self._produce(self.txn, op[1], "aborted")
            self.dead.append(self.txn)
            # same transactional.id: fences the first producer; the broker aborts its open
            # transaction (one ABORT marker) before init_transactions returns
            self.txn = self._txn_producer()
            self.hw += 1
        elif kind == "reinit":
            if self.txn is not None:
                self.dead.append(self.txn)
            self.txn = self._txn_producer()              # epoch bump, nothing open: no marker
        elif kind == "raw":
            _, r, records = op
            st = self.raw.get(r)
            if st is None:
                deadline = time.time() + 30
                while True:          # Kafka: COORDINATOR_LOAD_IN_PROGRESS / NOT_AVAILABLE at first
                    got = init_producer_id(self.t.port)
                    if got is None or got[0] not in (14, 15) or time.time() > deadline:
                        break
                    time.sleep(0.1)
                assert got is not None and got[0] == 0, f"{self.t.name}: InitProducerId answered {got}"
                st = self.raw[r] = {"pid": got[1], "epoch": got[2], "seq": 0, "batches": []}
            b = DefaultRecordBatchBuilder(magic=2, compression_type=0, is_transactional=False,
                                          producer_id=st["pid"], producer_epoch=st["epoch"],
                                          base_sequence=st["seq"], batch_size=1 << 20)
            now = int(time.time() * 1000)
            for i, (k, v) in enumerate(records):
                b.append(i, now, k, v, [])
            batch = bytes(b.build())
            answer = raw_produce(self.t.port, self.topic, 0, batch)
            assert answer is not None and answer[0] == 0, f"{self.t.name} {self.topic}: raw {r} produce answered {answer}"
            base = answer[1]
            for i, (k, v) in enumerate(records):
                assert base + i not in self.written
                self.written[base + i] = (k, v, "committed")
            self.hw = max(self.hw, base + len(records))
            st["seq"] += len(records)
            st["batches"].append((batch, base, len(records), st["epoch"]))
        elif kind == "bump":
            st = self.raw[op[1]]
            st["epoch"] += 1                              # KIP-360, as the Java client does it
            st["seq"] = 0
        else:
            raise AssertionError(op)
        self._note(kind)

    def flush_record(self, i):
        if self.idem is None:
            self.idem = Producer({"bootstrap.servers": self.t.bootstrap, "enable.idempotence": True,
                                  "linger.ms": 1000, "acks": "all"})
        self._produce(self.idem, [(FLUSH, flush_value(i))], "committed")
        self._note("flush")

    def close(self):
        self.wm.close()
        self.idem = self.txn = None
        self.dead.clear()


def create_topics(target, topics):
    admin = AdminClient({"bootstrap.servers": target.bootstrap})
    futs = admin.create_topics([NewTopic(t, 1, 1, config=dict(TOPIC_CONFIG)) for t in topics], request_timeout=30)
    for f in futs.values():
        f.result(30)
    for t in topics:
        wait_topic_ready(target.bootstrap, t, 1, 60, admin=admin)


# ------------------------------------------------------------------------------ model and views

def expected_view(written):
    """The end state a cleaner must reach: the latest committed record of every key (FLUSH
    aside) whose latest record is not a tombstone."""
    latest = {}
    for o in sorted(written):
        k, v, status = written[o]
        if status == "committed" and k != FLUSH:
            latest[k] = (o, k, v)
    return sorted(r for r in latest.values() if r[2] is not None)


def latest_values(view):
    out = {}
    for _o, k, v in view:
        out[k] = v
    return {k: v for k, v in out.items() if v is not None}


def read_view(target, topic, isolation):
    return consume_to_end(target.bootstrap, topic, 1, isolation, timeout=40)[0]


def partition_offsets(target, topic):
    """(log start offset, high watermark, last stable offset) as ListOffsets answers them."""
    out = []
    for iso in ("read_uncommitted", "read_committed"):
        c = Consumer({"bootstrap.servers": target.bootstrap, "group.id": unique_topic("lo"),
                      "enable.auto.commit": False, "isolation.level": iso})
        try:
            out.append(c.get_watermark_offsets(TopicPartition(topic, 0), timeout=10, cached=False))
        finally:
            c.close()
    (low, hw), (_low2, lso) = out
    return low, hw, lso


def check_view(name, seed, iso, view, written):
    """What must hold of every view at any time (exact): offsets increasing, every record the
    one written at its offset, no aborted record read_committed, every key's latest value that
    of the written log. Returns a list of problems."""
    problems = []
    offsets = [o for o, _, _ in view]
    if offsets != sorted(set(offsets)):
        problems.append(f"{name} seed {seed} {iso}: offsets out of order or repeated")
    for o, k, v in view:
        w = written.get(o)
        if w is None or (w[0], w[1]) != (k, v):
            problems.append(f"{name} seed {seed} {iso}: offset {o} holds key {k!r} value {short(v)}, "
                            f"written there: {None if w is None else (w[0], short(w[1]), w[2])}")
    data = [(o, k, v) for o, k, v in view if k != FLUSH]
    if iso == "read_committed":
        aborted = [o for o, _, _ in data if written.get(o, (0, 0, ""))[2] == "aborted"]
        if aborted:
            problems.append(f"{name} seed {seed} read_committed: aborted records at offsets {aborted[:10]}")
    committed = [(o, k, v) for o, k, v in data if written.get(o, (0, 0, ""))[2] == "committed"]
    want = latest_values([(o, k, v) for o, (k, v, s) in sorted(written.items()) if s == "committed" and k != FLUSH])
    got = latest_values(committed)
    if got != want:
        bad = sorted(set(got) ^ set(want) | {k for k in set(got) & set(want) if got[k] != want[k]})
        problems.append(f"{name} seed {seed} {iso}: latest value differs from the written log for keys "
                        f"{[k.decode() for k in bad[:10]]}")
    return problems


def short(v):
    return None if v is None else (v[:24] + b"..." if len(v) > 24 else v)


def census(view, written):
    """What a view holds beyond the end state: older versions, tombstones, aborted records."""
    latest = {}
    for o in sorted(written):
        k, _v, s = written[o]
        if s == "committed":
            latest[k] = o
    older, tombs, aborted = set(), set(), set()
    for o, k, v in view:
        if k == FLUSH:
            continue
        if written[o][2] == "aborted":
            aborted.add(o)
        elif latest.get(k) != o:
            older.add(o)
        elif v is None:
            tombs.add(o)
    return {"older versions": older, "tombstones": tombs, "aborted": aborted}


# ------------------------------------------------------------------------------ the test

def _start_kafka(tmp_path):
    why = apache_kafka.available()
    if why:
        pytest.fail(f"Apache Kafka 4.4 is needed for this differential test: {why} "
                    f"(run it in the repository root)")
    return ApacheKafka(tmp_path / "kafka", extra=KAFKA_EXTRA).start()


def _both(pool, fn, targets):
    futs = {t.name: pool.submit(fn, t) for t in targets}
    return {n: f.result() for n, f in futs.items()}


def test_compaction_matches_apache_kafka(tmp_path):
    t_start = time.time()
    phases = {}
    pool = cf.ThreadPoolExecutor(16)
    kafka_fut = pool.submit(_start_kafka, tmp_path)
    kaas = Broker(tmp_path / "data", free_port(), extra_env=KAAS_ENV).start()
    kafka = kafka_fut.result()
    targets = [Target("kafka", kafka), Target("kaas", kaas)]
    topics = {seed: f"cdiff-s{seed}-{unique_topic('t')[2:]}" for seed in SEEDS}
    _both(pool, lambda t: create_topics(t, list(topics.values())), targets)
    phases["start"] = time.time() - t_start

    # ---- produce: the same operations, one at a time, on both brokers (in parallel)
    seqs = {seed: sequence(seed) for seed in SEEDS}
    runs = {(t.name, seed): Run(t, topics[seed], seed) for t in targets for seed in SEEDS}

    def drive(t):
        for seed in SEEDS:
            run = runs[(t.name, seed)]
            for op in seqs[seed]:
                run.op(op)

    t0 = time.time()
    _both(pool, drive, targets)
    phases["produce"] = time.time() - t0
    for seed in SEEDS:
        ops = seqs[seed]
        a, b = runs[("kafka", seed)], runs[("kaas", seed)]
        n = len(a.written)
        kinds = {k: sum(1 for o in ops if o[0] == k) for k in ("idem", "txn", "fence", "reinit", "raw", "bump")}
        aborted = sum(1 for *_x, s in a.written.values() if s == "aborted")
        tombs = sum(1 for _k, v, _s in a.written.values() if v is None)
        print(f"seed {seed}: topic {topics[seed]}, {len(ops)} operations {kinds}, {n} records "
              f"({aborted} aborted, {tombs} tombstones), high watermark {a.hw}")
        # the sequences lined up: same records at the same offsets, same markers
        assert a.written == b.written, f"seed {seed}: the written logs differ between the brokers: " + \
            str(sorted(set(a.written.items()) ^ set(b.written.items()))[:5])
        assert a.hws == b.hws, f"seed {seed}: high watermarks after each operation differ: " + \
            str([(i, x, y) for i, (x, y) in enumerate(zip(a.hws, b.hws)) if x != y][:5])

    # ---- let both cleaners run until both reach the end state
    problems = []
    first_census = None
    converged_at = {}
    flushes = 0
    t0 = time.time()
    last = {}

    def look(t):
        out = {}
        for seed in SEEDS:
            for iso in ("read_uncommitted", "read_committed"):
                out[(seed, iso)] = read_view(t, topics[seed], iso)
        return out

    while True:
        time.sleep(ROLL_WAIT)
        for seed in SEEDS:
            for t in targets:
                runs[(t.name, seed)].flush_record(flushes)
            assert runs[("kafka", seed)].hws == runs[("kaas", seed)].hws
        flushes += 1
        views = _both(pool, look, targets)
        for name in ("kafka", "kaas"):
            for (seed, iso), view in views[name].items():
                problems += check_view(name, seed, iso, view, runs[(name, seed)].written)
        assert not problems, "\n".join(problems)
        if first_census is None:
            first_census = {name: {seed: census(views[name][(seed, "read_uncommitted")],
                                                runs[(name, seed)].written) for seed in SEEDS}
                            for name in views}
        for name in views:
            done = all([(o, k, v) for o, k, v in views[name][(seed, iso)] if k != FLUSH]
                       == expected_view(runs[(name, seed)].written)
                       for seed in SEEDS for iso in ("read_uncommitted", "read_committed"))
            if done and name not in converged_at:
                converged_at[name] = time.time() - t0
        last = views
        if len(converged_at) == 2 or time.time() - t0 > CONVERGE_TIMEOUT:
            break
    phases["clean"] = time.time() - t0
    print(f"cleaners reached the end state after (s): {converged_at}; {flushes} FLUSH appends")
    kafka_log, kaas_log = kafka.log_path.read_text(errors="replace"), kaas.log_text()
    for seed in SEEDS:
        p = f"{topics[seed]}-0"
        print(f"seed {seed}: cleaning passes: kafka {kafka_log.count(f'cleaned log {p} ')}, "
              f"kaas {kaas_log.count(f'log cleaned partition={p} ')}")

    # ---- report what was allowed to differ on the way
    print("first look after producing (ACCEPTED 'transient': %s)" % ACCEPTED["transient"])
    for seed in SEEDS:
        ca, cb = first_census["kafka"][seed], first_census["kaas"][seed]
        for what in ca:
            both = ca[what] & cb[what]
            print(f"  seed {seed} {what}: kafka {len(ca[what])}, kaas {len(cb[what])}, both {len(both)}, "
                  f"only kafka {len(ca[what] - cb[what])}, only kaas {len(cb[what] - ca[what])}")

    # ---- compare the end state
    diffs = compare_end_state(targets, topics, runs, last)
    assert not diffs, "the brokers differ after cleaning:\n" + "\n".join(diffs)
    before_restart = last

    for seed in SEEDS:
        end = {o for o, _k, _v in expected_view(runs[("kafka", seed)].written)}
        for r in ("R0", "R1"):
            _b, base, n, epoch = runs[("kafka", seed)].raw[r]["batches"][-1]
            kept = len(end & set(range(base, base + n)))
            print(f"seed {seed}: raw producer {r} (epoch {epoch} at the end): last batch [{base}, {base + n}) "
                  f"keeps {kept} of {n} records after cleaning" + (" (emptied)" if not kept else ""))

    # ---- raw retries, before and after a restart of both brokers
    t0 = time.time()
    retries = {"before restart": retry_all(targets, topics, runs)}
    hw_before = {(t.name, seed): partition_offsets(t, topics[seed]) for t in targets for seed in SEEDS}
    for r in runs.values():
        r.close()
    gc.collect()

    def restart(t):
        if t.name == "kaas":
            t.broker.restart()
        else:
            t.broker.stop()
            t.broker.start()
        for topic in topics.values():
            wait_topic_ready(t.bootstrap, topic, 1, 60)

    _both(pool, restart, targets)
    phases["restart"] = time.time() - t0
    t0 = time.time()
    after = _both(pool, look, targets)
    hw_after = {(t.name, seed): partition_offsets(t, topics[seed]) for t in targets for seed in SEEDS}
    for name in after:
        for key, view in after[name].items():
            strip = lambda v: [r for r in v if r[1] != FLUSH]  # noqa: E731
            if strip(view) != strip(before_restart[name][key]):
                diffs.append(f"{name} seed {key[0]} {key[1]}: the view changed across the restart: "
                             + describe(strip(before_restart[name][key]), strip(view)))
    for k in hw_before:
        if hw_before[k] != hw_after[k]:
            diffs.append(f"{k[0]} seed {k[1]}: (log start, HW, LSO) {hw_before[k]} before the restart, "
                         f"{hw_after[k]} after")
    retries["after restart"] = retry_all(targets, topics, runs)
    hw_end = {(t.name, seed): partition_offsets(t, topics[seed]) for t in targets for seed in SEEDS}
    for k in hw_end:
        if hw_end[k] != hw_after[k]:
            diffs.append(f"{k[0]} seed {k[1]}: (log start, HW, LSO) {hw_after[k]} before the retries, "
                         f"{hw_end[k]} after (a retry was appended)")
    phases["retries"] = time.time() - t0

    print("raw producer retries (error code, base offset), kafka vs kaas:")
    accepted_seen = set()
    for when, answers in retries.items():
        for (seed, r, which), ans in sorted(answers.items()):
            accepted = accepted_retry_difference(when, which, ans, ans["written"])
            mark = ("" if ans["kafka"] == ans["kaas"] else
                    f"   <-- DIFFERS, ACCEPTED '{accepted}'" if accepted else "   <-- DIFFERS")
            print(f"  {when} seed {seed} {r} {which} batch (base offset {ans['written']}): "
                  f"kafka {ans['kafka']}, kaas {ans['kaas']}{mark}")
            if accepted:
                accepted_seen.add(accepted)
            elif ans["kafka"] != ans["kaas"]:
                diffs.append(f"{when}: seed {seed} raw producer {r}, {which} batch sent again (written at "
                             f"{ans['written']}): Kafka answered {ans['kafka']}, kaas {ans['kaas']}")
            if which == "last" and ans["kafka"] != (0, ans["written"]):
                diffs.append(f"{when}: seed {seed} raw producer {r}: Kafka answered {ans['kafka']} to the "
                             f"retry of the last batch (written at {ans['written']}), not a duplicate")
    for a in sorted(accepted_seen):
        print(f"ACCEPTED '{a}': {ACCEPTED[a]}")
    pool.shutdown(wait=False)
    total = time.time() - t_start
    print("phases (s): " + ", ".join(f"{k} {v:.1f}" for k, v in phases.items()) + f"; total {total:.1f}")
    assert not diffs, "the brokers differ:\n" + "\n".join(diffs)


def describe(a, b):
    sa, sb = set(a), set(b)
    only_a = sorted(sa - sb)
    only_b = sorted(sb - sa)
    fmt = lambda rs: [(o, k.decode(), short(v)) for o, k, v in rs[:8]]  # noqa: E731
    return f"{len(only_a)} records only in the first {fmt(only_a)}, {len(only_b)} only in the second {fmt(only_b)}"


def compare_end_state(targets, topics, runs, views):
    diffs = []
    for seed in SEEDS:
        want = expected_view(runs[("kafka", seed)].written)
        for iso in ("read_uncommitted", "read_committed"):
            va, vb = views["kafka"][(seed, iso)], views["kaas"][(seed, iso)]
            da = [r for r in va if r[1] != FLUSH]
            db = [r for r in vb if r[1] != FLUSH]
            for name, d in (("kafka", da), ("kaas", db)):
                if d != want:
                    c = census(d, runs[(name, seed)].written)
                    diffs.append(f"seed {seed} {iso}: {name} did not reach the end state: "
                                 + ", ".join(f"{len(s)} {w} {sorted(s)[:8]}" for w, s in c.items())
                                 + "; " + describe(want, d))
            if da != db:
                diffs.append(f"seed {seed} {iso}: kafka vs kaas: " + describe(da, db))
            fa = [(o, short(v)) for o, k, v in va if k == FLUSH]
            fb = [(o, short(v)) for o, k, v in vb if k == FLUSH]
            if fa != fb:
                print(f"  seed {seed} {iso}: FLUSH records kafka {[o for o, _ in fa]}, kaas {[o for o, _ in fb]} "
                      f"(ACCEPTED 'flush-key': {ACCEPTED['flush-key']})")
        print(f"seed {seed}: end state {len(want)} records, both brokers: "
              f"kafka {len([r for r in views['kafka'][(seed, 'read_committed')] if r[1] != FLUSH])}, "
              f"kaas {len([r for r in views['kaas'][(seed, 'read_committed')] if r[1] != FLUSH])}")
        oa = partition_offsets(targets[0], topics[seed])
        ob = partition_offsets(targets[1], topics[seed])
        print(f"seed {seed}: (log start, HW, LSO) kafka {oa}, kaas {ob}")
        if oa != ob:
            diffs.append(f"seed {seed}: (log start offset, high watermark, last stable offset) kafka {oa}, kaas {ob}")
    return diffs


def retry_all(targets, topics, runs):
    """Each raw producer's last, second-to-last and first batch sent again, byte for byte:
    {(seed, producer, which): {"kafka": answer, "kaas": answer, "written": base offset}}."""
    out = {}
    for seed in SEEDS:
        for r in ("R0", "R1"):
            for which, idx in (("last", -1), ("second-to-last", -2), ("first", 0)):
                ans = {}
                for t in targets:
                    batch, base, _n, _epoch = runs[(t.name, seed)].raw[r]["batches"][idx]
                    ans[t.name] = raw_produce(t.port, topics[seed], 0, batch)
                    ans["written"] = base
                out[(seed, r, which)] = ans
    return out
