#!/usr/bin/env bash
# Builds lazyfs, the FUSE test file system of the crash-consistency tests
# (tests/interop/python/test_crash_consistency.py). It is its own Cargo project, not part of kaas.
# Needs /dev/fuse and fusermount3 (Debian: fuse3) to run, nothing but cargo to build.
set -euo pipefail
cd "$(dirname "$0")/.."
if ! command -v fusermount3 >/dev/null 2>&1; then
  SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO="sudo"
  $SUDO apt-get update -qq
  $SUDO apt-get install -y -qq fuse3 >/dev/null
fi
cargo build --release --locked --manifest-path tests/lazyfs/Cargo.toml
