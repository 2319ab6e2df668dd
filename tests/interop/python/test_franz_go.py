"""franz-go's own integration tests TestGroupETL and TestTxnEtl (pkg/kgo) against kaas.

The franz-go module source (pinned FRANZ_GO_VERSION) comes from the Go module proxy through
`go mod download` (module zips include the *_test.go files); it is copied to a writable
directory and `go test -run 'TestGroupETL|TestTxnEtl' -count=1 ./pkg/kgo/` runs with the
environment its pkg/kgo/helpers_test.go reads:

  KGO_SEEDS    the kaas listener
  KGO_TEST_RF  1 (the default, 3, needs three brokers)
  KGO_TEST_RECORDS 20,000 records through each ETL chain (franz-go's default is 500,000; fewer
                   keep the whole CI run under 30 minutes; KAAS_KGO_TEST_RECORDS overrides it)

Both tests create their topics with CreateTopics (7, 11 or 31 partitions), produce, run chains
of consumer groups (range, cooperative-sticky, cooperative-sticky with static membership, and
the KIP-848 variants range/848, sticky/848, sticky/848/static with server-side assignment), and
check every record is consumed exactly once and in order; TestTxnEtl does it with
transactional consume-transform-produce (franz-go uses KIP-890 part 2 when the broker
finalizes transaction.version=2, hence the second parametrisation; TestGroupETL, which has no
transaction, runs in that one only).

The broker runs with per-request trace logging (kaas::protocol::connection=trace, ~3.5 MB of log
per run) so the test can check which request versions franz-go used: with
KAAS_TRANSACTION_VERSION=2 it must switch to Produce v12 / TxnOffsetCommit v5 / EndTxn v5.

Timings seen on the 2-core dev machine (go build cache warm): each parametrisation runs
`go test` in about 35-55 s (TestGroupETL ~20-33 s and TestTxnEtl ~20-48 s run in parallel),
both together about 85-95 s including broker start/stop; the first compile of pkg/kgo's tests
with a cold build cache adds about 55 s, and `go mod download` of the module and its three
dependencies a few seconds when the module cache is cold.

test_franz_go_txn_etl_on_a_three_broker_cluster runs TestTxnEtl alone against three brokers on
one data directory (about 20 s of `go test`). It found that kaas answered a too-new ApiVersions
with the full API list, which franz-go takes as a pre-KIP-511 broker's answer (no features,
Produce capped at v11) for that connection: produces there skipped AddPartitionsToTxn under
KIP-890 part 2 and were refused with TRANSACTION_ABORTABLE.

test_franz_go_kgo_suite runs every other test of pkg/kgo (about 140 top-level tests: produce,
consume, regex and KIP-848 groups, admin requests, compression, fetch edge cases, franz-go's
issue reproductions) against one broker; only the share-group tests (KIP-932, which kaas does
not serve) and the OAUTHBEARER test (kaas has no OAUTHBEARER) skip themselves; its SCRAM tests log
in with SCRAM-SHA-256 on a SASL_PLAINTEXT listener (and fail with a wrong password). It found
that kaas left Kafka's internal topics out of KIP-848 regex subscriptions (Apache Kafka 4.4
matches them: Test848RegexBrokerResolves) and answered them UNKNOWN_TOPIC_ID by id.

Never skipped: without a Go toolchain (`go` on PATH, or /usr/local/go/bin/go, or $GOROOT/bin/go)
the test fails and says how to install one.
"""
import collections
import json
import os
import re
import shutil
import subprocess
import time

import pytest

from conftest import Broker, free_port
from kaashelpers import assert_no_panic, find_go, log_tail, request_counts

pytestmark = pytest.mark.serial  # conftest.py: runs alone (its TestTxnEtl stalled once beside other tests)

FRANZ_GO_MODULE = "github.com/twmb/franz-go"
FRANZ_GO_VERSION = "v1.22.3"
GO_TEST_TIMEOUT = 600          # seconds, for `go test` (compile + run)


GO = find_go()


def _run(cmd, cwd, timeout, env=None):
    return subprocess.run(cmd, cwd=cwd, env=env, stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT, text=True, timeout=timeout)


@pytest.fixture(scope="module")
def franz_go_src(tmp_path_factory):
    """A writable copy of the franz-go module source at FRANZ_GO_VERSION."""
    assert GO is not None, (
        "franz-go interop tests need a Go toolchain and found none (not on PATH, not at "
        "/usr/local/go/bin/go, not in $GOROOT/bin). franz-go " + FRANZ_GO_VERSION + " needs "
        "go >= 1.26; any go >= 1.21 fetches that toolchain itself (GOTOOLCHAIN=auto). Install "
        "the tarball from https://go.dev/dl/ into /usr/local/go (Debian 12's golang-go is 1.19, "
        "too old), then run the tests again")
    work = tmp_path_factory.mktemp("franzgo-mod")
    init = _run([GO, "mod", "init", "kaas.test/franzgo"], cwd=work, timeout=60)
    assert init.returncode == 0, init.stdout
    dl = _run([GO, "mod", "download", "-json", f"{FRANZ_GO_MODULE}@{FRANZ_GO_VERSION}"],
              cwd=work, timeout=300)
    assert dl.returncode == 0, f"go mod download failed:\n{dl.stdout}"
    info = json.loads(dl.stdout[dl.stdout.index("{"):])
    assert info.get("Version") == FRANZ_GO_VERSION, info
    src = os.path.join(str(tmp_path_factory.mktemp("franzgo-src")), "franz-go")
    # The module cache is read-only; copy without the permission bits so the copy is writable.
    shutil.copytree(info["Dir"], src, copy_function=shutil.copyfile)
    for name in ("group_test.go", "txn_test.go", "helpers_test.go"):
        assert os.path.isfile(os.path.join(src, "pkg", "kgo", name)), \
            f"{name} missing from the module zip of {FRANZ_GO_MODULE}@{FRANZ_GO_VERSION}"
    return src


RESULT_RE = re.compile(r"^\s*--- (PASS|FAIL|SKIP): (Test\w+)(/\S+)? \(([\d.]+)s\)", re.M)


def _go_test(src, seeds, tests, skip=None, extra_env=None):
    """Runs franz-go's pkg/kgo tests matching `tests` (but not `skip`) against `seeds`;
    (rc, output, results, s)."""
    env = dict(os.environ)
    env.update({"KGO_SEEDS": seeds, "KGO_TEST_RF": "1", "GOFLAGS": "-buildvcs=false"})
    env.update(extra_env or {})
    env["KGO_TEST_RECORDS"] = os.environ.get("KAAS_KGO_TEST_RECORDS", "20000")
    started = time.time()
    skipping = ["-skip", f"^({skip})$"] if skip else []
    try:
        proc = _run([GO, "test", "-run", f"^({tests})$", *skipping, "-count=1", "-v",
                     f"-timeout={GO_TEST_TIMEOUT - 30}s", "./pkg/kgo/"],
                    cwd=src, env=env, timeout=GO_TEST_TIMEOUT)
        out, rc = proc.stdout, proc.returncode
    except subprocess.TimeoutExpired as e:
        out = e.stdout.decode(errors="replace") if isinstance(e.stdout, bytes) else (e.stdout or "")
        rc = None
    results = {(m.group(2), (m.group(3) or "").lstrip("/")): m.group(1) for m in RESULT_RE.finditer(out)}
    return rc, out, results, time.time() - started


def _context(rc, out, elapsed, brokers):
    """What a failed assertion shows: go test's result lines and tail, each broker's log tail."""
    return (f"go test exit code {rc} after {elapsed:.1f}s\n"
            f"--- go test output (result lines) ---\n"
            + "\n".join(line for line in out.splitlines()
                        if line.lstrip().startswith(("---", "FAIL", "ok", "PASS", "panic"))
                        or "_test.go:" in line)[-8000:]
            + f"\n--- go test output (tail) ---\n{out[-6000:]}"
            + "".join(f"\n--- kaas {b.bootstrap} log (tail) ---\n{log_tail(b, 40)}" for b in brokers))


@pytest.mark.parametrize("txn_version", ["1", "2"], ids=["tv1", "tv2"])
def test_franz_go_group_and_txn_etl(franz_go_src, tmp_path, txn_version):
    # Per-request trace lines (api, version) show which transaction protocol franz-go used.
    env_broker = {"RUST_LOG": "info,kaas::protocol::connection=trace"}
    env_broker["KAAS_TRANSACTION_VERSION"] = txn_version
    broker = Broker(tmp_path / "data", free_port(), extra_env=env_broker).start()
    # TestGroupETL has no transaction: the transaction version changes nothing for it, so it
    # runs once (with TV2); TestTxnEtl runs under both.
    tests = ("TestGroupETL", "TestTxnEtl") if txn_version == "2" else ("TestTxnEtl",)
    try:
        rc, out, results, elapsed = _go_test(franz_go_src, broker.bootstrap, "|".join(tests))
        print(f"franz-go {FRANZ_GO_VERSION} {'|'.join(tests)} against kaas "
              f"(transaction version {txn_version}): go test took {elapsed:.1f}s")
        print("\n".join(m.group(0).strip() for m in RESULT_RE.finditer(out)))
        ctx = _context(rc, out, elapsed, [broker])
        assert rc is not None, "go test timed out\n" + ctx
        for test in tests:
            assert results.get((test, "")) == "PASS", ctx
        assert rc == 0 and re.search(r"^ok\s+\S+/pkg/kgo\b", out, re.M), ctx
        assert not any(v == "FAIL" for v in results.values()), ctx
        # The classic-protocol chains must really have run (only the KIP-848 ones may skip).
        for test in tests:
            for sub in ("range", "cooperative-sticky", "cooperative-sticky/static",
                        "range/848", "sticky/848", "sticky/848/static"):
                assert results.get((test, sub)) == "PASS", f"{test}/{sub} did not pass\n" + ctx
        assert broker.alive(), "kaas exited during franz-go's tests\n" + ctx
        counts = request_counts(broker)
        versions = collections.defaultdict(set)
        for api, v in counts:
            versions[api].add(v)
        print("requests seen (api v: count): " + ", ".join(
            f"{api} v{v}: {n}" for (api, v), n in sorted(counts.items())))
        for api in ("JoinGroup", "SyncGroup", "Heartbeat", "OffsetFetch", "LeaveGroup", "InitProducerId",
                    "TxnOffsetCommit", "EndTxn", *(("OffsetCommit",) if "TestGroupETL" in tests else ())):
            assert api in versions, f"franz-go never sent {api}: {dict(versions)}"
        if txn_version == "2":
            # KIP-890 part 2: Produce v12 adds partitions implicitly, TxnOffsetCommit v5 adds
            # the offsets implicitly, EndTxn v5 bumps the epoch. franz-go decides per client at
            # BeginTransaction/EndTxn time (txn.go: "end transaction noticed the cluster now
            # supports KIP-890p2 ... opting in"), so a transactional client that begins before
            # it has the broker's ApiVersions runs its first transaction the TV1 way (Produce
            # v11, AddPartitionsToTxn, EndTxn v4) and switches after: both appear here.
            assert 12 in versions["Produce"], dict(versions)
            assert 5 in versions["EndTxn"], dict(versions)
            assert counts[("EndTxn", 5)] > counts[("EndTxn", 4)], dict(counts)
            assert versions["TxnOffsetCommit"] == {5}, dict(versions)
            assert "AddOffsetsToTxn" not in versions, dict(versions)
        else:
            assert max(versions["EndTxn"]) <= 4, dict(versions)
            assert "AddPartitionsToTxn" in versions and "AddOffsetsToTxn" in versions, \
                dict(versions)
        assert_no_panic(broker)
    finally:
        broker.stop()


def test_franz_go_txn_etl_on_a_three_broker_cluster(franz_go_src, tmp_path):
    """TestTxnEtl against three brokers sharing one data directory, transaction
    version 2: franz-go's producers and consume-transform-produce chains write to partitions led
    by all three brokers, and the transaction shards and the group coordinator are spread over
    them too, so a Produce v12 to a broker other than the transaction's coordinator adds its
    partition over the wire (AddPartitionsToTxn v5 from the leader to the coordinator) and
    commits write markers over the wire (WriteTxnMarkers), also for the group's offsets."""
    shared = tmp_path / "shared"
    env_broker = {"RUST_LOG": "info,kaas::protocol::connection=trace",
                  "KAAS_CLUSTER_TICK_MS": "200", "KAAS_FENCE_POLL_INTERVAL_MS": "200"}
    brokers = [Broker(shared, free_port(), extra_env=env_broker, node_id=i).start() for i in (1, 2, 3)]
    seeds = ",".join(b.bootstrap for b in brokers)
    rc, out, results, elapsed = _go_test(franz_go_src, seeds, "TestTxnEtl")
    print(f"franz-go {FRANZ_GO_VERSION} TestTxnEtl against a three-broker kaas cluster: "
          f"go test took {elapsed:.1f}s")
    ctx = _context(rc, out, elapsed, brokers)
    assert rc is not None, "go test timed out\n" + ctx
    assert results.get(("TestTxnEtl", "")) == "PASS", ctx
    for sub in ("range", "cooperative-sticky", "cooperative-sticky/static"):
        assert results.get(("TestTxnEtl", sub)) == "PASS", f"TestTxnEtl/{sub} did not pass\n" + ctx
    assert rc == 0 and not any(v == "FAIL" for v in results.values()), ctx
    counts = {b.node_id: request_counts(b) for b in brokers}
    for b in brokers:
        assert b.alive(), f"broker {b.node_id} exited during TestTxnEtl\n" + ctx
        assert_no_panic(b)
        print(f"broker {b.node_id}: " + ", ".join(f"{api} v{v}: {n}" for (api, v), n in sorted(counts[b.node_id].items())))
    # The data went to every broker (the topics' partitions are spread over all three).
    for node, seen in counts.items():
        assert seen[("Produce", 12)] > 0, f"broker {node} led no partition franz-go wrote: {dict(seen)}"
    total = collections.Counter()
    for seen in counts.values():
        total.update(seen)
    # Partitions led elsewhere than their transaction's coordinator were added over the wire;
    # markers went over the wire to at least two brokers.
    assert total[("AddPartitionsToTxn", 5)] > 0, dict(total)
    assert total[("EndTxn", 5)] > 0 and total[("TxnOffsetCommit", 5)] > 0, dict(total)
    assert sum(1 for seen in counts.values() if seen[("WriteTxnMarkers", 2)] > 0) >= 2, dict(total)


# What may skip itself in the whole pkg/kgo suite against one kaas broker: share groups
# (KIP-932) are not served, and no SASL listener is configured.
ALLOWED_SKIPS = {"TestShareGroup", "TestShareGroupETL", "TestShareGroupAckOnClose",
                 "TestShareGroupOffsetsAdmin", "TestConsumeRegexShareSkipsInternal",
                 "TestOAuthAuth"}


def test_franz_go_kgo_suite(franz_go_src, tmp_path):
    """Every pkg/kgo test but the two ETL tests (run above) against one broker, TV2; its SCRAM
    tests log in on a SASL_PLAINTEXT listener with SCRAM-SHA-256 (a user written at first start)."""
    scram_port = free_port()
    config = tmp_path / "kaas.toml"
    config.write_text(f"""
listeners = "SASL_PLAINTEXT://127.0.0.1:{scram_port}"
sasl_enabled_mechanisms = ["SCRAM-SHA-256"]

[scram_users_at_first_start]
franz = "franz-secret"
""")
    broker = Broker(tmp_path / "data", free_port(), extra_env={"KAAS_TRANSACTION_VERSION": "2"},
                    config_file=config).start()
    scram = {"KGO_TEST_SCRAM_SEEDS": f"127.0.0.1:{scram_port}", "KGO_TEST_SCRAM": "franz:franz-secret:256"}
    try:
        rc, out, results, elapsed = _go_test(franz_go_src, broker.bootstrap, ".*",
                                             skip="TestGroupETL|TestTxnEtl", extra_env=scram)
        top = {t: r for (t, sub), r in results.items() if not sub}
        print(f"franz-go {FRANZ_GO_VERSION} pkg/kgo suite against kaas: {len(top)} tests, "
              f"{sum(r == 'PASS' for r in top.values())} passed, "
              f"skipped {sorted(t for t, r in top.items() if r == 'SKIP')}; go test took {elapsed:.1f}s")
        ctx = _context(rc, out, elapsed, [broker])
        assert rc is not None, "go test timed out\n" + ctx
        failed = sorted(f"{t}/{sub}" if sub else t for (t, sub), r in results.items() if r == "FAIL")
        assert not failed, f"failed: {failed}\n" + ctx
        skipped = {t for t, r in top.items() if r == "SKIP"}
        assert skipped <= ALLOWED_SKIPS, f"unexpected skips: {sorted(skipped - ALLOWED_SKIPS)}\n" + ctx
        assert len(top) >= 100, f"only {len(top)} tests ran\n" + ctx
        # The KIP-848 tests must really run against kaas (they skip on brokers without it).
        for test in ("Test848RegexBrokerResolves", "TestGroupSimple", "TestSCRAMAuth", "TestSCRAMAuthBadCredentials"):
            assert top.get(test) == "PASS", f"{test}: {top.get(test)}\n" + ctx
        assert results.get(("TestGroupSimple", "848")) == "PASS", ctx
        assert rc == 0, ctx
        assert broker.alive(), "kaas exited during franz-go's tests\n" + ctx
        assert_no_panic(broker)
    finally:
        broker.stop()
