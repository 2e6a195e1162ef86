"""Every harness runs under atheris (coverage-guided, through ``fuzz/run.py``) for a bounded number
of executions, reaches the code it targets and finds nothing: the CI's short fuzzing run."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from fuzz.run import HARNESSES, ROOT

#: Mutations per harness after its seed corpus: a few seconds each at the slowest (the broker).
RUNS = 1000
#: Coverage (libFuzzer's ``cov``: instrumented edges) each harness must reach with ``core``
#: instrumentation (its own target packages); a harness that missed its target would stay near 0.
MIN_COV = 50


def test_every_harness_runs_briefly_under_atheris(tmp_path: Path) -> None:
    summary = tmp_path / "summary.json"
    done = subprocess.run(
        [
            sys.executable,
            str(ROOT / "fuzz" / "run.py"),
            f"--runs={RUNS}",
            "--jobs=2",
            "--instrument=core",
            f"--work={tmp_path / 'work'}",
            f"--json={summary}",
        ],
        capture_output=True,
        text=True,
        env=dict(os.environ, PYTHONPATH=str(ROOT)),
        check=False,
        timeout=900,  # a hang guard, not a speed check (docs/benchmarks/fuzzing.md measures)
    )
    assert done.returncode == 0, done.stdout + done.stderr
    results = {r["name"]: r for r in json.loads(summary.read_text())}
    assert set(results) == set(HARNESSES)
    for name, result in results.items():
        seeds = len(list((tmp_path / "work" / "corpus" / name).iterdir()))
        assert result["execs"] >= RUNS, (name, result)
        assert result["cov"] >= MIN_COV, (name, result)
        assert result["findings"] == [], (name, result)
        assert seeds > 0
