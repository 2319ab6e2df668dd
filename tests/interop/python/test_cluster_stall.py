"""Fault (a), a stalled broker (as in test_cluster_juicefs.py), on a local directory: three kaas
brokers sharing one data directory, under an idempotent confluent-kafka producer (acks=all) writing
numbered records v<n> to 6 partitions; the broker process leading the most partitions is stopped
(SIGSTOP) for 20 s. A stopped process keeps its file locks, so only its heartbeat going stale (here
KAAS_BROKER_SESSION_TIMEOUT_MS=6000) tells the others it is gone: they must fence it and lead
every partition within the session timeout plus a margin. On SIGCONT a second producer (records
s<n>) bootstrapped from the stalled broker alone writes to the partitions it led; the stalled
broker must find its fence and exit with code 75 (FENCED_EXIT_CODE; these brokers run with
KAAS_WHEN_FENCED=exit, the JuiceFS stall test with the default, rejoin in place), and restarted
(as its supervisor would) lead partitions again. Then every partition is read from the beginning
(read_committed), with every broker as it is and again after restarting every broker: every
acknowledged record exactly once, at the partition and offset its acknowledgement named, nothing
never produced, one high watermark per partition; every broker's log is checked
(conftest.Broker.stop).

The scenario and its helpers are test_cluster_juicefs.py's (`stall_loses_nothing`), where the
same fault runs with each broker on its own JuiceFS mount; importing them does not bring that
module's skip mark (it applies to the tests collected there), so this runs without JuiceFS.
Traffic goes to 127.0.0.1 only.
"""
import os
import signal
import time

import pytest
from confluent_kafka import Producer

from conftest import Broker, free_port, stop_all
from kaashelpers import consume_to_end, create_topic, produce_confluent, unique_topic, wait_topic_ready
from test_cluster_juicefs import STALL_ENV, TICK, stall_loses_nothing, wait_members, wait_taken_over

pytestmark = pytest.mark.serial  # conftest.py: bounds by the clock; runs alone


class LocalCluster:
    """Brokers 1..n on one directory (as test_java_cluster.py's fixture), with `.brokers` and
    `.bootstrap` as JuiceCluster has them."""

    def __init__(self, tmp_path):
        self.shared = tmp_path / "shared"
        self.brokers = []

    def start(self, n=3, env=None):
        self.brokers = [Broker(self.shared, free_port(), dict(TICK, **(env or {})), node_id=i)
                        for i in range(1, n + 1)]
        for b in self.brokers:
            b.start()
        return self.brokers

    @property
    def bootstrap(self):
        return ",".join(b.bootstrap for b in self.brokers)

    def close(self):
        problems = stop_all(self.brokers)
        assert not problems, "\n\n".join(problems)


@pytest.fixture
def cluster(tmp_path):
    c = LocalCluster(tmp_path)
    try:
        yield c
    finally:
        c.close()


def test_stall_loses_nothing(cluster):
    cluster.start(env=dict(STALL_ENV, KAAS_WHEN_FENCED="exit"))
    stall_loses_nothing(cluster, "stall", when_fenced="exit")


def test_a_holder_restarted_before_its_hand_over_lets_the_partition_go(cluster):
    """A broker killed (-9) and restarted while it led partitions placement now gives a peer
    that is back: its new process does not hold them, and the peer saw the holder's node live
    (its lock is held again), so each waited for the other for ever. The new process hands such
    leases over on its old process's behalf (store::leases::release_previous_process), for
    partitions and coordinator units alike: every partition then takes writes and transactions
    commit within seconds."""
    brokers = cluster.start(env=dict(STALL_ENV, KAAS_WHEN_FENCED="exit"))
    wait_members(brokers)
    topic = unique_topic("handback")
    create_topic(cluster.bootstrap, topic, 6)
    wait_topic_ready(cluster.bootstrap, topic, 6)
    a, b, c = brokers
    a.kill()                                    # its partitions and coordinators move to b and c
    wait_taken_over([b, c], a, topic)
    os.kill(b.proc.pid, signal.SIGSTOP)         # b cannot hand anything back to a...
    try:
        a.start()
        time.sleep(1.0)
    finally:
        os.kill(b.proc.pid, signal.SIGCONT)
    b.restart()                                 # ...and its new process never held what it led
    wait_members(brokers)
    records = [(f"k{i}".encode(), b"v") for i in range(60)]
    produce_confluent(cluster.bootstrap, topic, records, timeout=30,
                      conf={"partitioner": "murmur2_random", "message.timeout.ms": 30000})
    got = consume_to_end(cluster.bootstrap, topic, 6, "read_committed", timeout=30)
    assert sum(len(v) for v in got.values()) == len(records)
    p = Producer({"bootstrap.servers": cluster.bootstrap, "transactional.id": unique_topic("handback-tx")})
    p.init_transactions(30)
    p.begin_transaction()
    p.produce(topic, key=b"t", value=b"t")
    p.commit_transaction(30)
