"""EnterpriseRAG numbers stay identical through the protocol plug-in work: every leaderboard cell against a golden file.

Two sets: the paper-scale synthetic results (read model only) and the bundled sample answered by the offline baselines
and scored end to end by rule checks + the heuristic judge (generation, scoring, summarise, read). Regenerate the
golden files only for a deliberate change of numbers: GAUNTLET_WRITE_GOLDEN=1 pytest tests/test_enterprise_unchanged.py
"""

from __future__ import annotations

import json
import math
import os
from pathlib import Path

import pytest

from core import first_start
from core.analysis import readmodel
from core.config import REPO_ROOT
from core.ingest.io import import_file
from core.store.db import make_engine

GOLDEN = Path(__file__).parent / "fixtures" / "golden"
SAMPLE = REPO_ROOT / "data" / "sample"


def _cells(engine, judge: str, skip: tuple[str, ...] = ()) -> dict[str, list]:
    board = readmodel.leaderboard(readmodel.load_scores(engine, [1], judge), readmodel.model_catalog(engine))
    return {f"{r['model']}|{r['metric']}": [r["value"], r["ci_low"], r["ci_high"], int(r["n"]), r["mark"]]
            for r in board.to_dict("records") if r["metric"] not in skip}


def _clean(value):
    return None if isinstance(value, float) and math.isnan(value) else value


def _check(name: str, cells: dict[str, list]) -> None:
    path = GOLDEN / f"{name}.json"
    cells = {k: [_clean(v) for v in row] for k, row in sorted(cells.items())}
    if os.environ.get("GAUNTLET_WRITE_GOLDEN") == "1":
        path.write_text(json.dumps(cells, indent=1) + "\n")
    golden = json.loads(path.read_text())
    assert sorted(golden) == sorted(cells)
    for key, want in golden.items():
        got = cells[key]
        assert got[3:] == want[3:], key
        for g, w in zip(got[:3], want[:3], strict=True):
            assert (g is None and w is None) or abs(g - w) <= 1e-12, (key, got, want)


@pytest.mark.xdist_group("paper-scale")  # on the worker that builds paper_scale_results for its other users
def test_paper_scale_synthetic_set_unchanged(backend_url_factory, paper_scale_results) -> None:
    url = backend_url_factory(template=paper_scale_results)  # make_results(url, seed=0), built once per session
    _check("synthetic_paper_scale", _cells(make_engine(url), "heuristic"))


@pytest.mark.slow
def test_sample_scored_end_to_end_unchanged(backend_url_factory) -> None:
    url = backend_url_factory()
    engine = make_engine(url)
    for name in ("enterprise_rag_sample.jsonl", "enterprise_rag_built.jsonl"):
        assert import_file(engine, SAMPLE / name, domains_path=SAMPLE / "domains.jsonl", author="sample").ok
    assert first_start.ensure_first_start_run(engine) == 1
    # latency is measured wall time of the offline baselines: the one cell that may differ between two runs
    _check("sample_first_start", _cells(engine, "heuristic", skip=("latency_min_per_1k",)))
