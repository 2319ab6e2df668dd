#!/usr/bin/env bash
# Runs every cargo-fuzz (libFuzzer) target of fuzz/ for SECONDS each (default 600) and fails
# on any crash, hang, out-of-memory or leak. Prints the executions per target.
#
#   scripts/fuzz.sh [SECONDS]          e.g. scripts/fuzz.sh 45 in CI, scripts/fuzz.sh 3600 for a long run
#   FUZZ_TARGETS="decode batch" scripts/fuzz.sh 60     a subset
#   FUZZ_SANITIZER=none scripts/fuzz.sh                 faster, without AddressSanitizer
#   FUZZ_BUILD_ONLY=1 scripts/fuzz.sh                   only the instrumented build (scripts/test.sh
#                                                       runs it in the background, niced, during the
#                                                       black-box tests)
#
# cargo-fuzz needs nightly compiler flags (-Zsanitizer, -Cpasses=sancov-module); on a stable
# toolchain RUSTC_BOOTSTRAP=1 allows them (stable 1.95 ships the ASan runtime). Seeds are the
# committed fuzz/corpus/<target>/ (captured client traffic, fuzz/capture_seeds.py); what the
# fuzzer finds on top of them goes to fuzz/work/<target>/, crash reproducers to
# fuzz/artifacts/<target>/ (both git-ignored). Reproduce one with:
#   RUSTC_BOOTSTRAP=1 cargo fuzz run <target> fuzz/artifacts/<target>/crash-... (from the repo root)
set -euo pipefail

SECONDS_PER_TARGET="${1:-600}"
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
cd "$ROOT"
export RUSTC_BOOTSTRAP=1
SANITIZER="${FUZZ_SANITIZER:-address}"
TARGETS="${FUZZ_TARGETS:-decode batch dispatch}"

if ! cargo fuzz --version >/dev/null 2>&1; then
    echo "fuzz: installing cargo-fuzz"
    cargo install --locked cargo-fuzz
fi

# Everything that follows one limit: a frame is at most 1 MiB in the dispatch harness, so an
# input that makes the broker hold more than 2 GiB (or ask malloc for it at once) is a finding.
RSS_MB="${FUZZ_RSS_MB:-2048}"
# dispatch awaits every answer for at most 20 s and panics after that; 60 s is a hang outside it.
TIMEOUT_S=60

# The instrumented build of kaas and its dependencies is long; keep it outside the checkout so
# that later runs on the same machine (CI clones afresh) rebuild only what changed.
FUZZ_TARGET_DIR="${KAAS_FUZZ_TARGET_DIR:-$HOME/.cache/kaas/fuzz-target}"
mkdir -p "$FUZZ_TARGET_DIR"

start=$(date +%s)
cargo fuzz build --sanitizer "$SANITIZER" --fuzz-dir fuzz --target-dir "$FUZZ_TARGET_DIR"
echo "fuzz: build took $(( $(date +%s) - start )) s"
[ "${FUZZ_BUILD_ONLY:-0}" = 1 ] && exit 0

SHM_ROOT=/dev/shm
[ -d "$SHM_ROOT" ] || SHM_ROOT="${TMPDIR:-/tmp}"
status=0
summary=""
for t in $TARGETS; do
    # A single allocation above malloc_mb is a finding: a 64 KiB request has no business asking
    # for 256 MiB at once (decode); batch and dispatch decompress, so they get the RSS limit.
    case "$t" in
        batch) max_len=16384; malloc_mb="$RSS_MB" ;;
        decode) max_len=65536; malloc_mb=256 ;;
        *) max_len=65536; malloc_mb="$RSS_MB" ;;
    esac
    mkdir -p "fuzz/work/$t" "fuzz/artifacts/$t" "fuzz/corpus/$t"
    data_dir="$(mktemp -d "$SHM_ROOT/kaas-fuzz-XXXXXX")"
    log="fuzz/artifacts/$t/last-run.log"
    echo "fuzz: $t for ${SECONDS_PER_TARGET}s"
    set +e
    KAAS_FUZZ_DIR="$data_dir" cargo fuzz run --sanitizer "$SANITIZER" --fuzz-dir fuzz \
        --target-dir "$FUZZ_TARGET_DIR" "$t" \
        "fuzz/work/$t" "fuzz/corpus/$t" -- \
        -max_total_time="$SECONDS_PER_TARGET" -rss_limit_mb="$RSS_MB" -malloc_limit_mb="$malloc_mb" \
        -timeout="$TIMEOUT_S" -max_len="$max_len" -print_final_stats=1 \
        -artifact_prefix="fuzz/artifacts/$t/" >"$log" 2>&1
    rc=$?
    set -e
    rm -rf "$data_dir"
    execs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$log" | grep -o '[0-9]*$' | tail -1)
    corpus=$(grep -oE 'corp: [0-9]+/[0-9]+[a-zA-Z]*' "$log" | tail -1)
    if [ "$rc" -ne 0 ]; then
        status=1
        echo "fuzz: $t FAILED (exit $rc); log: $log"
        grep -E 'panicked at|ERROR: libFuzzer|SUMMARY|Test unit written|==[0-9]+==ERROR' "$log" | head -20 || true
    fi
    summary+="$t: ${execs:-?} executions in ${SECONDS_PER_TARGET}s, ${corpus:-corp ?}, exit $rc"$'\n'
done
echo "fuzz: summary"
printf '%s' "$summary"
exit $status
