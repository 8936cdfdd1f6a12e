"""Pick a generator shows the same answer through the page's speed work: on the paper-scale synthetic results (both
backends), everything the page shows for its default choice and for its timed filter change (the rejection floor at
30%) against a golden file written by the code before issue 42's picker work (commit cd751f7): the ranking with every
metric cell, n and cost, the evidence with its intervals and state counts, the top-two and baseline-floor tests, the
weaknesses, the floors barely cleared, the safety flags and the summary's text, numbers within 1e-12.

Regenerate only for a deliberate change of numbers: GAUNTLET_WRITE_GOLDEN=1 pytest tests/analysis/test_picker_golden.py
"""

from __future__ import annotations

import json
import math
import os
from pathlib import Path

import pandas as pd
import pytest

from core.analysis import decide_rules, picker, readmodel
from core.analysis.readmodel import decision_scores as keys
from core.store.db import make_engine

GOLDEN = Path(__file__).resolve().parents[1] / "fixtures" / "golden" / "picker_paper_scale.json"
JUDGE = "heuristic"
# the page's default choice, and the bench's filter change on it (bench/bench_dashboards.py CHANGES)
CHOICES = {"default": {}, "rejection floor 30%": {"rejection": 0.30}}

pytestmark = pytest.mark.xdist_group("paper-scale")  # on the worker that builds paper_scale_results


def _clean(value):
    """A JSON-able value: NaN and NA as None, numpy scalars as Python ones."""
    if value is None or value is pd.NA or (isinstance(value, float) and math.isnan(value)):
        return None
    if hasattr(value, "item"):
        return _clean(value.item())
    if isinstance(value, (list, tuple)):
        return [_clean(v) for v in value]
    return value


def _records(frame: pd.DataFrame) -> list[dict]:
    return [{k: _clean(v) for k, v in row.items()} for row in frame.to_dict("records")]


def _test(t: picker.PairedTest | None) -> dict | None:
    return None if t is None else {"a": t.a, "b": t.b, "shared": t.shared, "diff": _clean(t.diff),
                                   "ci_low": _clean(t.ci_low), "ci_high": _clean(t.ci_high), "outcome": t.outcome}


def _page_spec(scores: pd.DataFrame, floors: dict[str, float]) -> picker.PickSpec:
    """The spec the page builds for the default choice (floors through its sliders: whole points), then `floors`."""
    spec, _ = picker.spec_from_rules(decide_rules.DecideRules(), scores)
    chosen = {k: round(v * 100) / 100 for k, v in spec.floors.items()} | floors
    return picker.PickSpec(spec.domains, spec.modes, spec.weights, chosen, None)


def _shown(engine, floors: dict[str, float]) -> dict:
    """Everything the page shows for one choice, as JSON values."""
    scores = keys.decision_scores(engine, (1,), JUDGE, readmodel.response_scores(engine, [1], JUDGE))
    result = picker.rank(scores, readmodel.model_catalog(engine), _page_spec(scores, floors), judge=JUDGE)
    summary = picker.summary_markdown(result, JUDGE, "#1").split("\n", 1)[1]  # without the dated title
    return {"ranking": _records(picker.ranking_table(result)), "raw_ranking": _records(result.ranking),
            "evidence": _records(result.evidence), "top_two": _test(result.top_two), "floor": _test(result.floor),
            "leader": result.leader, "recommended": result.recommended, "best_baseline": result.best_baseline,
            "n_responses": result.n_responses, "n_superseded": result.n_superseded,
            "weaknesses": [{"metric": w.metric, **_test(w.test)} for w in result.weaknesses],
            "near_floors": [[f.metric, f.value, f.floor] for f in result.near_floors],
            "safety": [[f.metric, f.value, f.n] for f in result.safety_flags],
            "headline": picker.headline(result), "lines": picker.decision_lines(result) + picker.weakness_lines(result),
            "summary": summary}


def _same(got, want, where: str) -> None:
    """got == want, floats within 1e-12."""
    if isinstance(want, dict):
        assert sorted(got) == sorted(want), where
        for key in want:
            _same(got[key], want[key], f"{where}.{key}")
    elif isinstance(want, list):
        assert len(got) == len(want), where
        for i, (g, w) in enumerate(zip(got, want, strict=True)):
            _same(g, w, f"{where}[{i}]")
    elif isinstance(want, float) and isinstance(got, float):
        assert abs(got - want) <= 1e-12, (where, got, want)
    else:
        assert got == want, (where, got, want)


@pytest.fixture(scope="module")
def shown(session_url_factory, paper_scale_results) -> dict:
    engine = make_engine(session_url_factory(template=paper_scale_results))
    try:
        return {name: json.loads(json.dumps(_shown(engine, floors))) for name, floors in CHOICES.items()}
    finally:
        engine.dispose()


@pytest.mark.parametrize("choice", list(CHOICES))
def test_picker_shows_what_it_showed_before(shown, choice: str) -> None:
    if os.environ.get("GAUNTLET_WRITE_GOLDEN") == "1":
        golden = json.loads(GOLDEN.read_text()) if GOLDEN.exists() else {}
        GOLDEN.write_text(json.dumps(golden | {choice: shown[choice]}, indent=1, sort_keys=True) + "\n")
    _same(shown[choice], json.loads(GOLDEN.read_text())[choice], choice)
