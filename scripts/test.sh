#!/usr/bin/env bash
# Runs every kaas test on a fresh machine: installs what the tests need (kcat, and Java, Maven,
# Node.js and npm when missing, from Debian; Go from the Go module proxy when missing; a Python
# venv with the Kafka clients; the Maven-built Java harness; kafkajs from npm), builds the broker, then runs the Rust unit and
# integration tests, the black-box client tests against the real binary and the fuzz targets.
# Needs: Debian/Ubuntu with apt (root or sudo), Rust (cargo), python3 with venv, curl.
set -euo pipefail
cd "$(dirname "$0")/.."

step() { printf '\n==> [%s, %dm%02ds in] %s\n' "$(date +%T)" $((SECONDS / 60)) $((SECONDS % 60)) "$*"; }

step "system packages (kcat, openssl, Java 17+, Maven, Node.js and npm when missing)"
SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO="sudo"
missing=()
command -v kcat >/dev/null 2>&1 || missing+=(kcat)
command -v openssl >/dev/null 2>&1 || missing+=(openssl)
command -v node >/dev/null 2>&1 || missing+=(nodejs)
command -v npm >/dev/null 2>&1 || missing+=(npm)
command -v javac >/dev/null 2>&1 || missing+=(openjdk-17-jdk-headless)
command -v mvn >/dev/null 2>&1 || missing+=(maven)
if [ ${#missing[@]} -gt 0 ]; then
  $SUDO apt-get update -qq
  $SUDO apt-get install -y -qq "${missing[@]}" >/dev/null
fi

step "go (franz-go's tests): the machine's, else Go ${KAAS_GO_VERSION:=1.26.8} from the Go module proxy"
if ! command -v go >/dev/null 2>&1; then
  if [ -x /usr/local/go/bin/go ]; then
    export PATH="/usr/local/go/bin:$PATH"
  else
    # The go command fetches toolchains as modules (golang.org/toolchain); without a go command
    # we take the same zip from the proxy ourselves.
    gohome="${XDG_CACHE_HOME:-$HOME/.cache}/kaas/go$KAAS_GO_VERSION"
    if [ ! -x "$gohome/bin/go" ]; then
      proxy="${GOPROXY:-https://proxy.golang.org}"; proxy="${proxy%%,*}"
      zip="$(mktemp)"
      curl -fsSL -o "$zip" "$proxy/golang.org/toolchain/@v/v0.0.1-go$KAAS_GO_VERSION.linux-amd64.zip"
      rm -rf "$gohome.tmp" && mkdir -p "$gohome.tmp"
      python3 -c 'import sys, zipfile; zipfile.ZipFile(sys.argv[1]).extractall(sys.argv[2])' "$zip" "$gohome.tmp"
      rm -f "$zip"
      src="$gohome.tmp/golang.org/toolchain@v0.0.1-go$KAAS_GO_VERSION.linux-amd64"
      chmod +x "$src"/bin/* "$src"/pkg/tool/*/*
      rm -rf "$gohome" && mv "$src" "$gohome" && rm -rf "$gohome.tmp"
    fi
    export PATH="$gohome/bin:$PATH"
  fi
fi
go version

step "python venv (.venv) with confluent-kafka, kafka-python, pytest"
[ -x .venv/bin/python ] || python3 -m venv .venv
.venv/bin/pip install -q --disable-pip-version-check -r tests/interop/python/requirements.txt

step "java harness (kafka-clients, kafka-tools, kafka-streams) via maven"
mvn -q -B -f tests/interop/java/pom.xml package -DskipTests

step "Apache Kafka 4.4's jars (benches/load), the reference of test_compaction_differential.py"
mvn -q -B -f benches/load/pom.xml package -DskipTests

step "node modules (kafkajs) via npm"
(cd tests/interop/node && npm install --no-audit --no-fund --loglevel=error)

# One build of kaas and its tests: `cargo test` builds target/release/kaas for the integration
# tests anyway (a separate `cargo build` compiled the crate and the dependencies that the
# dev-dependencies change twice).
step "build kaas and its tests (release)"
cargo test --release --locked --no-run

step "lazyfs (FUSE test file system for the power-loss test)"
bash scripts/build-lazyfs.sh

step "rust unit and integration tests"
cargo test --release --locked

# The fuzz targets' instrumented build is long (about 8 minutes on 2 cores) and the black-box
# tests mostly wait on clients and timers: the build runs beside them at the lowest CPU and I/O
# priority, so that it takes only what the tests leave idle.
step "fuzz targets' build, in the background at nice 19 (log: target/fuzz-build.log)"
mkdir -p target
idle_io=(); command -v ionice >/dev/null 2>&1 && idle_io=(ionice -c 3)
# Its own process group (setsid), so that a failing run stops the whole build with it.
FUZZ_BUILD_ONLY=1 setsid nice -n 19 "${idle_io[@]}" ./scripts/fuzz.sh >target/fuzz-build.log 2>&1 &
fuzz_build=$!
trap 'kill -- -"$fuzz_build" 2>/dev/null || true' EXIT

# Two test files at a time (pytest-xdist, a file's tests on one worker), then the files marked
# `serial` one after another with the machine to themselves: they bound a failover, a stall or a
# fault by the clock (conftest.py). KAAS_TEST_JOBS=0 runs every test one after another.
pytest=(.venv/bin/pytest -q -p no:cacheprovider -W ignore::DeprecationWarning)
step "black-box tests with real clients against target/release/kaas, ${KAAS_TEST_JOBS:=2} files at a time"
KAAS_BIN="$PWD/target/release/kaas" "${pytest[@]}" -n "$KAAS_TEST_JOBS" --dist loadfile --durations=10 -m "not serial" tests/interop/python
step "black-box tests marked serial, one at a time"
KAAS_BIN="$PWD/target/release/kaas" "${pytest[@]}" --durations=10 -m serial tests/interop/python

step "fuzz targets, 15 s each (scripts/fuzz.sh SECONDS for a long run)"
if ! wait "$fuzz_build"; then
  cat target/fuzz-build.log
  echo "fuzz: the instrumented build failed"
  exit 1
fi
trap - EXIT
tail -n 1 target/fuzz-build.log
./scripts/fuzz.sh 15

# ---- differential conformance against Apache Kafka 4.4 (tests/conformance/README.md) ----
step "conformance: ${CONFORMANCE_SEEDS:=100} random sequences per transaction version against Apache Kafka 4.4 (scripts/conformance.sh N for a long run)"
CONFORMANCE_SEEDS="$CONFORMANCE_SEEDS" cargo test --release --locked --test conformance -- --nocapture
