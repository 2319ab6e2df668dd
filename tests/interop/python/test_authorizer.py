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
import subprocess
import time
import uuid

import pytest
from confluent_kafka import Consumer, KafkaError, KafkaException, Producer, TopicPartition

import javaharness as jh
from conftest import ROOT, Broker, free_ports

USERS = {"admin": "admin-secret", "alice": "alice-secret", "bob": "bob-secret"}


@pytest.fixture
def guarded(tmp_path):
    port, plaintext = free_ports(2)
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
    broker = Broker(tmp_path / "data", plaintext, config_file=config)
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


def write_txn_markers_v1(port, topic, connect=None):
    """A hand-made WriteTxnMarkers v1 (flexible): COMMIT for producer 1000 epoch 0 on partition
    0 of `topic`; returns the partition's error code. `connect()` gives the connection (TLS,
    authenticated) instead of a plain one to `port`."""
    def cstr(s):
        b = s.encode()
        return bytes([len(b) + 1]) + b
    client = b"forger"
    header = struct.pack(">hhih", 27, 1, 77, len(client)) + client + b"\x00"
    topic_part = cstr(topic) + bytes([2]) + struct.pack(">i", 0) + b"\x00"
    marker = struct.pack(">qhb", 1000, 0, 1) + bytes([2]) + topic_part + struct.pack(">i", 0) + b"\x00"
    body = bytes([2]) + marker + b"\x00"
    payload = header + body
    with (connect() if connect else socket.create_connection(("127.0.0.1", port), timeout=10)) as s:
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


def test_a_kip848_regex_subscription_gets_only_the_topics_the_member_may_describe(guarded, tmp_path):
    """The Java consumer with group.protocol=consumer and a broker-side regex (SubscriptionPattern):
    of two topics the regex matches, alice may read one; the broker resolves the regex to that one
    only (Kafka's TopicRegexResolver filters by DESCRIBE), so she is never assigned, and never
    learns, the other."""
    tag = uuid.uuid4().hex[:6]
    mine, theirs, group = f"re-{tag}-mine", f"re-{tag}-theirs", f"re-{tag}-group"
    for topic in (mine, theirs):
        p = Producer(conf(guarded, "admin"))
        for i in range(5):
            p.produce(topic, value=f"{topic}-{i}".encode())
        assert p.flush(30) == 0
    for args in (["--topic", mine, "--operation", "Read"], ["--group", group, "--operation", "Read"]):
        run = acls(guarded, tmp_path, "--add", "--allow-principal", "User:alice", *args)
        assert run.returncode == 0, run.describe()
    props = tmp_path / "alice-client.properties"
    props.write_text("security.protocol=SASL_PLAINTEXT\nsasl.mechanism=PLAIN\n"
                     "sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required "
                     f'username="alice" password="{USERS["alice"]}";\n')
    run = jh.run_java("kaas.interop.RegexConsume", guarded.sasl, f"re-{tag}-.*", group, "5", "60",
                      env={"KAAS_INTEROP_CLIENT_CONFIG": str(props)}, timeout=120)
    result = jh.last_json_line(run.stdout)
    assert run.returncode == 0 and result, run.describe()
    assert result == {"read": {mine: 5}, "assigned": [mine]}, result


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


@pytest.mark.parametrize("listener,mechanism", [("SASL_PLAINTEXT", "PLAIN"), ("SASL_SSL", "SCRAM-SHA-512")])
def test_a_secured_cluster_sends_its_markers_over_authenticated_peer_links(tmp_path, listener, mechanism):
    """Two brokers on one data directory, each with `listener` as the inter-broker listener and
    the authorizer on: they log in to each other with `mechanism` as User:broker (a super user;
    over TLS each checks the other's certificate), so the markers and verifications of a
    transaction spanning partitions of both brokers reach the peer's partitions and a
    read_committed consumer reads every committed record."""
    shared = tmp_path / "shared"
    certs = tmp_path / "certs"
    subprocess.run([str(ROOT / "scripts" / "dev-certs.sh"), str(certs)], check=True, capture_output=True)
    users = {**USERS, "broker": "broker-secret"}
    table = "\n".join(f'{u} = "{p}"' for u, p in users.items())
    brokers = []
    ports = free_ports(4)
    for node in (1, 2):
        port, plaintext = ports[2 * node - 2], ports[2 * node - 1]
        config = tmp_path / f"kaas-{node}.toml"
        config.write_text(f"""
listeners = "{listener}://127.0.0.1:{port}"
inter_broker_listener_name = "{listener}"
inter_broker_sasl_mechanism = "{mechanism}"
inter_broker_sasl_username = "broker"
inter_broker_sasl_password = "broker-secret"
ssl_keystore_location = "{certs}/broker.pem"
ssl_truststore_location = "{certs}/ca.pem"
sasl_enabled_mechanisms = ["{mechanism}"]
authorizer = "standard"
super_users = ["User:admin", "User:broker"]
cluster_tick_ms = 200
fence_poll_interval_ms = 200

[sasl_plain_users]
{table}

[scram_users_at_first_start]
{table}
""")
        b = Broker(shared, plaintext, config_file=config, node_id=node).start()
        b.sasl = f"127.0.0.1:{port}"
        brokers.append(b)
    bootstrap = ",".join(b.sasl for b in brokers)
    client = {**conf(brokers[0], "admin"), "bootstrap.servers": bootstrap, "security.protocol": listener,
              "sasl.mechanism": mechanism}
    if listener == "SASL_SSL":
        client["ssl.ca.location"] = str(certs / "ca.pem")
    from confluent_kafka.admin import AdminClient, NewTopic
    # Each broker lists both before the topic is made (placement takes the brokers live then).
    for b in brokers:
        one = AdminClient({**client, "bootstrap.servers": b.sasl})
        deadline = time.time() + 30
        while len(one.list_topics(timeout=5).brokers) < 2:
            assert time.time() < deadline, f"broker {b.node_id} does not see both brokers"
            time.sleep(0.2)
    admin = AdminClient(client)
    topic = f"span-{uuid.uuid4().hex[:6]}"
    admin.create_topics([NewTopic(topic, 4, 1)])[topic].result(30)
    deadline = time.time() + 30
    while True:
        leaders = {p.leader for p in admin.list_topics(topic, timeout=5).topics[topic].partitions.values()}
        if leaders == {1, 2}:
            break
        assert time.time() < deadline, f"the partitions are not spread: {leaders}"
        time.sleep(0.2)
    p = Producer({**client, "transactional.id": "span-tx"})
    p.init_transactions(30)
    for t in range(3):
        p.begin_transaction()
        for i in range(40):
            p.produce(topic, value=f"{t}-{i}".encode(), partition=i % 4)
        p.commit_transaction(30)
    c = Consumer({**client, "group.id": "span-reader", "isolation.level": "read_committed",
                  "auto.offset.reset": "earliest"})
    c.assign([TopicPartition(topic, part, 0) for part in range(4)])
    seen, deadline = [], time.time() + 60
    while len(seen) < 120 and time.time() < deadline:
        m = c.poll(1.0)
        if m is not None and not m.error():
            seen.append(m.value())
    c.close()
    assert len(seen) == 120, f"read {len(seen)} of 120 committed records: markers on the peer's partitions missing"
    for b in brokers:
        assert "SASL login to a peer refused" not in b.log_text()
