"""Consumer groups (classic protocol) with librdkafka (confluent-kafka) against the real kaas.

a. Two members of one group split a 4-partition topic (range assignor: 2 + 2, disjoint and
   complete), consume and commit synchronously; they then read more records WITHOUT
   committing and leave; the broker is SIGKILLed and restarted on the same data dir; a new
   member of the same group (auto.offset.reset=earliest, so lost offsets would show up as
   re-reads) resumes exactly at the committed offsets: it gets the uncommitted records and the
   ones produced after the restart, none of the committed ones.
b. AdminClient: list_consumer_groups / describe_consumer_groups show the group (Stable, two
   members with their assignments); DeleteGroups on the non-empty group fails with
   NON_EMPTY_GROUP; once the members have left (state Empty) it succeeds, the group is gone
   from the listing and its committed offsets are gone.
c. Consume-transform-produce with exactly-once (transactional.id "ctp", group "ctp-group",
   read_committed): instance 1 processes half of the input in transactions with
   send_offsets_to_transaction, then has a transaction open (records produced and flushed,
   offsets sent) when instance 2 with the same transactional.id calls init_transactions; that
   fences instance 1 (its commit_transaction fails with a fenced error) and aborts the open
   transaction; instance 2 takes over the group and processes the rest. The output, read
   read_committed, holds every input record exactly once (transformed); read_uncommitted also
   shows the aborted batch; the group's committed offsets equal the input end offsets.
   Run with KAAS_TRANSACTION_VERSION=1 and =2 (the default).
"""
import collections
import time

import pytest
from confluent_kafka import (Consumer, ConsumerGroupState, ConsumerGroupTopicPartitions,
                             KafkaError, KafkaException, Producer, TopicPartition)
from confluent_kafka.admin import AdminClient

from conftest import Broker, free_port
from kaashelpers import (assert_no_panic, consume_to_end, create_topic, log_tail, produce_confluent,
                         settled_end_offsets, unique_topic, watermarks)

PARTS = 4
FENCED_CODES = {KafkaError._FENCED, KafkaError.PRODUCER_FENCED,
                KafkaError.INVALID_PRODUCER_EPOCH}


def group_consumer(bootstrap, group, client_id, errors, **extra):
    conf = {
        "bootstrap.servers": bootstrap,
        "group.id": group,
        "client.id": client_id,
        "enable.auto.commit": False,
        "auto.offset.reset": "earliest",
        "partition.assignment.strategy": "range",
        "session.timeout.ms": 10000,
        "heartbeat.interval.ms": 500,
        "fetch.wait.max.ms": 100,
        "reconnect.backoff.ms": 50,
        "reconnect.backoff.max.ms": 500,
        "error_cb": errors.append,
    }
    conf.update(extra)
    return Consumer(conf)


def keyed_records(start, count):
    """Records whose keys spread over the partitions (the default partitioner hashes keys)."""
    return [(f"k{i}".encode(), f"v{i}".encode()) for i in range(start, start + count)]


def poll_consumers_until(consumers, cond, timeout, sink=None, what="condition"):
    """Poll every consumer in turn (0.1 s each) until cond() holds. Messages delivered meanwhile
    go to sink[consumer index] (list of Message); errors other than EOF fail the test."""
    deadline = time.time() + timeout
    while not cond():
        if time.time() > deadline:
            raise AssertionError(f"timed out after {timeout}s waiting for {what}")
        for i, c in enumerate(consumers):
            msg = c.poll(0.1)
            if msg is None:
                continue
            if msg.error():
                if msg.error().code() == KafkaError._PARTITION_EOF:
                    continue
                raise AssertionError(f"consumer {i} error: {msg.error()}")
            assert sink is not None, f"consumer {i} got an unexpected message at {what}"
            sink[i].append(msg)


def partitions_of(consumer, topic):
    return sorted(tp.partition for tp in consumer.assignment() if tp.topic == topic)


def committed_map(consumer, topic, timeout=15):
    tps = consumer.committed([TopicPartition(topic, p) for p in range(PARTS)], timeout=timeout)
    return {tp.partition: tp.offset for tp in tps}


def wait_split(consumers, topic, timeout=60, sink=None):
    """Wait until the members hold disjoint, complete, equal shares of the topic."""
    def split_ok():
        shares = [partitions_of(c, topic) for c in consumers]
        flat = [p for s in shares for p in s]
        return (sorted(flat) == list(range(PARTS))
                and all(len(s) == PARTS // len(consumers) for s in shares))
    poll_consumers_until(consumers, split_ok, timeout, sink=sink,
               what=f"{len(consumers)} members to split {PARTS} partitions")
    return [partitions_of(c, topic) for c in consumers]


# ============================================================ roundrobin (client-side assignor)

def test_roundrobin_assignor_splits_and_consumes_everything(broker):
    """librdkafka's roundrobin assignor: the leader computes it, kaas only relays the
    assignments: two members get interleaved partitions and together read every record once."""
    topic = unique_topic("grp-rr")
    group = unique_topic("grp-rr-g")
    create_topic(broker.bootstrap, topic, PARTS)
    produce_confluent(broker.bootstrap, topic, keyed_records(0, 200))
    errors = [[], []]
    consumers = [group_consumer(broker.bootstrap, group, f"rr-{i}", errors[i],
                                **{"partition.assignment.strategy": "roundrobin"}) for i in range(2)]
    for c in consumers:
        c.subscribe([topic])
    got = [[], []]
    shares = wait_split(consumers, topic, sink=got)
    assert sorted(shares[0] + shares[1]) == list(range(PARTS)), shares
    # roundrobin deals the partitions out in turn (range would give [0, 1] and [2, 3])
    assert sorted(shares) == [[0, 2], [1, 3]], shares
    deadline = time.time() + 30
    while sum(len(g) for g in got) < 200 and time.time() < deadline:
        for i, c in enumerate(consumers):
            m = c.poll(0.1)
            if m is not None and not m.error():
                got[i].append(m)
    values = sorted(m.value() for g in got for m in g)
    assert values == sorted(f"v{i}".encode() for i in range(200)), len(values)
    for c in consumers:
        c.close()
    assert errors == [[], []], errors


# ===================================================================== a. split, commit, crash

def test_group_split_commit_crash_resume(broker):
    topic = unique_topic("grp-split")
    group = unique_topic("grp-split-g")
    create_topic(broker.bootstrap, topic, PARTS)
    errors = [[], [], []]

    # Batch A: consumed and committed synchronously.
    produce_confluent(broker.bootstrap, topic, keyed_records(0, 400))
    wm_a = watermarks(broker.bootstrap, topic, PARTS)
    assert sum(wm_a.values()) == 400 and all(n > 0 for n in wm_a.values()), wm_a

    c1 = group_consumer(broker.bootstrap, group, "member-1", errors[0])
    c2 = group_consumer(broker.bootstrap, group, "member-2", errors[1])
    c1.subscribe([topic])
    c2.subscribe([topic])
    got = [[], []]
    shares = wait_split([c1, c2], topic, sink=got)
    assert set(shares[0]).isdisjoint(shares[1]), shares
    assert sorted(shares[0] + shares[1]) == list(range(PARTS)), shares
    assert len(shares[0]) == 2 and len(shares[1]) == 2, shares

    # Consume all of batch A, committing synchronously every 50 records per member.
    consumed = [dict(), dict()]        # member -> {(partition, offset): value}
    last_commit = [0, 0]

    def take(i):
        for m in got[i]:
            assert m.topic() == topic
            assert m.partition() in shares[i], \
                f"member {i + 1} got partition {m.partition()} outside its share {shares[i]}"
            consumed[i][(m.partition(), m.offset())] = m.value()
        got[i].clear()
        if len(consumed[i]) - last_commit[i] >= 50:
            commit_positions(i)

    def commit_positions(i):
        c = (c1, c2)[i]
        nxt = collections.defaultdict(lambda: -1)
        for (p, off) in consumed[i]:
            nxt[p] = max(nxt[p], off + 1)
        offsets = [TopicPartition(topic, p, o) for p, o in nxt.items()]
        if offsets:
            res = c.commit(offsets=offsets, asynchronous=False)
            for tp in res:
                assert tp.error is None, f"commit of {tp} failed: {tp.error}"
        last_commit[i] = len(consumed[i])

    def a_done():
        take(0)
        take(1)
        return len(consumed[0]) + len(consumed[1]) >= 400
    poll_consumers_until([c1, c2], a_done, 60, sink=got, what="members to consume batch A")
    commit_positions(0)
    commit_positions(1)
    assert len(consumed[0]) + len(consumed[1]) == 400
    assert set(consumed[0]).isdisjoint(consumed[1])
    assert {p for p, _ in consumed[0]} == set(shares[0])
    assert {p for p, _ in consumed[1]} == set(shares[1])
    for i, c in enumerate((c1, c2)):
        com = committed_map(c, topic)
        for p in shares[i]:
            assert com[p] == wm_a[p], f"member {i + 1}: committed {com} vs end offsets {wm_a}"

    # Batch B: delivered to the members, never committed.
    produce_confluent(broker.bootstrap, topic, keyed_records(400, 200))
    wm_b = watermarks(broker.bootstrap, topic, PARTS)
    assert sum(wm_b.values()) == 600, wm_b
    b_seen = [dict(), dict()]

    def b_done():
        for i in (0, 1):
            for m in got[i]:
                b_seen[i][(m.partition(), m.offset())] = m.value()
            got[i].clear()
        return len(b_seen[0]) + len(b_seen[1]) >= 200
    poll_consumers_until([c1, c2], b_done, 60, sink=got, what="members to consume batch B")
    assert all(off >= wm_a[p] for s in b_seen for (p, off) in s), "batch A delivered twice"
    assert all(off < wm_b[p] for s in b_seen for (p, off) in s), f"beyond batch B's end {wm_b}"
    c1.close()   # enable.auto.commit=false: leaving commits nothing
    c2.close()
    assert not [e for errs in errors[:2] for e in errs if e.fatal()], errors

    broker.restart()   # SIGKILL + start on the same data dir and port

    # Batch C: produced after the restart.
    produce_confluent(broker.bootstrap, topic, keyed_records(600, 100))
    wm_c = watermarks(broker.bootstrap, topic, PARTS)
    assert sum(wm_c.values()) == 700, wm_c

    c3 = group_consumer(broker.bootstrap, group, "member-3", errors[2])
    com = committed_map(c3, topic)
    assert com == wm_a, (f"committed offsets after SIGKILL+restart {com} != offsets committed "
                         f"before {wm_a}\n{log_tail(broker)}")
    c3.subscribe([topic])
    got3 = [[]]
    expected = {(p, o) for p in range(PARTS) for o in range(wm_a[p], wm_c[p])}
    seen3 = collections.Counter()
    vals3 = {}

    def c_done():
        for m in got3[0]:
            seen3[(m.partition(), m.offset())] += 1
            vals3[(m.partition(), m.offset())] = m.value()
        got3[0].clear()
        return len(seen3) >= len(expected)
    try:
        poll_consumers_until([c3], c_done, 60, sink=got3, what="new member to read B and C")
        # A little longer: anything else (a committed record again, a duplicate) shows up now.
        end = time.time() + 2.0
        poll_consumers_until([c3], lambda: time.time() > end, 10, sink=got3, what="quiet period")
        c_done()
        assert partitions_of(c3, topic) == list(range(PARTS))
        again = sorted(k for k in seen3 if k[1] < wm_a[k[0]])
        assert not again, (f"new member re-read {len(again)} committed records, first "
                           f"{again[:5]}; committed {wm_a}")
        assert set(seen3) == expected, (f"missing {sorted(expected - set(seen3))[:10]}, "
                                        f"unexpected {sorted(set(seen3) - expected)[:10]}")
        dups = {k: n for k, n in seen3.items() if n > 1}
        assert not dups, f"records delivered more than once: {list(dups.items())[:5]}"
        # The uncommitted batch B records come again, unchanged.
        for s in b_seen:
            for k, v in s.items():
                assert vals3[k] == v, (k, vals3[k], v)
        assert sorted(int(v.decode()[1:]) for v in vals3.values()) == list(range(400, 700))
    finally:
        c3.close()
    assert not [e for errs in errors for e in errs if e.fatal()], errors
    assert broker.alive()
    assert_no_panic(broker)


# ======================================================================= b. admin: list/describe

def _group_listing(admin, group):
    res = admin.list_consumer_groups(request_timeout=15).result()
    assert not res.errors, res.errors
    return {g.group_id: g for g in res.valid}.get(group)


def _describe(admin, group):
    return admin.describe_consumer_groups([group], request_timeout=15)[group].result()


def test_group_admin_list_describe_delete(broker):
    topic = unique_topic("grp-admin")
    group = unique_topic("grp-admin-g")
    create_topic(broker.bootstrap, topic, PARTS)
    produce_confluent(broker.bootstrap, topic, keyed_records(0, 40))
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    errors = []
    c1 = group_consumer(broker.bootstrap, group, "admin-member-1", errors)
    c2 = group_consumer(broker.bootstrap, group, "admin-member-2", errors)
    closed = False
    try:
        c1.subscribe([topic])
        c2.subscribe([topic])
        sink = [[], []]
        shares = wait_split([c1, c2], topic, sink=sink)
        poll_consumers_until([c1, c2], lambda: len(sink[0]) + len(sink[1]) >= 40, 30, sink=sink,
                   what="40 records")
        for i, c in enumerate((c1, c2)):
            res = c.commit(asynchronous=False)
            assert all(tp.error is None for tp in res), res

        # Keep the members heartbeating while the admin calls run (librdkafka heartbeats from
        # its own thread, but polls keep the assignment serviced).
        def keep_polling(seconds=0.3):
            end = time.time() + seconds
            poll_consumers_until([c1, c2], lambda: time.time() > end, 10, sink=sink, what="polling")

        keep_polling()
        listing = _group_listing(admin, group)
        assert listing is not None, f"{group} missing from list_consumer_groups"
        assert listing.is_simple_consumer_group is False
        assert listing.state == ConsumerGroupState.STABLE, listing.state

        desc = _describe(admin, group)
        assert desc.group_id == group
        assert desc.state == ConsumerGroupState.STABLE, desc.state
        assert desc.is_simple_consumer_group is False
        assert desc.partition_assignor == "range", desc.partition_assignor
        assert len(desc.members) == 2, desc.members
        by_client = {m.client_id: m for m in desc.members}
        assert set(by_client) == {"admin-member-1", "admin-member-2"}, by_client
        assert len({m.member_id for m in desc.members}) == 2
        for i, cid in enumerate(("admin-member-1", "admin-member-2")):
            m = by_client[cid]
            assert m.member_id, m
            assert m.host, m
            assigned = sorted(tp.partition for tp in m.assignment.topic_partitions
                              if tp.topic == topic)
            assert assigned == shares[i], (cid, assigned, shares)
        assert desc.coordinator is not None and desc.coordinator.id == 0, desc.coordinator

        # Committed offsets through the admin API.
        offs = admin.list_consumer_group_offsets(
            [ConsumerGroupTopicPartitions(group)], request_timeout=15)[group].result()
        wm = watermarks(broker.bootstrap, topic, PARTS)
        assert {tp.partition: tp.offset for tp in offs.topic_partitions if tp.topic == topic} \
            == wm, (offs.topic_partitions, wm)

        # Deleting a group with members fails.
        keep_polling()
        with pytest.raises(KafkaException) as exc:
            admin.delete_consumer_groups([group], request_timeout=15)[group].result()
        assert exc.value.args[0].code() == KafkaError.NON_EMPTY_GROUP, exc.value
        keep_polling()
        assert _describe(admin, group).state == ConsumerGroupState.STABLE

        c1.close()
        c2.close()
        closed = True
        desc = _describe(admin, group)
        assert desc.state == ConsumerGroupState.EMPTY, desc.state
        assert desc.members == [], desc.members
        listing = _group_listing(admin, group)
        assert listing is not None and listing.state == ConsumerGroupState.EMPTY, listing

        admin.delete_consumer_groups([group], request_timeout=15)[group].result()
        assert _group_listing(admin, group) is None, "deleted group still listed"
        desc = _describe(admin, group)
        assert desc.state == ConsumerGroupState.DEAD, desc.state
        offs = admin.list_consumer_group_offsets(
            [ConsumerGroupTopicPartitions(group, [TopicPartition(topic, p) for p in range(PARTS)])],
            request_timeout=15)[group].result()
        assert all(tp.offset < 0 for tp in offs.topic_partitions), \
            f"offsets of the deleted group are still there: {offs.topic_partitions}"
        # Deleting it again: the group no longer exists.
        with pytest.raises(KafkaException) as exc:
            admin.delete_consumer_groups([group], request_timeout=15)[group].result()
        assert exc.value.args[0].code() == KafkaError.GROUP_ID_NOT_FOUND, exc.value
    finally:
        if not closed:
            c1.close()
            c2.close()
    assert not [e for e in errors if e.fatal()], errors
    assert_no_panic(broker)


# ================================================================ c. consume-transform-produce

CTP_N = 2000


def transform(value: bytes) -> bytes:
    return b"T:" + value.upper()


class CtpInstance:
    """One consume-transform-produce instance: a group consumer and a transactional producer."""

    def __init__(self, bootstrap, name, in_topic, out_topic, group, txn_id, errors):
        self.name = name
        self.in_topic = in_topic
        self.out_topic = out_topic
        self.errors = errors
        self.consumer = group_consumer(bootstrap, group, f"{name}-consumer", errors,
                                       **{"isolation.level": "read_committed",
                                          # small fetches: batches mix the partitions
                                          "max.partition.fetch.bytes": 1024})
        self.producer = Producer({
            "bootstrap.servers": bootstrap,
            "client.id": f"{name}-producer",
            "transactional.id": txn_id,
            "enable.idempotence": True,
            "acks": "all",
            "linger.ms": 5,
            "error_cb": errors.append,
        })
        self.delivery_errors = []
        self.committed_txns = 0
        self.processed = 0

    def start(self, subscribe=True):
        self.producer.init_transactions(30)
        if subscribe:
            self.consumer.subscribe([self.in_topic])

    def _on_delivery(self, err, msg):
        if err is not None:
            self.delivery_errors.append(err)

    def poll_batch(self, timeout=1.0):
        msgs = self.consumer.consume(num_messages=100, timeout=timeout)
        out = []
        for m in msgs:
            if m.error():
                if m.error().code() == KafkaError._PARTITION_EOF:
                    continue
                raise AssertionError(f"{self.name} consumer error: {m.error()}")
            out.append(m)
        return out

    def positions(self):
        pos = self.consumer.position(self.consumer.assignment())
        return [tp for tp in pos if tp.offset >= 0]

    def begin_and_produce(self, msgs):
        self.producer.begin_transaction()
        for m in msgs:
            self.producer.produce(self.out_topic, key=m.key(), value=transform(m.value()),
                                  on_delivery=self._on_delivery)
        self.producer.poll(0)

    def send_offsets(self):
        self.producer.send_offsets_to_transaction(
            self.positions(), self.consumer.consumer_group_metadata(), 30)

    def commit(self):
        self.producer.commit_transaction(30)
        self.committed_txns += 1

    def step(self):
        """One full transaction over whatever one poll returned. Returns records processed."""
        msgs = self.poll_batch()
        if not msgs:
            return 0
        self.begin_and_produce(msgs)
        self.send_offsets()
        self.commit()
        assert not self.delivery_errors, f"{self.name}: {self.delivery_errors[:3]}"
        self.processed += len(msgs)
        return len(msgs)

    def done(self, in_ends):
        """Every input partition assigned here and committed up to its end offset. (Positions
        alone do not tell: a partition another instance finished has no position here.)"""
        assigned = sorted(tp.partition for tp in self.consumer.assignment())
        if assigned != list(range(PARTS)):
            return False
        com = self.consumer.committed([TopicPartition(self.in_topic, p) for p in range(PARTS)],
                                      timeout=10)
        return {tp.partition: tp.offset for tp in com} == in_ends


@pytest.mark.parametrize("txn_version", ["1", "2"], ids=["tv1", "tv2"])
def test_consume_transform_produce_fencing(tmp_path, txn_version):
    extra = {"KAAS_TRANSACTION_VERSION": txn_version}
    broker = Broker(tmp_path / "data", free_port(), extra_env=extra).start()
    inst1 = inst2 = None
    try:
        bs = broker.bootstrap
        in_topic = unique_topic("ctp-in")
        out_topic = unique_topic("ctp-out")
        group = "ctp-group"
        txn_id = "ctp"
        create_topic(bs, in_topic, PARTS)
        create_topic(bs, out_topic, PARTS)
        inputs = keyed_records(0, CTP_N)
        # Small input batches (10 records) so that the consumers' small fetches interleave
        # the partitions and each transaction spans several of them.
        produce_confluent(bs, in_topic, inputs, conf={"batch.num.messages": 10})
        in_ends = watermarks(bs, in_topic, PARTS)
        assert sum(in_ends.values()) == CTP_N and all(v > 0 for v in in_ends.values()), in_ends

        errors1, errors2 = [], []
        inst1 = CtpInstance(bs, "ctp-1", in_topic, out_topic, group, txn_id, errors1)
        inst1.start()
        deadline = time.time() + 60
        while inst1.processed < CTP_N // 2:
            assert time.time() < deadline, f"instance 1 processed only {inst1.processed}"
            inst1.step()
        assert inst1.committed_txns >= 5, inst1.committed_txns
        assert sorted(tp.partition for tp in inst1.consumer.assignment()) == list(range(PARTS))

        # Instance 1 opens one more transaction: records produced and flushed, offsets sent.
        pending = []
        deadline = time.time() + 30
        while not pending:
            assert time.time() < deadline, "instance 1 got no more input"
            pending = inst1.poll_batch()
        inst1.begin_and_produce(pending)
        assert inst1.producer.flush(30) == 0
        assert not inst1.delivery_errors, inst1.delivery_errors
        inst1.send_offsets()

        # Instance 2, same transactional.id: init_transactions fences instance 1 and aborts its
        # open transaction.
        inst2 = CtpInstance(bs, "ctp-2", in_topic, out_topic, group, txn_id, errors2)
        inst2.start(subscribe=False)

        with pytest.raises(KafkaException) as exc:
            inst1.commit()
        err = exc.value.args[0]
        assert err.code() in FENCED_CODES, \
            f"instance 1's commit after being fenced: {err!r} (code {err.code()})"
        # Any further transactional call fails too.
        with pytest.raises(KafkaException) as exc2:
            inst1.producer.begin_transaction()
            inst1.producer.produce(out_topic, key=b"zombie", value=b"zombie")
            inst1.send_offsets()
            inst1.commit()
        assert exc2.value.args[0].code() in FENCED_CODES, exc2.value
        inst1.consumer.close()    # leaves the group: instance 2 takes it over

        inst2.consumer.subscribe([in_topic])
        deadline = time.time() + 90
        while not inst2.done(in_ends):
            assert time.time() < deadline, (
                f"instance 2 did not reach the input end offsets {in_ends}; positions "
                f"{inst2.positions()}, processed {inst2.processed}\n{log_tail(broker)}")
            inst2.step()
        assert inst2.committed_txns >= 1
        # Instance 2 resumed at instance 1's last committed offsets: it processed exactly the
        # rest, including the batch of instance 1's aborted transaction.
        assert inst2.processed == CTP_N - inst1.processed, (inst1.processed, inst2.processed)

        print(f"ctp (transaction version {txn_version}): instance 1 committed "
              f"{inst1.committed_txns} transactions ({inst1.processed} records), its open "
              f"transaction of {len(pending)} records over partitions "
              f"{sorted({m.partition() for m in pending})} was fenced with {err.name()}; "
              f"instance 2 committed {inst2.committed_txns} ({inst2.processed} records)")

        # Output, read_committed: each input exactly once, transformed.
        # The LSO reaches the high watermark (no transaction left open) once the last commit's
        # markers are in: they are written after commit_transaction returns, as in Kafka.
        try:
            settled_end_offsets(bs, out_topic, PARTS)
        except AssertionError as e:
            raise AssertionError(f"{e}\n{log_tail(broker)}")
        committed_out = consume_to_end(bs, out_topic, PARTS, "read_committed")
        got = collections.Counter(v for recs in committed_out.values() for _o, _k, v in recs)
        want = collections.Counter(transform(v) for _k, v in inputs)
        dups = {v: n for v, n in got.items() if n > 1}
        assert not dups, f"{len(dups)} outputs more than once, e.g. {list(dups.items())[:5]}"
        assert got == want, (f"missing {len(want - got)} e.g. {list((want - got))[:5]}, "
                             f"unexpected {list((got - want))[:5]}")
        for recs in committed_out.values():
            for _o, k, v in recs:
                assert v == transform(b"v" + k[1:]), (k, v)

        # read_uncommitted also shows the aborted batch of instance 1.
        uncommitted_out = consume_to_end(bs, out_topic, PARTS, "read_uncommitted")
        ru = collections.Counter(v for recs in uncommitted_out.values() for _o, _k, v in recs)
        aborted = collections.Counter(transform(m.value()) for m in pending)
        assert ru == want + aborted, (
            f"read_uncommitted: {sum(ru.values())} records, expected {CTP_N} + {len(pending)} "
            f"aborted")

        # The group's committed offsets are the input end offsets (stable fetch).
        admin = AdminClient({"bootstrap.servers": bs})
        offs = admin.list_consumer_group_offsets(
            [ConsumerGroupTopicPartitions(group, [TopicPartition(in_topic, p)
                                                  for p in range(PARTS)])],
            require_stable=True, request_timeout=30)[group].result()
        assert {tp.partition: tp.offset for tp in offs.topic_partitions} == in_ends, \
            (offs.topic_partitions, in_ends)
        assert not [e for e in errors2 if e.fatal()], errors2
        assert broker.alive()
        assert_no_panic(broker)
    finally:
        try:
            for inst in (inst1, inst2):
                if inst is None:
                    continue
                try:
                    inst.consumer.close()
                except RuntimeError:
                    pass  # already closed
                try:
                    inst.producer.flush(1)
                except KafkaException:
                    pass  # instance 1's producer is fenced (fatal): nothing to flush
        finally:
            broker.stop()
