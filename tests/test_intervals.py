"""Small-sample intervals by simulation against a known truth: stats.mean_ci covers >= 94% at n = 20."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from core.analysis import readmodel, stats

N, REPS = 20, 4_000
RNG_SEED = 20261130


def _coverage(samples: np.ndarray, truth: float) -> float:
    """Share of replications (columns) whose mean_ci contains the truth."""
    ci = stats.mean_ci(samples)
    return float(np.mean((ci.ci_low <= truth) & (truth <= ci.ci_high)))


CASES = [
    pytest.param(lambda r: r.binomial(1, 0.05, (N, REPS)).astype(float), 0.05, id="proportion-0.05"),
    pytest.param(lambda r: r.binomial(1, 0.43, (N, REPS)).astype(float), 0.43, id="proportion-0.43"),
    pytest.param(lambda r: r.binomial(1, 0.5, (N, REPS)).astype(float), 0.5, id="proportion-0.5"),
    pytest.param(lambda r: r.binomial(1, 0.9, (N, REPS)).astype(float), 0.9, id="proportion-0.9"),
    pytest.param(lambda r: r.binomial(8, 0.9, (N, REPS)) / 8, 0.9, id="loose-ias-8-constraints-p0.9"),
    pytest.param(lambda r: r.binomial(8, 0.97, (N, REPS)) / 8, 0.97, id="loose-ias-8-constraints-p0.97"),
    pytest.param(lambda r: r.beta(8, 1, (N, REPS)), 8 / 9, id="skewed-high-beta-8-1"),
    pytest.param(lambda r: r.beta(1, 10, (N, REPS)), 1 / 11, id="skewed-low-beta-1-10"),
    pytest.param(lambda r: r.beta(0.5, 0.5, (N, REPS)), 0.5, id="u-shaped-beta"),
    pytest.param(lambda r: r.choice([0.0, 0.5, 1.0], p=[0.2, 0.3, 0.5], size=(N, REPS)), 0.65, id="three-point"),
]


@pytest.mark.parametrize(("draw", "truth"), CASES)
def test_mean_ci_covers_at_n20(draw, truth) -> None:
    samples = draw(np.random.default_rng(RNG_SEED))
    # Monte-Carlo standard error at 95% coverage with 4,000 replications is 0.0034: 0.94 is > 2.9 SE below 0.95
    assert _coverage(samples, truth) >= 0.94


def test_percentile_bootstrap_undercovers_where_mean_ci_does_not() -> None:
    """The interval the dashboards used before (percentile bootstrap) misses the target on a skewed metric at n = 20."""
    rng = np.random.default_rng(RNG_SEED)
    truth, hits, reps = 8 / 9, 0, 600
    samples = rng.beta(8, 1, (N, reps))
    for j in range(reps):
        replicates = readmodel.bootstrap_means(samples[:, j], 400, seed=j)
        low, high = readmodel._ci(replicates)
        hits += bool(low[0] <= truth <= high[0])
    assert hits / reps < 0.94
    assert _coverage(samples, truth) >= 0.94


@pytest.mark.parametrize(
    ("values", "method", "low", "high"),
    [
        pytest.param([0.0] * 20, "clopper-pearson", 0.0, 0.16843347, id="all-zero-proportion-has-an-upper-bound"),
        pytest.param([1.0] * 20, "clopper-pearson", 0.83156653, 1.0, id="all-one-proportion-has-a-lower-bound"),
        pytest.param([1.0, 0.0, 1.0, 1.0], "clopper-pearson", 0.19412045, 0.99369054, id="k3-of-4"),
        pytest.param([2.0, 4.0, 6.0], "student-t", 4 - 4.30265273 * 2 / np.sqrt(3), 4 + 4.30265273 * 2 / np.sqrt(3),
                     id="unbounded-student-t"),
    ],
)
def test_mean_ci_hand_worked(values, method, low, high) -> None:
    ci = stats.mean_ci(np.array(values))
    assert ci.method[0] == method and ci.n[0] == len(values)
    assert ci.ci_low[0] == pytest.approx(low, abs=1e-7) and ci.ci_high[0] == pytest.approx(high, abs=1e-7)


def test_mean_ci_missing_values_and_empty_columns() -> None:
    ci = stats.mean_ci(np.array([[1.0, np.nan], [0.0, np.nan], [np.nan, np.nan]]))
    assert list(ci.n) == [2, 0] and ci.mean[0] == 0.5
    assert np.isnan(ci.mean[1]) and np.isnan(ci.ci_low[1]) and np.isnan(ci.ci_high[1])


def test_orchestration_gap_ci_covers_the_true_gap() -> None:
    """Gap = mean Loose (all judged responses) − mean Strict (complete cases); its MOVER CI covers the truth."""
    rng = np.random.default_rng(RNG_SEED)
    reps, n, k, p, err = 300, 150, 8, 0.85, 0.1
    passed = rng.random((reps, n, k)) < p
    errored = rng.random((reps, n, k)) < err
    judged = (~errored).sum(axis=2)
    loose = np.where(judged > 0, (passed & ~errored).sum(axis=2) / np.maximum(judged, 1), np.nan)
    strict = np.where(errored.any(axis=2), np.nan, passed.all(axis=2).astype(float))
    frame = pd.DataFrame({"model": np.repeat([f"m{i:03d}" for i in range(reps)], n), "loose_ias": loose.ravel(),
                          "strict_ias": strict.ravel(), "cost_usd": 0.0, "latency_ms": 1.0, "mode": "noisy"})
    for key in readmodel.METRICS:
        frame[key] = frame.get(key, np.nan)
    models = pd.DataFrame({"model": frame["model"].unique(), "paradigm": "standard", "access": "open", "is_baseline": False})
    gap = readmodel.leaderboard(frame, models).query("metric == 'orchestration_gap'")
    truth = p - p**k
    coverage = float(((gap["ci_low"] <= truth) & (truth <= gap["ci_high"])).mean())
    assert coverage >= 0.93, coverage
