"""Malformed input on raw sockets must close that one connection, never hurt the broker
or the data; ApiVersions with an unknown version must get Kafka's v0-format
UNSUPPORTED_VERSION answer."""
import random
import socket
import struct

import pytest
from confluent_kafka import Producer

from kaashelpers import (assert_no_panic, consume_to_end, create_topic, log_tail,
                         produce_confluent, read_frame, request_frame, send_ignoring_reset,
                         unique_topic, wait_closed)

CLOSE_TIMEOUT = 5.0
API_VERSIONS = 18
UNSUPPORTED_VERSION = 35


def _random_stream() -> bytes:
    data = bytearray(random.Random(20251129).randbytes(4096))
    data[0] |= 0x80           # the length prefix reads as a negative int32
    return bytes(data)


def _random_frame() -> bytes:
    # Valid frame size and Produce v9 key/version, then a client_id claiming 32767
    # bytes (more than the frame holds) followed by random bytes.
    body = struct.pack(">hhih", 0, 9, 77, 0x7FFF) + random.Random(7).randbytes(4000)
    return struct.pack(">i", len(body)) + body


GARBAGE = {
    # (a) a frame shorter than any request header: length 2, then 2 bytes
    "a_short_frame": struct.pack(">i", 2) + b"\x00\x12",
    # (a') an empty frame
    "a_zero_length_frame": struct.pack(">i", 0),
    # (b) a 2 GiB length prefix, then a little data that never completes it
    "b_2gib_length": struct.pack(">i", 0x7FFFFFFF) + b"\x00\x12\x00\x03" + b"\x00" * 60,
    # (c) random garbage bytes
    "c_random_stream": _random_stream(),
    "c_random_frame": _random_frame(),
    # (d) well-formed header, unknown api key 9999
    "d_unknown_api_key": request_frame(9999, 0, 4242, "kaas-raw"),
    # (e) a 22-byte Metadata request claiming 2^31-1 topics (an allocation of ~150 GB if the
    # decoder trusted the count), in the classic and the flexible (compact array) encoding
    "e_huge_array_count": request_frame(3, 1, 4243, "kaas-raw", body=struct.pack(">i", 0x7FFFFFFF)),
    "e_huge_compact_array_count": request_frame(3, 9, 4244, "kaas-raw", body=b"\xff\xff\xff\xff\x07",
                                                flexible_header=True),
}


def _records(prefix, n):
    return [(f"{prefix}-k{i % 5}".encode(), f"{prefix}-{i}".encode()) for i in range(n)]


def _check_broker_still_serves(broker, topic, before, producer):
    """Broker alive; the client that was connected before the garbage still produces;
    fresh clients produce and consume; everything acknowledged earlier is readable."""
    assert broker.alive(), "broker process died:\n" + log_tail(broker)
    after_old = produce_confluent(broker.bootstrap, topic, _records("after-old", 50),
                                  producer=producer)
    after_new = produce_confluent(broker.bootstrap, topic, _records("after-new", 50))
    by_part = consume_to_end(broker.bootstrap, topic, 2, "read_uncommitted", timeout=60)
    read = {(p, off): (k, v) for p, recs in by_part.items() for off, k, v in recs}
    for k, v, p, off in before + after_old + after_new:
        assert read.get((p, off)) == (k, v), \
            f"acknowledged record {v!r} at {p}/{off} not read back (got {read.get((p, off))!r})"
    values = [v for k, v in read.values()]
    assert len(values) == len(set(values)), "duplicate records after the malformed input"
    assert broker.alive()
    assert_no_panic(broker)


@pytest.mark.parametrize("case", list(GARBAGE))
def test_malformed_input_closes_only_that_connection(broker, case):
    topic = unique_topic(f"garbage-{case.replace('_', '-')}")
    create_topic(broker.bootstrap, topic, 2)
    producer = Producer({"bootstrap.servers": broker.bootstrap, "enable.idempotence": True,
                         "acks": "all", "linger.ms": 5})
    before = produce_confluent(broker.bootstrap, topic, _records("before", 200),
                               producer=producer)

    with socket.create_connection(("127.0.0.1", broker.port), timeout=5) as s:
        send_ignoring_reset(s, GARBAGE[case])
        closed, received = wait_closed(s, CLOSE_TIMEOUT)
    assert closed, (f"{case}: broker did not close the connection within {CLOSE_TIMEOUT}s "
                    f"(received {received[:64]!r})\n{log_tail(broker)}")

    _check_broker_still_serves(broker, topic, before, producer)


def _parse_api_versions_v0(frame: bytes, correlation_id: int):
    """Response header v0 + ApiVersions v0 body. Returns (error, {key: (min, max)})."""
    assert len(frame) >= 10, f"response too short: {frame!r}"
    corr, error, n = struct.unpack_from(">ihi", frame, 0)
    assert corr == correlation_id, f"correlation id {corr}, expected {correlation_id}"
    assert 0 <= n < 1000, f"implausible api_keys array length {n}"
    assert len(frame) == 10 + 6 * n, (
        f"response is {len(frame)} bytes, a v0 body with {n} entries is {10 + 6 * n}: "
        f"not v0 format (e.g. flexible encoding or throttle_time_ms added)")
    ranges = {}
    for i in range(n):
        key, lo, hi = struct.unpack_from(">hhh", frame, 10 + 6 * i)
        ranges[key] = (lo, hi)
    return error, ranges


def test_api_versions_unsupported_version(broker):
    topic = unique_topic("apiv99")
    create_topic(broker.bootstrap, topic, 2)
    producer = Producer({"bootstrap.servers": broker.bootstrap, "enable.idempotence": True,
                         "acks": "all"})
    before = produce_confluent(broker.bootstrap, topic, _records("before", 100),
                               producer=producer)

    # Real clients send ApiVersions v3+ with request header v2 (header v1 + an empty
    # tagged-field section) and a v3 body; a broker that does not know the version must
    # not need either to answer.
    software = b"\x09kaas-raw" + b"\x041.0" + b"\x00"   # compact strings + no tags
    with socket.create_connection(("127.0.0.1", broker.port), timeout=5) as s:
        s.sendall(request_frame(API_VERSIONS, 99, 1234, "kaas-raw", body=software,
                                flexible_header=True))
        try:
            frame = read_frame(s, timeout=5)
        except (ConnectionError, OSError) as e:
            pytest.fail(f"no ApiVersions response to v99: {e!r}\n{log_tail(broker)}")
        error, ranges = _parse_api_versions_v0(frame, 1234)
        assert error == UNSUPPORTED_VERSION, f"error_code {error}, expected 35 (UNSUPPORTED_VERSION)"
        assert API_VERSIONS in ranges, f"ApiVersions' own range missing from {ranges}"
        lo, hi = ranges[API_VERSIONS]
        assert 0 <= lo <= 3 <= hi < 99, f"advertised ApiVersions range {lo}..{hi}"
        for key, (a, b) in ranges.items():
            assert 0 <= a <= b, f"api key {key}: bad range {a}..{b}"

        # Clients retry on the same connection with a version from that answer.
        s.sendall(request_frame(API_VERSIONS, 0, 1235, "kaas-raw"))
        try:
            frame = read_frame(s, timeout=5)
        except (ConnectionError, OSError) as e:
            pytest.fail(f"connection unusable after the v99 answer: {e!r}\n{log_tail(broker)}")
        error, ranges0 = _parse_api_versions_v0(frame, 1235)
        assert error == 0, f"ApiVersions v0 error_code {error}"
        for key in (0, 1, 2, 3, 18, 22):   # Produce, Fetch, ListOffsets, Metadata, ApiVersions, InitProducerId
            assert key in ranges0, f"api key {key} not advertised: {sorted(ranges0)}"
        assert ranges0[API_VERSIONS] == (lo, hi)

    _check_broker_still_serves(broker, topic, before, producer)
