"""The authorizer (`authorizer = "standard"`, docs/security.md) with real clients and Apache Kafka's
own kafka-acls tool.

A broker with a SASL_PLAINTEXT listener (PLAIN users admin, alice and bob; admin a super user)
and its PLAINTEXT listener (ANONYMOUS clients). Nothing is allowed without an ACL: alice's
producer is refused until kafka-acls (as admin) grants her WRITE on the topic and the
transactional id; then her transactions commit and a read_committed consumer of hers (READ on the
topic and the group) reads them. bob, without ACLs, cannot take over her transactional id
(TRANSACTIONAL_ID_AUTHORIZATION_FAILED) or read the topic; a WriteTxnMarkers from an anonymous
client, which without an authorizer would commit or abort any producer's transaction, is
CLUSTER_AUTHORIZATION_FAILED on every partition (eos-rules 2). kafka-acls lists and removes the
ACLs, and DescribeAcls without ALTER/DESCRIBE on the cluster is refused.
"""
import socket
import struct
import time
import uuid

import pytest
from confluent_kafka import Consumer, KafkaError, KafkaException, Producer, TopicPartition

import javaharness as jh
from conftest import Broker, free_port

USERS = {"admin": "admin-secret", "alice": "alice-secret", "bob": "bob-secret"}


@pytest.fixture
def guarded(tmp_path):
    port = free_port()
    config = tmp_path / "kaas.toml"
    users = "\n".join(f'{u} = "{p}"' for u, p in USERS.items())
    config.write_text(f"""
listeners = "SASL_PLAINTEXT://127.0.0.1:{port}"
sasl_enabled_mechanisms = ["PLAIN"]
authorizer = "standard"
super_users = ["User:admin"]

[sasl_plain_users]
{users}
""")
    broker = Broker(tmp_path / "data", free_port(), config_file=config)
    broker.start()
    broker.sasl = f"127.0.0.1:{port}"
    yield broker
    broker.stop()


def conf(broker, user):
    return {"bootstrap.servers": broker.sasl, "security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "PLAIN",
            "sasl.username": user, "sasl.password": USERS[user]}


def acls(broker, tmp_path, *args, user="admin"):
    props = tmp_path / f"{user}.properties"
    props.write_text("security.protocol=SASL_PLAINTEXT\nsasl.mechanism=PLAIN\n"
                     "sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required "
                     f'username="{user}" password="{USERS[user]}";\n')
    return jh.run_java("org.apache.kafka.tools.AclCommand", "--bootstrap-server", broker.sasl,
                       "--command-config", str(props), *args, timeout=120)


def produce_one(broker, user, topic, **extra):
    errors = []
    p = Producer({**conf(broker, user), "message.timeout.ms": 10000, **extra})
    p.produce(topic, value=b"x", on_delivery=lambda e, m: errors.append(e))
    p.flush(15)
    return errors


def write_txn_markers_v1(port, topic):
    """A hand-made WriteTxnMarkers v1 (flexible): COMMIT for producer 1000 epoch 0 on partition
    0 of `topic`; returns the partition's error code."""
    def cstr(s):
        b = s.encode()
        return bytes([len(b) + 1]) + b
    client = b"forger"
    header = struct.pack(">hhih", 27, 1, 77, len(client)) + client + b"\x00"
    topic_part = cstr(topic) + bytes([2]) + struct.pack(">i", 0) + b"\x00"
    marker = struct.pack(">qhb", 1000, 0, 1) + bytes([2]) + topic_part + struct.pack(">i", 0) + b"\x00"
    body = bytes([2]) + marker + b"\x00"
    payload = header + body
    with socket.create_connection(("127.0.0.1", port), timeout=10) as s:
        s.sendall(struct.pack(">i", len(payload)) + payload)
        data = b""
        while len(data) < 4 or len(data) < 4 + struct.unpack(">i", data[:4])[0]:
            chunk = s.recv(65536)
            assert chunk, "connection closed"
            data += chunk
    # size, correlation id, header tagged fields, markers (1), producer id, topics (1), name,
    # partitions (1), partition index, error code
    i = 4 + 4 + 1
    assert data[i] == 2
    i += 1 + 8
    assert data[i] == 2
    i += 1
    i += data[i]  # compact string: length + 1 bytes, length byte included
    assert data[i] == 2
    i += 1 + 4
    return struct.unpack(">h", data[i:i + 2])[0]


def test_nothing_is_allowed_without_an_acl_and_kafka_acls_grants_it(guarded, tmp_path):
    topic, txn_id, group = f"orders-{uuid.uuid4().hex[:6]}", "tx-alice-1", "alice-group"
    admin_errors = produce_one(guarded, "admin", topic)
    assert admin_errors == [None], "a super user may do everything (and create the topic)"
    errors = produce_one(guarded, "alice", topic, **{"enable.idempotence": False, "retries": 0})
    assert errors and errors[0] is not None and errors[0].code() == KafkaError.TOPIC_AUTHORIZATION_FAILED, errors
    # kafka-acls as admin: alice may write the topic and her transactional ids, read as her group.
    for args in (["--topic", topic, "--operation", "Write", "--operation", "Read"],
                 ["--transactional-id", "tx-alice-", "--resource-pattern-type", "prefixed", "--operation", "Write"],
                 ["--group", group, "--operation", "Read"]):
        run = acls(guarded, tmp_path, "--add", "--allow-principal", "User:alice", *args)
        assert run.returncode == 0, run.describe()
    listed = acls(guarded, tmp_path, "--list", "--topic", topic)
    assert listed.returncode == 0 and "User:alice" in listed.stdout and "WRITE" in listed.stdout, listed.describe()
    p = Producer({**conf(guarded, "alice"), "transactional.id": txn_id})
    p.init_transactions(30)
    p.begin_transaction()
    for i in range(10):
        p.produce(topic, value=f"v{i}".encode())
    p.commit_transaction(30)
    c = Consumer({**conf(guarded, "alice"), "group.id": group, "isolation.level": "read_committed",
                  "auto.offset.reset": "earliest"})
    c.subscribe([topic])
    seen, deadline = [], time.time() + 60
    while len(seen) < 11 and time.time() < deadline:
        m = c.poll(1.0)
        if m is not None and not m.error():
            seen.append(m.value())
    c.commit(asynchronous=False)
    c.close()
    assert sorted(seen) == sorted([b"x"] + [f"v{i}".encode() for i in range(10)])
    # bob: not her transactional id, not her topic.
    bob = Producer({**conf(guarded, "bob"), "transactional.id": txn_id})
    with pytest.raises(KafkaException) as e:
        bob.init_transactions(15)
    assert e.value.args[0].code() == KafkaError.TRANSACTIONAL_ID_AUTHORIZATION_FAILED, e.value
    reader = Consumer({**conf(guarded, "bob"), "group.id": "bob-group"})
    reader.assign([TopicPartition(topic, 0, 0)])
    got = None
    deadline = time.time() + 20
    while got is None and time.time() < deadline:
        m = reader.poll(1.0)
        if m is not None and m.error():
            got = m.error().code()
    reader.close()
    assert got in (KafkaError.TOPIC_AUTHORIZATION_FAILED, KafkaError.GROUP_AUTHORIZATION_FAILED), got
    # kafka-acls removes them again: alice is refused once more.
    run = acls(guarded, tmp_path, "--remove", "--force", "--allow-principal", "User:alice", "--topic", topic,
               "--operation", "Write", "--operation", "Read")
    assert run.returncode == 0, run.describe()
    errors = produce_one(guarded, "alice", topic, **{"enable.idempotence": False, "retries": 0})
    assert errors and errors[0] is not None and errors[0].code() == KafkaError.TOPIC_AUTHORIZATION_FAILED, errors


def test_an_anonymous_write_txn_markers_is_cluster_authorization_failed(guarded):
    topic = f"t-{uuid.uuid4().hex[:6]}"
    assert produce_one(guarded, "admin", topic) == [None]
    assert write_txn_markers_v1(guarded.port, topic) == 31


def test_acl_apis_need_the_cluster_permissions(guarded, tmp_path):
    run = acls(guarded, tmp_path, "--list", user="bob")
    assert run.returncode != 0 and "ClusterAuthorization" in (run.stdout + run.stderr), run.describe()
    run = acls(guarded, tmp_path, "--add", "--allow-principal", "User:bob", "--topic", "x", "--operation", "Read",
               user="bob")
    assert run.returncode != 0 or "ClusterAuthorization" in (run.stdout + run.stderr), run.describe()
    listed = acls(guarded, tmp_path, "--list")
    assert listed.returncode == 0 and "User:bob" not in listed.stdout, listed.describe()
