"""Gold budget planner (core.analysis.gold_budget): the batch planner keeps its promise when it plans from its own
estimates (a CI-sized version of bench/bench_labels_pay.py's planner grid), it stops when the two separate or the
budget cannot, its draws are uniform batches of unlabelled items, and bad input is refused."""

from __future__ import annotations

import numpy as np
import pytest

from bench.bench_labels_pay import SLACK, planner_cell
from core.analysis import gold_budget
from core.analysis.gold_budget import BATCH, FIRST, Pairs, draw, plan
from core.analysis.ppi import ppi_mean, ppi_rows

CI_CELLS = [  # difference, judge accuracy, judge lean toward B: the corners and the middle of the bench grid
    pytest.param(0.0, 0.6, 0.2, id="no-difference-weak-biased-judge"),
    pytest.param(0.03, 0.95, 0.0, id="small-difference-strong-judge"),
    pytest.param(0.09, 0.6, 0.2, id="medium-difference-weak-biased-judge"),
    pytest.param(0.15, 0.8, 0.0, id="large-difference"),
]


@pytest.mark.parametrize(("difference", "accuracy", "lean"), CI_CELLS)
def test_achieved_power_holds_the_promise_planning_from_estimates(difference, accuracy, lean) -> None:
    cell = planner_cell(difference, accuracy, lean, worlds=200, seed=4000 + int(100 * difference))
    assert cell.achieved >= cell.promise - SLACK - 0.03, cell  # 200 worlds: 3 more points of simulation error
    assert cell.wrong <= 0.02, cell


def test_ppi_rows_is_ppi_mean_row_by_row() -> None:
    rng = np.random.default_rng(5)
    y = rng.integers(-1, 2, (20, 120)).astype(float)
    f = np.where(rng.random(y.shape) < 0.7, y, rng.integers(-1, 2, y.shape)).astype(float)
    lab = rng.random(y.shape) < 0.2
    rows = ppi_rows(y, f, lab, bounds=(-1.0, 1.0))
    for w in range(y.shape[0]):
        e = ppi_mean(y[w, lab[w]], f[w, lab[w]], f[w, ~lab[w]], bounds=(-1.0, 1.0))
        assert (rows.estimate[w], rows.low[w], rows.high[w], rows.lam[w]) == pytest.approx(
            (e.estimate, e.ci_low, e.ci_high, e.lam), abs=1e-12)


def _pairs(n: int, labelled: int, gap: float, miss_every: int = 0, seed: int = 0) -> Pairs:
    """n items whose judge difference has mean `gap`, the first `labelled` carrying gold (a miss every k-th)."""
    rng = np.random.default_rng(seed)
    judged = np.where(rng.random(n) < 0.5 + gap / 2, 1.0, 0.0) - np.where(rng.random(n) < 0.5 - gap / 2, 1.0, 0.0)
    gold = judged.copy()
    if miss_every:
        gold[::miss_every] = np.clip(gold[::miss_every] - 1, -1, 1)
    gold[labelled:] = np.nan
    return Pairs.of(judged, gold, np.full(n, 0.1))


@pytest.mark.parametrize(("pairs", "more", "stop"), [
    pytest.param(_pairs(300, 299, 0.6), 0, "separated", id="clear-difference-separated"),
    pytest.param(_pairs(300, 10, 0.3), FIRST - 10, "first labels", id="below-the-first-labels"),
    pytest.param(_pairs(400, 300, 0.0, seed=0), None, "not reachable", id="no-difference-stops"),
    pytest.param(_pairs(400, 40, 0.1, miss_every=4, seed=2), BATCH, "", id="keep-labelling"),
])
def test_the_plan_says_what_to_do(pairs: Pairs, more: int | None, stop: str) -> None:
    result = plan(pairs)
    assert (result.more, result.stop) == (more, stop), result


def test_a_plan_draws_a_uniform_batch_of_unlabelled_items() -> None:
    pairs = _pairs(400, 40, 0.1, miss_every=4, seed=2)
    result = plan(pairs)
    assert result.more == BATCH and result.detectable is not None and 0 < result.expected_power < 1
    assert (result.probabilities[pairs.labeled] == 1).all()
    assert result.probabilities[~pairs.labeled] == pytest.approx(BATCH / (~pairs.labeled).sum())
    chosen = draw(result, pairs.labeled, seed=1)
    assert len(chosen) == BATCH and not pairs.labeled[chosen].any()
    assert (draw(result, pairs.labeled, seed=1) == chosen).all()
    assert np.all(np.diff(result.curve[np.isfinite(result.curve)]) >= -0.03)  # power grows with the difference


@pytest.mark.parametrize(("judged", "gold", "uncertainty"), [
    pytest.param([0, 1], [0, np.nan, 1], [0.1, 0.1], id="lengths-differ"),
    pytest.param([0, np.nan], [0, 1], [0.1, 0.1], id="judge-missing"),
    pytest.param([0, 1], [0, 1], [0.1, -0.1], id="negative-uncertainty"),
])
def test_pairs_refuse_bad_input(judged, gold, uncertainty) -> None:
    with pytest.raises(ValueError):
        Pairs.of(judged, gold, uncertainty)


def test_the_budget_caps_the_plan() -> None:
    assert gold_budget.plan(_pairs(400, 40, 0.1, miss_every=4, seed=2), budget=5).more == 5
