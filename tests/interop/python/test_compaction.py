"""The log cleaner (cleanup.policy=compact) with real clients: librdkafka (confluent-kafka)
idempotent and transactional producers, read_committed and read_uncommitted readers, and
kafka-python as a second reader (cleaned logs hold rebuilt and empty batches).

What is checked after the broker cleaned (eos-rules 61-70): offsets never move and every record
left is one that was written at that offset; in the cleaned segments each key appears once, at
its latest value; no record of an aborted transaction is left; tombstones go after
delete.retention.ms; the producers go on after cleaning and after a restart (their last batches
kept their sequence state); and a kill -9 at any point of a pass leaves a log that reads as the
old one or the cleaned one, never with a gap, a duplicate or an aborted record.
"""
import os
import random
import time
from pathlib import Path

from confluent_kafka import Producer
from kafka import KafkaConsumer, TopicPartition as KpTopicPartition

from conftest import Broker, free_port, poll_until
from kaashelpers import assert_no_panic, consume_to_end, produce_confluent, unique_topic

KEYS = 50
PAD = "x" * 900
COMPACT = {
    "cleanup.policy": "compact",
    "segment.bytes": "1048576",
    "min.cleanable.dirty.ratio": "0.01",
    "delete.retention.ms": "3000",
}
FAST_CLEANER = {"KAAS_CLEANER_BACKOFF_MS": "200"}


def _create_compacted(bootstrap, topic, configs=COMPACT):
    from confluent_kafka.admin import AdminClient, NewTopic
    admin = AdminClient({"bootstrap.servers": bootstrap})
    for f in admin.create_topics([NewTopic(topic, 1, 1, config=dict(configs))]).values():
        f.result(30)


def _set_topic_configs(bootstrap, topic, configs):
    from confluent_kafka.admin import AdminClient, AlterConfigOpType, ConfigEntry, ConfigResource
    admin = AdminClient({"bootstrap.servers": bootstrap})
    res = ConfigResource(ConfigResource.Type.TOPIC, topic, incremental_configs=[
        ConfigEntry(k, v, incremental_operation=AlterConfigOpType.SET) for k, v in configs.items()])
    for f in admin.incremental_alter_configs([res]).values():
        f.result(timeout=30)


def _partition_dir(broker, topic):
    return Path(broker.data_dir) / "topics" / f"{topic}-0"


def _segment_files(broker, topic):
    return sorted(p.name for p in _partition_dir(broker, topic).iterdir() if p.name.endswith(".log"))


def _cleaned(broker, topic):
    """Cleaned segment files (`<base>.c<gen>.log`)."""
    return [n for n in _segment_files(broker, topic) if ".c" in n]


def _active_base(broker, topic):
    return max(int(n.split(".")[0]) for n in _segment_files(broker, topic))


def _view(bootstrap, topic, isolation="read_committed"):
    got = consume_to_end(bootstrap, topic, 1, isolation, timeout=90)[0]
    return [(o, k.decode(), None if v is None else v.decode()) for o, k, v in got]


def _latest(view):
    out = {}
    for o, k, v in view:
        out[k] = v
    return {k: v for k, v in out.items() if v is not None}


def _plain(producer, bootstrap, topic, start, n, keys=KEYS):
    recs = [(f"k{(start + i) % keys}", f"k{(start + i) % keys}:{start + i}:{PAD}") for i in range(n)]
    produce_confluent(bootstrap, topic, recs, producer=producer)
    return recs


def _transactions(bootstrap, topic, txid, count, per_txn=100):
    """`count` transactions; every third aborted (values marked ABORT). Returns the producer."""
    p = Producer({"bootstrap.servers": bootstrap, "transactional.id": txid, "linger.ms": 5})
    p.init_transactions(30)
    for t in range(count):
        abort = t % 3 == 2
        p.begin_transaction()
        for i in range(per_txn):
            k = f"k{i % KEYS}"
            p.produce(topic, key=k, value=f"{k}:{'ABORT' if abort else 'txn'}{t}:{PAD}")
        if abort:
            p.flush(30)
            p.abort_transaction(30)
        else:
            p.commit_transaction(30)
    return p


def _check_cleaned_view(before, after, active_base):
    """Offsets never move, every record left was written there, each key once below the active
    segment, the latest value of every key is kept."""
    at = {o: (k, v) for o, k, v in before}
    offsets = [o for o, _, _ in after]
    assert offsets == sorted(set(offsets)), "offsets out of order or repeated"
    for o, k, v in after:
        assert at.get(o) == (k, v), f"offset {o} holds {(k, v)}, written as {at.get(o)}"
    cleaned_keys = [k for o, k, _ in after if o < active_base]
    dup = {k for k in cleaned_keys if cleaned_keys.count(k) > 1}
    assert not dup, f"keys more than once in the cleaned segments: {sorted(dup)[:5]}"
    assert _latest(after) == _latest(before), "the latest value of some key was lost"


def test_compaction_keeps_the_latest_value_of_each_key_and_drops_aborted_transactions(tmp_path):
    broker = Broker(tmp_path / "data", free_port(), extra_env=FAST_CLEANER).start()
    bs = broker.bootstrap
    topic = unique_topic("compact")
    # Held back (min.compaction.lag.ms) until the log as written has been read: a pass that ran
    # while the test still wrote would drop the aborted records before the test could see them.
    _create_compacted(bs, topic, dict(COMPACT, **{"min.compaction.lag.ms": "3600000"}))
    idem = Producer({"bootstrap.servers": bs, "enable.idempotence": True, "linger.ms": 5})
    try:
        _plain(idem, bs, topic, 0, 2000)
        txn = _transactions(bs, topic, unique_topic("tx"), 9)
        # tombstones for k40..k44, then enough to roll the segments past the transactions
        produce_confluent(bs, topic, [(f"k{k}", None) for k in range(40, 45)], producer=idem)
        _plain(idem, bs, topic, 3000, 2500, keys=10)
        uncommitted = _view(bs, topic, "read_uncommitted")
        assert any("ABORT" in (v or "") for _, _, v in uncommitted), "the test wrote no aborted record"
        committed = [r for r in uncommitted if "ABORT" not in (r[2] or "")]
        assert not _cleaned(broker, topic), "cleaned while min.compaction.lag.ms held it back"
        _set_topic_configs(bs, topic, {"min.compaction.lag.ms": "0"})

        poll_until(lambda: _cleaned(broker, topic), 60, "a cleaned segment")
        time.sleep(1)
        after = _view(bs, topic)
        active = _active_base(broker, topic)
        assert len(after) < len(uncommitted) / 3, f"not compacted: {len(after)} of {len(uncommitted)} left"
        _check_cleaned_view(committed, after, active)
        after_uncommitted = _view(bs, topic, "read_uncommitted")
        assert not [r for r in after_uncommitted if r[0] < active and "ABORT" in (r[2] or "")], \
            "a record of an aborted transaction survived the cleaning"
        tombstones = [(o, k) for o, k, v in after if v is None]
        assert {k for _, k in tombstones} <= {f"k{k}" for k in range(40, 45)}

        # delete.retention.ms after the first pass, the tombstones go
        def tombstones_gone():
            return not [r for r in _view(bs, topic) if r[2] is None and r[0] < active]
        poll_until(tombstones_gone, 30, "tombstones removed after delete.retention.ms")
        later = _view(bs, topic)
        assert _latest(later) == _latest(committed)

        # kafka-python reads the same records (rebuilt and empty batches included)
        kp = KafkaConsumer(bootstrap_servers=bs, enable_auto_commit=False, isolation_level="read_committed",
                           consumer_timeout_ms=3000)
        tp = KpTopicPartition(topic, 0)
        kp.assign([tp])
        kp.seek_to_beginning(tp)
        kp_view = [(m.offset, m.key.decode(), None if m.value is None else m.value.decode()) for m in kp]
        kp.close()
        assert kp_view == later, "kafka-python read another log than librdkafka"

        # The producers go on after cleaning, and after a restart (their state survived).
        _plain(idem, bs, topic, 9000, 50)
        txn.begin_transaction()
        txn.produce(topic, key="k1", value="k1:after:" + PAD)
        txn.commit_transaction(30)
        broker.restart()
        assert _view(bs, topic)[: len(later)] == later, "the cleaned log changed across a restart"
        _plain(idem, bs, topic, 9100, 50)
        txn.begin_transaction()
        txn.produce(topic, key="k2", value="k2:after-restart:" + PAD)
        txn.commit_transaction(30)
        final = _latest(_view(bs, topic))
        assert final["k2"].startswith("k2:after-restart:")
    finally:
        idem.flush(10)
        assert_no_panic(broker)


def test_kill_9_during_cleaning_leaves_the_old_log_or_the_cleaned_one(tmp_path):
    # A throttled cleaner (1 MB/s) makes a pass last seconds; each kill lands a random time
    # after a pass began (the broker logs "cleaning the log" when it does).
    env = dict(FAST_CLEANER, KAAS_CLEANER_IO_MAX_BYTES_PER_SECOND="1000000")
    broker = Broker(tmp_path / "data", free_port(), extra_env=env).start()
    bs = broker.bootstrap
    topic = unique_topic("crash")
    _create_compacted(bs, topic)
    rng = random.Random(7)
    interrupted = 0
    written = []
    start = 0
    try:
        for round_ in range(8):
            idem = Producer({"bootstrap.servers": bs, "enable.idempotence": True, "linger.ms": 5})
            began = broker.log_text().count("cleaning the log")
            written += _plain(idem, bs, topic, start, 1500)
            start += 1500
            _transactions(bs, topic, f"crash-tx-{round_}", 3, per_txn=50).flush(10)
            idem.flush(10)
            before = _view(bs, topic, "read_uncommitted")
            pdir = _partition_dir(broker, topic)
            if round_ % 2 == 0:
                # Anywhere in a pass, mostly while it maps keys (nothing written yet).
                poll_until(lambda: broker.log_text().count("cleaning the log") > began, 30, "a pass to begin")
                time.sleep(rng.uniform(0.05, 1.5))
            else:
                # While it writes its file (the `.cleaning` file is there).
                poll_until(lambda: any(n.endswith(".cleaning") for n in os.listdir(pdir)), 30,
                           "a pass writing its file")
                time.sleep(rng.uniform(0.0, 0.3))
            broker.kill()
            names = os.listdir(_partition_dir(broker, topic))
            interrupted += any(n.endswith(".cleaning") for n in names)
            broker.start()
            after = _view(bs, topic, "read_uncommitted")
            # Old or new: every record left is the one written at its offset, none is lost
            # that is the latest of its key, and no aborted record came back.
            at = {o: (k, v) for o, k, v in before}
            for o, k, v in after:
                assert at.get(o) == (k, v), f"round {round_}: offset {o} holds {(k, v)}, was {at.get(o)}"
            offsets = [o for o, _, _ in after]
            assert offsets == sorted(set(offsets)), f"round {round_}: offsets repeated or out of order"
            committed = [r for r in before if "ABORT" not in (r[2] or "")]
            assert _latest([r for r in after if "ABORT" not in (r[2] or "")]) == _latest(committed), \
                f"round {round_}: a latest value was lost"
            if interrupted >= 2:
                break
        assert interrupted >= 1, "no kill landed inside a cleaning pass (no .cleaning file seen)"
        # Left alone, the cleaner finishes: each key once in the cleaned segments.
        poll_until(lambda: not any(n.endswith(".cleaning") for n in os.listdir(_partition_dir(broker, topic))),
                   60, "no pass in progress")
        final = _view(bs, topic)
        assert _latest(final) == _latest([r for r in _view(bs, topic, "read_uncommitted") if "ABORT" not in (r[2] or "")])
    finally:
        assert_no_panic(broker)
