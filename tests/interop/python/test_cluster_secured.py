"""Three kaas brokers on one data directory, secured (docs/security.md, docs/cluster.md): every
broker serves SASL_SSL only to clients (besides the harness's plaintext health checks), logs in
to its peers over SASL_SSL with SCRAM-SHA-512 as User:broker (a super user; each checks the
peer's certificate), and runs the authorizer. alice, with ACLs for her topic, transactional id
and group only, runs transactions across the three brokers with librdkafka while a broker leading
partitions is killed -9 for good: the verifications and markers that cross brokers go over the
authenticated peer links, and read_committed reads every committed record once. alice's own
WriteTxnMarkers (an inter-broker API) is refused on every broker, CLUSTER_AUTHORIZATION_FAILED.
"""
import socket
import ssl
import struct
import subprocess
import uuid

from confluent_kafka import Producer
from confluent_kafka.admin import (AclBinding, AclOperation, AclPermissionType, AdminClient, NewTopic,
                                   ResourcePatternType, ResourceType)

from conftest import ROOT, Broker, free_ports, poll_until
from kaashelpers import consume_to_end, find_coordinator, run_transactions
from test_authorizer import write_txn_markers_v1

PARTITIONS = 6
TXNS = 18
USERS = {"admin": "admin-secret", "alice": "alice-secret", "broker": "broker-secret"}


def start_secured_cluster(tmp_path, certs, n=3):
    shared = tmp_path / "shared"
    table = "\n".join(f'{u} = "{p}"' for u, p in USERS.items())
    ports = free_ports(2 * n)
    brokers = []
    for node in range(1, n + 1):
        sasl_ssl, plaintext = ports[2 * node - 2], ports[2 * node - 1]
        config = tmp_path / f"kaas-{node}.toml"
        config.write_text(f"""
listeners = "SASL_SSL://127.0.0.1:{sasl_ssl}"
inter_broker_listener_name = "SASL_SSL"
inter_broker_sasl_mechanism = "SCRAM-SHA-512"
inter_broker_sasl_username = "broker"
inter_broker_sasl_password = "broker-secret"
ssl_keystore_location = "{certs}/broker.pem"
ssl_truststore_location = "{certs}/ca.pem"
sasl_enabled_mechanisms = ["SCRAM-SHA-512", "PLAIN"]
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
        b.sasl_ssl = sasl_ssl
        brokers.append(b)
    return brokers


def client(brokers, certs, user):
    return {"bootstrap.servers": ",".join(f"127.0.0.1:{b.sasl_ssl}" for b in brokers),
            "security.protocol": "SASL_SSL", "ssl.ca.location": str(certs / "ca.pem"),
            "sasl.mechanism": "SCRAM-SHA-512", "sasl.username": user, "sasl.password": USERS[user]}


def grant(admin, *bindings):
    for f in admin.create_acls(list(bindings)).values():
        f.result(30)


def acl(resource, name, pattern, principal, operation):
    return AclBinding(resource, name, pattern, principal, "*", operation, AclPermissionType.ALLOW)


def call(sock, api_key, version, correlation, body):
    """One request (header v1) on `sock`; the response after its size."""
    client_id = b"forger"
    payload = struct.pack(">hhih", api_key, version, correlation, len(client_id)) + client_id + body
    sock.sendall(struct.pack(">i", len(payload)) + payload)
    head = b""
    while len(head) < 4:
        head += sock.recv(4 - len(head))
    size, data = struct.unpack(">i", head)[0], b""
    while len(data) < size:
        data += sock.recv(size - len(data))
    return data


def tls_plain_login(port, certs, user):
    """A TLS connection to `port` authenticated with SASL/PLAIN as `user`, by hand."""
    ctx = ssl.create_default_context(cafile=str(certs / "ca.pem"))
    sock = ctx.wrap_socket(socket.create_connection(("127.0.0.1", port), timeout=10), server_hostname="127.0.0.1")
    assert struct.unpack(">ih", call(sock, 17, 1, 1, struct.pack(">h", 5) + b"PLAIN")[:6]) == (1, 0)
    token = f"\0{user}\0{USERS[user]}".encode()
    assert struct.unpack(">ih", call(sock, 36, 1, 2, struct.pack(">i", len(token)) + token)[:6]) == (2, 0)
    return sock


def may_describe_transactional_id(port, certs, user, txn_id):
    """Whether the broker on `port` lets `user` find `txn_id`'s coordinator (FindCoordinator v1:
    DESCRIBE on the transactional id), i.e. whether it applied the ACL granting it."""
    with tls_plain_login(port, certs, user) as sock:
        key = txn_id.encode()
        data = call(sock, 10, 1, 3, struct.pack(">h", len(key)) + key + b"\x01")
        return struct.unpack(">h", data[8:10])[0] == 0


def test_a_secured_cluster_keeps_transactions_through_a_kill_and_refuses_client_markers(tmp_path):
    certs = tmp_path / "certs"
    subprocess.run([str(ROOT / "scripts" / "dev-certs.sh"), str(certs)], check=True, capture_output=True)
    brokers = start_secured_cluster(tmp_path, certs)
    admin_conf = client(brokers, certs, "admin")
    for b in brokers:
        one = AdminClient({**admin_conf, "bootstrap.servers": f"127.0.0.1:{b.sasl_ssl}"})
        poll_until(lambda: len(one.list_topics(timeout=5).brokers) == len(brokers), 30,
                   f"broker {b.node_id} seeing all brokers")
    admin = AdminClient(admin_conf)
    topic, txn_id, group = (f"{kind}-{uuid.uuid4().hex[:6]}" for kind in ("span", "span-tx", "span-g"))
    admin.create_topics([NewTopic(topic, PARTITIONS, 1)])[topic].result(30)
    lit, alice = ResourcePatternType.LITERAL, "User:alice"
    grant(admin,
          *(acl(ResourceType.TOPIC, topic, lit, alice, op)
            for op in (AclOperation.WRITE, AclOperation.READ, AclOperation.DESCRIBE)),
          acl(ResourceType.TRANSACTIONAL_ID, txn_id, lit, alice, AclOperation.WRITE),
          acl(ResourceType.GROUP, group, lit, alice, AclOperation.READ),
          # The harness finds the coordinator with a plaintext FindCoordinator (User:ANONYMOUS).
          acl(ResourceType.TRANSACTIONAL_ID, txn_id, lit, "User:ANONYMOUS", AclOperation.DESCRIBE))
    alice_conf = client(brokers, certs, "alice")
    # Every broker applies the ACLs within a quarter of a second (it reads the shared file again).
    for b in brokers:
        poll_until(lambda: may_describe_transactional_id(b.sasl_ssl, certs, "alice", txn_id), 10,
                   f"broker {b.node_id} applying the ACLs")

    def leaders():
        parts = AdminClient(alice_conf).list_topics(topic, timeout=5).topics[topic].partitions.values()
        return {p.leader for p in parts}
    poll_until(lambda: leaders() == {b.node_id for b in brokers}, 30, "partitions on every broker")

    producer = Producer({**alice_conf, "transactional.id": txn_id, "acks": "all", "linger.ms": 5,
                         "transaction.timeout.ms": 60_000, "topic.metadata.refresh.interval.ms": 1_000})
    producer.init_transactions(30)
    plaintext = ",".join(b.bootstrap for b in brokers)

    def coordinator():
        error, node = find_coordinator(plaintext, txn_id)
        return node if error == 0 else None
    victim = next(b for b in brokers if b.node_id != poll_until(coordinator, 30, "the coordinator"))

    def kill(t):
        if t == TXNS // 2:
            victim.kill()
            victim.finished = True
    outcome = run_transactions(producer, topic, PARTITIONS, TXNS, before=kill)
    survivors = [b for b in brokers if b is not victim]
    read = consume_to_end(",".join(f"127.0.0.1:{b.sasl_ssl}" for b in survivors), topic, PARTITIONS,
                          "read_committed", timeout=90, client={**alice_conf, "group.id": group})
    values = [v.decode() for records in read.values() for (_, _, v) in records]
    assert len(values) == len(set(values)), "a committed record was read twice"
    expected = {f"t{t}-p{p}" for t, op in outcome.items() if op == "commit" for p in range(PARTITIONS)}
    assert set(values) == expected, (
        f"missing {sorted(expected - set(values))[:10]}, unexpected {sorted(set(values) - expected)[:10]}")
    assert sum(1 for op in outcome.values() if op == "commit") >= TXNS // 2, outcome

    # An authenticated client is not a broker: its WriteTxnMarkers is refused everywhere.
    for b in survivors:
        code = write_txn_markers_v1(b.sasl_ssl, topic, connect=lambda: tls_plain_login(b.sasl_ssl, certs, "alice"))
        assert code == 31, f"broker {b.node_id} answered {code} to alice's WriteTxnMarkers"
    for b in brokers:
        assert "SASL login to a peer refused" not in b.log_text()
