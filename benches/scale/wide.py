#!/usr/bin/env python3
"""100,000 partitions under a 4,096 open-file limit, as a user meets them (issue E2).

Starts the real `kaas` binary with `ulimit -n 4096` (soft and hard, so the broker cannot raise
it), creates TOPICS x PARTITIONS (default 20 x 5,000), produces one record to every partition
with librdkafka (confluent-kafka, acks=all, idempotent), then reads every topic back with one
plain consumer that `assign()`s all its partitions from the beginning.

Prints one JSON object per phase and a summary. Exits non-zero when a record is missing, a
delivery failed, librdkafka reported a request timeout, or the broker log holds an EMFILE
("Too many open files"): those are the issue's conditions, not timings. Nothing is asserted on
time.

    benches/scale/wide.sh            # the full run (about 5-10 minutes here)
    WIDE_TOPICS=2 WIDE_PARTITIONS=2000 benches/scale/wide.sh   # a short run
"""

import json
import logging
import os
import re
import resource
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

from confluent_kafka import Consumer, KafkaError, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

ROOT = Path(__file__).resolve().parents[2]
KAAS_BIN = os.environ.get("KAAS_BIN", str(ROOT / "target" / "release" / "kaas"))
TOPICS = int(os.environ.get("WIDE_TOPICS", "20"))
PARTITIONS = int(os.environ.get("WIDE_PARTITIONS", "5000"))
NOFILE = int(os.environ.get("WIDE_NOFILE", "4096"))
# librdkafka's own default: a request that takes longer is reported as timed out.
REQUEST_TIMEOUT_MS = 30000


def emit(phase, **fields):
    print(json.dumps({"phase": phase, **fields}), flush=True)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def rss_kib(pid):
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1])
    except OSError:
        pass
    return None


def metric(port, name):
    """One sample of the broker's Prometheus endpoint, or None."""
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as r:
            for line in r.read().decode().splitlines():
                if line.startswith(name + " "):
                    return float(line.split()[1])
    except OSError:
        pass
    return None


def open_fds(pid):
    try:
        return len(os.listdir(f"/proc/{pid}/fd"))
    except OSError:
        return None


class Errors:
    """librdkafka's error and log callbacks: request timeouts and other failures, counted."""

    def __init__(self):
        self.timeouts = 0
        self.other = []

    def error_cb(self, err):
        self.note(str(err))

    def log_cb(self, level, fac, msg):
        # log_cb gets librdkafka's own log: "Timed out N in-flight/retry/outq requests" lines.
        if re.search(r"[Tt]imed out", msg):
            self.note(msg)

    def note(self, text):
        if re.search(r"[Tt]imed out|_TIMED_OUT", text):
            self.timeouts += 1
        else:
            self.other.append(text)
        if len(self.other) + self.timeouts <= 20:
            print(f"client: {text}", file=sys.stderr, flush=True)


class ClientLog(logging.Handler):
    """librdkafka's log lines (confluent-kafka hands them to a logging.Logger when polled),
    fed to Errors: its "Timed out N in-flight requests" lines are how it reports request
    timeouts."""

    def __init__(self, errors):
        super().__init__()
        self.errors = errors

    def emit(self, record):
        self.errors.log_cb(record.levelno, "", record.getMessage())


def client_logger(errors):
    logger = logging.getLogger("wide.rdkafka")
    if not logger.handlers:
        logger.addHandler(ClientLog(errors))
    logger.setLevel(logging.DEBUG)
    logger.propagate = False
    return logger


def limit_fds():
    resource.setrlimit(resource.RLIMIT_NOFILE, (NOFILE, NOFILE))


def start_broker(data_dir, port, metrics_port, log_path):
    log = open(log_path, "wb")
    env = dict(os.environ, RUST_LOG=os.environ.get("RUST_LOG", "info"),
               KAAS_METRICS_LISTEN=f"127.0.0.1:{metrics_port}")
    proc = subprocess.Popen(
        [KAAS_BIN, "serve", "--data-dir", str(data_dir), "--listen", f"127.0.0.1:{port}"],
        stdout=log, stderr=subprocess.STDOUT, env=env, preexec_fn=limit_fds)
    deadline = time.time() + 60
    while time.time() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return proc
        except OSError:
            if proc.poll() is not None:
                raise SystemExit(f"kaas exited at start: {Path(log_path).read_text()[-2000:]}")
            time.sleep(0.1)
    raise SystemExit("kaas did not listen in 60 s")


def main():
    work = Path(tempfile.mkdtemp(prefix="kaas-wide-"))
    port = free_port()
    log_path = work / "broker.log"
    metrics_port = free_port()
    proc = start_broker(work / "data", port, metrics_port, log_path)
    boot = f"127.0.0.1:{port}"
    errors = Errors()
    names = [f"wide-{t}" for t in range(TOPICS)]
    failures = []
    try:
        emit("start", topics=TOPICS, partitions_per_topic=PARTITIONS, nofile=NOFILE, pid=proc.pid)

        t0 = time.time()
        admin = AdminClient({"bootstrap.servers": boot, "error_cb": errors.error_cb})
        for name in names:
            fut = admin.create_topics([NewTopic(name, PARTITIONS, 1)], request_timeout=120)[name]
            fut.result()
        emit("create", seconds=round(time.time() - t0, 2), broker_fds=open_fds(proc.pid))

        t0 = time.time()
        delivered = {"ok": 0, "failed": 0}

        def on_delivery(err, msg):
            if err is None:
                delivered["ok"] += 1
            else:
                delivered["failed"] += 1
                errors.note(f"delivery {msg.topic()}[{msg.partition()}]: {err}")

        producer = Producer({
            "bootstrap.servers": boot, "acks": "all", "enable.idempotence": True,
            "linger.ms": 50, "request.timeout.ms": REQUEST_TIMEOUT_MS,
            "error_cb": errors.error_cb, "logger": client_logger(errors),
        })
        for name in names:
            # One topic at a time, flushed: librdkafka sends one partition per ProduceRequest and
            # walks its partitions with queued records for each request, so 100,000 queued at
            # once cost the client O(n^2) (its broker thread at 100% CPU, the broker at 15%, and
            # records expiring in its queue after message.timeout.ms), not the broker.
            for p in range(PARTITIONS):
                while True:
                    try:
                        producer.produce(name, key=f"{p}".encode(), value=f"{name}/{p}".encode(),
                                         partition=p, on_delivery=on_delivery)
                        break
                    except BufferError:
                        producer.poll(0.1)
                producer.poll(0)
            left = producer.flush(300)
            if left:
                break
        emit("produce", seconds=round(time.time() - t0, 2), delivered=delivered["ok"],
             failed=delivered["failed"], undelivered=left, broker_fds=open_fds(proc.pid))
        del producer
        if delivered["ok"] != TOPICS * PARTITIONS:
            failures.append(f"delivered {delivered['ok']} of {TOPICS * PARTITIONS}")

        t0 = time.time()
        read_total = 0
        for name in names:
            t1 = time.time()
            consumer = Consumer({
                "bootstrap.servers": boot, "group.id": f"wide-{name}", "enable.auto.commit": False,
                "error_cb": errors.error_cb, "logger": client_logger(errors),
            })
            consumer.assign([TopicPartition(name, p, 0) for p in range(PARTITIONS)])
            seen = set()
            deadline = time.time() + 180
            while len(seen) < PARTITIONS and time.time() < deadline:
                for msg in consumer.consume(1000, 1.0):
                    if msg.error():
                        if msg.error().code() != KafkaError._PARTITION_EOF:
                            errors.note(f"consume {name}: {msg.error()}")
                        continue
                    if msg.value() != f"{name}/{msg.partition()}".encode():
                        failures.append(f"{name}[{msg.partition()}] read {msg.value()!r}")
                    seen.add(msg.partition())
            consumer.close()
            read_total += len(seen)
            emit("read", topic=name, partitions_read=len(seen), seconds=round(time.time() - t1, 2),
                 broker_fds=open_fds(proc.pid))
            if len(seen) != PARTITIONS:
                failures.append(f"{name}: read {len(seen)} of {PARTITIONS} partitions")
        emit("read_all", seconds=round(time.time() - t0, 2), records=read_total)
    finally:
        peak = rss_kib(proc.pid)
        copied = metric(metrics_port, "kaas_fetch_copied_reads_total")
        proc.terminate()
        try:
            proc.wait(60)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
    log = log_path.read_text(errors="replace")
    emfile = log.count("Too many open files")
    if emfile:
        failures.append(f"{emfile} EMFILE lines in the broker log")
    if errors.timeouts:
        failures.append(f"{errors.timeouts} request timeouts reported by librdkafka")
    if errors.other:
        failures.append(f"{len(errors.other)} other client errors, first: {errors.other[0]}")
    emit("summary", peak_rss_mib=round((peak or 0) / 1024, 1), emfile_lines=emfile, fetch_copied_reads=copied,
         request_timeouts=errors.timeouts, failures=failures)
    if failures:
        print(f"broker log kept at {log_path}", file=sys.stderr)
        return 1
    shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
