#!/usr/bin/env python3
"""Regenerates BENCHMARKS.md (repository root) from a results JSON file.

usage: gen_benchmarks.py [RESULTS_JSON [OUTPUT_MD]]
       (defaults: benches/load/results/latest.json, BENCHMARKS.md at the repository root)
       gen_benchmarks.py --cluster-only [CLUSTER_JSON [OUTPUT_MD]]
       (defaults: benches/load/results/cluster-latest.json, BENCHMARKS.md at the repository root)
Standard library only. The section "What limits kaas now" is written by a human from a
profile: its text is carried over from the existing BENCHMARKS.md, or a placeholder when there
is none. The section "Cluster (3 brokers)" comes from the cluster benchmark's results
(benches/load/cluster.py): a full regeneration takes them from cluster-latest.json beside
RESULTS_JSON (or $CLUSTER_JSON) when it exists; --cluster-only replaces that section alone in an
existing page (or adds it before "Charts"), leaving the rest of the page as it is.
"""
import json
import os
import re
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "..", ".."))
sys.path.insert(0, HERE)
from matrix import COLUMNS, KINDS, NAMES, RATIOS  # noqa: E402  (importing matrix runs nothing)
import cluster  # noqa: E402  (importing cluster runs nothing)

LIMITS_HEAD = "## What limits kaas now"
PLACEHOLDER = (
    "_To be written by a human from a profile of the full run (e.g. `perf record -g -p <kaas pid>` "
    "during the 256-partition and 4-producer loads, `perf sched`/off-CPU time for the fsync "
    "threads): where kaas spends its CPU, what it waits for (fsync, locks, the network), and which "
    "change would move which figure above._"
)

LOAD_TITLES = {
    "produce": "Producer perf test, unthrottled (1 KiB, acks=all, idempotent)",
    "fixed_rate": "Producer perf test at a fixed rate",
    "txn": "Transactional producer perf test",
    "consume": "Consumer perf test",
    "e2e": "End-to-end latency while producing",
    "read_committed": "read_committed consumption with aborted transactions",
    "partition_scale": "Partition scale",
}


def fmt(v):
    if v is None:
        return "–"
    if isinstance(v, bool):
        return "yes" if v else "**NO**"
    if isinstance(v, float):
        if abs(v) >= 1000:
            return "{:,.0f}".format(v)
        if abs(v) >= 100:
            return "{:.0f}".format(v)
        return "{:.1f}".format(v)
    if isinstance(v, int):
        return "{:,}".format(v)
    return str(v)


def short(kind):
    return NAMES[kind].replace("Apache ", "")


def table(doc, load):
    cols = COLUMNS.get(load, [])
    variants = []
    for r in doc["results"]:
        if r["load"] == load and r["variant"] not in variants:
            variants.append(r["variant"])
    lines = ["| variant | broker | " + " | ".join(h for _, h, _ in cols) + " |",
             "|---|---|" + "---:|" * len(cols)]
    for v in variants:
        got = {r["broker"]: r for r in doc["results"] if r["load"] == load and r["variant"] == v}
        for kind in KINDS:
            r = got.get(kind)
            if r is None:
                continue
            name = NAMES[kind]
            if not r.get("metrics"):
                lines.append("| %s | %s | FAILED: %s |" % (v, name, (r.get("error") or "").splitlines()[0][:150].replace("|", "/")))
                continue
            m = r["metrics"]
            lines.append("| %s | %s | %s |" % (v, name, " | ".join(fmt(m.get(k)) for k, _, _ in cols)))
        for num, other in RATIOS:
            k = got.get(num, {}).get("metrics")
            a = got.get(other, {}).get("metrics")
            if not (a and k):
                continue
            cells = []
            for key, _, _ in cols:
                x, y = a.get(key), k.get(key)
                if isinstance(x, (int, float)) and isinstance(y, (int, float)) and not isinstance(x, bool) and x:
                    cells.append("x%.2f" % (y / x))
                else:
                    cells.append("")
            lines.append("| %s | *%s / %s* | %s |" % (v, short(num), short(other), " | ".join(cells)))
    notes = [r for r in doc["results"] if r["load"] == load and r.get("metrics", {}).get("warning")]
    out = "\n".join(lines)
    for r in notes:
        out += "\n\n**Warning** (%s, %s): %s" % (r["variant"], r["broker"], r["metrics"]["warning"])
    return out


def durability(fsync):
    """The brokers' durability, one sentence each (older result files describe two brokers)."""
    return "".join("\n  * %s: %s." % (NAMES.get(k, k), fsync[k]) for k in KINDS if k in fsync)


def only_loads_run(text, loads):
    """The method text without the bullets of the loads the run did not have."""
    out, skip = [], False
    for line in text.splitlines(True):
        m = re.match(r"^  \* `(\w+)`:", line)
        if m:
            skip = m.group(1) not in loads
        elif not line.startswith("    "):
            skip = False
        if not skip:
            out.append(line)
    return "".join(out)


def tls_method(doc):
    """The TLS variants' setup, when the run had some."""
    tls = doc["meta"].get("tls")
    if not tls:
        return ""
    chosen = sorted({"%s %s" % (r["tls"]["version"], r["tls"]["cipher"]) for r in doc["results"]
                     if r.get("tls") and "version" in r["tls"]})
    return """* **TLS** (the brokers named ", TLS"): the client listener is SSL, with a certificate of
  `scripts/dev-certs.sh` (%(key)s) as a PEM keystore (chain and unencrypted PKCS#8 key in one file;
  Apache Kafka `ssl.keystore.type=PEM`, kaas `ssl_keystore_location`), no client certificates; the
  controller listener of Apache Kafka stays PLAINTEXT. Every client (perf tools, `BenchTool`'s admin
  and producers) uses `security.protocol=SSL` with the CA as a PEM truststore. Protocol and cipher
  suite the brokers chose for a Python `ssl` client: %(chosen)s.
""" % {"key": (tls.get("broker_key") or "EC P-256").replace("Private-Key: ", "EC key ").strip(),
       "chosen": ", ".join(chosen) or "not recorded"}


def quiet_method(doc):
    """How quiet the machine was, when the run recorded it."""
    rs = [r for r in doc["results"] if r.get("metrics", {}).get("others_cpu_frac") is not None]
    if not rs:
        return ""
    worst = max(r["metrics"]["others_cpu_frac"] for r in rs)
    la = doc["meta"]["machine"].get("loadavg_start")
    cfg = doc["meta"]["config"]
    wait = (" Before each case the matrix waited until other processes used at most %.0f%% of the machine "
            "(`QUIET_MAX_BUSY`) and ran a case again when they took more than %.0f%% during it."
            % (100 * cfg["quiet_max_busy"], 100 * cfg["quiet_max_others"])) if cfg.get("quiet_max_busy") is not None else ""
    return """* **Quiet machine**: load average %(la)s at the start; other processes (anything but the broker and
  the load's clients, kernel threads included) took at most %(worst).0f%% of the machine during a
  measured window (`others_cpu_frac` in the JSON).%(wait)s
""" % {"la": " / ".join("%.2f" % x for x in la) if la else "not recorded", "worst": max(0.0, 100 * worst), "wait": wait}


def existing_limits(path):
    if not os.path.exists(path):
        return None
    text = open(path).read()
    i = text.find(LIMITS_HEAD)
    if i < 0:
        return None
    body = text[i + len(LIMITS_HEAD):]
    j = re.search(r"^## ", body, re.M)
    body = (body[: j.start()] if j else body).strip()
    return body or None


CLUSTER_HEAD = "## Cluster (3 brokers)"
CLUSTER_TITLES = {
    "produce": "Producer perf test, unthrottled (1 KiB, acks=all, idempotent)",
    "txn": "Transactional producer perf test",
    "consume": "Consumer perf test",
    "failover": "Failover: kill -9 of partition 0's leader under a fixed-rate producer",
}


def cluster_table(cdoc, load):
    cols = cluster.COLUMNS.get(load, [])
    got = {r["cluster"]: r for r in cdoc["results"] if r["load"] == load}
    variant = next((r["variant"] for r in cdoc["results"] if r["load"] == load), "")
    lines = ["| cluster | " + " | ".join(h for _, h, _ in cols) + " |", "|---|" + "---:|" * len(cols)]
    for kind in cluster.KINDS:
        r = got.get(kind)
        if r is None:
            continue
        if not r.get("metrics"):
            lines.append("| %s | FAILED: %s |" % (cluster.NAMES[kind], (r.get("error") or "").strip().splitlines()[-1][:200].replace("|", "/")
                                                  if (r.get("error") or "").strip() else "no result"))
            continue
        lines.append("| %s | %s |" % (cluster.NAMES[kind], " | ".join(fmt(r["metrics"].get(k)) for k, _, _ in cols)))
    for num, den in cluster.RATIOS:
        a = got.get(num, {}).get("metrics")
        b = got.get(den, {}).get("metrics")
        if not (a and b):
            continue
        cells = []
        for key, _, better in cols:
            x, y = b.get(key), a.get(key)
            if better is not None and isinstance(x, (int, float)) and isinstance(y, (int, float)) and not isinstance(x, bool) and x:
                cells.append("x%.2f" % (y / x))
            else:
                cells.append("")
        lines.append("| *%s / %s* | %s |" % (cluster.SHORT[num], cluster.SHORT[den], " | ".join(cells)))
    out = "\n".join(lines)
    for kind in cluster.KINDS:
        r = got.get(kind)
        if r and r.get("metrics", {}).get("warning"):
            out += "\n\n**Warning** (%s): %s" % (cluster.NAMES[kind], r["metrics"]["warning"])
    return variant, out


def failover_details(cdoc):
    """One bullet per cluster: who was killed, each partition's recovery, the restart."""
    out = []
    for kind in cluster.KINDS:
        r = next((x for x in cdoc["results"] if x["load"] == "failover" and x["cluster"] == kind), None)
        m = (r or {}).get("metrics")
        if not m:
            continue
        rec = sorted((m.get("recovery_s_by_partition") or {}).values())
        led = [p for p, v in sorted((m.get("recovery_s_by_partition") or {}).items(), key=lambda kv: int(kv[0])) if v > 1.0]
        text = ("killed node %d (leader of partition 0%s; leaders before %s) %.1f s into the run; recovery "
                "per partition %s-%s s (median %s)" % (
                    m["killed_node"], ", also the active controller" if m.get("killed_was_controller") else "",
                    m.get("leaders_before"), m.get("kill_at_s", 0), "%.2f" % rec[0] if rec else "–", "%.2f" % rec[-1] if rec else "–",
                    "%.2f" % rec[len(rec) // 2] if rec else "–"))
        if led:
            text += ", over 1 s on partitions %s" % ", ".join(led)
        text += "; longest gap between two acknowledgements of one partition %.2f s" % (m.get("max_ack_gap_s") or 0)
        text += "; steady state before the kill p50 %s ms, p99 %s ms" % (fmt(m.get("steady_p50_ms")), fmt(m.get("steady_p99_ms")))
        if (m.get("steady_p99_ms") or 0) > 1000:
            text += (" (above 1 s already before the kill: the cluster was near its capacity at this rate, so the "
                     "figures below include the queue built up while partitions were not served)")
        if m.get("restart_at_s") is not None:
            text += (". Started again at %.1f s (listening after %s s): afterwards max latency %s ms, %s partitions "
                     "with a record over 1 s, longest gap %s s, leaders then %s" % (
                         m["restart_at_s"], fmt(m.get("restart_listen_s")), fmt(m.get("rejoin_max_latency_ms")),
                         fmt(m.get("rejoin_partitions_over_1s")), fmt(m.get("rejoin_max_ack_gap_s")), m.get("leaders_after")))
        text += ". Read back: %s records, %s acknowledged, %s lost, %s duplicated, %s failed sends" % (
            fmt(m.get("records_in_topic")), fmt(m.get("acked")), fmt(m.get("lost")), fmt(m.get("duplicates")), fmt(m.get("failed")))
        out.append("* %s: %s." % (cluster.NAMES[kind], text))
    return "\n".join(out)


def cluster_logs(cdoc):
    """The broker log lines at ERROR (and kaas's WARN) per case, while the load ran."""
    rows = []
    for r in cdoc["results"]:
        f = r.get("broker_logs")
        if not f:
            continue
        kinds = dict(f.get("errors", {}))
        if r["cluster"] != "kafka3":
            kinds.update(f.get("warnings", {}))
        top = sorted(kinds.items(), key=lambda kv: -kv[1])[:3]
        rows.append("| %s | %s | %s | %s | %s |" % (
            r["load"], cluster.NAMES[r["cluster"]], fmt(f["error_lines"]), fmt(f["warn_lines"]),
            "; ".join("%dx `%s`" % (n, msg.replace("|", "/")[:120]) for msg, n in top) or ""))
    if not rows:
        return ""
    return "\n".join(["| load | cluster | ERROR lines | WARN lines | most frequent (numbers as N) |",
                      "|---|---|---:|---:|---|"] + rows)


def cluster_section(cdoc, src_path):
    meta, cfg, ver, mach = cdoc["meta"], cdoc["meta"]["config"], cdoc["meta"]["versions"], cdoc["meta"]["machine"]
    o = [CLUSTER_HEAD + "\n"]
    o.append("_Generated by `benches/load/gen_benchmarks.py` from `%s` (run `%s`, %s profile, %.0f s); rerun "
             "`benches/load/cluster.sh` to regenerate this section alone._\n"
             % (os.path.relpath(os.path.abspath(src_path), ROOT), meta["timestamp"], meta["profile"], meta.get("wall_s", 0)))
    if meta["profile"] == "quick":
        o.append("> **This is a QUICK run** (`QUICK=1`: small record counts): it shows that the pipeline works; do not "
                 "quote its figures.\n")
    rs = [r for r in cdoc["results"] if r.get("metrics", {}).get("others_cpu_frac") is not None]
    worst = max((r["metrics"]["others_cpu_frac"] for r in rs), default=None)
    la = mach.get("loadavg_start")
    o.append("""`benches/load/cluster.sh` starts three brokers of each kind on this one machine (%(nproc)s CPUs, %(mem)s), a fresh
cluster for every load and kind, the clients (Apache Kafka %(kv)s's `ProducerPerformance` and
`ConsumerPerformance`, and `benches/load/src/main/java/kaas/bench/ClusterTool.java`) on the same
machine, bootstrapping from all three brokers:

* **Apache Kafka, 3 brokers RF 3** (`kafka3`): %(d_kafka)s. Three KRaft nodes, each broker and
  controller (static `controller.quorum.voters`), `-Xms%(heap)s -Xmx%(heap)s` each, otherwise the
  defaults (`broker.session.timeout.ms` 9 s decides when a dead broker's partitions move).
* **kaas, 3 brokers, local dir** (`kaas3`): %(d_kaas3)s. Three `kaas serve` processes with node ids
  1-3 and their defaults (`cluster_tick_ms` 500).
* **kaas, 3 brokers, JuiceFS** (`kaas3-juicefs`): %(d_jfs)s (%(jfs)s).

Loads, each on 16 partitions (leaders spread over the three brokers): `produce` %(pr)s records of
%(rs)s B, unthrottled, acks=all, idempotent; `txn` %(tr)s records with `--transactional-id
--transaction-duration-ms %(td)s` (after one transaction of one record that creates the transaction
coordinator's state); `consume`: a producer perf test writes %(cr)s records, `ConsumerPerformance`
reads them (only the read is measured); `failover`: `ClusterTool failover` sends %(fr)s records/s
(acks=all, idempotent, 1 KiB, record i to partition i %% 16, the client's other settings default) for
%(fs)s s, recording when each record was sent and acknowledged; %(fk)s s in, the broker leading
partition 0 is killed with SIGKILL, %(fd)s s later it is started again; then every partition is read
back and every acknowledged record must be at the partition and offset its acknowledgement named.
**failover s** is, over the 16 partitions, the longest time from the kill to the acknowledgement
of the first record sent to that partition after the kill (what a client sees: detection, the
leader move, the client's metadata refresh and retry); **max latency** is over records sent from 1 s
before the kill until the restart; **max latency after restart** over the records sent after the
restart (Apache Kafka's restarted broker catches up as a follower; kaas hands the restarted broker
its partitions back).

CPU s/GB is the three broker processes' utime+stime summed over the measured window; machine CPU
s/GB the whole machine's busy CPU minus the client tools' (so for JuiceFS the FUSE mounts' CPU, and
the kernel's work for everyone, are in it; `fs_cpu_s_per_gb` in the JSON has the mounts' alone);
peak RSS the three brokers' VmHWM summed. Load average at the start %(la)s; other processes took up
to %(worst)s of the machine during a measured window (`others_cpu_frac`). %(kaas)s (binary sha256
%(sha)s…%(commit)s).
""" % {
        "nproc": mach.get("nproc"), "mem": mach.get("memory"), "kv": ver.get("kafka"),
        "d_kafka": meta["durability"].get("kafka3", cluster.DURABILITY["kafka3"]),
        "d_kaas3": meta["durability"].get("kaas3", cluster.DURABILITY["kaas3"]),
        "d_jfs": meta["durability"].get("kaas3-juicefs", cluster.DURABILITY["kaas3-juicefs"]),
        "jfs": ver.get("juicefs") or "not run", "heap": cfg["broker_heap"],
        "pr": fmt(cfg["produce_records"]), "rs": cfg["record_size"], "tr": fmt(cfg["txn_records"]),
        "td": cfg["txn_duration_ms"], "cr": fmt(cfg["consume_records"]), "fr": fmt(cfg["failover_rate"]),
        "fs": cfg["failover_seconds"], "fk": cfg["failover_kill_at"],
        "fd": cfg["failover_restart_at"] - cfg["failover_kill_at"] if cfg["failover_restart_at"] else "never",
        "la": " / ".join("%.2f" % x for x in la) if la else "not recorded",
        "worst": ("%.0f%%" % (100 * max(0.0, worst))) if worst is not None else "–",
        "kaas": ver.get("kaas"), "sha": ver.get("kaas_bin_sha256"),
        "commit": (", built from commit %s" % ver["kaas_commit"]) if ver.get("kaas_commit") else "",
    })
    busy = ["%s on %s %.0f%%%s" % (r["load"], r["cluster"], 100 * r["metrics"]["others_cpu_frac"],
                                   (" (run again: %s before)" % ", ".join("%.0f%%" % (100 * x) for x in r["disturbed_runs_others_cpu_frac"]))
                                   if r.get("disturbed_runs_others_cpu_frac") else "")
            for r in cdoc["results"] if (r.get("metrics") or {}).get("others_cpu_frac", 0) > 0.05]
    if busy:
        o.append("Cases during which other processes took more than 5%% of the machine (their figures are less "
                 "reliable): %s.\n" % "; ".join(busy))
    o.append("Ratios are kaas / Apache Kafka: above 1 is better for records/s and MB/s, below 1 for latency, "
             "CPU, memory and failover time.\n")
    seen = []
    for r in cdoc["results"]:
        if r["load"] not in seen:
            seen.append(r["load"])
    for load in seen:
        variant, t = cluster_table(cdoc, load)
        o.append("### %s, %s\n" % (CLUSTER_TITLES.get(load, load), variant))
        o.append(t)
        o.append("")
        if load == "failover":
            d = failover_details(cdoc)
            if d:
                o.append(d)
                o.append("")
    logs = cluster_logs(cdoc)
    if logs:
        o.append("### Broker logs during the cluster loads\n")
        o.append(logs)
        o.append("")
    return "\n".join(o)


def splice_cluster(md_text, section):
    """MD_TEXT with its cluster section replaced by SECTION (or SECTION put before "## Charts",
    else before the limits section, else at the end)."""
    i = md_text.find(CLUSTER_HEAD)
    if i >= 0:
        rest = md_text[i + len(CLUSTER_HEAD):]
        j = re.search(r"^## ", rest, re.M)
        return md_text[:i] + section + ("\n" + rest[j.start():] if j else "\n")
    for head in ("## Charts", LIMITS_HEAD):
        k = md_text.find("\n" + head)
        if k >= 0:
            return md_text[:k + 1] + section + "\n" + md_text[k + 1:]
    return md_text.rstrip("\n") + "\n\n" + section + "\n"


def cluster_only(args):
    src = args[0] if args else os.path.join(HERE, "results", "cluster-latest.json")
    dst = args[1] if len(args) > 1 else os.path.join(ROOT, "BENCHMARKS.md")
    with open(src) as f:
        cdoc = json.load(f)
    text = open(dst).read() if os.path.exists(dst) else "# Benchmarks: kaas and Apache Kafka\n\n"
    with open(dst, "w") as f:
        f.write(splice_cluster(text, cluster_section(cdoc, src)))
    print(dst)


def main():
    if len(sys.argv) > 1 and sys.argv[1] == "--cluster-only":
        return cluster_only(sys.argv[2:])
    src = sys.argv[1] if len(sys.argv) > 1 else os.path.join(HERE, "results", "latest.json")
    dst = sys.argv[2] if len(sys.argv) > 2 else os.path.join(ROOT, "BENCHMARKS.md")
    with open(src) as f:
        doc = json.load(f)
    meta, cfg, mach, ver = doc["meta"], doc["meta"]["config"], doc["meta"]["machine"], doc["meta"]["versions"]
    limits = existing_limits(dst) or PLACEHOLDER
    chart_dir = os.path.dirname(os.path.abspath(src))
    rel = os.path.relpath(chart_dir, os.path.dirname(os.path.abspath(dst)))

    o = []
    o.append("# Benchmarks: kaas and Apache Kafka\n")
    o.append("_Generated by `benches/load/gen_benchmarks.py` from `%s` (run `%s`, %s profile); "
             "rerun `benches/load/matrix.sh` to regenerate. Do not edit by hand except the section "
             "\"What limits kaas now\", which is kept across regenerations._\n"
             % (os.path.relpath(os.path.abspath(src), ROOT), meta["timestamp"], meta["profile"]))
    if meta["profile"] == "quick":
        o.append("> **This is a QUICK run** (`QUICK=1`: small record counts, a few seconds per load, on a "
                 "2-core machine shared with other builds while it ran). It shows that the pipeline works; "
                 "its figures are noisy and dominated by JVM warm-up. Do not quote them: the published "
                 "figures come from a full run (`benches/load/matrix.sh` without `QUICK`) on a quiet machine.\n")
    o.append("## Machine\n")
    o.append("| | |\n|---|---|")
    o.append("| CPU | %s x %s%s |" % (mach["nproc"], mach["cpu_model"], (" (%s)" % mach["virtualization"]) if mach.get("virtualization") and mach["virtualization"] != "none" else ""))
    o.append("| memory | %s |" % mach["memory"])
    o.append("| kernel | %s (%s) |" % (mach["kernel"], mach.get("os", "")))
    o.append("| disk (work dir) | `%s` |" % mach["work_dir_fs"])
    if mach.get("disks"):
        o.append("| block devices | %s |" % "; ".join("`%s`" % l.strip() for l in mach["disks"].splitlines()))
    o.append("| Java | %s |" % ver["java"])
    o.append("| Apache Kafka | %s (Maven Central jars, KRaft, one combined broker+controller node) |" % ver["kafka"])
    o.append("| kaas | %s, binary `%s` (built %s, sha256 %s…); matrix scripts at commit %s on %s |"
             % (ver["kaas"], ver["kaas_bin"], ver["kaas_bin_mtime"], ver["kaas_bin_sha256"], ver["repo_commit"], ver["repo_branch"]))
    o.append("| matrix wall time | %.0f s |" % meta.get("wall_s", 0))
    o.append("")
    o.append("## Method\n")
    o.append(only_loads_run("""`benches/load/matrix.sh` runs every load against each broker one after the other, each time on a
fresh data directory with a freshly started broker, on the same machine, with the clients (JVMs)
on the same machine as the broker. Clients are Apache Kafka %(kv)s's own tools
(`kafka-producer-perf-test` = `ProducerPerformance`, `kafka-consumer-perf-test` =
`ConsumerPerformance`, `EndToEndLatency`) plus `benches/load/src/main/java/kaas/bench/BenchTool.java`
for what they do not do. Topics are created up front (`BenchTool create`: Admin createTopics,
replication factor 1, then it waits until every partition answers ListOffsets, so no load starts
while Apache Kafka is still creating partition logs).

* **Durability**:%(durability)s

  Apache Kafka runs with `-Xms%(heap)s -Xmx%(heap)s` (G1); kaas with its defaults.%(fsync_div)s
* **records/s, MB/s, latency** are the tools' own figures. Producer latency is the time from
  `send()` to the acknowledgement, as `ProducerPerformance` measures it; with 4 producer
  processes records/s and MB/s are the sums of the 4 and each percentile is the worst of the 4
  (percentiles cannot be merged). Consumer MB/s and records/s are `fetch.MB.sec` /
  `fetch.nMsg.sec` (excluding the group join). `EndToEndLatency` sends one record at a time
  (acks=all) and waits to consume it; it reports whole milliseconds.
* **CPU s/GB**: the broker process's utime+stime (`/proc/<pid>/stat`, all threads) sampled just
  before and after the measured load, divided by the payload bytes moved in that window
  (records x record size; 1 GB = 10^9 B; for `e2e` the background producer's mean rate x the
  window plus the probe records). For Apache Kafka that is the whole JVM (GC and JIT
  included).
* **machine CPU s/GB**: the whole machine's busy CPU over the same window (`/proc/stat`, all CPUs,
  without idle and iowait) minus the client JVMs': the broker plus the kernel's work for it outside
  its process (writeback threads, block I/O completions).
* **machine CPU s/GB with writeback** (write loads): the same plus the machine's busy CPU during a
  `sync(2)` right after the window, which writes back what the load left dirty in the page cache.
  Apache Kafka (defaults) leaves that to the kernel's flusher threads after the window; kaas
  fsynced it before answering. Results from before this column have none.
* **client CPU s/GB**: the same for the load's client JVMs (the tools that ended within the window,
  from `getrusage(RUSAGE_CHILDREN)`; with 4 producer processes their sum). Results from before
  this column have none.
* **peak RSS**: `VmHWM` of the broker process (`/proc/<pid>/status`) at the end of the load,
  i.e. since the broker started for that load; for Apache Kafka the JVM's (the heap is reserved at
  1 GiB but only touched pages count).
* Loads (%(profile)s profile):
  * `produce`: %(pr)s records x %(rs)s B per case, unthrottled, `acks=all`, `enable.idempotence=true`,
    topics of %(pp)s partitions, with %(pc)s producer processes (the records split between them).
  * `fixed_rate`: `--throughput %(fr)s` for %(frs)s s, %(frp)s partitions.
  * `txn`: %(tr)s records, `--transactional-id --transaction-duration-ms %(td)s`, %(tp)s partitions.
  * `consume`: a producer perf test writes %(cr)s records to %(cp)s partitions, then
    `ConsumerPerformance` reads them (only the read is measured for CPU).
  * `e2e`: `EndToEndLatency` (%(er)s round trips, 1 partition) while a producer perf test writes
    %(eb)s records/s to another topic of %(ebp)s partitions.
  * `read_committed`: `BenchTool aborts` writes %(rt)s transactions of %(rpt)s records and aborts one in
    %(ra)s, one transaction after the other, each flushed before it ends, so the aborted records
    are in the log too ("writing the txns": its wall time);
    `ConsumerPerformance` with `isolation.level=read_committed` reads the committed
    records (measured); a second read asks for every record written and must stop at exactly the
    committed count ("count ok").
  * `partition_scale`: creates a topic of %(sp)s partitions (create s: until every partition
    answers ListOffsets), writes one record to each
    (fill), RSS, stops the broker (SIGTERM, stop s), restarts it on the same data and times launch
    until a record to the last partition is acknowledged (restart s, the probe JVM launched with
    the broker).
%(tls)s%(quiet)s""" % {
        "tls": tls_method(doc), "quiet": quiet_method(doc),
        "kv": ver["kafka"], "durability": durability(meta["fsync"]), "heap": cfg["broker_heap"],
        "fsync_div": ("\n* Apache Kafka with an fsync per append writes 1/%d of the `produce`, `txn` and `consume` "
                      "records (`FSYNC_RECORDS_DIV`): it is several times slower, and its figures are rates and "
                      "percentiles." % cfg["fsync_records_div"])
        if "kafka-fsync" in meta["fsync"] and cfg.get("fsync_records_div", 1) > 1 else "",
        "profile": meta["profile"], "pr": fmt(cfg["produce_records"]), "rs": cfg["record_size"],
        "pp": ", ".join(map(str, cfg["produce_partitions"])), "pc": " and ".join(map(str, cfg["produce_procs"])),
        "fr": fmt(cfg["fixed_rate"]), "frs": cfg["fixed_rate_seconds"], "frp": cfg["fixed_rate_partitions"],
        "tr": fmt(cfg["txn_records"]), "td": cfg["txn_duration_ms"], "tp": cfg["txn_partitions"],
        "cr": fmt(cfg["consume_records"]), "cp": cfg["consume_partitions"],
        "er": fmt(cfg["e2e_records"]), "eb": fmt(cfg["e2e_bg_rate"]), "ebp": cfg["e2e_bg_partitions"],
        "rt": fmt(cfg["rc_txns"]), "rpt": cfg["rc_records_per_txn"], "ra": cfg["rc_abort_every"],
        "sp": fmt(cfg["scale_partitions"]),
    }, cfg["loads"]))
    o.append("## Results\n")
    o.append("Ratios are kaas / Apache Kafka (with its defaults, and with an fsync per append where that "
             "broker ran) on the same security protocol, and, where TLS variants ran, each broker over TLS / "
             "the same broker in plaintext (the cost of TLS): above 1 is better for records/s and MB/s, "
             "below 1 is better for latency, CPU and memory.\n")
    seen = []
    for r in doc["results"]:
        if r["load"] not in seen:
            seen.append(r["load"])
    for load in seen:
        o.append("### %s\n" % LOAD_TITLES.get(load, load))
        o.append(table(doc, load))
        o.append("")
    cluster_src = os.environ.get("CLUSTER_JSON") or os.path.join(chart_dir, "cluster-latest.json")
    if os.path.exists(cluster_src):
        with open(cluster_src) as f:
            o.append(cluster_section(json.load(f), cluster_src))
    o.append("## Charts\n")
    for name, alt in (("produce_throughput.png", "producer throughput vs partitions"),
                      ("produce_p99.png", "producer p99 latency vs partitions"),
                      ("latency.png", "latency percentiles of the fixed-rate, transactional and end-to-end loads"),
                      ("cpu_per_gb.png", "broker CPU seconds per GB"),
                      ("peak_rss.png", "broker peak RSS")):
        if os.path.exists(os.path.join(chart_dir, name)):
            o.append("![%s](%s/%s)\n" % (alt, rel, name))
    o.append(LIMITS_HEAD + "\n")
    o.append(limits + "\n")
    with open(dst, "w") as f:
        f.write("\n".join(o))
    print(dst)


if __name__ == "__main__":
    main()
