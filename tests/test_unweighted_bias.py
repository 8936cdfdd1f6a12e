"""ppi_mean cross-fits PPI++'s lam (issue 40): no lam is tuned on the labels it corrects, so the estimate from uniform
gold labels is unbiased. A CI-sized version of bench/bench_labels_pay.py --part unweighted: the vectorised twin
(ppi.ppi_rows, pinned to ppi_mean in tests/test_gold_budget.py) over 20,000 worlds in the cell where tuning lam on the
same labels was most biased (+0.0047, 8.5 simulation SE over 60,000 worlds: rate 0.5, judge accuracy 0.9, 10
labels; docs/ppi.md). Seeds fixed: deterministic."""

from __future__ import annotations

import numpy as np
import pytest

from bench.bench_labels_pay import unweighted_cell
from core.analysis import ppi
from core.analysis.ppi import cross_fitted_mean, ppi_mean, tuned_lambda

WORLDS = 20_000


def test_the_unweighted_estimate_is_unbiased_within_2_se_and_tuning_on_the_same_labels_is_not() -> None:
    cell = unweighted_cell("rate", 0.5, 0.9, 10, WORLDS, seed=77)
    assert cell.se < 0.0012
    assert abs(cell.bias) <= 2 * cell.se, (cell.bias, cell.se)
    same = _same_labels_errors(WORLDS, seed=77)  # the control: lam tuned on the labels it corrects (before the fix)
    assert same.mean() > 3 * cell.se, (same.mean(), cell.se)


def _same_labels_errors(worlds: int, seed: int) -> np.ndarray:
    """unweighted_cell's worlds (same seed, same draws) estimated with PPI++'s lam tuned on all the labels."""
    from bench.bench_labels_pay import HARD_SHARE, RESPONSES, judge

    rng = np.random.default_rng(seed)
    shape = (worlds, RESPONSES)
    hard = rng.random(shape) < HARD_SHARE
    y = (rng.random(shape) < 0.5).astype(float)
    f = judge(y, 0.9, hard, rng, 0.2)
    labeled = np.argsort(rng.random(shape), axis=1) < 10
    sums = ppi._row_sums(y, f, labeled, ~labeled, (0.0, 1.0))
    lam = ppi.LAMBDA_GRID[np.argmin(ppi._row_variances(ppi.LAMBDA_GRID, *sums, confidence=0.95)[1], axis=1)]
    estimate = lam * sums[7] / sums[6] + (sums[1] - lam * sums[2]) / sums[0]
    return np.clip(estimate, 0.0, 1.0) - y.mean(axis=1)


def test_lam_is_never_tuned_on_the_labels_it_corrects() -> None:
    """Each fold's term uses the lam tuned on the other fold (alternate positions of labelled and of unlabelled
    items): flipping fold 0's labels changes the lam tuned on fold 0 (applied to fold 1), never the one applied to
    fold 0 itself."""
    rng = np.random.default_rng(3)
    f = (rng.random(60) < 0.6).astype(float)
    y = np.where(rng.random(60) < 0.9, f, 1 - f)
    fu = (rng.random(400) < 0.6).astype(float)
    even, even_u = np.arange(60) % 2 == 0, np.arange(400) % 2 == 0

    def by_hand(labels: np.ndarray) -> tuple[float, float, float]:
        on_odd = tuned_lambda(labels[~even], f[~even], fu[~even_u])
        on_even = tuned_lambda(labels[even], f[even], fu[even_u])
        estimate = (0.5 * (on_odd * fu[even_u].mean() + (labels[even] - on_odd * f[even]).mean())
                    + 0.5 * (on_even * fu[~even_u].mean() + (labels[~even] - on_even * f[~even]).mean()))
        return estimate, on_odd, on_even

    flipped = np.where(even, 1 - y, y)
    for labels in (y, flipped):
        estimate, on_odd, on_even = by_hand(labels)
        e = ppi_mean(labels, f, fu)
        assert (e.estimate, e.lam) == pytest.approx((estimate, (on_odd + on_even) / 2), abs=1e-12)
        assert cross_fitted_mean(labels, f, fu) == pytest.approx((estimate, (on_odd + on_even) / 2), abs=1e-12)
    assert by_hand(y)[1] == by_hand(flipped)[1]  # fold 0's lam: tuned on fold 1, untouched by fold 0's labels
    assert by_hand(y)[2] > 0.5 > by_hand(flipped)[2]  # a judge fold 0's labels now contradict earns little credit
    assert ppi_mean(y, f, fu).method == "PPI++"
