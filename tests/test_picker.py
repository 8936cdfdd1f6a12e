"""Generator picker: weights, floors, budget, top-two test and the one-page summary."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from core.analysis import picker, readmodel, stats

MODELS = pd.DataFrame(
    [
        {"model": "good", "paradigm": "reasoning", "access": "open", "is_baseline": False},
        {"model": "cheap", "paradigm": "standard", "access": "closed", "is_baseline": False},
        {"model": "pricey", "paradigm": "standard", "access": "closed", "is_baseline": False},
        {"model": "baseline:always-refuse", "paradigm": "standard", "access": "open", "is_baseline": True},
    ]
)


def _scores() -> pd.DataFrame:
    """20 gap + 20 noisy instances; good: strict 60%, rejection 50%; cheap: strict 30%, rejection 20%; pricey: best but $20/1k."""
    rows = []
    spec = {"good": (12, 10, 0.004), "cheap": (6, 4, 0.001), "pricey": (16, 16, 0.02), "baseline:always-refuse": (0, 20, 0.0)}
    for model, (strict_k, rej_k, cost) in spec.items():
        for i in range(20):
            rows.append({"model": model, "instance_uid": f"n{i}", "domain": "Energy", "mode": "noisy", "origin": "natural", "loose_ias": 0.8,
                         "strict_ias": float(i < strict_k), "loose_persona": 0.8, "loose_output": 0.8, "loose_knowledge_protocol": None,
                         "faithfulness": 0.7, "coverage": 0.5, "rejection": None, "conflict_recognition": None, "refusal": 0.0,
                         "has_protocol": False, "cost_usd": cost, "latency_ms": 100.0, "response_id": len(rows) + 1})
            rows.append({"model": model, "instance_uid": f"g{i}", "domain": "Legal", "mode": "gap", "origin": "augmented", "loose_ias": 0.8,
                         "strict_ias": None, "loose_persona": 0.8, "loose_output": 0.8, "loose_knowledge_protocol": 0.5,
                         "faithfulness": 0.7, "coverage": None, "rejection": float(i < rej_k), "conflict_recognition": None, "refusal": None,
                         "has_protocol": True, "cost_usd": cost, "latency_ms": 100.0, "response_id": len(rows) + 1})
    return readmodel.prepare_scores(pd.DataFrame(rows))


SCORES = _scores()


@pytest.mark.parametrize(
    ("spec", "order", "eligible"),
    [
        pytest.param(picker.PickSpec(weights={"strict_ias": 1.0}), ["pricey", "good", "cheap"], [True, True, True], id="strict-only"),
        pytest.param(picker.PickSpec(weights={"strict_ias": 1.0}, budget_per_1k=5.0), ["good", "cheap", "pricey"], [True, True, False], id="budget-excludes-pricey"),
        pytest.param(picker.PickSpec(weights={"strict_ias": 1.0}, floors={"rejection": 0.4}, budget_per_1k=5.0), ["good", "pricey", "cheap"], [True, False, False], id="floor-and-budget"),
        pytest.param(picker.PickSpec(weights={"strict_ias": 1.0, "rejection": 1.0}, domains=("Legal",)), ["pricey", "good", "cheap"], [True, True, True], id="domain-scope-rejection-only"),
        pytest.param(picker.PickSpec(weights={"strict_ias": 1.0}, include_baselines=True), ["pricey", "good", "cheap", "baseline:always-refuse"], [True] * 4, id="with-baselines"),
    ],
)
def test_ranking(spec, order, eligible):
    result = picker.rank(SCORES, MODELS, spec)
    assert result.ranking["model"].tolist() == order
    assert result.ranking["eligible"].tolist() == eligible


def test_reasons_name_the_failed_floor_and_budget():
    spec = picker.PickSpec(weights={"strict_ias": 1.0}, floors={"rejection": 0.4, "strict_ias": 0.2}, budget_per_1k=5.0)
    ranking = picker.rank(SCORES, MODELS, spec).ranking.set_index("model")
    assert ranking.loc["cheap", "fails"] == ["Rejection accuracy 20.0% below the floor 40%"]
    assert ranking.loc["pricey", "fails"] == ["cost $20.00 per 1k queries over the budget $5.00"]
    assert ranking.loc["good", "reason"].startswith("Meets every floor")


@pytest.mark.parametrize(
    ("means", "weights", "expected"),
    [
        pytest.param({"strict_ias": 0.6, "rejection": 0.5}, {"strict_ias": 2.0, "rejection": 1.0}, (1.2 + 0.5) / 3, id="weighted-mean"),
        pytest.param({"strict_ias": 0.6, "rejection": np.nan}, {"strict_ias": 2.0, "rejection": 1.0}, 0.6, id="missing-drops-out"),
        pytest.param({"over_abstention": 0.1}, {"over_abstention": 1.0}, 0.9, id="over-abstention-inverted"),
    ],
)
def test_weighted_score(means, weights, expected):
    assert picker.weighted_score(means, weights) == pytest.approx(expected)


def test_top_two_uses_mcnemar_on_strict_ias():
    result = picker.rank(SCORES, MODELS, picker.PickSpec(weights={"strict_ias": 1.0}))
    t = result.top_two
    ref = stats.mcnemar(np.array([1.0] * 16 + [0.0] * 4).astype(int), np.array([1.0] * 12 + [0.0] * 8).astype(int))
    assert (t["a"], t["b"], t["mcnemar_n"]) == ("pricey", "good", 20)
    assert t["mcnemar_p"] == pytest.approx(ref.p_value)
    assert t["score_diff"] == pytest.approx(0.2)
    assert t["score_ci_low"] <= 0.2 <= t["score_ci_high"]


def test_only_baselines_are_ranked_with_a_note():
    only = SCORES[SCORES["model"] == "baseline:always-refuse"]
    result = picker.rank(only, MODELS, picker.PickSpec())
    assert result.ranking["model"].tolist() == ["baseline:always-refuse"] and "baselines" in result.note and result.top_two is None


def test_summaries_contain_ranking_and_escape_html():
    models = pd.concat([MODELS, pd.DataFrame([{"model": "<script>x</script>", "paradigm": "standard", "access": "open", "is_baseline": False}])])
    scores = pd.concat([SCORES, SCORES[SCORES["model"] == "cheap"].assign(model="<script>x</script>")])
    result = picker.rank(scores, models, picker.PickSpec(floors={"rejection": 0.4}, budget_per_1k=5.0))
    md = picker.summary_markdown(result, "heuristic", "#1")
    assert "**Recommended generator: good.**" in md and "| 1 | good |" in md and "Rejection ≥ 40%" not in md
    assert "Rejection accuracy ≥ 40%" in md and "McNemar on Strict IAS" in md
    page = picker.summary_html(result, "heuristic", "#1")
    assert "<script>" not in page and "&lt;script&gt;" in page and "<td>good</td>" in page


def _rerun(scores: pd.DataFrame, model: str, instances: list[str], **values) -> pd.DataFrame:
    """A second run of `model` re-answering `instances` (later response ids), with some metric values changed."""
    again = scores[(scores["model"] == model) & scores["instance_uid"].isin(instances)].assign(run_id=2, **values)
    return again.assign(response_id=again["response_id"] + 10_000)


def test_overlapping_runs_count_each_model_instance_once_latest_wins():
    rerun = _rerun(SCORES.assign(run_id=1), "good", [f"n{i}" for i in range(10)], strict_ias=0.0)
    overlapping = pd.concat([SCORES.assign(run_id=1), rerun], ignore_index=True)
    latest_only = pd.concat([overlapping[(overlapping["run_id"] == 1) & ~overlapping.index.isin(
        overlapping[(overlapping["model"] == "good") & overlapping["instance_uid"].isin(rerun["instance_uid"])].index)], rerun])
    spec = picker.PickSpec(weights={"strict_ias": 1.0})
    got = picker.rank(overlapping, MODELS, spec)
    want = picker.rank(latest_only, MODELS, spec)
    good = got.ranking.set_index("model").loc["good"]
    assert (good["responses"], good["strict_ias"]) == (40, pytest.approx(2 / 20))
    pd.testing.assert_frame_equal(got.ranking, want.ranking)
    assert got.n_responses == want.n_responses == len(SCORES)
