"""What each secured listener asks of a client, with librdkafka (confluent-kafka), as Apache Kafka
4.4 answers (librdkafka's own tests 0011, 0022 and 0097 over SASL pass there).

a. KIP-684: `ssl_client_auth = "required"` applies to the SSL listener, not to SASL_SSL, whose
   clients authenticate with SASL (its own `sasl_ssl_client_auth` is `none` by default). A
   SASL_SSL client without a certificate is served; an SSL client without one is refused.
   kaas applied the one setting to both before, and refused the SASL_SSL client's handshake.
b. Kafka bounds only the frames of the authentication by its SASL receive limit (512 KiB): the
   request that follows the login is held to the broker's `max_request_bytes`. kaas took the
   limit before waiting for the next frame, so a first Produce of 700 KB right after the login
   was refused and the connection closed ("frame length ... exceeds the limit of 524288 bytes").
c. SaslHandshake v0, which Kafka 4.4 still offers: the exchange's tokens follow as raw frames.
   Debian's kcat (librdkafka 2.0.2) logs in only where v0 is offered ("SASL Handshake not
   supported by broker"); kaas offered v1 only before.
"""
import shutil
import socket
import struct
import subprocess
import uuid

import pytest
from confluent_kafka import KafkaException, Producer
from confluent_kafka.admin import AdminClient

from test_security import (PLAIN_PASSWORD, PLAIN_USER, SCRAM_PASSWORD, SCRAM_USER, certs,  # noqa: F401
                           frame, librdkafka_config, produce_and_read, start_secured)


@pytest.fixture
def mutual_tls(tmp_path, certs):  # noqa: F811
    broker = start_secured(tmp_path, certs, client_auth="required", allowed_errors=("TLS handshake",))
    yield broker
    broker.stop()


def test_sasl_ssl_does_not_take_the_ssl_listeners_client_auth(mutual_tls, certs):  # noqa: F811
    conf = librdkafka_config(mutual_tls, certs, "SASL_SSL", "PLAIN", PLAIN_USER, PLAIN_PASSWORD)
    seen, _ = produce_and_read(conf, count=50)
    assert sorted(seen) == sorted(f"v{i}" for i in range(50))
    # The SSL listener still requires a certificate: without one nothing is served.
    bare = librdkafka_config(mutual_tls, certs, "SSL")
    with pytest.raises(KafkaException):
        AdminClient(bare).list_topics(timeout=5)
    seen, _ = produce_and_read(librdkafka_config(mutual_tls, certs, "SSL", cert=True), count=50)
    assert len(seen) == 50


@pytest.mark.parametrize("listener,mechanism,user,password", [
    ("SASL_PLAINTEXT", "PLAIN", PLAIN_USER, PLAIN_PASSWORD),
    ("SASL_SSL", "SCRAM-SHA-512", SCRAM_USER, SCRAM_PASSWORD),
])
def test_the_request_after_the_login_is_not_bound_by_the_sasl_limit(mutual_tls, certs, listener, mechanism,
                                                                     user, password):
    conf = librdkafka_config(mutual_tls, certs, listener, mechanism, user, password)
    topic = f"big-{uuid.uuid4().hex[:8]}"
    # A new producer's first Produce, the first request on the connection to the partition's
    # leader after its login (not idempotent: no InitProducerId before it): one record of 700,000
    # bytes (above 512 KiB, below the 1 MB message.max.bytes). Auto-created topic.
    p = Producer({**conf, "enable.idempotence": False, "acks": "all", "compression.type": "none", "linger.ms": 0})
    delivered = []
    p.produce(topic, value=b"x" * 700_000, on_delivery=lambda e, m: delivered.append((e, m and m.offset())))
    assert p.flush(60) == 0, "not delivered"
    assert delivered == [(None, 0)], delivered
    assert "exceeds the limit" not in mutual_tls.log_text()


def read_frame(sock, timeout=5.0):
    """One size-prefixed frame, or None when the broker closed the connection first."""
    sock.settimeout(timeout)
    data = b""
    while len(data) < 4 or len(data) < 4 + struct.unpack(">i", data[:4])[0]:
        chunk = sock.recv(65536)
        if not chunk:
            return None
        data += chunk
    return data[4:]


def handshake_v0(sock, mechanism):
    sock.sendall(frame(17, 0, 1, struct.pack(">h", len(mechanism)) + mechanism))
    answer = read_frame(sock)
    correlation, error = struct.unpack(">ih", answer[:6])
    return correlation, error


def test_sasl_handshake_v0_then_raw_tokens(mutual_tls):
    """SaslHandshake v0 (advertised 0-1, as Kafka 4.4 does): the PLAIN token follows as a raw frame
    and the answer is a raw, empty frame; then requests are served. A wrong password closes the
    connection with no answer."""
    port = mutual_tls.ports["SASL_PLAINTEXT"]
    with socket.create_connection(("127.0.0.1", port)) as s:
        assert handshake_v0(s, b"PLAIN") == (1, 0)
        s.sendall(struct.pack(">i", 2 + len(PLAIN_USER) + len(PLAIN_PASSWORD))
                  + b"\0" + PLAIN_USER.encode() + b"\0" + PLAIN_PASSWORD.encode())
        assert read_frame(s) == b"", "PLAIN's server token is empty, sent as a frame of length 0"
        s.sendall(frame(3, 1, 9, struct.pack(">i", -1)))  # Metadata v1, all topics
        answer = read_frame(s)
        assert answer is not None and struct.unpack(">i", answer[:4])[0] == 9
    with socket.create_connection(("127.0.0.1", port)) as s:
        assert handshake_v0(s, b"PLAIN") == (1, 0)
        s.sendall(struct.pack(">i", 2 + len(PLAIN_USER) + 5) + b"\0" + PLAIN_USER.encode() + b"\0wrong")
        assert read_frame(s, timeout=10) is None, "a failed raw exchange closes the connection"


def test_debians_kcat_logs_in_with_sasl_plain(mutual_tls):
    """Debian's kcat (librdkafka 2.0.2) logs in only where SaslHandshake v0 is offered (it then
    sends v1 and SaslAuthenticate). Its SCRAM fails against Apache Kafka 4.4 as against kaas
    ("invalid credentials", checked by hand with the same users), so only PLAIN is tried."""
    mechanism, user, password = "PLAIN", PLAIN_USER, PLAIN_PASSWORD
    kcat = shutil.which("kcat") or shutil.which("kafkacat")
    assert kcat, "kcat not found: apt-get install -y kcat (scripts/test.sh does)"
    topic = f"kcat-sasl-{uuid.uuid4().hex[:8]}"
    auth = ["-b", f"127.0.0.1:{mutual_tls.ports['SASL_PLAINTEXT']}", "-X", "security.protocol=SASL_PLAINTEXT",
            "-X", f"sasl.mechanisms={mechanism}", "-X", f"sasl.username={user}", "-X", f"sasl.password={password}"]
    lines = [f"line {i}" for i in range(100)]
    run = subprocess.run([kcat, *auth, "-t", topic, "-P", "-X", "acks=all"], input="\n".join(lines).encode(),
                         capture_output=True, timeout=90)
    assert run.returncode == 0, run.stderr.decode(errors="replace")
    run = subprocess.run([kcat, *auth, "-t", topic, "-C", "-e", "-o", "beginning", "-q"], capture_output=True,
                         timeout=90)
    assert run.returncode == 0, run.stderr.decode(errors="replace")
    assert run.stdout.decode().splitlines() == lines
