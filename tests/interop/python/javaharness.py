"""Runs the Java interop programs (tests/interop/java) and Apache Kafka's ProducerPerformance.

The Maven project is normally built before the tests
(`mvn -q -f tests/interop/java/pom.xml package -DskipTests`); `ensure_built()` builds it when
target/classes or target/lib is missing so that running pytest alone works.
"""
import json
import os
import re
import shutil
import subprocess
from dataclasses import dataclass, field
from pathlib import Path
from typing import Dict, List, Optional

ROOT = Path(__file__).resolve().parents[3]
JAVA_PROJECT = ROOT / "tests" / "interop" / "java"
CLASSES = JAVA_PROJECT / "target" / "classes"
LIB = JAVA_PROJECT / "target" / "lib"

JAVA_HEAP = os.environ.get("KAAS_TEST_JAVA_HEAP", "512m")

_built = False


def ensure_built() -> None:
    """Builds the Maven project once if its classes or copied dependencies are missing, or a
    Java source is newer than the classes (so an edited program never runs stale)."""
    global _built
    if _built:
        return
    marker = CLASSES / "kaas" / "interop" / "ProduceConsume.class"
    have_lib = LIB.is_dir() and any(LIB.glob("kafka-clients-*.jar")) and any(LIB.glob("kafka-tools-*.jar"))
    sources = list((JAVA_PROJECT / "src").rglob("*.java"))
    stale = marker.is_file() and any(p.stat().st_mtime > marker.stat().st_mtime for p in sources)
    if stale or not (marker.is_file() and have_lib):
        mvn = shutil.which("mvn")
        if mvn is None:
            raise RuntimeError("mvn not found: cannot build tests/interop/java")
        proc = subprocess.run(
            [mvn, "-q", "-B", "-f", str(JAVA_PROJECT / "pom.xml"), "package", "-DskipTests"],
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=900)
        if proc.returncode != 0:
            raise RuntimeError(f"maven build of {JAVA_PROJECT} failed:\n{proc.stdout[-5000:]}")
        if not marker.is_file():
            raise RuntimeError(f"maven build did not produce {marker}")
    _built = True


def classpath() -> str:
    return f"{CLASSES}{os.pathsep}{LIB}{os.sep}*"


@dataclass
class JavaRun:
    args: List[str]
    returncode: int
    stdout: str
    stderr: str

    def describe(self) -> str:
        return (f"command: {' '.join(self.args)}\nexit code: {self.returncode}\n"
                f"--- stdout (tail) ---\n{self.stdout[-4000:]}\n"
                f"--- stderr (tail) ---\n{self.stderr[-6000:]}")


def run_java(main_class: str, *args: str, timeout: float = 300, heap: str = JAVA_HEAP,
             env: Optional[dict] = None) -> JavaRun:
    """Runs an interop program; `env` adds environment variables (KAAS_INTEROP_CLIENT_CONFIG:
    a client properties file every client of the program starts from, Common.clientProps)."""
    ensure_built()
    java = shutil.which("java")
    if java is None:
        raise RuntimeError("java not found on PATH")
    cmd = [java, f"-Xmx{heap}", "-cp", classpath(), main_class, *args]
    try:
        proc = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                              timeout=timeout, env={**os.environ, **(env or {})})
    except subprocess.TimeoutExpired as e:
        out = e.stdout.decode(errors="replace") if isinstance(e.stdout, bytes) else (e.stdout or "")
        err = e.stderr.decode(errors="replace") if isinstance(e.stderr, bytes) else (e.stderr or "")
        return JavaRun(cmd, -999, out, err + f"\n[javaharness] timed out after {timeout}s")
    return JavaRun(cmd, proc.returncode, proc.stdout, proc.stderr)


def last_json_line(text: str) -> Optional[dict]:
    for line in reversed(text.strip().splitlines()):
        line = line.strip()
        if line.startswith("{") and line.endswith("}"):
            try:
                return json.loads(line)
            except json.JSONDecodeError:
                return None
    return None


@dataclass
class ProduceConsumeResult:
    run: JavaRun
    summary: Optional[dict]


def produce_consume(bootstrap: str, topic: str, count: int, partitions: int = 3,
                    timeout: float = 300, env: Optional[dict] = None) -> ProduceConsumeResult:
    """kaas.interop.ProduceConsume: default (idempotent, acks=all) producer, then assign() consumer."""
    r = run_java("kaas.interop.ProduceConsume", bootstrap, topic, str(count), str(partitions),
                 timeout=timeout, env=env)
    return ProduceConsumeResult(r, last_json_line(r.stdout))


def create_topic(bootstrap: str, topic: str, partitions: int = 3) -> JavaRun:
    return run_java("kaas.interop.CreateTopic", bootstrap, topic, str(partitions), "1", timeout=120)


def topic_offsets(bootstrap: str, topic: str) -> (JavaRun, Optional[dict]):
    r = run_java("kaas.interop.TopicOffsets", bootstrap, topic, timeout=120)
    return r, last_json_line(r.stdout)


# ProducerPerformance's final summary, e.g.
# "200000 records sent, 51234.5 records/sec (50.03 MB/sec), 250.12 ms avg latency,
#  812.00 ms max latency, 230 ms 50th, 610 ms 95th, 700 ms 99th, 800 ms 99.9th."
SUMMARY_RE = re.compile(
    r"^(?P<sent>\d+) records sent, (?P<rps>[\d.]+) records/sec \((?P<mbps>[\d.]+) MB/sec\), "
    r"(?P<avg>[\d.]+) ms avg latency, (?P<max>[\d.]+) ms max latency, (?P<p50>\d+) ms 50th, "
    r"(?P<p95>\d+) ms 95th, (?P<p99>\d+) ms 99th, (?P<p999>\d+) ms 99\.9th\.$")
# A failed send: PerfCallback calls exception.printStackTrace(), whose first line is the
# exception's class name; the client's own log lines (slf4j-simple) start with a time stamp.
EXCEPTION_LINE_RE = re.compile(r"^[A-Za-z_$][\w.$]*(Exception|Error)(:|\s|$)")


@dataclass
class PerfResult:
    run: JavaRun
    summary: Optional[Dict[str, float]]
    exception_lines: List[str] = field(default_factory=list)


def producer_performance(bootstrap: str, topic: str, num_records: int, record_size: int = 1024,
                         acks: str = "all", throughput: int = -1, extra_props: List[str] = (),
                         timeout: float = 900) -> PerfResult:
    """Runs org.apache.kafka.tools.ProducerPerformance (kafka-producer-perf-test) and parses it."""
    r = run_java("org.apache.kafka.tools.ProducerPerformance",
                 "--topic", topic, "--num-records", str(num_records),
                 "--record-size", str(record_size), "--throughput", str(throughput),
                 "--producer-props", f"bootstrap.servers={bootstrap}", f"acks={acks}", *extra_props,
                 timeout=timeout)
    summary = None
    for line in r.stdout.splitlines():
        m = SUMMARY_RE.match(line.strip())
        if m:
            summary = {k: float(v) for k, v in m.groupdict().items()}
            summary["sent"] = int(m.group("sent"))
    exceptions = [ln for ln in r.stderr.splitlines() if EXCEPTION_LINE_RE.match(ln)]
    return PerfResult(r, summary, exceptions)


# ----------------------------------------------------------------------------- transactions

@dataclass
class JsonRun:
    run: JavaRun
    summary: Optional[dict]


def transactions_run(bootstrap: str, topic: str, txns: int, partitions: int, per_partition: int,
                     timeout: float = 300, env: Optional[dict] = None) -> JsonRun:
    """kaas.interop.Transactions run: transactional KafkaProducer, commit/abort mix, verified
    with read_committed and read_uncommitted assign() consumers."""
    r = run_java("kaas.interop.Transactions", "run", bootstrap, topic, str(txns), str(partitions),
                 str(per_partition), timeout=timeout, env=env)
    return JsonRun(r, last_json_line(r.stdout))


def transactions_zombie(bootstrap: str, topic: str, timeout: float = 300) -> JsonRun:
    """kaas.interop.Transactions zombie: a second producer with the same transactional.id
    fences the first (two scenarios)."""
    r = run_java("kaas.interop.Transactions", "zombie", bootstrap, topic, timeout=timeout)
    return JsonRun(r, last_json_line(r.stdout))


def transactions_count(bootstrap: str, topic: str, isolation: str = "read_committed",
                       timeout: float = 300) -> JsonRun:
    """kaas.interop.Transactions count: records visible with the isolation level, read from the
    beginning up to the high watermark (JSON: records, per_partition, high_watermarks, lso)."""
    r = run_java("kaas.interop.Transactions", "count", bootstrap, topic, isolation, timeout=timeout)
    return JsonRun(r, last_json_line(r.stdout))


def producer_performance_with_args(bootstrap: str, topic: str, num_records: int,
                                   record_size: int = 1024, acks: str = "all",
                                   throughput: int = -1, tool_args: List[str] = (),
                                   extra_props: List[str] = (), timeout: float = 900) -> PerfResult:
    """Like producer_performance, plus tool options (e.g. ["--transactional-id", "x",
    "--transaction-duration-ms", "100"]) placed before --producer-props."""
    r = run_java("org.apache.kafka.tools.ProducerPerformance",
                 "--topic", topic, "--num-records", str(num_records),
                 "--record-size", str(record_size), "--throughput", str(throughput), *tool_args,
                 "--producer-props", f"bootstrap.servers={bootstrap}", f"acks={acks}", *extra_props,
                 timeout=timeout)
    summary = None
    for line in r.stdout.splitlines():
        m = SUMMARY_RE.match(line.strip())
        if m:
            summary = {k: float(v) for k, v in m.groupdict().items()}
            summary["sent"] = int(m.group("sent"))
    exceptions = [ln for ln in r.stderr.splitlines() if EXCEPTION_LINE_RE.match(ln)]
    return PerfResult(r, summary, exceptions)


# ----------------------------------------------------------------------------- consumer groups

def group_consume(bootstrap: str, topic: str, group: str, count: int, partitions: int,
                  timeout: float = 300, protocol: str = "classic", env: Optional[dict] = None) -> JsonRun:
    """kaas.interop.GroupConsume: two KafkaConsumers (cooperative-sticky, or group.protocol
    `consumer`: KIP-848) split TOPIC, one leaves, the other takes over; every record consumed,
    committed offsets == end offsets."""
    r = run_java("kaas.interop.GroupConsume", bootstrap, topic, group, str(count), str(partitions),
                 protocol, timeout=timeout, env=env)
    return JsonRun(r, last_json_line(r.stdout))


def ctp(bootstrap: str, in_topic: str, out_topic: str, group: str, transactional_id: str,
        count: int, partitions: int, timeout: float = 300, protocol: str = "classic",
        env: Optional[dict] = None) -> JsonRun:
    """kaas.interop.Ctp: exactly-once consume-transform-produce with sendOffsetsToTransaction,
    a second instance with the same transactional.id fences the first halfway."""
    r = run_java("kaas.interop.Ctp", bootstrap, in_topic, out_topic, group, transactional_id,
                 str(count), str(partitions), protocol, timeout=timeout, env=env)
    return JsonRun(r, last_json_line(r.stdout))


def console_consumer(bootstrap: str, topic: str, *args: str, timeout: float = 120) -> JavaRun:
    """Apache Kafka's console consumer (kafka-tools 4.x: org.apache.kafka.tools.consumer.
    ConsoleConsumer; kafka.tools.ConsoleConsumer no longer exists). Extra args, e.g.
    "--group", "g", "--from-beginning", "--max-messages", "100"."""
    return run_java("org.apache.kafka.tools.consumer.ConsoleConsumer",
                    "--bootstrap-server", bootstrap, "--topic", topic, *args, timeout=timeout)


def start_java(main_class: str, *args: str, stdout_path: Path, stderr_path: Path,
               heap: str = JAVA_HEAP, jvm_opts: List[str] = ()) -> subprocess.Popen:
    """Starts a Java program of the interop classpath (kaas.interop.* or a Kafka tool) in the
    background, its stdout and stderr going to files (a long-running tool can print more than a
    pipe holds); the caller waits for it, reads the files and kills it if it outlives the test."""
    ensure_built()
    java = shutil.which("java")
    if java is None:
        raise RuntimeError("java not found on PATH")
    cmd = [java, f"-Xmx{heap}", *jvm_opts, "-cp", classpath(), main_class, *args]
    with open(stdout_path, "wb") as out, open(stderr_path, "wb") as err:
        return subprocess.Popen(cmd, stdout=out, stderr=err, stdin=subprocess.DEVNULL)
