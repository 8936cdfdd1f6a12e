"""Gold budget planner (core.analysis.gold_budget): the number it states reaches the stated power in seeded
simulation (the product's weighted interval, the planner's own draw), its weighted estimate stays unbiased, it beats
or ties uniform sampling, and the edge cases answer plainly."""

from __future__ import annotations

import numpy as np
import pytest

from bench.bench_gold_budget import ROWS, row, world
from core.analysis import gold_budget
from core.analysis.gold_budget import POWER, Pairs, design, draw, labels_needed, plan
from core.analysis.ppi import MIN_LABELS, ipw_ppi_mean

REPS = 150
TOLERANCE = 0.10  # mean over worlds; the 400-rep bench asserts 8 points
WORLD_FLOOR = 0.5  # any single world: its first 30 labels can misjudge the disagreement


def test_the_stated_number_reaches_the_stated_power_on_average() -> None:
    rows = [row(a, g, acc, ratio, REPS, 1000 * i + k, needs=False)
            for i, (a, g, acc, ratio) in enumerate(ROWS) if i in (0, 1, 4) for k in (1, 2)]
    powers = [r.stated_power for r in rows if r.stated]
    assert len(powers) == len(rows)
    assert abs(np.mean(powers) - POWER) <= TOLERANCE, powers
    assert min(powers) >= WORLD_FLOOR, powers


@pytest.mark.parametrize(("rate_a", "gap", "accuracy"), [
    pytest.param(0.6, 0.15, 0.9, id="judge-0.9"),
    pytest.param(0.7, 0.1, 0.95, id="judge-0.95"),
])
def test_the_planners_weighted_estimate_is_unbiased(rate_a: float, gap: float, accuracy: float) -> None:
    w = world(rate_a, gap, accuracy, seed=7)
    pi = design(w.pairs, 60)
    lab = w.pairs.labeled
    rng = np.random.default_rng(3)
    estimates = []
    for _ in range(400):
        labeled = lab | (rng.random(pi.size) < pi)
        estimates.append(ipw_ppi_mean(w.pairs.judged, np.where(labeled, w.truth, np.nan), np.where(lab, 1.0, pi),
                                      lam=0.5, bounds=(-1.0, 1.0)).estimate)
    error = np.std(estimates) / np.sqrt(len(estimates))
    assert abs(np.mean(estimates) - w.difference) <= 4 * error, (np.mean(estimates), w.difference)


@pytest.mark.parametrize(("rate_a", "gap", "accuracy", "ratio"), [
    pytest.param(*ROWS[0], id="judge-0.8"),
    pytest.param(*ROWS[3], id="judge-0.95"),
])
def test_the_planner_states_no_more_than_uniform_sampling(rate_a: float, gap: float, accuracy: float,
                                                          ratio: float) -> None:
    w = world(rate_a, gap, accuracy, seed=11, ratio=ratio)
    planner, uniform = labels_needed(w.pairs, w.difference), labels_needed(w.pairs, w.difference, uniform=True)
    assert planner is not None and uniform is not None and planner <= uniform


def _pairs(n: int, labelled: int, gap: float, miss_every: int = 0, seed: int = 0) -> Pairs:
    """n items whose judge difference has mean `gap`, the first `labelled` carrying gold (a miss every k-th)."""
    rng = np.random.default_rng(seed)
    judged = np.where(rng.random(n) < 0.5 + gap / 2, 1.0, 0.0) - np.where(rng.random(n) < 0.5 - gap / 2, 1.0, 0.0)
    gold = judged.copy()
    if miss_every:
        gold[::miss_every] = np.clip(gold[::miss_every] - 1, -1, 1)
    gold[labelled:] = np.nan
    return Pairs.of(judged, gold, np.full(n, 0.1))


CASES = [
    pytest.param(_pairs(300, 300, 0.6), 0, id="everything-labelled-and-clear"),
    pytest.param(_pairs(300, 0, 0.0), None, id="no-difference-never-separates"),
]


@pytest.mark.parametrize(("pairs", "expected"), CASES)
def test_edge_cases(pairs: Pairs, expected: int | None) -> None:
    assert labels_needed(pairs, gold_budget.assumed_difference(pairs)[0]) == expected


def test_a_plan_draws_only_unlabelled_items_with_positive_probability() -> None:
    pairs = _pairs(400, 40, 0.3, miss_every=5, seed=2)
    result = plan(pairs)
    assert result.more is not None and result.more > 0 and result.basis.startswith("corrected difference")
    assert (result.probabilities[pairs.labeled] == 1).all() and (result.probabilities > 0).all()
    assert result.probabilities[~pairs.labeled].sum() == pytest.approx(result.more, rel=1e-6)
    chosen = draw(result, pairs.labeled, seed=1)
    assert not pairs.labeled[chosen].any() and abs(len(chosen) - result.more) <= 4 * np.sqrt(result.more)
    assert (draw(result, pairs.labeled, seed=1) == chosen).all()


def test_below_the_minimum_the_judges_difference_is_assumed() -> None:
    pairs = _pairs(200, MIN_LABELS - 1, 0.3, seed=4)
    difference, basis = gold_budget.assumed_difference(pairs)
    assert difference == pytest.approx(pairs.judged.mean()) and basis.startswith("judge's difference")


@pytest.mark.parametrize(("judged", "gold", "uncertainty"), [
    pytest.param([0, 1], [0, np.nan, 1], [0.1, 0.1], id="lengths-differ"),
    pytest.param([0, np.nan], [0, 1], [0.1, 0.1], id="judge-missing"),
    pytest.param([0, 1], [0, 1], [0.1, -0.1], id="negative-uncertainty"),
])
def test_pairs_refuse_bad_input(judged, gold, uncertainty) -> None:
    with pytest.raises(ValueError):
        Pairs.of(judged, gold, uncertainty)
