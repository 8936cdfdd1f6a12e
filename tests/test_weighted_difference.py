"""readmodel.corrected_difference weighs by the recorded sampling probabilities (issue 40): unbiased within 2
simulation standard errors under independent uncertainty sampling of the two models' responses and under a planned
draw of both responses together (pair probability: the product, or the shared one)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from bench.sim_worlds import paired
from core.analysis import readmodel
from core.analysis.ppi import sampling_probabilities

N, REPS, BUDGET = 300, 300, 60


def frames(world: int, sim, design: str, rng: np.random.Generator) -> tuple[pd.DataFrame, pd.DataFrame]:
    """One world's scores (two models, shared instances) and gold frame with probabilities and draws."""
    ids_a, ids_b = np.arange(N) + 1, np.arange(N) + N + 1
    scores = pd.DataFrame({"response_id": np.r_[ids_a, ids_b], "model": ["a"] * N + ["b"] * N,
                           "instance_uid": [f"i{i}" for i in range(N)] * 2,
                           "strict_ias": np.r_[sim.f_a[world], sim.f_b[world]]})
    if design == "uncertainty":  # each response on its own (draw_gold_sample, strategy uncertainty)
        pi = sampling_probabilities(np.r_[sim.u_a[world], sim.u_b[world]], 5 * BUDGET)
        hit = rng.random(2 * N) < pi
        draw = np.full(2 * N, "run1-x")
    else:  # both responses of an instance together (the planner's draw)
        pair = sampling_probabilities(sim.u_a[world] + sim.u_b[world], BUDGET)
        pi, hit = np.r_[pair, pair], np.tile(rng.random(N) < pair, 2)
        draw = np.full(2 * N, "plan-strict_ias-1")
    y = np.r_[sim.y_a[world], sim.y_b[world]]
    gold = pd.DataFrame({"response_id": np.r_[ids_a, ids_b][hit], "strict_ias": y[hit], "loose_ias": y[hit],
                         "rejection": np.nan, "conflict_recognition": np.nan, "probability": pi[hit],
                         "draw": draw[hit]})
    return scores, gold


@pytest.mark.parametrize("design", ["uncertainty", "planned"])
def test_corrected_difference_is_unbiased_with_recorded_probabilities(design: str) -> None:
    sim = paired(REPS, N, 0.7, 0.1, 0.7, seed=40, lean_b=0.2, hard_shift=0.4)
    rng = np.random.default_rng(41)
    weighted, plain, truth = [], [], sim.gold.mean(axis=1)
    for w in range(REPS):
        scores, gold = frames(w, sim, design, rng)
        d = readmodel.corrected_difference(scores, gold, "a", "b")
        if np.isnan(d["estimate"]):
            continue
        assert d["weighted"]
        weighted.append(d["estimate"] - truth[w])
        plain.append(readmodel.corrected_difference(scores, gold.drop(columns=["probability", "draw"]), "a",
                                                    "b")["estimate"] - truth[w])
    errors, unweighted = np.array(weighted), np.array(plain)
    se = errors.std(ddof=1) / np.sqrt(errors.size)
    assert errors.size >= 0.95 * REPS
    assert abs(errors.mean()) <= 2 * se, (errors.mean(), se)
    assert np.abs(errors - unweighted).mean() > 0.005  # the recorded probabilities change the estimate
