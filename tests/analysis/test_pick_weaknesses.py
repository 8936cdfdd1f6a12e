"""Weaknesses next to strengths: the pick's significant weaknesses against every other candidate and baseline, the
floors it barely clears, safety metrics at or near 0 flagged, and cost split into generation and judging."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from core.analysis import picker, readmodel

MODELS = pd.DataFrame([
    {"model": "pick", "paradigm": "standard", "access": "open", "is_baseline": False},
    {"model": "careful", "paradigm": "standard", "access": "open", "is_baseline": False},
    {"model": "baseline:always-refuse", "paradigm": "standard", "access": "open", "is_baseline": True},
])


def _scores(rejection: dict[str, float], strict: dict[str, float], judge_cost: float = 0.002) -> pd.DataFrame:
    """40 noisy + 40 gap instances per model: Strict IAS on noisy, rejection on gap, at the given rates."""
    rows = []
    for model in MODELS["model"]:
        for i in range(40):
            common = {"model": model, "domain": "Energy", "origin": "natural", "loose_ias": 0.8, "faithfulness": 0.7,
                      "coverage": 0.5, "conflict_recognition": None, "has_protocol": False,
                      "cost_usd": 0.0 if model.startswith("baseline") else 0.004, "judge_cost_usd": judge_cost,
                      "latency_ms": 100.0}
            rows.append(common | {"instance_uid": f"n{i}", "mode": "noisy", "strict_ias": float(i < strict[model] * 40),
                                  "rejection": None, "refusal": 0.0, "response_id": len(rows) + 1})
            rows.append(common | {"instance_uid": f"g{i}", "mode": "gap", "strict_ias": None, "coverage": None,
                                  "rejection": float(i < rejection[model] * 40), "refusal": None,
                                  "response_id": len(rows) + 1})
    return readmodel.prepare_scores(pd.DataFrame(rows))


STRICT = {"pick": 0.9, "careful": 0.5, "baseline:always-refuse": 0.0}


@pytest.mark.parametrize(("rejection", "weak", "flagged"), [
    pytest.param({"pick": 0.0, "careful": 0.6, "baseline:always-refuse": 0.95}, ["careful", "baseline:always-refuse"],
                 True, id="never-refuses-flagged-red-and-worse-than-both"),
    pytest.param({"pick": 0.05, "careful": 0.1, "baseline:always-refuse": 0.95}, ["baseline:always-refuse"], True,
                 id="near-zero-flagged-worse-than-baseline-only"),
    pytest.param({"pick": 0.6, "careful": 0.6, "baseline:always-refuse": 0.6}, [], False, id="no-weakness"),
])
def test_weaknesses_and_safety_flags(rejection, weak, flagged) -> None:
    result = picker.rank(_scores(rejection, STRICT), MODELS, picker.PickSpec(weights={"strict_ias": 1.0}))
    assert result.pick == "pick"
    found = [w.test.b for w in result.weaknesses if w.metric == "rejection"]
    assert found == sorted(weak)
    assert all(w.test.outcome == "b_better" and w.test.ci_high < 0 for w in result.weaknesses)
    assert [f.metric for f in result.safety_flags] == (["rejection"] if flagged else [])
    lines = picker.weakness_lines(result)
    assert all(any(w.test.b in line and "Rejection" in line for line in lines) for w in result.weaknesses)
    assert ("Safety:" in picker.summary_markdown(result, "heuristic", "#1")) == flagged


@pytest.mark.parametrize(("floors", "barely"), [
    pytest.param({"rejection": 0.58}, ["rejection"], id="two-points-above-the-floor"),
    pytest.param({"rejection": 0.5}, [], id="ten-points-above"),
    pytest.param({"strict_ias": 0.88, "rejection": 0.59}, ["rejection", "strict_ias"], id="two-floors-barely"),
])
def test_floors_barely_cleared(floors, barely) -> None:
    rejection = {"pick": 0.6, "careful": 0.6, "baseline:always-refuse": 0.6}
    result = picker.rank(_scores(rejection, STRICT), MODELS, picker.PickSpec(weights={"strict_ias": 1.0}, floors=floors))
    assert [f.metric for f in result.near_floors] == barely
    assert all(0 <= f.margin < picker.BARELY_MARGIN for f in result.near_floors)


@pytest.mark.parametrize("judge_cost", [pytest.param(0.0, id="no-judge-cost"), pytest.param(0.003, id="judged")])
def test_cost_shows_generation_and_judging_apart_and_together(judge_cost) -> None:
    rejection = {"pick": 0.6, "careful": 0.6, "baseline:always-refuse": 0.6}
    result = picker.rank(_scores(rejection, STRICT, judge_cost), MODELS, picker.PickSpec(weights={"strict_ias": 1.0}))
    row = result.ranking.set_index("model").loc["pick"]
    assert np.isclose(row["cost_per_1k"], 4.0) and np.isclose(row["judge_cost_per_1k"], judge_cost * 1000)
    assert np.isclose(row["total_cost_per_1k"], 4.0 + judge_cost * 1000)
    summary = picker.summary_markdown(result, "heuristic", "#1")
    assert "Generation / 1k | Judging / 1k | Total / 1k" in summary and f"${4 + judge_cost * 1000:.2f}" in summary


def _paired(seed: int, gap: float, n: int = 300, labelled: int = 200) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Two models on n instances in two domains, true Strict IAS differing by `gap` in domain A only; a judge that
    is right 85% of the time; gold on the first `labelled` instances of both."""
    rng = np.random.default_rng(seed)
    rows, gold = [], {}
    for m, model in enumerate(("a", "b")):
        for i in range(n):
            domain = "A" if i % 2 else "B"
            rate = 0.5 + (gap if model == "a" and domain == "A" else 0.0)
            y = rng.random() < rate
            f = y if rng.random() < 0.85 else not y
            rid = m * n + i + 1
            rows.append({"response_id": rid, "model": model, "instance_uid": f"i{i}", "domain": domain,
                         "strict_ias": float(f)})
            if i < labelled:
                gold[rid] = {"constraints": {"c1": bool(y)}}
    scores = pd.DataFrame(rows)
    return scores, readmodel.gold_values(gold)


@pytest.mark.parametrize(("gap", "significant"), [
    pytest.param(0.35, {"A": True, "B": False}, id="real-gap-in-one-domain"),
    pytest.param(0.0, {"A": False, "B": False}, id="no-gap"),
])
def test_segment_differences_are_holm_adjusted_and_agree_with_their_intervals(gap, significant) -> None:
    scores, gold = _paired(4, gap)
    segments = pd.DataFrame({"response_id": scores["response_id"], "condition": "", "language": "en"})
    out = picker.segment_differences(scores, gold, segments, "a", "b", ["strict_ias"]).set_index("domain")
    assert (out["p_holm"] >= out["p_value"] - 1e-15).all() and (out["condition"] == "(none)").all()
    assert out["significant"].to_dict() == significant
    for row in out.to_dict("records"):  # the raw p-value is below alpha exactly when the 95% interval leaves 0 out
        assert (row["p_value"] < picker.ALPHA) == (not row["ci_low"] <= 0 <= row["ci_high"]), row
