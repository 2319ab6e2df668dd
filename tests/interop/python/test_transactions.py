"""librdkafka (confluent-kafka) transactional producers against the real kaas binary.

1. Commits and aborts interleaved over 4 partitions while the broker is SIGKILLed four times
   (after produce, during commit, right after a commit, during an abort) and restarted on the
   same data dir; then read_committed shows exactly the committed
   transactions (each record once, in order, at its acknowledged offset) and read_uncommitted
   also shows the aborted ones.
2. Zombie fencing: a second producer with the same transactional.id fences the first.
3. Transaction timeout: the broker's reaper aborts a stalled transaction, the LSO moves on.

Readers use assign() without joining a group; librdkafka still insists on a group.id config
key to create a Consumer (checked: "group.id must be set"), so a unique one is given.
Transactions' sends/offsets_to_transaction are not used (no consumer groups in kaas yet).
"""
import collections
import threading
import time

from confluent_kafka import KafkaError, KafkaException, Producer

from conftest import Broker, free_port
from kaashelpers import (assert_no_panic, consume_to_end, create_topic, end_offsets, log_tail,
                         settled_end_offsets, unique_topic)

FENCED_CODES = {KafkaError._FENCED, KafkaError.PRODUCER_FENCED,
                KafkaError.INVALID_PRODUCER_EPOCH}


def txn_producer(bootstrap, txn_id, client_errors, **extra):
    conf = {
        "bootstrap.servers": bootstrap,
        "transactional.id": txn_id,
        "enable.idempotence": True,
        "acks": "all",
        "linger.ms": 5,
        "reconnect.backoff.ms": 50,
        "reconnect.backoff.max.ms": 500,
        "error_cb": client_errors.append,
    }
    conf.update(extra)
    return Producer(conf)


def kafka_error(exc: KafkaException) -> KafkaError:
    return exc.args[0]


def values_of(records):
    """{partition: [(offset, key, value), ...]} -> [(partition, offset, value str), ...]"""
    return [(p, off, v.decode()) for p, recs in records.items() for off, _k, v in recs]


# =============================================================== 1. commits/aborts + SIGKILL

PARTS = 4
TXNS = 60
PER_PART = 5                       # records per partition per transaction
# SIGKILL points: transaction index -> moment. "after_commit" races the coordinator's marker
# writes that follow a successful EndTxn; "during_abort" races abort_transaction().
KILLS = {13: "after_produce", 25: "during_commit", 36: "after_commit", 47: "during_abort"}
DOWNTIME = 1.0                     # the outage itself, not a synchronisation
END_TXN_DEADLINE = 90.0            # per transaction, retrying retriable commit/abort errors


class ProducerFatal(Exception):
    pass


def rec_value(t, part, j):
    return f"t{t:03d}-p{part}-r{j}"


def parse_value(v):
    t, part, j = v.split("-")
    return int(t[1:]), int(part[1:]), int(j[1:])


class CrashingTxnRun:
    """Runs TXNS transactions with one transactional.id, replacing the producer (same id) when
    librdkafka reports a fatal error, and crashing the broker at the configured points."""

    def __init__(self, broker, topic):
        self.broker = broker
        self.topic = topic
        self.txn_id = unique_topic("txn-crash")
        self.client_errors = []
        self.txn_errors = []            # (txn, operation, KafkaError) for every raised error
        self.fatal = []                 # (txn, KafkaError) that made us replace the producer
        self.delivered = {}             # value -> (partition, offset)
        self.delivery_failed = {}       # value -> KafkaError
        self.outcome = {}               # txn -> "committed" | "aborted" | "unknown"
        self.span = {}                  # txn -> (began, ended) wall-clock times
        self.commit_called = set()
        self.crashes = []
        self.killer_errors = []
        self._killer = None
        self.producers = 0
        self.p = None
        self.new_producer()

    # ------------------------------------------------------------------ producer lifecycle
    def new_producer(self):
        if self.p is not None:
            try:
                self.p.purge()
            except Exception:  # noqa: BLE001 - a fatal producer may refuse; it is dropped anyway
                pass
        self.p = txn_producer(self.broker.bootstrap, self.txn_id, self.client_errors,
                              **{"transaction.timeout.ms": 60_000})
        self.producers += 1
        deadline = time.time() + 60
        while True:
            try:
                self.p.init_transactions(30)
                return
            except KafkaException as e:
                err = kafka_error(e)
                self.txn_errors.append((None, "init", err))
                if err.retriable() and time.time() < deadline:
                    continue
                raise AssertionError(f"init_transactions failed: {err}\n{log_tail(self.broker)}")

    def on_delivery(self, err, msg):
        v = msg.value().decode()
        if err is None:
            self.delivered[v] = (msg.partition(), msg.offset())
        else:
            self.delivery_failed[v] = err

    # ------------------------------------------------------------------------ crashes
    def crash(self):
        """SIGKILL now (in a thread, so the producer call that follows races it), restart
        after DOWNTIME."""
        self.join_killer()

        def run():
            try:
                self.broker.kill()
                self.crashes.append(("killed", time.time()))
                time.sleep(DOWNTIME)
                self.broker.start()
                self.crashes.append(("restarted", time.time()))
            except Exception as e:  # noqa: BLE001 - surfaced by the test
                self.killer_errors.append(repr(e))

        self._killer = threading.Thread(target=run, daemon=True)
        self._killer.start()

    def join_killer(self):
        if self._killer is not None:
            self._killer.join(timeout=60)
            assert not self._killer.is_alive(), "broker restart thread hung"
            self._killer = None

    # --------------------------------------------------------------------- transactions
    def end_txn(self, t, commit):
        op = "commit" if commit else "abort"
        deadline = time.time() + END_TXN_DEADLINE
        while True:
            try:
                if op == "commit":
                    self.commit_called.add(t)
                    self.p.commit_transaction(30)
                    return "committed"
                self.p.abort_transaction(30)
                return "aborted"
            except KafkaException as e:
                err = kafka_error(e)
                self.txn_errors.append((t, op, err))
                if err.fatal():
                    raise ProducerFatal(err)
                if op == "commit" and err.txn_requires_abort():
                    op = "abort"          # librdkafka: abortable error -> abort_transaction()
                    continue
                if err.retriable() and time.time() < deadline:
                    continue              # librdkafka: retriable -> call the same API again
                raise AssertionError(f"txn {t}: {op}_transaction failed with a non-retriable, "
                                     f"non-abortable error {err}\n{log_tail(self.broker)}")

    def produce(self, t, part, j):
        v = rec_value(t, part, j)
        while True:
            try:
                self.p.produce(self.topic, key=f"t{t:03d}".encode(), value=v.encode(),
                               partition=part, on_delivery=self.on_delivery)
                return
            except BufferError:
                self.p.poll(0.05)

    def run_txn(self, t):
        commit = t % 3 != 2               # every 3rd transaction is aborted
        began = time.time()
        try:
            try:
                self.p.begin_transaction()
                for part in range(PARTS):
                    for j in range(PER_PART):
                        self.produce(t, part, j)
                self.p.poll(0)
            except KafkaException as e:
                err = kafka_error(e)
                self.txn_errors.append((t, "produce", err))
                if err.fatal():
                    raise ProducerFatal(err)
                commit = False            # e.g. _STATE in an abortable state: abort
            if not commit:
                # abort_transaction() purges unsent messages; flush first so that the aborted
                # records really reach the log and only the ABORT markers hide them
                self.p.flush(30)
            when = KILLS.get(t)
            if when == "after_produce":
                self.crash()
            elif when == "during_commit" or when == "during_abort":
                assert commit == (when == "during_commit"), f"txn {t} cannot be used for {when}"
                self.crash()
            self.outcome[t] = self.end_txn(t, commit)
            if when == "after_commit":
                assert commit, f"txn {t} cannot be used for {when}"
                self.crash()
        except ProducerFatal as f:
            self.fatal.append((t, f.args[0]))
            # No EndTxn(COMMIT) was ever asked for -> the transaction must end aborted (the new
            # producer's InitProducerId fences and aborts it); otherwise the outcome is unknown
            # and only atomicity can be checked.
            self.outcome[t] = "unknown" if t in self.commit_called else "aborted"
            self.join_killer()
            self.new_producer()
        finally:
            self.span[t] = (began, time.time())
            self.p.poll(0)

    def run(self):
        for t in range(TXNS):
            self.run_txn(t)
        self.join_killer()
        self.p.flush(10)
        self.p.poll(0)


RECOVERY_GRACE = 5.0               # after a restart: librdkafka reconnects, coordinator loads


def outage_windows(crashes):
    """[(killed, restarted + RECOVERY_GRACE)] from the ("killed"|"restarted", time) log."""
    kills = [at for what, at in crashes if what == "killed"]
    starts = [at for what, at in crashes if what == "restarted"]
    return [(k, s + RECOVERY_GRACE) for k, s in zip(kills, starts)]


def overlaps(span, window):
    return span[0] <= window[1] and window[0] <= span[1]


def test_transactions_commit_abort_across_sigkill(broker):
    topic = unique_topic("txn-crash")
    create_topic(broker.bootstrap, topic, PARTS)
    r = CrashingTxnRun(broker, topic)
    r.run()

    ctx = (f"fatal errors: {r.fatal}\ntxn errors: {r.txn_errors[:20]}\n"
           f"client errors: {r.client_errors[:20]}\ncrashes: {r.crashes}")
    print(f"\ntransactional run: outcomes {collections.Counter(r.outcome.values())}, "
          f"producers used {r.producers}, fatal {r.fatal}, "
          f"txn API errors {[(t, op, e.name()) for t, op, e in r.txn_errors]}")
    assert not r.killer_errors, f"broker restart failed: {r.killer_errors}\n{log_tail(broker)}"
    assert [c[0] for c in r.crashes] == ["killed", "restarted"] * len(KILLS), ctx
    assert broker.alive(), "broker not running at the end:\n" + log_tail(broker)
    assert len(r.outcome) == TXNS, ctx

    committed = {t for t, o in r.outcome.items() if o == "committed"}
    aborted = {t for t, o in r.outcome.items() if o == "aborted"}
    unknown = {t for t, o in r.outcome.items() if o == "unknown"}
    planned_commits = {t for t in range(TXNS) if t % 3 != 2}
    assert committed <= planned_commits, ctx
    # Exact bookkeeping instead of a count tolerance: a planned commit that did not commit must
    # have been turned into an abort (or a fatal, in-doubt commit) by an error the client
    # reported for that very transaction, and that transaction must have overlapped a crash
    # (from the kill until the restarted broker listened again, plus RECOVERY_GRACE for
    # librdkafka to reconnect). In-doubt ("unknown") ones are checked below to be wholly
    # visible or wholly absent.
    errors_of = collections.defaultdict(list)
    for t, op, e in r.txn_errors:
        errors_of[t].append((op, e.name()))
    for t, e in r.fatal:
        errors_of[t].append(("fatal", e.name()))
    outages = outage_windows(r.crashes)
    not_committed = sorted(planned_commits - committed)
    print(f"planned commits not committed: "
          f"{[(t, r.outcome[t], errors_of[t]) for t in not_committed]}")
    unexplained = [t for t in not_committed if not errors_of[t]]
    assert not unexplained, (f"planned commits ended {[(t, r.outcome[t]) for t in unexplained]} "
                             f"without any client error for them\n{ctx}")
    far_from_crash = [(t, r.outcome[t], errors_of[t]) for t in not_committed
                      if not any(overlaps(r.span[t], w) for w in outages)]
    assert not far_from_crash, (f"planned commits failed although no crash overlapped them: "
                                f"{far_from_crash}\noutages {outages}, spans "
                                f"{ {t: r.span[t] for t, _, _ in far_from_crash} }\n{ctx}")
    kill_points = sorted(KILLS) + [TXNS]
    for a, b in zip(kill_points, kill_points[1:]):
        assert any(a < t < b for t in committed), f"no commit between crashes at {a} and {b}\n{ctx}"
    # Every record of a committed transaction was acknowledged.
    for t in committed:
        for part in range(PARTS):
            for j in range(PER_PART):
                v = rec_value(t, part, j)
                assert v in r.delivered, f"committed txn {t}: {v} has no successful delivery " \
                                         f"report ({r.delivery_failed.get(v)})\n{ctx}"

    # ---- read back: once the last transaction's markers are in (no open transaction is left)
    try:
        hw = settled_end_offsets(broker.bootstrap, topic, PARTS)
    except AssertionError as e:
        raise AssertionError(f"{e}\n{log_tail(broker)}")
    rc = consume_to_end(broker.bootstrap, topic, PARTS, "read_committed", timeout=60, targets=hw)
    ru = consume_to_end(broker.bootstrap, topic, PARTS, "read_uncommitted", timeout=60, targets=hw)

    def check_log(records, label):
        seen = collections.Counter()
        strangers = []
        misplaced = []
        order = []
        for p, recs in records.items():
            last = None
            for off, key, raw in recs:
                v = raw.decode()
                try:
                    t, part, j = parse_value(v)
                except ValueError:
                    strangers.append((p, off, v))
                    continue
                seen[v] += 1
                if part != p or key != f"t{t:03d}".encode():
                    misplaced.append((p, off, key, v))
                if v in r.delivered and r.delivered[v] != (p, off):
                    misplaced.append((p, off, v, "acked at", r.delivered[v]))
                if last is not None and (t, j) <= last:
                    order.append((p, off, v, "after", last))
                last = (t, j)
        dups = {v: n for v, n in seen.items() if n > 1}
        assert not strangers, f"{label}: records nobody produced: {strangers[:10]}"
        assert not dups, f"{label}: duplicated records: {list(dups.items())[:10]}\n{ctx}"
        assert not misplaced, f"{label}: records not where acknowledged: {misplaced[:10]}"
        assert not order, f"{label}: records out of produce order: {order[:10]}"
        return seen

    seen_rc = check_log(rc, "read_committed")
    seen_ru = check_log(ru, "read_uncommitted")

    by_txn_rc = collections.Counter(parse_value(v)[0] for v in seen_rc)
    by_txn_ru = collections.Counter(parse_value(v)[0] for v in seen_ru)
    full = PARTS * PER_PART
    missing_committed = {t: by_txn_rc[t] for t in committed if by_txn_rc[t] != full}
    assert not missing_committed, (f"committed transactions not fully visible read_committed "
                                   f"(txn: records seen of {full}): {missing_committed}\n{ctx}\n"
                                   f"{log_tail(broker)}")
    visible_aborted = {t: by_txn_rc[t] for t in aborted if by_txn_rc[t]}
    assert not visible_aborted, (f"aborted transactions visible read_committed: "
                                 f"{visible_aborted}\n{ctx}\n{log_tail(broker)}")
    partial = {t: by_txn_rc[t] for t in unknown if by_txn_rc[t] not in (0, full)}
    assert not partial, f"transactions partly visible (not atomic): {partial}\n{ctx}"

    # read_uncommitted: every acknowledged record is in the log, including the aborted ones
    lost = [v for v in r.delivered if seen_ru[v] == 0]
    assert not lost, f"acknowledged records missing from the log: {lost[:10]}\n{log_tail(broker)}"
    assert set(seen_rc) <= set(seen_ru)
    # Aborted transactions' records stay in the log, hidden only by the ABORT markers: every
    # acknowledged one is there (checked above), and a transaction whose records were all
    # acknowledged is there in full.
    for t in aborted:
        acked = sum(1 for part in range(PARTS) for j in range(PER_PART)
                    if rec_value(t, part, j) in r.delivered)
        assert acked <= by_txn_ru[t] <= full, (t, acked, by_txn_ru[t])
    planned_aborts_clean = [t for t in aborted if t % 3 == 2 and not errors_of[t]]
    not_in_log = {t: by_txn_ru[t] for t in planned_aborts_clean if by_txn_ru[t] != full}
    assert not not_in_log, (f"aborted transactions (no client error) not fully in the log "
                            f"read_uncommitted (txn: records of {full}): {not_in_log}")
    # records of aborted transactions are exactly the difference between the two views
    assert sum(by_txn_ru[t] for t in aborted) == len(seen_ru) - len(seen_rc) - sum(
        by_txn_ru[t] - by_txn_rc[t] for t in unknown)
    assert_no_panic(broker)


# ========================================================================= 2. zombie fencing

def test_zombie_producer_is_fenced(broker):
    topic = unique_topic("txn-zombie")
    create_topic(broker.bootstrap, topic, 2)
    txn_id = unique_topic("zombie")
    errs_a, errs_b = [], []
    delivered, failed = {}, {}

    def on_delivery(err, msg):
        (failed if err is not None else delivered)[msg.value().decode()] = (
            err if err is not None else (msg.partition(), msg.offset()))

    a = txn_producer(broker.bootstrap, txn_id, errs_a)
    a.init_transactions(30)
    a.begin_transaction()
    a.produce(topic, value=b"zombie-1", partition=0, on_delivery=on_delivery)
    assert a.flush(30) == 0
    assert "zombie-1" in delivered, f"first zombie record not acknowledged: {failed}"

    b = txn_producer(broker.bootstrap, txn_id, errs_b)
    b.init_transactions(60)           # bumps the epoch, aborts A's open transaction

    # A carries on as if nothing happened: a partition already in its transaction, a new one.
    a_errors = []
    for value, part in ((b"zombie-2", 0), (b"zombie-3", 1)):
        try:
            a.produce(topic, value=value, partition=part, on_delivery=on_delivery)
        except KafkaException as e:
            a_errors.append(("produce", kafka_error(e)))
    try:
        a.commit_transaction(30)
        a_errors.append(("commit", None))
    except KafkaException as e:
        a_errors.append(("commit", kafka_error(e)))
    commit_err = a_errors[-1][1]
    try:
        a.poll(0)  # serves the delivery reports; librdkafka may raise its fatal error here again
    except KafkaException as e:
        a_errors.append(("poll", kafka_error(e)))
    assert commit_err is not None, (f"zombie producer committed after being fenced; errors "
                                    f"{a_errors}, client errors {errs_a}\n{log_tail(broker)}")
    assert commit_err.fatal(), f"fencing must be fatal for librdkafka, got {commit_err}"
    assert commit_err.code() in FENCED_CODES, f"expected a fencing error, got {commit_err}"
    assert "zombie-2" not in delivered and "zombie-3" not in delivered, (
        f"the broker accepted a fenced producer's records: {delivered}\n{log_tail(broker)}")

    # B runs a full transaction.
    b.begin_transaction()
    for i in range(10):
        b.produce(topic, value=f"b-{i}".encode(), partition=i % 2, on_delivery=on_delivery)
    b.commit_transaction(30)
    b.poll(0)
    assert all(f"b-{i}" in delivered for i in range(10)), failed

    rc = values_of(consume_to_end(broker.bootstrap, topic, 2, "read_committed", timeout=30))
    ru = values_of(consume_to_end(broker.bootstrap, topic, 2, "read_uncommitted", timeout=30))
    rc_vals = sorted(v for _, _, v in rc)
    assert rc_vals == sorted(f"b-{i}" for i in range(10)), (
        f"read_committed should show exactly B's transaction, got {rc}\n{log_tail(broker)}")
    ru_vals = sorted(v for _, _, v in ru)
    assert ru_vals == sorted(["zombie-1"] + [f"b-{i}" for i in range(10)]), (
        f"read_uncommitted should show B's records and the aborted zombie-1, got {ru}")
    assert (0, delivered["zombie-1"][1], "zombie-1") in ru
    assert_no_panic(broker)


# ====================================================================== 3. transaction timeout

def test_transaction_timeout_reaper_aborts(tmp_path):
    broker = Broker(tmp_path / "data", free_port(),
                    extra_env={"KAAS_TRANSACTION_ABORT_CHECK_INTERVAL_MS": "200"}).start()
    try:
        _timeout_scenario(broker)
    finally:
        broker.stop()


STALL_TIMEOUT_MS = 3000


def _timeout_scenario(broker):
    topic = unique_topic("txn-timeout")
    create_topic(broker.bootstrap, topic, 1)
    plain_conf = {"bootstrap.servers": broker.bootstrap, "enable.idempotence": True,
                  "acks": "all", "linger.ms": 1}
    plain = Producer(plain_conf)
    acks = {}

    def on_delivery(err, msg):
        assert err is None, f"delivery of {msg.value()} failed: {err}"
        acks[msg.value().decode()] = msg.offset()

    for i in range(10):
        plain.produce(topic, value=f"before-{i}".encode(), partition=0, on_delivery=on_delivery)
    assert plain.flush(30) == 0

    errs = []
    stalled = txn_producer(broker.bootstrap, unique_topic("stall"), errs,
                           **{"transaction.timeout.ms": STALL_TIMEOUT_MS})
    stalled.init_transactions(30)
    stalled.begin_transaction()
    t0 = time.time()
    for i in range(5):
        stalled.produce(topic, value=f"stalled-{i}".encode(), partition=0,
                        on_delivery=on_delivery)
    assert stalled.flush(30) == 0
    first_stalled = acks["stalled-0"]
    assert first_stalled == 10

    for i in range(10):
        plain.produce(topic, value=f"after-{i}".encode(), partition=0, on_delivery=on_delivery)
    assert plain.flush(30) == 0
    lso_open = end_offsets(broker.bootstrap, topic, 1, "read_committed")[0]
    elapsed = time.time() - t0
    print(f"\nLSO {lso_open} measured {elapsed:.2f}s after the transaction began")
    # Not a conditional check: if the machine is too slow to look inside the timeout, say so.
    assert elapsed < STALL_TIMEOUT_MS / 1000 - 1, (
        f"could not read the LSO within {STALL_TIMEOUT_MS / 1000 - 1}s of beginning the "
        f"transaction (took {elapsed:.2f}s), so cannot check it while the transaction is open")
    # well inside the timeout the transaction is open: the LSO sits at its first offset
    assert lso_open == first_stalled, (
        f"LSO {lso_open} while a transaction starting at {first_stalled} is open")

    # The reaper aborts the transaction: read_committed readers get past it (polling, no sleep).
    hw = end_offsets(broker.bootstrap, topic, 1, "read_uncommitted")
    assert hw[0] >= 25, hw
    rc = values_of(consume_to_end(broker.bootstrap, topic, 1, "read_committed", timeout=30,
                                  targets=hw))
    waited = time.time() - t0
    got = [v for _, _, v in rc]
    expect = [f"before-{i}" for i in range(10)] + [f"after-{i}" for i in range(10)]
    assert got == expect, f"read_committed after the timeout: {got}\n{log_tail(broker)}"
    assert waited >= STALL_TIMEOUT_MS / 1000 - 0.1, (
        f"transaction ended after {waited:.2f}s, before its {STALL_TIMEOUT_MS} ms timeout")
    print(f"read_committed reader passed the stalled transaction {waited:.2f}s after it began")
    lso = end_offsets(broker.bootstrap, topic, 1, "read_committed")
    hw_now = end_offsets(broker.bootstrap, topic, 1, "read_uncommitted")
    assert lso == hw_now and hw_now[0] == hw[0] + 1, (
        f"after the abort marker: LSO {lso}, high watermark {hw_now} (was {hw} before the "
        f"marker)\n{log_tail(broker)}")

    ru = values_of(consume_to_end(broker.bootstrap, topic, 1, "read_uncommitted", timeout=30))
    assert [v for _, _, v in ru] == (expect[:10] + [f"stalled-{i}" for i in range(5)]
                                     + expect[10:]), ru

    # The stalled producer wakes up and tries to commit: it was fenced by the timeout abort.
    try:
        stalled.commit_transaction(30)
        commit_err = None
    except KafkaException as e:
        commit_err = kafka_error(e)
    assert commit_err is not None, (
        f"commit of a transaction the broker aborted on timeout succeeded\n{log_tail(broker)}")
    assert commit_err.code() in FENCED_CODES, f"expected a fencing error, got {commit_err}"
    print(f"stalled producer's commit: {commit_err}")

    rc2 = values_of(consume_to_end(broker.bootstrap, topic, 1, "read_committed", timeout=30))
    assert [v for _, _, v in rc2] == expect, f"after the late commit attempt: {rc2}"
    assert_no_panic(broker)
