#!/usr/bin/env bash
# Runs every kaas test on a fresh machine: installs what the tests need (kcat from Debian, a
# Python venv with the Kafka clients, the Maven-built Java harness), builds the broker, then runs
# the Rust unit and integration tests and the black-box client tests against the real binary.
set -euo pipefail
cd "$(dirname "$0")/.."

step() { printf '\n==> %s\n' "$*"; }

step "system packages (kcat)"
if ! command -v kcat >/dev/null 2>&1; then
  SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO="sudo"
  $SUDO apt-get update -qq
  $SUDO apt-get install -y -qq kcat >/dev/null
fi

step "python venv (.venv) with confluent-kafka, kafka-python, pytest"
[ -x .venv/bin/python ] || python3 -m venv .venv
.venv/bin/pip install -q --disable-pip-version-check -r tests/interop/python/requirements.txt

step "java harness (kafka-clients, kafka-tools) via maven"
mvn -q -B -f tests/interop/java/pom.xml package -DskipTests

step "build kaas (release)"
cargo build --release --locked

step "lazyfs (FUSE test file system for the power-loss test)"
bash scripts/build-lazyfs.sh

step "rust unit and integration tests"
cargo test --release --locked

step "black-box tests with real clients against target/release/kaas"
KAAS_BIN="$PWD/target/release/kaas" .venv/bin/pytest -q -p no:cacheprovider -W ignore::DeprecationWarning tests/interop/python

step "fuzz targets, 45 s each (scripts/fuzz.sh SECONDS for a long run)"
./scripts/fuzz.sh 45
