"""Exactly-once and groups over the secured listeners (docs/security.md), with the clients the
issue names: the Java client's consume-transform-produce (sendOffsetsToTransaction, a KIP-848
group, fenced halfway by a second instance) over SASL_SSL with SCRAM-SHA-512, a KIP-848 group
over SSL with a client certificate; librdkafka's consume-transform-produce with the group's
offsets in each transaction over SASL_SSL with SCRAM-SHA-512 (a classic and a KIP-848 group), read back read_committed; and
Apache Kafka's console producer and consumer with a client properties file. The broker is
test_security.py's: PLAINTEXT for the harness, SSL, SASL_PLAINTEXT and SASL_SSL.
"""
import subprocess
import time
import uuid

import pytest
from confluent_kafka import Consumer, KafkaError, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

import javaharness as jh
from test_security import (PLAIN_PASSWORD, PLAIN_USER, SCRAM_PASSWORD, SCRAM_USER, certs,  # noqa: F401
                           java_client_config, librdkafka_config, secured)


def test_java_exactly_once_copy_with_a_kip848_group_over_sasl_ssl(secured, certs, tmp_path):
    bootstrap, env = java_client_config(tmp_path, certs, secured, "SASL_SSL", "SCRAM-SHA-512", SCRAM_USER,
                                        SCRAM_PASSWORD)
    tag = uuid.uuid4().hex[:6]
    r = jh.ctp(bootstrap, f"in-{tag}", f"out-{tag}", f"g-{tag}", f"t-{tag}", 2000, 3, protocol="consumer", env=env)
    assert r.run.returncode == 0 and r.summary and r.summary["ok"], r.run.describe()


def test_java_kip848_group_over_ssl_with_a_client_certificate(secured, certs, tmp_path):
    bootstrap, env = java_client_config(tmp_path, certs, secured, "SSL", cert=True)
    tag = uuid.uuid4().hex[:6]
    g = jh.group_consume(bootstrap, f"ssl-{tag}", f"g-{tag}", 1000, 3, protocol="consumer", env=env)
    assert g.run.returncode == 0 and g.summary and g.summary["ok"], g.run.describe()


@pytest.mark.parametrize("group_protocol", ["classic", "consumer"])
def test_librdkafka_consume_transform_produce_over_sasl_ssl(secured, certs, group_protocol):
    conf = librdkafka_config(secured, certs, "SASL_SSL", "SCRAM-SHA-512", SCRAM_USER, SCRAM_PASSWORD)
    tag = uuid.uuid4().hex[:6]
    src, out, group = f"ctp-in-{tag}", f"ctp-out-{tag}", f"ctp-g-{tag}"
    admin = AdminClient(conf)
    for f in admin.create_topics([NewTopic(src, 3, 1), NewTopic(out, 3, 1)]).values():
        f.result(30)
    p = Producer({**conf, "enable.idempotence": True})
    for i in range(300):
        p.produce(src, key=f"k{i}", value=f"v{i}", partition=i % 3)
    assert p.flush(30) == 0
    consumer = Consumer({**conf, "group.id": group, "group.protocol": group_protocol, "enable.auto.commit": False,
                         "auto.offset.reset": "earliest", "isolation.level": "read_committed"})
    consumer.subscribe([src])
    tx = Producer({**conf, "transactional.id": f"ctp-{tag}"})
    tx.init_transactions(30)
    copied, deadline = 0, time.time() + 90
    while copied < 300 and time.time() < deadline:
        batch = [m for m in consumer.consume(100, 1.0) if not m.error()]
        if not batch:
            continue
        tx.begin_transaction()
        for m in batch:
            tx.produce(out, key=m.key(), value=m.value(), partition=m.partition())
        tx.send_offsets_to_transaction(consumer.position(consumer.assignment()), consumer.consumer_group_metadata(),
                                       30)
        tx.commit_transaction(30)
        copied += len(batch)
    consumer.close()
    assert copied == 300, f"copied {copied} of 300"
    # The output, read_committed, holds every input once; the group's offsets are at the end.
    reader = Consumer({**conf, "group.id": f"r-{tag}", "isolation.level": "read_committed",
                       "enable.partition.eof": True})
    reader.assign([TopicPartition(out, part, 0) for part in range(3)])
    values, eof, deadline = [], set(), time.time() + 60
    while len(eof) < 3 and time.time() < deadline:
        m = reader.poll(1.0)
        if m is None:
            continue
        if m.error():
            if m.error().code() == KafkaError._PARTITION_EOF:
                eof.add(m.partition())
            continue
        values.append(m.value().decode())
    reader.close()
    assert sorted(values) == sorted(f"v{i}" for i in range(300))
    # Kafka's group offsets are per group: ask as the copying group.
    check = Consumer({**conf, "group.id": group})
    committed = check.committed([TopicPartition(src, part) for part in range(3)], timeout=30)
    check.close()
    assert [tp.offset for tp in committed] == [100, 100, 100], committed


def test_console_producer_and_consumer_with_a_client_properties_file(secured, certs, tmp_path):
    bootstrap, env = java_client_config(tmp_path, certs, secured, "SASL_SSL", "PLAIN", PLAIN_USER, PLAIN_PASSWORD)
    props = env["KAAS_INTEROP_CLIENT_CONFIG"]
    topic = f"console-{uuid.uuid4().hex[:6]}"
    lines = "".join(f"line-{i}\n" for i in range(50))
    produced = subprocess.run(
        ["java", "-Xmx256m", "-cp", jh.classpath(), "org.apache.kafka.tools.ConsoleProducer",
         "--bootstrap-server", bootstrap, "--topic", topic, "--command-config", props],
        input=lines, capture_output=True, text=True, timeout=120)
    assert produced.returncode == 0, produced.stderr[-3000:]
    consumed = jh.run_java("org.apache.kafka.tools.consumer.ConsoleConsumer", "--bootstrap-server", bootstrap,
                           "--topic", topic, "--from-beginning", "--max-messages", "50",
                           "--command-config", props, "--timeout-ms", "60000", timeout=120)
    assert consumed.returncode == 0, consumed.describe()
    assert sorted(consumed.stdout.split()) == sorted(f"line-{i}" for i in range(50)), consumed.stdout[-2000:]
