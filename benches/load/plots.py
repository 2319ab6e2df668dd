#!/usr/bin/env python3
"""Draws the matrix's charts (PNG) from a results JSON file with matplotlib.

usage: plots.py [RESULTS_JSON [OUT_DIR]]   (defaults: results/latest.json, results/)
Writes: produce_throughput.png, produce_p99.png (both against partitions, one line per broker
and producer-process count), cpu_per_gb.png, peak_rss.png (one bar group per load and variant),
latency.png (p50/p99/p99.9 of the fixed-rate, transactional and end-to-end loads).
"""
import json
import os
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
COLORS = {"kafka": "#4c72b0", "kafka-fsync": "#8172b3", "kaas": "#dd8452",
          # the TLS variants (matrix.py: kafka-tls, ...): darker shades of the same hues
          "kafka-tls": "#2a4066", "kafka-fsync-tls": "#4b3f6b", "kaas-tls": "#8c4a1c"}
NAMES = {"kafka": "Apache Kafka", "kafka-fsync": "Apache Kafka, fsync", "kaas": "kaas"}
NAMES.update({k + "-tls": v + ", TLS" for k, v in list(NAMES.items())})


def kinds(doc):
    """The brokers of this run, in chart order."""
    return [k for k in COLORS if any(r["broker"] == k for r in doc["results"])]


def hatch(kind):
    """TLS variants' bars are hatched."""
    return "//" if kind.endswith("-tls") else None


def ok_metrics(r):
    return r.get("metrics") if r.get("metrics") else None


def subtitle(doc):
    m = doc["meta"]
    return "%s profile, %s, %s cores, %s" % (m["profile"], m["timestamp"], m["machine"]["nproc"], m["machine"]["memory"])


def produce_vs_partitions(doc, key, ylabel, title, path, log_y=False):
    rows = [r for r in doc["results"] if r["load"] == "produce" and ok_metrics(r)]
    if not rows:
        return None
    fig, ax = plt.subplots(figsize=(9, 4.2))
    procs = sorted({r["params"]["procs"] for r in rows})
    for kind in kinds(doc):
        for i, n in enumerate(procs):
            pts = sorted((r["params"]["partitions"], r["metrics"][key]) for r in rows
                         if r["broker"] == kind and r["params"]["procs"] == n and r["metrics"].get(key) is not None)
            if not pts:
                continue
            xs, ys = zip(*pts)
            ax.plot(xs, ys, marker="o", color=COLORS[kind], linestyle="-" if i == 0 else "--",
                    label="%s, %d producer%s" % (NAMES[kind], n, "" if n == 1 else "s"))
    ax.set_xscale("log")
    xt = sorted({r["params"]["partitions"] for r in rows})
    ax.set_xticks(xt)
    ax.set_xticklabels([str(x) for x in xt])
    ax.minorticks_off()
    if log_y:
        ax.set_yscale("log")
    ax.set_xlabel("partitions")
    ax.set_ylabel(ylabel)
    ax.set_title("%s\n%s" % (title, subtitle(doc)), fontsize=10)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8, loc="center left", bbox_to_anchor=(1.01, 0.5))  # outside: no line hidden
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def bars(doc, key, ylabel, title, path, loads=None, log_y=False):
    cases = []
    for r in doc["results"]:
        if loads and r["load"] not in loads:
            continue
        label = "%s\n%s" % (r["load"], r["variant"])
        if label not in cases:
            cases.append(label)
    vals = {k: [] for k in kinds(doc)}
    for label in cases:
        for kind in vals:
            v = None
            for r in doc["results"]:
                if "%s\n%s" % (r["load"], r["variant"]) == label and r["broker"] == kind and ok_metrics(r):
                    v = r["metrics"].get(key)
            vals[kind].append(v)
    keep = [i for i in range(len(cases)) if any(vals[k][i] is not None for k in vals)]
    if not keep:
        return None
    cases = [cases[i] for i in keep]
    for k in vals:
        vals[k] = [vals[k][i] for i in keep]
    fig, ax = plt.subplots(figsize=(max(7, 0.9 * len(cases) + 2), 4.5))
    w = 0.8 / len(vals)
    for j, kind in enumerate(vals):
        xs = [i + (j - (len(vals) - 1) / 2) * w for i in range(len(cases))]
        ys = [v if v is not None else 0 for v in vals[kind]]
        b = ax.bar(xs, ys, w, color=COLORS[kind], label=NAMES[kind], hatch=hatch(kind))
        for rect, v in zip(b, vals[kind]):
            if v is not None:
                ax.annotate("%.0f" % v if v >= 10 else "%.1f" % v, (rect.get_x() + rect.get_width() / 2, rect.get_height()),
                            ha="center", va="bottom", fontsize=7)
    ax.set_xticks(range(len(cases)))
    ax.set_xticklabels(cases, fontsize=7)
    if log_y:  # the brokers differ by one to two orders of magnitude
        ax.set_yscale("log")
    ax.set_ylabel(ylabel)
    ax.set_title("%s\n%s" % (title, subtitle(doc)), fontsize=10)
    ax.grid(axis="y", alpha=0.3)
    if len(vals) > 3:  # (the TLS variants too: outside, where no bar is hidden)
        ax.legend(fontsize=8, loc="center left", bbox_to_anchor=(1.01, 0.5))
    else:
        ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def latency(doc, path):
    rows = [r for r in doc["results"] if r["load"] in ("fixed_rate", "txn", "e2e") and ok_metrics(r)]
    if not rows:
        return None
    loads = []
    for r in rows:
        if (r["load"], r["variant"]) not in loads:
            loads.append((r["load"], r["variant"]))
    ks = kinds(doc)
    w = 0.8 / len(ks)
    fig, axes = plt.subplots(1, len(loads), figsize=(4 * len(loads), 4), squeeze=False)
    for ax, (load, variant) in zip(axes[0], loads):
        pcts = ("p50_ms", "p99_ms", "p999_ms")
        for j, kind in enumerate(ks):
            r = next((r for r in rows if r["load"] == load and r["variant"] == variant and r["broker"] == kind), None)
            if r is None:
                continue
            ys = [max(r["metrics"].get(p) or 0, 0.5) for p in pcts]  # (0 ms shown as 0.5 on the log axis)
            ax.bar([i + (j - (len(ks) - 1) / 2) * w for i in range(3)], ys, w, color=COLORS[kind], label=NAMES[kind],
                   hatch=hatch(kind))
        ax.set_yscale("log")
        ax.set_xticks(range(3))
        ax.set_xticklabels(["p50", "p99", "p99.9"])
        ax.set_title("%s %s" % (load, variant), fontsize=9)
        ax.set_ylabel("ms (log)")
        ax.grid(axis="y", alpha=0.3)
    handles, labels = axes[0][0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="lower center", ncol=len(labels), fontsize=8)  # below, over no bar
    fig.suptitle("latency percentiles\n%s" % subtitle(doc), fontsize=10)
    fig.tight_layout(rect=(0, 0.07, 1, 1))
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def main():
    src = sys.argv[1] if len(sys.argv) > 1 else os.path.join(HERE, "results", "latest.json")
    out = sys.argv[2] if len(sys.argv) > 2 else os.path.join(HERE, "results")
    os.makedirs(out, exist_ok=True)
    with open(src) as f:
        doc = json.load(f)
    made = [
        produce_vs_partitions(doc, "rps", "records/s (1 KiB, acks=all)", "producer perf test: throughput vs partitions",
                              os.path.join(out, "produce_throughput.png")),
        produce_vs_partitions(doc, "p99_ms", "p99 latency, ms (log)", "producer perf test: p99 latency vs partitions",
                              os.path.join(out, "produce_p99.png"), log_y=True),
        bars(doc, "cpu_s_per_gb", "broker CPU s per GB moved (log)", "broker CPU seconds (utime+stime) per GB",
             os.path.join(out, "cpu_per_gb.png"), loads=("produce", "fixed_rate", "txn", "consume", "e2e", "read_committed"),
             log_y=True),
        bars(doc, "peak_rss_mib", "broker peak RSS (VmHWM), MiB (log)", "broker peak RSS per load",
             os.path.join(out, "peak_rss.png"), log_y=True),
        latency(doc, os.path.join(out, "latency.png")),
    ]
    for p in made:
        if p:
            print(p)


if __name__ == "__main__":
    main()
