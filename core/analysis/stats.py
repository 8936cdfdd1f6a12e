"""Statistics for comparing LLMs behind a RAG system: agreement, reliability, paired and independent tests.

Every function is pure, takes numpy-compatible arrays and returns a small frozen dataclass.
Reference implementations the tests compare against (to 1e-9 where defined): scipy.stats,
statsmodels, and hand-worked examples. Invalid input (empty arrays, length mismatch,
out-of-range values) raises ValueError with a message naming the argument.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np
from numpy.typing import ArrayLike, NDArray
from scipy import stats as st

from core.metrics import MetricDeclaration

Alternative = Literal["two-sided", "greater", "less"]
_ALTERNATIVES = ("two-sided", "greater", "less")
MCNEMAR_EXACT_BELOW = 25  # discordant pairs below this use the exact binomial test
FISHER_BELOW_EXPECTED = 5.0  # any expected cell count below this switches to Fisher's exact test
_FISHER_REL_TOL = 1 + 1e-7  # tables this close in probability to the observed one count as "as extreme"
_BOOTSTRAP_CHUNK_CELLS = 2_000_000  # resampled cells per chunk; bounds memory, not results


# --------------------------------------------------------------------------- validation


def _as_1d(x: ArrayLike, name: str) -> NDArray:
    """Return x as a non-empty 1-D array without NaN, or raise ValueError."""
    arr = np.asarray(x)
    if arr.ndim != 1:
        raise ValueError(f"{name} must be 1-D, got shape {arr.shape}")
    if arr.size == 0:
        raise ValueError(f"{name} is empty")
    if arr.dtype.kind in "fc" and np.isnan(arr).any():
        raise ValueError(f"{name} contains NaN")
    return arr


def _as_numeric_1d(x: ArrayLike, name: str) -> NDArray[np.float64]:
    """Return x as a non-empty finite float 1-D array, or raise ValueError."""
    arr = _as_1d(x, name)
    if arr.dtype.kind not in "biuf":
        raise ValueError(f"{name} must be numeric, got dtype {arr.dtype}")
    arr = arr.astype(np.float64)
    if not np.isfinite(arr).all():
        raise ValueError(f"{name} contains non-finite values")
    return arr


def _same_length(a: NDArray, b: NDArray, names: str) -> None:
    """Raise ValueError when two paired arrays differ in length."""
    if a.shape[0] != b.shape[0]:
        raise ValueError(f"{names} must have the same length, got {a.shape[0]} and {b.shape[0]}")


def _as_binary(x: ArrayLike, name: str) -> NDArray[np.bool_]:
    """Return x as a boolean array; values must be 0/1 or True/False."""
    arr = _as_1d(x, name)
    if arr.dtype.kind not in "biuf" or not np.isin(arr, (0, 1)).all():
        raise ValueError(f"{name} must contain only 0/1 or booleans")
    return arr.astype(bool)


def _check_confidence(confidence: float) -> None:
    """Raise ValueError unless 0 < confidence < 1."""
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"confidence must be in (0, 1), got {confidence}")


def _check_alternative(alternative: str) -> None:
    """Raise ValueError for an unknown alternative hypothesis."""
    if alternative not in _ALTERNATIVES:
        raise ValueError(f"alternative must be one of {_ALTERNATIVES}, got {alternative!r}")


def _z(confidence: float) -> float:
    """Two-sided standard-normal critical value for a confidence level."""
    return float(st.norm.ppf(0.5 + confidence / 2))


# --------------------------------------------------------------------------- Cohen's kappa


@dataclass(frozen=True)
class KappaResult:
    """Cohen's kappa with its asymptotic CI, observed and chance agreement."""

    kappa: float
    se: float
    ci_low: float
    ci_high: float
    agreement: float  # observed proportion of items on which the raters agree
    expected_agreement: float  # chance agreement from the raters' marginals
    n: int
    degenerate: bool  # True when chance agreement is 1 (both raters used one and the same label)


def cohen_kappa(a: ArrayLike, b: ArrayLike, confidence: float = 0.95) -> KappaResult:
    """Unweighted Cohen's kappa between two raters' labels (any hashable categories, binary or multi-class).

    The standard error is the large-sample (non-null) SE of Fleiss, Cohen & Everitt (1969), the one
    statsmodels reports as ``std_kappa``; the CI is kappa +/- z * SE (not clipped).
    Degenerate case: if both raters gave every item the same single label, chance agreement is 1 and
    kappa is 0/0. We then return kappa=1.0 (agreement is perfect), se=0, CI=(1, 1) and degenerate=True.
    """
    _check_confidence(confidence)
    x, y = _as_1d(a, "a"), _as_1d(b, "b")
    _same_length(x, y, "a and b")
    _, codes = np.unique(np.concatenate([x, y]), return_inverse=True)
    n, n_cat = x.shape[0], int(codes.max()) + 1
    table = np.zeros((n_cat, n_cat))
    np.add.at(table, (codes[:n], codes[n:]), 1.0)
    probs = table / n
    rows, cols = probs.sum(axis=1), probs.sum(axis=0)
    p_o, p_e = float(np.trace(probs)), float(rows @ cols)
    if n_cat == 1:
        return KappaResult(1.0, 0.0, 1.0, 1.0, p_o, 1.0, n, True)
    kappa = (p_o - p_e) / (1 - p_e)
    diag = np.diag(probs) * (1 - (rows + cols) * (1 - kappa)) ** 2
    off = probs * (cols[:, None] + rows[None, :]) ** 2
    np.fill_diagonal(off, 0.0)
    var = (diag.sum() + (1 - kappa) ** 2 * off.sum() - (kappa - p_e * (1 - kappa)) ** 2) / ((1 - p_e) ** 2 * n)
    se = float(np.sqrt(max(var, 0.0)))
    half = _z(confidence) * se
    kappa = float(kappa)
    return KappaResult(kappa, se, kappa - half, kappa + half, p_o, p_e, n, False)


# --------------------------------------------------------------------------- ICC


@dataclass(frozen=True)
class ICCResult:
    """Shrout & Fleiss ICC(2,1) or ICC(2,k) with its F test and McGraw & Wong CI, within [-1, 1]."""

    icc: float
    ci_low: float
    ci_high: float
    kind: str
    f_stat: float  # MS_targets / MS_error
    df1: int
    df2: int
    p_value: float
    n_targets: int
    k_raters: int
    note: str = ""  # why the estimate or CI is degenerate or was clipped; empty when neither


_ROUNDING_SS = 1e-12  # a sum of squares below this share of the total is floating-point noise, taken as 0


def _two_way_mean_squares(r: NDArray[np.float64]) -> tuple[float, float, float]:
    """Two-way ANOVA without replication: (MS_targets, MS_raters, MS_error) of an (n, k) matrix."""
    n, k = r.shape
    grand = r.mean()
    rows, cols = r.mean(axis=1), r.mean(axis=0)
    ss_total = ((r - grand) ** 2).sum()
    ss_rows = k * ((rows - grand) ** 2).sum()
    ss_cols = n * ((cols - grand) ** 2).sum()
    ss_err = ((r - rows[:, None] - cols[None, :] + grand) ** 2).sum()
    ss_rows, ss_cols, ss_err = (0.0 if ss <= _ROUNDING_SS * ss_total else float(ss) for ss in (ss_rows, ss_cols, ss_err))
    return ss_rows / (n - 1), ss_cols / (k - 1), ss_err / ((n - 1) * (k - 1))


def _satterthwaite_df(icc1: float, msc: float, mse: float, n: int, k: int) -> float:
    """Approximate denominator df of the McGraw & Wong ICC(2,1) CI; its limit k-1 when MS_error is 0."""
    df1, df2 = n - 1, (n - 1) * (k - 1)
    if mse == 0:
        return df2 / df1
    fj = msc / mse
    base = n * (1 + (k - 1) * icc1) - k * icc1
    denom = df1 * k**2 * icc1**2 * fj**2 + base**2
    return df2 * (k * icc1 * fj + base) ** 2 / denom if denom > 0 else np.nan


def _single_rater_ci(msr: float, msc: float, mse: float, n: int, k: int, icc1: float, confidence: float) -> tuple[float, float]:
    """McGraw & Wong (1996) F-based bounds of ICC(A,1) (unclipped; NaN when the Satterthwaite df is not positive)."""
    v = _satterthwaite_df(icc1, msc, mse, n, k)
    if not v > 0:
        return np.nan, np.nan
    alpha = 1 - confidence
    f_up = st.f.ppf(1 - alpha / 2, n - 1, v)
    f_lo = st.f.ppf(1 - alpha / 2, v, n - 1)
    extra = k * msc + (k * n - k - n) * mse
    with np.errstate(invalid="ignore", divide="ignore"):
        low = n * (msr - f_up * mse) / (f_up * extra + n * msr)
        high = n * (f_lo * msr - mse) / (extra + n * f_lo * msr)
    return float(low), float(high)


def _step_up(x: float, k: int) -> float:
    """Spearman-Brown: the reliability of the mean of k raters from a single rater's; -inf at or below -1/(k-1)."""
    denom = 1 + (k - 1) * x
    return k * x / denom if denom > 0 else -np.inf


def _within_unit(value: float, low: float, high: float) -> tuple[float, float, float, list[str]]:
    """Estimate and CI clipped to [-1, 1] with low <= estimate <= high, and notes saying what was changed."""
    notes = []
    if np.isnan(low) or np.isnan(high):
        notes.append("CI undefined for these ratings: shown as the full range [-1, 1]")
        low, high = (-1.0 if np.isnan(low) else low), (1.0 if np.isnan(high) else high)
    if value < -1:
        notes.append("estimate below -1 (the raters disagree more than chance): shown as -1")
    value = min(1.0, max(-1.0, value))
    if low < -1 or high > 1:
        notes.append("CI clipped to [-1, 1]")
    low, high = max(-1.0, min(low, value)), min(1.0, max(high, value))
    return value, low, high, notes


def icc(ratings: ArrayLike, kind: Literal["2,1", "2,k"] = "2,k", confidence: float = 0.95) -> ICCResult:
    """Two-way random-effects, absolute-agreement ICC of ``ratings`` shaped (n_targets, k_raters).

    "2,1" is the reliability of a single rater, "2,k" of the mean of the k raters (Shrout & Fleiss 1979).
    The CI is the F-based interval of McGraw & Wong (1996) with Satterthwaite degrees of freedom
    (as in pingouin and R psych); the ICC(2,k) estimate and bounds are the ICC(2,1) ones stepped up by
    Spearman-Brown (equal to McGraw & Wong's average-measures formulas). The F test is MS_targets / MS_error
    on (n-1, (n-1)(k-1)) df. Exact agreement (zero residual and rater variance) gives 1.0 with the degenerate
    CI [1, 1]. Estimate and bounds are clipped to [-1, 1] with low <= estimate <= high; ``note`` says when.
    A non-positive variance estimate in the ICC(2,1) denominator (e.g. 2 targets x 2 raters in opposite
    order) or no variance between targets raises ValueError: the ICC is undefined.
    """
    _check_confidence(confidence)
    if kind not in ("2,1", "2,k"):
        raise ValueError(f"kind must be '2,1' or '2,k', got {kind!r}")
    r = np.asarray(ratings, dtype=np.float64)
    if r.ndim != 2 or r.shape[0] < 2 or r.shape[1] < 2:
        raise ValueError(f"ratings must be 2-D with at least 2 targets and 2 raters, got shape {r.shape}")
    if not np.isfinite(r).all():
        raise ValueError("ratings contains NaN or infinite values")
    n, k = r.shape
    msr, msc, mse = _two_way_mean_squares(r)
    if msr == 0 and mse == 0:
        raise ValueError("ratings do not vary between targets: ICC is undefined")
    df1, df2 = n - 1, (n - 1) * (k - 1)
    f_stat = msr / mse if mse > 0 else np.inf
    p = float(st.f.sf(f_stat, df1, df2))
    if mse == 0 and msc == 0:
        note = "raters agree exactly (zero residual variance): CI degenerate at 1"
        return ICCResult(1.0, 1.0, 1.0, kind, float(f_stat), df1, df2, p, n, k, note)
    denom = msr + (k - 1) * mse + k * (msc - mse) / n
    if denom <= 0:
        raise ValueError("the raters disagree so much that the ICC's variance estimate is not positive: ICC is undefined")
    value = (msr - mse) / denom
    low, high = _single_rater_ci(msr, msc, mse, n, k, value, confidence)
    if kind == "2,k":
        value, low, high = (_step_up(x, k) for x in (value, low, high))
    value, low, high, notes = _within_unit(value, low, high)
    if mse == 0:
        notes.insert(0, "zero residual variance: the raters differ only by a constant offset")
    return ICCResult(float(value), float(low), float(high), kind, float(f_stat), df1, df2, p, n, k, "; ".join(notes))


# --------------------------------------------------------------------------- Spearman


@dataclass(frozen=True)
class CorrelationResult:
    """A correlation coefficient with its p-value."""

    rho: float
    p_value: float
    n: int


def spearman(x: ArrayLike, y: ArrayLike, alternative: Alternative = "two-sided") -> CorrelationResult:
    """Spearman's rank correlation (average ranks for ties) with the t-approximation p-value of scipy.

    Needs at least 3 pairs; a constant input raises ValueError (the correlation is undefined).
    """
    _check_alternative(alternative)
    a, b = _as_numeric_1d(x, "x"), _as_numeric_1d(y, "y")
    _same_length(a, b, "x and y")
    n = a.shape[0]
    if n < 3:
        raise ValueError(f"spearman needs at least 3 pairs, got {n}")
    if np.ptp(a) == 0 or np.ptp(b) == 0:
        raise ValueError("spearman is undefined for a constant input")
    ra, rb = st.rankdata(a), st.rankdata(b)
    rho = float(np.corrcoef(ra, rb)[0, 1])
    dof = n - 2
    denom = (rho + 1.0) * (1.0 - rho)
    t = rho * np.inf if denom <= 0 else rho * np.sqrt(dof / denom)
    return CorrelationResult(rho, _t_pvalue(float(t), dof, alternative), n)


def _t_pvalue(t: float, dof: float, alternative: str) -> float:
    """p-value of a t statistic for the given alternative."""
    if alternative == "greater":
        return float(st.t.sf(t, dof))
    if alternative == "less":
        return float(st.t.cdf(t, dof))
    return float(min(1.0, 2 * st.t.sf(abs(t), dof)))


# --------------------------------------------------------------------------- McNemar


@dataclass(frozen=True)
class McNemarResult:
    """McNemar's test on paired binary outcomes."""

    statistic: float  # exact: discordant count (see mcnemar); chi2: chi-square; z: signed z
    p_value: float
    method: Literal["exact", "chi2", "z"]
    a_only: int  # pairs where a succeeded and b failed
    b_only: int  # pairs where b succeeded and a failed
    alternative: str


def mcnemar(a: ArrayLike, b: ArrayLike, alternative: Alternative = "two-sided") -> McNemarResult:
    """McNemar's test of a vs b on the same items (1 = success).

    Fewer than 25 discordant pairs: exact binomial test on a_only ~ Bin(a_only + b_only, 1/2);
    two-sided statistic = min(a_only, b_only) with p = min(1, 2 * P(X <= statistic)) (as statsmodels),
    one-sided statistic = a_only. Otherwise two-sided: chi2 = (|a_only - b_only| - 1)^2 / (a_only + b_only)
    on 1 df (continuity-corrected, as statsmodels and R), one-sided: z = (D -/+ 1) / sqrt(a_only + b_only)
    with D = a_only - b_only, corrected towards the null. "greater" means a succeeds more often than b.
    With no discordant pairs the p-value is 1.
    """
    _check_alternative(alternative)
    x, y = _as_binary(a, "a"), _as_binary(b, "b")
    _same_length(x, y, "a and b")
    a_only, b_only = int((x & ~y).sum()), int((~x & y).sum())
    m = a_only + b_only
    if m < MCNEMAR_EXACT_BELOW:
        if m == 0:
            return McNemarResult(0.0, 1.0, "exact", 0, 0, alternative)
        if alternative == "two-sided":
            stat = min(a_only, b_only)
            p = min(1.0, 2 * float(st.binom.cdf(stat, m, 0.5)))
        else:
            stat = a_only
            p = float(st.binom.sf(stat - 1, m, 0.5) if alternative == "greater" else st.binom.cdf(stat, m, 0.5))
        return McNemarResult(float(stat), p, "exact", a_only, b_only, alternative)
    d = a_only - b_only
    if alternative == "two-sided":
        chi2 = (abs(d) - 1) ** 2 / m
        return McNemarResult(chi2, float(st.chi2.sf(chi2, 1)), "chi2", a_only, b_only, alternative)
    if alternative == "greater":
        z = (d - 1) / np.sqrt(m)
        return McNemarResult(float(z), float(st.norm.sf(z)), "z", a_only, b_only, alternative)
    z = (d + 1) / np.sqrt(m)
    return McNemarResult(float(z), float(st.norm.cdf(z)), "z", a_only, b_only, alternative)


# --------------------------------------------------------------------------- two proportions


@dataclass(frozen=True)
class TwoProportionsResult:
    """Comparison of two independent proportions: test, difference and its Wald CI."""

    p1: float
    p2: float
    diff: float  # p1 - p2
    ci_low: float
    ci_high: float
    statistic: float  # Yates chi-square, or the sample odds ratio for Fisher (see two_proportions)
    p_value: float
    method: Literal["chi2_yates", "fisher"]


def _check_counts(k: int, n: int, name: str) -> None:
    """Raise ValueError unless 0 <= k <= n and n >= 1 are integers."""
    if int(k) != k or int(n) != n:
        raise ValueError(f"{name}: counts must be integers, got k={k}, n={n}")
    if n < 1 or not 0 <= k <= n:
        raise ValueError(f"{name}: need n >= 1 and 0 <= k <= n, got k={k}, n={n}")


def _expected(table: NDArray[np.float64]) -> NDArray[np.float64]:
    """Expected counts of a contingency table under independence."""
    return np.outer(table.sum(axis=1), table.sum(axis=0)) / table.sum()


def _yates_chi2(table: NDArray[np.float64]) -> tuple[float, float]:
    """Yates-corrected Pearson chi-square of a 2x2 table, as scipy.stats.chi2_contingency(correction=True)."""
    expected = _expected(table)
    diff = expected - table
    adjusted = table + np.sign(diff) * np.minimum(0.5, np.abs(diff))
    chi2 = float(((adjusted - expected) ** 2 / expected).sum())
    return chi2, float(st.chi2.sf(chi2, 1))


def _fisher_two_sided(table: NDArray[np.float64]) -> float:
    """Two-sided Fisher exact p: total probability of tables no more likely than the observed one."""
    (a, b), (c, d) = table.astype(int)
    row1, col1, total = a + b, a + c, a + b + c + d
    support = np.arange(max(0, row1 + col1 - total), min(row1, col1) + 1)
    pmf = st.hypergeom.pmf(support, total, row1, col1)
    observed = st.hypergeom.pmf(a, total, row1, col1)
    return float(min(1.0, pmf[pmf <= observed * _FISHER_REL_TOL].sum()))


def two_proportions(k1: int, n1: int, k2: int, n2: int, confidence: float = 0.95) -> TwoProportionsResult:
    """Compare k1/n1 with k2/n2 (independent groups) on the 2x2 table [[k1, n1-k1], [k2, n2-k2]].

    Yates-corrected chi-square when every expected count is >= 5, else two-sided Fisher's exact test
    (statistic = sample odds ratio ad/bc, inf when bc = 0 and ad > 0, 0/0 reported as 1.0).
    The CI is the Wald interval p1-p2 +/- z*sqrt(p1(1-p1)/n1 + p2(1-p2)/n2) (not clipped).
    """
    _check_confidence(confidence)
    _check_counts(k1, n1, "group 1")
    _check_counts(k2, n2, "group 2")
    p1, p2 = k1 / n1, k2 / n2
    table = np.array([[k1, n1 - k1], [k2, n2 - k2]], dtype=np.float64)
    half = _z(confidence) * float(np.sqrt(p1 * (1 - p1) / n1 + p2 * (1 - p2) / n2))
    diff = p1 - p2
    if (_expected(table) >= FISHER_BELOW_EXPECTED).all():
        chi2, p = _yates_chi2(table)
        return TwoProportionsResult(p1, p2, diff, diff - half, diff + half, chi2, p, "chi2_yates")
    ad, bc = table[0, 0] * table[1, 1], table[0, 1] * table[1, 0]
    odds = 1.0 if ad == bc == 0 else (np.inf if bc == 0 else ad / bc)
    return TwoProportionsResult(p1, p2, diff, diff - half, diff + half, float(odds), _fisher_two_sided(table), "fisher")


# --------------------------------------------------------------------------- bootstrap

Statistic = Callable[..., NDArray]


@dataclass(frozen=True)
class BootstrapResult:
    """Percentile bootstrap CI around the statistic on the original samples."""

    estimate: float
    ci_low: float
    ci_high: float
    confidence: float
    n_resamples: int


def mean(x: NDArray) -> NDArray:
    """Mean along the last axis (a bootstrap statistic for one sample)."""
    return np.mean(x, axis=-1)


def mean_diff(a: NDArray, b: NDArray) -> NDArray:
    """mean(a) - mean(b) along the last axis (paired or independent bootstrap statistic)."""
    return np.mean(a, axis=-1) - np.mean(b, axis=-1)


def bootstrap_ci(
    stat: Statistic,
    *samples: ArrayLike,
    paired: bool = True,
    n_resamples: int = 10_000,
    seed: int | None = 0,
    confidence: float = 0.95,
) -> BootstrapResult:
    """Percentile bootstrap CI of ``stat(*samples)``, vectorised and deterministic for a seed.

    Contract: ``stat`` receives one array per sample, each shaped (r, n_i) with resamples on the leading
    axis, and returns shape (r,); reducing along ``axis=-1`` satisfies it (see ``mean``, ``mean_diff``).
    It is also called once with r=1 on the original samples for ``estimate``. paired=True draws one set of
    indices shared by all samples (equal lengths required); paired=False resamples each independently.
    Resamples are drawn in chunks from one numpy Generator; the bounds are np.quantile (linear) at
    (1-confidence)/2 and (1+confidence)/2.
    """
    _check_confidence(confidence)
    if not samples:
        raise ValueError("bootstrap_ci needs at least one sample")
    if n_resamples < 1:
        raise ValueError(f"n_resamples must be >= 1, got {n_resamples}")
    arrays = [_as_numeric_1d(s, f"sample {i}") for i, s in enumerate(samples)]
    if paired:
        for i, arr in enumerate(arrays[1:], start=1):
            _same_length(arrays[0], arr, f"paired samples 0 and {i}")
    estimate = _call_stat(stat, [arr[None, :] for arr in arrays], 1)[0]
    rng = np.random.default_rng(seed)
    chunk = max(1, _BOOTSTRAP_CHUNK_CELLS // max(arr.shape[0] for arr in arrays))
    values = np.empty(n_resamples)
    for start in range(0, n_resamples, chunk):
        r = min(chunk, n_resamples - start)
        values[start : start + r] = _call_stat(stat, _resample(arrays, r, paired, rng), r)
    low, high = np.quantile(values, [(1 - confidence) / 2, (1 + confidence) / 2])
    return BootstrapResult(float(estimate), float(low), float(high), confidence, n_resamples)


def _resample(arrays: list[NDArray], r: int, paired: bool, rng: np.random.Generator) -> list[NDArray]:
    """Draw r bootstrap resamples of each array, sharing indices when paired."""
    if paired:
        idx = rng.integers(0, arrays[0].shape[0], size=(r, arrays[0].shape[0]))
        return [arr[idx] for arr in arrays]
    return [arr[rng.integers(0, arr.shape[0], size=(r, arr.shape[0]))] for arr in arrays]


def _call_stat(stat: Statistic, arrays: list[NDArray], r: int) -> NDArray[np.float64]:
    """Call a vectorised statistic and check it honours the (r,) output contract."""
    out = np.asarray(stat(*arrays), dtype=np.float64)
    if out.shape != (r,):
        raise ValueError(f"stat must return shape ({r},) for inputs with {r} resamples, got {out.shape}")
    return out


# --------------------------------------------------------------------------- paired t and TOST


@dataclass(frozen=True)
class PairedTResult:
    """Paired-samples t-test with Cohen's d_z."""

    t: float
    p_value: float
    df: int
    mean_diff: float
    cohen_dz: float  # mean(a - b) / sd(a - b), sd with ddof=1
    n: int


def _diff_moments(d: NDArray[np.float64]) -> tuple[float, float]:
    """Mean and sample SD (ddof=1) of differences; raise when the SD is zero or undefined."""
    if d.shape[0] < 2:
        raise ValueError(f"need at least 2 differences, got {d.shape[0]}")
    sd = float(np.std(d, ddof=1))
    if sd == 0:
        raise ValueError("differences have zero variance: t statistic is undefined")
    return float(np.mean(d)), sd


def paired_t(a: ArrayLike, b: ArrayLike, alternative: Alternative = "two-sided") -> PairedTResult:
    """Paired t-test of a - b (as scipy.stats.ttest_rel) with Cohen's d_z = mean diff / SD diff."""
    _check_alternative(alternative)
    x, y = _as_numeric_1d(a, "a"), _as_numeric_1d(b, "b")
    _same_length(x, y, "a and b")
    d = x - y
    m, sd = _diff_moments(d)
    n = d.shape[0]
    t = m / (sd / np.sqrt(n))
    return PairedTResult(float(t), _t_pvalue(float(t), n - 1, alternative), n - 1, m, m / sd, n)


@dataclass(frozen=True)
class TostResult:
    """Two one-sided t-tests (TOST) for equivalence of a mean difference to 0 within +/- margin."""

    mean_diff: float
    ci_low: float  # t-interval at `confidence` (default 95%)
    ci_high: float
    confidence: float
    margin: float
    p_lower: float  # H0: mean <= -margin
    p_upper: float  # H0: mean >= +margin
    p_value: float  # max(p_lower, p_upper): the TOST p-value
    equivalent: bool  # the CI lies inside [-margin, margin]
    df: int


def tost(diff_samples: ArrayLike, margin: float, confidence: float = 0.95) -> TostResult:
    """TOST on one sample of differences (e.g. natural - synthetic) against bounds [-margin, margin].

    Returns both one-sided p-values and their max. ``equivalent`` follows the CI-inclusion rule with a
    ``confidence`` (default 95%) t-interval inside [-margin, margin]; note the 95% rule is stricter than
    TOST at alpha=0.05, which corresponds to a 90% CI (pass confidence=0.90 for that).
    """
    _check_confidence(confidence)
    if not margin > 0:
        raise ValueError(f"margin must be > 0, got {margin}")
    d = _as_numeric_1d(diff_samples, "diff_samples")
    m, sd = _diff_moments(d)
    n = d.shape[0]
    se = sd / np.sqrt(n)
    p_lower = float(st.t.sf((m + margin) / se, n - 1))
    p_upper = float(st.t.cdf((m - margin) / se, n - 1))
    half = float(st.t.ppf(0.5 + confidence / 2, n - 1) * se)
    low, high = m - half, m + half
    equivalent = bool(-margin <= low and high <= margin)
    return TostResult(m, low, high, confidence, margin, p_lower, p_upper, max(p_lower, p_upper), equivalent, n - 1)


def equivalent_by_ci(ci_low: float, ci_high: float, margin: float) -> bool:
    """True when a CI (e.g. a bootstrap CI of a difference) lies within [-margin, margin]."""
    return bool(-margin <= ci_low and ci_high <= margin)


# --------------------------------------------------------------------------- multiple testing


@dataclass(frozen=True)
class BonferroniResult:
    """Bonferroni-adjusted p-values and rejections."""

    adjusted: NDArray[np.float64]  # min(p * m, 1)
    reject: NDArray[np.bool_]  # p <= alpha / m
    alpha: float


def _pvalues(pvalues: ArrayLike, alpha: float) -> NDArray[np.float64]:
    """p-values as a float array in [0, 1], with 0 < alpha < 1 checked, or ValueError."""
    p = _as_numeric_1d(pvalues, "pvalues")
    if ((p < 0) | (p > 1)).any():
        raise ValueError("pvalues must lie in [0, 1]")
    if not 0 < alpha < 1:
        raise ValueError(f"alpha must be in (0, 1), got {alpha}")
    return p


def bonferroni(pvalues: ArrayLike, alpha: float = 0.05) -> BonferroniResult:
    """Bonferroni correction over m p-values (as statsmodels multipletests(method="bonferroni"))."""
    p = _pvalues(pvalues, alpha)
    m = p.shape[0]
    return BonferroniResult(np.minimum(p * m, 1.0), p <= alpha / m, alpha)


@dataclass(frozen=True)
class HolmResult:
    """Holm step-down adjusted p-values and rejections (family-wise error rate at most alpha)."""

    adjusted: NDArray[np.float64]  # running max of min(p_(i) * (m - i + 1), 1) in p order, back in input order
    reject: NDArray[np.bool_]  # adjusted <= alpha
    alpha: float


def holm(pvalues: ArrayLike, alpha: float = 0.05) -> HolmResult:
    """Holm's step-down correction over m p-values (as statsmodels multipletests(method="holm"))."""
    p = _pvalues(pvalues, alpha)
    m = p.shape[0]
    order = np.argsort(p, kind="stable")
    stepped = np.maximum.accumulate(np.minimum(p[order] * (m - np.arange(m)), 1.0))
    adjusted = np.empty(m)
    adjusted[order] = stepped
    return HolmResult(adjusted, adjusted <= alpha, alpha)


# --------------------------------------------------------------------------- means with the interval of their kind

SMALL_N = 30  # below this many values a statistic carries a small-sample caveat
_ROUNDING_VAR = 1e-24  # a variance below this share of mean^2 + 1 is floating-point noise of equal values


@dataclass(frozen=True)
class MeanCI:
    """Column means with confidence intervals, value counts and the interval method per column."""

    mean: NDArray[np.float64]
    ci_low: NDArray[np.float64]
    ci_high: NDArray[np.float64]
    n: NDArray[np.int64]
    method: NDArray[np.str_]


@dataclass(frozen=True)
class Interval:
    """One metric's mean with its interval, the number of values and the interval method ('' when empty)."""

    mean: float
    ci_low: float
    ci_high: float
    n: int
    method: str


def _beta_interval(successes: NDArray, trials: NDArray, confidence: float) -> tuple[NDArray, NDArray]:
    """Clopper-Pearson bounds for (possibly fractional) successes out of trials."""
    alpha = 1 - confidence
    with np.errstate(invalid="ignore", divide="ignore"):
        low = np.where(successes > 0, st.beta.ppf(alpha / 2, successes, trials - successes + 1), 0.0)
        high = np.where(successes < trials, st.beta.ppf(1 - alpha / 2, successes + 1, trials - successes), 1.0)
    return low, high


def _check_ranges(x: NDArray[np.float64], metrics: Sequence[MetricDeclaration]) -> None:
    """Raise ValueError naming the first metric with a value outside its declared range."""
    for j, metric in enumerate(metrics):
        column = x[:, j][~np.isnan(x[:, j])]
        low, high = metric.range
        if column.size and (column.min() < low or column.max() > high):
            raise ValueError(f"metric {metric.id!r} has values outside its range [{low}, {high}]: "
                             f"{column.min()} .. {column.max()}")


def metric_intervals(values: ArrayLike, metrics: Sequence[MetricDeclaration], confidence: float = 0.95) -> MeanCI:
    """Mean and CI of each column of `values` (NaN = missing), the family chosen by the column's declared kind.

    - rate and bounded score, on the values mapped to [0, 1] by the declared range: exact Clopper-Pearson on k of n
      when every value is at an end of the range; else Clopper-Pearson on the effective sample size
      n_eff = m(1-m) / (s^2/n * (t/z)^2), the binomial n with the same variance of the mean, widened for the
      estimated variance (Student t), asymmetric near the ends where Student t under-covers. The interval holds the
      mean and never leaves the range.
    - amount (cost, latency): Student t, m +/- t * s / sqrt(n); undefined (NaN) for one value.
    Equal values have zero variance (the mean is that value): an amount's interval is then [m, m].
    tests/test_intervals.py shows coverage >= 94% at n = 20 by simulation for each kind.
    """
    _check_confidence(confidence)
    x = np.asarray(values, dtype=float)
    if x.ndim == 1:
        x = x[:, None]
    if x.ndim != 2 or x.shape[1] != len(metrics):
        raise ValueError(f"values must have one column per metric ({len(metrics)}), got shape {x.shape}")
    _check_ranges(x, metrics)
    _, origin, width = declared_scale(metrics)
    present = ~np.isnan(x)
    n = present.sum(axis=0)
    u = (x - origin) / width  # the identity for amounts and for the range [0, 1]
    with np.errstate(invalid="ignore", divide="ignore"):
        m, var = _moments(u, present, n)
    binary = np.asarray(np.where(present, (u == 0) | (u == 1), True).all(axis=0))
    return intervals_from_moments(m, var, n, binary, metrics, confidence)


def declared_scale(metrics: Sequence[MetricDeclaration]) -> tuple[NDArray[np.bool_], NDArray, NDArray]:
    """Per metric: whether it is an amount, and the origin and width that map its declared range onto [0, 1] (0 and 1
    for amounts)."""
    amount = np.array([m.kind == "amount" for m in metrics], dtype=bool)
    origin = np.array([0.0 if m.kind == "amount" else m.range[0] for m in metrics])
    width = np.array([1.0 if m.kind == "amount" else m.range[1] - m.range[0] for m in metrics])
    return amount, origin, width


def intervals_from_moments(m: NDArray, var: NDArray, n: NDArray, binary: NDArray, metrics: Sequence[MetricDeclaration],
                           confidence: float = 0.95) -> MeanCI:
    """metric_intervals' result from each column's mean and sample variance on the unit scale (declared_scale), its
    value count and whether every value is 0 or 1; the last axis runs over `metrics` (any leading axes broadcast)."""
    amount, origin, width = declared_scale(metrics)
    with np.errstate(invalid="ignore", divide="ignore"):
        tq = st.t.ppf(1 - (1 - confidence) / 2, np.maximum(n - 1, 1))
        unit_low, unit_high = _unit_interval(n, m, var, tq, binary, confidence)
        half = tq * np.sqrt(var / n)
    low, high = np.where(amount, m - half, unit_low), np.where(amount, m + half, unit_high)
    method = np.where(amount, "student-t", np.where(binary, "clopper-pearson", "beta-effective-n"))
    empty, undefined = n == 0, amount & (n == 1)
    low, high = np.where(empty | undefined, np.nan, low), np.where(empty | undefined, np.nan, high)
    mean, low, high = (origin + width * v for v in (m, low, high))
    return MeanCI(np.where(empty, np.nan, mean), low, high, np.asarray(n).astype(np.int64), np.where(empty, "", method))


def _moments(u: NDArray, present: NDArray, n: NDArray) -> tuple[NDArray, NDArray]:
    """Column means and sample variances of the present values; equal values give their value and variance 0."""
    m = np.where(present, u, 0.0).sum(axis=0) / n
    var = np.where(present, (u - m) ** 2, 0.0).sum(axis=0) / (n - 1)
    lo_v, hi_v = np.where(present, u, np.inf).min(axis=0), np.where(present, u, -np.inf).max(axis=0)
    equal = (n > 0) & (lo_v == hi_v)
    var = np.where(equal | (var <= _ROUNDING_VAR * (m**2 + 1)), 0.0, var)
    return np.where(equal, lo_v, m), var


def _unit_interval(n: NDArray, m: NDArray, var: NDArray, tq: NDArray, binary: NDArray,
                   confidence: float) -> tuple[NDArray, NDArray]:
    """Clopper-Pearson (0/1 values) or effective-n beta bounds of values in [0, 1], clipped to [0, 1] around the
    mean."""
    var_mean = var / n * (tq / _z(confidence)) ** 2
    n_eff = np.where(binary, n, np.where(var_mean > 0, m * (1 - m) / var_mean, n))
    n_eff = np.where((m <= 0) | (m >= 1), n, np.maximum(n_eff, 1.0))
    return effective_n_bounds(m, n_eff, confidence)


def effective_n_bounds(share: ArrayLike, n_eff: ArrayLike, confidence: float = 0.95) -> tuple[NDArray, NDArray]:
    """Clopper-Pearson bounds of a share in [0, 1] as share * n_eff successes of n_eff (fractional), clipped to
    [0, 1] around the share: the interval of rates and bounded scores, also of an average of strata."""
    m, trials = np.asarray(share, dtype=float), np.asarray(n_eff, dtype=float)
    low, high = _beta_interval(m * trials, trials, confidence)
    inside = np.clip(m, 0.0, 1.0)
    return np.clip(low, 0.0, inside), np.clip(high, inside, 1.0)


def interval(values: ArrayLike, metric: MetricDeclaration, confidence: float = 0.95) -> Interval:
    """Mean and CI of one metric's values (NaN = missing), by the family of its declared kind (metric_intervals)."""
    ci = metric_intervals(np.asarray(values, dtype=float).reshape(-1, 1), [metric], confidence)
    return Interval(float(ci.mean[0]), float(ci.ci_low[0]), float(ci.ci_high[0]), int(ci.n[0]), str(ci.method[0]))
