"""kcat (Debian's, on librdkafka 2.0.x): produce lines with -P (plain and idempotent),
consume with -C -e -o beginning, compare."""
import collections
import re
import shutil
import subprocess

import pytest

from kaashelpers import assert_no_panic, create_topic, log_tail, unique_topic

KCAT = shutil.which("kcat") or shutil.which("kafkacat")
TIMEOUT = 90


def kcat(*args, stdin=None):
    assert KCAT is not None, ("kcat (or kafkacat) not found on PATH: install it "
                              "(`apt-get install -y kcat`; scripts/test.sh does) and run again")
    return subprocess.run([KCAT, *args], input=stdin, capture_output=True, timeout=TIMEOUT)


def check_ok(res, what, broker):
    stderr = res.stderr.decode(errors="replace")
    assert res.returncode == 0, (f"{what}: kcat exited {res.returncode}\nstderr:\n{stderr}\n"
                                 f"broker log tail:\n{log_tail(broker)}")
    # librdkafka log lines look like "%<level>|...": 0-3 are emerg..err; 4+ are warnings
    # (e.g. retriable "Coordinator load in progress") and information.
    bad = [line for line in stderr.splitlines()
           if re.match(r"%[0-3]\|", line) or line.startswith("% ERROR")
           or "Delivery failed" in line or "Failed to produce" in line]
    assert not bad, f"{what}: kcat reported errors:\n{stderr}\nbroker log tail:\n{log_tail(broker)}"


IDEMPOTENCE = {
    "plain": [],
    "idempotent": ["-X", "enable.idempotence=true"],
}


@pytest.mark.parametrize("mode", list(IDEMPOTENCE))
def test_kcat_single_partition_roundtrip(broker, mode):
    topic = unique_topic(f"kcat-{mode}")
    create_topic(broker.bootstrap, topic, 1)
    lines = [f"line {i} {'x' * (i % 50)} é{i * 7}" for i in range(2_000)]
    payload = ("\n".join(lines) + "\n").encode()

    # two producer runs so that the second appends after the first run's records
    half = len(lines) // 2
    for chunk in (lines[:half], lines[half:]):
        res = kcat("-b", broker.bootstrap, "-t", topic, "-P", "-p", "0",
                   "-X", "acks=all", *IDEMPOTENCE[mode],
                   stdin=("\n".join(chunk) + "\n").encode())
        check_ok(res, f"kcat -P ({mode})", broker)

    res = kcat("-b", broker.bootstrap, "-t", topic, "-C", "-p", "0", "-e", "-o", "beginning",
               "-q")
    check_ok(res, "kcat -C", broker)
    assert res.stdout == payload, (
        f"consumed output differs: {len(res.stdout.splitlines())} lines read, "
        f"{len(lines)} produced; first read lines: {res.stdout.splitlines()[:5]}")

    # offsets must be 0..n-1, in order
    res = kcat("-b", broker.bootstrap, "-t", topic, "-C", "-p", "0", "-e", "-o", "beginning",
               "-q", "-f", "%o\n")
    check_ok(res, "kcat -C -f %o", broker)
    offsets = [int(x) for x in res.stdout.split()]
    assert offsets == list(range(len(lines)))
    assert_no_panic(broker)


def test_kcat_keyed_multi_partition_idempotent(broker):
    topic = unique_topic("kcat-keyed")
    partitions = 3
    create_topic(broker.bootstrap, topic, partitions)
    counters = collections.Counter()
    lines = []
    for i in range(3_000):
        key = f"key{i % 11}"
        lines.append(f"{key}:{counters[key]}")
        counters[key] += 1
    res = kcat("-b", broker.bootstrap, "-t", topic, "-P", "-K", ":",
               "-X", "enable.idempotence=true",
               stdin=("\n".join(lines) + "\n").encode())
    check_ok(res, "kcat -P -K", broker)

    res = kcat("-b", broker.bootstrap, "-t", topic, "-C", "-e", "-o", "beginning", "-q",
               "-f", "%p|%o|%k|%s\n")
    check_ok(res, "kcat -C (all partitions)", broker)
    rows = [line.split("|") for line in res.stdout.decode().splitlines()]
    assert len(rows) == len(lines), f"read {len(rows)} records, produced {len(lines)}"
    per_key = collections.defaultdict(list)
    key_part = {}
    for p, o, k, v in rows:
        assert key_part.setdefault(k, p) == p, f"key {k} in partitions {key_part[k]} and {p}"
        per_key[k].append(int(v))
    for k, seq in per_key.items():
        assert seq == list(range(counters[k])), f"key {k}: values {seq[:20]}..."
    assert_no_panic(broker)
