"""Helpers shared by the Python interop tests (real clients against the real kaas binary).

Everything here talks to a broker only through public client APIs or raw Kafka wire
frames built by hand, so the tests stay black-box.
"""
import collections
import os
import re
import shutil
import socket
import struct
import subprocess
import time
import uuid

from confluent_kafka import Consumer, KafkaError, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from conftest import ANSI_RE, poll_until


def find_go():
    """The go binary: on PATH, else where the official tarball or $GOROOT puts it; None when
    there is none (scripts/test.sh installs one)."""
    candidates = [shutil.which("go"), "/usr/local/go/bin/go"]
    if os.environ.get("GOROOT"):
        candidates.append(os.path.join(os.environ["GOROOT"], "bin", "go"))
    for c in candidates:
        if c and os.path.isfile(c) and os.access(c, os.X_OK):
            return c
    return None


def go_build(module_dir, out, needs: str) -> str:
    """Builds the Go program in `module_dir` into `out` with its committed go.sum
    (-mod=readonly: a go.sum that does not match go.mod fails instead of being rewritten; the Go
    module proxy supplies the modules on a fresh machine). `needs` names the test and the Go it
    needs, for the message when there is no toolchain: the tests fail, never skip."""
    go = find_go()
    assert go is not None, (
        f"{needs} and found no Go toolchain (not on PATH, not at /usr/local/go/bin/go, not in "
        "$GOROOT/bin). Install the tarball from https://go.dev/dl/ into /usr/local/go, or run "
        "scripts/test.sh, which fetches one")
    env = dict(os.environ, GOFLAGS="-mod=readonly -buildvcs=false")
    proc = subprocess.run([go, "build", "-o", str(out), "."], cwd=module_dir, env=env,
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=600)
    assert proc.returncode == 0, f"go build in {module_dir} failed:\n{proc.stdout[-6000:]}"
    return str(out)


_REQUEST_RE = re.compile(r"\brequest\b.*\bapi=(\w+) version=(\d+)")


def request_counts(broker):
    """Counter of (api name, version) from the broker's per-request trace lines (a broker
    started with RUST_LOG=kaas::protocol::connection=trace)."""
    seen = collections.Counter()
    with open(broker.log_path, errors="replace") as f:
        for line in f:
            m = _REQUEST_RE.search(ANSI_RE.sub("", line))
            if m:
                seen[(m.group(1), int(m.group(2)))] += 1
    return seen


def unique_topic(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:10]}"


def log_tail(broker, lines: int = 80) -> str:
    """Last lines of the broker log, for assertion messages."""
    text = broker.log_text().splitlines()
    return "\n".join(text[-lines:])


def assert_no_panic(broker):
    """Fails now if the broker logged a panic (the fixtures also check this, and more, when the
    test ends: see Broker.stop in conftest.py)."""
    from conftest import PANIC_RE
    assert not PANIC_RE.search(broker.log_text()), \
        "broker log shows a panic:\n" + log_tail(broker, 120)


# ----------------------------------------------------------------------------- topics

def create_topic(bootstrap: str, topic: str, partitions: int, timeout: float = 30.0) -> None:
    """Create a topic with AdminClient (CreateTopics) and wait until Metadata shows
    every partition with a leader."""
    admin = AdminClient({"bootstrap.servers": bootstrap})
    futures = admin.create_topics(
        [NewTopic(topic, num_partitions=partitions, replication_factor=1)],
        request_timeout=timeout)
    futures[topic].result(timeout=timeout)
    wait_topic_ready(bootstrap, topic, partitions, timeout, admin=admin)


def wait_topic_ready(bootstrap: str, topic: str, partitions: int, timeout: float = 30.0,
                     admin=None) -> None:
    admin = admin or AdminClient({"bootstrap.servers": bootstrap})
    deadline = time.time() + timeout
    last = None
    while time.time() < deadline:
        try:
            md = admin.list_topics(topic=topic, timeout=5)
            t = md.topics.get(topic)
            if t is not None and t.error is None and len(t.partitions) == partitions and all(
                    p.leader >= 0 and p.error is None for p in t.partitions.values()):
                return
            last = t
        except KafkaException as e:  # broker briefly unreachable, keep polling
            last = e
        time.sleep(0.1)
    raise AssertionError(f"topic {topic} not ready with {partitions} partitions "
                         f"within {timeout}s; last metadata: {last!r}")


# ------------------------------------------------------------------- confluent-kafka

def produce_confluent(bootstrap: str, topic: str, records, conf=None, timeout: float = 60.0,
                      producer=None):
    """Produce (key, value) pairs (bytes or str) and wait for every delivery report.

    Returns a list of (key, value, partition, offset) in produce order. Raises
    AssertionError if any delivery failed or reports did not all arrive in time."""
    own = producer is None
    if own:
        c = {"bootstrap.servers": bootstrap, "acks": "all", "enable.idempotence": True,
             "linger.ms": 5}
        c.update(conf or {})
        producer = Producer(c)
    results = [None] * len(records)
    errors = []

    def cb(i):
        def on_delivery(err, msg):
            if err is not None:
                errors.append((i, err))
            else:
                results[i] = (msg.key(), msg.value(), msg.partition(), msg.offset())
        return on_delivery

    for i, (k, v) in enumerate(records):
        while True:
            try:
                producer.produce(topic, key=k, value=v, on_delivery=cb(i))
                break
            except BufferError:
                producer.poll(0.05)
        producer.poll(0)
    deadline = time.time() + timeout
    while len(producer) > 0 and time.time() < deadline:
        producer.flush(min(1.0, max(0.0, deadline - time.time())))
    assert len(producer) == 0, f"{len(producer)} messages still undelivered after {timeout}s"
    assert not errors, f"delivery failed for {len(errors)} messages, first: {errors[:3]}"
    assert all(r is not None for r in results)
    return results


def watermarks(bootstrap: str, topic: str, partitions: int, timeout: float = 30.0):
    """High watermark per partition (ListOffsets latest, read_uncommitted)."""
    return end_offsets(bootstrap, topic, partitions, "read_uncommitted", timeout)


# --------------------------------------------------------------------- raw protocol

def request_frame(api_key: int, api_version: int, correlation_id: int,
                  client_id: str = "kaas-raw", body: bytes = b"",
                  flexible_header: bool = False) -> bytes:
    """A size-prefixed request: header v1 (key, version, correlation id, nullable
    string client id) or v2 (v1 + empty tagged fields), then body."""
    cid = client_id.encode()
    header = struct.pack(">hhih", api_key, api_version, correlation_id, len(cid)) + cid
    if flexible_header:
        header += b"\x00"  # no tagged fields
    payload = header + body
    return struct.pack(">i", len(payload)) + payload


def recv_exact(sock: socket.socket, n: int, deadline) -> bytes:
    """`n` bytes; ConnectionError when the peer closes first. `deadline` None: the socket's own
    timeout applies."""
    buf = b""
    while len(buf) < n:
        if deadline is not None:
            sock.settimeout(max(0.01, deadline - time.time()))
        chunk = sock.recv(n - len(buf))
        if not chunk:
            raise ConnectionError(f"connection closed after {len(buf)} of {n} bytes")
        buf += chunk
    return buf


def read_frame(sock: socket.socket, timeout: float = 5.0) -> bytes:
    deadline = time.time() + timeout
    (size,) = struct.unpack(">i", recv_exact(sock, 4, deadline))
    assert 0 <= size < 64 * 1024 * 1024, f"implausible response size {size}"
    return recv_exact(sock, size, deadline)


def read_frame_or_none(sock: socket.socket):
    """One size-prefixed frame's payload, or None when the peer closed the connection (the
    socket's own timeout applies, none by default)."""
    try:
        (size,) = struct.unpack(">i", recv_exact(sock, 4, None))
        assert 0 <= size < 64 * 1024 * 1024, f"implausible frame size {size}"
        return recv_exact(sock, size, None)
    except ConnectionError:
        return None


def wait_closed(sock: socket.socket, timeout: float = 5.0):
    """Wait for the peer to close. Returns (closed: bool, bytes received meanwhile)."""
    deadline = time.time() + timeout
    received = b""
    while time.time() < deadline:
        sock.settimeout(max(0.01, deadline - time.time()))
        try:
            chunk = sock.recv(65536)
        except socket.timeout:
            break
        except (ConnectionResetError, BrokenPipeError):
            return True, received
        if not chunk:
            return True, received
        received += chunk
    return False, received


def send_ignoring_reset(sock: socket.socket, data: bytes) -> None:
    """sendall that tolerates the broker closing the socket while we still write."""
    try:
        sock.sendall(data)
    except (ConnectionResetError, BrokenPipeError):
        pass


def find_coordinator(bootstrap: str, key: str, key_type: int = 1, timeout: float = 5.0):
    """FindCoordinator v1 (key_type 1: transactional id, 0: group) sent raw to the first broker
    of `bootstrap`: (error code, node id)."""
    host, port = bootstrap.split(",")[0].rsplit(":", 1)
    k = key.encode()
    body = struct.pack(">h", len(k)) + k + struct.pack(">b", key_type)
    with socket.create_connection((host, int(port)), timeout=timeout) as sock:
        sock.sendall(request_frame(10, 1, 7, body=body))
        resp = read_frame(sock, timeout)
    _corr, _throttle, error = struct.unpack(">iih", resp[:10])
    (msg_len,) = struct.unpack(">h", resp[10:12])
    at = 12 + max(msg_len, 0)
    (node_id,) = struct.unpack(">i", resp[at:at + 4])
    return error, node_id


# ------------------------------------------------------------ transactions (read side)

def end_offsets(bootstrap: str, topic: str, partitions: int, isolation: str = "read_uncommitted",
                timeout: float = 30.0, client=None):
    """ListOffsets(LATEST) per partition with the given isolation level: the high watermark for
    read_uncommitted, the last stable offset (LSO) for read_committed.

    (librdkafka's query_watermark_offsets sends the consumer's isolation.level; librdkafka
    needs a group.id to create a Consumer even when it never joins a group.)"""
    def consumer():
        return Consumer({"bootstrap.servers": bootstrap, "group.id": unique_topic("eo"),
                         "enable.auto.commit": False, "isolation.level": isolation,
                         **(client or {})})
    c = consumer()
    try:
        out = {}
        deadline = time.time() + timeout
        for p in range(partitions):
            while True:
                try:
                    _, high = c.get_watermark_offsets(TopicPartition(topic, p), timeout=5)
                    out[p] = high
                    break
                except KafkaException as e:
                    if time.time() > deadline:
                        print(f"end_offsets gave up on {topic}-{p}: {e}; each broker's Metadata: "
                              f"{_metadata_views(bootstrap, topic)}")
                        raise
                    if e.args[0].code() == KafkaError._UNKNOWN_PARTITION:
                        # librdkafka's leader lookup (rd_kafka_topic_partition_list_get_leaders)
                        # takes a cached partition with no leader (Metadata's
                        # LEADER_NOT_AVAILABLE with leader -1, as Kafka answers during a
                        # failover) as final: every call answers _UNKNOWN_PARTITION at once
                        # and the topic is not asked for again until the cache entry expires
                        # (metadata.max.age.ms, 15 minutes). A new client asks.
                        print(f"end_offsets: {topic}-{p}: {e}; asking again with a new client")
                        c.close()
                        c = consumer()
                    time.sleep(0.2)
        return out
    finally:
        c.close()


def settled_end_offsets(bootstrap: str, topic: str, partitions: int, timeout: float = 30.0):
    """The high watermarks once no transaction is left open: polls until a high-watermark read,
    an LSO read and another high-watermark read agree. The coordinator writes a transaction's
    markers after answering EndTxn (as Kafka's does), so right after a commit the LSO may still
    trail; two racing reads compared once would fail on that. Raises AssertionError with the
    last reads when `timeout` passes first."""
    seen = []

    def settled():
        reads = (end_offsets(bootstrap, topic, partitions, "read_uncommitted"),
                 end_offsets(bootstrap, topic, partitions, "read_committed"),
                 end_offsets(bootstrap, topic, partitions, "read_uncommitted"))
        seen.append(reads)
        return reads[2] if reads[0] == reads[1] == reads[2] else None
    try:
        return poll_until(settled, timeout, f"the LSO of {topic} at a stable high watermark", 0.1)
    except AssertionError as e:
        raise AssertionError(f"{e}; last (hw, lso, hw) reads {seen[-3:]}") from None


def _metadata_views(bootstrap: str, topic: str):
    """{broker: its Metadata answer for `topic`}: what a failed lookup shows (which broker
    did not know the topic or its leader)."""
    views = {}
    for b in bootstrap.split(","):
        try:
            md = AdminClient({"bootstrap.servers": b}).list_topics(topic, timeout=3)
            t = md.topics.get(topic)
            views[b] = (str(t.error) if t is not None and t.error else
                        {p: (m.leader, str(m.error) if m.error else None) for p, m in (t.partitions.items() if t else [])})
        except KafkaException as e:
            views[b] = f"no answer: {e}"
    return views


def consume_to_end(bootstrap: str, topic: str, partitions: int, isolation: str,
                   timeout: float = 60.0, targets=None, client=None):
    """Read every partition from offset 0 with a confluent-kafka Consumer (assign(), no group
    membership, nothing committed) and the given isolation.level, until each partition reports
    end-of-partition at or beyond its target offset (default: the current read_uncommitted high
    watermark, so a read_committed reader only finishes once the LSO has reached it).

    Control records (transaction markers) are never delivered to the application, which is why
    this waits for _PARTITION_EOF instead of for the last offset.

    Returns {partition: [(offset, key, value), ...]} in read order. Raises AssertionError when
    the targets are not reached in time (e.g. an LSO stuck behind an open transaction)."""
    if targets is None:
        targets = end_offsets(bootstrap, topic, partitions, "read_uncommitted", client=client)
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": unique_topic("reader"),
                  "enable.auto.commit": False, "enable.auto.offset.store": False,
                  "auto.offset.reset": "earliest", "fetch.wait.max.ms": 100,
                  "enable.partition.eof": True, "isolation.level": isolation, **(client or {})})
    out = {p: [] for p in range(partitions)}
    eof_at = {p: None for p in range(partitions)}
    try:
        c.assign([TopicPartition(topic, p, 0) for p in range(partitions)])
        deadline = time.time() + timeout
        while not all(eof_at[p] is not None and eof_at[p] >= targets[p] for p in range(partitions)):
            if time.time() > deadline:
                got = {p: len(v) for p, v in out.items()}
                raise AssertionError(
                    f"{isolation} reader of {topic} did not reach offsets {targets} within "
                    f"{timeout}s; last end-of-partition offsets {eof_at}; records read per "
                    f"partition: {got}")
            msg = c.poll(0.5)
            if msg is None:
                continue
            if msg.error():
                if msg.error().code() == KafkaError._PARTITION_EOF:
                    eof_at[msg.partition()] = msg.offset()
                    continue
                raise AssertionError(f"{isolation} consumer error: {msg.error()}")
            out[msg.partition()].append((msg.offset(), msg.key(), msg.value()))
        return out
    finally:
        c.close()


def run_transactions(producer, topic: str, partitions: int, txns: int, before=lambda t: None,
                     deadline_s: float = 90.0):
    """`txns` transactions of one record per partition (value `t<t>-p<p>`) with a librdkafka
    transactional producer, every third aborted; a transaction whose produce fails (not fatally)
    is aborted, a commit that needs an abort is aborted, retriable errors are retried.
    `before(t)` runs before transaction t (a test kills a broker there). Returns {t: "commit" or
    "abort"}, what each transaction ended as."""
    outcome = {}
    for t in range(txns):
        before(t)
        commit = t % 3 != 2
        deadline = time.time() + deadline_s
        try:
            producer.begin_transaction()
            for p in range(partitions):
                while True:
                    try:
                        producer.produce(topic, key=f"t{t}".encode(), value=f"t{t}-p{p}".encode(), partition=p)
                        break
                    except BufferError:
                        producer.poll(0.05)
            if not commit:
                producer.flush(30)
        except KafkaException as e:
            assert not e.args[0].fatal(), e
            commit = False
        op = "commit" if commit else "abort"
        while True:
            try:
                if op == "commit":
                    producer.commit_transaction(30)
                else:
                    producer.abort_transaction(30)
                outcome[t] = op
                break
            except KafkaException as e:
                err = e.args[0]
                assert not err.fatal(), f"txn {t}: fatal {err}"
                if op == "commit" and err.txn_requires_abort():
                    op = "abort"
                    continue
                assert err.retriable() and time.time() < deadline, f"txn {t}: {op} failed: {err}"
    return outcome
