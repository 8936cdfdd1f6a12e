"""Gold budget planner: how many more gold labels, on which items, would separate two models at alpha = 0.05.

The decision rests on the judge-corrected difference A - B over the instances both answered (one item = one shared
instance; labelling it means a gold label on both models' responses). Given the judge's difference d_f on every
item, the gold difference d_y where both responses are labelled, and how unsure the judges are on each item, the
planner models each unlabelled item's expected squared rectifier E[(d_y - lam d_f)^2] (the judges' uncertainty,
scaled to the disagreement seen on the labelled items), draws the next items by Poisson sampling with probabilities
proportional to its square root (core.analysis.ppi.sampling_probabilities, Neyman allocation), and finds the
smallest expected number of items whose corrected interval excludes 0 with the stated power.

The estimate the plan aims at is core.analysis.ppi.ipw_ppi_mean over every shared item with the labelled items at
probability 1 (their rectifier is known) and the new ones at their recorded probability: unbiased conditional on
the labels in hand for any first sample, since every unlabelled item keeps pi > 0. The planner mirrors that
interval's variance (the z^2/2 pseudo-disagreements, the Kish t quantile, lam tuned on the grid) in expectation,
so the number it states is the product's interval's, not a textbook normal one.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike
from scipy import stats as st

from core.analysis.ppi import LAMBDA_GRID, MIN_LABELS, ppi_mean, sampling_probabilities

ALPHA = 0.05
POWER = 0.8
BOUNDS = (-1.0, 1.0)  # a paired difference of two models' 0/1 outcomes
PRIOR_WEIGHT = 1.0  # pseudo-uncertainty behind the disagreement scale before any label (scale 1: E[e^2] = uncertainty)


@dataclass(frozen=True)
class Pairs:
    """One metric's paired difference A - B per shared instance: the judge's, the gold one (NaN where not both
    responses are labelled), and the judges' uncertainty on the pair (sum over the two responses)."""

    judged: np.ndarray
    gold: np.ndarray
    uncertainty: np.ndarray

    @classmethod
    def of(cls, judged: ArrayLike, gold: ArrayLike, uncertainty: ArrayLike) -> Pairs:
        """Validated float arrays of equal length, judged values and uncertainties finite."""
        f, y, u = (np.asarray(a, dtype=float).ravel() for a in (judged, gold, uncertainty))
        if not (f.size == y.size == u.size) or f.size < 2:
            raise ValueError("judged, gold and uncertainty need the same length, at least 2")
        if np.isnan(f).any() or np.isnan(u).any() or (u < 0).any():
            raise ValueError("judged values and uncertainties must be known and uncertainties >= 0")
        return cls(f, y, u)

    @property
    def labeled(self) -> np.ndarray:
        """Which items already carry a gold difference."""
        return ~np.isnan(self.gold)


@dataclass(frozen=True)
class Plan:
    """What the planner answers: the expected number of further items to label (None: even labelling every one would
    not separate the two at this difference), the uniform sampling's number for comparison, and the design."""

    more: int | None
    uniform_more: int | None
    difference: float  # the difference assumed (the current corrected one, else the judge's)
    basis: str  # where that difference comes from
    lam: float
    probabilities: np.ndarray  # per item: 1 where labelled, the planner's inclusion probability elsewhere
    power: float  # the planned power at `more` (model)
    alpha: float
    target_power: float

    @property
    def separated(self) -> bool:
        """True when the labels in hand already separate the two (nothing more to label)."""
        return self.more == 0


def disagreement_scale(pairs: Pairs) -> float:
    """How much the judge's difference misses the gold one per unit of uncertainty, from the labelled items, shrunk
    towards 1 (expected squared miss = uncertainty) by PRIOR_WEIGHT pseudo-uncertainty."""
    lab = pairs.labeled
    miss = float(((pairs.gold[lab] - pairs.judged[lab]) ** 2).sum())
    return (miss + PRIOR_WEIGHT) / (float(pairs.uncertainty[lab].sum()) + PRIOR_WEIGHT)


def expected_miss(pairs: Pairs) -> np.ndarray:
    """E[e^2] per item: in each uncertainty band (above, or at most, the median uncertainty: the disagreement-prone
    stratum and the rest) the labelled items' squared misses with Jeffreys' half a miss added (a band whose labels
    all agree with the judge is not taken for a perfect judge); a band without labels gets scale * uncertainty."""
    lab, u = pairs.labeled, pairs.uncertainty
    prior = disagreement_scale(pairs) * u
    miss = np.where(lab, (np.nan_to_num(pairs.gold) - pairs.judged) ** 2, 0.0)
    out = prior.copy()
    for band in (u > np.median(u), u <= np.median(u)):
        known = band & lab
        if known.any():
            out[band] = (miss[known].sum() + 1) / (known.sum() + 2)
    return out


def miss_slope(pairs: Pairs) -> float:
    """How the judge's miss e = d_y - d_f moves with its value, E[e d_f] = slope * d_f^2, from the labelled items
    shrunk towards 0 by PRIOR_WEIGHT (negative when the judge's calls regress towards no difference)."""
    lab = pairs.labeled
    f = pairs.judged[lab]
    return float(((pairs.gold[lab] - f) * f).sum()) / (float((f * f).sum()) + PRIOR_WEIGHT)


def expected_rectifier(pairs: Pairs, lams: np.ndarray) -> np.ndarray:
    """E[(d_y - lam d_f)^2] per lam (rows) and item (columns), with d_y = d_f + e: the scaled uncertainty (E[e^2]),
    plus (1 - lam)^2 d_f^2 and the cross term 2 (1 - lam) E[e d_f]; known exactly where labelled."""
    slope = miss_slope(pairs)
    kept, f2 = 1 - lams[:, None], pairs.judged[None, :] ** 2
    modelled = np.clip(expected_miss(pairs)[None, :] + kept**2 * f2 + 2 * kept * slope * f2, 1e-4, None)
    known = (pairs.gold[None, :] - lams[:, None] * pairs.judged[None, :]) ** 2
    return np.where(pairs.labeled[None, :], np.nan_to_num(known), modelled)


def assumed_difference(pairs: Pairs) -> tuple[float, str]:
    """The difference to separate: the corrected one from the labels in hand when there are MIN_LABELS of them,
    else the judge's."""
    lab = pairs.labeled
    if lab.sum() >= MIN_LABELS and (~lab).sum() >= 1:
        e = ppi_mean(pairs.gold[lab], pairs.judged[lab], pairs.judged[~lab], bounds=BOUNDS)
        return e.estimate, f"corrected difference on {int(lab.sum())} labelled items"
    return float(pairs.judged.mean()), f"judge's difference (fewer than {MIN_LABELS} labelled items)"


@dataclass(frozen=True)
class Variances:
    """Expected standard errors of the corrected difference under a design, at the lam the interval would pick."""

    shown: float  # the interval's standard error (pseudo-disagreements included)
    true: float  # the estimate's sampling standard error over the label draws
    df: int  # degrees of freedom of its t quantile
    lam: float


def expected_variances(pairs: Pairs, pi: np.ndarray, confidence: float = 1 - ALPHA) -> Variances:
    """ipw_ppi_mean's variance in expectation over the Poisson draw with inclusion probabilities `pi` (1 where
    labelled), for each lam on the grid, and the lam with the smallest shown variance (as the interval picks)."""
    lab, big_n = pairs.labeled, pairs.judged.size
    r2 = expected_rectifier(pairs, LAMBDA_GRID)
    design = (r2 * np.where(lab, 0.0, (1 - pi) / pi)[None, :]).sum(axis=1)  # sum of Var(z_i)
    f2 = float((pairs.judged**2).mean())
    spread = (big_n - 1) * float(np.var(pairs.judged, ddof=1) + r2[-1].mean() + 2 * miss_slope(pairs) * f2)
    c = st.norm.ppf(1 - (1 - confidence) / 2) ** 2 / 2
    count, weights = float(pi.sum()), float(big_n)  # expected labelled items and their weight total
    w_bar = weights / max(count, 1.0)
    low, high = BOUNDS
    centre = float(pairs.judged.mean())
    pseudo = sum((LAMBDA_GRID * centre + w_bar * (end - LAMBDA_GRID * other) - centre) ** 2
                 for end, other in ((low, high), (high, low)))
    total = big_n + 2 * c
    shown = (spread + design + c * pseudo) / (total - 1) / total
    best = int(np.argmin(shown))
    kish = weights**2 / float((1 / pi).sum())
    return Variances(float(np.sqrt(shown[best])), float(np.sqrt(design[best])) / big_n, max(int(kish), 2) - 1,
                     float(LAMBDA_GRID[best]))


def power(difference: float, v: Variances, alpha: float = ALPHA) -> float:
    """Probability that the interval excludes 0 on the side of `difference`: its centre, spread by the estimate's
    sampling error, lies further than t * shown standard error from 0."""
    reach = abs(difference) - st.t.ppf(1 - alpha / 2, v.df) * v.shown
    if v.true == 0:
        return 1.0 if reach > 0 else 0.0
    return float(st.norm.cdf(reach / v.true))


def design(pairs: Pairs, more: float, uniform: bool = False) -> np.ndarray:
    """Inclusion probabilities: 1 on labelled items; over the others, `more` expected items drawn uniformly or by
    the square root of their expected squared rectifier (at lam = 1) with ppi.sampling_probabilities' floor."""
    lab = pairs.labeled
    pi = np.ones(pairs.judged.size)
    rest = int((~lab).sum())
    if rest == 0 or more <= 0:
        return np.where(lab, 1.0, 1e-6)
    more = min(float(more), float(rest))
    if uniform:
        pi[~lab] = more / rest
    else:
        pi[~lab] = sampling_probabilities(expected_rectifier(pairs, np.array([1.0]))[0, ~lab], 1) * more
        pi[~lab] = _capped(pi[~lab])
    return pi


def _capped(pi: np.ndarray) -> np.ndarray:
    """Probabilities with the mass above 1 redistributed (as sampling_probabilities does for an integer budget)."""
    for _ in range(50):
        over = pi > 1
        if not over.any():
            break
        excess = float((pi[over] - 1).sum())
        pi[over] = 1.0
        if (~over).any():
            pi[~over] += excess * pi[~over] / pi[~over].sum()
    return np.clip(pi, 1e-6, 1.0)


def labels_needed(pairs: Pairs, difference: float, uniform: bool = False, target: float = POWER,
                  alpha: float = ALPHA) -> int | None:
    """The smallest expected number of further items (0 if the labels in hand suffice) whose design reaches
    `target` power, by bisection (power grows with the number); None when labelling every item would not."""
    rest = int((~pairs.labeled).sum())

    def enough(m: int) -> bool:
        return power(difference, expected_variances(pairs, design(pairs, m, uniform), 1 - alpha), alpha) >= target

    if pairs.labeled.sum() >= MIN_LABELS and enough(0):
        return 0
    if rest == 0 or not enough(rest):
        return None
    low, high = 0, rest
    while high - low > 1:
        mid = (low + high) // 2
        low, high = (low, mid) if enough(mid) else (mid, high)
    return high


def plan(pairs: Pairs, alpha: float = ALPHA, target: float = POWER) -> Plan:
    """The planner's answer for these pairs: how many more items to label, drawn how, against uniform sampling."""
    difference, basis = assumed_difference(pairs)
    more = labels_needed(pairs, difference, False, target, alpha)
    uniform_more = labels_needed(pairs, difference, True, target, alpha)
    pi = design(pairs, more if more is not None else 0)
    v = expected_variances(pairs, pi, 1 - alpha)
    return Plan(more, uniform_more, difference, basis, v.lam, pi, power(difference, v, alpha), alpha, target)


def draw(plan_: Plan, labeled: np.ndarray, seed: int = 0) -> np.ndarray:
    """Indices of the items to label next: a seeded Poisson draw of the unlabelled items with the plan's
    probabilities (what the estimate's weights 1/pi assume); empty when the plan needs nothing or cannot help."""
    if not plan_.more:
        return np.array([], dtype=int)
    rng = np.random.default_rng(seed)
    hit = rng.random(labeled.size) < plan_.probabilities
    return np.flatnonzero(hit & ~labeled)
