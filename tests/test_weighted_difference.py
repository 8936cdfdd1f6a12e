"""readmodel.corrected_difference weighs by the recorded sampling probabilities (issue 40): unbiased within 2
simulation standard errors under independent uncertainty or active sampling of the two models' responses and under
a planned draw of both responses together (pair probability: the product, or the shared one). A CI-sized version of
bench/bench_labels_pay.py --part differences."""

from __future__ import annotations

import numpy as np
import pytest

from bench.bench_labels_pay import DIFF_DESIGNS, difference_cell

REPS = 200


@pytest.mark.parametrize("design", DIFF_DESIGNS)
def test_corrected_difference_is_unbiased_with_recorded_probabilities(design: str) -> None:
    cell = difference_cell(design, REPS, seed=40 + DIFF_DESIGNS.index(design))
    assert cell.all_weighted and cell.weighted.size >= 0.95 * REPS
    assert cell.unbiased, (cell.bias, cell.se)
    assert np.abs(cell.weighted - cell.unweighted).mean() > 0.005  # the recorded probabilities change the estimate
