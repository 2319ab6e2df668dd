"""An idempotent producer's first Produce request to a partition is refused while its next one is
in flight (eos-rules 15; KAFKA-15591): nothing it was told is delivered may be missing.

The window: during a takeover (or a partition's creation) the first request is refused with
the retriable NOT_LEADER_OR_FOLLOWER, and the partition becomes available before the next
request, already in flight, arrives. A broker that appends that next batch as the first write of
a producer it has no state for (Kafka 4.4 takes any first sequence) loses the first batch: the
Java producer retries it into OUT_OF_ORDER_SEQUENCE_NUMBER until its delivery timeout, and
librdkafka, seeing a later batch succeed, acknowledges the earlier one without an offset
(`rd_kafka_dr_implicit_ack`; a CI run of the JuiceFS stall test lost 270 acknowledged records
with that signature). kaas refuses a first batch past sequence 0 from a producer id the partition
never forgot (OUT_OF_ORDER_SEQUENCE_NUMBER): the client sends it again after the first.

The window is made with a proxy between the client and kaas (kaas advertises the proxy, so
every connection goes through it): it sends the first Produce requests carrying the partition at
sequence 0 to a partition that does not exist (kaas writes nothing and answers
UNKNOWN_TOPIC_OR_PARTITION), answers them to the client as NOT_LEADER_OR_FOLLOWER of the real
partition, and holds each answer until the client's next Produce request for the partition has
gone to kaas. Against kaas before the rule the Java test fails (1,033 of 5,000 records expired
after 120 s of OUT_OF_ORDER_SEQUENCE_NUMBER).
"""
import socket
import struct
import threading
import time

from confluent_kafka import Producer

import javaharness as jh
from conftest import Broker, free_port
from kaashelpers import consume_to_end, create_topic, log_tail, read_frame_or_none, unique_topic

NOWHERE = 9999           # a partition index no topic here has
NOT_LEADER_OR_FOLLOWER = 6
HOLD_S = 2.0             # the longest a refused answer waits for the next request


def _uvarint(b, pos):
    shift = value = 0
    while True:
        byte = b[pos]
        pos += 1
        value |= (byte & 0x7F) << shift
        if byte < 0x80:
            return value, pos
        shift += 7


def _skip_tags(b, pos):
    n, pos = _uvarint(b, pos)
    for _ in range(n):
        _, pos = _uvarint(b, pos)
        size, pos = _uvarint(b, pos)
        pos += size
    return pos


def _string(b, pos, flexible):
    if flexible:
        n, pos = _uvarint(b, pos)
        return b[pos:pos + max(n - 1, 0)], pos + max(n - 1, 0)
    (n,) = struct.unpack_from(">h", b, pos)
    return b[pos + 2:pos + 2 + max(n, 0)], pos + 2 + max(n, 0)


def _count(b, pos, flexible):
    if flexible:
        n, pos = _uvarint(b, pos)
        return n - 1, pos
    return struct.unpack_from(">i", b, pos)[0], pos + 4


def produce_partitions(frame):
    """[(topic, partition, offset of the partition index in frame, base sequence of its batch)]
    of a Produce request (v3-v12: librdkafka's versions; v9+ flexible)."""
    _, version, _ = struct.unpack_from(">hhi", frame, 0)
    flexible = version >= 9
    (client_len,) = struct.unpack_from(">h", frame, 8)
    pos = 10 + max(client_len, 0)
    if flexible:
        pos = _skip_tags(frame, pos)
    _, pos = _string(frame, pos, flexible)          # transactional id
    pos += 6                                        # acks, timeout
    out = []
    topics, pos = _count(frame, pos, flexible)
    for _ in range(topics):
        name, pos = _string(frame, pos, flexible)
        parts, pos = _count(frame, pos, flexible)
        for _ in range(parts):
            (index,) = struct.unpack_from(">i", frame, pos)
            at = pos
            size, pos = _count(frame, pos + 4, flexible)    # records (nullable bytes)
            # a v2 batch: baseSequence after offset, length, leader epoch, magic, crc,
            # attributes, last offset delta, two timestamps, producer id and epoch
            (sequence,) = struct.unpack_from(">i", frame, pos + 53) if size >= 61 else (None,)
            out.append((name.decode(), index, at, sequence))
            pos += max(size, 0)
            if flexible:
                pos = _skip_tags(frame, pos)
        if flexible:
            pos = _skip_tags(frame, pos)
    return out


def refuse_as_not_leader(frame, version, partition):
    """The Produce answer `frame` (one topic, one partition) as NOT_LEADER_OR_FOLLOWER of
    `partition`."""
    flexible = version >= 9
    pos = 4
    if flexible:
        pos = _skip_tags(frame, pos)
    topics, pos = _count(frame, pos, flexible)
    assert topics == 1
    _, pos = _string(frame, pos, flexible)
    parts, pos = _count(frame, pos, flexible)
    assert parts == 1
    index, error = struct.unpack_from(">ih", frame, pos)
    assert (index, error) == (NOWHERE, 3), f"kaas answered {index}/{error} for the nowhere partition"
    out = bytearray(frame)
    struct.pack_into(">ih", out, pos, partition, NOT_LEADER_OR_FOLLOWER)
    return bytes(out)


class RefusingProxy:
    """Forwards every connection to kaas; refuses the first REFUSALS Produce requests that
    carry only `topic`'s partition 0 at sequence 0 (see the module's text). librdkafka sends a
    partition's first request alone; its retry goes with the next requests in flight."""

    REFUSALS = 2

    def __init__(self, port, upstream, topic):
        self.port = port
        self.upstream = upstream
        self.topic = topic
        self.lock = threading.Lock()
        self.refused = {}            # (client socket, correlation id) -> (version, next request sent)
        self.holding = None          # the event of the refusal whose answer waits
        self.held_until_next = []    # per refusal: the next request went out while it waited
        self.server = socket.create_server(("127.0.0.1", port))
        threading.Thread(target=self._accept, daemon=True).start()

    def close(self):
        self.server.close()

    def _accept(self):
        while True:
            try:
                client, _ = self.server.accept()
            except OSError:
                return
            try:
                broker = socket.create_connection(("127.0.0.1", self.upstream))
            except OSError:
                client.close()
                continue
            for target in (self._requests, self._answers):
                threading.Thread(target=target, args=(client, broker), daemon=True).start()

    def _requests(self, client, broker):
        try:
            while (frame := read_frame_or_none(client)) is not None:
                api_key, version, correlation = struct.unpack_from(">hhi", frame, 0)
                parts = produce_partitions(frame) if api_key == 0 else []
                mine = [p for p in parts if p[0] == self.topic and p[1] == 0]
                with self.lock:
                    if mine and self.holding is not None:
                        self.holding.set()
                    if mine and len(parts) == 1 and mine[0][3] == 0 and len(self.refused) < self.REFUSALS:
                        frame = bytearray(frame)
                        struct.pack_into(">i", frame, mine[0][2], NOWHERE)
                        frame = bytes(frame)
                        self.holding = threading.Event()
                        self.refused[(client, correlation)] = (version, self.holding)
                broker.sendall(struct.pack(">i", len(frame)) + frame)
        except OSError:
            pass
        finally:
            broker.close()

    def _answers(self, client, broker):
        try:
            while (frame := read_frame_or_none(broker)) is not None:
                (correlation,) = struct.unpack_from(">i", frame, 0)
                with self.lock:
                    refused = self.refused.get((client, correlation))
                if refused is not None:
                    version, next_sent = refused
                    frame = refuse_as_not_leader(frame, version, 0)
                    self.held_until_next.append(next_sent.wait(HOLD_S))
                client.sendall(struct.pack(">i", len(frame)) + frame)
        except OSError:
            pass
        finally:
            client.close()


def _through_proxy(tmp_path, topic):
    """A broker that advertises a RefusingProxy for `topic` in front of it."""
    proxy_port = free_port()
    broker = Broker(tmp_path / "data", free_port(),
                    extra_env={"KAAS_ADVERTISED_LISTENER": f"127.0.0.1:{proxy_port}"}).start()
    return broker, RefusingProxy(proxy_port, broker.port, topic)


def test_java_producer_first_batch_refused_while_the_next_is_in_flight(tmp_path):
    """The Java producer (default settings: idempotent, acks=all, 5 requests in flight) sends its
    next batches while the refused first one waits: KAFKA-15591's sequence. Appended as a first
    write, the second batch would leave the first one's retries OUT_OF_ORDER until the delivery
    timeout (records lost, the rest out of order); here every record is read back once, in order,
    at the offset its acknowledgement gave."""
    topic = unique_topic("refused-first-java")
    broker, proxy = _through_proxy(tmp_path, topic)
    try:
        count = 5000
        res = jh.produce_consume(f"127.0.0.1:{proxy.port}", topic, count, partitions=1)
        assert len(proxy.held_until_next) == RefusingProxy.REFUSALS, proxy.held_until_next
        assert any(proxy.held_until_next), (
            "the producer sent no next request while a refused one waited: the window was not made")
        s = res.summary
        assert s is not None and res.run.returncode == 0 and s["ok"] is True, (
            f"ProduceConsume failed: {s and s['errors']}\n{res.run.describe()}\n"
            + log_tail(broker, 40))
        assert (s["acked"], s["received"], s["missing"], s["out_of_order"]) == (count, count, 0, 0), s
    finally:
        proxy.close()


def test_librdkafka_first_batch_refused(tmp_path):
    """librdkafka with a steady stream: it sends a partition's first request alone and, after a
    refusal, its retry alone too (seen here: the next request leaves only once the retry is
    answered), so the proxy's refusals do not make the window for it, and this test passes on kaas
    without eos-rules 15's refusal too (checked against b93cd88's binary). What it checks is the
    retry path: two refused first batches, then every record written once, in order, with its
    offset."""
    topic = unique_topic("refused-first-rdkafka")
    broker, proxy = _through_proxy(tmp_path, topic)
    records = 600
    try:
        create_topic(broker.bootstrap, topic, 1)
        errors = []
        producer = Producer({"bootstrap.servers": f"127.0.0.1:{proxy.port}", "acks": "all",
                             "enable.idempotence": True, "linger.ms": 5,
                             "batch.num.messages": 20, "error_cb": errors.append})
        delivered, failed = {}, []

        def on_delivery(err, msg):
            if err is not None:
                failed.append((msg.value(), err))
            else:
                delivered[msg.value()] = msg.offset()

        for i in range(records):
            producer.produce(topic, value=b"r%04d" % i, on_delivery=on_delivery)
            producer.poll(0)
            time.sleep(0.005)
        deadline = time.time() + 60
        while len(producer) > 0 and time.time() < deadline:
            producer.flush(1.0)
        assert len(producer) == 0, f"{len(producer)} records undelivered after 60 s"
        assert len(proxy.held_until_next) == RefusingProxy.REFUSALS, proxy.held_until_next
        assert not failed, f"{len(failed)} deliveries failed, first: {failed[:3]}"
        assert not [e for e in errors if e.fatal()], f"fatal producer errors: {errors}"
        without_offset = sorted(v for v, off in delivered.items() if off is None or off < 0)
        assert not without_offset, f"{len(without_offset)} acknowledged without an offset"
        log = consume_to_end(broker.bootstrap, topic, 1, "read_uncommitted")[0]
        assert [v for _, _, v in log] == [b"r%04d" % i for i in range(records)]
    finally:
        proxy.close()
