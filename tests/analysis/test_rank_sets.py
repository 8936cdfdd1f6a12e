"""Prediction-powered rank-sets in the picker: seeded simulation against a known truth (the bench with 1,000
repetitions per cell is bench/bench_rank_sets.py), and the sets' arithmetic on named cases."""

from __future__ import annotations

import pandas as pd
import pytest

from bench.bench_rank_sets import coverage, simulate
from core.analysis import picker, readmodel


@pytest.mark.parametrize(("rates", "accuracy", "labels", "weighted"), [
    pytest.param((0.5, 0.47, 0.4, 0.3), 0.8, 60, False, id="close-leaders-uniform-60"),
    pytest.param((0.7, 0.69, 0.68, 0.67), 0.6, 30, False, id="four-near-ties-poor-judge-uniform-30"),
    pytest.param((0.15, 0.1, 0.05), 0.95, 30, False, id="rare-outcome-good-judge-uniform-30"),
    pytest.param((0.5, 0.47, 0.4, 0.3), 0.8, 60, True, id="close-leaders-uncertainty-sampled-60"),
])
def test_rank_sets_hold_the_true_ranks_with_95_percent_coverage(rates, accuracy, labels, weighted) -> None:
    first, joint, _ = coverage(rates, accuracy, labels, reps=120, seed=1, weighted=weighted)
    assert first >= 0.95 and joint >= 0.93, (first, joint)


def test_rank_sets_narrow_with_gold_labels() -> None:
    """With many labels the clearly worse models drop out of the could-be-first set (the sets are informative)."""
    _, _, size = coverage((0.6, 0.4, 0.2), 0.9, 200, reps=40, seed=2)
    assert size <= 1.2, size


@pytest.mark.parametrize(("estimates", "lows", "highs", "first", "ranks"), [
    pytest.param([0.8, 0.5, 0.2], [0.7, 0.4, 0.1], [0.9, 0.6, 0.3], [True, False, False], [(1, 1), (2, 2), (3, 3)],
                 id="separated"),
    pytest.param([0.8, 0.75, 0.2], [0.7, 0.65, 0.1], [0.9, 0.85, 0.3], [True, True, False], [(1, 2), (1, 2), (3, 3)],
                 id="overlapping-leaders"),
])
def test_rank_set_arithmetic(monkeypatch, estimates, lows, highs, first, ranks) -> None:
    models = ["a", "b", "c"]
    table = pd.DataFrame({"model": models, "metric": "strict_ias", "estimate": estimates, "ci_low": lows,
                          "ci_high": highs, "n": 50})
    monkeypatch.setattr(readmodel, "corrected_estimates", lambda *a, **k: table)
    out = picker.rank_sets(pd.DataFrame({"model": models}), pd.DataFrame(), models, ["strict_ias"])
    assert out["could_be_first"].tolist() == first
    assert list(zip(out["rank_low"], out["rank_high"], strict=True)) == ranks
    assert (out["confidence"] == 1 - picker.ALPHA / 3).all()


def test_a_candidate_without_enough_labels_could_be_anywhere() -> None:
    scores, gold, _ = simulate(3, (0.6, 0.3), 0.9, 100)
    gold = gold[gold["response_id"] <= 600]  # labels on m0 only
    out = picker.rank_sets(scores, gold, ["m0", "m1"], ["strict_ias"]).set_index("model")
    assert out.loc["m1", "could_be_first"] and (out.loc["m1", "ci_low"], out.loc["m1", "ci_high"]) == (0.0, 1.0)
    assert "whole range" in out.loc["m1", "note"] and out.loc["m0", "could_be_first"]
