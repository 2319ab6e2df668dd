#!/usr/bin/env bash
# Differential conformance against Apache Kafka 4.4 (tests/conformance/README.md): SEEDS random
# sequences per transaction version (default 100000), both TV1 and TV2 unless CONFORMANCE_TV
# says otherwise. Other CONFORMANCE_* variables pass through.
#   scripts/conformance.sh [SEEDS]
set -euo pipefail
cd "$(dirname "$0")/.."
export CONFORMANCE_SEEDS="${1:-100000}"
export CONFORMANCE_MINIMIZE="${CONFORMANCE_MINIMIZE:-20}"
exec cargo test --release --locked --test conformance -- --nocapture
