#!/usr/bin/env python3
"""Benchmark matrix: Apache Kafka 4.4 (KRaft, single node) against kaas, load by load.

Brokers (BROKERS): `kafka` is Apache Kafka with its defaults (no fsync before an answer),
`kafka-fsync` the same with `log.flush.interval.messages=1` (every append fsynced before the
answer, the durability kaas gives by default), `kaas` kaas with its defaults. Each has a TLS
variant (`kafka-tls`, `kafka-fsync-tls`, `kaas-tls`): the same broker with its client listener
on SSL (certificates from scripts/dev-certs.sh), and every client of the matrix (perf tools,
BenchTool's admin calls) on SSL with the CA as a PEM truststore. SECURITY="plaintext tls" runs
each broker of BROKERS in both (SECURITY=tls: TLS only).

Started by benches/load/matrix.sh (which builds kaas, fetches the jars and makes the venv);
runs with the standard library only. For every load and every broker: a fresh data dir, start
the broker, create the topic(s), sample the broker's CPU time (utime+stime from
/proc/<pid>/stat), run the load with Apache Kafka's own tools, sample CPU again, read the
broker's peak RSS (VmHWM from /proc/<pid>/status), stop the broker. Writes
results/<timestamp>.json and results/latest.json and prints a table.

Every setting is an environment variable (see README.md in this directory); QUICK=1 selects
small record counts for a smoke run.
"""
import datetime
import json
import os
import platform
import re
import resource
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "..", ".."))
LIB = os.path.join(HERE, "target", "lib")
CP = os.path.join(HERE, "target", "classes") + ":" + os.path.join(LIB, "*")
LOG4J = "-Dlog4j2.configurationFile=file:" + os.path.join(HERE, "log4j2.properties")
KAFKA_VERSION = "4.4.0"
CLK_TCK = os.sysconf("SC_CLK_TCK")

QUICK = os.environ.get("QUICK", "0") == "1"


def env(name, full, quick=None):
    """A setting: the environment variable NAME, else the QUICK or the full profile's default."""
    v = os.environ.get(name)
    if v is not None and v != "":
        return v
    return str(quick if (QUICK and quick is not None) else full)


def env_int(name, full, quick=None):
    return int(env(name, full, quick))


def env_list(name, full, quick=None):
    return env(name, full, quick).split()


def brokers_setting():
    """BROKERS, each expanded to the security protocols of SECURITY ("plaintext", "tls" or both:
    a broker's TLS variant runs right after its plaintext one). A name already ending in -tls
    stays as it is."""
    names = env_list("BROKERS", "kafka kafka-fsync kaas")
    sec = env_list("SECURITY", "plaintext")
    bad = [x for x in sec if x not in ("plaintext", "tls")]
    if bad or not sec:
        raise SystemExit("SECURITY takes plaintext and/or tls, not %r" % " ".join(sec))
    out = []
    for n in names:
        if n.endswith(TLS_SUFFIX):
            out.append(n)
            continue
        for x in sec:
            out.append(n if x == "plaintext" else n + TLS_SUFFIX)
    return out


TLS_SUFFIX = "-tls"

CFG = {
    "profile": "quick" if QUICK else "full",
    "brokers": brokers_setting(),
    "security": env_list("SECURITY", "plaintext"),
    "loads": env_list("LOADS", "produce fixed_rate txn consume e2e read_committed partition_scale"),
    "record_size": env_int("RECORD_SIZE", 1024),
    # producer perf test, unthrottled, acks=all, idempotent
    "produce_records": env_int("PRODUCE_RECORDS", 1000000, 40000),
    "produce_partitions": [int(x) for x in env_list("PRODUCE_PARTITIONS", "1 16 256")],
    "produce_procs": [int(x) for x in env_list("PRODUCE_PROCS", "1 4")],
    # fixed rate
    "fixed_rate": env_int("FIXED_RATE", 20000, 5000),
    "fixed_rate_seconds": env_int("FIXED_RATE_SECONDS", 30, 6),
    "fixed_rate_partitions": env_int("FIXED_RATE_PARTITIONS", 16),
    # transactional producer
    "txn_records": env_int("TXN_RECORDS", 300000, 30000),
    "txn_duration_ms": env_int("TXN_DURATION_MS", 100),
    "txn_partitions": env_int("TXN_PARTITIONS", 16),
    # consumer perf test over what a producer perf test wrote first
    "consume_records": env_int("CONSUME_RECORDS", 500000, 40000),
    "consume_partitions": env_int("CONSUME_PARTITIONS", 16),
    # end-to-end latency (EndToEndLatency, one record at a time) while a producer perf test
    # writes to another topic at a fixed rate
    "e2e_records": env_int("E2E_RECORDS", 3000, 300),
    "e2e_bg_rate": env_int("E2E_BG_RATE", 5000, 2000),
    "e2e_bg_partitions": env_int("E2E_BG_PARTITIONS", 16),
    # read_committed consumption of transactions of which every ABORT_EVERY-th is aborted
    "rc_txns": env_int("RC_TXNS", 1500, 150),
    "rc_records_per_txn": env_int("RC_RECORDS_PER_TXN", 100, 50),
    "rc_abort_every": env_int("RC_ABORT_EVERY", 3),
    "rc_partitions": env_int("RC_PARTITIONS", 16),
    # partition scale: one topic of N partitions, one record each, then a restart
    "scale_partitions": env_int("SCALE_PARTITIONS", 2000, 500),
    # processes
    "broker_heap": env("BROKER_HEAP", "1g"),
    "perf_heap": env("PERF_HEAP", "512m"),
    "kaas_port": env_int("KAAS_PORT", 19094),
    "kafka_port": env_int("KAFKA_PORT", 19092),
    "controller_port": env_int("CONTROLLER_PORT", 19093),
    "load_timeout": env_int("LOAD_TIMEOUT", 900),
    "kaas_bin": env("KAAS_BIN", os.path.join(ROOT, "target", "release", "kaas")),
    "kaas_extra_args": env_list("KAAS_EXTRA_ARGS", ""),
    # TLS variants: the certificates (scripts/dev-certs.sh writes them there when missing;
    # default WORK_DIR/certs)
    "tls_certs_dir": env("TLS_CERTS_DIR", ""),
    # wait before each case until other processes use at most this fraction of the machine
    # (unset: do not wait); measured over QUIET_SAMPLE_S seconds
    "quiet_max_busy": float(os.environ["QUIET_MAX_BUSY"]) if os.environ.get("QUIET_MAX_BUSY") else None,
    "quiet_sample_s": float(env("QUIET_SAMPLE_S", 5)),
    # with QUIET_MAX_BUSY: a case during whose measured window other processes took more than
    # QUIET_MAX_OTHERS of the machine is run again, up to QUIET_RETRIES times
    "quiet_max_others": float(env("QUIET_MAX_OTHERS", 0.1)),
    "quiet_retries": env_int("QUIET_RETRIES", 2),
    # kafka-fsync writes produce/txn/consume record counts divided by this (an fsync per append
    # makes it several times slower; the figures are rates, the wall time stays bounded)
    "fsync_records_div": max(1, env_int("FSYNC_RECORDS_DIV", 5, 1)),
}

WORK_DIR = None  # set by main(): $WORK_DIR or a new temporary directory
KEEP = os.environ.get("KEEP_WORK_DIR", "0") == "1"
RESULTS_DIR = os.environ.get("RESULTS_DIR") or os.path.join(HERE, "results")

LIVE = []  # every process started here and not yet reaped


# Apache Kafka's server.properties lines per broker kind (on top of the single-node KRaft setup).
KAFKA_KINDS = {
    "kafka": [],
    # Kafka's log flushes after every append, inside the append (UnifiedLog.append), so the
    # produce answer waits for the fsync: the durability kaas gives every acks=1/all answer.
    "kafka-fsync": ["log.flush.interval.messages=1"],
}
BASE_KINDS = ("kafka", "kafka-fsync", "kaas")
# table and chart order: the plaintext brokers, then their TLS variants
KINDS = BASE_KINDS + tuple(k + TLS_SUFFIX for k in BASE_KINDS)
NAMES = {"kafka": "Apache Kafka", "kafka-fsync": "Apache Kafka, fsync", "kaas": "kaas"}
NAMES.update({k + TLS_SUFFIX: NAMES[k] + ", TLS" for k in BASE_KINDS})
# the ratios the table shows (numerator / denominator, when both ran): kaas against Apache Kafka
# on the same security protocol, then each broker's TLS over its own plaintext
RATIOS = [("kaas", "kafka"), ("kaas", "kafka-fsync"),
          ("kaas-tls", "kafka-tls"), ("kaas-tls", "kafka-fsync-tls"),
          ("kafka-tls", "kafka"), ("kafka-fsync-tls", "kafka-fsync"), ("kaas-tls", "kaas")]
FSYNC = {
    "kafka": "defaults (log.flush.interval.messages and log.flush.interval.ms unset): "
             "no fsync before the answer; a segment is fsynced in the background when it rolls "
             "and the OS writes back the rest, so acks=all on one node means 'in the leader's "
             "page cache'",
    "kafka-fsync": "log.flush.interval.messages=1: every append fsyncs the log "
                   "(segment, indexes) inside the append, before the answer; no grouping across "
                   "appends beyond what one request carries",
    "kaas": "every acks=1/all answer is sent after the appended data is fdatasynced (fsyncs grouped "
            "across producers and partitions)",
}


TLS_NOTE = ("; over TLS: the client listener is SSL (TLS 1.2/1.3, server certificate only, "
            "no client certificate), every client of the matrix on it")
FSYNC.update({k + TLS_SUFFIX: FSYNC[k] + TLS_NOTE for k in BASE_KINDS})


def base_kind(kind):
    """The broker without its security protocol: kafka-fsync-tls -> kafka-fsync."""
    return kind[: -len(TLS_SUFFIX)] if kind.endswith(TLS_SUFFIX) else kind


def is_tls(kind):
    return kind.endswith(TLS_SUFFIX)


def is_kafka(kind):
    return base_kind(kind) in KAFKA_KINDS


def ratio_name(num, den):
    return "%s/%s" % (num, den)


def log(msg):
    print("[matrix %s] %s" % (time.strftime("%H:%M:%S"), msg), file=sys.stderr, flush=True)


# ---------------------------------------------------------------- processes


def spawn(argv, out, err=None, env_extra=None):
    e = dict(os.environ)
    if env_extra:
        e.update(env_extra)
    fo = open(out, "wb")
    fe = open(err, "wb") if err else subprocess.STDOUT
    p = subprocess.Popen(argv, stdout=fo, stderr=fe, stdin=subprocess.DEVNULL, env=e)
    fo.close()
    if err:
        fe.close()
    LIVE.append(p)
    return p


def stop(p, grace=20.0):
    """SIGTERM, then SIGKILL after GRACE seconds; returns the seconds it took to exit."""
    t0 = time.monotonic()
    if p.poll() is None:
        try:
            p.send_signal(signal.SIGTERM)
        except ProcessLookupError:
            pass
        try:
            p.wait(grace)
        except subprocess.TimeoutExpired:
            log("pid %d ignored SIGTERM for %.0f s; SIGKILL" % (p.pid, grace))
            p.kill()
            p.wait()
    if p in LIVE:
        LIVE.remove(p)
    return time.monotonic() - t0


def wait_done(p, timeout):
    try:
        rc = p.wait(timeout)
    except subprocess.TimeoutExpired:
        log("pid %d still running after %d s; stopping it" % (p.pid, timeout))
        stop(p, 5)
        rc = -1
    if p in LIVE:
        LIVE.remove(p)
    return rc


def cleanup():
    for p in list(LIVE):
        stop(p, 10)


def on_signal(signum, _frame):
    raise SystemExit(128 + signum)


def java(heap, cls, *args, sysprops=()):
    return ["java", "-Xmx" + heap, "-cp", CP, LOG4J, *sysprops, cls] + [str(a) for a in args]


def bench_tool(broker, heap, *args):
    """BenchTool's command line; on a TLS broker it reads the client properties file
    (-Dkaas.bench.client.config) into its admin client and producers."""
    sp = ["-Dkaas.bench.client.config=" + broker.client_config] if broker.client_config else []
    return java(heap, "kaas.bench.BenchTool", *args, sysprops=sp)


# ---------------------------------------------------------------- TLS

CERTS_DIR = None  # set by main() when a TLS broker runs
CLIENT_SSL = None  # the client properties file of the TLS brokers (set with CERTS_DIR)


def client_tls_props():
    """What every client of a TLS broker sets: SSL, the dev CA as a PEM truststore (the broker's
    certificate names IP 127.0.0.1, so Kafka's default hostname check passes)."""
    return {
        "security.protocol": "SSL",
        "ssl.truststore.type": "PEM",
        "ssl.truststore.location": os.path.join(CERTS_DIR, "ca.pem"),
    }


def setup_tls():
    """Makes the certificates (scripts/dev-certs.sh) unless TLS_CERTS_DIR has them, and the
    client properties file; returns what the results record about them."""
    global CERTS_DIR, CLIENT_SSL
    CERTS_DIR = os.path.abspath(CFG["tls_certs_dir"] or os.path.join(WORK_DIR, "certs"))
    if not all(os.path.exists(os.path.join(CERTS_DIR, f)) for f in ("ca.pem", "broker.pem")):
        r = subprocess.run([os.path.join(ROOT, "scripts", "dev-certs.sh"), CERTS_DIR], capture_output=True, text=True)
        if r.returncode != 0:
            raise SystemExit("scripts/dev-certs.sh %s failed: %s%s" % (CERTS_DIR, r.stdout, r.stderr))
    CLIENT_SSL = os.path.join(CERTS_DIR, "client-ssl.properties")
    with open(CLIENT_SSL, "w") as f:
        f.write("".join("%s=%s\n" % kv for kv in client_tls_props().items()))
    key = sh("openssl pkey -in %s -noout -text 2>/dev/null | sed -n 1p" % os.path.join(CERTS_DIR, "broker.pem"))
    return {"certs_dir": CERTS_DIR, "client_properties": client_tls_props(), "broker_key": key}


def tls_probe(port):
    """The protocol and cipher suite a TLS broker chooses for Python's ssl client (a check that
    it serves TLS; the Java clients offer TLS 1.3 and 1.2 too)."""
    import ssl
    ctx = ssl.create_default_context(cafile=os.path.join(CERTS_DIR, "ca.pem"))
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=10) as raw:
            with ctx.wrap_socket(raw, server_hostname="127.0.0.1") as t:
                return {"version": t.version(), "cipher": t.cipher()[0]}
    except Exception as e:  # recorded, the load tells whether the clients got through
        return {"error": str(e)}


def run_tool(name, argv, timeout=None):
    """Runs a client tool to completion; returns (rc, stdout text, stderr text)."""
    out = os.path.join(CUR_DIR, name + ".out")
    err = os.path.join(CUR_DIR, name + ".err")
    p = spawn(argv, out, err)
    rc = wait_done(p, timeout or CFG["load_timeout"])
    return rc, open(out, errors="replace").read(), open(err, errors="replace").read()


def port_open(port):
    s = socket.socket()
    s.settimeout(0.5)
    try:
        s.connect(("127.0.0.1", port))
        return True
    except OSError:
        return False
    finally:
        s.close()


# ---------------------------------------------------------------- /proc


def cpu_seconds(pid):
    with open("/proc/%d/stat" % pid) as f:
        fields = f.read().rsplit(")", 1)[1].split()
    # fields[0] is field 3 (state); utime is field 14, stime field 15
    return (int(fields[11]) + int(fields[12])) / CLK_TCK


def machine_busy_seconds():
    """CPU seconds the whole machine spent busy (all CPUs; /proc/stat without idle and iowait)."""
    with open("/proc/stat") as f:
        v = [int(x) for x in f.readline().split()[1:]]
    # user nice system idle iowait irq softirq steal (guest time is within user)
    return (v[0] + v[1] + v[2] + v[5] + v[6] + (v[7] if len(v) > 7 else 0)) / CLK_TCK


def wait_quiet():
    """With QUIET_MAX_BUSY set (a fraction of the machine, e.g. 0.1), waits before a case until
    the machine's CPU use over QUIET_SAMPLE_S seconds (nothing of the matrix runs then: it is
    other processes') is at most that; returns (seconds waited, busy fraction seen last)."""
    limit = CFG["quiet_max_busy"]
    if limit is None:
        return None, None
    waited, n = 0.0, os.cpu_count() or 1
    while True:
        b0, t0 = machine_busy_seconds(), time.monotonic()
        time.sleep(CFG["quiet_sample_s"])
        busy = (machine_busy_seconds() - b0) / ((time.monotonic() - t0) * n)
        if busy <= limit:
            return waited, busy
        log("machine busy (%.0f%% of %d CPUs, other processes); waiting for <= %.0f%%" % (100 * busy, n, 100 * limit))
        time.sleep(30)
        waited += 30 + CFG["quiet_sample_s"]


def status_kib(pid, key):
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith(key + ":"):
                return int(line.split()[1])
    return None


# ---------------------------------------------------------------- brokers


class Broker:
    def __init__(self, kind, data_dir):
        self.kind = kind
        self.tls = is_tls(kind)
        self.dir = data_dir
        self.proc = None
        self.log_path = None
        self.starts = 0
        self.samples = []  # cpu(): (broker CPU s, machine busy CPU s, children CPU s, monotonic s)
        # what the clients add to their configuration (the TLS brokers: SSL and the truststore)
        self.client_props = client_tls_props() if self.tls else {}
        self.client_config = CLIENT_SSL if self.tls else None
        os.makedirs(self.dir, exist_ok=True)
        if is_kafka(kind):
            self.port = CFG["kafka_port"]
            self._configure_kafka()
        else:
            self.port = CFG["kaas_port"]
            self.kaas_config = self._configure_kaas() if self.tls else None
        self.bootstrap = "127.0.0.1:%d" % self.port

    def _configure_kaas(self):
        """kaas-tls: a TOML file with one SSL listener and no plaintext one. That listener is
        also the inter-broker one, which needs the CA its peers' certificates are checked
        against (kaas refuses to start without it; as Kafka's config above, no client
        certificates are asked for: ssl_client_auth stays none)."""
        path = os.path.join(self.dir, "kaas.toml")
        with open(path, "w") as f:
            f.write('listen = ""\nlisteners = "SSL://127.0.0.1:%d"\nssl_keystore_location = "%s"\n'
                    'ssl_truststore_location = "%s"\n'
                    % (self.port, os.path.join(CERTS_DIR, "broker.pem"), os.path.join(CERTS_DIR, "ca.pem")))
        return path

    def _kafka_listener_lines(self, cport):
        if not self.tls:
            return [
                "listeners=PLAINTEXT://127.0.0.1:%d,CONTROLLER://127.0.0.1:%d" % (self.port, cport),
                "advertised.listeners=PLAINTEXT://127.0.0.1:%d" % self.port,
                "controller.listener.names=CONTROLLER",
                "inter.broker.listener.name=PLAINTEXT",
                "listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT",
            ]
        # the broker listener on SSL (also the inter-broker one: the node sends itself its
        # transaction markers there, checking its own certificate against the CA); the
        # controller stays PLAINTEXT. PEM keystore: certificate chain + unencrypted PKCS#8 key in
        # one file, no key password (accepted since Kafka 3.3).
        return [
            "listeners=SSL://127.0.0.1:%d,CONTROLLER://127.0.0.1:%d" % (self.port, cport),
            "advertised.listeners=SSL://127.0.0.1:%d" % self.port,
            "controller.listener.names=CONTROLLER",
            "inter.broker.listener.name=SSL",
            "listener.security.protocol.map=SSL:SSL,CONTROLLER:PLAINTEXT",
            "ssl.keystore.type=PEM",
            "ssl.keystore.location=%s" % os.path.join(CERTS_DIR, "broker.pem"),
            "ssl.truststore.type=PEM",
            "ssl.truststore.location=%s" % os.path.join(CERTS_DIR, "ca.pem"),
        ]

    def _configure_kafka(self):
        cport = CFG["controller_port"]
        props = os.path.join(self.dir, "server.properties")
        with open(props, "w") as f:
            f.write(
                "\n".join(
                    [
                        "process.roles=broker,controller",
                        "node.id=1",
                        "controller.quorum.bootstrap.servers=127.0.0.1:%d" % cport,
                    ]
                    + self._kafka_listener_lines(cport)
                    + [
                        "log.dirs=%s/logs" % self.dir,
                        "num.partitions=1",
                        "offsets.topic.replication.factor=1",
                        "transaction.state.log.replication.factor=1",
                        "transaction.state.log.min.isr=1",
                        "share.coordinator.state.topic.replication.factor=1",
                        "share.coordinator.state.topic.min.isr=1",
                        "group.initial.rebalance.delay.ms=0",
                        "auto.create.topics.enable=true",
                    ]
                    + KAFKA_KINDS[base_kind(self.kind)]
                    + [
                        "",
                    ]
                )
            )
        cluster_id = subprocess.run(
            java("256m", "kafka.tools.StorageTool", "random-uuid"), capture_output=True, text=True, check=True
        ).stdout.split()[-1]
        r = subprocess.run(
            java("256m", "kafka.tools.StorageTool", "format", "--config", props, "--cluster-id", cluster_id, "--standalone"),
            capture_output=True,
            text=True,
        )
        if r.returncode != 0:
            raise RuntimeError("kafka storage format failed: " + r.stdout + r.stderr)

    def start(self):
        """Starts the broker; returns seconds until its port accepts connections."""
        ports = [self.port] + ([CFG["controller_port"]] if is_kafka(self.kind) else [])
        for port in ports:
            for _ in range(50):
                if not port_open(port):
                    break
                time.sleep(0.2)
            else:
                raise RuntimeError("port %d is busy" % port)
        self.starts += 1
        self.log_path = os.path.join(self.dir, "broker.%d.log" % self.starts)
        if is_kafka(self.kind):
            h = CFG["broker_heap"]
            argv = [
                "java", "-Xms" + h, "-Xmx" + h, "-XX:+UseG1GC", "-XX:MaxGCPauseMillis=20",
                "-Djava.awt.headless=true", LOG4J, "-Dkaas.log.level=INFO", "-cp", CP,
                "kafka.Kafka", os.path.join(self.dir, "server.properties"),
            ]
            extra = None
        else:
            if not os.access(CFG["kaas_bin"], os.X_OK):
                raise RuntimeError("kaas binary %s not found" % CFG["kaas_bin"])
            argv = [CFG["kaas_bin"], "serve", "--data-dir", os.path.join(self.dir, "data")]
            argv += ["--config", self.kaas_config] if self.tls else ["--listen", self.bootstrap]
            argv += CFG["kaas_extra_args"]
            extra = {"RUST_LOG": os.environ.get("RUST_LOG", "warn")}
        t0 = time.monotonic()
        self.proc = spawn(argv, self.log_path, env_extra=extra)
        deadline = t0 + 120
        while not port_open(self.port):
            if self.proc.poll() is not None:
                raise RuntimeError("%s exited (rc %s) before listening; see %s" % (self.kind, self.proc.returncode, self.log_path))
            if time.monotonic() > deadline:
                raise RuntimeError("%s did not listen within 120 s" % self.kind)
            time.sleep(0.05)
        return time.monotonic() - t0

    def cpu(self):
        """The broker's CPU seconds; also notes the machine's busy CPU seconds and the CPU of
        this script's reaped children (the load's client tools) at the same moment, from which
        run_case tells how much CPU other processes took during the measured window."""
        c = cpu_seconds(self.proc.pid)
        ch = resource.getrusage(resource.RUSAGE_CHILDREN)
        self.samples.append((c, machine_busy_seconds(), ch.ru_utime + ch.ru_stime, time.monotonic()))
        return c

    def hwm_mib(self):
        v = status_kib(self.proc.pid, "VmHWM")
        return None if v is None else v / 1024.0

    def rss_mib(self):
        v = status_kib(self.proc.pid, "VmRSS")
        return None if v is None else v / 1024.0

    def stop(self):
        if self.proc is None:
            return None
        s = stop(self.proc, 30)
        rc = self.proc.returncode
        self.proc = None
        if not is_kafka(self.kind) and self.log_path:
            with open(self.log_path, errors="replace") as f:
                if "panic" in f.read().lower():
                    log("kaas log %s mentions a panic" % self.log_path)
        return s, rc

    def create_topic(self, topic, partitions):
        """Creates the topic and waits until every partition's leader answers ListOffsets
        (BenchTool create); returns the seconds that took."""
        rc, out, err = run_tool(
            "create-" + topic,
            bench_tool(self, "256m", "create", self.bootstrap, topic, partitions, 240000),
            timeout=300,
        )
        w = kv_line(out)
        if rc != 0 or not w or "elapsed_ms" not in w:
            raise RuntimeError("creating topic %s failed: %s %s" % (topic, out[-500:], err[-1500:]))
        return int(w["elapsed_ms"]) / 1000.0


# ---------------------------------------------------------------- tool output parsing

PERF_RE = re.compile(
    r"^(\d+) records sent, ([\d.]+) records/sec \(([\d.]+) MB/sec\), ([\d.]+) ms avg latency, "
    r"([\d.]+) ms max latency, (\d+) ms 50th, (\d+) ms 95th, (\d+) ms 99th, (\d+) ms 99\.9th\.$",
    re.M,
)
PERIODIC_RE = re.compile(r"^(\d+) records sent, ([\d.]+) records/sec \(([\d.]+) MB/sec\), .* max latency\.$", re.M)
EXC_RE = re.compile(r"^[A-Za-z_$][A-Za-z0-9_.$]*(Exception|Error)([: ]|$)", re.M)


def parse_perf(out):
    m = PERF_RE.findall(out)
    if not m:
        return None
    s = m[-1]
    return {
        "records": int(s[0]), "rps": float(s[1]), "mbps": float(s[2]), "avg_ms": float(s[3]),
        "max_ms": float(s[4]), "p50_ms": float(s[5]), "p95_ms": float(s[6]), "p99_ms": float(s[7]),
        "p999_ms": float(s[8]),
    }


def perf_argv(broker, topic, records, throughput, extra_args=(), props=()):
    return java(
        CFG["perf_heap"], "org.apache.kafka.tools.ProducerPerformance",
        "--topic", topic, "--num-records", records, "--record-size", CFG["record_size"],
        "--throughput", throughput, *extra_args,
        "--command-property", "bootstrap.servers=" + broker.bootstrap, "acks=all", "enable.idempotence=true",
        *["%s=%s" % kv for kv in broker.client_props.items()], *props,
    )


def run_producers(broker, topic, records, procs, throughput=-1, extra_args=(), tag="perf"):
    """PROCS ProducerPerformance JVMs in parallel, RECORDS records in all; merged figures."""
    per = records // procs
    ps = []
    for i in range(procs):
        out = os.path.join(CUR_DIR, "%s.%d.out" % (tag, i))
        err = os.path.join(CUR_DIR, "%s.%d.err" % (tag, i))
        ps.append((spawn(perf_argv(broker, topic, per, throughput, extra_args), out, err), out, err))
    parts, errors = [], 0
    for p, out, err in ps:
        rc = wait_done(p, CFG["load_timeout"])
        text = open(out, errors="replace").read()
        etext = open(err, errors="replace").read()
        errors += len(EXC_RE.findall(etext))
        r = parse_perf(text)
        if rc != 0 or r is None:
            raise RuntimeError("ProducerPerformance rc %s, no summary; %s" % (rc, (text[-300:] + etext[-1500:]).strip()))
        parts.append(r)
    m = {
        "records": sum(r["records"] for r in parts),
        "rps": sum(r["rps"] for r in parts),
        "mbps": sum(r["mbps"] for r in parts),
        "avg_ms": sum(r["avg_ms"] * r["records"] for r in parts) / max(1, sum(r["records"] for r in parts)),
        "errors": errors,
    }
    for k in ("max_ms", "p50_ms", "p95_ms", "p99_ms", "p999_ms"):
        m[k] = max(r[k] for r in parts)  # worst process (percentiles cannot be merged exactly)
    m["expected_records"] = per * procs
    if m["records"] != per * procs:
        m["warning"] = "only %d of %d records acknowledged" % (m["records"], per * procs)
    return m


def parse_consumer(out):
    """ConsumerPerformance prints a header line and one line of comma separated values:
    start.time, end.time, data.consumed.in.MB, MB.sec, data.consumed.in.nMsg, nMsg.sec,
    rebalance.time.ms, fetch.time.ms, fetch.MB.sec, fetch.nMsg.sec"""
    lines = [l for l in out.splitlines() if l.strip()]
    for i, l in enumerate(lines):
        if l.startswith("start.time"):
            head = [h.strip() for h in l.split(",")]
            # (a "WARNING: Exiting before consuming the expected number of records" line may
            # come between the header and the values)
            data = [x for x in lines[i + 1:] if re.match(r"^\d{4}-", x)]
            if not data:
                return None
            vals = [v.strip() for v in data[0].split(",")]
            d = dict(zip(head, vals))
            return {
                "consumed_mb": float(d["data.consumed.in.MB"]),
                "records": int(d["data.consumed.in.nMsg"]),
                "mbps_total": float(d["MB.sec"]),
                "rps_total": float(d["nMsg.sec"]),
                "rebalance_ms": float(d.get("rebalance.time.ms", "nan")),
                "fetch_ms": float(d.get("fetch.time.ms", "nan")),
                "mbps": float(d.get("fetch.MB.sec", d["MB.sec"])),
                "rps": float(d.get("fetch.nMsg.sec", d["nMsg.sec"])),
            }
    return None


def run_consumer(broker, topic, records, tag, props=None, timeout_ms=10000):
    argv = ["--bootstrap-server", broker.bootstrap, "--topic", topic, "--num-records", records,
            "--group", "bench-" + tag, "--timeout", timeout_ms]
    props = dict(broker.client_props, **(props or {}))
    if props:
        cfg = os.path.join(CUR_DIR, tag + ".consumer.properties")
        with open(cfg, "w") as f:
            f.write("".join("%s=%s\n" % kv for kv in props.items()))
        argv += ["--command-config", cfg]
    rc, out, err = run_tool(tag, java(CFG["perf_heap"], "org.apache.kafka.tools.ConsumerPerformance", *argv))
    r = parse_consumer(out)
    if rc != 0 or r is None:
        raise RuntimeError("ConsumerPerformance rc %s, no result; %s" % (rc, (out[-300:] + err[-1500:]).strip()))
    return r


def kv_line(text):
    """The last line of the form key=value key=value ... as a dict."""
    for line in reversed(text.splitlines()):
        if re.match(r"^\w+=\S+( \w+=\S+)*$", line.strip()):
            return dict(t.split("=", 1) for t in line.split())
    return None


# ---------------------------------------------------------------- loads
# Each load function gets a started broker, runs its load and returns a dict of metrics;
# "bytes" (payload bytes moved during the measured window) lets the driver compute CPU s/GB.
# A load function may set metrics["cpu_window"] = (cpu_before, cpu_after) itself when only part
# of its work is to be measured.


def records(broker, key):
    """CFG[key] records, fewer for kafka-fsync (FSYNC_RECORDS_DIV)."""
    return CFG[key] // (CFG["fsync_records_div"] if base_kind(broker.kind) == "kafka-fsync" else 1)


def close_write_window(broker, m, c0):
    """Ends a write load's measured window (c0 to now), then writes back what the load left dirty
    in the page cache (sync(2)) and notes the machine's busy CPU that took: Apache Kafka leaves
    its writes to the kernel's flusher threads, which do that work after the window unless it is
    waited for; kaas fsynced before it acknowledged. run_case adds it as
    machine_wb_cpu_s_per_gb (machine CPU with the load's writeback)."""
    m["cpu_window"] = (c0, broker.cpu())
    before = broker.samples[-1]
    t = time.monotonic()
    os.sync()
    broker.cpu()
    after = broker.samples[-1]
    m["writeback_s"] = time.monotonic() - t
    # no client runs now: the machine's busy CPU is the broker's and the kernel's
    m["writeback_cpu_s"] = (after[1] - before[1]) - (after[2] - before[2])


def load_produce(broker, partitions, procs):
    broker.create_topic("perf", partitions)
    c0 = broker.cpu()
    m = run_producers(broker, "perf", records(broker, "produce_records"), procs)
    close_write_window(broker, m, c0)
    m["bytes"] = m["records"] * CFG["record_size"]
    return m


def load_fixed_rate(broker):
    broker.create_topic("perf", CFG["fixed_rate_partitions"])
    n = CFG["fixed_rate"] * CFG["fixed_rate_seconds"]
    c0 = broker.cpu()
    m = run_producers(broker, "perf", n, 1, throughput=CFG["fixed_rate"])
    close_write_window(broker, m, c0)
    m["bytes"] = m["records"] * CFG["record_size"]
    return m


def load_txn(broker):
    broker.create_topic("perf", CFG["txn_partitions"])
    c0 = broker.cpu()
    m = run_producers(
        broker, "perf", records(broker, "txn_records"), 1,
        extra_args=("--transactional-id", "bench-txn", "--transaction-duration-ms", CFG["txn_duration_ms"]),
    )
    close_write_window(broker, m, c0)
    m["bytes"] = m["records"] * CFG["record_size"]
    return m


def load_consume(broker):
    n = records(broker, "consume_records")
    broker.create_topic("perf", CFG["consume_partitions"])
    pm = run_producers(broker, "perf", n, 1, tag="fill")
    c0 = broker.cpu()
    m = run_consumer(broker, "perf", pm["records"], "consume")
    m["cpu_window"] = (c0, broker.cpu())
    m["bytes"] = m["records"] * CFG["record_size"]
    m["produced_records"] = pm["records"]
    m["produce_rps"] = pm["rps"]
    if m["records"] != pm["records"]:
        m["warning"] = "consumed %d of %d records" % (m["records"], pm["records"])
    return m


E2E_RE = re.compile(r"Percentiles: 50th = (\d+), 99th = (\d+), 99\.9th = (\d+)")
AVG_RE = re.compile(r"Avg latency: ([\d.]+) ms")


def load_e2e(broker):
    broker.create_topic("e2e", 1)
    broker.create_topic("bg", CFG["e2e_bg_partitions"])
    rate = CFG["e2e_bg_rate"]
    # the background producer runs longer than EndToEndLatency needs; it is stopped after
    bg_out = os.path.join(CUR_DIR, "bg.out")
    bg = spawn(
        perf_argv(broker, "bg", rate * 3600, rate, extra_args=("--reporting-interval", "1000")),
        bg_out, os.path.join(CUR_DIR, "bg.err"),
    )
    time.sleep(3)  # let the background load start
    c0 = broker.cpu()
    # the background producer is not reaped in the window: its CPU is read from /proc
    bg0 = cpu_seconds(bg.pid)
    t0 = time.monotonic()
    rc, out, err = run_tool(
        "e2e",
        java(CFG["perf_heap"], "org.apache.kafka.tools.EndToEndLatency", broker.bootstrap, "e2e",
             CFG["e2e_records"], "all", CFG["record_size"], *([broker.client_config] if broker.client_config else [])),
    )
    elapsed = time.monotonic() - t0
    bg1 = cpu_seconds(bg.pid)
    c1 = broker.cpu()
    stop(bg, 10)
    pct, avg = E2E_RE.search(out), AVG_RE.search(out)
    if rc != 0 or not pct:
        raise RuntimeError("EndToEndLatency rc %s; %s" % (rc, (out[-300:] + err[-1500:]).strip()))
    bg_rates = [float(x[1]) for x in PERIODIC_RE.findall(open(bg_out, errors="replace").read())]
    return {
        "records": CFG["e2e_records"],
        "avg_ms": float(avg.group(1)) if avg else None,
        "p50_ms": float(pct.group(1)), "p99_ms": float(pct.group(2)), "p999_ms": float(pct.group(3)),
        "elapsed_s": elapsed,
        "bg_rate_target": rate,
        "bg_rps_mean": (sum(bg_rates) / len(bg_rates)) if bg_rates else None,
        # the background producer's mean rate over the measured window, plus the probe records
        "bytes": ((sum(bg_rates) / len(bg_rates) if bg_rates else 0) * elapsed + CFG["e2e_records"]) * CFG["record_size"],
        "cpu_window": (c0, c1),
        "bg_client_cpu_s": bg1 - bg0,
    }


def load_read_committed(broker):
    broker.create_topic("txn", CFG["rc_partitions"])
    rc, out, err = run_tool(
        "aborts",
        bench_tool(broker, CFG["perf_heap"], "aborts", broker.bootstrap, "txn", CFG["rc_txns"],
                   CFG["rc_records_per_txn"], CFG["rc_abort_every"], CFG["record_size"]),
    )
    w = kv_line(out)
    if rc != 0 or not w or "committed" not in w:
        raise RuntimeError("BenchTool aborts rc %s; %s" % (rc, (out[-300:] + err[-1500:]).strip()))
    committed, aborted = int(w["committed"]), int(w["aborted"])
    props = {"isolation.level": "read_committed"}
    c0 = broker.cpu()
    m = run_consumer(broker, "txn", committed, "rc", props=props)
    m["cpu_window"] = (c0, broker.cpu())
    m["bytes"] = m["records"] * CFG["record_size"]
    # check: ask for every record written (committed + aborted); read_committed must stop at
    # the committed ones (the run ends after 5 s without a record)
    chk = run_consumer(broker, "txn", committed + aborted, "rc-check", props=props, timeout_ms=5000)
    m.update({
        "committed": committed, "aborted": aborted, "txn_write_ms": int(w["elapsed_ms"]),
        "check_records": chk["records"], "count_ok": chk["records"] == committed and m["records"] == committed,
    })
    if not m["count_ok"]:
        m["warning"] = "read_committed returned %d records (check run %d), committed %d" % (m["records"], chk["records"], committed)
    return m


def load_partition_scale(broker):
    n = CFG["scale_partitions"]
    create_s = broker.create_topic("scale", n)
    c0 = broker.cpu()
    rc, out, err = run_tool(
        "fill", bench_tool(broker, CFG["perf_heap"], "fill", broker.bootstrap, "scale", n, CFG["record_size"])
    )
    w = kv_line(out)
    if rc != 0 or not w or "sent" not in w:
        raise RuntimeError("BenchTool fill rc %s; %s" % (rc, (out[-300:] + err[-1500:]).strip()))
    c1 = broker.cpu()
    time.sleep(2)
    m = {
        "partitions": n, "create_s": create_s, "fill_ms": int(w["elapsed_ms"]),
        "rss_mib": broker.rss_mib(), "peak_rss_mib": broker.hwm_mib(),
        "cpu_window": (c0, c1),  # (no CPU s/GB: a few MB move)
    }
    stop_s, stop_rc = broker.stop()
    m["stop_s"], m["stop_rc"] = stop_s, stop_rc
    # restart on the same data; restart_s = launch until a record to the last partition is
    # acknowledged (the probe JVM is started at the same moment as the broker)
    t0 = time.monotonic()
    probe_out = os.path.join(CUR_DIR, "probe.out")
    probe = spawn(bench_tool(broker, "256m", "probe", broker.bootstrap, "scale", n - 1, 180000),
                  probe_out, os.path.join(CUR_DIR, "probe.err"))
    m["restart_listen_s"] = broker.start()
    prc = wait_done(probe, 200)
    m["restart_s"] = time.monotonic() - t0
    if prc != 0:
        raise RuntimeError("probe after restart failed (rc %s)" % prc)
    time.sleep(1)
    m["rss_after_restart_mib"] = broker.rss_mib()
    m["peak_rss_after_restart_mib"] = broker.hwm_mib()
    return m


# ---------------------------------------------------------------- matrix


def load_cases():
    cases = []
    for load in CFG["loads"]:
        if load == "produce":
            for procs in CFG["produce_procs"]:
                for parts in CFG["produce_partitions"]:
                    cases.append(("produce", "p%d-x%d" % (parts, procs), {"partitions": parts, "procs": procs},
                                  lambda b, parts=parts, procs=procs: load_produce(b, parts, procs)))
        elif load == "fixed_rate":
            cases.append(("fixed_rate", "%d/s" % CFG["fixed_rate"],
                          {"rate": CFG["fixed_rate"], "seconds": CFG["fixed_rate_seconds"], "partitions": CFG["fixed_rate_partitions"]},
                          load_fixed_rate))
        elif load == "txn":
            cases.append(("txn", "txn-%dms" % CFG["txn_duration_ms"],
                          {"records": CFG["txn_records"], "transaction_duration_ms": CFG["txn_duration_ms"], "partitions": CFG["txn_partitions"]},
                          load_txn))
        elif load == "consume":
            cases.append(("consume", "p%d" % CFG["consume_partitions"],
                          {"records": CFG["consume_records"], "partitions": CFG["consume_partitions"]}, load_consume))
        elif load == "e2e":
            cases.append(("e2e", "bg%d/s" % CFG["e2e_bg_rate"],
                          {"records": CFG["e2e_records"], "bg_rate": CFG["e2e_bg_rate"], "bg_partitions": CFG["e2e_bg_partitions"]},
                          load_e2e))
        elif load == "read_committed":
            cases.append(("read_committed", "abort1/%d" % CFG["rc_abort_every"],
                          {"txns": CFG["rc_txns"], "records_per_txn": CFG["rc_records_per_txn"],
                           "abort_every": CFG["rc_abort_every"], "partitions": CFG["rc_partitions"]},
                          load_read_committed))
        elif load == "partition_scale":
            cases.append(("partition_scale", "p%d" % CFG["scale_partitions"], {"partitions": CFG["scale_partitions"]},
                          load_partition_scale))
        else:
            raise SystemExit("unknown load %r" % load)
    return cases


def others_cpu(samples, c0, c1):
    """CPU seconds of processes other than the broker and the load's clients during the
    measured window (machine busy - broker - reaped children), and that as a fraction of the
    machine: a check that nobody else used the CPU while it was measured. Also the CPU seconds of
    the load's clients (the tool JVMs that ended within the window; e2e's background producer,
    which outlives it, is read from /proc by load_e2e and moved from other to clients by
    run_case)."""
    a = next((x for x in samples if x[0] == c0), None)
    z = next((x for x in reversed(samples) if x[0] == c1), None)
    if a is None or z is None or z[3] <= a[3]:
        return {}
    other = (z[1] - a[1]) - (z[0] - a[0]) - (z[2] - a[2])
    # The machine's busy CPU minus the clients': the broker plus what the kernel does for it
    # outside its process (Kafka leaves writeback to the flusher threads, kaas fsyncs itself).
    machine = (z[1] - a[1]) - (z[2] - a[2])
    return {"others_cpu_s": other, "others_cpu_frac": other / ((z[3] - a[3]) * (os.cpu_count() or 1)),
            "window_s": z[3] - a[3], "clients_cpu_s": z[2] - a[2], "machine_cpu_s": machine}


def run_case(load, variant, params, fn, kind, idx):
    global CUR_DIR
    CUR_DIR = os.path.join(WORK_DIR, "%02d-%s-%s-%s" % (idx, load, re.sub(r"[^A-Za-z0-9]+", "_", variant), kind))
    os.makedirs(CUR_DIR, exist_ok=True)
    res = {"load": load, "variant": variant, "params": params, "broker": kind, "ok": False}
    log("=== %s %s on %s ===" % (load, variant, kind))
    b = None
    # What the previous case left in the page cache (Apache Kafka writes without fsync: up to
    # gigabytes dirty) would otherwise be written back during this one, and a broker that fsyncs
    # or syncfs()es (kaas, Kafka with an fsync per append) would wait for it and pay for it.
    t_sync = time.monotonic()
    os.sync()
    res["sync_before_s"] = round(time.monotonic() - t_sync, 3)
    waited, busy = wait_quiet()
    if waited is not None:
        res["quiet_wait_s"], res["busy_before"] = waited, busy
    t0 = time.monotonic()
    try:
        b = Broker(kind, os.path.join(CUR_DIR, "broker"))
        res["start_s"] = b.start()
        if b.tls:
            res["tls"] = tls_probe(b.port)
        m = fn(b)
        c0, c1 = m.pop("cpu_window")
        m["cpu_s"] = c1 - c0
        m.update(others_cpu(b.samples, c0, c1))
        bg = m.pop("bg_client_cpu_s", None)
        if bg is not None and m.get("machine_cpu_s") is not None:
            # e2e's background producer: a client, not other work
            m["machine_cpu_s"] -= bg
            m["clients_cpu_s"] += bg
            m["others_cpu_s"] -= bg
            m["others_cpu_frac"] = m["others_cpu_s"] / (m["window_s"] * (os.cpu_count() or 1))
        if m.get("bytes"):
            m["cpu_s_per_gb"] = m["cpu_s"] / (m["bytes"] / 1e9)
            if m.get("machine_cpu_s") is not None:
                m["machine_cpu_s_per_gb"] = m["machine_cpu_s"] / (m["bytes"] / 1e9)
                if m.get("writeback_cpu_s") is not None:
                    m["machine_wb_cpu_s_per_gb"] = (m["machine_cpu_s"] + m["writeback_cpu_s"]) / (m["bytes"] / 1e9)
            if m.get("clients_cpu_s") is not None:
                m["clients_cpu_s_per_gb"] = m["clients_cpu_s"] / (m["bytes"] / 1e9)
        if b.proc is not None:
            m["peak_rss_mib"] = max(m.get("peak_rss_mib") or 0, b.hwm_mib() or 0)
        res["metrics"] = m
        res["ok"] = not m.get("errors") and "warning" not in m
        if "warning" in m:
            log("%s: %s" % (kind, m["warning"]))
        brief = {k: (round(v, 2) if isinstance(v, float) else v) for k, v in m.items()
                 if k in ("records", "rps", "mbps", "p50_ms", "p99_ms", "p999_ms", "cpu_s_per_gb", "machine_cpu_s_per_gb", "machine_wb_cpu_s_per_gb", "peak_rss_mib", "restart_s", "count_ok", "others_cpu_frac")}
        log("%s: %s" % (kind, brief))
    except Exception as e:  # one failed case must not stop the matrix
        res["error"] = str(e)[-2000:]
        log("%s %s on %s FAILED: %s" % (load, variant, kind, res["error"]))
    finally:
        if b is not None and b.proc is not None:
            s, rc = b.stop()
            res["stop_s"], res["stop_rc"] = s, rc
        res["wall_s"] = time.monotonic() - t0
        if not KEEP:  # the data (up to a GB or more per case) goes; tool outputs and broker logs stay
            for d in ("logs", "data"):
                shutil.rmtree(os.path.join(CUR_DIR, "broker", d), ignore_errors=True)
    return res


def sh(cmd):
    try:
        return subprocess.run(cmd, shell=True, capture_output=True, text=True, timeout=20).stdout.strip()
    except Exception:
        return ""


def loadavg():
    """/proc/loadavg's 1, 5 and 15 minute load averages (was the machine quiet?)."""
    try:
        with open("/proc/loadavg") as f:
            return [float(x) for x in f.read().split()[:3]]
    except OSError:
        return None


def machine():
    mem = sh("awk '/MemTotal/ {printf \"%.1f GiB\", $2/1048576}' /proc/meminfo")
    cpu = sh("awk -F': ' '/model name/ {print $2; exit}' /proc/cpuinfo")
    df = sh("df -hT %s | tail -1" % WORK_DIR)
    dev = df.split()[0] if df else ""
    disk = sh("lsblk -dno NAME,MODEL,ROTA,SIZE 2>/dev/null | head -5")
    return {
        "nproc": os.cpu_count(), "cpu_model": cpu, "memory": mem, "kernel": platform.release(),
        "os": sh(". /etc/os-release 2>/dev/null && echo $PRETTY_NAME"),
        "work_dir_fs": df, "work_dir_device": dev, "disks": disk,
        "virtualization": sh("systemd-detect-virt 2>/dev/null"),
        "loadavg_start": loadavg(),
    }


def versions():
    kb = CFG["kaas_bin"]
    return {
        "kafka": KAFKA_VERSION,
        "java": sh("java -version 2>&1 | head -1"),
        "kaas": sh("%s --version 2>/dev/null" % kb),
        "kaas_bin": kb,
        "kaas_bin_mtime": datetime.datetime.fromtimestamp(os.path.getmtime(kb)).isoformat(timespec="seconds") if os.path.exists(kb) else None,
        "kaas_bin_sha256": sh("sha256sum %s | cut -c1-16" % kb),
        "repo_commit": sh("git -C %s rev-parse --short HEAD" % ROOT),
        "repo_branch": sh("git -C %s rev-parse --abbrev-ref HEAD" % ROOT),
    }


def fmt(v, nd=1):
    if v is None:
        return "-"
    if isinstance(v, bool):
        return "yes" if v else "NO"
    if isinstance(v, float):
        if abs(v) >= 1000:
            return "{:,.0f}".format(v)
        return ("{:.%df}" % nd).format(v)
    if isinstance(v, int):
        return "{:,}".format(v)
    return str(v)


# the columns of each load's table: (metric key, header, higher is better)
COLUMNS = {
    "produce": [("rps", "records/s", True), ("mbps", "MB/s", True), ("p50_ms", "p50 ms", False), ("p99_ms", "p99 ms", False),
                ("p999_ms", "p99.9 ms", False), ("cpu_s_per_gb", "CPU s/GB", False),
                ("machine_cpu_s_per_gb", "machine CPU s/GB", False),
                ("machine_wb_cpu_s_per_gb", "machine CPU s/GB with writeback", False), ("peak_rss_mib", "peak RSS MiB", False),
                ("clients_cpu_s_per_gb", "client CPU s/GB", False)],
    "consume": [("rps", "records/s", True), ("mbps", "MB/s", True), ("cpu_s_per_gb", "CPU s/GB", False),
                ("machine_cpu_s_per_gb", "machine CPU s/GB", False),
                ("peak_rss_mib", "peak RSS MiB", False), ("clients_cpu_s_per_gb", "client CPU s/GB", False)],
    "e2e": [("avg_ms", "avg ms", False), ("p50_ms", "p50 ms", False), ("p99_ms", "p99 ms", False), ("p999_ms", "p99.9 ms", False),
            ("bg_rps_mean", "bg records/s", True), ("cpu_s_per_gb", "CPU s/GB", False),
            ("machine_cpu_s_per_gb", "machine CPU s/GB", False), ("peak_rss_mib", "peak RSS MiB", False)],
    "read_committed": [("txn_write_ms", "writing the txns, ms", False), ("rps", "records/s", True), ("mbps", "MB/s", True),
                       ("records", "records", None), ("committed", "committed", None), ("count_ok", "count ok", None), ("cpu_s_per_gb", "CPU s/GB", False),
                       ("machine_cpu_s_per_gb", "machine CPU s/GB", False), ("peak_rss_mib", "peak RSS MiB", False)],
    "partition_scale": [("create_s", "create s", False), ("fill_ms", "fill ms", False), ("rss_mib", "RSS MiB", False),
                        ("cpu_s", "fill CPU s", False), ("stop_s", "stop s", False), ("restart_s", "restart s", False), ("rss_after_restart_mib", "RSS after restart MiB", False)],
}
COLUMNS["fixed_rate"] = COLUMNS["produce"]
COLUMNS["txn"] = COLUMNS["produce"]


def table_rows(doc):
    """Rows per load: [variant, metric header, {broker: value}, {ratio name: kaas/other}]."""
    by = {}
    for r in doc["results"]:
        by.setdefault((r["load"], r["variant"]), {})[r["broker"]] = r
    out = {}
    for (load, variant), d in by.items():
        for key, head, _ in COLUMNS.get(load, []):
            vals = {}
            for kind in KINDS:
                r = d.get(kind)
                if r is not None:
                    vals[kind] = "FAILED" if "metrics" not in r else r["metrics"].get(key)
            ratios = {}
            for num, den in RATIOS:
                k, a = vals.get(num), vals.get(den)
                if isinstance(a, (int, float)) and isinstance(k, (int, float)) and not isinstance(a, bool) and a:
                    ratios[ratio_name(num, den)] = k / a
            out.setdefault(load, []).append((variant, head, vals, ratios))
    return out


def print_table(doc):
    print()
    print("kaas benchmark matrix (%s profile), %s, %d x %s" % (doc["meta"]["profile"], doc["meta"]["timestamp"],
                                                             doc["meta"]["machine"]["nproc"], doc["meta"]["machine"]["cpu_model"]))
    kinds = [k for k in KINDS if any(r["broker"] == k for r in doc["results"])]
    ratios = [ratio_name(n, d) for n, d in RATIOS if n in kinds and d in kinds]
    for load, rows in table_rows(doc).items():
        print()
        print("== %s" % load)
        print("%-14s %-22s " % ("variant", "metric") + " ".join("%15s" % k for k in kinds)
              + " " + " ".join("%26s" % r for r in ratios))
        for variant, head, vals, rs in rows:
            print("%-14s %-22s " % (variant, head) + " ".join("%15s" % fmt(vals.get(k)) for k in kinds)
                  + " " + " ".join("%26s" % ("x%.2f" % rs[r] if r in rs else "-") for r in ratios))
    failed = [r for r in doc["results"] if not r["ok"]]
    if failed:
        print()
        for r in failed:
            print("NOT OK: %s %s on %s: %s" % (r["load"], r["variant"], r["broker"],
                                               r.get("error") or r.get("metrics", {}).get("warning") or "exceptions in the client output"))


def main():
    global WORK_DIR, CUR_DIR
    WORK_DIR = os.environ.get("WORK_DIR") or tempfile.mkdtemp(prefix="kaas-matrix.")
    os.makedirs(WORK_DIR, exist_ok=True)
    CUR_DIR = WORK_DIR
    for s in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(s, on_signal)
    unknown = [k for k in CFG["brokers"] if k not in KINDS]
    if unknown:
        raise SystemExit("unknown broker %s (BROKERS takes %s)" % (" ".join(unknown), " ".join(KINDS)))
    started = time.monotonic()
    ts = datetime.datetime.now().strftime("%Y%m%dT%H%M%S")
    doc = {
        "meta": {
            "timestamp": ts, "profile": CFG["profile"], "config": CFG, "machine": machine(), "versions": versions(),
            "fsync": {k: FSYNC[k] for k in CFG["brokers"]},
        },
        "results": [],
    }
    if any(is_tls(k) for k in CFG["brokers"]):
        doc["meta"]["tls"] = setup_tls()
    log("work dir %s; profile %s; loads %s; brokers %s" % (WORK_DIR, CFG["profile"], " ".join(CFG["loads"]), " ".join(CFG["brokers"])))
    rc = 0
    try:
        idx = 0
        for load, variant, params, fn in load_cases():
            for kind in CFG["brokers"]:
                idx += 1
                res = run_case(load, variant, params, fn, kind, idx)
                disturbed = []
                while (CFG["quiet_max_busy"] is not None and len(disturbed) < CFG["quiet_retries"]
                       and (res.get("metrics") or {}).get("others_cpu_frac", 0) > CFG["quiet_max_others"]):
                    f = res["metrics"]["others_cpu_frac"]
                    log("other processes took %.0f%% of the machine during %s %s on %s; running it again" % (100 * f, load, variant, kind))
                    disturbed.append(f)
                    idx += 1
                    res = run_case(load, variant, params, fn, kind, idx)
                if disturbed:
                    res["disturbed_runs_others_cpu_frac"] = disturbed
                doc["results"].append(res)
        doc["meta"]["wall_s"] = time.monotonic() - started
        doc["meta"]["loadavg_end"] = loadavg()
        os.makedirs(RESULTS_DIR, exist_ok=True)
        path = os.path.join(RESULTS_DIR, ts + ".json")
        for p in (path, os.path.join(RESULTS_DIR, "latest.json")):
            with open(p, "w") as f:
                json.dump(doc, f, indent=1, sort_keys=False)
                f.write("\n")
        print_table(doc)
        print("\nresults: %s (and latest.json); wall time %.0f s" % (os.path.relpath(path, ROOT), doc["meta"]["wall_s"]))
        if any(not r["ok"] for r in doc["results"]):
            rc = 1
    finally:
        cleanup()
        if KEEP or rc != 0:
            log("logs and data kept in %s" % WORK_DIR)
        else:
            shutil.rmtree(WORK_DIR, ignore_errors=True)
    return rc


CUR_DIR = None

if __name__ == "__main__":
    sys.exit(main())
