"""leaderboard_aggregates.sums_intervals (intervals from n, sum and sum of squares, every model at once) equals
stats.metric_intervals on the values themselves to 1e-12, per model and over a leading model axis; both end in
stats.intervals_from_moments (one computation)."""

from __future__ import annotations

import numpy as np
import pytest

from core.analysis import stats
from core.analysis.readmodel.leaderboard_aggregates import sums_intervals
from core.metrics import MetricDeclaration, get_metric

RATE, BOUNDED, AMOUNT = get_metric("strict_ias"), get_metric("loose_ias"), get_metric("cost_per_1k")
LIKERT = MetricDeclaration("likert_test", "A 1-5 rating (test only)", "bounded", ("llm",), range=(1.0, 5.0))
METRICS = [RATE, BOUNDED, AMOUNT, LIKERT]


def _draw(rng: np.random.Generator, n: int) -> np.ndarray:
    """n rows of one value per metric of METRICS, a fifth missing (n = 0: one row with every value missing)."""
    if n == 0:
        return np.full((1, len(METRICS)), np.nan)
    x = np.column_stack([rng.binomial(1, 0.7, n), rng.binomial(8, 0.9, n) / 8, rng.gamma(4.0, 1.5, n),
                         1 + 4 * rng.beta(8, 1, n)]).astype(float)
    x[rng.random(x.shape) < 0.2] = np.nan
    return x


def _sums(x: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    present = ~np.isnan(x)
    return present.sum(axis=0), np.nansum(x, axis=0), np.nansum(x * x, axis=0)


CASES = [
    pytest.param([40, 25, 3], id="three-models"),
    pytest.param([1, 2, 300], id="one-value-two-values-many"),
    pytest.param([0, 12], id="a-model-with-no-values"),
    pytest.param([983] * 17, id="paper-scale-17-models"),
]


@pytest.mark.parametrize("sizes", CASES)
def test_sums_intervals_equal_metric_intervals(sizes: list[int]) -> None:
    rng = np.random.default_rng(20261206)
    samples = [_draw(rng, n) for n in sizes]
    n, total, total_sq = (np.stack(a) for a in zip(*(_sums(x) for x in samples), strict=True))
    together = sums_intervals(n, total, total_sq, METRICS)
    for i, x in enumerate(samples):
        direct = stats.metric_intervals(x, METRICS)
        alone = sums_intervals(n[i], total[i], total_sq[i], METRICS)
        for field in ("mean", "ci_low", "ci_high"):
            np.testing.assert_allclose(getattr(together, field)[i], getattr(direct, field), rtol=0, atol=1e-12)
            np.testing.assert_array_equal(getattr(together, field)[i], getattr(alone, field))
        np.testing.assert_array_equal(together.n[i], direct.n)
        np.testing.assert_array_equal(together.method[i], direct.method)
