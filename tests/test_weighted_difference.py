"""readmodel.corrected_difference weighs by the recorded sampling probabilities and cross-fits PPI++'s lam (issue 40):
unbiased within 2 simulation standard errors under independent uncertainty or active sampling of the two models'
responses and under a planned draw of both responses together (pair probability: the product, or the shared one).
A CI-sized version of bench/bench_labels_pay.py --part differences: the readmodel path on a few worlds, pinned to
its vectorised twin (ppi.ipw_rows), which then runs 20,000 worlds per design so the SE (about 0.0006) is small
enough to see the bias of tuning lam on the labels it corrects (about -0.002 under the uncertainty draw before the
cross-fit: docs/ppi.md). Seeds fixed: deterministic."""

from __future__ import annotations

import numpy as np
import pytest

from bench.bench_labels_pay import DIFF_DESIGNS, difference_cell, difference_rows
from core.analysis.ppi import cross_fitted_lambdas, cross_folds, ipw_ppi_mean

WORLDS = 20_000
PINNED = 40


@pytest.mark.parametrize("design", DIFF_DESIGNS)
def test_corrected_difference_is_its_vectorised_twin_and_uses_the_probabilities(design: str) -> None:
    seed = 140 + DIFF_DESIGNS.index(design)
    cell, rows = difference_cell(design, PINNED, seed=seed), difference_rows(design, PINNED, seed=seed)
    assert cell.all_weighted and cell.weighted.size == rows.weighted.size >= 0.95 * PINNED
    np.testing.assert_allclose(cell.weighted, rows.weighted, atol=1e-12)
    assert np.abs(cell.weighted - cell.unweighted).mean() > 0.005  # the recorded probabilities change the estimate


@pytest.mark.parametrize("design", DIFF_DESIGNS)
def test_corrected_difference_is_unbiased_within_2_se(design: str) -> None:
    cell = difference_rows(design, WORLDS, seed=140 + DIFF_DESIGNS.index(design))
    assert cell.weighted.size >= 0.99 * WORLDS
    assert cell.se < 0.001
    assert abs(cell.bias) <= 2 * cell.se, (cell.bias, cell.se)


def test_lam_is_never_tuned_on_the_labels_it_corrects() -> None:
    """Flipping every label of fold 0 leaves fold 0's lam unchanged (tuned on fold 1) and moves fold 1's."""
    rng = np.random.default_rng(3)
    f = (rng.random(400) < 0.6).astype(float)
    labeled = rng.random(400) < 0.3
    y = np.where(labeled, np.where(rng.random(400) < 0.85, f, 1 - f), np.nan)
    weight = np.where(labeled, 1 / 0.3, 0.0)
    fold = cross_folds(400)
    flipped = np.where(fold == 0, 1 - y, y)
    before, after = cross_fitted_lambdas(f, y, weight), cross_fitted_lambdas(f, flipped, weight)
    assert (before[fold == 0] == after[fold == 0]).all()
    assert before[fold == 1][0] > 0.5 > 0.2 > after[fold == 1][0]  # a judge the labels contradict earns little credit
    pi = np.full(400, 0.3)
    assert ipw_ppi_mean(f, y, pi).lam == pytest.approx(before.mean())
