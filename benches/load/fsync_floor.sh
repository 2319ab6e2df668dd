#!/usr/bin/env bash
# The kernel's own CPU cost of making written data durable, per GiB, on the disk holding DIR
# (default: ./kaas-data's file system, through a scratch directory beside it): what any broker
# that fsyncs before it acknowledges pays at least, whatever its own code costs. For each sync
# size it writes 256 MiB with dd, one synchronous write (O_DSYNC) of that size at a time, and
# reads the whole machine's busy CPU from /proc/stat across the write (the machine should be
# otherwise idle; run it twice). Two layouts:
#   appending           the file grows with each write, as a segment does: each sync also
#                       commits the new size (on ext4 a journal commit)
#   into written space  the same writes over a file written and fsynced before: data only
# plus, for comparison, 1 GiB written into the page cache and synced once at the end (the
# writeback a broker that never fsyncs leaves to the kernel's flusher threads).
# Usage: benches/load/fsync_floor.sh [DIR] [SIZES_KIB...]   (default sizes: 16 32 80 256)
set -euo pipefail
dir="${1:-./kaas-floor}"
shift || true
sizes=("$@")
[ ${#sizes[@]} -gt 0 ] || sizes=(16 32 80 256)
mkdir -p "$dir"
f="$dir/floor.bin"
trap 'rm -f "$f"; rmdir "$dir" 2>/dev/null || true' EXIT
hz=$(getconf CLK_TCK)
busy() { awk '/^cpu /{print $2+$3+$4+$7+$8+$9}' /proc/stat; }
# measure LABEL MIB dd-args...: machine CPU seconds and wall seconds per GiB
measure() {
  local label=$1 mib=$2; shift 2
  sync; sleep 2
  local b0 b1 t0 t1
  b0=$(busy); t0=$(date +%s%N)
  dd "$@" 2>/dev/null
  b1=$(busy); t1=$(date +%s%N)
  awk -v l="$label" -v b=$((b1 - b0)) -v hz="$hz" -v ns=$((t1 - t0)) -v mib="$mib" 'BEGIN {
    k = 1024 / mib; printf "| %s | %.2f | %.2f |\n", l, b / hz * k, ns / 1e9 * k }'
}
echo "file system: $(df -T "$dir" | awk 'NR == 2 {print $2, "on", $1}'), $(nproc) CPUs"
echo
echo "| writes | machine CPU s/GiB | wall s/GiB |"
echo "|---|---:|---:|"
rm -f "$f"
measure "1 GiB into the page cache, one fdatasync at the end" 1024 \
  if=/dev/zero of="$f" bs=64k count=16384 conv=fdatasync
for kib in "${sizes[@]}"; do
  count=$((262144 / kib))
  rm -f "$f"
  measure "O_DSYNC every $kib KiB, appending" 256 if=/dev/zero of="$f" bs="${kib}k" count="$count" oflag=dsync
  rm -f "$f"
  dd if=/dev/zero of="$f" bs=1M count=256 conv=fsync 2>/dev/null
  measure "O_DSYNC every $kib KiB, into written space" 256 \
    if=/dev/zero of="$f" bs="${kib}k" count="$count" oflag=dsync conv=notrunc
done
