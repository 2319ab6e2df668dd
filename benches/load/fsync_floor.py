#!/usr/bin/env python3
"""The kernel's own CPU cost of making written data durable, per GiB, on the disk holding DIR
(default: ./kaas-floor, made and removed in the current directory): what any broker that
fsyncs before it acknowledges pays at least, whatever its own code costs.

For each sync size, dd writes 256 MiB in synchronous writes (O_DSYNC) of that size, one at a
time, and the whole machine's busy CPU is read around the write (matrix.machine_busy_seconds,
the matrix's "machine CPU"; the machine should be otherwise idle: run it twice). Two layouts:
  appending           the file grows with each write, as a segment does: each sync also
                      commits the new size (on ext4 a journal commit)
  into written space  the same writes over a file written and fsynced before: data only
  zeroed ahead        appending, with zeros written ahead of the writes as kaas does
                      (`zero_ahead_bytes`, 512 KiB: store/log/segment.rs), each write
                      followed by an fdatasync (a Python loop, not dd)
plus, for comparison, 1 GiB written into the page cache and synced once at the end (the
writeback a broker that never fsyncs leaves to the kernel's flusher threads).

Usage: benches/load/fsync_floor.py [DIR] [SIZES_KIB...]   (default sizes: 16 32 80 256)"""
import os
import shutil
import subprocess
import sys
import time

from matrix import machine_busy_seconds

SPAN_KIB = 256 * 1024


def dd(*args):
    subprocess.run(["dd", *args], check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def measure(label, kib_written, *args):
    """One row: machine CPU and wall seconds per GiB of the dd run."""
    measure_fn(label, kib_written, lambda: dd(*args))


def zeroed_ahead(path, kib, count, ahead=512 << 10, block=4096, piece=256 << 10):
    """What kaas's active segment does: `count` writes of `kib` KiB, each fdatasynced, with
    zeros written ahead of them (half of `ahead` left: up to `ahead` past the end, to a block;
    never more than the file holds)."""
    data, zeros = b"\x01" * (kib * 1024), bytes(piece)
    fd = os.open(path, os.O_CREAT | os.O_TRUNC | os.O_WRONLY, 0o644)
    try:
        end = zeroed = 0
        for _ in range(count):
            want = min(ahead, end + len(data))
            if zeroed < end + len(data) + want // 2:
                target = -(-(end + len(data) + want) // block) * block
                while zeroed < target:
                    zeroed += os.pwrite(fd, zeros[:min(piece, target - zeroed)], zeroed)
            os.pwrite(fd, data, end)
            end += len(data)
            os.fdatasync(fd)
    finally:
        os.close(fd)


def measure_fn(label, kib_written, fn):
    """One row: machine CPU and wall seconds per GiB of `fn`'s run."""
    os.sync()
    time.sleep(2)
    b0, t0 = machine_busy_seconds(), time.monotonic()
    fn()
    b1, t1 = machine_busy_seconds(), time.monotonic()
    per_gib = (1024 * 1024) / kib_written
    print(f"| {label} | {(b1 - b0) * per_gib:.2f} | {(t1 - t0) * per_gib:.2f} |", flush=True)


def main():
    where = sys.argv[1] if len(sys.argv) > 1 else "./kaas-floor"
    sizes = [int(s) for s in sys.argv[2:]] or [16, 32, 80, 256]
    made = not os.path.isdir(where)
    os.makedirs(where, exist_ok=True)
    f = os.path.join(where, "floor.bin")
    try:
        df = subprocess.run(["df", "-T", where], capture_output=True, text=True).stdout.splitlines()
        dev, kind = (df[1].split() + ["?", "?"])[:2] if len(df) > 1 else ("?", "?")
        print(f"file system: {kind} on {dev}, {os.cpu_count()} CPUs\n")
        print("| writes | machine CPU s/GiB | wall s/GiB |\n|---|---:|---:|")
        measure("1 GiB into the page cache, one fdatasync at the end", 1024 * 1024,
                "if=/dev/zero", f"of={f}", "bs=64k", "count=16384", "conv=fdatasync")
        for kib in sizes:
            count = SPAN_KIB // kib
            os.remove(f)
            measure(f"O_DSYNC every {kib} KiB, appending", count * kib,
                    "if=/dev/zero", f"of={f}", f"bs={kib}k", f"count={count}", "oflag=dsync")
            os.remove(f)
            dd("if=/dev/zero", f"of={f}", "bs=1M", "count=256", "conv=fsync")
            measure(f"O_DSYNC every {kib} KiB, into written space", count * kib,
                    "if=/dev/zero", f"of={f}", f"bs={kib}k", f"count={count}", "oflag=dsync", "conv=notrunc")
            os.remove(f)
            measure_fn(f"fdatasync every {kib} KiB, zeroed ahead", count * kib,
                       lambda: zeroed_ahead(f, kib, count))
    finally:
        if os.path.exists(f):
            os.remove(f)
        if made:
            shutil.rmtree(where, ignore_errors=True)


if __name__ == "__main__":
    main()
