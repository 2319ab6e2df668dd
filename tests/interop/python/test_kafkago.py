"""segmentio/kafka-go (KAFKAGO_VERSION, a pure-Go client with its own consumer-group
implementation) against kaas, black box.

tests/interop/go/kafkago is a small Go module (go.mod / go.sum pin kafka-go and its
dependencies); the module fixture runs `go build` there with the committed go.sum
(-mod=readonly: a missing or wrong sum fails the build instead of being fetched and written),
the Go module proxy supplying the modules on a fresh machine. The program takes
`<host:port> <scenario>`, runs one scenario against the broker and prints one line
`RESULT {json}` of what it observed; each test below starts its own broker, runs one scenario
and asserts Apache Kafka's behaviour on that JSON:

  admin            kafka.Client: CreateTopics (6 partitions with configs; TOPIC_ALREADY_EXISTS,
                   INVALID_PARTITIONS, INVALID_TOPIC_EXCEPTION, INVALID_CONFIG, validate-only),
                   Metadata, ListOffsets, DescribeConfigs (topic, named, unknown, broker),
                   IncrementalAlterConfigs / AlterConfigs (which replaces the whole set),
                   CreatePartitions (6 -> 8, refusals), DeleteTopics.
  produce          kafka.Writer (RequireAll, hash balancer, batches of 200) with no compression,
                   gzip, snappy, lz4 and zstd: 2,000 keyed records each read back exactly once
                   in order with kafka.Reader, the stored batches still compressed with the
                   producer's codec; RequireNone (no Produce answer) and RequireOne writers;
                   one Writer for two topics; AllowAutoTopicCreation (and without it); a
                   Produce straight to an unknown topic (UNKNOWN_TOPIC_OR_PARTITION, nothing
                   created).
  group            kafka.Reader with a GroupID (kafka-go's own JoinGroup v2 / SyncGroup v0 /
                   Heartbeat v0 / OffsetCommit v2 / LeaveGroup v0): two readers consume 1,200
                   records exactly once and commit the end offsets; a third joins, the group
                   rebalances without re-reading a committed record, 600 more records are read
                   once across the three; a reader in another group starting at LastOffset
                   reads only the new ones; ListGroups, DescribeGroups (member metadata and
                   assignments as kafka-go decodes them), DeleteGroups (NON_EMPTY_GROUP, then
                   Dead), OffsetFetch, OffsetCommit without membership, OffsetDelete.
  records          headers (duplicate keys, empty and null values), timestamps, null versus
                   empty keys and values through kafka.Client.Fetch and kafka.Reader
                   (read_uncommitted and read_committed), ListOffsets by time, Reader.SetOffsetAt,
                   LogAppendTime, max.message.bytes: a batch of exactly the limit is taken, one
                   byte more is MESSAGE_TOO_LARGE (10) from the broker, a 200 kB gzip batch
                   compressing under the limit is taken.
  conn             kafka.Dial / Controller / CreateTopics / ReadPartitions, DialLeader +
                   WriteMessages / WriteCompressedMessagesAt, ReadFirstOffset / ReadLastOffset,
                   Seek + ReadBatch (also from the middle of a compressed batch), fetch max bytes
                   (KIP-74), MaxWait / MinBytes long polls, OFFSET_OUT_OF_RANGE, Conn.DeleteTopics.
  listoffsets-dup  one raw ListOffsets (kafka-go's protocol package) naming a partition twice.

Timings on the 2-core dev machine: `go build` about 1.5 s with a warm build cache (the first
compile of kafka-go and its compression libraries about 20 s, the module download a few
seconds), then admin ~2 s, produce ~2 s, group ~12 s (6 s of it Kafka's
group.initial.rebalance.delay.ms, extended once as Kafka extends it when a second member joins
during the delay), records ~1 s, conn ~5 s: the file takes about 25 s.

Never skipped: without a Go toolchain (`go` on PATH, /usr/local/go/bin/go or $GOROOT/bin/go)
the tests fail and say how to install one.
"""
import collections
import json
import subprocess
from pathlib import Path

import pytest

from conftest import Broker, free_port
from kaashelpers import assert_no_panic, go_build, log_tail, request_counts

KAFKAGO_VERSION = "v0.4.51"
MODULE_DIR = Path(__file__).resolve().parents[1] / "go" / "kafkago"
BUILD_TIMEOUT = 600      # seconds: module download and the first compile on a cold cache


@pytest.fixture(scope="module")
def kafkago_bin(tmp_path_factory):
    gomod = (MODULE_DIR / "go.mod").read_text()
    assert f"github.com/segmentio/kafka-go {KAFKAGO_VERSION}" in gomod, gomod
    out = tmp_path_factory.mktemp("kafkago-bin") / "kafkago"
    return go_build(MODULE_DIR, out, "the kafka-go interop tests need Go >= 1.23")


TRACE = {"RUST_LOG": "info,kaas::protocol::connection=trace"}


def _request_versions(broker):
    """api name -> Counter of versions, from the broker's per-request trace lines."""
    seen = collections.defaultdict(collections.Counter)
    for (api, version), n in request_counts(broker).items():
        seen[api][version] += n
    return seen


def _run(binary, broker, scenario, timeout=120):
    """Runs one scenario; (result dict, context for assertion messages)."""
    try:
        proc = subprocess.run([binary, broker.bootstrap, scenario], stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True, timeout=timeout)
        stdout, stderr, rc = proc.stdout, proc.stderr, proc.returncode
    except subprocess.TimeoutExpired as e:
        stdout = e.stdout.decode(errors="replace") if isinstance(e.stdout, bytes) else (e.stdout or "")
        stderr = e.stderr.decode(errors="replace") if isinstance(e.stderr, bytes) else (e.stderr or "")
        rc = None
    lines = [x for x in stdout.splitlines() if x.startswith("RESULT ")]
    ctx = (f"kafkago {scenario}: exit code {rc}\n--- stderr (tail) ---\n{stderr[-4000:]}"
           f"\n--- stdout (tail) ---\n{stdout[-6000:]}\n--- kaas log (tail) ---\n{log_tail(broker, 40)}")
    assert rc == 0 and lines, ctx
    result = json.loads(lines[-1][len("RESULT "):])
    assert "fatal" not in result, f"the program stopped: {result['fatal']}\n" + ctx
    print(f"\nkafka-go {KAFKAGO_VERSION} {scenario} against kaas: {result.get('elapsed_s', 0):.1f}s")
    return result, ctx


def _start(tmp_path, extra_env=None):
    return Broker(tmp_path / "data", free_port(), extra_env=extra_env).start()


def test_kafkago_admin(kafkago_bin, tmp_path):
    broker = _start(tmp_path)
    try:
        r, ctx = _run(kafkago_bin, broker, "admin")
        me = f"0@127.0.0.1:{broker.port}"
        assert r["api_versions_error"] == 0, ctx
        # CreateTopics and Kafka's refusals.
        assert r["create"] == "", ctx
        assert r["create_again_code"] == 36, ctx                 # TOPIC_ALREADY_EXISTS
        assert r["create_zero_partitions_code"] == 37, ctx       # INVALID_PARTITIONS
        assert r["create_bad_name_code"] == 17, ctx              # INVALID_TOPIC_EXCEPTION
        assert r["create_bad_config_value_code"] == 40, ctx      # INVALID_CONFIG
        assert r["create_unknown_config_code"] == 40, ctx
        assert r["create_validate_only_code"] == 0 and r["validate_only_topic_exists"] is False, ctx
        assert not [k for k in r if k.startswith("refused_topic_created_")], ctx
        # Metadata.
        assert r["metadata_error"] == "" and r["metadata_brokers"] == [me], ctx
        assert r["metadata_controller"] == 0 and r["metadata_cluster_id"], ctx
        assert r["metadata_topic_internal"] is False, ctx
        assert [p["id"] for p in r["metadata_partitions"]] == list(range(6)), ctx
        for p in r["metadata_partitions"]:
            assert p["leader"] == me and p["replicas"] == [0] and p["isr"] == [0] and p["error"] == 0, ctx
        assert r["metadata_unknown_topic_code"] == 3, ctx        # UNKNOWN_TOPIC_OR_PARTITION
        # ListOffsets.
        zeros = {str(p): 0 for p in range(6)}
        assert r["list_offsets_empty"] == {"error": "", "first": zeros, "last": zeros}, ctx
        assert r["write_error"] == "", ctx
        written = {str(p): p + 1 for p in range(6)}
        assert r["list_offsets_written"] == {"error": "", "first": zeros, "last": written}, ctx
        assert r["list_offsets_read_committed"] == {"error": "", "last": written}, ctx
        # DescribeConfigs: the topic's own configs (DYNAMIC_TOPIC_CONFIG, 1), defaults (5).
        assert r["describe_configs_error"] == "" and r["describe_configs_count"] >= 20, ctx
        cfg = r["describe_configs"]
        assert cfg["retention.ms"] == {"value": "3600000", "source": 1, "read_only": False}, ctx
        assert cfg["max.message.bytes"] == {"value": "200000", "source": 1, "read_only": False}, ctx
        assert cfg["cleanup.policy"]["value"] == "delete" and cfg["cleanup.policy"]["source"] == 5, ctx
        assert cfg["compression.type"]["value"] == "producer", ctx
        assert cfg["segment.bytes"]["value"] == "1073741824", ctx
        assert r["describe_configs_named"] == {"error": "", "names": ["retention.ms"]}, ctx
        assert r["describe_configs_unknown_topic_code"] == 3, ctx
        bc = r["describe_broker_configs"]
        assert bc["error"] == 0 and bc["count"] > 0, ctx
        assert bc["view"]["message.max.bytes"]["value"] == "1048588", ctx
        # IncrementalAlterConfigs changes one config; AlterConfigs replaces the whole set.
        assert r["incremental_alter_error"] == "", ctx
        inc = r["after_incremental_alter"]["configs"]
        assert inc["retention.ms"]["value"] == "7200000" and inc["retention.ms"]["source"] == 1, ctx
        assert inc["max.message.bytes"]["value"] == "200000" and inc["max.message.bytes"]["source"] == 1, ctx
        assert r["alter_error"] == "", ctx
        alt = r["after_alter"]["configs"]
        assert alt["retention.ms"]["value"] == "1000000" and alt["retention.ms"]["source"] == 1, ctx
        assert alt["max.message.bytes"]["value"] == "1048588" and alt["max.message.bytes"]["source"] != 1, ctx
        # CreatePartitions.
        assert r["create_partitions_code"] == 0 and r["create_partitions_wait"] == "", ctx
        assert r["create_partitions_fewer_code"] == 37 and r["create_partitions_same_code"] == 37, ctx
        assert r["create_partitions_unknown_code"] == 3, ctx
        assert r["write_new_partition_error"] == "", ctx
        assert r["list_offsets_after_create_partitions"] == {
            "error": "", "last": {**written, "6": 1, "7": 1}}, ctx
        # DeleteTopics.
        assert r["delete_topic_error"] == "" and r["deleted_topic_gone"] is True, ctx
        assert r["delete_again_code"] == 3 and r["list_offsets_deleted_code"] == 3, ctx
        assert_no_panic(broker)
    finally:
        broker.stop()


CODECS = {"none": 0, "gzip": 1, "snappy": 2, "lz4": 3, "zstd": 4}


def test_kafkago_writer_compression_acks_and_auto_create(kafkago_bin, tmp_path):
    broker = _start(tmp_path, TRACE)
    try:
        r, ctx = _run(kafkago_bin, broker, "produce")
        for name, codec in CODECS.items():
            c = r["codecs"][name]
            what = f"{name}: {c}\n" + ctx
            assert c["write_error"] == "" and c["writer_errors"] == 0, what
            assert c["end_offsets_total"] == 2000, what
            assert not c["read_errors"], what
            assert c["distinct"] == 2000 and c["missing"] == 0 and c["duplicates"] == 0, what
            assert c["mismatches"] == 0 and c["header_mismatches"] == 0, what
            assert c["order_violations"] == 0 and c["keys_in_several_partitions"] == 0, what
            # Stored as produced: each batch kept whole, with the producer's codec.
            assert c["fetched_batch_codecs"] == {str(codec): c["fetched_batches"]}, what
            assert c["fetched_batches"] == c["writer_batches"] and 6 <= c["fetched_batches"] <= 100, what
        for acks in ("acks0", "acks1"):
            w = r[f"writer_{acks}"]
            assert w["write1_error"] == "" and w["write2_error"] == "" and w["writer_errors"] == 0, f"{acks}: {w}\n" + ctx
            assert w["after_write1"] == {"end": 500, "error": ""}, f"{acks}: {w}\n" + ctx
            assert w["after_write2"] == {"end": 800, "error": ""}, f"{acks}: {w}\n" + ctx
            # Fire-and-forget batches keep no order between them: kafka-go's connection resolves
            # an acks=0 request as soon as it is written and only then returns to the pool, so
            # the next batch may go out on a new connection and be read first (transport.go,
            # conn.run). Seen once in a loaded run; Kafka would append them the same way.
            read = w["read"] if acks == "acks1" else dict(w["read"], in_order=True)
            assert read == {"count": 800, "in_order": True, "error": ""}, f"{acks}: {w}\n" + ctx
        assert r["multi_topic_writer"] == {"error": "", "a": 40, "b": 20}, ctx
        assert r["auto_create_write_error"] == "", ctx
        assert r["auto_create_topic"] == {"error": "", "code": 0, "partitions": 1}, ctx
        assert r["auto_create_records"] == {"error": "", "total": 20}, ctx
        assert r["no_auto_create_write_code"] == 3 and r["no_auto_create_topic_code"] == 3, ctx
        # Produce never creates a topic (only Metadata does, when asked to).
        assert r["direct_produce_unknown_topic_code"] == 3, ctx
        assert r["direct_produce_topic_code"] == 3, ctx
        versions = _request_versions(broker)
        # The Writer's Transport picks the highest version both know (v8); Conn uses v7.
        assert set(versions["Produce"]) == {7, 8}, dict(versions)
        assert_no_panic(broker)
    finally:
        broker.stop()


def _assignment_ok(assigned, members, per_member):
    parts = sorted(p for ps in assigned.values() for p in ps)
    return (len(assigned) == members and parts == list(range(6))
            and all(len(ps) == per_member for ps in assigned.values()))


def test_kafkago_reader_consumer_groups(kafkago_bin, tmp_path):
    broker = _start(tmp_path, TRACE)
    try:
        r, ctx = _run(kafkago_bin, broker, "group", timeout=180)
        # Phase 1: two readers share six partitions, every record once, offsets committed.
        assert r["phase1_stable_error"] == "", ctx
        assert _assignment_ok(r["phase1_assignment"], 2, 3), ctx
        p1 = r["phase1"]
        assert p1["distinct"] == 1200 and p1["duplicates"] == 0, ctx
        assert p1["per_reader"].get("A", 0) > 0 and p1["per_reader"].get("B", 0) > 0, ctx
        assert r["phase1_committed"]["error"] == "" and r["phase1_committed"]["equal"] is True, ctx
        # A third reader joins: rebalance to 2+2+2, nothing committed read again.
        assert r["phase2_stable_error"] == "", ctx
        assert _assignment_ok(r["phase2_assignment"], 3, 2), ctx
        assert all(len(t) == 1 and t[0].startswith("kgo-group-") for t in r["phase2_member_topics"].values()), ctx
        assert r["phase2_client_hosts"] == ["/127.0.0.1"] * 3, ctx
        assert r["redelivered_after_rebalance"] == 0, ctx
        p2 = r["phase2"]
        assert p2["distinct"] == 600 and p2["duplicates"] == 0 and p2["per_reader"].get("C", 0) > 0, ctx
        assert r["overall"] == {"distinct": 1800, "duplicates": 0, "deliveries": 1800}, ctx
        assert r["phase2_committed"]["error"] == "" and r["phase2_committed"]["equal"] is True, ctx
        assert r["offset_fetch_all_topics"]["error"] == "" and r["offset_fetch_all_topics"]["equal"] is True, ctx
        # A new group starting at LastOffset reads only what came after it joined.
        assert r["late_group_stable_error"] == "", ctx
        assert r["late_reader"] == {"distinct": 600, "duplicates": 0, "older_records": 0}, ctx
        # Group admin.
        lg = r["list_groups"]
        assert lg.get("found") is True and lg["protocol_type"] == "consumer" and lg["coordinator"] == 0, ctx
        assert lg["error"] == "" and lg["top_error"] == 0, ctx
        assert r["delete_non_empty_group_code"] == 68, ctx      # NON_EMPTY_GROUP
        unknown = r["offset_fetch_unknown_group"]
        assert unknown["error"] == "" and set(unknown["committed"].values()) == {-1}, ctx
        assert r["standalone_commit_active_group_code"] == 25, ctx   # UNKNOWN_MEMBER_ID
        assert r["standalone_commit_code"] == 0, ctx
        sc = r["standalone_committed"]
        assert sc["error"] == "" and sc["0"] == {"code": 0, "metadata": "meta-0", "offset": 5}, ctx
        assert sc["1"] == {"code": 0, "metadata": "meta-1", "offset": 7}, ctx
        assert sc["2"] == {"code": 0, "metadata": "", "offset": -1}, ctx
        assert r["offset_delete_subscribed"] == [0, 86], ctx       # GROUP_SUBSCRIBED_TO_TOPIC
        assert r["offset_delete_standalone"] == [0, 0], ctx
        assert r["offset_delete_standalone_after"] == {"error": "", "committed": {"0": -1, "1": 7}}, ctx
        assert r["offset_delete_unknown_group"][0] == 69, ctx      # GROUP_ID_NOT_FOUND
        # C leaves: A and B take its partitions; everyone leaves: Empty, offsets kept.
        assert r["after_leave_stable_error"] == "" and _assignment_ok(r["after_leave_assignment"], 2, 3), ctx
        assert r["after_close"] == {"error": "", "state": "Empty", "members": 0}, ctx
        assert r["after_close_committed"] == {"error": "", "equal": True}, ctx
        # DeleteGroups of the empty group: its offsets go, it is Dead (DescribeGroups v5: no
        # error code; GROUP_ID_NOT_FOUND only from v6).
        assert r["delete_group_code"] == 0, ctx
        gone = r["after_delete_committed"]
        assert gone["error"] == "" and set(gone["committed"].values()) == {-1}, ctx
        assert r["after_delete_describe"] == {"error": "", "state": "Dead", "code": 0, "members": 0}, ctx
        assert r["read_errors"] == {}, ctx
        # kafka-go's own classic-protocol implementation was what ran.
        v = _request_versions(broker)
        print("group requests (api: {version: count}): " + ", ".join(
            f"{api}: {dict(c)}" for api, c in sorted(v.items())))
        assert set(v["JoinGroup"]) == {2}, dict(v)
        assert set(v["SyncGroup"]) == {0} and set(v["Heartbeat"]) == {0} and set(v["LeaveGroup"]) == {0}, dict(v)
        assert 2 in v["OffsetCommit"] and v["OffsetFetch"], dict(v)
        assert "ConsumerGroupHeartbeat" not in v, dict(v)
        assert_no_panic(broker)
    finally:
        broker.stop()


def test_kafkago_records_headers_timestamps_and_size_limit(kafkago_bin, tmp_path):
    broker = _start(tmp_path)
    try:
        r, ctx = _run(kafkago_bin, broker, "records")
        assert r["write_error"] == "" and r["fetch_error"] == "", ctx
        assert r["fetch_batches"] == 1, ctx   # one WriteMessages of 7 records, one batch
        recs = r["fetched"]
        assert [x["offset"] for x in recs] == list(range(7)), ctx
        for x in recs:
            assert x["key_ok"] and x["value_ok"] and x["time_ok"] and x["headers_ok"], f"{x}\n" + ctx
        # null and empty stay apart
        assert recs[1]["key_nil"] and recs[1]["value_nil"], ctx
        assert not recs[2]["key_nil"] and not recs[2]["value_nil"] and recs[2]["value_len"] == 0, ctx
        assert recs[3]["key_nil"] and not recs[3]["value_nil"], ctx
        assert not recs[4]["key_nil"] and recs[4]["value_nil"], ctx
        assert r["fetch_offsets"] == {"hwm": 7, "lso": 7, "log_start": 0}, ctx
        assert r["reader_uncommitted"] == {"error": "", "count": 7, "all_equal": True}, ctx
        assert r["reader_committed"] == {"error": "", "count": 7, "all_equal": True}, ctx
        assert r["list_offsets_isolation"] == {"uncommitted": 7, "committed": 7, "errors": ""}, ctx
        assert r["fetch_committed_offsets"] == {"error": "", "hwm": 7, "lso": 7}, ctx
        # ListOffsets by time: first offset with timestamp >= target; none: -1.
        assert r["offsets_by_time"] == {"t0+500ms": 3, "t0-20m": 0, "future": -1, "codes": [0, 0, 0]}, ctx
        raw = r["raw_offsets_by_time"]
        assert raw["error"] == "" and raw["entries"] == [[0, 0, 3, raw["expected_ts"]]], ctx
        assert r["raw_offsets_special"] == {"error": "", "earliest": [[0, 0, 0, -1]], "latest": [[0, 0, 7, -1]]}, ctx
        assert r["reader_set_offset_at"] == {"error": "", "offset": 3, "value": "only value"}, ctx
        # LogAppendTime: the records keep the producer's timestamps (kafka-go reads those and
        # checks the CRC); the lookup by time uses the append time.
        assert r["log_append_write_error"] == "", ctx
        la = r["log_append_time"]
        assert la["fetch_error"] == "" and la["times"] == la["sent"], ctx
        lo, hi = la["append_window"]
        raw = r["log_append_raw_by_time"]
        assert raw["error"] == "" and len(raw["entries"]) == 1, ctx
        part, err, off, ts = raw["entries"][0]
        assert (part, err, off) == (0, 0, 0) and lo - 5 <= ts <= hi + 5, ctx
        # max.message.bytes = 65536: exactly the limit is taken, one byte more is
        # MESSAGE_TOO_LARGE (10) from the broker (not kafka-go's own check, -2); the limit
        # applies to the compressed batch.
        mm = r["max_message"]
        assert mm["sizes"]["at_limit_batch"] == 65536 and mm["sizes"]["over_batch"] == 65537, ctx
        assert mm["at_limit_code"] == 0, ctx
        assert mm["over_code"] == 10 and mm["huge_code"] == 10, ctx
        assert mm["gzip_small_batch_code"] == 0 and mm["after_code"] == 0, ctx
        assert r["max_message_end_offset"] == {"error": "", "end": 10, "expected_if_ok": 10}, ctx
        tail = r["max_message_tail"]
        assert tail["error"] == "", ctx
        assert [(x["offset"], x["len"]) for x in tail["records"]] == [
            (7, mm["sizes"]["at_limit_value"]), (8, 200_000), (9, 5)], ctx
        assert tail["records"][0]["uniform"] and tail["records"][1]["uniform"], ctx
        assert_no_panic(broker)
    finally:
        broker.stop()


def test_kafkago_conn_dial_leader_read_batch_long_poll(kafkago_bin, tmp_path):
    broker = _start(tmp_path)
    try:
        r, ctx = _run(kafkago_bin, broker, "conn")
        assert r["controller"] == {"error": "", "id": 0, "addr": f"127.0.0.1:{broker.port}"}, ctx
        assert r["brokers"] == {"error": "", "count": 1}, ctx
        assert r["conn_create_topics"] == "", ctx
        assert r["read_partitions"] == {"error": "", "count": 3}, ctx
        assert r["read_partitions_all_topics"] == {"error": "", "of_topic": 3}, ctx
        assert r["conn_write"] == "", ctx
        assert r["conn_write_compressed"] == {"error": "", "partition": 0, "base_offset": 10}, ctx
        assert r["conn_offsets"] == {"errors": "", "first": 0, "last": 15, "offsets": [0, 15]}, ctx
        assert r["seek_error"] == "", ctx
        rb = r["read_batch_all"]
        assert rb["offsets"] == list(range(15)) and rb["values"] == [f"conn-{i}" for i in range(15)], ctx
        assert rb["hwm"] == 15 and rb["close"] == "", ctx
        mid = r["read_batch_mid_batch"]
        assert mid["offsets"] == [12, 13, 14] and mid["values"] == ["conn-12", "conn-13", "conn-14"], ctx
        # KIP-74: a first batch above the limit still comes whole; else only whole batches.
        fm = r["fetch_max_bytes"]
        assert fm["errors"] == ["", "", ""], ctx
        assert (fm["tiny"], fm["three_and_a_half"], fm["all"]) == (1, 3, 10), ctx
        lp = r["long_poll"]
        # Nothing arrives: answered after MaxWait (1.5 s), empty (kafka-go reports an empty
        # batch as its own RequestTimedOut).
        assert lp["empty"]["n"] == 0 and 1.2 <= lp["empty"]["s"] <= 4.5, ctx
        # One record 400 ms into a 5 s wait: answered when it arrives.
        assert lp["wake"]["n"] == 1 and lp["wake"]["error"] == "" and lp["wake"]["s"] < 3.0, ctx
        # MinBytes 3,000, a 1,070-byte batch every 250 ms: answered once three are there.
        assert 3 <= lp["min_bytes"]["n"] <= 6 and lp["min_bytes"]["error"] == "", ctx
        assert lp["min_bytes"]["s"] < 3.5, ctx
        assert r["out_of_range"]["code"] == 1, ctx               # OFFSET_OUT_OF_RANGE
        assert r["conn_delete_topics"] == "" and r["conn_deleted_gone"] is True, ctx
        assert_no_panic(broker)
    finally:
        broker.stop()


def test_kafkago_raw_list_offsets_duplicate_partition(kafkago_bin, tmp_path):
    """A ListOffsets naming partition 0 twice and partition 1 once: partition 0 is answered
    once, INVALID_REQUEST (42) with offset and timestamp -1, partition 1 as usual; what Apache
    Kafka 4.4 answered to the same program on 2026-12-07 (ReplicaManager.fetchOffset,
    ListOffsetsRequest.duplicatePartitions)."""
    broker = _start(tmp_path)
    try:
        r, ctx = _run(kafkago_bin, broker, "listoffsets-dup")
        d = r["raw_list_offsets_duplicate"]
        assert d["error"] == "", ctx
        p0 = [e for e in d["entries"] if e[0] == 0]
        p1 = [e for e in d["entries"] if e[0] == 1]
        assert p1 == [[1, 0, 2, -1]], ctx
        assert p0 == [[0, 42, -1, -1]], ctx
    finally:
        broker.stop()
