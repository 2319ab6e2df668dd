"""KIP-368 re-authentication (docs/security.md): with `connections_max_reauth_ms` a SASL
session lasts that long. SaslAuthenticate tells the client (`session_lifetime_ms`); the Java
client and librdkafka re-authenticate on their open connections before it ends, through a long
run; a client that does not is closed at its next request after the end; a re-authentication
may not change the principal or the mechanism. The broker counts each in its metrics, per
listener, as Kafka's socket-server metrics do.
"""
import re
import socket
import struct
import time
import urllib.request
import uuid

import pytest
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic

import javaharness as jh
from conftest import Broker, free_ports
from kaashelpers import read_frame_or_none
from test_security import certs  # noqa: F401 (the fixture)

pytestmark = pytest.mark.serial  # conftest.py: bounds by the clock; runs alone

REAUTH_MS = 1000
USERS = {"alice": "alice-secret", "bob": "bob-secret"}
SCRAM_USER, SCRAM_PASSWORD = "admin", "admin-secret"


@pytest.fixture(scope="module")
def broker(tmp_path_factory, certs):
    tmp = tmp_path_factory.mktemp("reauth")
    plaintext, sasl_plaintext, sasl_ssl, metrics = free_ports(4)
    ports = {"SASL_PLAINTEXT": sasl_plaintext, "SASL_SSL": sasl_ssl, "metrics": metrics}
    users = "\n".join(f'{u} = "{p}"' for u, p in USERS.items())
    config = tmp / "kaas.toml"
    config.write_text(f"""
listeners = "SASL_PLAINTEXT://127.0.0.1:{sasl_plaintext},SASL_SSL://127.0.0.1:{sasl_ssl}"
ssl_keystore_location = "{certs}/broker.pem"
sasl_enabled_mechanisms = ["SCRAM-SHA-512", "PLAIN"]
connections_max_reauth_ms = {REAUTH_MS}
metrics_listen = "127.0.0.1:{metrics}"

[sasl_plain_users]
{users}

[scram_users_at_first_start]
{SCRAM_USER} = "{SCRAM_PASSWORD}"
""")
    b = Broker(tmp / "data", plaintext, config_file=config)
    b.start()
    b.ports = ports
    yield b
    b.stop()


def metric(broker, name, listener):
    text = urllib.request.urlopen(f"http://127.0.0.1:{broker.ports['metrics']}/metrics", timeout=10).read().decode()
    m = re.search(r'^kafka_server_socketservermetrics_%s_total\{listener="%s"\} (\d+)' % (name, listener), text, re.M)
    return int(m.group(1)) if m else 0


# ----------------------------------------------------------------------------- real clients

def test_the_java_client_reauthenticates_through_a_transactional_run(broker, certs, tmp_path):
    before = metric(broker, "successful_reauthentication", "SASL_SSL")
    config = tmp_path / "client.properties"
    config.write_text("\n".join([
        "security.protocol=SASL_SSL", "ssl.truststore.type=PEM", f"ssl.truststore.location={certs}/ca.pem",
        "sasl.mechanism=SCRAM-SHA-512",
        "sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required "
        f'username="{SCRAM_USER}" password="{SCRAM_PASSWORD}";',
    ]) + "\n")
    bootstrap = f"127.0.0.1:{broker.ports['SASL_SSL']}"
    topic = f"reauth-{uuid.uuid4().hex[:8]}"
    # 2,000 records at 500/s: about 4 s, several session lifetimes of 1 s, in transactions.
    r = jh.producer_performance_with_args(
        bootstrap, topic, 2000, record_size=100, throughput=500,
        tool_args=["--command-config", str(config), "--transactional-id", f"t-{topic}",
                   "--transaction-duration-ms", "300"],
        timeout=180)
    assert r.run.returncode == 0 and r.summary and r.summary["sent"] == 2000, r.run.describe()
    assert not r.exception_lines, r.exception_lines
    assert metric(broker, "successful_reauthentication", "SASL_SSL") >= before + 2
    assert metric(broker, "expired_connections_killed", "SASL_SSL") == 0


def test_librdkafka_reauthenticates_through_a_long_run(broker):
    before = metric(broker, "successful_reauthentication", "SASL_PLAINTEXT")
    conf = {"bootstrap.servers": f"127.0.0.1:{broker.ports['SASL_PLAINTEXT']}",
            "security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "PLAIN",
            "sasl.username": "alice", "sasl.password": USERS["alice"]}
    topic = f"reauth-{uuid.uuid4().hex[:8]}"
    admin = AdminClient(conf)
    for f in admin.create_topics([NewTopic(topic, 1, 1)]).values():
        f.result(30)
    p = Producer({**conf, "enable.idempotence": True, "linger.ms": 5})
    errors, delivered = [], []
    deadline = time.time() + 4
    i = 0
    while time.time() < deadline:
        p.produce(topic, value=f"v{i}", on_delivery=lambda e, m: errors.append(e) if e else delivered.append(m))
        p.poll(0.05)
        i += 1
    assert p.flush(30) == 0 and not errors, errors
    assert len(delivered) == i
    assert metric(broker, "successful_reauthentication", "SASL_PLAINTEXT") >= before + 2
    assert metric(broker, "expired_connections_killed", "SASL_PLAINTEXT") == 0


# ----------------------------------------------------------------------------- the raw exchange

def frame(api_key, version, correlation, body=b"", client_id=b"probe"):
    payload = struct.pack(">hhih", api_key, version, correlation, len(client_id)) + client_id + body
    return struct.pack(">i", len(payload)) + payload


def read_frame(sock):
    """One response frame's payload, or None when the broker closed the connection instead."""
    sock.settimeout(10)
    return read_frame_or_none(sock)


def handshake(sock, mechanism, correlation):
    m = mechanism.encode()
    sock.sendall(frame(17, 1, correlation, struct.pack(">h", len(m)) + m))
    data = read_frame(sock)
    return struct.unpack(">ih", data[:6])


def authenticate(sock, user, password, correlation, version=1):
    """A SaslAuthenticate (v0 or v1: not flexible) for PLAIN: (correlation, error, message,
    session_lifetime_ms), or None when the broker closed the connection without an answer."""
    token = f"\0{user}\0{password}".encode()
    sock.sendall(frame(36, version, correlation, struct.pack(">i", len(token)) + token))
    data = read_frame(sock)
    if data is None:
        return None
    corr, error, mlen = struct.unpack(">ihh", data[:8])
    message = data[8:8 + mlen].decode() if mlen >= 0 else None
    rest = data[8 + max(mlen, 0):]
    (alen,) = struct.unpack(">i", rest[:4])
    lifetime = struct.unpack(">q", rest[4 + max(alen, 0):12 + max(alen, 0)])[0] if version >= 1 else None
    return corr, error, message, lifetime


def metadata(sock, correlation):
    """Metadata v1 for no topics: its correlation id, or None when the connection was closed."""
    sock.sendall(frame(3, 1, correlation, struct.pack(">i", 0)))
    data = read_frame(sock)
    return None if data is None else struct.unpack(">i", data[:4])[0]


def login(broker, user="alice", version=1):
    s = socket.create_connection(("127.0.0.1", broker.ports["SASL_PLAINTEXT"]))
    assert handshake(s, "PLAIN", 1) == (1, 0)
    answer = authenticate(s, user, USERS[user], 2, version)
    assert answer[:2] == (2, 0), answer
    return s, answer[3]


def test_the_session_lifetime_is_sent_and_a_request_after_it_closes_the_connection(broker):
    killed = metric(broker, "expired_connections_killed", "SASL_PLAINTEXT")
    s, lifetime = login(broker)
    with s:
        assert lifetime == REAUTH_MS
        assert metadata(s, 3) == 3
        time.sleep(REAUTH_MS / 1000 + 0.3)
        assert metadata(s, 4) is None, "a request after the session ended must close the connection"
    assert metric(broker, "expired_connections_killed", "SASL_PLAINTEXT") == killed + 1
    # A client that sent only SaslAuthenticate v0 cannot re-authenticate; its session ends too.
    s, _ = login(broker, version=0)
    with s:
        assert metadata(s, 3) == 3
        time.sleep(REAUTH_MS / 1000 + 0.3)
        assert metadata(s, 4) is None


def test_a_reauthentication_renews_the_session(broker):
    renewed = metric(broker, "successful_reauthentication", "SASL_PLAINTEXT")
    s, _ = login(broker)
    with s:
        for round in range(3):
            time.sleep(REAUTH_MS / 1000 * 0.7)
            assert handshake(s, "PLAIN", 10 + round) == (10 + round, 0)
            answer = authenticate(s, "alice", USERS["alice"], 20 + round)
            assert answer[:2] == (20 + round, 0) and answer[3] == REAUTH_MS, answer
            assert metadata(s, 30 + round) == 30 + round
        # 4.2 s after the first login, within the last renewed session.
    assert metric(broker, "successful_reauthentication", "SASL_PLAINTEXT") == renewed + 3


def test_a_reauthentication_cannot_change_the_principal_or_the_mechanism(broker):
    failed = metric(broker, "failed_authentication", "SASL_PLAINTEXT")
    s, _ = login(broker)
    with s:
        assert handshake(s, "PLAIN", 5) == (5, 0)
        answer = authenticate(s, "bob", USERS["bob"], 6)
        assert answer is not None and answer[:3] == (
            6, 58, "Cannot change principals during re-authentication from User.alice: User.bob"), answer
        assert read_frame(s) is None
    s, _ = login(broker)
    with s:
        # Another (enabled) mechanism: the handshake is answered, the exchange closes unanswered.
        assert handshake(s, "SCRAM-SHA-512", 5) == (5, 0)
        token = b"n,,n=admin,r=abc"
        s.sendall(frame(36, 1, 6, struct.pack(">i", len(token)) + token))
        assert read_frame(s) is None
    assert metric(broker, "failed_authentication", "SASL_PLAINTEXT") == failed + 2
