"""The offline judge measured on the hand set of EnterpriseRAG answers: mean absolute error at most 0.2."""

from __future__ import annotations

from functools import cache

import pytest

from core.scoring.judges.hand_set import MetricTally, load_hand_set, measure
from core.scoring.judges.heuristic import HeuristicJudge

MAX_MAE = 0.2
STYLES = ("correct", "paraphrased", "invented_number", "refusal", "conflict_report", "partial")


@cache
def tallies() -> dict[tuple[str, str], MetricTally]:
    return measure(HeuristicJudge(), load_hand_set())


@pytest.mark.parametrize("metric", ["faithfulness", "coverage"])
@pytest.mark.parametrize("slice_", ["all", *(f"style:{s}" for s in STYLES if s != "refusal")])
def test_mae_at_most_0_2(metric: str, slice_: str) -> None:
    t = tallies()[(metric, slice_)]
    assert t.errors and (mae := t.mae()) is not None and mae <= MAX_MAE, (metric, slice_, t.mae(), len(t.errors))


@pytest.mark.parametrize("language", ["zh", "ja"])
def test_unsupported_languages_are_counted_not_scored(language: str) -> None:
    for metric in ("faithfulness", "coverage"):
        t = tallies()[(metric, f"language:{language}")]
        assert (t.errors, t.unsupported) == ([], 6)


@pytest.mark.parametrize("style", STYLES)
def test_hand_set_has_each_style(style: str) -> None:
    rows = load_hand_set()
    assert len(rows) >= 80 and sum(r["style"] == style for r in rows) >= 4
    assert all(v is None or 0.0 <= v <= 1.0 for r in rows for v in (r["faithfulness"], r["coverage"]))
