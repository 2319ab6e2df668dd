"""Apache Kafka Connect 4.4 (connect-runtime, distributed mode, one worker) with exactly-once
source support (KIP-618, worker `exactly.once.source.support=enabled`) against kaas.

The worker creates its three internal topics itself (config, offsets, status, all
cleanup.policy=compact, which it checks with DescribeConfigs), writes the config topic with its
own transactional producer (`connect-cluster-<group>`) and reads the offsets and config topics
read_committed. The FileStreamSourceConnector (exactly.once.support=required,
transaction.boundary=interval, 2 s) reads a file of lines into a one-partition topic that
Connect creates: each transaction holds the records and the source offset (the byte position in
the file). The FileStreamSinkConnector (a read_committed consumer) writes the topic to another
file.

Checked: the connector and its task reach RUNNING; the topic, read read_committed, holds each
line once and in order; the sink file equals the source file; the internal topics exist with
cleanup.policy=compact. Then KIP-875 on the exactly-once connector: it is stopped, 500 lines are
appended and its offset is moved past them (PATCH /offsets): before writing it, the leader
fences the task's earlier producers with Admin.fenceProducers (one InitProducerId without
producer id or epoch per transactional id; Connect fences only there or when a connector's task
count changes, and the FileStream source has one task), then writes the offset in a transaction
of the task's transactional id; resumed, the task must skip those lines. Then, with lines still
being appended, the worker is killed with SIGKILL while its task's transaction is open and is
started again: the new task's producer fences the old one, the open transaction is aborted and
the task goes on from the committed offset, so read_committed still holds every line exactly
once and in order (none of the skipped ones), and the source offset Connect reports is the
file's size. The sink is at-least-once (its consumer offsets are committed after its file is
flushed): after the kill its file may repeat lines it wrote after its last commit, and may hold
one torn line, but holds every line, first occurrences in order. The worker logs no ERROR.

The same scenario passes against Apache Kafka 4.4 (`run_connect_scenario` with an
apache_kafka.ApacheKafka's bootstrap), with the same measurements and the same worker WARN lines.

Needs java and tests/interop/java built (`mvn package`: connect-runtime and connect-json 4.4.0
in target/lib, the connect-file plugin in target/connect-plugins; Maven Central has no
connect-file 4.4.0, so the plugin is connect-file 4.3.1, run by the 4.4 worker in its plugin
class loader, see the pom).
"""
import json
import os
import re
import signal
import subprocess
import threading
import time
import urllib.error
import urllib.request
import uuid

import pytest
from confluent_kafka.admin import AdminClient, ConfigResource

import javaharness as jh
from conftest import ANSI_RE, Broker, free_port, poll_until
from kaashelpers import assert_no_panic, consume_to_end, end_offsets, request_counts

pytestmark = pytest.mark.serial  # conftest.py: kills the worker and bounds its waits by the clock

FIRST = 5_000        # lines in the source file before the connector starts
SKIPPED = 500        # lines appended while the connector is stopped, then skipped by moving its offset
SECOND = 4_000       # lines appended while the worker runs, and is killed
CHUNK = 100          # lines per append
BATCH = 100          # FileStreamSourceTask batch.size (records per poll)
TXN_INTERVAL_MS = 2000  # transaction.boundary=interval: a transaction stays open ~2 s

# slf4j-simple's layout (tests/interop/java simplelogger.properties): "HH:mm:ss.SSS [thread] LEVEL ..."
WORKER_ERROR_RE = re.compile(r"^\d\d:\d\d:\d\d\.\d{3} (\[[^\]]*\] )?ERROR ")


PLUGINS = jh.JAVA_PROJECT / "target" / "connect-plugins"


def _ensure_connect_built():
    """The Connect runtime in target/lib and the connect-file plugin directory, built by the
    Maven project's package phase (scripts/test.sh runs it); built here when missing, as
    javaharness.ensure_built does, for a target/ from before they were added."""
    jh.ensure_built()
    if any(jh.LIB.glob("connect-runtime-*.jar")) and any(PLUGINS.glob("*/connect-file-*.jar")):
        return
    proc = subprocess.run(["mvn", "-q", "-B", "-f", str(jh.JAVA_PROJECT / "pom.xml"), "package",
                           "-DskipTests"], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                          text=True, timeout=900)
    assert proc.returncode == 0, f"maven build of {jh.JAVA_PROJECT} failed:\n{proc.stdout[-5000:]}"
    assert any(PLUGINS.glob("*/connect-file-*.jar")), f"the build made no {PLUGINS}/*/connect-file-*.jar"


def _line(i: int) -> str:
    return f"line-{i:06d}"


class Worker:
    """One ConnectDistributed JVM, its own process group (killed by its id only), logging to a
    file that every run appends to."""

    def __init__(self, props_path, log_path):
        self.props_path = props_path
        self.log_path = log_path
        self.proc = None

    def start(self):
        _ensure_connect_built()
        cmd = ["java", "-Xmx512m", "-XX:TieredStopAtLevel=1",
               "-Dorg.slf4j.simpleLogger.defaultLogLevel=info",
               "-Dorg.slf4j.simpleLogger.showThreadName=true",
               "-cp", jh.classpath(), "org.apache.kafka.connect.cli.ConnectDistributed",
               str(self.props_path)]
        with open(self.log_path, "ab") as log:
            log.write(f"===== worker start {time.strftime('%H:%M:%S')} =====\n".encode())
            log.flush()
            self.proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT,
                                         stdin=subprocess.DEVNULL, start_new_session=True)
        return self

    def alive(self):
        return self.proc is not None and self.proc.poll() is None

    def kill(self):
        assert self.alive(), f"the worker died before the test killed it:\n{self.log_tail()}"
        os.killpg(self.proc.pid, signal.SIGKILL)
        self.proc.wait(10)

    def stop(self):
        """SIGTERM (Connect's shutdown hook stops the herder), SIGKILL after 20 s."""
        if not self.alive():
            return
        os.killpg(self.proc.pid, signal.SIGTERM)
        try:
            self.proc.wait(20)
        except subprocess.TimeoutExpired:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait(10)

    def log_text(self):
        try:
            return ANSI_RE.sub("", self.log_path.read_text(errors="replace"))
        except OSError:
            return ""

    def log_tail(self, n=60):
        return "\n".join(self.log_text().splitlines()[-n:])

    def error_lines(self):
        return [ln for ln in self.log_text().splitlines() if WORKER_ERROR_RE.search(ln)]


class Rest:
    def __init__(self, port):
        self.base = f"http://127.0.0.1:{port}"

    def call(self, method, path, body=None, timeout=15):
        """(HTTP status, decoded JSON or text); status 0 when nothing answered."""
        data = json.dumps(body).encode() if body is not None else None
        req = urllib.request.Request(self.base + path, data=data, method=method,
                                     headers={"Content-Type": "application/json",
                                              "Accept": "application/json"})
        try:
            with urllib.request.urlopen(req, timeout=timeout) as r:
                raw = r.read().decode()
                status = r.status
        except urllib.error.HTTPError as e:
            raw, status = e.read().decode(errors="replace"), e.code
        except (urllib.error.URLError, ConnectionError, TimeoutError, OSError) as e:
            return 0, repr(e)
        try:
            return status, json.loads(raw) if raw else None
        except json.JSONDecodeError:
            return status, raw

    def create(self, name, config, timeout):
        """POST /connectors, again while the worker has not joined its group yet or rebalances
        (409, 500 "Request timed out", nothing listening)."""
        last = None

        def attempt():
            nonlocal last
            last = self.call("POST", "/connectors", {"name": name, "config": config})
            if last[0] == 201:
                return True
            assert last[0] in (0, 409, 500, 503), f"POST /connectors {name}: {last}"
            return False
        try:
            poll_until(attempt, timeout, f"connector {name} created", 0.5)
        except AssertionError as e:
            raise AssertionError(f"{e}; last answer {last}") from None

    def wait_running(self, name, timeout, worker):
        """The connector and each of its tasks RUNNING; a FAILED one fails the test at once."""
        last = None

        def running():
            nonlocal last
            assert worker.alive(), f"the worker exited:\n{worker.log_tail()}"
            status, s = self.call("GET", f"/connectors/{name}/status")
            last = (status, s)
            if status != 200:
                return False
            states = [s["connector"]["state"]] + [t["state"] for t in s.get("tasks", [])]
            assert "FAILED" not in states, f"{name} failed: {json.dumps(s, indent=1)[:6000]}"
            return len(s.get("tasks", [])) >= 1 and all(st == "RUNNING" for st in states)
        try:
            poll_until(running, timeout, f"{name} and its tasks RUNNING", 0.5)
        except AssertionError as e:
            raise AssertionError(f"{e}; last status {last}\n{worker.log_tail()}") from None


def _worker_properties(path, bootstrap, rest_port, ids):
    path.write_text("\n".join([
        f"bootstrap.servers={bootstrap}",
        f"group.id={ids['group']}",
        f"config.storage.topic={ids['configs']}",
        f"offset.storage.topic={ids['offsets']}",
        f"status.storage.topic={ids['status']}",
        "config.storage.replication.factor=1",
        "offset.storage.replication.factor=1",
        "status.storage.replication.factor=1",
        "key.converter=org.apache.kafka.connect.storage.StringConverter",
        "value.converter=org.apache.kafka.connect.storage.StringConverter",
        "exactly.once.source.support=enabled",
        "offset.flush.interval.ms=500",
        f"listeners=http://127.0.0.1:{rest_port}",
        "rest.advertised.host.name=127.0.0.1",
        f"rest.advertised.port={rest_port}",
        # the FileStream connectors: a plugin directory (tests/interop/java/pom.xml); their jar
        # lists them for the ServiceLoader, so no class path scan
        f"plugin.path={PLUGINS}",
        "plugin.discovery=service_load",
        "connector.client.config.override.policy=All",
        # a restarted single worker need not wait 5 minutes for its earlier self's tasks
        "scheduled.rebalance.max.delay.ms=1000",
        "session.timeout.ms=6000",
        "heartbeat.interval.ms=1000",
        "task.shutdown.graceful.timeout.ms=3000",
        "",
    ]))


def _committed_values(bootstrap, topic, timeout=30.0):
    got = consume_to_end(bootstrap, topic, 1, "read_committed", timeout=timeout)
    return [v.decode() if v is not None else None for _, _, v in got[0]]


def _wait_committed(bootstrap, topic, count, timeout, worker):
    """The read_committed values once there are at least `count` of them."""
    seen = []

    def enough():
        assert worker.alive(), f"the worker exited:\n{worker.log_tail()}"
        try:
            values = _committed_values(bootstrap, topic, timeout=10)
        except AssertionError as e:  # the LSO short of the high watermark for 10 s
            seen.append(str(e))
            return None
        seen.append(len(values))
        return values if len(values) >= count else None
    try:
        return poll_until(enough, timeout, f"{count} committed records in {topic}", 0.5)
    except AssertionError as e:
        raise AssertionError(f"{e}; committed counts seen {seen[-10:]}\n{worker.log_tail(80)}") from None


def _describe(values, expected):
    """Where a read differs from the expected lines: first difference, duplicates, missing."""
    dup = len(values) - len(set(values))
    missing = sorted(set(expected) - set(values))
    first = next((i for i, (a, b) in enumerate(zip(values, expected)) if a != b), None)
    at = f"index {first}: got {values[first]!r}, expected {expected[first]!r}" if first is not None else "none"
    return (f"{len(values)} records for {len(expected)} lines; {dup} duplicates; "
            f"{len(missing)} missing (first {missing[:3]}); first difference at {at}")


def _sink_lines(path):
    try:
        return path.read_text().splitlines()
    except FileNotFoundError:
        return []


def _check_at_least_once_sink(lines, expected, kills):
    """At-least-once file: every expected line, first occurrences in expected order, nothing
    else except at most one torn line per killed worker (a buffered line cut by SIGKILL, then
    the replay's first line appended to it)."""
    well = re.compile(r"^line-\d{6}$")
    torn = [ln for ln in lines if not well.match(ln)]
    assert len(torn) <= kills, f"{len(torn)} malformed sink lines: {torn[:5]}"
    firsts, seen = [], set()
    for ln in lines:
        m = re.search(r"line-\d{6}$", ln)
        if m and m.group(0) not in seen:
            seen.add(m.group(0))
            firsts.append(m.group(0))
    assert firsts == expected, "sink file (first occurrences): " + _describe(firsts, expected)
    return len(lines) - len(expected)


def _internal_topic_policies(bootstrap, topics):
    admin = AdminClient({"bootstrap.servers": bootstrap})
    md = admin.list_topics(timeout=10)
    out = {}
    for t in topics:
        if t not in md.topics:
            out[t] = None
            continue
        res = ConfigResource(ConfigResource.Type.TOPIC, t)
        cfg = admin.describe_configs([res])[res].result(timeout=10)
        out[t] = (cfg["cleanup.policy"].value, len(md.topics[t].partitions))
    return out


def run_connect_scenario(bootstrap, tmp_path, report=print):
    """The whole scenario against the broker(s) at `bootstrap` (kaas in the test; Apache Kafka
    4.4 when comparing by hand). Returns what it measured."""
    uid = uuid.uuid4().hex[:8]
    ids = {"group": f"connect-{uid}", "configs": f"connect-configs-{uid}",
           "offsets": f"connect-offsets-{uid}", "status": f"connect-status-{uid}"}
    topic = f"lines-{uid}"
    source_file = tmp_path / "source.txt"
    sink_file = tmp_path / "sink.txt"
    lines = [_line(i) for i in range(1, FIRST + SECOND + 1)]
    skipped = [f"skip-{i:06d}" for i in range(1, SKIPPED + 1)]
    source_file.write_text("".join(ln + "\n" for ln in lines[:FIRST]))

    rest_port = free_port()
    props = tmp_path / "worker.properties"
    _worker_properties(props, bootstrap, rest_port, ids)
    worker = Worker(props, tmp_path / "connect-worker.log")
    rest = Rest(rest_port)
    measured = {}
    appender = None
    try:
        t0 = time.time()
        worker.start()
        poll_until(lambda: rest.call("GET", "/")[0] == 200 or not worker.alive(), 60,
                   "the worker's REST API")
        assert worker.alive(), f"the worker exited at start:\n{worker.log_tail()}"

        rest.create("file-source", {
            "connector.class": "org.apache.kafka.connect.file.FileStreamSourceConnector",
            "tasks.max": "1",
            "file": str(source_file),
            "topic": topic,
            "batch.size": str(BATCH),
            "exactly.once.support": "required",
            "transaction.boundary": "interval",
            "transaction.boundary.interval.ms": str(TXN_INTERVAL_MS),
            "topic.creation.default.partitions": "1",
            "topic.creation.default.replication.factor": "1",
        }, timeout=60)
        rest.wait_running("file-source", 60, worker)
        measured["source running after s"] = round(time.time() - t0, 1)

        values = _wait_committed(bootstrap, topic, FIRST, 60, worker)
        assert values == lines[:FIRST], "read_committed topic: " + _describe(values, lines[:FIRST])

        rest.create("file-sink", {
            "connector.class": "org.apache.kafka.connect.file.FileStreamSinkConnector",
            "tasks.max": "1",
            "topics": topic,
            "file": str(sink_file),
            "consumer.override.isolation.level": "read_committed",
            "consumer.override.auto.offset.reset": "earliest",
        }, timeout=30)
        rest.wait_running("file-sink", 60, worker)
        poll_until(lambda: len(_sink_lines(sink_file)) >= FIRST, 60, f"{FIRST} lines in the sink file")
        time.sleep(1)  # anything beyond FIRST would be a duplicate
        assert sink_file.read_text() == source_file.read_text(), (
            "sink file: " + _describe(_sink_lines(sink_file), lines[:FIRST]))

        policies = _internal_topic_policies(bootstrap, [ids["configs"], ids["offsets"], ids["status"]])
        measured["internal topics (cleanup.policy, partitions)"] = policies
        assert all(p is not None and p[0] == "compact" for p in policies.values()), policies
        assert policies[ids["configs"]][1] == 1, policies

        # KIP-875 with exactly-once support: stop the source connector (its task configs become
        # empty), append lines, and move its offset past them. Before writing the offset the
        # leader fences the last generation's task producers (Admin.fenceProducers: InitProducerId
        # without producer id or epoch for <group>-file-source-0), then writes the offset with a
        # transactional producer of that same transactional id.
        status, answer = rest.call("PUT", "/connectors/file-source/stop")
        assert status in (202, 204), (status, answer)
        poll_until(lambda: (lambda st: st[0] == 200 and st[1]["connector"]["state"] == "STOPPED"
                            and not st[1]["tasks"])(rest.call("GET", "/connectors/file-source/status")),
                   30, "file-source STOPPED")
        with open(source_file, "a") as f:
            f.write("".join(ln + "\n" for ln in skipped))
        skip_to = source_file.stat().st_size
        status, answer = rest.call("PATCH", "/connectors/file-source/offsets", {"offsets": [
            {"partition": {"filename": str(source_file)}, "offset": {"position": skip_to}}]},
            timeout=60)
        measured["offsets altered"] = answer
        assert status == 200, f"PATCH offsets: {status} {answer}\n{worker.log_tail()}"
        status, answer = rest.call("PUT", "/connectors/file-source/resume")
        assert status in (202, 204), (status, answer)
        rest.wait_running("file-source", 60, worker)
        # Worker.fenceZombies' admin client (its config is logged at INFO when it is created)
        assert "client.id = connector-worker-adminclient-file-source" in worker.log_text(), (
            "no zombie-fencing admin client was created for the offset change")

        # More lines while the worker runs; SIGKILL half-way through them.
        def append():
            with open(source_file, "a") as f:
                for start in range(FIRST, FIRST + SECOND, CHUNK):
                    f.write("".join(ln + "\n" for ln in lines[start:start + CHUNK]))
                    f.flush()
                    time.sleep(0.1)
        appender = threading.Thread(target=append, daemon=True)
        appender.start()
        time.sleep(2.0)
        worker.kill()
        appender.join(30)
        assert not appender.is_alive()
        # what the killed task had sent in its transaction that is still open: records between
        # the last stable offset and the high watermark
        hw = end_offsets(bootstrap, topic, 1, "read_uncommitted")[0]
        lso = end_offsets(bootstrap, topic, 1, "read_committed")[0]
        measured["open transaction at the kill (high watermark - LSO)"] = hw - lso

        t1 = time.time()
        worker.start()
        rest.wait_running("file-source", 90, worker)
        rest.wait_running("file-sink", 60, worker)
        measured["running again after s"] = round(time.time() - t1, 1)
        values = _wait_committed(bootstrap, topic, FIRST + SECOND, 60, worker)
        time.sleep(1)
        values = _committed_values(bootstrap, topic)
        assert values == lines, "read_committed topic after the restart: " + _describe(values, lines)

        status, offsets = rest.call("GET", "/connectors/file-source/offsets")
        measured["source offsets"] = offsets
        assert status == 200, (status, offsets)
        positions = [o["offset"].get("position") for o in offsets["offsets"]
                     if o["partition"].get("filename") == str(source_file)]
        assert positions == [source_file.stat().st_size], (
            f"source offset {positions}, file size {source_file.stat().st_size}")

        poll_until(lambda: _sink_lines(sink_file)[-1:] == [lines[-1]], 60, "the sink file's last line")
        sink_text = sink_file.read_text()
        assert "skip-" not in sink_text, "the sink wrote a line the source was told to skip"
        measured["sink lines written twice"] = _check_at_least_once_sink(
            sink_text.splitlines(), lines, kills=1)

        errors = worker.error_lines()
        measured["worker ERROR lines"] = len(errors)
        assert not errors, f"{len(errors)} ERROR lines in the worker log:\n" + "\n".join(errors[:20])
        assert worker.alive(), worker.log_tail()
        return measured
    finally:
        report(f"\nKafka Connect EOS scenario: {measured}")
        worker.stop()
        if appender is not None:
            appender.join(10)


def test_kafka_connect_exactly_once_source_survives_kill_9_of_the_worker(tmp_path):
    broker = Broker(tmp_path / "data", free_port(),
                    extra_env={"RUST_LOG": "info,kaas::protocol::connection=trace"}).start()
    try:
        run_connect_scenario(broker.bootstrap, tmp_path)
        seen = request_counts(broker)
        print("requests (api, version): " + ", ".join(
            f"{a} v{v}: {n}" for (a, v), n in sorted(seen.items())))
        assert_no_panic(broker)
    finally:
        broker.stop()
