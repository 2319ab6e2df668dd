"""segment.ms, the time-based roll, as users of log compaction meet it: the usual way to watch
compaction work is a topic with `segment.ms=100` and `min.cleanable.dirty.ratio=0.01`, so that
every few records start a new segment and the cleaner gets closed segments to clean. A
librdkafka producer writes ten rounds over ten keys, a round every 300 ms; segments roll by time
(never by size, at 1 GiB); the cleaner compacts the closed ones; a reader from the beginning
sees the last value of every key and fewer records than were written. The same scenario passed
against Apache Kafka 4.4 (log.cleaner.backoff.ms=200), by hand, 2026-12-07."""
import time

from confluent_kafka.admin import AdminClient, NewTopic

from conftest import Broker, free_port
from kaashelpers import consume_to_end, produce_confluent, unique_topic, wait_topic_ready

KEYS, ROUNDS = 10, 10


def scenario(bootstrap, log_dir_of, timeout=60.0):
    topic = unique_topic("segms")
    admin = AdminClient({"bootstrap.servers": bootstrap})
    configs = {"cleanup.policy": "compact", "segment.ms": "100", "min.cleanable.dirty.ratio": "0.01",
               "delete.retention.ms": "100"}
    admin.create_topics([NewTopic(topic, 1, 1, config=configs)])[topic].result(30)
    wait_topic_ready(bootstrap, topic, 1, admin=admin)
    for r in range(ROUNDS):
        produce_confluent(bootstrap, topic, [(f"k{k}".encode(), f"r{r}".encode()) for k in range(KEYS)])
        time.sleep(0.3)
    # The active segment starts at one of the last rounds: rolled by time (the cleaner may have
    # merged the closed segments already, as Kafka's groups them).
    segments = sorted(p.name for p in log_dir_of(topic).glob("*.log"))
    active_base = max(int(name.split(".")[0]) for name in segments)
    assert active_base >= KEYS * (ROUNDS - 2), f"segment.ms=100 did not roll: {segments}"
    latest = {f"k{k}".encode(): f"r{ROUNDS - 1}".encode() for k in range(KEYS)}
    deadline = time.time() + timeout
    while True:
        got = consume_to_end(bootstrap, topic, 1, "read_uncommitted")[0]
        last = {}
        for _, k, v in got:
            last[k] = v
        assert last == latest, f"a key lost its last value: {last}"
        if len(got) < KEYS * ROUNDS / 2:
            return got
        assert time.time() < deadline, (
            f"not compacted within {timeout}s: {len(got)} of {KEYS * ROUNDS} records left; "
            f"segments {sorted(p.name for p in log_dir_of(topic).glob('*.log'))}")
        time.sleep(0.5)


def test_segment_ms_rolls_by_time_and_compaction_follows(tmp_path):
    broker = Broker(tmp_path / "data", free_port(), extra_env={"KAAS_CLEANER_BACKOFF_MS": "200"}).start()
    scenario(broker.bootstrap, lambda topic: broker.data_dir / "topics" / f"{topic}-0")
    broker.stop()
