"""Hostile clients against the TLS and SASL listeners (docs/security.md): 10,000 failed SASL
logins and 1,000 half-open TLS handshakes. Each failed login is answered
SASL_AUTHENTICATION_FAILED and closed, and counted; the half-open handshakes hold their
connections until the client goes; the broker's memory stays bounded throughout and another
client is served while they are open.
"""
import asyncio
import re
import socket
import struct
import subprocess
import time
import urllib.request
import uuid

import pytest
from confluent_kafka import Producer

from conftest import ROOT, Broker, free_ports


@pytest.fixture
def hostile_target(tmp_path):
    certs = tmp_path / "certs"
    subprocess.run([str(ROOT / "scripts" / "dev-certs.sh"), str(certs)], check=True, capture_output=True)
    plaintext, ssl, sasl, metrics = free_ports(4)
    ports = {"SSL": ssl, "SASL_PLAINTEXT": sasl, "metrics": metrics}
    config = tmp_path / "kaas.toml"
    config.write_text(f"""
listeners = "SSL://127.0.0.1:{ports['SSL']},SASL_PLAINTEXT://127.0.0.1:{ports['SASL_PLAINTEXT']}"
ssl_keystore_location = "{certs}/broker.pem"
sasl_enabled_mechanisms = ["PLAIN"]
metrics_listen = "127.0.0.1:{ports['metrics']}"

[sasl_plain_users]
alice = "alice-secret"
""")
    broker = Broker(tmp_path / "data", plaintext, config_file=config)
    broker.start()
    broker.ports = ports
    broker.certs = certs
    yield broker
    broker.stop()


def rss_mib(broker):
    status = open(f"/proc/{broker.proc.pid}/status").read()
    return int(re.search(r"VmRSS:\s+(\d+) kB", status).group(1)) / 1024


def frame(api_key, version, correlation, body):
    client = b"hostile"
    # SaslHandshake v1 and SaslAuthenticate v0 are not flexible: request header v1.
    header = struct.pack(">hhih", api_key, version, correlation, len(client)) + client
    payload = header + body
    return struct.pack(">i", len(payload)) + payload


async def read_frame(reader):
    size = struct.unpack(">i", await reader.readexactly(4))[0]
    return await reader.readexactly(size)


async def failed_login(port):
    """SaslHandshake v1 PLAIN, then SaslAuthenticate v0 with a wrong password; returns the error
    code and whether the broker then closed the connection."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    try:
        mech = b"PLAIN"
        writer.write(frame(17, 1, 1, struct.pack(">h", len(mech)) + mech))
        await read_frame(reader)
        token = b"\0alice\0wrong"
        writer.write(frame(36, 0, 2, struct.pack(">i", len(token)) + token))
        answer = await read_frame(reader)
        code = struct.unpack(">h", answer[4:6])[0]
        closed = await reader.read(1) == b""
        return code, closed
    finally:
        writer.close()


async def many_failed_logins(port, total, concurrency):
    sem = asyncio.Semaphore(concurrency)
    results = []

    async def one():
        async with sem:
            results.append(await failed_login(port))
    await asyncio.gather(*(one() for _ in range(total)))
    return results


def failed_authentication_count(broker, listener="SASL_PLAINTEXT"):
    text = urllib.request.urlopen(f"http://127.0.0.1:{broker.ports['metrics']}/metrics", timeout=10).read().decode()
    pattern = r'^kafka_server_socketservermetrics_failed_authentication_total\{listener="%s"\} (\d+)' % listener
    m = re.search(pattern, text, re.M)
    return int(m.group(1)) if m else None


def served(broker):
    p = Producer({"bootstrap.servers": broker.bootstrap, "message.timeout.ms": 15000})
    errors = []
    p.produce(f"served-{uuid.uuid4().hex[:6]}", value=b"x", on_delivery=lambda e, m: errors.append(e))
    return p.flush(20) == 0 and errors == [None]


def test_ten_thousand_failed_logins_are_refused_counted_and_bounded(hostile_target):
    before = rss_mib(hostile_target)
    results = asyncio.run(many_failed_logins(hostile_target.ports["SASL_PLAINTEXT"], 10_000, 200))
    assert len(results) == 10_000
    assert all(code == 58 for code, _ in results), {c for c, _ in results}
    assert all(closed for _, closed in results)
    assert failed_authentication_count(hostile_target) == 10_000
    grown = rss_mib(hostile_target) - before
    assert grown < 64, f"RSS grew by {grown:.0f} MiB over 10,000 failed logins"
    assert served(hostile_target)


def test_a_thousand_half_open_tls_handshakes_leave_others_served(hostile_target):
    before = rss_mib(hostile_target)
    held = []
    try:
        for i in range(1000):
            s = socket.create_connection(("127.0.0.1", hostile_target.ports["SSL"]), timeout=10)
            if i % 2:
                # The first bytes of a TLS record and nothing more.
                s.sendall(b"\x16\x03\x01\x02\x00")
            held.append(s)
        time.sleep(1)
        assert served(hostile_target), "a plaintext client is served while 1,000 handshakes hang"
        grown = rss_mib(hostile_target) - before
        assert grown < 128, f"RSS grew by {grown:.0f} MiB for 1,000 half-open TLS handshakes"
    finally:
        for s in held:
            s.close()
    assert hostile_target.alive()
