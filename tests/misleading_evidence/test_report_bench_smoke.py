"""bench/bench_misleading_report.py as a smoke test: the same script, run as documented, on 2 models x 5 datasets x
6 questions; its figures are checked for shape (the paper-scale timings are quoted from its full run, not asserted)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def test_report_bench_runs_small() -> None:
    done = subprocess.run([sys.executable, "bench/bench_misleading_report.py", "--models", "2", "--questions", "6",
                           "--repeat", "1"], cwd=REPO, capture_output=True, text=True, timeout=300,
                          env={**os.environ, "PYTHONPATH": str(REPO)})
    assert done.returncode == 0, done.stderr[-2000:]
    figures = json.loads(done.stdout)
    assert (figures["models"], figures["questions_per_dataset"]) == (2, 6)
    assert figures["outcomes"] > 0
    assert set(figures["cpu_s"]) == {"misleading_rate", "accuracy", "policy_gap", "mean_over_models"}
    assert all(seconds >= 0 for seconds in figures["cpu_s"].values())
