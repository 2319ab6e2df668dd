"""librdkafka idempotent producer (acks=all) against a broker that is SIGKILLed twice
mid-stream and restarted on the same data dir: once when the producer reaches message
10,000, again at message 20,000 once it is delivering to the restarted broker again.

Checks: no fatal producer error; every acknowledged message is in the log exactly once,
at the partition/offset its delivery report gave; nothing is duplicated; per key the
counters rise strictly in read order.
"""
import collections
import threading
import time

from confluent_kafka import KafkaException, Producer

from kaashelpers import (assert_no_panic, consume_to_end, create_topic, log_tail,
                         unique_topic)

TOTAL = 30_000
KEYS = 16
PARTITIONS = 3
RATE = 4_000                      # messages per second, steady
KILL_AT = (10_000, 20_000)        # message index at which the broker is SIGKILLed
DOWNTIME = 1.0                    # seconds the broker stays dead each time
FLUSH_TIMEOUT = 90.0
RESUME_TIMEOUT = 30.0             # max wait for acknowledgements after a restart


def guarded(call, raised, *args):
    """Run a producer call; a KafkaException (librdkafka raises one for a fatal error)
    is recorded in `raised` instead of propagating. Returns False if it raised."""
    try:
        call(*args)
        return True
    except KafkaException as e:
        raised.append(e)
        return False


def produce_paced(producer, topic, on_delivery, kill_events, counters, produced,
                  produced_count, start, raised):
    """Produce TOTAL messages at RATE/s, firing the kill events at KILL_AT.
    Stops early (returning False) when the producer raises a KafkaException."""
    for i in range(TOTAL):
        for j, at in enumerate(KILL_AT):
            if i == at:
                kill_events[j].set()
        key = f"key-{i % KEYS:02d}"
        n = counters[key]
        counters[key] += 1
        value = f"{key}:{n}"
        produced.append((key, n, value))
        produced_count[0] = i + 1
        while True:
            try:
                producer.produce(topic, key=key.encode(), value=value.encode(),
                                 on_delivery=on_delivery)
                break
            except BufferError:
                if not guarded(producer.poll, raised, 0.05):
                    return False
            except KafkaException as e:   # e.g. the producer went fatal
                raised.append(e)
                return False
        if i % 50 == 0:
            if not guarded(producer.poll, raised, 0):
                return False
            lag = start + i / RATE - time.time()
            if lag > 0:
                time.sleep(lag)       # pacing only
    return True


def test_idempotent_producer_survives_sigkill(broker):
    topic = unique_topic("idem-crash")
    create_topic(broker.bootstrap, topic, PARTITIONS)

    acked = {}             # value -> (partition, offset)
    failed = {}            # value -> KafkaError
    client_errors = []     # error_cb reports (fatal or not)
    lock = threading.Lock()

    def on_delivery(err, msg):
        v = msg.value().decode()
        with lock:
            if err is None:
                acked[v] = (msg.partition(), msg.offset())
            else:
                failed[v] = err

    producer = Producer({
        "bootstrap.servers": broker.bootstrap,
        "enable.idempotence": True,
        "acks": "all",
        "linger.ms": 5,
        "message.timeout.ms": 120_000,
        "reconnect.backoff.ms": 50,
        "reconnect.backoff.max.ms": 500,
        "error_cb": client_errors.append,
    })

    # The killer thread crashes and restarts the broker when the producer reaches each
    # KILL_AT index, while the producer keeps producing at its steady pace.
    kill_events = [threading.Event() for _ in KILL_AT]
    stop = threading.Event()          # set when the test bails out early
    killer_errors = []
    crash_log = []

    def killer():
        try:
            acked_before = None
            for ev in kill_events:
                wait_deadline = time.time() + 60
                while not ev.wait(0.1):
                    if stop.is_set():
                        return
                    if time.time() > wait_deadline:
                        killer_errors.append("producer never reached the kill point")
                        return
                if acked_before is not None:
                    # crash again only once the producer is delivering to the restarted
                    # broker, so the second crash hits a recovered, busy producer
                    deadline = time.time() + RESUME_TIMEOUT
                    while True:
                        with lock:
                            n = len(acked)
                        if n >= acked_before + 500 or stop.is_set():
                            break
                        if time.time() > deadline:
                            killer_errors.append(
                                f"no progress after restart: {n} acknowledged, "
                                f"{acked_before} before the crash, after {RESUME_TIMEOUT}s")
                            return
                        time.sleep(0.02)
                if stop.is_set():
                    return
                with lock:
                    acked_before = len(acked)
                broker.kill()
                crash_log.append(("killed", round(time.time() - start, 2),
                                  f"produced={produced_count[0]} acked={acked_before}"))
                time.sleep(DOWNTIME)          # the outage itself, not a synchronisation
                broker.start()                # waits until the port listens again
                crash_log.append(("restarted", round(time.time() - start, 2)))
        except Exception as e:  # noqa: BLE001 - surfaced in the assertion below
            killer_errors.append(repr(e))

    counters = collections.Counter()
    produced = []                       # (key, counter, value) in produce order
    produced_count = [0]
    start = time.time()
    raised = []                         # KafkaExceptions from produce/poll/flush
    t = threading.Thread(target=killer, daemon=True)
    t.start()
    try:
        ok = produce_paced(producer, topic, on_delivery, kill_events, counters,
                           produced, produced_count, start, raised)
        # keep serving delivery reports (the killer thread watches them) until it is done
        join_deadline = time.time() + 2 * RESUME_TIMEOUT + 60
        while ok and t.is_alive() and time.time() < join_deadline:
            ok = guarded(producer.poll, raised, 0.05)
    finally:
        stop.set()        # no-op when the killer already finished
        t.join(timeout=60)
    assert not t.is_alive(), "killer thread did not finish"
    guarded(producer.poll, raised, 0)   # serve pending error_cb calls

    def check_not_fatal():
        fatal = [e for e in client_errors if e.fatal()]
        fatal += [e.args[0] for e in raised if e.args and e.args[0].fatal()]
        assert not fatal, ("idempotent producer hit a FATAL error (broker bug): "
                           f"{fatal}\nall client errors: {client_errors[:20]}\n"
                           f"crashes: {crash_log}\nbroker log tail:\n{log_tail(broker, 150)}")
        assert not raised, (f"producer raised: {raised}; client errors: "
                            f"{client_errors[:20]}\n{log_tail(broker)}")

    check_not_fatal()
    assert not killer_errors, f"broker restart failed: {killer_errors}\n{log_tail(broker)}"
    assert broker.alive(), "broker not running after the last restart:\n" + log_tail(broker)

    deadline = time.time() + FLUSH_TIMEOUT
    while len(producer) > 0 and time.time() < deadline and not raised:
        guarded(producer.flush, raised, 1.0)
    remaining = len(producer)
    guarded(producer.poll, raised, 0)
    check_not_fatal()
    assert remaining == 0, (f"{remaining} messages never got a delivery report within "
                            f"{FLUSH_TIMEOUT}s; client errors: {client_errors[:20]}\n"
                            f"{log_tail(broker)}")
    assert len(acked) + len(failed) == TOTAL
    assert len(acked) > 0, f"nothing acknowledged; failures: {list(failed.items())[:5]}"

    # ---- read everything back
    by_partition = consume_to_end(broker.bootstrap, topic, PARTITIONS, "read_uncommitted", timeout=90)

    produced_values = {v for _, _, v in produced}
    seen = collections.Counter()
    where = {}
    key_partition = {}
    order_errors = []
    strangers = []
    for p, recs in by_partition.items():
        last = {}
        prev_offset = -1
        for offset, k, v in recs:
            assert offset > prev_offset, f"partition {p}: offset {offset} after {prev_offset}"
            prev_offset = offset
            v = v.decode()
            k = k.decode() if k is not None else None
            if v not in produced_values:
                strangers.append((p, offset, k, v))
                continue
            seen[v] += 1
            where.setdefault(v, (p, offset))
            key, n = v.rsplit(":", 1)
            n = int(n)
            assert k == key, f"record at {p}/{offset} has key {k!r} but value {v!r}"
            if key_partition.setdefault(key, p) != p:
                order_errors.append(f"key {key} found in partitions {key_partition[key]} and {p}")
            if key in last and n <= last[key]:
                order_errors.append(f"partition {p} offset {offset}: {key} counter {n} "
                                    f"after {last[key]}")
            last[key] = n

    duplicates = {v: c for v, c in seen.items() if c > 1}
    missing = sorted(v for v in acked if seen[v] == 0)
    misplaced = [(v, acked[v], where[v]) for v in acked if v in where and where[v] != acked[v]]
    summary = (f"acked={len(acked)} failed={len(failed)} read={sum(seen.values())} "
               f"distinct={len(seen)} crashes={crash_log}")

    print(summary)
    assert not strangers, f"records that were never produced: {strangers[:10]} ({summary})"
    assert not duplicates, (f"{len(duplicates)} duplicated messages, e.g. "
                            f"{list(duplicates.items())[:10]} ({summary})")
    assert not missing, (f"{len(missing)} acknowledged messages missing, e.g. {missing[:10]} "
                         f"({summary})\n{log_tail(broker)}")
    assert not misplaced, (f"{len(misplaced)} acknowledged messages not at the acknowledged "
                           f"partition/offset, e.g. {misplaced[:10]} ({summary})")
    assert not order_errors, f"per-key order broken: {order_errors[:10]} ({summary})"
    # A correct broker lets the idempotent producer deliver everything across restarts
    # (message.timeout.ms is 120 s, the outages ~1 s); failures point at broker trouble.
    assert not failed, (f"{len(failed)} deliveries failed, e.g. {list(failed.items())[:5]} "
                        f"({summary}); client errors: {client_errors[:10]}")
    assert_no_panic(broker)
