"""Labels that pay for themselves (issue 40), by seeded simulation against known truth, planning from estimates.

planner: the batch planner (core.analysis.gold_budget) in worlds of POPULATION shared instances, FIRST labelled
  uniformly; each world states its promise (the power curve, computed from its own labels) at its true difference,
  then labels in batches with the product's interval until it separates, stops as not reachable, or spends the
  budget. Per cell: the mean promise, the achieved power (separated in the right direction), futility stops,
  labels spent. Grid: true difference x judge accuracy x judge bias toward B (the lower model).

Run: python -m bench.bench_labels_pay [--worlds 400] [--part planner]
Prints the markdown tables of docs/ppi.md and exits 1 if a cell misses its floor. tests/test_labels_pay.py runs a
small version of each part in CI.
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass

import numpy as np

from bench.sim_worlds import paired
from core.analysis import gold_budget as gb

POPULATION = 400
RATE_A = 0.6
DIFFERENCES = (0.0, 0.03, 0.06, 0.09, 0.12, 0.15)
ACCURACIES = (0.6, 0.7, 0.8, 0.9, 0.95)
LEANS = (0.0, 0.2)  # the judge passes B's failures this much more often
PROMISE_PATHS = 400  # per world: the cell's promise averages over its worlds
SLACK = 0.03  # achieved power may fall this far below the promise


@dataclass(frozen=True)
class PlannerCell:
    """One grid cell of the planner simulation."""

    difference: float
    accuracy: float
    lean: float
    worlds: int
    promise: float  # mean stated power at the world's true difference
    achieved: float  # share separated in the right direction
    wrong: float  # share separated in the wrong direction (any direction at difference 0)
    futile: float  # share stopped as not reachable
    labels: float  # mean labels spent after the first ones

    @property
    def holds(self) -> bool:
        """Achieved power at least the promise minus SLACK."""
        return self.achieved >= self.promise - SLACK


def planner_cell(difference: float, accuracy: float, lean: float, worlds: int, seed: int) -> PlannerCell:
    """Run the batch planner in `worlds` seeded worlds of one cell (vectorised over worlds)."""
    sim = paired(worlds, POPULATION, RATE_A, difference, accuracy, seed, lean_b=lean)
    gold, judged, truth = sim.gold, sim.judged, sim.gold.mean(axis=1)
    order = np.arange(POPULATION)[None, :]  # instances are exchangeable: label them in index order (uniform)
    budget = POPULATION - gb.FIRST
    first = gb.look(gold, judged, order < gb.FIRST, False)
    promise = gb.simulate(first, truth, budget, paths=PROMISE_PATHS)[0]
    live = np.ones(worlds, bool)
    right, wrong, futile, spent = (np.zeros(worlds, bool), np.zeros(worlds, bool), np.zeros(worlds, bool),
                                   np.zeros(worlds))
    steps = [gb.FIRST, *gb.looks_at(gb.FIRST, budget)]
    for n_k in steps:
        final = n_k == POPULATION
        idx = np.flatnonzero(live)
        if idx.size == 0:
            break
        state = gb.look(gold[idx], judged[idx], order < n_k, final)
        spent[idx] = n_k - gb.FIRST
        sep = state.separated
        good = sep & (np.sign(state.estimate) == np.sign(truth[idx])) & (truth[idx] != 0)
        right[idx[good]], wrong[idx[sep & ~good]] = True, True
        stop = sep.copy()
        if not final:
            dead = ~sep & (gb.expected_power(state, state.estimate, n_k, POPULATION) < gb.FUTILITY)
            futile[idx[dead]] = True
            stop |= dead
        live[idx[stop]] = False
    return PlannerCell(difference, accuracy, lean, worlds, float(promise.mean()), float(right.mean()),
                       float(wrong.mean()), float(futile.mean()), float(spent.mean()))


def planner_table(cells: list[PlannerCell]) -> str:
    """The markdown table of docs/ppi.md ("Planner: promise against achieved power")."""
    lines = ["| true difference × judge accuracy × bias toward B | promised power | achieved power | wrong or false "
             "separations | stopped as not reachable | mean labels after the first 30 |", "|---|---|---|---|---|---|"]
    for c in cells:
        lines.append(f"| {c.difference:+.2f} × {c.accuracy:g} × {c.lean:g} | {c.promise:.1%} | {c.achieved:.1%} | "
                     f"{c.wrong:.1%} | {c.futile:.1%} | {c.labels:.0f} |")
    return "\n".join(lines)


def planner_grid(worlds: int, differences=DIFFERENCES, accuracies=ACCURACIES, leans=LEANS) -> list[PlannerCell]:
    """Every cell of the planner grid, seeded per cell."""
    return [planner_cell(d, a, lean, worlds, seed=1000 * i + 10 * j + k)
            for i, d in enumerate(differences) for j, a in enumerate(accuracies) for k, lean in enumerate(leans)]


def main() -> int:
    """Run the parts asked for, print their tables and floors, exit 1 on a missed floor."""
    parser = argparse.ArgumentParser()
    parser.add_argument("--worlds", type=int, default=400)
    parser.add_argument("--part", choices=["planner", "all"], default="all")
    args = parser.parse_args()
    failed = False
    if args.part in ("planner", "all"):
        cells = planner_grid(args.worlds)
        print(planner_table(cells))
        worst = min(cells, key=lambda c: c.achieved - c.promise)
        print(f"\nWorst cell: achieved {worst.achieved:.1%} against a promise of {worst.promise:.1%} "
              f"({worst.difference:+.2f} × {worst.accuracy:g} × {worst.lean:g}); cells holding: "
              f"{sum(c.holds for c in cells)} of {len(cells)}")
        failed |= not all(c.holds for c in cells)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
