"""The log cleaner on the shared-disk cluster (issue K, eos-rules 68): three kaas brokers on one
directory; a compacted partition written by librdkafka (idempotent and transactional, a third
of the transactions aborted); its leader is stopped (SIGSTOP) while a throttled pass writes its
`.cleaning` file, so that it is a zombie with a pass in flight when another broker takes the
partition over.

What must hold: the new leader serves every record at the offset it was written, and no aborted
one, whatever the stopped pass had done; it cleans the log itself (a cleaned file of its own
epoch); the stopped broker, resumed, finds its fence and exits (code 75) without changing what
the new leader reads; restarted, and after every broker restarts, the log reads the same, each
key once in the cleaned segments at its latest value; and the directory holds no segment name of
an epoch older than the last seal (the new owner reaches every file it trusts through links of
its own, store::cluster::seal::linked_name, so a zombie's late unlinks touch nothing it reads).
"""
import os
import re
import signal
import time

from conftest import poll_until
from kaashelpers import unique_topic
from test_cluster_juicefs import (FENCED_EXIT_CODE, LEASE_NOT_FRESH, STALE_BROKER_ERRORS, STALL_ENV,
                                  wait_members)
from test_cluster_stall import cluster  # noqa: F401 (the fixture)
from test_compaction import (_check_cleaned_view, _create_compacted, _latest, _plain, _transactions,
                             _view)
import pytest
from confluent_kafka import KafkaException, Producer
from confluent_kafka.admin import AdminClient

# conftest.py: bounds a stall and a failover by the clock; runs alone.
pytestmark = pytest.mark.serial

ENV = dict(STALL_ENV, KAAS_WHEN_FENCED="exit", KAAS_CLEANER_BACKOFF_MS="200",
           KAAS_CLEANER_IO_MAX_BYTES_PER_SECOND="1000000")
SEGMENT = re.compile(r"^\d{20}(\.c\d+)?(\.e(\d+))?\.log$")
LINK = re.compile(r"^\d{20}(\.c\d+)?(\.e\d+)?\.s(\d+)\.log$")


def _committed(view):
    return [r for r in view if "ABORT" not in (r[2] or "")]


def _leader(cluster, topic, asked=None):
    """The broker `asked` (default: the first one running) names as the partition's leader."""
    asked = asked or next(b for b in cluster.brokers if b.alive())
    try:
        md = AdminClient({"bootstrap.servers": asked.bootstrap}).list_topics(topic, timeout=3)
        part = md.topics[topic].partitions.get(0)
    except KafkaException:
        return None
    if part is None or part.error is not None:
        return None
    return next((b for b in cluster.brokers if b.node_id == part.leader), None)


def _same_records(before, bootstrap, topic, what):
    """Every record read (read_uncommitted) is the one written at its offset, the latest
    committed value of every key is there, and read_committed shows no aborted record."""
    after = _view(bootstrap, topic, "read_uncommitted")
    at = {o: (k, v) for o, k, v in before}
    for o, k, v in after:
        assert at.get(o) == (k, v), f"{what}: offset {o} holds {(k, v)}, written as {at.get(o)}"
    assert _latest(_committed(after)) == _latest(_committed(before)), f"{what}: a latest value was lost"
    committed = _view(bootstrap, topic, "read_committed")
    assert not [r for r in committed if "ABORT" in (r[2] or "")], f"{what}: an aborted record is visible"
    return committed


def _cleaned_below_active(pdir, written, bootstrap, topic):
    """The read_committed view once every key is once below the active segment."""
    def done():
        active = max(int(n[:20]) for n in os.listdir(pdir) if SEGMENT.match(n) or LINK.match(n))
        view = _view(bootstrap, topic, "read_committed")
        keys = [k for o, k, _ in view if o < active]
        return (view, active) if len(keys) == len(set(keys)) else None
    view, active = poll_until(done, 120, "every key once below the active segment", interval=1.0)
    _check_cleaned_view(_committed(written), view, active)


def test_a_zombie_leader_with_a_pass_in_flight_changes_nothing_its_successor_reads(cluster):
    brokers = cluster.start(env=ENV)
    wait_members(brokers)
    bs = cluster.bootstrap
    topic = unique_topic("ccompact")
    _create_compacted(bs, topic)
    pdir = cluster.shared / "topics" / f"{topic}-0"
    victim = poll_until(lambda: _leader(cluster, topic), 30, "a leader")
    for pattern in STALE_BROKER_ERRORS + (LEASE_NOT_FRESH, r"log cleaning failed"):
        victim.allow_log_errors(pattern)

    idem = Producer({"bootstrap.servers": bs, "enable.idempotence": True, "linger.ms": 5})
    _plain(idem, bs, topic, 0, 3000)
    _transactions(bs, topic, "ccompact-tx", 6, per_txn=50).flush(10)
    _plain(idem, bs, topic, 3000, 1500)
    idem.flush(10)
    before = _view(bs, topic, "read_uncommitted")
    assert any("ABORT" in (v or "") for _, _, v in before), "no aborted record to drop"

    # The leader's throttled pass (1 MB/s) writes its file for seconds: stop it there.
    poll_until(lambda: any(n.endswith(".cleaning") for n in os.listdir(pdir)), 60, "a pass writing its file")
    os.kill(victim.proc.pid, signal.SIGSTOP)
    try:
        survivors = [b for b in brokers if b is not victim]
        successor = poll_until(lambda: next((b for b in survivors if b is _leader(cluster, topic, survivors[0])), None),
                               30, "another broker to lead the partition", interval=0.2)
        _same_records(before, successor.bootstrap, topic, "after the takeover")
        # The new leader writes and cleans on its own epoch.
        later = Producer({"bootstrap.servers": successor.bootstrap, "enable.idempotence": True, "linger.ms": 5})
        _plain(later, successor.bootstrap, topic, 4500, 3000)
        later.flush(10)
        written = _view(successor.bootstrap, topic, "read_uncommitted")
        seal_epoch = max(int(m.group(1)) for m in map(re.compile(r"^seal\.e(\d+)\.json$").match, os.listdir(pdir)) if m)

        def own_cleaned():
            return [n for n in os.listdir(pdir)
                    if (m := SEGMENT.match(n)) and m.group(1) and m.group(3) and int(m.group(3)) == seal_epoch]
        poll_until(own_cleaned, 90, f"a cleaned file of the new leader's epoch {seal_epoch}")
    finally:
        os.kill(victim.proc.pid, signal.SIGCONT)

    # The zombie resumes mid-pass: it finds its fence and exits, having changed nothing read.
    assert victim.proc.wait(timeout=60) == FENCED_EXIT_CODE, victim.log_tail()
    _same_records(written, bs, topic, "after the zombie resumed")
    victim.start()
    for b in brokers:
        if b is not victim:
            b.restart()
    wait_members(brokers)
    poll_until(lambda: _leader(cluster, topic), 60, "a leader after the restarts", interval=0.5)
    poll_until(lambda: not any(n.endswith(".cleaning") for n in os.listdir(pdir)), 90, "no pass in progress")
    _same_records(written, bs, topic, "after every broker restarted")
    _cleaned_below_active(pdir, written, bs, topic)
    leader = _leader(cluster, topic)

    # Every segment file is reached by the last seal's epoch's names (its own, or its links).
    last = max(int(m.group(1)) for m in map(re.compile(r"^seal\.e(\d+)\.json$").match, os.listdir(pdir)) if m)
    older = [n for n in os.listdir(pdir)
             if ((m := SEGMENT.match(n)) and int(m.group(3) or 0) < last)
             or ((m := LINK.match(n)) and int(m.group(3)) < last)]
    assert not older, f"names of epochs before {last} left (leader {leader and leader.node_id}): {older}"
