"""fetch.max.bytes as KIP-74 bounds it (librdkafka's own test 0082_fetch_max_bytes, in Python):
three partitions each holding records of about 900 KB, and a consumer whose fetch.max.bytes is
1,000,000 and whose receive.message.max.bytes is 1,000,512. Only the first partition that returns
data may return a batch larger than what is left of fetch.max.bytes; a broker that returned a
whole first batch for every partition sent a 1.8 MB answer, which librdkafka refuses ("Invalid
response size"), so the consumer never read anything. Every record must be read."""
import time

from confluent_kafka import Consumer, KafkaError, Producer, TopicPartition

from kaashelpers import create_topic, unique_topic

PARTITIONS, PER_PARTITION, SIZE = 3, 4, 900_000


def test_fetch_max_bytes_bounds_the_answer_past_its_first_partition(broker):
    topic = unique_topic("fmb")
    create_topic(broker.bootstrap, topic, PARTITIONS)
    prod = Producer({"bootstrap.servers": broker.bootstrap, "linger.ms": 0, "message.max.bytes": 1_000_000,
                     "enable.idempotence": True})
    errors = []
    for p in range(PARTITIONS):
        for i in range(PER_PARTITION):
            prod.produce(topic, key=f"{p}-{i}".encode(), value=bytes([65 + p]) * SIZE, partition=p,
                         on_delivery=lambda e, m: errors.append(e))
            prod.flush(30)
    assert errors == [None] * (PARTITIONS * PER_PARTITION), errors
    c = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": unique_topic("g"),
                  "auto.offset.reset": "earliest", "enable.partition.eof": True,
                  "fetch.max.bytes": 1_000_000, "receive.message.max.bytes": 1_000_512,
                  "max.partition.fetch.bytes": 1_000_000})
    c.assign([TopicPartition(topic, p, 0) for p in range(PARTITIONS)])
    got, eof, problems = {}, set(), []
    deadline = time.time() + 60
    while len(eof) < PARTITIONS and time.time() < deadline:
        m = c.poll(0.5)
        if m is None:
            continue
        if m.error():
            if m.error().code() == KafkaError._PARTITION_EOF:
                if got.get(m.partition(), 0) == PER_PARTITION:
                    eof.add(m.partition())
            else:
                problems.append(str(m.error()))
            continue
        assert m.value() == bytes([65 + m.partition()]) * SIZE
        got[m.partition()] = got.get(m.partition(), 0) + 1
    c.close()
    assert got == {p: PER_PARTITION for p in range(PARTITIONS)}, f"read {got}; consumer errors {problems[:3]}"
