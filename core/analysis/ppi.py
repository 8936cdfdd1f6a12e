"""Judge-corrected estimates: prediction-powered inference (PPI, PPI++) from judge verdicts on all N responses and
expert gold labels on n of them (Angelopoulos et al., Science 2023; PPI++: Angelopoulos, Duchi and Zrnic 2023),
and the inverse-probability-weighted form for gold samples drawn with unequal probabilities (active inference,
Zrnic and Candès 2024). The estimate is unbiased however wrong the judge is; a better judge gives a narrower CI.

Notation: Y gold labels on the n labelled responses, f the judge's values on them, f~ the judge's values on the
N unlabelled responses. The point estimate is lam * mean(f~) + mean(Y - lam * f); its variance estimate is
lam^2 var(f~) / N + var(Y - lam * f) / n. lam = 1 is PPI, lam = 0 the gold-only mean, and PPI++ takes the lam in
[0, 1] that minimises that variance estimate, cross-fitted (each half of the data gets the lam tuned on the other
half) so that no lam is tuned on the labels it corrects (cross_fitted_mean, cross_fitted_lambdas).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from functools import cache

import numpy as np
from numpy.typing import ArrayLike
from scipy import stats as st
from scipy.special import betaincinv

SMALL_N = 30
MIN_LABELS = 10  # below this many gold labels no corrected value is shown (bench/bench_ppi_coverage.py)


@dataclass(frozen=True)
class CorrectedEstimate:
    """A judge-corrected mean with its CI, beside the raw judge mean and the gold-only mean."""

    estimate: float
    ci_low: float
    ci_high: float
    lam: float
    n_labeled: int
    n_unlabeled: int
    effective_n: float  # uniform gold labels the standard labels-only interval would need for the same width
    judge_mean: float  # the raw judge estimate over all responses (biased when the judge is)
    gold_mean: float  # the labels-only mean (Horvitz-Thompson when weighted)
    gold_ci_low: float  # the standard labels-only interval at the same n (standard_interval)
    gold_ci_high: float
    method: str

    @property
    def width(self) -> float:
        """Width of the corrected CI."""
        return self.ci_high - self.ci_low

    @property
    def small_n(self) -> bool:
        """True when fewer than SMALL_N gold labels back the estimate."""
        return self.n_labeled < SMALL_N


def smoothed_moments(values: np.ndarray, low: float, high: float, confidence: float) -> tuple[float, float]:
    """(centre, variance of the mean) of `values` with z^2/4 pseudo-observations at each end of [low, high].

    Agresti-Coull's idea for a bounded variable: with few labels, judge-gold disagreements are rare and the plain
    variance is often 0 (every residual alike), which makes a CI collapse; the pseudo-observations pull the CI's
    centre slightly inwards and keep its width honest at n = 50 (tests/test_ppi.py), and vanish as n grows. They
    shape the interval only: the point estimate stays the unbiased plain mean.
    """
    weight = _z(confidence) ** 2 / 4
    total = values.size + 2 * weight
    centre = (values.sum() + weight * (low + high)) / total
    squares = ((values - centre) ** 2).sum() + weight * ((low - centre) ** 2 + (high - centre) ** 2)
    return float(centre), float(squares / (total - 1) / total)


@cache
def _z(confidence: float) -> np.float64:
    """The two-sided normal quantile of `confidence`, computed once per level (scipy's ppf costs ~0.1 ms a call and
    the Wilson bisection of uniform_equivalent asks for it 62 times per interval)."""
    return st.norm.ppf(1 - (1 - confidence) / 2)


@cache
def _quantile(confidence: float, n: int) -> float:
    """Student t quantile with n - 1 degrees of freedom (the gold sample's), for small-n honesty."""
    return float(st.t.ppf(1 - (1 - confidence) / 2, max(n - 1, 1)))


def _arrays(gold: ArrayLike, judged: ArrayLike, judged_unlabeled: ArrayLike) -> tuple[np.ndarray, ...]:
    y, f, fu = (np.asarray(a, dtype=float).ravel() for a in (gold, judged, judged_unlabeled))
    if y.size != f.size:
        raise ValueError(f"gold and judged need the same length, got {y.size} and {f.size}")
    if y.size < 2 or fu.size < 1:
        raise ValueError("need at least 2 gold labels and 1 unlabelled judge value")
    if np.isnan(y).any() or np.isnan(f).any() or np.isnan(fu).any():
        raise ValueError("missing values: drop undetermined items (and count them) before correcting")
    return y, f, fu


def _variances(lams: np.ndarray, y: np.ndarray, f: np.ndarray, fu: np.ndarray, confidence: float,
               bounds: tuple[float, float] = (0.0, 1.0)) -> tuple[np.ndarray, np.ndarray]:
    """(CI centres, variances) of the corrected mean for each lam: smoothed_moments in closed form over the grid."""
    low, high = min(y.min(), f.min(), fu.min(), bounds[0]), max(y.max(), f.max(), fu.max(), bounds[1])
    sums = [np.array([float(v)]) for v in (y.size, y.sum(), f.sum(), (y * y).sum(), (y * f).sum(), (f * f).sum(),
                                           fu.size, fu.sum(), (fu * fu).sum(), low, high)]
    centres, variances = _row_variances(lams, *sums, confidence=confidence)
    return centres[0], variances[0]


def _row_variances(lams: np.ndarray, n: np.ndarray, sy: np.ndarray, sf: np.ndarray, syy: np.ndarray,
                   syf: np.ndarray, sff: np.ndarray, nu: np.ndarray, su: np.ndarray, suu: np.ndarray,
                   low: np.ndarray, high: np.ndarray, *, confidence: float) -> tuple[np.ndarray, np.ndarray]:
    """_variances from sufficient sums, one row per data set (rows x lams): labelled count and sums of y, f, y^2,
    y f, f^2, unlabelled count and sums of f~, f~^2, and the range [low, high] of each row."""
    weight = _z(confidence) ** 2 / 4
    total_u = nu + 2 * weight
    centre_u = (su + weight * (low + high)) / total_u
    squares_u = suu - 2 * centre_u * su + nu * centre_u**2 + weight * ((low - centre_u) ** 2 + (high - centre_u) ** 2)
    var_u = squares_u / (total_u - 1) / total_u
    lam = lams if lams.ndim == 2 else lams[None, :]  # one lam grid for every row, or one lam per row (rows x 1)
    n, sy, sf, syy, syf, sff, low, high = (a[:, None] for a in (n, sy, sf, syy, syf, sff, low, high))
    total = n + 2 * weight
    lo_r, hi_r = low - lam * high, high - lam * low
    sum_r = sy - lam * sf
    sum_r2 = syy - 2 * lam * syf + lam**2 * sff
    centre_r = (sum_r + weight * (lo_r + hi_r)) / total
    squares = sum_r2 - 2 * centre_r * sum_r + n * centre_r**2 + weight * ((lo_r - centre_r) ** 2 + (hi_r - centre_r) ** 2)
    return lam * centre_u[:, None] + centre_r, lam**2 * var_u[:, None] + squares / (total - 1) / total


@dataclass(frozen=True)
class RowIntervals:
    """ppi_mean's default (small-sample PPI++) estimate and CI for many data sets at once (one per row)."""

    estimate: np.ndarray
    low: np.ndarray
    high: np.ndarray
    lam: np.ndarray
    n: np.ndarray


def ppi_rows(gold: np.ndarray, judged: np.ndarray, labeled: np.ndarray, confidence: float = 0.95,
             bounds: tuple[float, float] = (0.0, 1.0)) -> RowIntervals:
    """ppi_mean(gold[labeled], judged[labeled], judged[~labeled]) per row (rows x items), vectorised over rows: the
    same folds, sums, cross-fitted lam, t quantile and clipping, for simulations over many worlds (bench/)."""
    y, f = np.nan_to_num(np.asarray(gold, dtype=float)), np.asarray(judged, dtype=float)
    lab = np.broadcast_to(np.asarray(labeled), y.shape)
    un = ~lab
    # a labelled (unlabelled) item's fold is its position among the row's labelled (unlabelled) items, mod 2: the
    # order ppi_mean receives them in
    fold_l, fold_u = (np.cumsum(lab, axis=1) - 1) % 2, (np.cumsum(un, axis=1) - 1) % 2
    every = _row_sums(y, f, lab, un, bounds)
    folds = [_row_sums(y, f, lab & (fold_l == k), un & (fold_u == k), bounds) for k in (0, 1)]
    n, nu = every[0], every[6]
    tuned = [np.where(s[0] >= 2, LAMBDA_GRID[np.argmin(_row_variances(LAMBDA_GRID, *s, confidence=confidence)[1],
                                                        axis=1)], 0.0) for s in folds]
    applied = [tuned[1], tuned[0]]  # fold k's lam is tuned on the other fold
    estimate = np.zeros(n.shape)
    for k, s in enumerate(folds):
        mean_u = np.where(s[6] > 0, s[7] / np.maximum(s[6], 1), every[7] / np.maximum(nu, 1))
        estimate += s[0] / np.maximum(n, 1) * (applied[k] * mean_u + (s[1] - applied[k] * s[2]) / np.maximum(s[0], 1))
    lam = (folds[0][0] * applied[0] + folds[1][0] * applied[1]) / np.maximum(n, 1)
    centres, variances = _row_variances(lam[:, None], *every, confidence=confidence)
    q = st.t.ppf(1 - (1 - confidence) / 2, np.maximum(n - 1, 1))
    half = q * np.sqrt(variances[:, 0])
    centre = centres[:, 0]
    return RowIntervals(np.clip(estimate, *bounds), np.clip(centre - half, *bounds), np.clip(centre + half, *bounds),
                        lam, n)


def _row_sums(y: np.ndarray, f: np.ndarray, lab: np.ndarray, un: np.ndarray,
              bounds: tuple[float, float]) -> tuple[np.ndarray, ...]:
    """_row_variances' sums per row over the labelled items `lab` and the unlabelled items `un` (rows x items)."""
    n, nu = lab.sum(axis=1).astype(float), un.sum(axis=1).astype(float)
    yl, fl, fu = np.where(lab, y, 0.0), np.where(lab, f, 0.0), np.where(un, f, 0.0)
    seen = lab | un
    low = np.minimum(np.minimum(np.where(lab, y, np.inf).min(axis=1), np.where(seen, f, np.inf).min(axis=1)),
                     bounds[0])
    high = np.maximum(np.maximum(np.where(lab, y, -np.inf).max(axis=1), np.where(seen, f, -np.inf).max(axis=1)),
                      bounds[1])
    return (n, yl.sum(1), fl.sum(1), (yl * yl).sum(1), (yl * fl).sum(1), (fl * fl).sum(1), nu, fu.sum(1),
            (fu * fu).sum(1), low, high)


LAMBDA_GRID = np.linspace(0.0, 1.0, 101)


def tuned_lambda(gold: ArrayLike, judged: ArrayLike, judged_unlabeled: ArrayLike, confidence: float = 0.95,
                 bounds: tuple[float, float] = (0.0, 1.0)) -> float:
    """PPI++'s lam: the value in [0, 1] (grid of 0.01) minimising the corrected mean's variance estimate on these
    data, so the corrected CI is never wider than the gold-only one (lam = 0 is on the grid)."""
    y, f, fu = _arrays(gold, judged, judged_unlabeled)
    return float(LAMBDA_GRID[int(np.argmin(_variances(LAMBDA_GRID, y, f, fu, confidence, bounds)[1]))])


def cross_fitted_mean(y: np.ndarray, f: np.ndarray, fu: np.ndarray, confidence: float = 0.95,
                      bounds: tuple[float, float] = (0.0, 1.0)) -> tuple[float, float]:
    """(estimate, applied lam) of PPI++ with lam cross-fitted: labelled and unlabelled items are split in two folds by
    position (alternate items), each fold's term lam_k mean(f~_k) + mean(Y_k - lam_k f_k) uses the lam tuned on the
    other fold (tuned_lambda's criterion; 0 where that fold has fewer than 2 labels), and the terms are averaged with
    weights n_k / n, so no lam depends on the labels it corrects and the estimate is unbiased."""
    fold_y, fold_u = np.arange(y.size) % 2, np.arange(fu.size) % 2
    parts = [(y[fold_y == k], f[fold_y == k], fu[fold_u == k] if (fold_u == k).any() else fu) for k in (0, 1)]
    tuned = [float(LAMBDA_GRID[int(np.argmin(_variances(LAMBDA_GRID, *p, confidence, bounds)[1]))])
             if p[0].size >= 2 else 0.0 for p in parts]
    applied = (tuned[1], tuned[0])
    shares = [p[0].size / y.size for p in parts]
    estimate = sum(w * (lam * p[2].mean() + (p[0] - lam * p[1]).mean())
                   for w, lam, p in zip(shares, applied, parts, strict=True))
    return float(estimate), float(sum(w * lam for w, lam in zip(shares, applied, strict=True)))


def clt_lambda(gold: ArrayLike, judged: ArrayLike, judged_unlabeled: ArrayLike) -> float:
    """PPI++'s lam for the paper's CLT interval: cov(Y, f)/n / (var(f~)/N + var(f)/n), clipped to [0, 1]."""
    y, f, fu = _arrays(gold, judged, judged_unlabeled)
    denominator = fu.var(ddof=1) / fu.size + f.var(ddof=1) / y.size if fu.size > 1 else f.var(ddof=1) / y.size
    return float(np.clip(np.cov(y, f, ddof=1)[0, 1] / y.size / denominator, 0.0, 1.0)) if denominator > 0 else 0.0


def ppi_mean(gold: ArrayLike, judged: ArrayLike, judged_unlabeled: ArrayLike, *, lam: float | None = None,
             interval: str = "small_sample", confidence: float = 0.95,
             bounds: tuple[float, float] = (0.0, 1.0)) -> CorrectedEstimate:
    """The corrected mean and CI; lam=None tunes lam (PPI++), lam=1 is plain PPI, lam=0 the gold-only mean.

    With interval='small_sample' lam=None cross-fits lam (cross_fitted_mean): tuning it on the labels it corrects
    biased the estimate by up to 8.5 simulation SE (0.005 at 10 labels, docs/ppi.md); the CI is the one at the
    applied lam (the folds' label-weighted mean).

    interval='clt' is the paper's normal interval (z quantile, sample variances); 'small_sample' (the default, what
    the product shows) adds the smoothed moments and a Student t quantile, which hold >= 94% coverage at n = 50
    where the CLT interval does not (tests/test_ppi.py). `bounds` is the range the values can take ((-1, 1) for a
    paired difference of two models' 0/1 outcomes).
    """
    y, f, fu = _arrays(gold, judged, judged_unlabeled)
    n, big_n = y.size, fu.size
    if interval == "clt":
        lam = clt_lambda(y, f, fu) if lam is None else float(lam)
        var_u = fu.var(ddof=1) / big_n if big_n > 1 else 0.0
        variance = lam**2 * var_u + (y - lam * f).var(ddof=1) / n
        estimate = lam * fu.mean() + (y - lam * f).mean()
        centre, q = estimate, float(_z(confidence))
    elif interval == "small_sample":
        if lam is None:
            estimate, lam = cross_fitted_mean(y, f, fu, confidence, bounds)
        else:
            lam = float(lam)
            estimate = lam * fu.mean() + (y - lam * f).mean()
        centres, variances = _variances(np.array([lam]), y, f, fu, confidence, bounds)
        centre, variance = float(centres[0]), float(variances[0])
        q = _quantile(confidence, n)
    else:
        raise ValueError(f"interval must be 'small_sample' or 'clt', not {interval!r}")
    half = q * np.sqrt(variance)
    method = "gold only" if lam == 0 else "PPI" if lam == 1 else "PPI++"
    judge_mean = float(np.concatenate([f, fu]).mean())
    low, high = _clipped(centre - half, centre + half, bounds)
    gold_low, gold_high, effective = standard_interval(y, float(y.mean()), high - low, bounds, confidence)
    return CorrectedEstimate(float(np.clip(estimate, *bounds)), low, high, lam, n, big_n, effective, judge_mean,
                             float(y.mean()), gold_low, gold_high, method)


def standard_interval(labels: np.ndarray, centre: float, width: float, bounds: tuple[float, float],
                      confidence: float = 0.95) -> tuple[float, float, float]:
    """The standard labels-only interval at the same number of labels, and the effective n of a corrected interval
    of `width` against it (issue 40: measured against the standard method, not against PPI's own lam = 0 end):
    binary_interval at the rate `centre` for 0/1 labels of a rate (Clopper-Pearson below SMALL_N labels, Wilson from
    SMALL_N), else Student t (CLT) on the labels' spread; effective n is the number of uniform labels that interval
    needs to be `width` wide."""
    n = labels.size
    if bounds == (0.0, 1.0) and np.isin(labels, (0.0, 1.0)).all():
        lows, highs = binary_interval(np.array([centre]), np.array([float(n)]), confidence)
        return float(lows[0]), float(highs[0]), uniform_equivalent(centre, width, n, confidence)
    sd = float(labels.std(ddof=1)) if n > 1 else float(bounds[1] - bounds[0])
    half = _quantile(confidence, n) * sd / np.sqrt(n)
    low, high = _clipped(centre - half, centre + half, bounds)
    return low, high, float(n * (2 * half / width) ** 2) if width > 0 else float("inf")


def _clipped(low: float, high: float, bounds: tuple[float, float]) -> tuple[float, float]:
    """A CI cut to the metric's range (the truth lies inside it, so cutting never loses coverage)."""
    return float(np.clip(low, *bounds)), float(np.clip(high, *bounds))


def _smoothed_z_stats(sum_z: np.ndarray, sum_z2: np.ndarray, big_n: int | np.ndarray, lam: np.ndarray,
                      judged_mean: np.ndarray | float, w_bar: np.ndarray | float, bounds: tuple[float, float],
                      confidence: float) -> tuple[np.ndarray, np.ndarray]:
    """(CI centres, variances of the mean) of z from its sums, with Agresti-Coull's pseudo-disagreements: z^2/2
    pseudo-labelled responses at each end of the rectifier's range, weighted like the mean labelled response
    (w = 1/pi), at the (mean) lam applied. Without them the variance collapses when every sampled label agrees with
    the judge; with z^2/4 (as the unweighted interval) coverage fell to 92.5% at n = 30."""
    c = _z(confidence) ** 2 / 2
    low, high = bounds
    pseudo = [lam * judged_mean + w_bar * (end - lam * other) for end, other in ((low, high), (high, low))]
    total = big_n + 2 * c
    centre = (sum_z + c * (pseudo[0] + pseudo[1])) / total
    squares = sum_z2 - 2 * centre * sum_z + big_n * centre**2 + c * ((pseudo[0] - centre) ** 2
                                                                      + (pseudo[1] - centre) ** 2)
    return centre, squares / (total - 1) / total


def cross_folds(size: int) -> np.ndarray:
    """The fold (0 or 1) of each of `size` responses for cross-fitting lam: alternate positions, fixed before any
    label is drawn, so a fold's lam (tuned on the other fold) is independent of its own sampling draws."""
    return np.arange(size) % 2


def _fold_lambda(grid_variances: np.ndarray, labels: np.ndarray | int) -> np.ndarray:
    """The lam tuned on one fold (argmin of its variance over LAMBDA_GRID, rows x grid), 0 where the fold has fewer
    than 2 labels (nothing to tune on; any fixed lam keeps the estimate unbiased)."""
    return np.where(np.asarray(labels) >= 2, LAMBDA_GRID[np.argmin(grid_variances, axis=-1)], 0.0)


def _grid_variances(f: np.ndarray, y: np.ndarray, weight: np.ndarray, bounds: tuple[float, float],
                    confidence: float) -> np.ndarray:
    """Variance of the mean of z(lam) over LAMBDA_GRID for one set of responses (the criterion PPI++ minimises)."""
    labeled = weight > 0
    if labeled.sum() < 1:
        return np.zeros(LAMBDA_GRID.size)
    a, b = f * (1 - weight), np.nan_to_num(y) * weight
    g = LAMBDA_GRID
    sum_z, sum_z2 = g * a.sum() + b.sum(), g**2 * (a * a).sum() + 2 * g * (a * b).sum() + (b * b).sum()
    return _smoothed_z_stats(sum_z, sum_z2, f.size, g, float(f[labeled].mean()), float(weight[labeled].mean()),
                             bounds, confidence)[1]


def cross_fitted_lambdas(f: np.ndarray, y: np.ndarray, weight: np.ndarray, bounds: tuple[float, float] = (0.0, 1.0),
                         confidence: float = 0.95) -> np.ndarray:
    """Per response, the lam applied to it: the PPI++ lam tuned on the other fold (cross_folds), weight = 1/pi on
    labelled responses and 0 elsewhere."""
    fold = cross_folds(f.size)
    tuned = [float(_fold_lambda(_grid_variances(f[fold == 1 - k], y[fold == 1 - k], weight[fold == 1 - k], bounds,
                                                confidence), int((weight[fold == 1 - k] > 0).sum())))
             for k in (0, 1)]
    return np.where(fold == 0, tuned[0], tuned[1])


def ipw_ppi_mean(judged: ArrayLike, gold: ArrayLike, probabilities: ArrayLike, *, lam: float | None = None,
                 confidence: float = 0.95, bounds: tuple[float, float] = (0.0, 1.0)) -> CorrectedEstimate:
    """Corrected mean when item i was sent to experts with probability pi_i (gold NaN where not sampled).

    Each response contributes z_i = lam_i * f_i + (Y_i - lam_i * f_i) * xi_i / pi_i (xi_i = 1 if labelled); the
    estimate is mean(z), unbiased for any pi_i > 0 when lam_i does not depend on response i's own draw
    (Horvitz-Thompson). Its CI is centre +/- t * sd/sqrt(N), where the centre and sd come from the z values plus
    z^2/2 pseudo-disagreements at each end of the range (_smoothed_z_stats) and t has the Kish effective number of
    labels minus 1 degrees of freedom; cut to `bounds`. bench/bench_ppi_coverage.py measures the coverage under the
    product's uncertainty sampling.
    lam = 0 is the gold-only (Horvitz-Thompson) estimate; lam=None cross-fits PPI++'s lam (issue 40): the responses
    are split in two fixed folds (cross_folds), each fold's lam is the one on a 0.01 grid with the smallest variance
    on the other fold, so no lam is tuned on the labels it corrects (tuning on the same labels biased the
    corrected difference by about 4% of its standard error: docs/ppi.md). The reported lam is the folds' mean.
    """
    f, y, pi = (np.asarray(a, dtype=float).ravel() for a in (judged, gold, probabilities))
    if not (f.size == y.size == pi.size):
        raise ValueError("judged, gold and probabilities need the same length")
    if ((pi <= 0) | (pi > 1)).any():
        raise ValueError("every sampling probability must be in (0, 1]")
    labeled = ~np.isnan(y)
    big_n, n = f.size, int(labeled.sum())
    if n < 2:
        raise ValueError("need at least 2 gold labels")
    weight = np.where(labeled, 1.0 / pi, 0.0)
    if lam is None:
        lams = np.array([cross_fitted_lambdas(f, y, weight, bounds, confidence), np.zeros(big_n)])
    else:
        lams = np.array([np.full(big_n, float(lam)), np.zeros(big_n)])
    a, b = f * (1 - weight), np.nan_to_num(y) * weight
    z = lams * a[None, :] + b[None, :]  # row 0: the estimate's lam per response; row 1: gold only
    centres, variances = _smoothed_z_stats(z.sum(1), (z * z).sum(1), big_n, lams.mean(1), float(f[labeled].mean()),
                                           float(weight[labeled].mean()), bounds, confidence)
    kish_n = weight.sum() ** 2 / (weight**2).sum()  # labels of equal weight carrying the same information
    q = _quantile(confidence, max(int(kish_n), 2))
    half = float(q * np.sqrt(variances[0]))
    low, high = _clipped(centres[0] - half, centres[0] + half, bounds)
    gold_mean = float(np.clip(z[1].mean(), *bounds))
    gold_low, gold_high, effective = standard_interval(y[labeled], gold_mean, high - low, bounds, confidence)
    return CorrectedEstimate(float(np.clip(z[0].mean(), *bounds)), low, high, float(lams[0].mean()), n, big_n - n,
                             effective, float(f.mean()), gold_mean, gold_low, gold_high, IPW_METHOD)


IPW_METHOD = "PPI++ (inverse-probability weighted, lam cross-fitted)"


def ipw_rows(judged: np.ndarray, gold: np.ndarray, probabilities: np.ndarray, confidence: float = 0.95,
             bounds: tuple[float, float] = (0.0, 1.0)) -> RowIntervals:
    """ipw_ppi_mean (lam cross-fitted) per row (rows x items), vectorised over rows from sums: z(lam) = lam a + b
    with a = f (1 - w), b = Y w, so sum z and sum z^2 are quadratics in lam; tests pin it to ipw_ppi_mean."""
    f, pi = np.asarray(judged, dtype=float), np.asarray(probabilities, dtype=float)
    labeled = ~np.isnan(gold)
    weight = np.where(labeled, 1.0 / pi, 0.0)
    a, b = f * (1 - weight), np.nan_to_num(gold) * weight
    big_n, n = f.shape[1], labeled.sum(axis=1)
    fold = cross_folds(big_n)
    g = LAMBDA_GRID[None, :]
    lam_of = []
    for k in (0, 1):
        m = fold == 1 - k
        nk = labeled[:, m].sum(1)
        am, bm = a[:, m], b[:, m]
        sum_z = g * am.sum(1)[:, None] + bm.sum(1)[:, None]
        sum_z2 = g**2 * (am * am).sum(1)[:, None] + 2 * g * (am * bm).sum(1)[:, None] + (bm * bm).sum(1)[:, None]
        jm = np.where(labeled[:, m], f[:, m], 0.0).sum(1) / np.maximum(nk, 1)
        wb = weight[:, m].sum(1) / np.maximum(nk, 1)
        variances = _smoothed_z_stats(sum_z, sum_z2, int(m.sum()), g, jm[:, None], wb[:, None], bounds,
                                      confidence)[1]
        lam_of.append(np.where(nk >= 1, _fold_lambda(variances, nk), 0.0))
    lam_i = np.where(fold[None, :] == 0, lam_of[0][:, None], lam_of[1][:, None])
    z = lam_i * a + b
    w_bar = weight.sum(1) / np.maximum(n, 1)
    judged_mean = np.where(labeled, f, 0.0).sum(1) / np.maximum(n, 1)
    lam_bar = lam_i.mean(1)
    centre, variances = _smoothed_z_stats(z.sum(1), (z * z).sum(1), big_n, lam_bar, judged_mean, w_bar, bounds,
                                          confidence)
    kish = weight.sum(1) ** 2 / np.maximum((weight**2).sum(1), 1e-12)
    q = st.t.ppf(1 - (1 - confidence) / 2, np.maximum(np.maximum(kish.astype(int), 2) - 1, 1))
    half = q * np.sqrt(variances)
    estimate = np.clip(z.sum(1) / big_n, *bounds)
    return RowIntervals(estimate, np.clip(centre - half, *bounds), np.clip(centre + half, *bounds), lam_bar,
                        n.astype(float))


def beta_quantile(q: float, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """The Beta(a, b) quantile at q for shapes a, b > 0: scipy.special.betaincinv, the function st.beta.ppf evaluates
    (the same values bit for bit, tests/test_ppi.py) without its argument checks, which cost ~100x the quantile
    itself when uniform_equivalent's bisection asks for one interval at a time."""
    return betaincinv(a, b, q)


def binary_interval(mean: np.ndarray, n: np.ndarray, confidence: float = 0.95) -> tuple[np.ndarray, np.ndarray]:
    """The standard labels-only interval for a rate `mean` from n uniform 0/1 labels, per element: Clopper-Pearson's
    exact interval below SMALL_N labels, Wilson's score interval from SMALL_N. Wilson's own coverage falls to 90.2%
    at 10 labels of a rate near 0 or 1 (bench/bench_labels_pay.py --part designs), below the 93% floor every shown
    interval keeps; Clopper-Pearson's never falls below the nominal level. Cut to [0, 1]."""
    m, n = np.clip(np.asarray(mean, dtype=float), 0.0, 1.0), np.maximum(np.asarray(n, dtype=float), 1.0)
    alpha = 1 - confidence
    z = _z(confidence)
    centre = (m + z**2 / (2 * n)) / (1 + z**2 / n)
    half = z * np.sqrt(m * (1 - m) / n + z**2 / (4 * n**2)) / (1 + z**2 / n)
    low, high = np.atleast_1d(centre - half).copy(), np.atleast_1d(centre + half).copy()
    small = np.broadcast_to(n < SMALL_N, low.shape)
    if small.any():  # the beta quantiles only where needed (they cost ~100x Wilson's arithmetic)
        x, k = np.broadcast_to(m * n, low.shape)[small], np.broadcast_to(n, low.shape)[small]
        low[small] = np.where(x > 0, beta_quantile(alpha / 2, np.maximum(x, 1e-12), k - x + 1), 0.0)
        high[small] = np.where(x < k, beta_quantile(1 - alpha / 2, x + 1, np.maximum(k - x, 1e-12)), 1.0)
    return np.clip(low, 0.0, 1.0), np.clip(high, 0.0, 1.0)


def labels_only(values: np.ndarray, confidence: float = 0.95) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The standard labels-only interval per row (rows x items, NaN where not labelled): binary_interval for 0/1
    labels (Clopper-Pearson below SMALL_N labels, Wilson from SMALL_N), Student t (CLT) otherwise, cut to [0, 1].
    Returns (mean, low, high). The yardstick every design is compared with at the same number of labels (issue 40)."""
    v = np.asarray(values, dtype=float)
    present = ~np.isnan(v)
    n = present.sum(axis=1).astype(float)
    x = np.where(present, v, 0.0)
    m = x.sum(1) / np.maximum(n, 1)
    binary = np.where(present, (v == 0) | (v == 1), True).all(axis=1)
    low_b, high_b = binary_interval(m, n, confidence)
    var = np.where(present, (v - m[:, None]) ** 2, 0.0).sum(1) / np.maximum(n - 1, 1)
    half_t = st.t.ppf(1 - (1 - confidence) / 2, np.maximum(n - 1, 1)) * np.sqrt(var / np.maximum(n, 1))
    low = np.where(binary, low_b, m - half_t)
    high = np.where(binary, high_b, m + half_t)
    return m, np.clip(low, 0.0, 1.0), np.clip(high, 0.0, 1.0)


def wilson_rows(values: np.ndarray, confidence: float = 0.95) -> tuple[np.ndarray, np.ndarray]:
    """Wilson's score interval per row of 0/1 labels (NaN where not labelled) at every n: the benchmark's reference
    for how narrow labels alone could look below SMALL_N labels, where it under-covers and the product does not
    show it (bench/bench_labels_pay.py)."""
    v = np.asarray(values, dtype=float)
    n = (~np.isnan(v)).sum(axis=1).astype(float)
    m = np.nansum(v, axis=1) / np.maximum(n, 1)
    z = st.norm.ppf(1 - (1 - confidence) / 2)
    centre = (m + z**2 / (2 * n)) / (1 + z**2 / n)
    half = z * np.sqrt(m * (1 - m) / n + z**2 / (4 * n**2)) / (1 + z**2 / n)
    return np.clip(centre - half, 0.0, 1.0), np.clip(centre + half, 0.0, 1.0)


STANDARD_METHOD = "labels only (the standard interval is narrower here)"
UNIFORM_SPREAD = 0.2  # recorded probabilities within this relative range of each other: a uniform draw


def uniform_draw(probabilities: ArrayLike) -> bool:
    """True when the labelled items' recorded sampling probabilities are equal up to UNIFORM_SPREAD (max / min - 1):
    a uniform draw within the model, as the stratified draw's proportional allocation gives up to its rounding."""
    pi = np.asarray(probabilities, dtype=float).ravel()
    return bool(pi.size and (pi > 0).all() and pi.max() / pi.min() - 1 <= UNIFORM_SPREAD)


def narrower_of_standard(estimate: CorrectedEstimate) -> CorrectedEstimate:
    """The interval the product shows from a uniform sample: the corrected one, or the standard labels-only one at
    the same labels (binary_interval for 0/1 labels: Clopper-Pearson below SMALL_N labels, Wilson from SMALL_N; else
    Student t) where that is narrower, so a uniform draw never shows a wider interval than labels alone would (issue
    40). The choice is made per data set from estimates, never from the truth; bench/bench_labels_pay.py --part
    designs measures its coverage (>= 93% in every cell, 10 to 100 labels)."""
    if estimate.gold_ci_high - estimate.gold_ci_low >= estimate.width:
        return estimate
    return replace(estimate, estimate=estimate.gold_mean, ci_low=estimate.gold_ci_low, ci_high=estimate.gold_ci_high,
                   lam=0.0, effective_n=float(estimate.n_labeled), method=STANDARD_METHOD)


def narrower_rows(rows: RowIntervals, gold: np.ndarray, labeled: np.ndarray,
                  confidence: float = 0.95) -> RowIntervals:
    """narrower_of_standard per row (rows x items) for 0/1 labels: the standard labels-only interval (labels_only)
    where it is narrower than the row's corrected one; tests pin it to narrower_of_standard(ppi_mean(...))."""
    mean, low, high = labels_only(np.where(labeled, gold, np.nan), confidence)
    take = (high - low) < (rows.high - rows.low)
    return RowIntervals(np.where(take, mean, rows.estimate), np.where(take, low, rows.low),
                        np.where(take, high, rows.high), np.where(take, 0.0, rows.lam), rows.n)


def labels_only_width(mean: float, n: float, confidence: float = 0.95) -> float:
    """Width of the standard labels-only interval (binary_interval) for a rate `mean` from n uniform labels (what n
    labels alone would give)."""
    if n <= 0:
        return 1.0
    low, high = binary_interval(np.array([mean]), np.array([float(n)]), confidence)
    return float(high[0] - low[0])


def uniform_equivalent(mean: float, width: float, n: int, confidence: float = 0.95) -> float:
    """How many uniform labels the standard labels-only interval needs to be as narrow as `width` at this rate:
    bisection on labels_only_width (effective n against the standard method, not against PPI's own lam = 0)."""
    if width <= 0:
        return float("inf")
    low, high = 1.0, 1e7
    if labels_only_width(mean, high, confidence) > width:
        return high
    for _ in range(60):
        mid = (low + high) / 2
        low, high = (mid, high) if labels_only_width(mean, mid, confidence) > width else (low, mid)
    return float(high)


def sampling_probabilities(uncertainty: ArrayLike, budget: int, floor: float = 0.1) -> np.ndarray:
    """Probabilities pi_i of asking an expert about item i (Neyman allocation): proportional to the square root of
    the expected squared judge error on it (e.g. the judges' disagreement rate on that item), mixed with a uniform
    floor so every item keeps pi_i > 0, summing to `budget` (the expected number of labels), capped at 1."""
    u = np.sqrt(np.clip(np.asarray(uncertainty, dtype=float).ravel(), 0.0, None))
    n = u.size
    if not 0 < budget <= n:
        raise ValueError(f"budget must be in 1..{n}")
    share = u / u.sum() if u.sum() > 0 else np.full(n, 1.0 / n)
    pi = budget * ((1 - floor) * share + floor / n)
    for _ in range(50):  # redistribute the mass above 1
        over = pi > 1
        if not over.any():
            break
        excess = (pi[over] - 1).sum()
        pi[over] = 1.0
        pi[~over] += excess * pi[~over] / pi[~over].sum()
    return np.clip(pi, 1e-6, 1.0)


def labels_for_width(estimate: CorrectedEstimate, target_width: float) -> int:
    """Gold labels needed (in total, at the same judge quality) for the corrected CI to reach `target_width`."""
    if target_width <= 0:
        raise ValueError("target width must be positive")
    if estimate.width <= target_width:
        return estimate.n_labeled
    # the labelled term dominates: width scales with 1/sqrt(n)
    return int(np.ceil(estimate.n_labeled * (estimate.width / target_width) ** 2))


def p_value_by_inversion(interval_at: Callable[[float], tuple[float, float]], null: float = 0.0,
                         steps: int = 40) -> float:
    """Two-sided p-value of `null` from a family of intervals: the smallest alpha whose (1 - alpha) interval leaves
    `null` out (bisection on log alpha over [1e-12, 1]), so the p-value agrees with the intervals shown beside it.
    `interval_at(confidence)` returns (low, high); NaN when the interval is undefined."""
    def excludes(alpha: float) -> bool:
        low, high = interval_at(1.0 - alpha)
        return not low <= null <= high

    if np.isnan(interval_at(0.95)[0]):
        return float("nan")
    low_log, high_log = np.log(1e-12), 0.0
    if excludes(1e-12):
        return 1e-12
    if not excludes(1.0 - 1e-9):
        return 1.0
    for _ in range(steps):
        middle = (low_log + high_log) / 2
        low_log, high_log = (low_log, middle) if excludes(float(np.exp(middle))) else (middle, high_log)
    return float(np.exp(high_log))
