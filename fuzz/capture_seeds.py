#!/usr/bin/env python3
"""Captures real client traffic as seed corpora for the fuzz targets.

Starts target/release/kaas on a temporary data dir, puts a logging TCP proxy in front of it
(the broker advertises the proxy, so every client connection goes through it), runs real
clients through the proxy, and writes what the clients sent:

  fuzz/corpus/dispatch/  one file per client connection: the byte stream the client sent
                         (length-prefixed frames), cut at MAX_STREAM bytes on a frame boundary
  fuzz/corpus/decode/    single request frames (without the length), a few per api key/version
  fuzz/corpus/batch/     record batches found in Produce requests, in the batch target's
                         raw-append encoding (tag 0, flags, u32 length, bytes)

Clients: confluent-kafka (librdkafka) and kafka-python from the venv (KAAS_VENV, default
/work/main/.venv, else .venv), and the Java client programs of tests/interop/java when their
jars are built (JAVA_TARGET, default tests/interop/java/target).

Usage: <venv>/bin/python fuzz/capture_seeds.py   (from the repository root; needs
`cargo build --release` first). Existing corpus files are kept; names are content hashes.
"""
import asyncio
import hashlib
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CORPUS = ROOT / "fuzz" / "corpus"
KAAS_BIN = os.environ.get("KAAS_BIN", str(ROOT / "target" / "release" / "kaas"))
JAVA_TARGET = Path(os.environ.get("JAVA_TARGET", str(ROOT / "tests" / "interop" / "java" / "target")))
MAX_STREAM = 64 * 1024
MAX_FRAME_SEED = 64 * 1024
FRAMES_PER_KEY_VERSION = 3


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_for_port(port: int, timeout: float = 30) -> None:
    deadline = time.time() + timeout
    while time.time() < deadline:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=1):
                return
        except OSError:
            time.sleep(0.05)
    raise RuntimeError(f"nothing listens on {port}")


# ------------------------------------------------------------------ CRC-32C and batch scanning

def _crc_table():
    table = []
    for n in range(256):
        c = n
        for _ in range(8):
            c = (c >> 1) ^ 0x82F63B78 if c & 1 else c >> 1
        table.append(c)
    return table


CRC_TABLE = _crc_table()


def crc32c(data: bytes) -> int:
    crc = 0xFFFFFFFF
    for b in data:
        crc = CRC_TABLE[(crc ^ b) & 0xFF] ^ (crc >> 8)
    return crc ^ 0xFFFFFFFF


def find_batches(frame: bytes):
    """Magic-v2 record batches inside a Produce frame: found by magic byte and a matching CRC."""
    out, i = [], 0
    while i + 61 <= len(frame):
        if frame[i + 16] == 2:
            length = int.from_bytes(frame[i + 8:i + 12], "big", signed=True)
            end = i + 12 + length
            if 49 <= length and end <= len(frame):
                stored = int.from_bytes(frame[i + 17:i + 21], "big")
                if crc32c(frame[i + 21:end]) == stored:
                    out.append(frame[i:end])
                    i = end
                    continue
        i += 1
    return out


# ------------------------------------------------------------------ the recording proxy

class Recorder:
    def __init__(self):
        self.lock = threading.Lock()
        self.streams = []           # bytes of each finished client connection
        self.frames = defaultdict(list)  # (key, version) -> frames
        self.batches = []

    def connection_done(self, frames):
        stream = bytearray()
        for f in frames:
            if len(stream) + 4 + len(f) > MAX_STREAM:
                break
            stream += len(f).to_bytes(4, "big") + f
        with self.lock:
            if stream:
                self.streams.append(bytes(stream))
            for f in frames:
                key = int.from_bytes(f[0:2], "big", signed=True)
                ver = int.from_bytes(f[2:4], "big", signed=True)
                if len(self.frames[(key, ver)]) < FRAMES_PER_KEY_VERSION and len(f) <= MAX_FRAME_SEED:
                    self.frames[(key, ver)].append(f)
                if key == 0:
                    self.batches.extend(find_batches(f))


async def pipe_client_to_broker(reader, writer, frames):
    buf = bytearray()
    try:
        while True:
            data = await reader.read(65536)
            if not data:
                break
            writer.write(data)
            await writer.drain()
            buf += data
            while len(buf) >= 4:
                n = int.from_bytes(buf[0:4], "big")
                if len(buf) < 4 + n:
                    break
                frames.append(bytes(buf[4:4 + n]))
                del buf[:4 + n]
    except (ConnectionError, OSError):
        pass
    finally:
        writer.close()


async def pipe(reader, writer):
    try:
        while True:
            data = await reader.read(65536)
            if not data:
                break
            writer.write(data)
            await writer.drain()
    except (ConnectionError, OSError):
        pass
    finally:
        writer.close()


def run_proxy(listen_port, broker_port, recorder, ready, stop):
    async def handle(creader, cwriter):
        frames = []
        try:
            breader, bwriter = await asyncio.open_connection("127.0.0.1", broker_port)
        except OSError:
            cwriter.close()
            return
        try:
            await asyncio.gather(pipe_client_to_broker(creader, bwriter, frames), pipe(breader, cwriter))
        finally:
            # Also for connections still open when the proxy stops.
            recorder.connection_done(frames)

    async def main():
        server = await asyncio.start_server(handle, "127.0.0.1", listen_port)
        ready.set()
        while not stop.is_set():
            await asyncio.sleep(0.1)
        server.close()
        await asyncio.sleep(0.5)

    asyncio.run(main())


# ------------------------------------------------------------------ clients

def confluent_clients(bootstrap: str) -> None:
    from confluent_kafka import Consumer, Producer, TopicPartition
    from confluent_kafka.admin import AdminClient, ConfigResource, NewTopic

    admin = AdminClient({"bootstrap.servers": bootstrap})
    for f in admin.create_topics([NewTopic("seed-rdk", num_partitions=2, replication_factor=1),
                                  NewTopic("seed-rdk-txn", num_partitions=2, replication_factor=1)]).values():
        f.result(timeout=30)
    for compression in ("none", "gzip", "snappy", "lz4", "zstd"):
        p = Producer({"bootstrap.servers": bootstrap, "enable.idempotence": True,
                      "compression.type": compression, "linger.ms": 5})
        for i in range(20):
            p.produce("seed-rdk", key=f"k{i}".encode(), value=(f"value-{i}-" + compression * 5).encode(),
                      headers=[("h", b"v")])
        p.flush(30)
    tp = Producer({"bootstrap.servers": bootstrap, "transactional.id": "seed-rdk-tx", "linger.ms": 5})
    tp.init_transactions(30)
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": "seed-rdk-group", "auto.offset.reset": "earliest",
                  "enable.auto.commit": False, "isolation.level": "read_committed"})
    c.subscribe(["seed-rdk"])
    got, deadline = [], time.time() + 30
    while len(got) < 10 and time.time() < deadline:
        m = c.poll(0.5)
        if m is not None and not m.error():
            got.append(m)
    for commit in (True, False):
        tp.begin_transaction()
        for i in range(5):
            tp.produce("seed-rdk-txn", key=b"t", value=f"txn-{commit}-{i}".encode())
        tp.send_offsets_to_transaction([TopicPartition("seed-rdk", 0, 5)], c.consumer_group_metadata(), 30)
        if commit:
            tp.commit_transaction(30)
        else:
            tp.abort_transaction(30)
    if got:
        c.commit(message=got[-1], asynchronous=False)
    c.close()
    for f in admin.describe_configs([ConfigResource(ConfigResource.Type.TOPIC, "seed-rdk")]).values():
        f.result(timeout=30)
    admin.list_consumer_groups().result(timeout=30)
    admin.describe_consumer_groups(["seed-rdk-group"])["seed-rdk-group"].result(timeout=30)
    try:
        admin.list_transactions().result(timeout=30)
    except Exception:  # older librdkafka
        pass
    admin.delete_consumer_groups(["seed-rdk-group"])["seed-rdk-group"].exception(timeout=30)
    for f in admin.delete_topics(["seed-rdk-txn"]).values():
        f.result(timeout=30)


def kafka_python_clients(bootstrap: str) -> None:
    from kafka import KafkaConsumer, KafkaProducer
    from kafka.admin import KafkaAdminClient, NewTopic

    admin = KafkaAdminClient(bootstrap_servers=bootstrap)
    admin.create_topics([NewTopic("seed-kpy", num_partitions=2, replication_factor=1)])
    p = KafkaProducer(bootstrap_servers=bootstrap, acks="all", compression_type="gzip")
    for i in range(20):
        p.send("seed-kpy", key=b"k", value=f"kpy-{i}".encode())
    p.flush(30)
    p.close()
    c = KafkaConsumer("seed-kpy", bootstrap_servers=bootstrap, group_id="seed-kpy-group",
                      auto_offset_reset="earliest", consumer_timeout_ms=5000)
    n = 0
    for _ in c:
        n += 1
        if n >= 20:
            break
    c.commit()
    c.close()
    for call in (lambda: admin.list_groups(), lambda: admin.describe_consumer_groups(["seed-kpy-group"]),
                 lambda: admin.list_consumer_group_offsets("seed-kpy-group")):
        try:
            call()
        except Exception as e:  # the admin API differs between kafka-python versions
            print(f"capture: kafka-python admin call failed: {e!r}", file=sys.stderr)
    admin.close()


def java_clients(bootstrap: str) -> None:
    classes, lib = JAVA_TARGET / "classes", JAVA_TARGET / "lib"
    java = shutil.which("java")
    if java is None or not classes.is_dir() or not lib.is_dir():
        print(f"capture: skipping the Java client (java or {JAVA_TARGET} missing)", file=sys.stderr)
        return
    cp = f"{classes}{os.pathsep}{lib}{os.sep}*"
    runs = [
        ["kaas.interop.ProduceConsume", bootstrap, "seed-java", "50", "2"],
        ["kaas.interop.Transactions", "run", bootstrap, "seed-java-txn", "3", "2", "3"],
        ["kaas.interop.GroupConsume", bootstrap, "seed-java", "seed-java-group", "50", "2"],
    ]
    for args in runs:
        r = subprocess.run([java, "-Xmx256m", "-cp", cp, *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                           text=True, timeout=300)
        print(f"capture: java {args[0]} exit {r.returncode}", file=sys.stderr)


# ------------------------------------------------------------------ main

def write(dirname: str, blobs) -> int:
    d = CORPUS / dirname
    d.mkdir(parents=True, exist_ok=True)
    n = 0
    for b in blobs:
        path = d / hashlib.sha1(b).hexdigest()
        if not path.exists():
            path.write_bytes(b)
            n += 1
    return n


def main() -> int:
    broker_port, proxy_port = free_port(), free_port()
    data = Path(tempfile.mkdtemp(prefix="kaas-capture-"))
    env = dict(os.environ, KAAS_ADVERTISED_LISTENER=f"127.0.0.1:{proxy_port}",
               KAAS_GROUP_INITIAL_REBALANCE_DELAY_MS="0", RUST_LOG="warn")
    log = open(data / "kaas.log", "wb")
    broker = subprocess.Popen([KAAS_BIN, "serve", "--data-dir", str(data / "d"),
                               "--listen", f"127.0.0.1:{broker_port}"], stdout=log, stderr=subprocess.STDOUT,
                              env=env)
    recorder, ready, stop = Recorder(), threading.Event(), threading.Event()
    proxy = threading.Thread(target=run_proxy, args=(proxy_port, broker_port, recorder, ready, stop), daemon=True)
    try:
        wait_for_port(broker_port)
        proxy.start()
        ready.wait(10)
        bootstrap = f"127.0.0.1:{proxy_port}"
        for name, clients in (("confluent-kafka", confluent_clients), ("kafka-python", kafka_python_clients),
                              ("java", java_clients)):
            try:
                clients(bootstrap)
                print(f"capture: {name} done", file=sys.stderr)
            except Exception as e:  # keep what was captured so far
                print(f"capture: {name} failed: {e!r}", file=sys.stderr)
        time.sleep(1)
    finally:
        stop.set()
        proxy.join(10)
        broker.terminate()
        broker.wait(15)
        shutil.rmtree(data, ignore_errors=True)
    with recorder.lock:
        streams = recorder.streams
        frames = [f for fs in recorder.frames.values() for f in fs]
        batches = [b"\x00\x00" + len(b).to_bytes(4, "big") + b for b in recorder.batches[:200]]
    print(f"capture: new seeds: dispatch {write('dispatch', streams)}, decode {write('decode', frames)}, "
          f"batch {write('batch', batches)}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
