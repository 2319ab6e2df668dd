#!/usr/bin/env python3
"""Log cleaner benchmark helper (run by benches/compaction/run.sh; needs confluent-kafka).

  bench.py broker --name NAME --bootstrap HOST:PORT --pid PID --cleaner-log FILE
                  --data-dir DIR --out FILE.json [--metrics-url URL]
      One broker, already started: creates the topics, produces, measures a quiet cleaner pass
      (topic cmp-a), verifies it with a consumer, then a pass under a fixed-rate produce load to
      another topic (cmp-b; the load's p99 during the pass vs without cleaning), verifies that one.
  bench.py load --bootstrap ... --topic ... --rate R --size S --stop-file F --out F
      The fixed-rate producer (a separate process, so the measuring one does not slow it).
  bench.py report --out-dir DIR FILE.json...
      Merges the brokers' results into DIR/<ts>.json, DIR/<ts>.md, DIR/latest.json, DIR/latest.md.

Settings come from the environment (run.sh sets them): RECORDS, KEYS, VALUE_SIZE, SEGMENT_BYTES,
LAG_RATE, LAG_SIZE, LAG_PARTITIONS, SEED.
"""
import argparse
import array
import json
import os
import random
import re
import subprocess
import sys
import time
import urllib.request

from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import (AdminClient, AlterConfigOpType, ConfigEntry, ConfigResource,
                                   NewTopic)

CLK_TCK = os.sysconf("SC_CLK_TCK")
MIB = 1024 * 1024


def env_int(name, default):
    return int(os.environ.get(name, default))


RECORDS = env_int("RECORDS", 2_000_000)
KEYS = env_int("KEYS", 100_000)
VALUE_SIZE = env_int("VALUE_SIZE", 256)
SEGMENT_BYTES = env_int("SEGMENT_BYTES", 16 * MIB)
LAG_RATE = env_int("LAG_RATE", 20_000)
LAG_SIZE = env_int("LAG_SIZE", 512)
LAG_PARTITIONS = env_int("LAG_PARTITIONS", 4)
SEED = env_int("SEED", 42)
PASS_TIMEOUT = env_int("PASS_TIMEOUT", 300)
BIG_LAG_MS = 7 * 24 * 3600 * 1000

COMPACTED = ["cmp-a", "cmp-b"]
WARM = "cmp-warm"  # a smaller log cleaned first, so that neither broker's measured pass is its first
WARM_RECORDS = env_int("WARM_RECORDS", 100_000)
OTHER = "other"


def log(msg):
    print(f"[bench.py {time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


def cpu_ticks(pid):
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return int(fields[11]) + int(fields[12])  # utime + stime (fields 14, 15)


def rss_hwm_kib(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1])
    return None


def key_sequence():
    rng = random.Random(SEED)
    return [rng.randrange(KEYS) for _ in range(RECORDS)]


def value_of(i, filler):
    return b"%012d" % i + filler


# ---------------------------------------------------------------------------------------------
# topics and produce


def create_topics(admin):
    cfg = {
        "cleanup.policy": "compact",
        "segment.bytes": str(SEGMENT_BYTES),
        "min.cleanable.dirty.ratio": "0.5",
        # nothing is cleanable while we produce: each pass is started by setting this to 0
        "min.compaction.lag.ms": str(BIG_LAG_MS),
    }
    new = [NewTopic(t, num_partitions=1, replication_factor=1, config=cfg) for t in COMPACTED]
    new.append(NewTopic(WARM, num_partitions=1, replication_factor=1,
                        config=dict(cfg, **{"segment.bytes": str(MIB)})))
    new.append(NewTopic(OTHER, num_partitions=LAG_PARTITIONS, replication_factor=1))
    for t, f in admin.create_topics(new, operation_timeout=30).items():
        f.result()
    time.sleep(1)


def produce_all(bootstrap, keys):
    filler = b"v" * max(0, VALUE_SIZE - 12)
    p = Producer({
        "bootstrap.servers": bootstrap,
        "acks": "all",
        "enable.idempotence": True,
        "compression.type": "none",
        "linger.ms": 10,
        "queue.buffering.max.messages": 500_000,
    })
    errors = []

    def cb(err, _msg):
        if err is not None:
            errors.append(str(err))

    res = {}
    for topic in [WARM] + COMPACTED:
        t0 = time.monotonic()
        for i, k in enumerate(keys if topic != WARM else keys[:WARM_RECORDS]):
            kb = b"k%07d" % k
            while True:
                try:
                    p.produce(topic, value_of(i, filler), kb, on_delivery=cb)
                    break
                except BufferError:
                    p.poll(0.01)
            if i % 1000 == 0:
                p.poll(0)
        remaining = p.flush(300)
        dt = time.monotonic() - t0
        if remaining or errors:
            raise RuntimeError(f"produce to {topic}: {remaining} undelivered, errors {errors[:5]}")
        n = RECORDS if topic != WARM else min(RECORDS, WARM_RECORDS)
        res[topic] = {"seconds": round(dt, 2), "records_per_s": round(n / dt)}
        log(f"produced {n} records to {topic} in {dt:.1f} s ({n / dt:,.0f}/s)")
    return res


# ---------------------------------------------------------------------------------------------
# on disk

SEG_RE = re.compile(r"^(\d+)(\..*)?\.log$")


def partition_dir(broker, data_dir, topic):
    if broker == "kaas":
        return os.path.join(data_dir, "topics", f"{topic}-0")
    return os.path.join(data_dir, f"{topic}-0")


def disk_usage(pdir):
    """Live segment bytes (.log files, not .deleted/.cleaned/.swap/.cleaning ones), per base
    offset, and the directory's allocated bytes (st_blocks) of live files."""
    segs = {}
    alloc = 0
    nfiles = 0
    for name in os.listdir(pdir):
        path = os.path.join(pdir, name)
        if name.endswith((".deleted", ".cleaned", ".swap", ".cleaning")):
            continue
        try:
            st = os.stat(path)
        except FileNotFoundError:
            continue
        alloc += st.st_blocks * 512
        nfiles += 1
        m = SEG_RE.match(name)
        if m:
            segs[int(m.group(1))] = segs.get(int(m.group(1)), 0) + st.st_size
    return {"segments": len(segs), "log_bytes": sum(segs.values()), "alloc_bytes": alloc,
            "files": nfiles, "by_base": segs}


# ---------------------------------------------------------------------------------------------
# the cleaner's log lines

KAFKA_START = re.compile(r"Beginning cleaning of log (\S+)")
KAFKA_END = re.compile(r"Log cleaner thread \d+ cleaned log (\S+) \(dirty section = \[(-?\d+), (-?\d+)\]\)")
KAFKA_STATS = {
    "processed": re.compile(r"([\d,.]+) MB of log processed in ([\d,.]+) seconds"),
    "indexed": re.compile(r"Indexed ([\d,.]+) MB in ([\d,.]+) seconds"),
    "buffer": re.compile(r"Buffer utilization: ([\d,.]+)%"),
    "cleaned": re.compile(r"Cleaned ([\d,.]+) MB in ([\d,.]+) seconds"),
    "start": re.compile(r"Start size: ([\d,.]+) MB \(([\d,]+) messages\)"),
    "end": re.compile(r"End size: ([\d,.]+) MB \(([\d,]+) messages\)"),
}
KAAS_FIELD = re.compile(r"(\w+)=(\S+)")


def num(s):
    return float(s.replace(",", ""))


class CleanerLog:
    """Follows the cleaner's log file from its current end."""

    def __init__(self, path, broker):
        self.path = path
        self.broker = broker
        self.f = open(path, "r", errors="replace") if os.path.exists(path) else None
        if self.f:
            self.f.seek(0, 2)
        self.buf = ""
        self.lines = []

    def read(self):
        if self.f is None:
            if not os.path.exists(self.path):
                return []
            self.f = open(self.path, "r", errors="replace")
        chunk = self.f.read()
        if not chunk:
            return []
        self.buf += chunk
        *lines, self.buf = self.buf.split("\n")
        self.lines.extend(lines)
        return lines

    def wait_pass(self, partition, pid, timeout):
        """Waits for the start and the end of a pass over `partition`; returns times (monotonic),
        CPU ticks of the broker at both, and what the broker logged about the pass."""
        deadline = time.monotonic() + timeout
        start = end = None
        info = {}
        while time.monotonic() < deadline:
            lines = self.read()
            now = time.monotonic()
            for i, line in enumerate(lines):
                if self.broker == "kaas":
                    if start is None and "cleaning the log" in line and f"partition={partition}" in line:
                        start = (now, cpu_ticks(pid))
                        f = dict(KAAS_FIELD.findall(line))
                        info["first_dirty"] = int(f.get("first_dirty", -1))
                        info["cleanable_end"] = int(f.get("cleanable_end", -1))
                    elif "log cleaned" in line and f"partition={partition}" in line:
                        end = (now, cpu_ticks(pid))
                        f = dict(KAAS_FIELD.findall(line))
                        for k in ("read", "written", "batches_dropped", "keys", "ms"):
                            if k in f:
                                info[k] = int(f[k])
                    elif "log cleaning failed" in line and f"partition={partition}" in line:
                        raise RuntimeError(f"kaas: {line}")
                else:
                    m = KAFKA_START.search(line)
                    if start is None and m and m.group(1) == partition:
                        start = (now, cpu_ticks(pid))
                    m = KAFKA_END.search(line)
                    if m and m.group(1) == partition:
                        end = (now, cpu_ticks(pid))
                        info["first_dirty"] = int(m.group(2))
                        info["cleanable_end"] = int(m.group(3))
                        info["stats_line_index"] = len(self.lines) - len(lines) + i
            if end is not None:
                if start is None:
                    raise RuntimeError(f"saw the end of a pass over {partition} but not its start")
                if self.broker == "kafka":
                    time.sleep(0.3)  # the rest of the multi-line stats message
                    self.read()
                    text = "\n".join(self.lines[info.pop("stats_line_index"):][:12])
                    for k, rx in KAFKA_STATS.items():
                        m = rx.search(text)
                        if m:
                            info[k] = [num(g) for g in m.groups()]
                return start, end, info
            time.sleep(0.02)
        raise TimeoutError(f"no complete cleaner pass over {partition} within {timeout} s "
                           f"(start seen: {start is not None})")


def scrape(url):
    if not url:
        return {}
    out = {}
    with urllib.request.urlopen(url, timeout=5) as r:
        for line in r.read().decode().splitlines():
            if line.startswith("kaas_log_cleaner_"):
                name, _, value = line.rpartition(" ")
                out[name] = float(value)
    return out


def set_lag(admin, topic, value):
    res = ConfigResource(ConfigResource.Type.TOPIC, topic, incremental_configs=[
        ConfigEntry("min.compaction.lag.ms", str(value),
                    incremental_operation=AlterConfigOpType.SET)])
    for f in admin.incremental_alter_configs([res]).values():
        f.result()


# ---------------------------------------------------------------------------------------------
# verification


def verify(bootstrap, topic, keys, cleaned_end):
    """Reads the whole partition: in [0, cleaned_end) exactly the last record of each key of
    that range must be left (its offset, key and value); at and after cleaned_end everything."""
    last = {}
    for i in range(min(cleaned_end, len(keys))):
        last[keys[i]] = i
    expected_cleaned = set(last.values())
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": f"verify-{topic}",
                  "enable.auto.commit": False, "auto.offset.reset": "earliest",
                  "fetch.max.bytes": 52428800, "enable.partition.eof": True})
    lo, hi = c.get_watermark_offsets(TopicPartition(topic, 0), timeout=10)
    c.assign([TopicPartition(topic, 0, 0)])
    seen_cleaned = 0
    cleaned_keys = set()
    bad = []
    tail = 0
    done = False
    client_error = None
    deadline = time.monotonic() + 300
    while done is False and time.monotonic() < deadline:
        for m in c.consume(10000, 1.0):
            if m.error():
                if m.error().code() == -191:  # _PARTITION_EOF
                    done = True
                    continue
                # a consumer error is a failed verification (recorded, not retried)
                client_error = f"{m.error()} (after {seen_cleaned + tail} records)"
                done = None
                break
            o = m.offset()
            k = int(m.key()[1:])
            seq = int(m.value()[:12])
            if seq != o or (o < len(keys) and keys[o] != k):
                bad.append(f"offset {o}: key {k} value seq {seq}")
            if o < cleaned_end:
                seen_cleaned += 1
                cleaned_keys.add(k)
                if o not in expected_cleaned:
                    bad.append(f"offset {o} (key {k}) should have been cleaned away")
            else:
                tail += 1
    c.close()
    missing = len(expected_cleaned) - seen_cleaned if not bad else None
    ok = (done is True and not bad and seen_cleaned == len(expected_cleaned) == len(cleaned_keys)
          and tail == hi - cleaned_end)
    res = {"ok": ok, "log_start": lo, "high_watermark": hi, "cleaned_end": cleaned_end,
           "records_in_cleaned_part": seen_cleaned, "distinct_keys_in_cleaned_part": len(cleaned_keys),
           "expected_records_in_cleaned_part": len(expected_cleaned),
           "records_after_cleaned_part": tail, "expected_after": hi - cleaned_end,
           "read_to_end": bool(done)}
    if client_error:
        res["consumer_error"] = client_error
    if bad:
        res["problems"] = bad[:20]
        res["problem_count"] = len(bad)
    if missing:
        res["missing"] = missing
    return res


# ---------------------------------------------------------------------------------------------
# the fixed-rate load


def cmd_load(a):
    p = Producer({"bootstrap.servers": a.bootstrap, "acks": "all", "enable.idempotence": True,
                  "linger.ms": 5, "compression.type": "none"})
    sent = array.array("d")
    lat = array.array("d")
    errors = [0]

    def cb(t, err, _msg):
        if err is not None:
            errors[0] += 1
            return
        sent.append(t)
        lat.append((time.monotonic() - t) * 1000.0)

    value = b"x" * a.size
    tick = 0.005
    per_tick = a.rate * tick
    start = time.monotonic()
    n = 0
    while not os.path.exists(a.stop_file):
        target = int((time.monotonic() - start) * a.rate)
        while n < target:
            t = time.monotonic()
            try:
                p.produce(a.topic, value, on_delivery=lambda err, msg, t=t: cb(t, err, msg))
                n += 1
            except BufferError:
                break
        p.poll(0)
        nxt = start + (n + per_tick) / a.rate
        while True:
            d = nxt - time.monotonic()
            if d <= 0:
                break
            p.poll(min(d, 0.001))
    p.flush(60)
    with open(a.out, "w") as f:
        json.dump({"sent": n, "errors": errors[0], "start": start, "end": time.monotonic(),
                   "send_t": sent.tolist(), "lat_ms": lat.tolist()}, f)


def pct(values, q):
    if not values:
        return None
    s = sorted(values)
    return s[min(len(s) - 1, int(q * len(s)))]


def window_stats(load, t0, t1):
    lats = [l for t, l in zip(load["send_t"], load["lat_ms"]) if t0 <= t < t1]
    if not lats:
        return {"records": 0}
    return {"seconds": round(t1 - t0, 2), "records": len(lats),
            "records_per_s": round(len(lats) / (t1 - t0)),
            "p50_ms": round(pct(lats, 0.50), 2), "p99_ms": round(pct(lats, 0.99), 2),
            "p999_ms": round(pct(lats, 0.999), 2), "max_ms": round(max(lats), 2)}


# ---------------------------------------------------------------------------------------------
# one broker


def measure_pass(a, admin, clog, topic, disk_before):
    m0 = scrape(a.metrics_url)
    set_lag(admin, topic, 0)
    t_trigger = time.monotonic()
    (t_start, c_start), (t_end, c_end), info = clog.wait_pass(f"{topic}-0", a.pid, PASS_TIMEOUT)
    m1 = scrape(a.metrics_url)
    wall = t_end - t_start
    cleaned_end = info["cleanable_end"]
    input_bytes = sum(b for base, b in disk_before["by_base"].items() if base < cleaned_end)
    cpu_s = (c_end - c_start) / CLK_TCK
    res = {
        "trigger_to_start_s": round(t_start - t_trigger, 2),
        "wall_s": round(wall, 3),
        "input_bytes": input_bytes,
        "input_mb_per_s": round(input_bytes / MIB / wall, 1) if wall > 0 else None,
        "broker_cpu_s": round(cpu_s, 2),
        "broker_cpu_s_per_gb": round(cpu_s / (input_bytes / 1e9), 2) if input_bytes else None,
        "broker_cpu_frac_of_wall": round(cpu_s / wall, 2) if wall > 0 else None,
        "broker_log": info,
        "first_dirty": info.get("first_dirty"),
        "cleaned_end": cleaned_end,
    }
    if a.name == "kaas":
        res["bytes_read"] = info.get("read")
        res["bytes_written"] = info.get("written")
        res["broker_reported_s"] = info.get("ms", 0) / 1000.0
        if m0 and m1:
            res["metrics_delta"] = {k: m1.get(k, 0) - m0.get(k, 0) for k in m1
                                    if k.endswith(("_bytes_read", "_bytes_written", "_passes"))}
    else:
        idx = info.get("indexed", [0, 0])
        st = info.get("start", [0, 0])
        en = info.get("end", [0, 0])
        # Kafka logs MB of 2^20 bytes, to 0.1 MB
        res["bytes_read"] = round((idx[0] + st[0]) * MIB)
        res["bytes_written"] = round(en[0] * MIB)
        res["broker_reported_s"] = info.get("processed", [0, 0])[1]
    return res, t_start, t_end


def cmd_broker(a):
    keys = key_sequence()
    out = {"broker": a.name, "records": RECORDS, "keys": KEYS, "value_size": VALUE_SIZE,
           "segment_bytes": SEGMENT_BYTES}
    admin = AdminClient({"bootstrap.servers": a.bootstrap})
    create_topics(admin)
    out["produce"] = produce_all(a.bootstrap, keys)
    time.sleep(2)
    clog = CleanerLog(a.cleaner_log, a.name)
    pdir_a = partition_dir(a.name, a.data_dir, "cmp-a")
    pdir_b = partition_dir(a.name, a.data_dir, "cmp-b")

    # 0. warm-up: a pass over a small log (JIT, caches, buffers)
    set_lag(admin, WARM, 0)
    (w0, _), (w1, _), _ = clog.wait_pass(f"{WARM}-0", a.pid, PASS_TIMEOUT)
    out["warmup_pass_s"] = round(w1 - w0, 3)
    log(f"{a.name}: warm-up pass over {WARM} took {w1 - w0:.2f} s")
    time.sleep(2)

    # 1. a quiet pass over cmp-a
    before = disk_usage(pdir_a)
    log(f"{a.name}: cmp-a before: {before['log_bytes'] / MIB:.1f} MiB in {before['segments']} segments; "
        f"starting its pass")
    quiet, _, _ = measure_pass(a, admin, clog, "cmp-a", before)
    time.sleep(3)  # replaced files go (file.delete.delay.ms=1000 for Kafka)
    after = disk_usage(pdir_a)
    for d in (before, after):
        d.pop("by_base")
    quiet["disk_before"] = before
    quiet["disk_after"] = after
    log(f"{a.name}: quiet pass {quiet['wall_s']} s, {quiet['input_mb_per_s']} MB/s, "
        f"cpu {quiet['broker_cpu_s']} s; on disk {before['log_bytes'] / MIB:.1f} -> {after['log_bytes'] / MIB:.1f} MiB")
    quiet["verify"] = verify(a.bootstrap, "cmp-a", keys, quiet["cleaned_end"])
    log(f"{a.name}: verify cmp-a: {json.dumps(quiet['verify'])}")
    out["quiet_pass"] = quiet

    # 2. a pass over cmp-b under a fixed-rate load to another topic, vs the same load alone
    before_b = disk_usage(pdir_b)
    baseline_s = max(10.0, quiet["wall_s"])
    stop_file = a.out + ".stop"
    load_out = a.out + ".load.json"
    if os.path.exists(stop_file):
        os.unlink(stop_file)
    proc = subprocess.Popen([sys.executable, __file__, "load", "--bootstrap", a.bootstrap,
                             "--topic", OTHER, "--rate", str(LAG_RATE), "--size", str(LAG_SIZE),
                             "--stop-file", stop_file, "--out", load_out])
    try:
        time.sleep(3)  # connections, first batches
        b0 = time.monotonic()
        c0 = cpu_ticks(a.pid)
        time.sleep(baseline_s)
        b1 = time.monotonic()
        c1 = cpu_ticks(a.pid)
        loaded, p0, p1 = measure_pass(a, admin, clog, "cmp-b", before_b)
        time.sleep(1)
    finally:
        open(stop_file, "w").close()
        proc.wait(120)
    with open(load_out) as f:
        load = json.load(f)
    os.unlink(load_out)
    os.unlink(stop_file)
    base_cpu = (c1 - c0) / CLK_TCK
    out["load"] = {
        "topic": OTHER, "partitions": LAG_PARTITIONS, "rate": LAG_RATE, "record_size": LAG_SIZE,
        "acks": "all", "errors": load["errors"], "sent": load["sent"],
        "no_cleaning": dict(window_stats(load, b0, b1), broker_cpu_s=round(base_cpu, 2)),
        "during_pass": window_stats(load, p0, p1),
    }
    loaded["broker_cpu_s_minus_load"] = round(loaded["broker_cpu_s"] - base_cpu / (b1 - b0) * loaded["wall_s"], 2)
    loaded["verify"] = verify(a.bootstrap, "cmp-b", keys, loaded["cleaned_end"])
    out["loaded_pass"] = loaded
    log(f"{a.name}: load p99 no cleaning {out['load']['no_cleaning'].get('p99_ms')} ms, "
        f"during pass {out['load']['during_pass'].get('p99_ms')} ms; pass under load {loaded['wall_s']} s; "
        f"verify cmp-b ok={loaded['verify']['ok']}")
    out["broker_peak_rss_mib"] = round((rss_hwm_kib(a.pid) or 0) / 1024, 1)
    out["ok"] = quiet["verify"]["ok"] and loaded["verify"]["ok"] and load["errors"] == 0
    with open(a.out, "w") as f:
        json.dump(out, f, indent=1)


# ---------------------------------------------------------------------------------------------
# report


def ratio(x, y):
    if not isinstance(x, (int, float)) or not isinstance(y, (int, float)) or y == 0:
        return None
    return x / y


def fmt(v, d=1):
    if v is None:
        return ""
    if isinstance(v, str):
        return v
    return f"{v:,.{d}f}"


def cmd_report(a):
    runs = {}
    for path in a.files:
        with open(path) as f:
            r = json.load(f)
        runs[r["broker"]] = r
    meta = json.loads(os.environ.get("BENCH_META", "{}"))
    ts = meta.get("timestamp") or time.strftime("%Y%m%dT%H%M%S")
    doc = {"meta": meta, "brokers": runs}
    k, f = runs.get("kaas"), runs.get("kafka")
    rows = []

    def row(label, fn, d=1, lower_better=True):
        vals = {}
        for name in ("kafka", "kaas"):
            try:
                vals[name] = fn(runs[name]) if name in runs else None
            except (KeyError, TypeError, ZeroDivisionError):
                vals[name] = None
        r = ratio(vals.get("kaas"), vals.get("kafka"))
        rows.append((label, fmt(vals.get("kafka"), d), fmt(vals.get("kaas"), d),
                     f"x{r:.2f}" if r is not None else ""))
        return r

    ratios = {}
    ratios["produce_records_per_s"] = row("produce to the compacted topic, records/s", lambda r: r["produce"]["cmp-a"]["records_per_s"], 0)
    row("log before the pass, MiB", lambda r: r["quiet_pass"]["disk_before"]["log_bytes"] / MIB)
    row("segments before the pass", lambda r: r["quiet_pass"]["disk_before"]["segments"], 0)
    row("log cleaned (pass input, sealed segments), MiB", lambda r: r["quiet_pass"]["input_bytes"] / MIB)
    row("log after the pass, MiB", lambda r: r["quiet_pass"]["disk_after"]["log_bytes"] / MIB)
    row("cleaner bytes read, MiB (key map + rewrite)", lambda r: r["quiet_pass"]["bytes_read"] / MIB)
    row("cleaner bytes written, MiB", lambda r: r["quiet_pass"]["bytes_written"] / MIB)
    ratios["pass_wall_s"] = row("pass wall time, s (log line to log line)", lambda r: r["quiet_pass"]["wall_s"], 2)
    row("pass time reported by the broker, s", lambda r: r["quiet_pass"]["broker_reported_s"], 2)
    ratios["cleaned_mb_per_s"] = row("cleaner throughput, MiB of log cleaned / s", lambda r: r["quiet_pass"]["input_mb_per_s"])
    ratios["cpu_s"] = row("broker CPU during the pass, s", lambda r: r["quiet_pass"]["broker_cpu_s"], 2)
    ratios["cpu_s_per_gb"] = row("broker CPU s per GB cleaned", lambda r: r["quiet_pass"]["broker_cpu_s_per_gb"], 2)
    row("records left in the cleaned part = distinct keys there", lambda r: r["quiet_pass"]["verify"]["records_in_cleaned_part"], 0)
    ratios["p99_no_cleaning"] = row("other topic produce p99, no cleaning, ms", lambda r: r["load"]["no_cleaning"]["p99_ms"], 1)
    ratios["p99_during_pass"] = row("other topic produce p99, during a pass, ms", lambda r: r["load"]["during_pass"]["p99_ms"], 1)
    row("other topic produce p50, no cleaning / during a pass, ms",
        lambda r: f"{r['load']['no_cleaning']['p50_ms']:.1f} / {r['load']['during_pass']['p50_ms']:.1f}")
    row("other topic produce max, no cleaning / during a pass, ms",
        lambda r: f"{r['load']['no_cleaning']['max_ms']:.0f} / {r['load']['during_pass']['max_ms']:.0f}")
    row("p99 during a pass / p99 without", lambda r: r["load"]["during_pass"]["p99_ms"] / r["load"]["no_cleaning"]["p99_ms"], 2)
    ratios["loaded_pass_wall_s"] = row("pass wall time under that load, s", lambda r: r["loaded_pass"]["wall_s"], 2)
    row("broker peak RSS, MiB", lambda r: r["broker_peak_rss_mib"])
    row("verified (both topics)", lambda r: "yes" if r["quiet_pass"]["verify"]["ok"] and r["loaded_pass"]["verify"]["ok"] else "NO")
    doc["ratios_kaas_over_kafka"] = {k2: (round(v, 3) if v is not None else None) for k2, v in ratios.items()}

    md = [f"# Log cleaner benchmark, {meta.get('date', ts)}", ""]
    md.append(f"Commit {meta.get('commit', '?')}, {meta.get('machine', '')}. "
              f"{meta.get('records', RECORDS):,} records of {meta.get('value_size', VALUE_SIZE)} B values, "
              f"{meta.get('keys', KEYS):,} keys, segment.bytes={meta.get('segment_bytes', SEGMENT_BYTES)}, "
              f"load on the other topic: {LAG_RATE:,} records/s of {LAG_SIZE} B to {LAG_PARTITIONS} partitions, acks=all. "
              f"Load average at the start: {meta.get('loadavg_start', '?')}.")
    md.append("")
    md.append("| | Apache Kafka | kaas | kaas / Kafka |")
    md.append("|---|---:|---:|---:|")
    for r in rows:
        md.append("| " + " | ".join(r) + " |")
    md.append("")
    for name, r in runs.items():
        for phase in ("quiet_pass", "loaded_pass"):
            v = r.get(phase, {}).get("verify")
            if v and not v.get("ok"):
                md.append(f"VERIFICATION FAILED, {name}, {phase}: " + json.dumps(v))
                md.append("")
    os.makedirs(a.out_dir, exist_ok=True)
    for name in (f"{ts}.json", "latest.json"):
        with open(os.path.join(a.out_dir, name), "w") as fh:
            json.dump(doc, fh, indent=1)
    for name in (f"{ts}.md", "latest.md"):
        with open(os.path.join(a.out_dir, name), "w") as fh:
            fh.write("\n".join(md))
    print("\n".join(md))
    return 0 if all(r.get("ok") for r in runs.values()) else 1


def main():
    ap = argparse.ArgumentParser()
    sub = ap.add_subparsers(dest="cmd", required=True)
    b = sub.add_parser("broker")
    b.add_argument("--name", required=True, choices=["kafka", "kaas"])
    b.add_argument("--bootstrap", required=True)
    b.add_argument("--pid", required=True, type=int)
    b.add_argument("--cleaner-log", required=True)
    b.add_argument("--data-dir", required=True)
    b.add_argument("--metrics-url", default="")
    b.add_argument("--out", required=True)
    ld = sub.add_parser("load")
    ld.add_argument("--bootstrap", required=True)
    ld.add_argument("--topic", required=True)
    ld.add_argument("--rate", type=int, required=True)
    ld.add_argument("--size", type=int, required=True)
    ld.add_argument("--stop-file", required=True)
    ld.add_argument("--out", required=True)
    rp = sub.add_parser("report")
    rp.add_argument("--out-dir", required=True)
    rp.add_argument("files", nargs="+")
    a = ap.parse_args()
    if a.cmd == "broker":
        cmd_broker(a)
        return 0
    if a.cmd == "load":
        cmd_load(a)
        return 0
    return cmd_report(a)


if __name__ == "__main__":
    sys.exit(main())
