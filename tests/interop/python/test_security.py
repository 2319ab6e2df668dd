"""TLS and SASL listeners (docs/security.md) with real clients.

One broker serves four listeners: PLAINTEXT (the harness's health checks), SSL (client
certificates requested), SASL_PLAINTEXT and SASL_SSL (SCRAM-SHA-512, SCRAM-SHA-256 and PLAIN),
with certificates from scripts/dev-certs.sh, a PLAIN user from the configuration and a SCRAM user
written at the first start. librdkafka (confluent-kafka) and the Java client produce with
idempotence and read back on each secured listener, Java runs transactions over SASL_SSL, and
hostile clients (a wrong password, a request before authentication, garbage instead of a TLS
handshake) are refused while the broker keeps serving the others.
"""
import socket
import struct
import subprocess
import time
import uuid

import pytest
from confluent_kafka import Consumer, KafkaError, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import (AdminClient, NewTopic, ScramCredentialInfo, ScramMechanism,
                                  UserScramCredentialUpsertion)

import javaharness as jh
from conftest import ROOT, Broker, free_ports

PLAIN_USER, PLAIN_PASSWORD = "alice", "alice-secret"
SCRAM_USER, SCRAM_PASSWORD = "admin", "admin-secret"


@pytest.fixture(scope="module")
def certs(tmp_path_factory):
    d = tmp_path_factory.mktemp("certs")
    subprocess.run([str(ROOT / "scripts" / "dev-certs.sh"), str(d)], check=True, capture_output=True)
    return d


def start_secured(tmp_path, certs, client_auth="requested", allowed_errors=()):
    """A started broker with the four listeners (its `ports` by listener name) and
    `ssl_client_auth = client_auth`."""
    plaintext, *others = free_ports(4)
    ports = dict(zip(("SSL", "SASL_PLAINTEXT", "SASL_SSL"), others))
    listeners = ",".join(f"{name}://127.0.0.1:{port}" for name, port in ports.items())
    config = tmp_path / "kaas.toml"
    config.write_text(f"""
listeners = "{listeners}"
ssl_keystore_location = "{certs}/broker.pem"
ssl_truststore_location = "{certs}/ca.pem"
ssl_client_auth = "{client_auth}"
sasl_enabled_mechanisms = ["SCRAM-SHA-512", "SCRAM-SHA-256", "PLAIN"]

[sasl_plain_users]
{PLAIN_USER} = "{PLAIN_PASSWORD}"

[scram_users_at_first_start]
{SCRAM_USER} = "{SCRAM_PASSWORD}"
""")
    broker = Broker(tmp_path / "data", plaintext, config_file=config, allowed_errors=allowed_errors)
    broker.start()
    broker.ports = ports
    return broker


@pytest.fixture
def secured(tmp_path, certs):
    broker = start_secured(tmp_path, certs)
    yield broker
    broker.stop()


def librdkafka_config(broker, certs, listener, mechanism=None, user=None, password=None, cert=False):
    conf = {"bootstrap.servers": f"127.0.0.1:{broker.ports[listener]}", "security.protocol": listener}
    if "SSL" in listener:
        conf["ssl.ca.location"] = str(certs / "ca.pem")
    if cert:
        conf["ssl.certificate.location"] = str(certs / "client-cert.pem")
        conf["ssl.key.location"] = str(certs / "client-key.pem")
    if mechanism:
        conf.update({"sasl.mechanism": mechanism, "sasl.username": user, "sasl.password": password})
    return conf


def produce_and_read(conf, count=500):
    """Idempotent producer of `count` records to a new 3-partition topic, then a group-less
    consumer reading them back; returns the values read, and the brokers' ports Metadata gave."""
    topic = f"sec-{uuid.uuid4().hex[:8]}"
    admin = AdminClient(conf)
    for f in admin.create_topics([NewTopic(topic, 3, 1)]).values():
        f.result(30)
    ports = {b.port for b in admin.list_topics(timeout=30).brokers.values()}
    p = Producer({**conf, "enable.idempotence": True, "acks": "all"})
    errors = []
    for i in range(count):
        p.produce(topic, key=f"k{i}", value=f"v{i}", on_delivery=lambda e, m: e and errors.append(e))
    assert p.flush(60) == 0 and not errors, errors
    c = Consumer({**conf, "group.id": f"g-{topic}", "enable.auto.commit": False})
    c.assign([TopicPartition(topic, p, 0) for p in range(3)])
    seen = []
    deadline = time.time() + 60
    while len(seen) < count and time.time() < deadline:
        m = c.poll(1.0)
        if m is not None and not m.error():
            seen.append(m.value().decode())
    c.close()
    return seen, ports


@pytest.mark.parametrize("listener,mechanism,user,password,cert", [
    ("SASL_SSL", "SCRAM-SHA-512", SCRAM_USER, SCRAM_PASSWORD, False),
    ("SASL_SSL", "SCRAM-SHA-256", SCRAM_USER, SCRAM_PASSWORD, False),
    ("SASL_SSL", "PLAIN", PLAIN_USER, PLAIN_PASSWORD, False),
    ("SASL_PLAINTEXT", "PLAIN", PLAIN_USER, PLAIN_PASSWORD, False),
    ("SASL_PLAINTEXT", "SCRAM-SHA-512", SCRAM_USER, SCRAM_PASSWORD, False),
    ("SSL", None, None, None, True),
    ("SSL", None, None, None, False),
])
def test_librdkafka_produces_and_reads_on_each_secured_listener(secured, certs, listener, mechanism,
                                                                 user, password, cert):
    conf = librdkafka_config(secured, certs, listener, mechanism, user, password, cert)
    seen, ports = produce_and_read(conf)
    assert sorted(seen) == sorted(f"v{i}" for i in range(500))
    # Metadata gives the address of the listener the client came in on.
    assert ports == {secured.ports[listener]}


def test_a_wrong_password_fails_authentication_and_others_are_served(secured, certs):
    for mechanism, user in (("SCRAM-SHA-512", SCRAM_USER), ("PLAIN", PLAIN_USER), ("SCRAM-SHA-256", "nobody")):
        conf = librdkafka_config(secured, certs, "SASL_SSL", mechanism, user, "wrong-password")
        errors = []
        admin = AdminClient({**conf, "error_cb": lambda e: errors.append(e)})
        with pytest.raises(KafkaException):
            admin.list_topics(timeout=2)
        admin.poll(1)  # serves error_cb
        # librdkafka reports the broker's SASL_AUTHENTICATION_FAILED as an authentication error.
        assert any(e.code() == KafkaError._AUTHENTICATION for e in errors), errors
    log = secured.log_text()
    assert "SASL authentication failed" in log
    seen, _ = produce_and_read(librdkafka_config(secured, certs, "SASL_SSL", "SCRAM-SHA-512", SCRAM_USER,
                                                 SCRAM_PASSWORD), count=50)
    assert len(seen) == 50


def frame(api_key, version, correlation, body=b"", client_id=b"probe"):
    header = struct.pack(">hhih", api_key, version, correlation, len(client_id)) + client_id
    payload = header + body
    return struct.pack(">i", len(payload)) + payload


def recv_all(sock, timeout=5.0):
    sock.settimeout(timeout)
    data = b""
    try:
        while True:
            chunk = sock.recv(65536)
            if not chunk:
                return data, True
            data += chunk
    except socket.timeout:
        return data, False


def test_a_request_before_sasl_authentication_closes_the_connection(secured):
    with socket.create_connection(("127.0.0.1", secured.ports["SASL_PLAINTEXT"])) as s:
        # Metadata v1, all topics (null array), before any SaslHandshake.
        s.sendall(frame(3, 1, 7, struct.pack(">i", -1)))
        data, closed = recv_all(s)
        assert closed and data == b"", "the broker must close without answering"
    # ApiVersions then an unsupported mechanism: UNSUPPORTED_SASL_MECHANISM (33), then closed.
    with socket.create_connection(("127.0.0.1", secured.ports["SASL_PLAINTEXT"])) as s:
        mech = b"GSSAPI"
        s.sendall(frame(17, 1, 8, struct.pack(">h", len(mech)) + mech))
        data, closed = recv_all(s)
        assert closed and len(data) >= 10
        correlation, error = struct.unpack(">ih", data[4:10])
        assert (correlation, error) == (8, 33)


def test_garbage_instead_of_a_tls_handshake_closes_the_connection(secured, certs):
    with socket.create_connection(("127.0.0.1", secured.ports["SSL"])) as s:
        s.sendall(b"GET / HTTP/1.0\r\n\r\n" * 10)
        data, closed = recv_all(s)
        assert closed
    # a SASL handshake on a plaintext listener is ILLEGAL_SASL_STATE (34), the connection stays
    with socket.create_connection(("127.0.0.1", secured.port)) as s:
        mech = b"PLAIN"
        s.sendall(frame(17, 1, 9, struct.pack(">h", len(mech)) + mech))
        s.settimeout(5)
        data = s.recv(65536)
        assert struct.unpack(">ih", data[4:10]) == (9, 34)
    seen, _ = produce_and_read(librdkafka_config(secured, certs, "SSL", cert=True), count=20)
    assert len(seen) == 20


def java_client_config(tmp_path, certs, broker, listener, mechanism=None, user=None, password=None, cert=False):
    lines = [f"security.protocol={listener}"]
    if "SSL" in listener:
        lines += ["ssl.truststore.type=PEM", f"ssl.truststore.location={certs}/ca.pem"]
    if cert:
        lines += ["ssl.keystore.type=PEM", f"ssl.keystore.location={certs}/client.pem"]
    if mechanism:
        module = ("org.apache.kafka.common.security.plain.PlainLoginModule" if mechanism == "PLAIN"
                  else "org.apache.kafka.common.security.scram.ScramLoginModule")
        lines += [f"sasl.mechanism={mechanism}",
                  f'sasl.jaas.config={module} required username="{user}" password="{password}";']
    path = tmp_path / f"client-{listener}-{mechanism}.properties"
    path.write_text("\n".join(lines) + "\n")
    return f"127.0.0.1:{broker.ports[listener]}", {"KAAS_INTEROP_CLIENT_CONFIG": str(path)}


def test_java_idempotent_producer_and_transactions_over_sasl_ssl(secured, certs, tmp_path):
    bootstrap, env = java_client_config(tmp_path, certs, secured, "SASL_SSL", "SCRAM-SHA-512", SCRAM_USER,
                                        SCRAM_PASSWORD)
    r = jh.produce_consume(bootstrap, "java-sasl-ssl", 2000, env=env)
    assert r.run.returncode == 0 and r.summary and r.summary["ok"], r.run.describe()
    t = jh.transactions_run(bootstrap, "java-sasl-ssl-txn", 20, 3, 10, env=env)
    assert t.run.returncode == 0 and t.summary and t.summary["ok"], t.run.describe()


def test_java_over_ssl_with_a_client_certificate_and_sasl_plaintext_plain(secured, certs, tmp_path):
    bootstrap, env = java_client_config(tmp_path, certs, secured, "SSL", cert=True)
    r = jh.produce_consume(bootstrap, "java-ssl", 1000, env=env)
    assert r.run.returncode == 0 and r.summary and r.summary["ok"], r.run.describe()
    bootstrap, env = java_client_config(tmp_path, certs, secured, "SASL_PLAINTEXT", "PLAIN", PLAIN_USER,
                                        PLAIN_PASSWORD)
    g = jh.group_consume(bootstrap, "java-sasl-plain-group", "java-sasl-plain", 1000, 3, env=env)
    assert g.run.returncode == 0 and g.summary and g.summary["ok"], g.run.describe()


def test_describe_user_scram_credentials_lists_the_first_start_users(secured, certs):
    admin = AdminClient(librdkafka_config(secured, certs, "SASL_SSL", "SCRAM-SHA-512", SCRAM_USER, SCRAM_PASSWORD))
    described = admin.describe_user_scram_credentials().result(30)
    assert set(described) == {SCRAM_USER}
    infos = {(i.mechanism.name, i.iterations) for i in described[SCRAM_USER].scram_credential_infos}
    assert infos == {("SCRAM_SHA_256", 4096), ("SCRAM_SHA_512", 4096)}
    futures = admin.describe_user_scram_credentials(["nobody"])
    with pytest.raises(KafkaException) as e:
        futures["nobody"].result(30)
    assert e.value.args[0].code() == KafkaError.RESOURCE_NOT_FOUND


def configs_tool(bootstrap, *args):
    return jh.run_java("org.apache.kafka.tools.ConfigCommand", "--bootstrap-server", bootstrap, "--entity-type",
                       "users", *args, timeout=120)


def test_kafka_configs_manages_scram_users_that_then_log_in(secured, certs):
    added = configs_tool(secured.bootstrap, "--alter", "--add-config",
                         "SCRAM-SHA-256=[iterations=8192,password=carol-secret]", "--entity-name", "carol")
    assert added.returncode == 0, added.describe()
    described = configs_tool(secured.bootstrap, "--describe", "--entity-name", "carol")
    assert "SCRAM-SHA-256=iterations=8192" in described.stdout, described.describe()
    conf = librdkafka_config(secured, certs, "SASL_SSL", "SCRAM-SHA-256", "carol", "carol-secret")
    # Every broker reads the credentials again within two seconds.
    deadline, seen = time.time() + 15, []
    while time.time() < deadline and len(seen) < 20:
        try:
            seen, _ = produce_and_read(conf, count=20)
        except KafkaException:
            time.sleep(1)
    assert len(seen) == 20
    removed = configs_tool(secured.bootstrap, "--alter", "--delete-config", "SCRAM-SHA-256", "--entity-name", "carol")
    assert removed.returncode == 0, removed.describe()
    described = configs_tool(secured.bootstrap, "--describe", "--entity-name", "carol")
    assert "SCRAM-SHA-256" not in described.stdout, described.describe()
    # Too few iterations (kafka-configs refuses them itself; librdkafka sends them): the broker
    # answers Kafka's UNACCEPTABLE_CREDENTIAL.
    admin = AdminClient({"bootstrap.servers": secured.bootstrap})
    few = UserScramCredentialUpsertion("dave", ScramCredentialInfo(ScramMechanism.SCRAM_SHA_512, 1000), b"x")
    futures = admin.alter_user_scram_credentials([few])
    with pytest.raises(KafkaException) as e:
        futures["dave"].result(30)
    assert e.value.args[0].code() == KafkaError.UNACCEPTABLE_CREDENTIAL, e.value


def served_certificate(port, ca):
    import ssl
    ctx = ssl.create_default_context(cafile=str(ca))
    with socket.create_connection(("127.0.0.1", port), timeout=10) as raw:
        with ctx.wrap_socket(raw, server_hostname="127.0.0.1") as tls:
            return tls.getpeercert(binary_form=True)


def test_sighup_reads_the_certificate_again(secured, certs, tmp_path):
    """The keystore file replaced by one of another CA and SIGHUP sent: new handshakes get the new
    certificate (checked against the new CA), without a restart; a broken file leaves the current
    one, with an ERROR logged."""
    import shutil
    import signal
    first = served_certificate(secured.ports["SSL"], certs / "ca.pem")
    other = tmp_path / "other-certs"
    subprocess.run([str(ROOT / "scripts" / "dev-certs.sh"), str(other)], check=True, capture_output=True)
    keystore = certs / "broker.pem"
    saved = keystore.read_bytes()
    try:
        shutil.copy(other / "broker.pem", keystore)
        secured.proc.send_signal(signal.SIGHUP)
        deadline, second = time.time() + 10, first
        while second == first and time.time() < deadline:
            time.sleep(0.2)
            try:
                second = served_certificate(secured.ports["SSL"], other / "ca.pem")
            except Exception:
                pass
        assert second != first, "the new certificate is served after SIGHUP"
        secured.allow_log_errors("SIGHUP: the TLS certificate stays as it was")
        keystore.write_text("not a certificate")
        secured.proc.send_signal(signal.SIGHUP)
        time.sleep(1)
        assert served_certificate(secured.ports["SSL"], other / "ca.pem") == second
        assert secured.alive()
    finally:
        keystore.write_bytes(saved)
