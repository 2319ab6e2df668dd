"""Three kaas brokers on one data directory with confluent-kafka (librdkafka), one
broker killed -9 for good in each test: an idempotent producer writes to 6 partitions spread over
the brokers and every acknowledged record is read back exactly once from the survivors; a
transactional producer commits and aborts across them; an exactly-once consume-transform-produce
loop (group offsets sent with the transaction) keeps every input once in its output."""
import threading
import time

from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaError, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import AdminClient

from conftest import Broker, free_port, poll_until
from kaashelpers import (consume_to_end, create_topic, end_offsets, find_coordinator, produce_confluent, run_transactions,
                         unique_topic, wait_topic_ready)

PARTITIONS = 6
N = 6_000
TXNS = 24
TICK = {"KAAS_CLUSTER_TICK_MS": "200", "KAAS_FENCE_POLL_INTERVAL_MS": "200"}


def start_cluster(shared, n=3):
    """`n` brokers on `shared`, returned once every one of them lists all `n` in Metadata: a
    topic created earlier is placed on the brokers its creator saw, and its partitions and the
    coordinators then move while the test runs (librdkafka's committed() does not retry the
    NOT_COORDINATOR a move gives)."""
    brokers = [Broker(shared, free_port(), TICK, node_id=i).start() for i in range(1, n + 1)]
    for b in brokers:
        admin = AdminClient({"bootstrap.servers": b.bootstrap})
        poll_until(lambda: len(admin.list_topics(timeout=5).brokers) == n, 30,
                   f"broker {b.node_id} seeing all {n} brokers")
    return brokers


def killed_for_good(broker):
    """kill -9 without a restart; its log must still hold no panic."""
    broker.kill()
    broker.finished = True
    panics = [line for line in broker.log_problems() if "panicked" in line]
    assert not panics, panics


def test_idempotent_producer_keeps_every_record_when_a_broker_dies(tmp_path):
    shared = tmp_path / "shared"
    brokers = start_cluster(shared)
    bootstrap = ",".join(b.bootstrap for b in brokers)
    topic = unique_topic("cluster")
    create_topic(brokers[0].bootstrap, topic, PARTITIONS)
    wait_topic_ready(bootstrap, topic, PARTITIONS)

    producer = Producer({"bootstrap.servers": bootstrap, "acks": "all", "enable.idempotence": True,
                         "linger.ms": 5, "message.timeout.ms": 60_000,
                         "topic.metadata.refresh.interval.ms": 1_000})
    delivered, errors = {}, []

    def on_delivery(err, msg):
        if err is not None:
            errors.append(err)
        else:
            delivered[msg.key()] = (msg.partition(), msg.offset())

    def produce_all():
        for i in range(N):
            key = f"k{i}".encode()
            while True:
                try:
                    producer.produce(topic, key=key, value=f"v{i}".encode(), partition=i % PARTITIONS,
                                     on_delivery=on_delivery)
                    break
                except BufferError:
                    producer.poll(0.05)
            producer.poll(0)
            if i % 100 == 0:
                time.sleep(0.02)
        producer.flush(90)

    writer = threading.Thread(target=produce_all)
    writer.start()
    poll_until(lambda: len(delivered) > N // 4, 60, "a quarter of the records delivered")
    killed_for_good(brokers[1])
    writer.join(120)
    assert not writer.is_alive(), "the producer did not finish"
    assert not errors, f"{len(errors)} deliveries failed, first: {errors[:3]}"
    assert len(delivered) == N, f"{len(delivered)} of {N} delivered"

    survivors = [brokers[0], brokers[2]]
    read = consume_to_end(",".join(b.bootstrap for b in survivors), topic, PARTITIONS, "read_uncommitted",
                          timeout=90)
    keys = [k for records in read.values() for (_, k, _) in records]
    assert len(keys) == len(set(keys)), "a record was written twice"
    assert set(keys) == set(delivered), (
        f"missing {len(set(delivered) - set(keys))}, unexpected {len(set(keys) - set(delivered))}")
    for p, records in read.items():
        for offset, key, _ in records:
            assert delivered[key] == (p, offset), f"{key} acknowledged at {delivered[key]}, read at {(p, offset)}"


def transaction_coordinator(bootstrap, transactional_id):
    """The node running `transactional_id`'s transaction shard, once one does."""
    def found():
        error, node = find_coordinator(bootstrap, transactional_id)
        return node if error == 0 else None
    return poll_until(found, 30, f"a coordinator for {transactional_id}")


def test_transactions_across_brokers_survive_a_killed_partition_leader(tmp_path):
    """A transactional producer (librdkafka, TV1: explicit AddPartitionsToTxn, partitions verified
    by their leaders with the coordinator over the wire, markers sent over the wire) writes one
    record per partition per transaction over three brokers, aborting every third; a broker that
    leads partitions but not the transaction's coordinator is killed -9 for good half-way. read_committed sees
    every committed record once and nothing aborted."""
    shared = tmp_path / "shared"
    brokers = start_cluster(shared)
    bootstrap = ",".join(b.bootstrap for b in brokers)
    topic = unique_topic("cluster-txn")
    create_topic(brokers[0].bootstrap, topic, PARTITIONS)
    wait_topic_ready(bootstrap, topic, PARTITIONS)
    client_errors = []
    conf = {"bootstrap.servers": bootstrap, "transactional.id": unique_topic("ctx"), "acks": "all",
            "linger.ms": 5, "transaction.timeout.ms": 60_000, "error_cb": client_errors.append,
            "topic.metadata.refresh.interval.ms": 1_000}
    producer = Producer(conf)
    producer.init_transactions(30)
    coordinator = transaction_coordinator(bootstrap, conf["transactional.id"])
    victim = next(b for b in brokers if b.node_id != coordinator)
    outcome = run_transactions(producer, topic, PARTITIONS, TXNS,
                               before=lambda t: t == TXNS // 2 and killed_for_good(victim))
    survivors = ",".join(b.bootstrap for b in brokers if b is not victim)
    read = consume_to_end(survivors, topic, PARTITIONS, "read_committed", timeout=90)
    values = [v.decode() for records in read.values() for (_, _, v) in records]
    assert len(values) == len(set(values)), "a committed record was read twice"
    expected = {f"t{t}-p{p}" for t, op in outcome.items() if op == "commit" for p in range(PARTITIONS)}
    assert set(values) == expected, (
        f"missing {sorted(expected - set(values))[:10]}, unexpected {sorted(set(values) - expected)[:10]}")
    assert sum(1 for op in outcome.values() if op == "commit") >= TXNS // 2, outcome


def _rewind_to_committed(consumer):
    """After an abort: back to the group's committed offsets (the transaction's reads redone)."""
    assigned = consumer.assignment()
    if not assigned:
        return
    for tp in consumer.committed(assigned, timeout=30):
        consumer.seek(TopicPartition(tp.topic, tp.partition, tp.offset if tp.offset >= 0 else OFFSET_BEGINNING))


def test_consume_transform_produce_across_brokers_survives_a_killed_broker(tmp_path):
    """Exactly-once consume-transform-produce with confluent-kafka over three brokers: a
    read_committed group consumer and a transactional producer that sends the consumer's
    positions with send_offsets_to_transaction (the offsets commit with the transaction, their
    markers reach the group coordinator's broker), aborting (and rewinding) every fourth
    transaction; a broker running neither coordinator is killed -9 half-way, for good. Every
    input record is in the output exactly once (read_committed) and the group's committed
    offsets are the input's end offsets."""
    shared = tmp_path / "shared"
    brokers = start_cluster(shared)
    bootstrap = ",".join(b.bootstrap for b in brokers)
    in_topic, out_topic = unique_topic("ctp-in"), unique_topic("ctp-out")
    for t in (in_topic, out_topic):
        create_topic(brokers[0].bootstrap, t, PARTITIONS)
        wait_topic_ready(bootstrap, t, PARTITIONS)
    total = 1_200
    produce_confluent(bootstrap, in_topic, [(f"k{i}", f"v{i}") for i in range(total)])
    inputs = end_offsets(bootstrap, in_topic, PARTITIONS)
    assert sum(inputs.values()) == total, inputs

    group, txn_id = unique_topic("ctp-group"), unique_topic("ctp-txn")
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": group, "isolation.level": "read_committed",
                         "enable.auto.commit": False, "auto.offset.reset": "earliest",
                         "topic.metadata.refresh.interval.ms": 1_000})
    producer = Producer({"bootstrap.servers": bootstrap, "transactional.id": txn_id, "linger.ms": 5,
                         "transaction.timeout.ms": 60_000, "topic.metadata.refresh.interval.ms": 1_000})
    producer.init_transactions(30)
    consumer.subscribe([in_topic])
    coordinators = {transaction_coordinator(bootstrap, txn_id)}
    coordinators.add(poll_until(lambda: (lambda r: r[1] if r[0] == 0 else None)(find_coordinator(bootstrap, group, 0)),
                                30, "the group's coordinator"))
    victim = next(b for b in brokers if b.node_id not in coordinators)
    survivors = ",".join(b.bootstrap for b in brokers if b is not victim)
    done, rounds, aborted, killed = 0, 0, 0, False
    deadline = time.time() + 240
    try:
        while sum(inputs.values()) > _committed_total(consumer, in_topic):
            assert time.time() < deadline, f"only {_committed_total(consumer, in_topic)} of {total} committed"
            msgs = [m for m in consumer.consume(100, timeout=1.0) if m.error() is None]
            if not msgs:
                continue
            rounds += 1
            abort = rounds % 4 == 0
            try:
                producer.begin_transaction()
                for m in msgs:
                    while True:
                        try:
                            producer.produce(out_topic, key=m.key(), value=b"T:" + m.value(), partition=m.partition())
                            break
                        except BufferError:
                            producer.poll(0.05)
                producer.send_offsets_to_transaction(consumer.position(consumer.assignment()),
                                                     consumer.consumer_group_metadata(), 30)
                if abort:
                    raise KafkaException(KafkaError(KafkaError._APPLICATION, "abort on purpose"))
                producer.commit_transaction(60)
                done += len(msgs)
            except KafkaException as e:
                err = e.args[0]
                assert not err.fatal(), f"fatal: {err}"
                producer.abort_transaction(60)
                aborted += 1
                _rewind_to_committed(consumer)
            if not killed and done >= total // 2:
                killed_for_good(victim)
                killed = True
    finally:
        consumer.close()
    assert killed and aborted > 0, (killed, aborted)
    read = consume_to_end(survivors, out_topic, PARTITIONS, "read_committed", timeout=90)
    values = [v for records in read.values() for (_, _, v) in records]
    assert len(values) == len(set(values)), "an input record was transformed twice"
    assert set(values) == {f"T:v{i}".encode() for i in range(total)}, (
        f"{len(set(values))} distinct outputs of {total}")


def _committed_total(consumer, topic):
    """The sum of the group's committed offsets for `topic` (what a restart would resume from)."""
    parts = [TopicPartition(topic, p) for p in range(PARTITIONS)]
    return sum(max(tp.offset, 0) for tp in consumer.committed(parts, timeout=30))
