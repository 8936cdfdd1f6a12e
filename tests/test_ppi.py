"""Judge-corrected metrics (PPI / PPI++): coverage by simulation against a known truth, against the paper's formulas,
and label efficiency of uncertainty-weighted gold sampling."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats as st
from statsmodels.stats.proportion import proportion_confint

from core.analysis.ppi import (
    beta_quantile,
    clt_lambda,
    ipw_ppi_mean,
    labels_for_width,
    ppi_mean,
    sampling_probabilities,
)

N, REPS, TRUTH = 2_000, 1_000, 0.7


def _judged_world(rng: np.random.Generator, accuracy: float, n: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """True binary outcomes at rate 0.7, a judge right with probability `accuracy`, n of N labelled at random."""
    y = (rng.random(N) < TRUTH).astype(float)
    f = np.where(rng.random(N) < accuracy, y, 1 - y)
    labeled = np.zeros(N, bool)
    labeled[rng.choice(N, n, replace=False)] = True
    return y, f, labeled


CELLS = [pytest.param(a, n, id=f"judge-accuracy-{a}-n{n}") for a in (0.6, 0.8, 0.95) for n in (50, 150, 500)]


@pytest.mark.parametrize(("accuracy", "n"), CELLS)
def test_corrected_ci_covers_where_the_raw_judge_does_not(accuracy: float, n: int) -> None:
    rng = np.random.default_rng(int(accuracy * 100) * 1000 + n)
    covered = raw_covered = 0
    for _ in range(REPS):
        y, f, labeled = _judged_world(rng, accuracy, n)
        e = ppi_mean(y[labeled], f[labeled], f[~labeled])
        covered += e.ci_low <= TRUTH <= e.ci_high
        half = st.norm.ppf(0.975) * f.std(ddof=1) / np.sqrt(N)
        raw_covered += abs(e.judge_mean - TRUTH) <= half
        wilson = proportion_confint(int(y[labeled].sum()), n, method="wilson")  # the standard labels-only interval
        assert (e.gold_ci_low, e.gold_ci_high) == pytest.approx(wilson, abs=1e-9)
    assert covered / REPS >= 0.94
    assert raw_covered / REPS < 0.6  # the raw judge estimate is biased for every one of these judges


Z_975 = st.norm.ppf(0.975)


def _paper_ppi(y, f, fu, lam, z=Z_975):
    """Independent implementation of the paper's estimator and CLT interval (Angelopoulos et al. 2023, PPI++)."""
    n, big_n = len(y), len(fu)
    rectifier = [yi - lam * fi for yi, fi in zip(y, f, strict=True)]
    theta = lam * sum(fu) / big_n + sum(rectifier) / n
    mean_u, mean_r = sum(fu) / big_n, sum(rectifier) / n
    var_u = sum((v - mean_u) ** 2 for v in fu) / (big_n - 1)
    var_r = sum((v - mean_r) ** 2 for v in rectifier) / (n - 1)
    se = (lam**2 * var_u / big_n + var_r / n) ** 0.5
    return theta, theta - z * se, theta + z * se


@pytest.mark.parametrize("lam", [pytest.param(0.0, id="gold-only"), pytest.param(0.5, id="half"),
                                 pytest.param(1.0, id="ppi"), pytest.param(None, id="ppi++-tuned")])
def test_clt_interval_matches_the_paper_formulas(lam) -> None:
    rng = np.random.default_rng(9)
    y, f, labeled = _judged_world(rng, 0.8, 120)
    f = np.clip(f + rng.normal(0, 0.1, N), 0, 1)  # bounded, not only binary
    got = ppi_mean(y[labeled], f[labeled], f[~labeled], lam=lam, interval="clt")
    use = clt_lambda(y[labeled], f[labeled], f[~labeled]) if lam is None else lam
    want = _paper_ppi(list(y[labeled]), list(f[labeled]), list(f[~labeled]), use)
    assert got.lam == pytest.approx(use, abs=0) and 0 <= got.lam <= 1
    assert (got.estimate, got.ci_low, got.ci_high) == pytest.approx(want, abs=1e-9)


def test_ppi_plus_plus_lambda_is_the_variance_minimiser() -> None:
    rng = np.random.default_rng(4)
    y, f, labeled = _judged_world(rng, 0.8, 200)
    best = clt_lambda(y[labeled], f[labeled], f[~labeled])
    widths = {lam: ppi_mean(y[labeled], f[labeled], f[~labeled], lam=lam, interval="clt").width
              for lam in np.linspace(0, 1, 21)}
    assert ppi_mean(y[labeled], f[labeled], f[~labeled], lam=best, interval="clt").width <= min(widths.values()) + 1e-9


def _active_world(rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """A judge that is reliable on 80% of items (98%) and poor on the rest (60%), with that uncertainty known."""
    y = (rng.random(N) < 0.6).astype(float)
    hard = rng.random(N) < 0.2
    f = np.where(rng.random(N) < np.where(hard, 0.6, 0.98), y, 1 - y)
    return y, f, np.where(hard, 0.4, 0.02)


def _mean_width(rng, n: int, active: bool, reps: int = 150) -> tuple[float, float]:
    widths, hits = [], 0
    for _ in range(reps):
        y, f, uncertainty = _active_world(rng)
        if active:
            pi = sampling_probabilities(uncertainty, n)
            e = ipw_ppi_mean(f, np.where(rng.random(N) < pi, y, np.nan), pi)
        else:
            labeled = np.zeros(N, bool)
            labeled[rng.choice(N, n, replace=False)] = True
            e = ppi_mean(y[labeled], f[labeled], f[~labeled])
        widths.append(e.width)
        hits += e.ci_low <= 0.6 <= e.ci_high
    return float(np.mean(widths)), hits / reps


def test_uncertainty_sampling_reaches_a_target_width_with_fewer_labels() -> None:
    rng = np.random.default_rng(12)
    target, budgets = 0.09, (60, 90, 120, 150, 180, 210, 240)
    needed = {}
    for active in (False, True):
        for n in budgets:
            width, coverage = _mean_width(rng, n, active)
            assert coverage >= 0.9  # weighted estimator stays valid (150 reps: coarse check)
            if width <= target:
                needed[active] = n
                break
    assert needed[True] < needed[False], needed


def test_sampling_probabilities_keep_every_item_possible_and_sum_to_the_budget() -> None:
    pi = sampling_probabilities(np.r_[np.full(90, 0.02), np.full(10, 0.4)], budget=30)
    assert pi.min() > 0 and pi.max() <= 1 and pi.sum() == pytest.approx(30)
    assert pi[-1] > pi[0]


def test_labels_for_a_target_width() -> None:
    rng = np.random.default_rng(2)
    y, f, labeled = _judged_world(rng, 0.8, 100)
    e = ppi_mean(y[labeled], f[labeled], f[~labeled])
    more = labels_for_width(e, e.width / 2)
    assert 350 <= more <= 450  # halving a CI takes about four times the labels
    assert labels_for_width(e, e.width * 2) == 100


@pytest.mark.parametrize("q", [pytest.param(0.025, id="lower-tail"), pytest.param(0.975, id="upper-tail"),
                               pytest.param(0.005, id="far-lower-tail")])
def test_beta_quantile_is_scipys_beta_ppf_bit_for_bit(q: float) -> None:
    """binary_interval's Clopper-Pearson bounds come from beta_quantile: the same floats st.beta.ppf gives over the
    shapes it is asked for (x successes of k < 30 labels, fractional under weights, a shape floored at 1e-12)."""
    rng = np.random.default_rng(7)
    k = np.concatenate([rng.uniform(1, 30, 20_000), np.arange(1.0, 31.0)])
    x = np.concatenate([rng.uniform(0, 1, 20_000) * k[:20_000], np.zeros(15), np.arange(16.0, 31.0)])
    for a, b in ((np.maximum(x, 1e-12), k - x + 1), (x + 1, np.maximum(k - x, 1e-12))):
        assert np.array_equal(beta_quantile(q, a, b), st.beta.ppf(q, a, b))
