"""Gold budget planner against uniform sampling, by seeded simulation: labels needed to separate two models at
alpha = 0.05 with 80% power.

The world: POPULATION instances both models answered, model A right with rate `rate_a`, B with `rate_a - gap`; a
judge right on a response with the row's accuracy, `ratio` times as often wrong on the HARD_SHARE of instances the
judges disagree on (uncertainty 0.25 per response against 0.02); FIRST labelled items drawn uniformly before the
plan. Per row (means over WORLDS seeded worlds): the number of further items each design states
(core.analysis.gold_budget.labels_needed at the population's true difference, its disagreement model fitted on the
first sample), the power simulated at that number with that design's draw (ipw_ppi_mean, the product's interval,
labelled items at probability 1), and the fewest items (bisection on a grid of STEP) whose simulated power reaches
80% when drawn by the planner and when drawn uniformly.

Run: python -m bench.bench_gold_budget [--reps 400]
Prints the markdown table of docs/ppi.md ("Gold budget planner") and exits 1 if the mean simulated power at the
planner's stated numbers is off the target by more than TOLERANCE. tests/test_gold_budget.py checks the same with
fewer repetitions.
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass

import numpy as np

from core.analysis.gold_budget import ALPHA, BOUNDS, POWER, Pairs, design, labels_needed
from core.analysis.ppi import ipw_ppi_mean

POPULATION = 400
HARD_SHARE = 0.3
FIRST = 30
TOLERANCE = 0.08
STEP = 10
ROWS = ((0.6, 0.15, 0.8, 3), (0.6, 0.15, 0.9, 3), (0.6, 0.1, 0.9, 3), (0.7, 0.1, 0.95, 3), (0.5, 0.2, 0.7, 3),
        (0.6, 0.15, 0.9, 10), (0.7, 0.1, 0.95, 10))  # rate A, gap, judge accuracy, hard-to-easy error ratio


@dataclass(frozen=True)
class World:
    """A fixed population: the judge's and the gold differences per instance, the judges' uncertainty, and which
    items the first (uniform) sample labelled."""

    pairs: Pairs  # gold known on the first sample only
    truth: np.ndarray  # the gold difference on every item
    difference: float  # its population mean


def world(rate_a: float, gap: float, accuracy: float, seed: int, ratio: float = 3) -> World:
    """One seeded population of POPULATION paired instances with FIRST of them labelled."""
    rng = np.random.default_rng(seed)
    hard = rng.random(POPULATION) < HARD_SHARE
    easy_error = (1 - accuracy) / (1 - HARD_SHARE + ratio * HARD_SHARE)
    error = np.where(hard, min(0.5, ratio * easy_error), easy_error)

    def model(rate: float) -> tuple[np.ndarray, np.ndarray]:
        y = (rng.random(POPULATION) < rate).astype(float)
        return y, np.where(rng.random(POPULATION) < error, 1 - y, y)

    (ya, fa), (yb, fb) = model(rate_a), model(rate_a - gap)
    truth, judged = ya - yb, fa - fb
    first = np.zeros(POPULATION, bool)
    first[rng.choice(POPULATION, FIRST, replace=False)] = True
    uncertainty = 2 * (np.where(hard, 0.25, 0.02) + 0.01)  # readmodel.response_uncertainty, summed over A and B
    return World(Pairs.of(judged, np.where(first, truth, np.nan), uncertainty), truth, float(truth.mean()))


def simulated_power(w: World, more: float, uniform: bool, reps: int, seed: int) -> float:
    """Share of Poisson draws of `more` expected further items whose weighted corrected interval excludes 0 on the
    true difference's side."""
    rng = np.random.default_rng(seed)
    pi = design(w.pairs, more, uniform)
    lab = w.pairs.labeled
    hits = 0
    for _ in range(reps):
        labeled = lab | (rng.random(pi.size) < pi)
        e = ipw_ppi_mean(w.pairs.judged, np.where(labeled, w.truth, np.nan), np.where(lab, 1.0, pi),
                         confidence=1 - ALPHA, bounds=BOUNDS)
        hits += e.ci_low > 0 if w.difference > 0 else e.ci_high < 0
    return hits / reps


def simulated_need(w: World, uniform: bool, reps: int, seed: int) -> int | None:
    """The fewest further items (a multiple of STEP, or all) whose simulated power reaches POWER, by bisection on
    that grid (power grows with the number); None if labelling every item does not reach it."""
    rest = int((~w.pairs.labeled).sum())
    grid = [*range(STEP, rest, STEP), rest]
    if simulated_power(w, rest, uniform, reps, seed) < POWER:
        return None
    low, high = -1, len(grid) - 1
    while high - low > 1:
        mid = (low + high) // 2
        low, high = (low, mid) if simulated_power(w, grid[mid], uniform, reps, seed) >= POWER else (mid, high)
    return grid[high]


@dataclass(frozen=True)
class Row:
    """One world's figures: stated numbers, the simulated power there, and the simulated numbers needed."""

    difference: float
    stated: int | None
    stated_power: float
    planner_need: int | None
    uniform_stated: int | None
    uniform_power: float
    uniform_need: int | None


def row(rate_a: float, gap: float, accuracy: float, ratio: float, reps: int, seed: int, needs: bool = True) -> Row:
    """The planner's and uniform sampling's stated and simulated numbers on one seeded world (`needs`: also search
    the simulated numbers needed, the costly part)."""
    w = world(rate_a, gap, accuracy, seed, ratio)
    stated = labels_needed(w.pairs, w.difference)
    uniform_stated = labels_needed(w.pairs, w.difference, uniform=True)
    nan = float("nan")
    return Row(w.difference, stated, simulated_power(w, stated, False, reps, seed + 1) if stated else nan,
               simulated_need(w, False, reps, seed + 2) if needs else None, uniform_stated,
               simulated_power(w, uniform_stated, True, reps, seed + 3) if uniform_stated else nan,
               simulated_need(w, True, reps, seed + 4) if needs else None)


WORLDS = 3  # seeded worlds per row: the first sample's luck moves the planner's disagreement estimate


def _mean(values: list, fmt: str) -> str:
    known = [v for v in values if v is not None and not np.isnan(v)]
    if not known:
        return "not reachable"
    missing = len(values) - len(known)
    return format(float(np.mean(known)), fmt) + (f" ({missing} of {len(values)} not reachable)" if missing else "")


def main() -> None:
    """Print the table and exit 1 when the mean simulated power at the stated numbers misses POWER by more than
    TOLERANCE."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--reps", type=int, default=400)
    args = parser.parse_args()
    lines = ["| rate A × gap × judge accuracy × error ratio | true difference | planner states | power there (simulated) | "
             "planner needs (simulated) | uniform states | power there (simulated) | uniform needs (simulated) |",
             "|---" * 8 + "|"]
    powers = []
    for i, (rate_a, gap, accuracy, ratio) in enumerate(ROWS):
        rows = [row(rate_a, gap, accuracy, ratio, args.reps, 1000 * i + k) for k in range(1, WORLDS + 1)]
        powers += [r.stated_power for r in rows if r.stated]
        lines.append(f"| {rate_a} × {gap} × {accuracy} × {ratio} | {_mean([r.difference for r in rows], '+.3f')} | "
                     f"{_mean([r.stated for r in rows], '.0f')} | {_mean([r.stated_power for r in rows], '.1%')} | "
                     f"{_mean([r.planner_need for r in rows], '.0f')} | {_mean([r.uniform_stated for r in rows], '.0f')}"
                     f" | {_mean([r.uniform_power for r in rows], '.1%')} | "
                     f"{_mean([r.uniform_need for r in rows], '.0f')} |")
    print(f"{POPULATION} paired instances, {FIRST} labelled uniformly first, {WORLDS} seeded worlds per row (means "
          f"shown), {args.reps} repetitions per simulated power, alpha {ALPHA}, target power {POWER:.0%}; items = "
          "instances (a gold label on both models' responses); simulated numbers on a grid of "
          f"{STEP}\n")
    print("\n".join(lines))
    mean_power = float(np.mean(powers))
    print(f"\nmean simulated power at the planner's stated numbers: {mean_power:.1%} (target {POWER:.0%}, tolerance "
          f"{TOLERANCE:.0%}); per world {min(powers):.1%}-{max(powers):.1%}")
    sys.exit(0 if abs(mean_power - POWER) <= TOLERANCE else 1)


if __name__ == "__main__":
    main()
