"""kafka-python 3.x: idempotent KafkaProducer (its default) writes, KafkaConsumer with
assign() and no group reads back; keys, values, headers, offsets and per-partition
order are checked. Run uncompressed and gzip-compressed."""
import time

import pytest
from kafka import KafkaConsumer, KafkaProducer, TopicPartition
from kafka.admin import KafkaAdminClient, NewTopic

from kaashelpers import assert_no_panic, log_tail, unique_topic, wait_topic_ready

N = 3_000
PARTITIONS = 2


@pytest.mark.parametrize("compression", [None, "gzip"])
def test_kafka_python_roundtrip(broker, compression):
    topic = unique_topic("kpy")
    admin = KafkaAdminClient(bootstrap_servers=broker.bootstrap, client_id="kaas-kpy-admin")
    try:
        admin.create_topics([NewTopic(topic, num_partitions=PARTITIONS, replication_factor=1)],
                            timeout_ms=30_000)
    finally:
        admin.close()
    wait_topic_ready(broker.bootstrap, topic, PARTITIONS)

    producer = KafkaProducer(bootstrap_servers=broker.bootstrap, client_id="kaas-kpy-producer",
                             compression_type=compression, linger_ms=5)
    try:
        assert producer.config["enable_idempotence"] is True, \
            "kafka-python turned idempotence off (it does so for brokers it thinks are < 0.11)"
        assert producer.config["acks"] == -1
        sent = []   # (partition, key, value, headers, future)
        for i in range(N):
            part = i % PARTITIONS
            key = f"k{i % 7}".encode()
            value = f"value-{i}-".encode() + bytes([i % 251]) * (i % 40)
            headers = [("idx", str(i).encode()), ("empty", b"")]
            fut = producer.send(topic, key=key, value=value, partition=part, headers=headers)
            sent.append((part, key, value, headers, fut))
        producer.flush(timeout=60)
        metas = [s[4].get(timeout=30) for s in sent]
        # an idempotent kafka-python producer always has a transaction manager holding the
        # producer id the broker gave it
        tm = getattr(producer, "_transaction_manager", None)
        assert tm is not None, "idempotent kafka-python producer without a transaction manager"
        assert tm.producer_id_and_epoch.producer_id >= 0, "no producer id from InitProducerId"
    finally:
        producer.close(timeout=10)

    expected = {p: [] for p in range(PARTITIONS)}
    for (part, key, value, headers, _), md in zip(sent, metas):
        assert md.topic == topic and md.partition == part
        expected[part].append((md.offset, key, value, headers))
    for p, recs in expected.items():
        offsets = [r[0] for r in recs]
        assert offsets == list(range(len(recs))), \
            f"partition {p}: acknowledged offsets not 0..n-1 in send order: {offsets[:20]}..."

    consumer = KafkaConsumer(bootstrap_servers=broker.bootstrap, client_id="kaas-kpy-consumer",
                             group_id=None, enable_auto_commit=False,
                             auto_offset_reset="earliest", fetch_max_wait_ms=100)
    got = {p: [] for p in range(PARTITIONS)}
    try:
        tps = [TopicPartition(topic, p) for p in range(PARTITIONS)]
        consumer.assign(tps)
        consumer.seek_to_beginning(*tps)
        deadline = time.time() + 60
        while sum(len(v) for v in got.values()) < N and time.time() < deadline:
            batch = consumer.poll(timeout_ms=500)
            for tp, records in batch.items():
                got[tp.partition].extend(records)
        # anything beyond N would be a duplicate: give it one more fetch round to show up
        for tp, records in consumer.poll(timeout_ms=300).items():
            got[tp.partition].extend(records)
    finally:
        consumer.close()

    for p in range(PARTITIONS):
        want = expected[p]
        have = got[p]
        assert len(have) == len(want), (f"partition {p}: read {len(have)} records, "
                                         f"expected {len(want)}\n{log_tail(broker)}")
        for (offset, key, value, headers), rec in zip(want, have):
            assert rec.offset == offset, f"partition {p}: offset {rec.offset}, expected {offset}"
            assert rec.key == key, f"partition {p} offset {offset}: key {rec.key!r} != {key!r}"
            assert rec.value == value, f"partition {p} offset {offset}: value differs"
            assert list(rec.headers) == headers, \
                f"partition {p} offset {offset}: headers {rec.headers} != {headers}"
    assert_no_panic(broker)
