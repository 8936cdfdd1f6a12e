"""bench/bench_ragstress_dense.py as a smoke test: the same script, run as documented, on a knowledge base of the
selection's first 60 questions (780 entries) and 20 retrieved questions; its figures are checked for shape and sense
(the paper-scale figures are in the README and docs/kb_corruption.md)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def test_dense_bench_runs_small() -> None:
    done = subprocess.run([sys.executable, "bench/bench_ragstress_dense.py", "--kb-questions", "60", "--questions", "20"],
                          cwd=REPO, capture_output=True, text=True, timeout=300,
                          env={**os.environ, "PYTHONPATH": str(REPO)})
    assert done.returncode == 0, done.stderr[-2000:]
    figures = json.loads(done.stdout)
    assert "before the build: embedding 780 texts" in done.stderr  # the estimate comes before the index is built
    assert (figures["entries"], figures["kb_questions"], figures["questions"], figures["dense_search"]) == (
        780, 60, 20, "faiss")
    assert figures["embedded_texts"] == 780 + 20  # every entry once, then one query per question
    assert 20 * 10 <= figures["filtered_retrievals"] <= 20 * 14
    assert figures["estimate"]["tokens"] > figures["entries"] and figures["estimate"]["usd_at_example_price"] > 0
    assert figures["index_mb"] == round(780 * 384 * 4 / 2**20, 1)
    assert 0 < figures["peak_rss_mb"] <= figures["limit_mb"] and figures["within_limit"]
    # The small run's own peak is about 140 MB; near the worker's size it would count this worker's pages again
    # (ru_maxrss across exec: tests/test_peak_rss.py), as the CI run that reported 2,103.9 MB did.
    assert figures["peak_rss_mb"] < 512
