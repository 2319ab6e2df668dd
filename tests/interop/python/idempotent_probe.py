"""An idempotent producer spoken on the wire by hand, for retrying one exact batch across a
fault: InitProducerId (no transactional id), then one batch of one record per partition
(sequence 0, acks=-1) sent to the partition's leader; later the very same bytes are sent again
to whichever broker leads the partition then. A retry of a batch the partition already has must
be answered as the duplicate it is (NONE with the original base offset, eos-rules 19) and add
nothing. The probe looks like a test_cluster_juicefs.Load to `tally` (prefix, produced,
partition_of, acked, failed), so its records are counted like every producer's: each once,
where acknowledged.

Batches are built with kafka-python's DefaultRecordBatchBuilder (CRC-32C and varints);
requests and answers (InitProducerId v0, Produce v3) are encoded here.
"""
import socket
import struct
import time

from kafka.record.default_records import DefaultRecordBatchBuilder

from kaashelpers import read_frame, request_frame

RETRIABLE = {5, 6, 7, 13, 14, 15, 19, 20}   # leader/coordinator moving, timeouts, not enough replicas


def _call(port, api_key, version, body, timeout=5.0):
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=timeout) as s:
            s.sendall(request_frame(api_key, version, 7, body=body))
            return read_frame(s, timeout)
    except (OSError, ConnectionError, AssertionError):
        return None


def init_producer_id(port):
    """(error code, producer id, epoch) from InitProducerId v0 without a transactional id."""
    resp = _call(port, 22, 0, struct.pack(">hi", -1, 60_000))
    if resp is None:
        return None
    _cid, _throttle, error, pid, epoch = struct.unpack_from(">iihqh", resp)
    return error, pid, epoch


def produce(port, topic, partition, batch):
    """(error code, base offset) of Produce v3 (acks=-1) of `batch` to one partition, or None
    when the broker does not answer."""
    t = topic.encode()
    body = struct.pack(">hhii", -1, -1, 30_000, 1) + struct.pack(">h", len(t)) + t
    body += struct.pack(">iii", 1, partition, len(batch)) + batch
    resp = _call(port, 0, 3, body, timeout=35.0)
    if resp is None:
        return None
    at = 4 + 4                                    # correlation id, number of topics (1)
    (n,) = struct.unpack_from(">h", resp, at)
    at += 2 + n + 4                               # topic name, number of partitions (1)
    _index, error, base_offset = struct.unpack_from(">ihq", resp, at)
    return error, base_offset


class RetryProbe:
    """One record per partition of `topic` from one idempotent producer id; `send(leaders)` writes
    them, `retry(leaders)` sends each batch again. `leaders()` -> {partition: port of its
    leader} (or None while unknown)."""

    prefix = b"r"

    def __init__(self, topic, partitions):
        self.topic = topic
        self.partitions = tuple(partitions)
        self.produced = len(self.partitions)
        self.acked = {}          # n -> (partition, offset, time acknowledged)
        self.failed = {}
        self.client_errors = []
        self.batches = {}        # partition -> bytes

    def partition_of(self, n):
        return self.partitions[n]

    def fatal(self):
        return []

    def _until_answered(self, leaders, partition, timeout, what):
        """Sends this partition's batch to its leader until the answer is not retriable."""
        deadline = time.time() + timeout
        last = None
        while time.time() < deadline:
            port = (leaders() or {}).get(partition)
            last = produce(port, self.topic, partition, self.batches[partition]) if port else None
            if last is not None and last[0] not in RETRIABLE:
                return last
            time.sleep(0.2)
        raise AssertionError(f"{what}: partition {partition} of {self.topic} got no final answer "
                             f"within {timeout}s (last {last})")

    def send(self, port, leaders, timeout=30.0):
        got = init_producer_id(port)
        assert got is not None and got[0] == 0, f"InitProducerId (idempotent) answered {got}"
        _, pid, epoch = got
        for n, p in enumerate(self.partitions):
            b = DefaultRecordBatchBuilder(magic=2, compression_type=0, is_transactional=False,
                                          producer_id=pid, producer_epoch=epoch, base_sequence=0,
                                          batch_size=1 << 20)
            b.append(0, int(time.time() * 1000), b"k", self.prefix + b"%d" % n, [])
            self.batches[p] = bytes(b.build())
            error, offset = self._until_answered(leaders, p, timeout, "the probe's first send")
            assert error == 0, f"the probe's batch to partition {p} was refused with error {error}"
            self.acked[n] = (p, offset, time.time())
        return self

    def retry(self, leaders, timeout=30.0):
        """{partition: (error, base offset)} of sending every batch again; the caller compares
        them with the first answers (`acked`)."""
        return {p: self._until_answered(leaders, p, timeout, "the probe's retry")
                for p in self.partitions}

    def check_retries(self, answers):
        """The retries that were not answered as duplicates: [(partition, first offset, answer)]."""
        return [(p, self.acked[n][1], answers[p]) for n, p in enumerate(self.partitions)
                if answers[p] != (0, self.acked[n][1])]
