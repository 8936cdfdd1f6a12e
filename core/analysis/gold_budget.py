"""Gold budget planner: label in batches until two models separate, or until the remaining budget cannot.

The decision rests on the judge-corrected difference A - B over the instances both answered (one item = one shared
instance; labelling it means a gold label on both models' responses), the product's PPI++ interval
(core.analysis.ppi.ppi_rows, the same computation as ppi_mean) on the labelled items. The planner never plans from
the difference's point estimate as if it were the truth (issue 40: that promised 80% and achieved 60-66%):

- **Batches, re-planned.** Items are labelled in uniform batches (BATCH); after each batch the interval is looked
  at again. Interim looks use a 99.9% interval and the last look (budget spent) the 95% one (Haybittle-Peto), so
  looking after every batch does not inflate false separations.
- **Stop.** When the interval excludes 0 (separated), or when the remaining budget's expected power -- the
  probability of separating by the end, averaged over the uncertainty of the difference (its posterior from the
  labels in hand) -- falls below FUTILITY (stated "not reachable with this budget").
- **The promise** is a power curve: for each true difference, the probability that this procedure separates the
  two in the right direction, simulated in a normal model of the estimate's path whose per-label spread is an
  upper confidence bound (SPREAD_CONFIDENCE) on the one measured on the labels in hand. The planner states the
  smallest difference it detects with POWER, the power at the current estimate, and the expected power.

bench/bench_labels_pay.py checks the promise against worlds that plan from their own estimates (docs/ppi.md).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike
from scipy import stats as st

from core.analysis.ppi import ppi_rows

ALPHA = 0.05
POWER = 0.8
FUTILITY = 0.10  # stop when the remaining budget's expected power falls below this
INTERIM_CONFIDENCE = 0.999  # Haybittle-Peto: interim looks; the last look uses 1 - ALPHA
BATCH = 20  # items per batch
FIRST = 30  # uniform labels before any promise (the judge's disagreement is measured on them)
SPREAD_CONFIDENCE = 0.8  # the per-label spread planned with is this one-sided upper confidence bound
PATHS = 2000  # simulated paths per power value
BOUNDS = (-1.0, 1.0)  # a paired difference of two models' 0/1 outcomes
DIFFERENCES = np.round(np.arange(0.0, 0.301, 0.01), 2)  # the power curve's grid


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
class Look:
    """The labels in hand, per world (arrays): the interval at this look, and the moments a plan from here uses."""

    estimate: np.ndarray
    low: np.ndarray
    high: np.ndarray
    vy: np.ndarray  # variance of the gold difference on the labelled items (raised: SPREAD_CONFIDENCE bound)
    cyf: np.ndarray  # its covariance with the judge's difference (raised alike)
    vf: np.ndarray  # variance of the judge's difference on the labelled items (raised alike)
    vfu: np.ndarray  # variance of the judge's difference over every item
    n: np.ndarray  # labelled items
    population: int  # items in all

    @property
    def separated(self) -> np.ndarray:
        """The interval excludes 0."""
        return (self.low > 0) | (self.high < 0)

    def at(self, n: float, final: bool) -> tuple[np.ndarray, np.ndarray]:
        """(per-label spread of the estimate, distance from 0 the estimate needs to separate) with n labels, at the
        lam minimising the interval's variance (normal model of ppi_mean's interval)."""
        lam = _GRID[None, :]
        per_label = self.vy[:, None] - 2 * lam * self.cyf[:, None] + lam**2 * self.vf[:, None]
        shown = per_label / n + lam**2 * self.vfu[:, None] / max(self.population - n, 1)
        best = np.argmin(shown, axis=1)
        rows = np.arange(best.size)
        confidence = 1 - ALPHA if final else INTERIM_CONFIDENCE
        q = st.t.ppf(1 - (1 - confidence) / 2, max(n - 1, 1))
        return np.sqrt(np.maximum(per_label[rows, best], 1e-6)), q * np.sqrt(shown[rows, best])


_GRID = np.linspace(0.0, 1.0, 21)


def look(gold: np.ndarray, judged: np.ndarray, labeled: np.ndarray, final: bool | np.ndarray) -> Look:
    """The product's interval (ppi_rows) per row at the look's confidence (95% at the last look, 99.9% before)
    and the labelled items' moments, raised to their SPREAD_CONFIDENCE upper bound (chi-square on n - 1)."""
    final = np.broadcast_to(np.asarray(final), (gold.shape[0],))
    last, interim = (ppi_rows(gold, judged, labeled, c, BOUNDS) for c in (1 - ALPHA, INTERIM_CONFIDENCE))
    n = interim.n
    y, f = np.where(labeled, np.nan_to_num(gold), 0.0), np.where(labeled, judged, 0.0)
    dy, df = (y - (y.sum(1) / n)[:, None]) * labeled, (f - (f.sum(1) / n)[:, None]) * labeled
    raise_ = (n - 1) / st.chi2.ppf(1 - SPREAD_CONFIDENCE, np.maximum(n - 1, 1)) / np.maximum(n - 1, 1)
    return Look(np.where(final, last.estimate, interim.estimate), np.where(final, last.low, interim.low),
                np.where(final, last.high, interim.high), (dy * dy).sum(1) * raise_, (dy * df).sum(1) * raise_,
                (df * df).sum(1) * raise_, judged.var(axis=1, ddof=1), n, gold.shape[1])


def expected_power(state: Look, estimate: np.ndarray, n: float, final_n: float) -> np.ndarray:
    """Probability that the last look (final_n labels) separates, averaged over the difference's uncertainty (flat
    prior), in the normal model: the final estimate ~ N(estimate, s^2 (final_n - n) / (final_n n)), s the
    per-label spread at n."""
    spread, _ = state.at(n, False)
    _, b = state.at(final_n, True)
    return _predictive(estimate, spread, b, n, final_n)


def _predictive(estimate: np.ndarray, spread: np.ndarray, b: np.ndarray, n: float, final_n: float) -> np.ndarray:
    """expected_power from the per-label spread now and the last look's boundary (broadcasting)."""
    sd = spread * np.sqrt(max(final_n - n, 0.0) / (final_n * n))
    if final_n <= n:
        return (np.abs(estimate) > b).astype(float)
    return st.norm.cdf((estimate - b) / sd) + st.norm.cdf((-estimate - b) / sd)


def looks_at(n: int, budget: int, batch: int = BATCH) -> np.ndarray:
    """Label counts at the looks after each batch: n + batch, n + 2 batch, ..., n + budget."""
    if budget <= 0:
        return np.array([], dtype=int)
    return np.unique(np.minimum(np.arange(n + batch, n + budget + batch, batch), n + budget))


def simulate(state: Look, differences: np.ndarray | None, budget: int, batch: int = BATCH, paths: int = PATHS,
             seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """(probability of separating in the difference's direction, expected labels spent) of the batch procedure from
    `state` (one row per world; n equal across rows), in a normal model of sampling the rest without replacement,
    for true (population) `differences` (one per row), or averaged over the difference's uncertainty when None
    (expected power)."""
    rng = np.random.default_rng(seed)
    n0, big_n = int(state.n[0]), state.population
    rows, rest = state.estimate.size, big_n - n0
    spread0, _ = state.at(n0, False)
    if differences is None:
        scale = spread0 * np.sqrt(max(1 / n0 - 1 / big_n, 0.0))
        truth = state.estimate[:, None] + scale[:, None] * rng.standard_normal((rows, paths))
    else:
        truth = np.broadcast_to(np.asarray(differences, dtype=float)[:, None], (rows, paths))
    rest_mean = (big_n * truth - n0 * state.estimate[:, None]) / max(rest, 1)
    steps = looks_at(n0, budget, batch)
    times = 1 / np.maximum(steps - n0, 1) - 1 / max(rest, 1)  # Brownian time of each look's mean of new labels
    walk = np.zeros((rows, paths))
    noise = np.zeros((len(steps), rows, paths))
    for k in range(len(steps) - 1, -1, -1):  # smallest time first: W(t_k) = W(t_{k+1}) + N(0, t_k - t_{k+1})
        previous = times[k + 1] if k + 1 < len(steps) else 0.0
        walk = walk + np.sqrt(max(times[k] - previous, 0.0)) * rng.standard_normal((rows, paths))
        noise[k] = walk
    _, b_last = state.at(float(n0 + budget), True)
    done = np.broadcast_to(state.separated[:, None], (rows, paths)).copy()
    hit = done & (np.sign(state.estimate)[:, None] == np.sign(truth))
    spent = np.zeros((rows, paths))
    for k, n_k in enumerate(steps):
        final = k == len(steps) - 1
        spread, b = state.at(float(n_k), final)
        live = ~done
        m = n_k - n0
        estimate = (n0 * state.estimate[:, None] + m * (rest_mean + spread[:, None] * noise[k])) / n_k
        spent = np.where(live, m, spent)
        separated = live & (np.abs(estimate) > b[:, None])
        hit |= separated & (np.sign(estimate) == np.sign(truth))
        done |= separated
        if not final:
            now, _ = state.at(float(n_k), False)
            pp = _predictive(estimate, now[:, None], b_last[:, None], float(n_k), float(n0 + budget))
            done |= live & (pp < FUTILITY)
    return hit.mean(axis=1), spent.mean(axis=1)


@dataclass(frozen=True)
class Plan:
    """The planner's answer: what to label next (`more` items, uniformly: 0 when separated, None when stopped as not
    reachable), with the promise (power curve over true differences) and the expected power and labels."""

    more: int | None
    stop: str  # "" (keep labelling), "separated", "not reachable", "budget spent", "first labels"
    estimate: float
    low: float
    high: float
    labeled: int
    budget: int  # items the plan may still label
    expected_power: float
    expected_labels: float
    power_at_estimate: float
    detectable: float | None  # smallest difference on DIFFERENCES with POWER, None when none
    curve: np.ndarray  # power per DIFFERENCES
    probabilities: np.ndarray  # per item: 1 where labelled, the batch's inclusion probability elsewhere
    alpha: float = ALPHA
    target_power: float = POWER

    @property
    def separated(self) -> bool:
        """True when the labels in hand already separate the two (nothing more to label)."""
        return self.more == 0


def plan(pairs: Pairs, budget: int | None = None, batch: int = BATCH) -> Plan:
    """The next batch for these pairs and the promise of labelling in batches up to `budget` more items (default:
    every unlabelled one)."""
    lab = pairs.labeled
    rest = int((~lab).sum())
    budget = rest if budget is None else max(0, min(int(budget), rest))
    n = int(lab.sum())
    if n < FIRST:
        first = min(FIRST - n, rest)
        return Plan(first, "first labels", np.nan, np.nan, np.nan, n, budget, np.nan, np.nan, np.nan, None,
                    np.full(DIFFERENCES.size, np.nan), _uniform(lab, first))
    state = look(pairs.gold[None, :], pairs.judged[None, :], lab[None, :], budget == 0)
    wide = lambda a: np.broadcast_to(a, DIFFERENCES.shape)  # noqa: E731
    many = Look(wide(state.estimate), wide(state.low), wide(state.high), wide(state.vy), wide(state.cyf),
                wide(state.vf), wide(state.vfu), wide(state.n), state.population)
    curve = simulate(many, DIFFERENCES * (1 if state.estimate[0] >= 0 else -1), budget, batch)[0]
    power_now, _ = simulate(state, state.estimate, budget, batch)
    _, labels = simulate(state, None, budget, batch)
    expected = expected_power(state, state.estimate, n, n + budget)  # what the stopping rule reads
    reach = np.flatnonzero(curve >= POWER)
    detectable = float(DIFFERENCES[reach[0]]) if reach.size else None
    more: int | None = int(min(batch, budget))
    stop = ""
    if bool(state.separated[0]):
        more, stop = 0, "separated"
    elif budget == 0:
        more, stop = None, "budget spent"
    elif float(expected[0]) < FUTILITY:
        more, stop = None, "not reachable"
    return Plan(more, stop, float(state.estimate[0]), float(state.low[0]), float(state.high[0]), n, budget,
                float(expected[0]), float(labels[0]), float(power_now[0]), detectable, curve,
                _uniform(lab, more or 0))


def _uniform(labeled: np.ndarray, more: int) -> np.ndarray:
    """Inclusion probabilities of a uniform batch of `more` of the unlabelled items (1 where labelled)."""
    rest = int((~labeled).sum())
    return np.where(labeled, 1.0, more / rest if rest and more else 1e-6)


def draw(plan_: Plan, labeled: np.ndarray, seed: int = 0) -> np.ndarray:
    """Indices of the items to label next: a seeded uniform draw of `more` unlabelled items (simple random sampling:
    the labelled items stay a uniform sample, so the plain PPI++ interval holds); empty when nothing to label."""
    if not plan_.more:
        return np.array([], dtype=int)
    rng = np.random.default_rng(seed)
    return np.sort(rng.choice(np.flatnonzero(~labeled), size=plan_.more, replace=False))
