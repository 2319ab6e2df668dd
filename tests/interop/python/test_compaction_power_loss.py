"""The log cleaner under power loss: kaas on lazyfs (see test_crash_consistency.py) with a
compacted topic, power cut at random moments of a cleaning pass (eos-rules 61-68).

One long-lived idempotent producer and one long-lived transactional producer (confluent-kafka)
write keyed records: committed and aborted transactions, plain records, tombstones. Each round
writes more, waits until the cleaner starts the pass that covers it (the broker logs "cleaning the
log"), lets it run a random part of its expected length (the cleaner is throttled so that a pass
lasts seconds; the moments are stratified over the rounds), then cuts the power as the harness
does: kill -9, then lazyfs drops everything not fsynced. The broker restarts on what is left, and:

- every record read is the one acknowledged at that offset, and offsets strictly increase
  (read_committed and read_uncommitted);
- the latest committed record of every key is still readable, with its value, at its offset (a
  tombstone may be gone, but then no older value of its key is readable);
- no record of an aborted transaction is readable read_committed;
- once a pass has completed after the restart (every segment below the active one is a cleaned
  file), no record of an aborted transaction below the active segment is readable
  read_uncommitted either;
- the producers go on producing (the next round, and a last batch and transaction at the end).

A round "landed inside a pass" when right after the cut a `.cleaning` file is there (in the
directory as the killed broker left it, or as the power loss left it), or, as the killed broker
left it, a cleaned file written since the pass began beside a file it covers (files a takeover
skipped before the pass began, left over from an earlier cut, do not count). The test asserts at
least one round did, so that it cannot pass vacuously, and that read_uncommitted did see records
of aborted transactions below the active segment before a pass (so that the check after the pass
tests something). KAAS_SEED fixes the random moments; KAAS_COMPACT_POWER_ROUNDS the number of
rounds.
"""
import os
import random
import re
import struct
import time
from datetime import datetime, timezone

import pytest
from confluent_kafka import KafkaException, Producer

from conftest import ANSI_RE, Broker, free_port
from kaashelpers import assert_no_panic, consume_to_end, log_tail, wait_topic_ready
from test_compaction import _create_compacted
from test_crash_consistency import LazyFs, durable_mkdir

pytestmark = pytest.mark.serial  # conftest.py: bounds by the clock; runs alone

TOPIC = "compact-power"
TXN_ID = "compact-power-txn"
ROUNDS = int(os.environ.get("KAAS_COMPACT_POWER_ROUNDS", "8"))
KEYS = 60
PAD = "p" * 900
BULK = 1200                 # plain records per round: a little more than one 1 MiB segment
TXN_RECORDS = 40
LAG_MS = 2000               # min.compaction.lag.ms: the round's pass starts after its writes
RATE = 1_000_000            # cleaner I/O bytes per second: a pass lasts a few seconds
FIRST_PASS_GUESS_S = 2.5
CONFIGS = {
    "cleanup.policy": "compact",
    "segment.bytes": "1048576",
    "min.cleanable.dirty.ratio": "0.01",
    "delete.retention.ms": "1000",
    "min.compaction.lag.ms": str(LAG_MS),
}
# KAAS_ZERO_AHEAD_BYTES: kaas's default on ext4 and XFS (none on FUSE, lazyfs's kind).
ENV = {"KAAS_CLEANER_BACKOFF_MS": "200", "KAAS_CLEANER_IO_MAX_BYTES_PER_SECOND": str(RATE),
       "KAAS_ZERO_AHEAD_BYTES": "524288"}

# `<base>[.c<gen>][.e<epoch>][.s<holder>].log`: `.s<holder>` is the name a takeover at epoch
# <holder> links a predecessor's file under (store::cluster::seal::linked_name).
SEGMENT_RE = re.compile(r"^(\d{20})(?:\.c(\d+))?(?:\.e(\d+))?(?:\.s\d+)?\.log(\.cleaning)?$")
START_RE = re.compile(r"^(\S+).*cleaning the log.*partition=(\S+).*first_dirty=(-?\d+).*cleanable_end=(-?\d+)")
END_RE = re.compile(r"^(\S+).*log cleaned.*partition=(\S+).*\bms=(\d+)")


# ------------------------------------------------------------------------ the partition dir

def segments(names):
    """{name: (base, gen)} of the segment files (`.cleaning` ones excluded)."""
    out = {}
    for n in names:
        m = SEGMENT_RE.match(n)
        if m and not m.group(4):
            out[n] = (int(m.group(1)), int(m.group(2) or 0))
    return out


def file_end(path):
    """One past the last offset of the batches in a segment file (None: it holds none)."""
    end = None
    with open(path, "rb") as f:
        size = os.fstat(f.fileno()).st_size
        pos = 0
        while pos + 27 <= size:
            f.seek(pos)
            head = f.read(27)
            if len(head) < 27:
                break
            base, length = struct.unpack(">qi", head[:12])
            (delta,) = struct.unpack(">i", head[23:27])
            if length <= 0 or pos + 12 + length > size:
                break
            end = base + delta + 1
            pos += 12 + length
    return end


def snapshot_dir(part_dir):
    """The partition directory now: its names; the segment files a log opening would use
    (`live`: newest cleaning generation first at a base, then on from where the last one
    ended), and those it would skip (`covered`, each with the file covering it)."""
    names = sorted(os.listdir(part_dir))
    segs = segments(names)
    live, covered, end, by = [], {}, None, None
    for n in sorted(segs, key=lambda n: (segs[n][0], -segs[n][1])):
        base, gen = segs[n]
        if end is not None and base < end:
            covered[n] = by
            continue
        try:
            e = file_end(part_dir / n)
        except OSError:
            continue
        live.append(n)
        end, by = (base if e is None else e), n
    return {"names": names, "live": live, "covered": covered,
            "cleaning": [n for n in names if n.endswith(".cleaning")],
            "max_gen": max((g for _, g in segs.values()), default=0)}


def inside_pass(snap, at_start):
    """Why this directory shows a pass under way (None: it does not): an unfinished cleaned
    file, or a cleaned file written since `at_start` (the directory when the pass began) beside
    a file it covers that was no leftover then."""
    if snap["cleaning"]:
        return f"unfinished {snap['cleaning']}"
    fresh = {n: by for n, by in snap["covered"].items()
             if n not in at_start["covered"] and segments([by])[by][1] > at_start["max_gen"]}
    if fresh:
        return "cleaned file beside a file it covers: " + "; ".join(
            f"{by} covers {n}" for n, by in sorted(fresh.items()))
    return None


def active_base(part_dir):
    return max(b for b, _ in segments(os.listdir(part_dir)).values())


def all_cleaned_below_active(part_dir):
    """Every segment file in use below the active one is a cleaned file: what a completed pass
    leaves."""
    live = snapshot_dir(part_dir)["live"]
    segs = segments(live)
    return all(segs[n][1] > 0 for n in live[:-1])


# ------------------------------------------------------------------------------ the log

def log_lines(broker, since):
    return ANSI_RE.sub("", broker.log_text()[since:]).splitlines()


def passes(broker, since, partition):
    """[(start time, first_dirty, cleanable_end, ms or None if not ended)] of `partition`'s
    passes logged after character `since` of the broker log."""
    out = []
    for line in log_lines(broker, since):
        m = START_RE.match(line)
        if m and m.group(2) == partition:
            out.append([_ts(m.group(1)), int(m.group(3)), int(m.group(4)), None])
            continue
        m = END_RE.match(line)
        if m and m.group(2) == partition and out and out[-1][3] is None:
            out[-1][3] = int(m.group(3))
    return out


def _ts(text):
    try:
        t = datetime.fromisoformat(text.rstrip("Z")[:26])
        return t.replace(tzinfo=timezone.utc).timestamp()
    except ValueError:
        return time.time()


# ---------------------------------------------------------------------------- the writes

class Ledger:
    """Every acknowledged record of TOPIC: offset -> (key, value, kind), kind one of "plain",
    "committed", "aborted"."""

    def __init__(self):
        self.at = {}

    def latest(self):
        """key -> (offset, value) of its latest acknowledged plain or committed record."""
        out = {}
        for off in sorted(self.at):
            k, v, kind = self.at[off]
            if kind != "aborted":
                out[k] = (off, v)
        return out


def _acked(ledger, kind, errors):
    def on_delivery(err, msg):
        if err is not None:
            errors.append(err)
            return
        v = msg.value()
        ledger.at[msg.offset()] = (msg.key().decode(), None if v is None else v.decode(), kind)
    return on_delivery


def produce_plain(p, ledger, records):
    errors = []
    cb = _acked(ledger, "plain", errors)
    for k, v in records:
        while True:
            try:
                p.produce(TOPIC, key=k, value=v, partition=0, on_delivery=cb)
                break
            except BufferError:
                p.poll(0.05)
        p.poll(0)
    left = p.flush(60)
    assert left == 0 and not errors, f"idempotent producer: {left} undelivered, errors {errors[:3]}"


def transaction(p, ledger, records, commit):
    """One transaction of `records`, committed or (once all is written) aborted."""
    errors = []
    sink = Ledger()
    cb = _acked(sink, None, errors)
    p.begin_transaction()
    for k, v in records:
        while True:
            try:
                p.produce(TOPIC, key=k, value=v, partition=0, on_delivery=cb)
                break
            except BufferError:
                p.poll(0.05)
    assert p.flush(60) == 0 and not errors, f"transactional producer: errors {errors[:3]}"
    if commit:
        p.commit_transaction(60)
    else:
        p.abort_transaction(60)
    kind = "committed" if commit else "aborted"
    ledger.at.update({off: (k, v, kind) for off, (k, v, _) in sink.at.items()})


def write_round(rnd, idem, txn, ledger):
    """Transactions (committed, aborted, committed), a tombstone, then enough plain records to
    roll the segment that holds them."""
    tag = f"r{rnd}"
    transaction(txn, ledger, [(f"k{i % KEYS}", f"k{i % KEYS}:{tag}-t0-{i}:{PAD}") for i in range(TXN_RECORDS)]
                + [(f"c{rnd}", f"c{rnd}:{tag}-t0")], commit=True)
    transaction(txn, ledger, [(f"k{i % KEYS}", f"k{i % KEYS}:{tag}-ABORT-{i}:{PAD}") for i in range(TXN_RECORDS)]
                + [(f"a{rnd}", f"a{rnd}:{tag}-ABORT")], commit=False)
    transaction(txn, ledger, [(f"k{(i * 7) % KEYS}", f"k{(i * 7) % KEYS}:{tag}-t2-{i}:{PAD}")
                              for i in range(TXN_RECORDS // 2)], commit=True)
    # g<rnd> gets a value now and its tombstone next round: tombstones that stay the latest.
    tomb = [(f"g{rnd - 1}", None)] if rnd > 0 else []
    produce_plain(idem, ledger, tomb + [(f"g{rnd}", f"g{rnd}:{tag}")]
                  + [(f"k{i % KEYS}", f"k{i % KEYS}:{tag}-{i}:{PAD}") for i in range(BULK)])


# ---------------------------------------------------------------------------- the checks

def read(bootstrap, isolation):
    wait_topic_ready(bootstrap, TOPIC, 1)
    got = consume_to_end(bootstrap, TOPIC, 1, isolation, timeout=60)[0]
    return [(o, k.decode(), None if v is None else v.decode()) for o, k, v in got]


def problems_of(view, ledger, isolation, below=None):
    """What is wrong with a read of the log, against what was acknowledged. With `below`, a
    completed pass covered everything under that offset: no aborted record may be left there."""
    out = []
    offsets = [o for o, _, _ in view]
    bad = [(a, b) for a, b in zip(offsets, offsets[1:]) if b <= a]
    if bad:
        out.append(f"{isolation}: offsets not strictly increasing, first at {bad[:3]}")
    wrong = [(o, k, (v or "")[:30], ledger.at.get(o, (None, None, None))[:2])
             for o, k, v in view if ledger.at.get(o, (None, None, None))[:2] != (k, v)]
    if wrong:
        out.append(f"{isolation}: {len(wrong)} records not the one acknowledged at their offset, "
                   f"first (offset, key, value, acknowledged): {[(o, k, v, (a[0], (a[1] or '')[:30])) for o, k, v, a in wrong[:5]]}")
    aborted = [(o, k) for o, k, _ in view if ledger.at.get(o, (0, 0, ""))[2] == "aborted"]
    if isolation == "read_committed" and aborted:
        out.append(f"{isolation}: {len(aborted)} records of aborted transactions readable, first {aborted[:5]}")
    if below is not None:
        under = [(o, k) for o, k in aborted if o < below]
        if under:
            out.append(f"{isolation}: {len(under)} records of aborted transactions below the active "
                       f"segment ({below}) after a completed pass, first {under[:5]}")
    readable = {o: (k, v) for o, k, v in view}
    keys_read = {}
    for o, k, v in view:
        if ledger.at.get(o, (0, 0, ""))[2] != "aborted":
            keys_read.setdefault(k, []).append(o)
    lost = []
    for k, (off, v) in ledger.latest().items():
        if readable.get(off) == (k, v):
            continue
        if v is None and not keys_read.get(k):
            continue        # a tombstone removed after delete.retention.ms, with all before it
        lost.append((k, off, (v or "<tombstone>")[:30], readable.get(off),
                     [(o, (readable[o][1] or "")[:30]) for o in keys_read.get(k, [])][-3:]))
    if lost:
        out.append(f"{isolation}: the latest record of {len(lost)} keys is not readable at its offset, "
                   f"first (key, offset, value, read there, last readable of the key): {lost[:5]}")
    return out


def check(broker, ledger, below=None):
    """Problems of both reads, and the offsets of the records of aborted transactions that
    read_uncommitted saw."""
    out = []
    for iso in ("read_committed", "read_uncommitted"):
        view = read(broker.bootstrap, iso)
        out += problems_of(view, ledger, iso, below)
    aborted = [o for o, _, _ in view if ledger.at.get(o, (0, 0, ""))[2] == "aborted"]
    return out, aborted


# ------------------------------------------------------------------------------ the test

def test_power_loss_during_cleaning_keeps_the_latest_of_every_key(tmp_path):
    seed = int(os.environ.get("KAAS_SEED", random.randrange(1 << 30)))
    rng = random.Random(seed)
    # The moment of each cut, as a share of the pass's expected length: one per stratum.
    shares = [(i + rng.random()) / ROUNDS for i in range(ROUNDS)]
    rng.shuffle(shares)
    fs = LazyFs(tmp_path).mount()
    broker = None
    idem = txn = None
    report = []
    try:
        data = durable_mkdir(fs.mnt, "data")
        broker = Broker(data, free_port(), ENV)
        broker.log_path = tmp_path / "kaas.log"      # not on the lazy disk
        broker.start()
        _create_compacted(broker.bootstrap, TOPIC, CONFIGS)
        wait_topic_ready(broker.bootstrap, TOPIC, 1)
        part = f"{TOPIC}-0"
        part_dir = data / "topics" / part
        fatal = []
        idem = Producer({"bootstrap.servers": broker.bootstrap, "enable.idempotence": True, "acks": "all",
                         "linger.ms": 5, "message.timeout.ms": 60_000,
                         "error_cb": lambda e: e.fatal() and fatal.append(e)})
        txn = Producer({"bootstrap.servers": broker.bootstrap, "transactional.id": TXN_ID, "linger.ms": 5,
                        "error_cb": lambda e: e.fatal() and fatal.append(e)})
        txn.init_transactions(60)
        ledger = Ledger()
        run_from = 0                                  # where this run of the broker starts in its log
        landed = []
        aborted_before_pass = 0                       # aborted records below the active segment
                                                      # read_uncommitted saw before the restart's pass
        estimate = FIRST_PASS_GUESS_S
        for rnd in range(ROUNDS):
            write_round(rnd, idem, txn, ledger)
            assert not fatal, f"round {rnd}: producer fatal error {fatal}"
            top = active_base(part_dir)
            # The pass that cleans this round's writes: it begins once they are LAG_MS old.
            def started():
                ps = passes(broker, run_from, part)
                mine = [i for i, p in enumerate(ps) if p[1] < top <= p[2]]
                return mine and (mine[0], ps[mine[0]])
            t0 = time.time()
            while not started():
                assert time.time() - t0 < 30, (f"round {rnd}: no pass up to {top} began within 30s; "
                                               f"passes {passes(broker, run_from, part)}\n{log_tail(broker)}")
                time.sleep(0.01)
            at_start = snapshot_dir(part_dir)
            index, (start, first_dirty, end, _) = started()
            delay = shares[rnd] * estimate
            time.sleep(max(0.0, start + delay - time.time()))
            ended = passes(broker, run_from, part)[index][3]
            broker.kill()
            os.stat(fs.mnt)                           # the killed broker's requests are answered
            before = snapshot_dir(part_dir)
            fs.power_loss()
            after = snapshot_dir(part_dir)
            why = inside_pass(before, at_start) or (after["cleaning"] and f"unfinished {after['cleaning']}")
            entry = (f"round {rnd}: cut {delay:.2f}s into the pass [{first_dirty}, {end}) "
                     f"(expected {estimate:.2f}s; the log says it "
                     f"{'ended in %d ms' % ended if ended is not None else 'still ran'}): "
                     f"{why or 'not inside a pass'}")
            report.append(entry)
            if why:
                landed.append(rnd)
            listing = (f"\nwhen the pass began: {at_start}\nbefore the power loss: {before}"
                       f"\nafter it: {after}")

            run_from = len(broker.log_text())
            broker.start()
            problems, aborted_seen = check(broker, ledger)
            assert not problems, (f"seed {seed}, {entry}\n" + "\n".join(problems) + listing
                                  + "\nkaas log:\n" + log_tail(broker, 60))
            # Left alone, the cleaner completes the pass: nothing aborted below the active segment.
            t0 = time.time()
            while not all_cleaned_below_active(part_dir):
                assert time.time() - t0 < 30, (f"seed {seed}, round {rnd}: no completed pass within 30s "
                                               f"of the restart: {snapshot_dir(part_dir)}\n{log_tail(broker)}")
                time.sleep(0.05)
            below = active_base(part_dir)
            aborted_before_pass += sum(1 for o in aborted_seen if o < below)
            problems, _ = check(broker, ledger, below=below)
            assert not problems, (f"seed {seed}, {entry}, after the restart's pass\n" + "\n".join(problems)
                                  + listing + f"\nnow: {snapshot_dir(part_dir)}\nkaas log:\n"
                                  + log_tail(broker, 60))
            # The next cut's scale: the last completed pass that cleaned a round's worth of writes.
            done = [p for p in passes(broker, 0, part) if p[3] is not None and p[2] - p[1] >= BULK // 2]
            if done:
                estimate = max(0.5, done[-1][3] / 1000)
            assert broker.alive(), f"broker died after round {rnd}:\n{log_tail(broker)}"
            assert_no_panic(broker)

        # The producers go on, and what they write is read back.
        produce_plain(idem, ledger, [(f"k{i}", f"k{i}:final:{PAD}") for i in range(KEYS)])
        transaction(txn, ledger, [("c-final", "c-final:committed")], commit=True)
        assert not fatal, f"producer fatal error {fatal}"
        problems, _ = check(broker, ledger)
        assert not problems, f"seed {seed}, after the last round\n" + "\n".join(problems)
        print(f"seed {seed}:\n" + "\n".join(report) + f"\n{aborted_before_pass} records of aborted "
              f"transactions below the active segment read_uncommitted before the restart's pass, none after it")
        assert aborted_before_pass, ("no record of an aborted transaction was ever readable below the active "
                                     "segment before a pass: the read_uncommitted check tests nothing")
        assert landed, (f"seed {seed}: no power cut landed inside a cleaning pass "
                        f"(no .cleaning file, no cleaned file beside a file it covers):\n" + "\n".join(report))
    finally:
        for p in (idem, txn):
            if p is not None:
                try:
                    p.purge()
                    p.flush(0)
                except KafkaException:
                    pass
        try:
            if broker is not None:
                broker.stop()
        finally:
            fs.unmount()
