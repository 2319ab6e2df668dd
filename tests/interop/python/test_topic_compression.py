"""A topic's compression.type, as Apache Kafka's LogValidator applies it: a topic that names a
codec (or `uncompressed`) stores every batch in it, whatever codec the producer used; the
records (keys, values, headers, offsets, the idempotent producer's sequences, transactions) are
unchanged. Producers: librdkafka (confluent-kafka) with each of its five codecs, idempotent, and
transactional; readers: librdkafka (every topic) and Apache Kafka's Java console consumer (the
lz4 and snappy topics: Java's own lz4 and xerial-snappy readers). The codec each batch is stored with is read from the segment files,
which have Kafka's on-disk format. A batch that outgrows max.message.bytes once recompressed is
MESSAGE_TOO_LARGE, as in Kafka (UnifiedLog.append checks the recompressed size).

`scenario(bootstrap, log_dir_of)` is broker-neutral: the same checks passed against Apache Kafka
4.4 (tests/interop/python/apache_kafka.py, logs/<topic>-0), by hand, 2026-12-07."""
import struct

from confluent_kafka import KafkaError, Producer
from confluent_kafka.admin import AdminClient, NewTopic

import javaharness
from kaashelpers import consume_to_end, produce_confluent, unique_topic, wait_topic_ready

TARGETS = {"uncompressed": 0, "gzip": 1, "snappy": 2, "lz4": 3, "zstd": 4}
PRODUCER_CODECS = ["none", "gzip", "snappy", "lz4", "zstd"]
PER_CODEC = 40
ATTR_CONTROL = 0x20


def stored_codecs(log_dir):
    """{codec id} of the data batches in a partition directory's segment files (control
    batches, the transaction markers, are never compressed and are left out)."""
    codecs = set()
    for seg in sorted(log_dir.glob("*.log")):
        data = seg.read_bytes()
        at = 0
        while at + 61 <= len(data):
            length = struct.unpack_from(">i", data, at + 8)[0]
            magic = data[at + 16]
            if length <= 0 or magic != 2:
                break   # kaas writes zeros ahead of its appends
            attributes = struct.unpack_from(">h", data, at + 21)[0]
            if not attributes & ATTR_CONTROL:
                codecs.add(attributes & 0x07)
            at += 12 + length
    return codecs


def create_topics(bootstrap, configs_by_name):
    admin = AdminClient({"bootstrap.servers": bootstrap})
    futures = admin.create_topics(
        [NewTopic(n, 1, 1, config=c) for n, c in configs_by_name.items()], request_timeout=30)
    for f in futures.values():
        f.result(30)
    for n in configs_by_name:
        wait_topic_ready(bootstrap, n, 1, admin=admin)


def records_for(codec):
    return [(f"{codec}-{i}".encode(), (f"{codec} value {i} " * (1 + i % 9)).encode())
            for i in range(PER_CODEC)]


# The topics the Java console consumer reads too (one JVM each): lz4 and snappy, the codecs whose
# framing Java reads with its own code (KafkaLZ4BlockInputStream, xerial's snappy streams);
# librdkafka reads every topic.
JAVA_READS = ("lz4", "snappy")


def scenario(bootstrap, log_dir_of):
    prefix = unique_topic("comp")
    topics = {f"{prefix}-{t}": {"compression.type": t} for t in TARGETS}
    topics[f"{prefix}-zstd"]["compression.zstd.level"] = "10"
    txn_topic, small = f"{prefix}-txn", f"{prefix}-small"
    topics[txn_topic] = {"compression.type": "gzip"}
    topics[small] = {"compression.type": "uncompressed", "max.message.bytes": "20000"}
    create_topics(bootstrap, topics)

    expected = []
    for codec in PRODUCER_CODECS:
        recs = records_for(codec)
        for t in TARGETS:
            acked = produce_confluent(bootstrap, f"{prefix}-{t}", recs,
                                      conf={"compression.type": codec, "linger.ms": 20})
            assert [a[3] for a in acked] == list(range(len(expected), len(expected) + len(recs))), \
                f"{codec} into {t}: offsets {[a[3] for a in acked][:5]}..."
        expected += recs

    for t, codec_id in TARGETS.items():
        topic = f"{prefix}-{t}"
        got = consume_to_end(bootstrap, topic, 1, "read_uncommitted")[0]
        assert [(o, k, v) for o, k, v in got] == [(i, k, v) for i, (k, v) in enumerate(expected)], \
            f"{topic}: records differ from those sent"
        assert stored_codecs(log_dir_of(topic)) == {codec_id}, \
            f"{topic}: stored codecs {stored_codecs(log_dir_of(topic))}, wanted {codec_id}"
        if t not in JAVA_READS:
            continue
        java = javaharness.console_consumer(
            bootstrap, topic, "--from-beginning", "--max-messages", str(len(expected)),
            "--property", "print.key=true", "--property", "key.separator=|",
            "--timeout-ms", "30000")
        lines = [line for line in java.stdout.splitlines() if "|" in line]
        assert lines == [f"{k.decode()}|{v.decode()}" for k, v in expected], (
            f"{topic}: the Java console consumer read {len(lines)} of {len(expected)} records "
            f"(exit {java.returncode}): {java.stderr[-1500:]}")

    # Transactions: an aborted and a committed transaction of lz4 batches into a gzip topic.
    p = Producer({"bootstrap.servers": bootstrap, "transactional.id": f"{prefix}-tx",
                  "compression.type": "lz4", "linger.ms": 5})
    p.init_transactions(30)
    for outcome, n in (("abort", 15), ("commit", 25)):
        p.begin_transaction()
        for i in range(n):
            p.produce(txn_topic, key=f"{outcome}-{i}".encode(), value=f"{outcome} {i} ".encode() * 20)
        p.flush(30)
        (p.abort_transaction if outcome == "abort" else p.commit_transaction)(30)
    committed = consume_to_end(bootstrap, txn_topic, 1, "read_committed")[0]
    assert [k.decode() for _, k, _ in committed] == [f"commit-{i}" for i in range(25)]
    assert stored_codecs(log_dir_of(txn_topic)) == {TARGETS["gzip"]}

    # 100,000 bytes that zstd sends in a few hundred: over max.message.bytes once stored
    # uncompressed.
    errors = []
    p = Producer({"bootstrap.servers": bootstrap, "compression.type": "zstd",
                  "enable.idempotence": True})
    p.produce(small, key=b"k", value=b"a" * 100_000,
              on_delivery=lambda e, m: errors.append(e.code() if e else None))
    p.flush(30)
    assert errors == [KafkaError.MSG_SIZE_TOO_LARGE], errors
    ok = produce_confluent(bootstrap, small, [(b"k", b"b" * 1000)], conf={"compression.type": "zstd"})
    assert ok[0][3] == 0
    assert stored_codecs(log_dir_of(small)) == {TARGETS["uncompressed"]}


def test_topic_compression_type_recompresses_every_codec(broker):
    javaharness.ensure_built()
    scenario(broker.bootstrap, lambda topic: broker.data_dir / "topics" / f"{topic}-0")
