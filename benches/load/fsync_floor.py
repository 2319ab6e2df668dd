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
    os.sync()
    time.sleep(2)
    b0, t0 = machine_busy_seconds(), time.monotonic()
    dd(*args)
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
    finally:
        if os.path.exists(f):
            os.remove(f)
        if made:
            shutil.rmtree(where, ignore_errors=True)


if __name__ == "__main__":
    main()
