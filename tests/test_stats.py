"""Tests for core.analysis.stats against scipy / statsmodels (to 1e-9) and hand-worked or published examples."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import scipy.stats as ss
from statsmodels.formula.api import ols
from statsmodels.stats import anova as sm_anova
from statsmodels.stats.contingency_tables import mcnemar as sm_mcnemar
from statsmodels.stats.inter_rater import cohens_kappa as sm_kappa
from statsmodels.stats.multitest import multipletests
from statsmodels.stats.proportion import confint_proportions_2indep
from statsmodels.stats.weightstats import DescrStatsW, ttost_paired

from core.analysis import stats as S

TOL = 1e-9


def labels_from_table(table: list[list[int]], names: list[str] | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Expand a rater-A x rater-B confusion table into two label arrays."""
    t = np.asarray(table)
    names_arr = np.asarray(names if names is not None else list(range(t.shape[0])))
    rows, cols = np.indices(t.shape)
    counts = t.ravel()
    return np.repeat(names_arr[rows.ravel()], counts), np.repeat(names_arr[cols.ravel()], counts)


def binary_pairs(both: int, a_only: int, b_only: int, neither: int) -> tuple[np.ndarray, np.ndarray]:
    """Paired 0/1 outcome arrays with the given cell counts (shuffled deterministically)."""
    a = np.repeat([1, 1, 0, 0], [both, a_only, b_only, neither])
    b = np.repeat([1, 0, 1, 0], [both, a_only, b_only, neither])
    order = np.random.default_rng(7).permutation(a.size)
    return a[order], b[order]


# --------------------------------------------------------------------------- Cohen's kappa

KAPPA_TABLES = [
    pytest.param([[20, 5], [10, 15]], None, id="binary-balanced"),
    pytest.param([[45, 3], [2, 0]], ["yes", "no"], id="binary-rare-class-strings"),
    pytest.param([[12, 2, 1], [3, 9, 2], [0, 4, 17]], None, id="three-categories"),
    pytest.param([[5, 0, 0, 1], [0, 6, 1, 0], [2, 0, 7, 0], [0, 1, 0, 4]], ["a", "b", "c", "d"], id="four-categories"),
    pytest.param([[10, 10], [10, 10]], None, id="chance-level"),
    pytest.param([[0, 8], [7, 0]], None, id="total-disagreement"),
]


@pytest.mark.parametrize(("table", "names"), KAPPA_TABLES)
def test_kappa_matches_statsmodels(table: list[list[int]], names: list[str] | None) -> None:
    a, b = labels_from_table(table, names)
    ref = sm_kappa(np.asarray(table, float))
    got = S.cohen_kappa(a, b)
    assert got.kappa == pytest.approx(ref.kappa, abs=TOL)
    assert got.se == pytest.approx(ref.std_kappa, abs=TOL)
    assert (got.ci_low, got.ci_high) == pytest.approx((ref.kappa_low, ref.kappa_upp), abs=TOL)
    assert got.agreement == pytest.approx(np.trace(np.asarray(table)) / np.sum(table), abs=TOL)
    assert not got.degenerate


# Hand-worked 2x2: table [[20, 5], [10, 15]], n = 50.
#   observed agreement p_o = (20 + 15) / 50 = 0.70
#   rater A marginals (25, 25)/50 = (0.5, 0.5); rater B marginals (30, 20)/50 = (0.6, 0.4)
#   chance agreement p_e = 0.5*0.6 + 0.5*0.4 = 0.50
#   kappa = (0.70 - 0.50) / (1 - 0.50) = 0.40
# Hand-worked 3x3: [[2, 1, 0], [0, 3, 0], [0, 1, 3]], n = 10: p_o = 8/10 = 0.8;
#   A marginals (.3, .3, .4), B marginals (.2, .5, .3): p_e = .06 + .15 + .12 = .33;
#   kappa = (.8 - .33) / .67 = 47/67
@pytest.mark.parametrize(
    ("table", "kappa", "p_o", "p_e"),
    [
        pytest.param([[20, 5], [10, 15]], 0.4, 0.7, 0.5, id="hand-2x2"),
        pytest.param([[2, 1, 0], [0, 3, 0], [0, 1, 3]], 47 / 67, 0.8, 0.33, id="hand-3x3"),
        pytest.param([[7, 0], [0, 3]], 1.0, 1.0, 0.58, id="perfect-not-degenerate"),
    ],
)
def test_kappa_hand_worked(table: list[list[int]], kappa: float, p_o: float, p_e: float) -> None:
    got = S.cohen_kappa(*labels_from_table(table))
    assert (got.kappa, got.agreement, got.expected_agreement) == pytest.approx((kappa, p_o, p_e), abs=TOL)
    assert got.ci_low <= got.kappa <= got.ci_high


@pytest.mark.parametrize(
    ("a", "b"),
    [
        pytest.param(["yes"] * 6, ["yes"] * 6, id="both-all-yes"),
        pytest.param([0, 0, 0], [0, 0, 0], id="both-all-zero"),
    ],
)
def test_kappa_degenerate_returns_one_with_flag(a: list, b: list) -> None:
    got = S.cohen_kappa(a, b)
    assert (got.kappa, got.se, got.ci_low, got.ci_high, got.agreement, got.expected_agreement) == (1.0, 0, 1, 1, 1, 1)
    assert got.degenerate


def test_kappa_confidence_level_scales_interval() -> None:
    a, b = labels_from_table([[20, 5], [10, 15]])
    wide, narrow = S.cohen_kappa(a, b, 0.99), S.cohen_kappa(a, b, 0.90)
    ref = sm_kappa(np.array([[20, 5], [10, 15]], float))
    half = ss.norm.ppf(0.995) * ref.std_kappa
    assert (wide.ci_low, wide.ci_high) == pytest.approx((ref.kappa - half, ref.kappa + half), abs=TOL)
    assert narrow.ci_high - narrow.ci_low < wide.ci_high - wide.ci_low


# --------------------------------------------------------------------------- ICC

SHROUT_FLEISS = [[9, 2, 5, 8], [6, 1, 3, 2], [8, 4, 6, 8], [7, 1, 2, 6], [10, 5, 6, 9], [6, 2, 4, 7]]
# Judge scores (%) of four models by three judges, from the EnterpriseRAG paper's judge-consistency table.
PAPER_LOOSE_IAS = [[89.6, 89.0, 91.9], [86.0, 86.2, 90.4], [84.9, 89.1, 88.3], [82.7, 83.8, 85.8]]
PAPER_REJECT = [[27.8, 27.9, 28.8], [18.9, 19.4, 19.4], [33.6, 35.8, 34.5], [10.1, 9.3, 9.3]]
PAPER_CONFLICT = [[37.8, 39.1, 39.1], [28.3, 28.9, 31.0], [37.2, 39.4, 36.9], [16.6, 16.6, 17.6]]


@pytest.mark.parametrize(
    ("ratings", "kind", "icc", "low", "high", "tol"),
    [
        # Shrout & Fleiss (1979) Table 2; bounds as printed by R psych::ICC (3 decimals / 2 decimals).
        pytest.param(SHROUT_FLEISS, "2,1", 0.29, 0.019, 0.76, 5e-3, id="shrout-fleiss-2-1"),
        pytest.param(SHROUT_FLEISS, "2,k", 0.62, 0.071, 0.93, 5e-3, id="shrout-fleiss-2-k"),
        # The paper's reported ICC(2,k) [95% CI] for the three metrics.
        pytest.param(PAPER_LOOSE_IAS, "2,k", 0.809, 0.11, 0.99, 5e-3, id="paper-loose-ias"),
        pytest.param(PAPER_REJECT, "2,k", 0.999, 0.99, 1.00, 5e-3, id="paper-reject-acc"),
        pytest.param(PAPER_CONFLICT, "2,k", 0.996, 0.98, 1.00, 5e-3, id="paper-conflict-acc"),
    ],
)
def test_icc_published_values(ratings: list, kind: str, icc: float, low: float, high: float, tol: float) -> None:
    got = S.icc(np.asarray(ratings), kind=kind)  # type: ignore[arg-type]
    assert (got.icc, got.ci_low, got.ci_high) == pytest.approx((icc, low, high), abs=tol)


def _anova_mean_squares(r: np.ndarray) -> tuple[float, float, float, float, float]:
    """MS_targets, MS_raters, MS_error, F_targets, p_targets from statsmodels' two-way additive ANOVA."""
    n, k = r.shape
    data = pd.DataFrame({"y": r.ravel(), "t": np.repeat(np.arange(n), k).astype(str), "j": np.tile(np.arange(k), n).astype(str)})
    tab = sm_anova.anova_lm(ols("y ~ C(t) + C(j)", data=data).fit())
    ms = tab["sum_sq"] / tab["df"]
    return ms["C(t)"], ms["C(j)"], ms["Residual"], tab.loc["C(t)", "F"], tab.loc["C(t)", "PR(>F)"]


@pytest.mark.parametrize(
    "ratings",
    [
        pytest.param(SHROUT_FLEISS, id="shrout-fleiss"),
        pytest.param(PAPER_LOOSE_IAS, id="paper-loose-ias"),
        pytest.param(np.random.default_rng(3).normal(size=(15, 5)) + np.arange(15)[:, None] * 0.3, id="random-15x5"),
    ],
)
def test_icc_matches_anova_decomposition(ratings: list) -> None:
    r = np.asarray(ratings, float)
    n, k = r.shape
    msr, msc, mse, f, p = _anova_mean_squares(r)
    single, average = S.icc(r, "2,1"), S.icc(r, "2,k")
    assert single.icc == pytest.approx((msr - mse) / (msr + (k - 1) * mse + k * (msc - mse) / n), abs=TOL)
    assert average.icc == pytest.approx((msr - mse) / (msr + (msc - mse) / n), abs=TOL)
    assert (single.f_stat, single.p_value) == pytest.approx((f, p), abs=TOL)
    assert (single.df1, single.df2) == (n - 1, (n - 1) * (k - 1))
    # ICC(2,k) bounds are the ICC(2,1) bounds stepped up by Spearman-Brown.
    step_up = [x * k / (1 + (k - 1) * x) for x in (single.ci_low, single.ci_high)]
    assert (average.ci_low, average.ci_high) == pytest.approx(step_up, abs=TOL)


@pytest.mark.parametrize(
    ("ratings", "icc", "low", "high"),
    [
        pytest.param([[1, 1], [3, 3], [5, 5]], 1.0, 1.0, 1.0, id="identical-raters"),
        pytest.param([[1, 2], [3, 4], [5, 6]], 0.9411764705882353, 0.0196, 0.9984, id="constant-offset"),
    ],
)
def test_icc_zero_residual(ratings: list, icc: float, low: float, high: float) -> None:
    got = S.icc(np.asarray(ratings, float), "2,k")
    assert got.icc == pytest.approx(icc, abs=TOL)
    assert (got.ci_low, got.ci_high) == pytest.approx((low, high), abs=5e-4)
    assert got.f_stat == np.inf


def _mcgraw_wong_average(r: np.ndarray, confidence: float = 0.95) -> tuple[float, float, float]:
    """ICC(A,k) and its CI written out from McGraw & Wong (1996) Table 7 (case 2A, average measures), on MS from
    statsmodels' ANOVA: Lower = n(MSR - F_L MSE) / (F_L (MSC - MSE) + n MSR), Upper = n(F_U MSR - MSE) /
    (MSC - MSE + n F_U MSR), Satterthwaite v from ICC(A,1) (as pingouin / R psych)."""
    n, k = r.shape
    msr, msc, mse, _f, _p = _anova_mean_squares(r)
    rho = (msr - mse) / (msr + (k - 1) * mse + k * (msc - mse) / n)
    a, b = k * rho / (n * (1 - rho)), 1 + k * rho * (n - 1) / (n * (1 - rho))
    v = (a * msc + b * mse) ** 2 / ((a * msc) ** 2 / (k - 1) + (b * mse) ** 2 / ((n - 1) * (k - 1)))
    alpha = 1 - confidence
    f_l, f_u = ss.f.ppf(1 - alpha / 2, n - 1, v), ss.f.ppf(1 - alpha / 2, v, n - 1)
    low = n * (msr - f_l * mse) / (f_l * (msc - mse) + n * msr)
    high = n * (f_u * msr - mse) / (msc - mse + n * f_u * msr)
    return (msr - mse) / (msr + (msc - mse) / n), low, high


@pytest.mark.parametrize(
    "ratings",
    [
        pytest.param([[75, 70], [40, 45], [60, 50]], id="three-models-two-judges"),
        pytest.param([[89.6, 89.0, 91.9], [86.0, 86.2, 90.4], [84.9, 89.1, 88.3], [82.7, 83.8, 85.8]], id="paper-4x3"),
        pytest.param(SHROUT_FLEISS, id="shrout-fleiss"),
        pytest.param(np.random.default_rng(11).normal(size=(8, 4)) + np.arange(8)[:, None], id="random-8x4"),
    ],
)
def test_icc_2k_matches_mcgraw_wong_average_measures(ratings: list) -> None:
    r = np.asarray(ratings, float)
    got = S.icc(r, "2,k")
    assert (got.icc, got.ci_low, got.ci_high) == pytest.approx(_mcgraw_wong_average(r), abs=1e-9)
    assert got.note == ""


# Perfect agreement on scores that are not exact binary fractions: the residual sum of squares is rounding noise.
PERFECT_FLOATS = [[89.6, 89.6, 89.6], [86.0, 86.0, 86.0], [84.9, 84.9, 84.9], [82.7, 82.7, 82.7]]


@pytest.mark.parametrize("kind", ["2,1", "2,k"])
@pytest.mark.parametrize(
    "ratings",
    [pytest.param(PERFECT_FLOATS, id="tenths"), pytest.param([[75.0, 75.0], [100 / 3, 100 / 3], [50.0, 50.0]], id="thirds")],
)
def test_icc_perfect_agreement_is_one_with_degenerate_ci(ratings: list, kind: str) -> None:
    got = S.icc(np.asarray(ratings, float), kind)  # type: ignore[arg-type]
    assert (got.icc, got.ci_low, got.ci_high, got.f_stat, got.p_value) == (1.0, 1.0, 1.0, np.inf, 0.0)
    assert "zero residual variance" in got.note


# Small designs where the F-based bounds leave [-1, 1] or the Spearman-Brown step-up of a bound below -1/(k-1)
# flips sign (the old code reported e.g. ICC(2,k) 0.41 with CI [-7.4, 0.96], or -17.5 with CI [4.9, 0.80]).
@pytest.mark.parametrize(
    ("ratings", "kind", "icc", "low", "high", "note"),
    [
        # 3 models x 2 judges ranking them in opposite order: ICC(2,1) = -3 -> shown as -1.
        pytest.param([[1, 5], [5, 1], [3, 3]], "2,1", -1.0, -1.0, -1.0, "below -1", id="opposite-2-1"),
        pytest.param([[1, 5], [5, 1], [3, 3]], "2,k", -1.0, -1.0, -1.0, "below -1", id="opposite-2-k"),
        # 2 models x 2 judges: ICC(2,1) [-0.631, 0.99972]; the step-up of -0.631 is -3.41 -> -1.
        pytest.param([[75, 75], [25, 50]], "2,k", 8 / 9, -1.0, 0.99986063, "clipped", id="two-models-2-k"),
        # 4 x 3: ICC(2,1) -0.461 [-0.721, 0.574]; -0.721 < -1/(k-1) steps up to -inf, -0.461 to -17.5, 0.574 to 0.801.
        pytest.param([[1, 5, 2], [5, 1, 4], [3, 3, 1], [2, 4, 5]], "2,k", -1.0, -1.0, 0.80141249, "below -1",
                     id="four-models-negative"),
    ],
)
def test_icc_small_designs_stay_in_range(ratings: list, kind: str, icc: float, low: float, high: float, note: str) -> None:
    got = S.icc(np.asarray(ratings, float), kind)  # type: ignore[arg-type]
    assert (got.icc, got.ci_low, got.ci_high) == pytest.approx((icc, low, high), abs=1e-6)
    assert note in got.note


def test_icc_bounds_always_ordered_and_in_range_for_few_targets() -> None:
    """2 to 4 models x 2 to 3 judges, 2,000 random draws: every CI is finite, within [-1, 1] and holds the estimate."""
    rng = np.random.default_rng(5)
    for _ in range(1000):
        n, k = int(rng.integers(2, 5)), int(rng.integers(2, 4))
        r = rng.normal(size=(n, k)) + rng.normal(size=(n, 1)) * rng.uniform(0, 3)
        for kind in ("2,1", "2,k"):
            got = S.icc(r, kind)  # type: ignore[arg-type]
            assert np.isfinite([got.icc, got.ci_low, got.ci_high]).all(), (r, kind, got)
            assert -1.0 <= got.ci_low <= got.icc <= got.ci_high <= 1.0, (r, kind, got)


# --------------------------------------------------------------------------- Spearman

SPEARMAN_CASES = [
    pytest.param([1, 2, 3, 4, 5, 6], [2, 1, 4, 3, 6, 5], id="monotone-noise"),
    pytest.param([1, 2, 2, 3, 3, 3, 4], [7, 5, 5, 4, 2, 2, 1], id="ties-negative"),
    pytest.param([0.1, 0.4, 0.35, 0.8, 0.7], [1, 2, 3, 4, 5], id="floats"),
    pytest.param([1, 2, 3, 4], [10, 20, 30, 40], id="perfect"),
    pytest.param([1, 2, 3, 4], [40, 30, 20, 10], id="perfect-negative"),
    pytest.param(list(np.random.default_rng(5).normal(size=40)), list(np.random.default_rng(6).normal(size=40)), id="random-40"),
]


@pytest.mark.parametrize(("x", "y"), SPEARMAN_CASES)
@pytest.mark.parametrize("alternative", ["two-sided", "greater", "less"])
def test_spearman_matches_scipy(x: list, y: list, alternative: str) -> None:
    ref = ss.spearmanr(x, y, alternative=alternative)
    got = S.spearman(x, y, alternative=alternative)  # type: ignore[arg-type]
    assert (got.rho, got.p_value) == pytest.approx((ref.statistic, ref.pvalue), abs=TOL)
    assert got.n == len(x)


@pytest.mark.parametrize(
    ("matrix", "avg_rho"),
    [
        pytest.param(PAPER_LOOSE_IAS, 0.600, id="paper-loose-ias"),
        pytest.param(PAPER_REJECT, 1.000, id="paper-reject-acc"),
        pytest.param(PAPER_CONFLICT, 0.867, id="paper-conflict-acc"),
    ],
)
def test_spearman_reproduces_paper_average_over_judge_pairs(matrix: list, avg_rho: float) -> None:
    m = np.asarray(matrix)
    rhos = [S.spearman(m[:, i], m[:, j]).rho for i, j in [(0, 1), (0, 2), (1, 2)]]
    assert np.mean(rhos) == pytest.approx(avg_rho, abs=5e-4)


# --------------------------------------------------------------------------- McNemar


@pytest.mark.parametrize(
    ("cells", "method"),
    [
        pytest.param((40, 9, 3, 48), "exact", id="exact-12-discordant"),
        pytest.param((10, 12, 12, 6), "exact", id="exact-tied-clipped-at-1"),
        pytest.param((30, 20, 4, 46), "exact", id="exact-24-discordant-boundary"),
        pytest.param((30, 20, 5, 45), "chi2", id="chi2-25-discordant-boundary"),
        pytest.param((200, 61, 35, 151), "chi2", id="chi2-paper-sized-447"),
        pytest.param((100, 15, 15, 20), "chi2", id="chi2-equal-discordant"),
    ],
)
def test_mcnemar_two_sided_matches_statsmodels(cells: tuple[int, int, int, int], method: str) -> None:
    both, a_only, b_only, neither = cells
    ref = sm_mcnemar([[both, a_only], [b_only, neither]], exact=method == "exact", correction=True)
    got = S.mcnemar(*binary_pairs(*cells))
    assert got.method == method
    assert (got.statistic, got.p_value) == pytest.approx((ref.statistic, ref.pvalue), abs=TOL)
    assert (got.a_only, got.b_only) == (a_only, b_only)


@pytest.mark.parametrize(
    ("cells", "alternative"),
    [
        pytest.param((40, 9, 3, 48), "greater", id="a-better-greater"),
        pytest.param((40, 9, 3, 48), "less", id="a-better-less"),
        pytest.param((40, 2, 10, 48), "less", id="b-better-less"),
    ],
)
def test_mcnemar_one_sided_exact_matches_binomtest(cells: tuple[int, int, int, int], alternative: str) -> None:
    _, a_only, b_only, _ = cells
    ref = ss.binomtest(a_only, a_only + b_only, 0.5, alternative=alternative)
    got = S.mcnemar(*binary_pairs(*cells), alternative=alternative)  # type: ignore[arg-type]
    assert (got.method, got.statistic) == ("exact", a_only)
    assert got.p_value == pytest.approx(ref.pvalue, abs=TOL)


# Hand-worked z branch: a_only=30, b_only=15, m=45, D=15.
#   greater: z = (15 - 1) / sqrt(45) = 2.08700..., p = 1 - Phi(z)
#   less:    z = (15 + 1) / sqrt(45) = 2.38514..., p = Phi(z)
@pytest.mark.parametrize(
    ("alternative", "z"),
    [
        pytest.param("greater", 14 / np.sqrt(45), id="greater"),
        pytest.param("less", 16 / np.sqrt(45), id="less"),
    ],
)
def test_mcnemar_one_sided_z_hand_worked(alternative: str, z: float) -> None:
    got = S.mcnemar(*binary_pairs(100, 30, 15, 50), alternative=alternative)  # type: ignore[arg-type]
    expected_p = ss.norm.sf(z) if alternative == "greater" else ss.norm.cdf(z)
    assert (got.method, got.statistic, got.p_value) == ("z", pytest.approx(z, abs=TOL), pytest.approx(expected_p, abs=TOL))
    # the one-sided p halves the two-sided chi-square p in the direction of the effect
    if alternative == "greater":
        assert got.p_value == pytest.approx(S.mcnemar(*binary_pairs(100, 30, 15, 50)).p_value / 2, abs=TOL)


def test_mcnemar_no_discordant_pairs_is_p_one() -> None:
    got = S.mcnemar([1, 0, 1], [1, 0, 1])
    assert (got.p_value, got.method, got.a_only, got.b_only) == (1.0, "exact", 0, 0)


# --------------------------------------------------------------------------- two proportions


@pytest.mark.parametrize(
    ("k1", "n1", "k2", "n2", "method"),
    [
        pytest.param(50, 157, 20, 69, "chi2_yates", id="chi2-paper-rejection-sizes"),
        pytest.param(70, 113, 60, 193, "chi2_yates", id="chi2-paper-conflict-sizes"),
        pytest.param(6, 20, 14, 20, "chi2_yates", id="chi2-small-but-expected-ge-5"),
        pytest.param(2, 8, 7, 9, "fisher", id="fisher-small"),
        pytest.param(1, 40, 0, 30, "fisher", id="fisher-near-zero"),
        pytest.param(0, 10, 0, 12, "fisher", id="fisher-zero-column"),
        pytest.param(3, 4, 1, 4, "fisher", id="fisher-tea-tasting"),
    ],
)
def test_two_proportions_matches_scipy(k1: int, n1: int, k2: int, n2: int, method: str) -> None:
    table = np.array([[k1, n1 - k1], [k2, n2 - k2]])
    got = S.two_proportions(k1, n1, k2, n2)
    assert got.method == method
    if method == "chi2_yates":
        ref = ss.chi2_contingency(table, correction=True)
        assert (got.statistic, got.p_value) == pytest.approx((ref.statistic, ref.pvalue), abs=TOL)
    else:
        assert got.p_value == pytest.approx(ss.fisher_exact(table).pvalue, abs=TOL)
    low, high = confint_proportions_2indep(k1, n1, k2, n2, method="wald", compare="diff")
    assert (got.diff, got.ci_low, got.ci_high) == pytest.approx((k1 / n1 - k2 / n2, low, high), abs=TOL)


def test_two_proportions_fisher_tea_tasting_hand_worked() -> None:
    # Lady tasting tea, table [[3, 1], [1, 3]]: P(table) = C(4,3)C(4,1)/C(8,4) = 16/70; the tables as or
    # less likely are a=3 and a=1 (16/70 each) and a=4 and a=0 (1/70 each): p = 34/70.
    got = S.two_proportions(3, 4, 1, 4)
    assert (got.p_value, got.statistic) == (pytest.approx(34 / 70, abs=TOL), pytest.approx(9.0, abs=TOL))


# --------------------------------------------------------------------------- bootstrap

RNG = np.random.default_rng(11)
BASE = RNG.random(500)
CORRELATED = BASE + RNG.normal(0.05, 0.02, 500)


@pytest.mark.parametrize(
    ("stat", "samples", "paired", "estimate"),
    [
        pytest.param(S.mean, (BASE,), True, BASE.mean(), id="one-sample-mean"),
        pytest.param(S.mean_diff, (CORRELATED, BASE), True, (CORRELATED - BASE).mean(), id="paired-mean-diff"),
        pytest.param(S.mean_diff, (CORRELATED, BASE[:300]), False, CORRELATED.mean() - BASE[:300].mean(), id="independent-unequal-n"),
    ],
)
def test_bootstrap_deterministic_and_brackets_estimate(stat, samples: tuple, paired: bool, estimate: float) -> None:
    first = S.bootstrap_ci(stat, *samples, paired=paired, n_resamples=2000, seed=3)
    again = S.bootstrap_ci(stat, *samples, paired=paired, n_resamples=2000, seed=3)
    other = S.bootstrap_ci(stat, *samples, paired=paired, n_resamples=2000, seed=4)
    assert first == again
    assert first != other
    assert first.estimate == pytest.approx(estimate, abs=TOL)
    assert first.ci_low < first.estimate < first.ci_high


@pytest.mark.parametrize(
    ("paired", "max_width"),
    [
        pytest.param(True, 0.01, id="paired-shares-indices"),
        pytest.param(False, 1.0, id="independent-is-wide"),
    ],
)
def test_bootstrap_pairing(paired: bool, max_width: float) -> None:
    got = S.bootstrap_ci(S.mean_diff, CORRELATED, BASE, paired=paired, n_resamples=2000, seed=1)
    sd = (CORRELATED - BASE).std(ddof=1) if paired else np.sqrt(CORRELATED.var(ddof=1) / 500 + BASE.var(ddof=1) / 500) * np.sqrt(500)
    normal_half = 1.96 * sd / np.sqrt(500)
    assert got.ci_high - got.ci_low < max_width
    assert (got.ci_high - got.ci_low) / 2 == pytest.approx(normal_half, rel=0.15)


def test_bootstrap_paired_constant_shift_has_zero_width() -> None:
    got = S.bootstrap_ci(S.mean_diff, BASE + 0.25, BASE, n_resamples=500, seed=0)
    assert (got.ci_low, got.ci_high) == pytest.approx((0.25, 0.25), abs=TOL)


def test_bootstrap_result_does_not_depend_on_chunking(monkeypatch: pytest.MonkeyPatch) -> None:
    whole = S.bootstrap_ci(S.mean_diff, CORRELATED, BASE, n_resamples=1500, seed=9)
    monkeypatch.setattr(S, "_BOOTSTRAP_CHUNK_CELLS", 7 * 500 + 3)
    assert S.bootstrap_ci(S.mean_diff, CORRELATED, BASE, n_resamples=1500, seed=9) == whole


@pytest.mark.parametrize(
    ("stat", "samples", "paired", "match"),
    [
        pytest.param(lambda x: x.mean(), (BASE,), True, "must return shape", id="stat-reduces-everything"),
        pytest.param(lambda x: x, (BASE,), True, "must return shape", id="stat-does-not-reduce"),
        pytest.param(S.mean_diff, (BASE, BASE[:10]), True, "same length", id="paired-length-mismatch"),
        pytest.param(S.mean, (), True, "at least one sample", id="no-samples"),
        pytest.param(S.mean, ([],), True, "empty", id="empty-sample"),
    ],
)
def test_bootstrap_rejects_bad_input(stat, samples: tuple, paired: bool, match: str) -> None:
    with pytest.raises(ValueError, match=match):
        S.bootstrap_ci(stat, *samples, paired=paired, n_resamples=10)


# --------------------------------------------------------------------------- paired t and TOST

PAIRS = [
    pytest.param([0.36, 0.41, 0.29, 0.44, 0.38, 0.31], [0.32, 0.35, 0.30, 0.40, 0.33, 0.29], id="six-models"),
    pytest.param(list(RNG.normal(0.5, 0.1, 13)), list(RNG.normal(0.48, 0.1, 13)), id="thirteen-models"),
    pytest.param([1, 2, 3], [3, 2, 0], id="three-ints"),
]


@pytest.mark.parametrize(("a", "b"), PAIRS)
@pytest.mark.parametrize("alternative", ["two-sided", "greater", "less"])
def test_paired_t_matches_scipy(a: list, b: list, alternative: str) -> None:
    ref = ss.ttest_rel(a, b, alternative=alternative)
    got = S.paired_t(a, b, alternative=alternative)  # type: ignore[arg-type]
    d = np.subtract(a, b)
    assert (got.t, got.p_value, got.df) == pytest.approx((ref.statistic, ref.pvalue, ref.df), abs=TOL)
    assert got.cohen_dz == pytest.approx(d.mean() / d.std(ddof=1), abs=TOL)


def test_paired_t_dz_hand_worked() -> None:
    # a - b = (-2, 0, 3): mean 1/3, sd = sqrt(((-7/3)^2 + (1/3)^2 + (8/3)^2) / 2) = sqrt(19/3)
    got = S.paired_t([1, 2, 3], [3, 2, 0])
    assert got.cohen_dz == pytest.approx((1 / 3) / np.sqrt(19 / 3), abs=TOL)
    assert got.t == pytest.approx((1 / 3) / (np.sqrt(19 / 3) / np.sqrt(3)), abs=TOL)


@pytest.mark.parametrize(
    ("diffs", "margin", "equivalent"),
    [
        pytest.param([-0.05, 0.02, -0.04, 0.01, -0.06, -0.03, 0.0, -0.02, -0.05, 0.01], 0.2, True, id="tight-equivalent"),
        pytest.param([-0.3, 0.25, -0.1, 0.2, -0.35, 0.15], 0.2, False, id="noisy-not-equivalent"),
        pytest.param([0.10, 0.20, 0.12, 0.19, 0.14], 0.2, False, id="shifted-near-bound"),
        pytest.param(list(RNG.normal(-0.04, 0.1, 27)), 0.2, True, id="natural-sized-27"),
    ],
)
def test_tost_matches_statsmodels(diffs: list, margin: float, equivalent: bool) -> None:
    got = S.tost(diffs, margin)
    d = np.asarray(diffs)
    p, lower, upper = DescrStatsW(d).ttost_mean(-margin, margin)
    p_paired, *_ = ttost_paired(d, np.zeros_like(d), -margin, margin)
    low, high = DescrStatsW(d).tconfint_mean(alpha=0.05)
    assert (got.p_value, got.p_lower, got.p_upper) == pytest.approx((p, lower[1], upper[1]), abs=TOL)
    assert got.p_value == pytest.approx(p_paired, abs=TOL)
    assert (got.ci_low, got.ci_high, got.confidence) == pytest.approx((low, high, 0.95), abs=TOL)
    assert got.equivalent is equivalent


def test_tost_95_rule_is_stricter_than_90() -> None:
    # mean 0.15, sd 0.0436, se 0.0195 (n=5): 95% upper 0.15 + 2.776*0.0195 = 0.204 > 0.2,
    # 90% upper 0.15 + 2.132*0.0195 = 0.192 < 0.2
    diffs = [0.10, 0.20, 0.12, 0.19, 0.14]
    strict, loose = S.tost(diffs, 0.2), S.tost(diffs, 0.2, confidence=0.90)
    assert not strict.equivalent and loose.equivalent
    assert loose.p_value < 0.05  # TOST at alpha=0.05 agrees with the 90% CI rule


@pytest.mark.parametrize(
    ("low", "high", "margin", "expected"),
    [
        pytest.param(-0.19, 0.05, 0.2, True, id="inside"),
        pytest.param(-0.21, 0.05, 0.2, False, id="below"),
        pytest.param(-0.1, 0.2, 0.2, True, id="touching-bound"),
    ],
)
def test_equivalent_by_ci(low: float, high: float, margin: float, expected: bool) -> None:
    assert S.equivalent_by_ci(low, high, margin) is expected


# --------------------------------------------------------------------------- Bonferroni and Holm


MULTIPLE_TESTING_CASES = [
    ("bonferroni", [0.001, 0.01, 0.02, 0.2, 0.5], 0.05, "five"),
    ("bonferroni", [0.0004, 0.003, 0.006, 0.9, 0.04, 0.01, 0.005, 0.2, 0.0049, 0.05], 0.05, "paper-ten-planned"),
    ("bonferroni", [0.3], 0.05, "single"),
    ("bonferroni", [0.01, 0.02], 0.01, "alpha-0.01"),
    ("holm", [0.01, 0.04, 0.03, 0.005], 0.05, "four-mixed"),
    ("holm", [0.2, 0.2, 0.01], 0.05, "ties"),
    ("holm", [0.5], 0.05, "single"),
    ("holm", [0.001, 0.9, 0.02, 0.0125], 0.05, "step-down-stops"),
    ("holm", [0.6, 0.7], 0.05, "capped-at-one"),
]


@pytest.mark.parametrize(("method", "pvalues", "alpha"), [c[:3] for c in MULTIPLE_TESTING_CASES],
                         ids=[f"{c[0]}-{c[3]}" for c in MULTIPLE_TESTING_CASES])
def test_multiple_testing_matches_statsmodels(method: str, pvalues: list, alpha: float) -> None:
    reject, adjusted, *_ = multipletests(pvalues, alpha=alpha, method=method)
    got = getattr(S, method)(pvalues, alpha)
    np.testing.assert_allclose(got.adjusted, adjusted, atol=TOL)
    np.testing.assert_array_equal(got.reject, reject)
    assert got.adjusted.max() <= 1.0


# --------------------------------------------------------------------------- input validation


@pytest.mark.parametrize(
    ("func", "args", "match"),
    [
        pytest.param(S.cohen_kappa, ([1, 0], [1]), "same length", id="kappa-length"),
        pytest.param(S.cohen_kappa, ([], []), "empty", id="kappa-empty"),
        pytest.param(S.icc, ([1, 2, 3],), "2-D", id="icc-1d"),
        pytest.param(S.icc, ([[1, 2]],), "at least 2 targets", id="icc-one-target"),
        pytest.param(S.icc, ([[1, 1], [1, 1]],), "undefined", id="icc-constant"),
        pytest.param(S.icc, ([[1, 5], [5, 1]],), "undefined", id="icc-2x2-opposite"),
        pytest.param(S.icc, ([[1, np.nan], [2, 3]],), "NaN", id="icc-nan"),
        pytest.param(S.spearman, ([1, 2, 3], [1, 2]), "same length", id="spearman-length"),
        pytest.param(S.spearman, ([1, 1, 1], [1, 2, 3]), "constant", id="spearman-constant"),
        pytest.param(S.spearman, ([1, 2], [2, 1]), "at least 3", id="spearman-too-short"),
        pytest.param(S.mcnemar, ([1, 0, 2], [1, 0, 1]), "0/1", id="mcnemar-nonbinary"),
        pytest.param(S.mcnemar, ([1, 0], [1, 0, 1]), "same length", id="mcnemar-length"),
        pytest.param(S.two_proportions, (5, 4, 1, 4), "0 <= k <= n", id="props-k-gt-n"),
        pytest.param(S.two_proportions, (1, 0, 1, 4), "n >= 1", id="props-zero-n"),
        pytest.param(S.paired_t, ([1, 2, 3], [1, 2]), "same length", id="ttest-length"),
        pytest.param(S.paired_t, ([1, 2, 3], [0, 1, 2]), "zero variance", id="ttest-zero-variance"),
        pytest.param(S.paired_t, ([], []), "empty", id="ttest-empty"),
        pytest.param(S.tost, ([0.1, 0.2], -0.2), "margin", id="tost-negative-margin"),
        pytest.param(S.tost, ([0.1], 0.2), "at least 2", id="tost-one-diff"),
        pytest.param(S.bonferroni, ([0.1, 1.5],), r"\[0, 1\]", id="bonferroni-out-of-range"),
        pytest.param(S.bonferroni, ([],), "empty", id="bonferroni-empty"),
    ],
)
def test_invalid_input_raises(func, args: tuple, match: str) -> None:
    with pytest.raises(ValueError, match=match):
        func(*args)
