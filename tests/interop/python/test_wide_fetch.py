"""A Fetch wider than the open-file limit allows (issue E2), with librdkafka.

benches/scale/wide.py at a bounded size: the broker runs under `ulimit -n 1024` (soft and hard,
so it cannot raise it: 256 files for its segment cache and 256 lent to pending sendfiles), and a
plain consumer `assign()`s 2,000 partitions of a topic at once. Before the budget of lent files,
each partition's range held its segment file open until the answer was written, and the broker
answered thousands of partition reads with EMFILE ("Too many open files"). Now the ranges past
the budget are copied reads (counted in kaas_fetch_copied_reads), every record is read and the
broker log has no EMFILE. The full 100,000-partition run is `benches/scale/wide.sh`.
"""
import json
import os
import subprocess
import sys
from pathlib import Path

from conftest import KAAS_BIN, ROOT


def test_a_fetch_of_more_partitions_than_open_files_reads_every_record_with_no_emfile(tmp_path):
    env = dict(os.environ, KAAS_BIN=KAAS_BIN, WIDE_TOPICS="1", WIDE_PARTITIONS="2000", WIDE_NOFILE="1024",
               TMPDIR=str(tmp_path))
    run = subprocess.run([sys.executable, str(Path(ROOT) / "benches" / "scale" / "wide.py")], env=env,
                         capture_output=True, text=True, timeout=600)
    phases = {}
    for line in run.stdout.splitlines():
        if line.startswith("{"):
            doc = json.loads(line)
            phases.setdefault(doc["phase"], []).append(doc)
    assert "summary" in phases, f"no summary:\n{run.stdout[-3000:]}\n{run.stderr[-3000:]}"
    summary = phases["summary"][0]
    assert summary["failures"] == [], f"{summary}\n{run.stderr[-3000:]}"
    assert run.returncode == 0
    assert summary["emfile_lines"] == 0
    assert [r["partitions_read"] for r in phases["read"]] == [2000]
    # The budget was reached and read past: without it the run would have needed 2,000 files.
    assert summary["fetch_copied_reads"] and summary["fetch_copied_reads"] > 0, summary
