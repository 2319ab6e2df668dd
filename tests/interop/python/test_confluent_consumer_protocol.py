"""The KIP-848 consumer group protocol with librdkafka (confluent-kafka 2.16, librdkafka 2.16:
group.protocol=consumer is GA there) against the real kaas: two consumers of one group split
a 6-partition topic between them (disjoint, complete), read every record exactly once between
them, and when one closes the other takes over all partitions.
"""
import time

from confluent_kafka import Consumer

from kaashelpers import assert_no_panic, create_topic, log_tail, produce_confluent, unique_topic

PARTS = 6


def _consumer(bootstrap, group, name, errors):
    return Consumer({
        "bootstrap.servers": bootstrap,
        "group.id": group,
        "client.id": name,
        "group.protocol": "consumer",
        "enable.auto.commit": False,
        "auto.offset.reset": "earliest",
        "fetch.wait.max.ms": 100,
        "error_cb": errors.append,
    })


def _poll_all(consumers, seen, dups, until, timeout):
    deadline = time.time() + timeout
    while time.time() < deadline and not until():
        for c in consumers:
            m = c.poll(0.05)
            if m is None or m.error():
                continue
            key = (m.partition(), m.offset())
            if key in seen:
                dups.append(key)
            seen[key] = m.value()
            c.commit(message=m, asynchronous=False)


def test_librdkafka_consumer_protocol_split_and_takeover(broker):
    topic = unique_topic("rdk-848")
    group = unique_topic("rdk-848-g")
    create_topic(broker.bootstrap, topic, PARTS)
    n = 3000
    produce_confluent(broker.bootstrap, topic, [(f"k{i}".encode(), f"v{i}".encode()) for i in range(n)])
    errors = []
    a = _consumer(broker.bootstrap, group, "rdk-a", errors)
    b = _consumer(broker.bootstrap, group, "rdk-b", errors)
    seen, dups = {}, []
    try:
        a.subscribe([topic])
        b.subscribe([topic])

        def split():
            pa = {tp.partition for tp in a.assignment()}
            pb = {tp.partition for tp in b.assignment()}
            return pa and pb and not (pa & pb) and (pa | pb) == set(range(PARTS))

        _poll_all([a, b], seen, dups, lambda: split() and len(seen) == n, 90)
        ctx = f"errors {errors}\n" + log_tail(broker, 60)
        assert split(), f"no split: {a.assignment()} {b.assignment()}\n{ctx}"
        pa = {tp.partition for tp in a.assignment()}
        assert len(pa) == PARTS // 2, ctx
        assert len(seen) == n and not dups, ctx
        assert sorted(v.decode() for v in seen.values()) == sorted(f"v{i}" for i in range(n)), ctx

        b.close()
        produce_confluent(broker.bootstrap, topic, [(f"k{i}".encode(), f"w{i}".encode()) for i in range(600)])
        _poll_all([a], seen, dups,
                  lambda: len(a.assignment()) == PARTS and len(seen) == n + 600, 90)
        ctx = f"errors {errors}\n" + log_tail(broker, 60)
        assert {tp.partition for tp in a.assignment()} == set(range(PARTS)), ctx
        assert len(seen) == n + 600 and not dups, ctx
    finally:
        a.close()
    assert broker.alive()
    assert_no_panic(broker)
