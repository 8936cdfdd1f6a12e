"""Labels that pay for themselves (issue 40), by seeded simulation against known truth, planning from estimates.

planner: the batch planner (core.analysis.gold_budget) in worlds of POPULATION shared instances, FIRST labelled
  uniformly; each world states its promise (the power curve, computed from its own labels) at its true difference,
  then labels in batches with the product's interval until it separates, stops as not reachable, or spends the
  budget. Per cell: the mean promise, the achieved power (separated in the right direction), futility stops,
  labels spent. Grid: true difference x judge accuracy x judge bias toward B (the lower model).

designs: one model's rate from gold labels drawn by each design at the same (expected) number of labels, against
  the standard labels-only interval on a uniform sample (Clopper-Pearson below 30 labels, Wilson from 30; Wilson at
  every n is listed for reference): mean widths and coverage per cell. Grid: true
  rate x judge accuracy x labels x judge bias. --write stores the verdicts in data/sampling_designs.json, which
  the Adjudicate page quotes.

unweighted: the mean error of ppi_mean's estimate (lam cross-fitted) on uniform labels, vectorised (ppi.ppi_rows)
  over 3 x 20,000 worlds per cell: rates and paired differences, judge accuracy, labels.

differences: the corrected difference's mean error under the uncertainty, active and planned draws, through
  readmodel.corrected_difference (--worlds) and vectorised over 3 x 20,000 worlds (ppi.ipw_rows; lam cross-fitted).

Run: python -m bench.bench_labels_pay [--worlds 400] [--part planner|designs|gap|unweighted|differences|all] [--write]
Prints the markdown tables of docs/ppi.md and exits 1 if a cell misses its floor. tests/test_labels_pay.py runs a
small version of each part in CI.
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from bench.sim_worlds import EASY_U, HARD_SHARE, HARD_U, judge, paired
from core.analysis import gold_budget as gb
from core.analysis.ppi import (
    MIN_LABELS,
    SMALL_N,
    ipw_rows,
    labels_only,
    narrower_rows,
    ppi_rows,
    sampling_probabilities,
    wilson_rows,
)

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


RESPONSES = 600
RATES = (0.05, 0.15, 0.5, 0.7, 0.95)
LABELS = (10, 20, 30, 50, 100)
DEFAULT = "stratified draw: PPI++ or labels only, whichever is narrower (default)"
PPI_ONLY = "uniform, PPI++ alone (no labels-only fallback)"
DESIGNS: dict[str, str | float | None] = {DEFAULT: "narrower", PPI_ONLY: None, "uncertainty (floor 0.1)": 0.1,
           "active inference (Zrnic & Candès, half uniform)": 0.5}
YARDSTICK = "uniform, labels only (Clopper-Pearson below 30 labels, Wilson from 30)"
WILSON = "uniform, Wilson at every n (reference only: not shown below 30 labels, where it under-covers)"
STRATEGY = {DEFAULT: "stratified", "uncertainty (floor 0.1)": "uncertainty",
            "active inference (Zrnic & Candès, half uniform)": "active"}  # draw_gold_sample's strategy names
EVIDENCE = Path(__file__).resolve().parents[1] / "data" / "sampling_designs.json"  # read by the Adjudicate page


@dataclass(frozen=True)
class DesignCell:
    """One cell of the sampling-design simulation: mean width and coverage per design, the yardstick's first."""

    rate: float
    accuracy: float
    labels: int
    lean: float
    widths: dict[str, float]
    coverage: dict[str, float]


def design_cell(rate: float, accuracy: float, labels: int, lean: float, reps: int, seed: int) -> DesignCell:
    """`reps` seeded worlds of RESPONSES responses of one model; each design draws `labels` (expected) gold labels
    and shows its interval (repetitions under MIN_LABELS labels show none, as the product)."""
    rng = np.random.default_rng(seed)
    shape = (reps, RESPONSES)
    hard = rng.random(shape) < HARD_SHARE
    y = (rng.random(shape) < rate).astype(float)
    f = judge(y, accuracy, hard, rng, lean)
    u = np.where(hard, HARD_U, EASY_U)
    truth = y.mean(axis=1)
    widths: dict[str, float] = {}
    coverage: dict[str, float] = {}

    def record(name: str, low: np.ndarray, high: np.ndarray, shown: np.ndarray) -> None:
        widths[name] = float((high - low)[shown].mean())
        coverage[name] = float(((low <= truth) & (truth <= high))[shown].mean())

    uniform = np.argsort(rng.random(shape), axis=1) < labels  # a simple random sample of `labels` per world
    _, low, high = labels_only(np.where(uniform, y, np.nan))
    record(YARDSTICK, low, high, np.ones(reps, bool))
    record(WILSON, *wilson_rows(np.where(uniform, y, np.nan)), np.ones(reps, bool))
    for name, floor in DESIGNS.items():
        if floor is None or floor == "narrower":  # the stratified draw: uniform within the model, equal probabilities
            r = ppi_rows(y, f, uniform)
            r = narrower_rows(r, y, uniform) if floor == "narrower" else r
            record(name, r.low, r.high, np.ones(reps, bool))
            continue
        assert isinstance(floor, float)
        pi = np.stack([sampling_probabilities(row, labels, floor) for row in u])
        drawn = rng.random(shape) < pi
        r = ipw_rows(f, np.where(drawn, y, np.nan), pi)
        record(name, r.low, r.high, drawn.sum(axis=1) >= MIN_LABELS)
    return DesignCell(rate, accuracy, labels, lean, widths, coverage)


def design_grid(reps: int, rates=RATES, accuracies=ACCURACIES, labels=LABELS, leans=LEANS) -> list[DesignCell]:
    """Every cell of the sampling-design grid, seeded per cell."""
    return [design_cell(r, a, n, lean, reps, seed=7000 + 1000 * i + 100 * j + 10 * k + m)
            for i, r in enumerate(rates) for j, a in enumerate(accuracies) for k, n in enumerate(labels)
            for m, lean in enumerate(leans)]


@dataclass(frozen=True)
class DesignVerdict:
    """A design over the grid: cells at least as narrow as the yardstick, the worst width ratio, lowest coverage."""

    design: str
    narrower: int
    cells: int
    worst_ratio: float
    median_ratio: float
    lowest_coverage: float
    best_ratio: float

    @property
    def share(self) -> float:
        """Share of cells at least as narrow as the yardstick."""
        return self.narrower / self.cells


def verdicts(cells: list[DesignCell]) -> list[DesignVerdict]:
    """Each design (the yardstick too, for its coverage) against uniform labels-only intervals at equal labels."""
    out = []
    for name in (YARDSTICK, *DESIGNS, WILSON):
        ratios = np.array([c.widths[name] / c.widths[YARDSTICK] for c in cells])
        out.append(DesignVerdict(name, int((ratios <= 1.0 + 1e-9).sum()), len(cells), float(ratios.max()),
                                 float(np.median(ratios)), min(c.coverage[name] for c in cells), float(ratios.min())))
    return out


def design_table(cells: list[DesignCell]) -> str:
    """Markdown: per design, cells at least as narrow as uniform labels-only, width ratios, lowest coverage; then
    the mean width ratio per judge accuracy."""
    lines = ["| design | cells at least as narrow as uniform labels-only | best width ratio | median width "
             "ratio | worst width ratio | lowest coverage |", "|---|---|---|---|---|---|"]
    for v in verdicts(cells):
        lines.append(f"| {v.design} | {v.narrower} of {v.cells} ({v.share:.0%}) | {v.best_ratio:.2f} | "
                     f"{v.median_ratio:.2f} | {v.worst_ratio:.2f} | {v.lowest_coverage:.1%} |")
    lines += ["", "| judge accuracy | " + " | ".join(DESIGNS) + " |", "|---|" + "---|" * len(DESIGNS)]
    for a in sorted({c.accuracy for c in cells}):
        mine = [c for c in cells if c.accuracy == a]
        lines.append(f"| {a:g} | " + " | ".join(
            f"{np.mean([c.widths[d] / c.widths[YARDSTICK] for c in mine]):.2f}" for d in DESIGNS) + " |")
    return "\n".join(lines)


GAP_RESPONSES, GAP_CONSTRAINTS = 150, 8
GAP_PASS = (0.7, 0.85, 0.95)
GAP_UNDETERMINED = (0.01, 0.05, 0.15)  # per constraint, on average
GAP_DESIGNS = {"missing at random": 1.0, "abstains on hard cases": 5.0}  # undetermined odds of failing vs passing


@dataclass(frozen=True)
class GapCell:
    """Coverage in one cell of the gap interval the leaderboard shows (MOVER ∪ worst-case bound), of the MOVER
    interval alone (assumes missing at random; no longer shown as the interval) and of the worst-case bound."""

    pass_rate: float
    undetermined: float
    design: str
    shown_interval: float
    interval: float
    bound: float
    shown: int
    width: float  # mean width of the shown interval


def gap_cell(pass_rate: float, undetermined: float, design: str, reps: int, seed: int) -> GapCell:
    """`reps` models of GAP_RESPONSES responses x GAP_CONSTRAINTS constraints; a constraint is undetermined with
    probability `undetermined` on average, failing ones GAP_DESIGNS[design] times as often as passing ones."""
    from core.analysis import readmodel

    rng = np.random.default_rng(seed)
    shape = (reps, GAP_RESPONSES, GAP_CONSTRAINTS)
    passed = rng.random(shape) < pass_rate
    ratio = GAP_DESIGNS[design]
    base = undetermined / (pass_rate + ratio * (1 - pass_rate))
    hidden = rng.random(shape) < np.where(passed, base, min(ratio * base, 1.0))
    judged, ok = (~hidden).sum(axis=2), (passed & ~hidden).sum(axis=2)
    loose = np.where(judged > 0, ok / np.maximum(judged, 1), np.nan)
    strict = np.where(hidden.any(axis=2), np.nan, passed.all(axis=2).astype(float))
    names = np.repeat([f"m{i:04d}" for i in range(reps)], GAP_RESPONSES)
    frame = pd.DataFrame({"model": names, "loose_ias": loose.ravel(), "strict_ias": strict.ravel(), "cost_usd": 0.0,
                          "latency_ms": 1.0, "mode": "noisy", "n_constraints": GAP_CONSTRAINTS,
                          "n_constraint_errors": hidden.sum(axis=2).ravel(), "n_constraint_unjudged": 0})
    for key in readmodel.METRICS:
        frame[key] = frame.get(key, np.nan)
    models = pd.DataFrame({"model": frame["model"].unique(), "paradigm": "standard", "access": "open",
                           "is_baseline": False})
    truth = pass_rate - pass_rate**GAP_CONSTRAINTS

    def gap_of(scores: pd.DataFrame) -> pd.DataFrame:
        return readmodel.leaderboard(scores, models).query("metric == 'orchestration_gap'").dropna(subset=["ci_low"])

    def covered(low: pd.Series, high: pd.Series) -> float:
        return float(((low <= truth) & (truth <= high)).mean())

    shown = gap_of(frame)
    mover = gap_of(frame.drop(columns=["n_constraints", "n_constraint_errors", "n_constraint_unjudged"]))
    bounds = readmodel.gap_bounds(frame).dropna(subset=["bound_low"])
    return GapCell(pass_rate, undetermined, design, covered(shown["ci_low"], shown["ci_high"]),
                   covered(mover["ci_low"], mover["ci_high"]), covered(bounds["bound_low"], bounds["bound_high"]),
                   len(shown), float((shown["ci_high"] - shown["ci_low"]).mean()))


def gap_grid(reps: int) -> list[GapCell]:
    """Every gap cell, seeded per cell."""
    return [gap_cell(p, u, d, reps, seed=9000 + 100 * i + 10 * j + k) for i, p in enumerate(GAP_PASS)
            for j, u in enumerate(GAP_UNDETERMINED) for k, d in enumerate(GAP_DESIGNS)]


def gap_table(cells: list[GapCell]) -> str:
    """Markdown: coverage of the shown gap interval, of the MOVER interval alone and of the worst-case bound."""
    lines = ["| constraint pass rate × undetermined share × design | shown interval (MOVER ∪ worst-case bound) | mean "
             "width shown | MOVER alone (assumes missing at random; not shown) | worst-case bound |",
             "|---|---|---|---|---|"]
    lines += [f"| {c.pass_rate:g} × {c.undetermined:g} × {c.design} | {c.shown_interval:.1%} | {c.width:.3f} | "
              f"{c.interval:.1%} | {c.bound:.1%} |" for c in cells]
    return "\n".join(lines)


DIFF_N, DIFF_BUDGET = 300, 60  # shared instances per world; expected labelled pairs (planned) / responses / 5
DIFF_DESIGNS = ("uncertainty", "active", "planned")


def difference_frames(world: int, sim, design: str, rng: np.random.Generator) -> tuple[pd.DataFrame, pd.DataFrame]:
    """One world's scores (two models, shared instances) and gold frame with the recorded probabilities and draws:
    'uncertainty' / 'active' draw each response on its own (draw_gold_sample's floors 0.1 / 0.5), 'planned' both
    responses of an instance together (the planner's draw)."""
    n = DIFF_N
    ids_a, ids_b = np.arange(n) + 1, np.arange(n) + n + 1
    scores = pd.DataFrame({"response_id": np.r_[ids_a, ids_b], "model": ["a"] * n + ["b"] * n,
                           "instance_uid": [f"i{i}" for i in range(n)] * 2,
                           "strict_ias": np.r_[sim.f_a[world], sim.f_b[world]]})
    if design in ("uncertainty", "active"):
        pi = sampling_probabilities(np.r_[sim.u_a[world], sim.u_b[world]], 5 * DIFF_BUDGET,
                                    0.1 if design == "uncertainty" else 0.5)
        hit = rng.random(2 * n) < pi
        draw = np.full(2 * n, "run1-x")
    else:
        pair = sampling_probabilities(sim.u_a[world] + sim.u_b[world], DIFF_BUDGET)
        pi, hit = np.r_[pair, pair], np.tile(rng.random(n) < pair, 2)
        draw = np.full(2 * n, "plan-strict_ias-1")
    y = np.r_[sim.y_a[world], sim.y_b[world]]
    gold = pd.DataFrame({"response_id": np.r_[ids_a, ids_b][hit], "strict_ias": y[hit], "loose_ias": y[hit],
                         "rejection": np.nan, "conflict_recognition": np.nan, "probability": pi[hit],
                         "draw": draw[hit]})
    return scores, gold


@dataclass(frozen=True)
class DifferenceCell:
    """Errors of readmodel.corrected_difference against the world's true difference, with and without the recorded
    probabilities, over the worlds of one design."""

    design: str
    weighted: np.ndarray
    unweighted: np.ndarray
    all_weighted: bool

    @property
    def bias(self) -> float:
        """Mean error of the weighted estimate."""
        return float(self.weighted.mean())

    @property
    def se(self) -> float:
        """Simulation standard error of that mean."""
        return float(self.weighted.std(ddof=1) / np.sqrt(self.weighted.size))

    @property
    def unbiased(self) -> bool:
        """Mean error within 2 simulation standard errors of 0."""
        return abs(self.bias) <= 2 * self.se


def difference_cell(design: str, reps: int, seed: int = 40) -> DifferenceCell:
    """`reps` worlds: A right at 0.7, B at 0.6, judge accuracy 0.7 biased toward B, failures concentrated on hard
    responses (what the judges' uncertainty points at); gold drawn by `design`."""
    from core.analysis import readmodel

    sim = paired(reps, DIFF_N, 0.7, 0.1, 0.7, seed=seed, lean_b=0.2, hard_shift=0.4)
    rng = np.random.default_rng(seed + 1)
    truth, weighted, plain, flags = sim.gold.mean(axis=1), [], [], []
    for w in range(reps):
        scores, gold = difference_frames(w, sim, design, rng)
        d = readmodel.corrected_difference(scores, gold, "a", "b")
        if np.isnan(d["estimate"]):
            continue
        flags.append(bool(d["weighted"]))
        weighted.append(d["estimate"] - truth[w])
        plain.append(readmodel.corrected_difference(scores, gold.drop(columns=["probability", "draw"]), "a",
                                                    "b")["estimate"] - truth[w])
    return DifferenceCell(design, np.array(weighted), np.array(plain), all(flags))


def difference_rows(design: str, reps: int, seed: int = 40) -> DifferenceCell:
    """difference_cell vectorised over worlds (ppi.ipw_rows on the pairs, the same worlds and draws as
    difference_cell's, pair probabilities as readmodel.pair_probabilities gives them), for enough worlds to make the
    simulation SE small; tests pin it to difference_cell. Only the weighted estimate (unweighted left empty)."""
    from core.analysis.readmodel.corrected import pair_probabilities

    sim = paired(reps, DIFF_N, 0.7, 0.1, 0.7, seed=seed, lean_b=0.2, hard_shift=0.4)
    rng = np.random.default_rng(seed + 1)
    n = DIFF_N
    if design in ("uncertainty", "active"):
        floor = 0.1 if design == "uncertainty" else 0.5
        pi = np.stack([sampling_probabilities(np.r_[sim.u_a[w], sim.u_b[w]], 5 * DIFF_BUDGET, floor)
                       for w in range(reps)])
        hit = rng.random((reps, 2 * n)) < pi
        labeled = hit[:, :n] & hit[:, n:]
        draws = np.full(n, "run1-x")
        pair = np.stack([pair_probabilities(pi[w, :n], pi[w, n:], draws, draws) for w in range(reps)])
    else:
        pair = np.stack([sampling_probabilities(sim.u_a[w] + sim.u_b[w], DIFF_BUDGET) for w in range(reps)])
        labeled = rng.random((reps, n)) < pair
    keep = labeled.sum(1) >= MIN_LABELS
    d_f, d_y = sim.judged[keep], np.where(labeled, sim.gold, np.nan)[keep]
    rows = ipw_rows(d_f, d_y, np.where(labeled[keep], pair[keep], 1.0), bounds=(-1.0, 1.0))
    return DifferenceCell(design, rows.estimate - sim.gold.mean(axis=1)[keep], np.array([]), True)


MANY_WORLDS, MANY_SEEDS = 20_000, (0, 100, 200)  # worlds per chunk; chunk k uses seed + MANY_SEEDS[k]


def many_worlds(design: str, seed: int = 40) -> DifferenceCell:
    """difference_rows over len(MANY_SEEDS) chunks of MANY_WORLDS worlds (seeds fixed in advance), pooled."""
    chunks = [difference_rows(design, MANY_WORLDS, seed=seed + k) for k in MANY_SEEDS]
    return DifferenceCell(design, np.concatenate([c.weighted for c in chunks]), np.array([]), True)


def many_table(cells: list[DifferenceCell]) -> str:
    """Markdown: per design the pooled mean error of the weighted corrected difference over many worlds."""
    lines = ["| design | worlds | mean error, recorded probabilities (± simulation SE) | in SE | within 2 SE |",
             "|---|---|---|---|---|"]
    lines += [f"| {c.design} | {c.weighted.size:,} | {c.bias:+.5f} ± {c.se:.5f} | {c.bias / c.se:+.2f} | "
              f"{'yes' if c.unbiased else 'NO'} |" for c in cells]
    return "\n".join(lines)


def difference_table(cells: list[DifferenceCell]) -> str:
    """Markdown: per design the mean error of the weighted and the unweighted corrected difference."""
    lines = ["| design | worlds | mean error, recorded probabilities (± simulation SE) | within 2 SE | mean error, "
             "probabilities ignored (± SE) |", "|---|---|---|---|---|"]
    for c in cells:
        se_u = c.unweighted.std(ddof=1) / np.sqrt(c.unweighted.size)
        lines.append(f"| {c.design} | {c.weighted.size} | {c.bias:+.4f} ± {c.se:.4f} | {'yes' if c.unbiased else 'NO'}"
                     f" | {c.unweighted.mean():+.4f} ± {se_u:.4f} |")
    return "\n".join(lines)


@dataclass(frozen=True)
class BiasCell:
    """Errors of ppi_mean's estimate (through ppi_rows) against each world's truth in one cell."""

    name: str
    errors: np.ndarray

    @property
    def bias(self) -> float:
        """Mean error."""
        return float(self.errors.mean())

    @property
    def se(self) -> float:
        """Simulation standard error of the mean error."""
        return float(self.errors.std(ddof=1) / np.sqrt(self.errors.size))

    @property
    def unbiased(self) -> bool:
        """Mean error within 2 simulation standard errors of 0."""
        return abs(self.bias) <= 2 * self.se


UNWEIGHTED_CELLS = [("rate", r, a, n) for r in (0.05, 0.5) for a in (0.6, 0.9) for n in (10, 30)] + [
    ("difference", 0.1, 0.7, n) for n in (10, 30, 60)]


def unweighted_cell(kind: str, value: float, accuracy: float, labels: int, reps: int, seed: int) -> BiasCell:
    """`reps` worlds of one cell, `labels` uniform gold labels each: 'rate' is one model's rate `value` over
    RESPONSES responses (judge biased toward passing), 'difference' two models' paired difference `value` over
    DIFF_N shared instances (bounds -1, 1)."""
    rng = np.random.default_rng(seed)
    if kind == "rate":
        shape = (reps, RESPONSES)
        hard = rng.random(shape) < HARD_SHARE
        y = (rng.random(shape) < value).astype(float)
        f, bounds = judge(y, accuracy, hard, rng, 0.2), (0.0, 1.0)
    else:
        sim = paired(reps, DIFF_N, 0.7, value, accuracy, seed=seed + 1, lean_b=0.2, hard_shift=0.4)  # its own
        # stream: on `seed` the label draw below would reuse the uniforms that made instances hard
        y, f, bounds = sim.gold, sim.judged, (-1.0, 1.0)
    labeled = np.argsort(rng.random(y.shape), axis=1) < labels
    rows = ppi_rows(y, f, labeled, bounds=bounds)
    return BiasCell(_bias_name(kind, value, accuracy, labels), rows.estimate - y.mean(axis=1))


def _bias_name(kind: str, value: float, accuracy: float, labels: int) -> str:
    return f"{kind} {value:g} × judge {accuracy:g} × {labels} labels"


def unweighted_grid(worlds: int = MANY_WORLDS) -> list[BiasCell]:
    """Every unweighted cell over len(MANY_SEEDS) chunks of `worlds` worlds (seeds fixed in advance), pooled."""
    return [BiasCell(_bias_name(*spec), np.concatenate([unweighted_cell(*spec, worlds, seed=4000 + 10 * i + k).errors
                                                        for k in MANY_SEEDS]))
            for i, spec in enumerate(UNWEIGHTED_CELLS)]


def bias_table(cells: list[BiasCell]) -> str:
    """Markdown: per cell the mean error of ppi_mean's estimate on uniform labels."""
    lines = ["| cell | worlds | mean error (± simulation SE) | in SE | within 2 SE |", "|---|---|---|---|---|"]
    lines += [f"| {c.name} | {c.errors.size:,} | {c.bias:+.5f} ± {c.se:.5f} | {c.bias / c.se:+.2f} | "
              f"{'yes' if c.unbiased else 'NO'} |" for c in cells]
    return "\n".join(lines)


def _verdict_json(v: DesignVerdict) -> dict:
    return {"narrower": v.narrower, "cells": v.cells, "best_ratio": round(v.best_ratio, 3),
            "median_ratio": round(v.median_ratio, 3), "worst_ratio": round(v.worst_ratio, 3),
            "lowest_coverage": round(v.lowest_coverage, 4)}


def evidence(worlds: int, cells: list[DesignCell], few: list[DesignCell]) -> dict:
    """What data/sampling_designs.json stores for the Adjudicate page: per design its verdict over the whole grid
    (every label count the benchmark runs, from MIN_LABELS) and below SMALL_N labels."""
    small = {v.design: v for v in verdicts(few)} if few else {}
    return {"worlds": worlds, "cells": len(cells), "labels": sorted({c.labels for c in cells}),
            "small_labels": sorted({c.labels for c in few}), "yardstick": YARDSTICK, "reference": WILSON,
            "correction": PPI_ONLY,
            "designs": {v.design: {"strategy": STRATEGY.get(v.design, ""), **_verdict_json(v),
                                   **({"below": _verdict_json(small[v.design])} if v.design in small else {})}
                        for v in verdicts(cells)}}


def main() -> int:
    """Run the parts asked for, print their tables and floors, exit 1 on a missed floor."""
    parser = argparse.ArgumentParser()
    parser.add_argument("--worlds", type=int, default=400)
    parser.add_argument("--write", action="store_true", help=f"write the design verdicts to {EVIDENCE}")
    parser.add_argument("--part", choices=["planner", "designs", "gap", "unweighted", "differences", "all"], default="all")
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
    if args.part in ("gap", "all"):
        gaps = gap_grid(args.worlds)
        print(gap_table(gaps))
        print(f"\nLowest coverage: shown interval {min(c.shown_interval for c in gaps):.1%}, worst-case bound "
              f"{min(c.bound for c in gaps):.1%}; MOVER alone under missing at random: "
              f"{min(c.interval for c in gaps if c.design == 'missing at random'):.1%}, abstaining on hard cases: "
              f"{min(c.interval for c in gaps if c.design != 'missing at random'):.1%}")
        failed |= min(min(c.bound, c.shown_interval) for c in gaps) < 0.93
    if args.part in ("differences", "all"):
        diffs = [difference_cell(d, args.worlds, seed=40 + i) for i, d in enumerate(DIFF_DESIGNS)]
        print(difference_table(diffs))
        many = [many_worlds(d, seed=40 + i) for i, d in enumerate(DIFF_DESIGNS)]
        print(f"\nThe same computation vectorised (ppi.ipw_rows), {len(MANY_SEEDS)} x {MANY_WORLDS:,} worlds per "
              "design:\n")
        print(many_table(many))
        failed |= not all(c.unbiased and c.all_weighted for c in diffs + many)
    if args.part in ("unweighted", "all"):
        unweighted = unweighted_grid()
        print(f"ppi_mean (lam cross-fitted) on uniform labels, {len(MANY_SEEDS)} x {MANY_WORLDS:,} worlds per cell:\n")
        print(bias_table(unweighted))
        failed |= not all(c.unbiased for c in unweighted)
    if args.part in ("designs", "all"):
        cells = design_grid(args.worlds)
        print(design_table(cells))
        best = verdicts(cells)
        print("\nDesigns at least as narrow as uniform labels-only in >= 95% of cells: "
              + (", ".join(v.design for v in best[1:len(DESIGNS) + 1] if v.share >= 0.95) or "none"))
        few = [c for c in cells if c.labels < SMALL_N]
        print(f"\nBelow {SMALL_N} labels ({sorted({c.labels for c in few})}; the yardstick is Clopper-Pearson there):\n")
        print(design_table(few))
        below = verdicts(few)
        print(f"\nAgainst Wilson's interval below {SMALL_N} labels (not shown there: it covers only "
              f"{below[-1].lowest_coverage:.1%} in its worst cell), the default is at least as narrow in "
              f"{sum(c.widths[DEFAULT] <= c.widths[WILSON] + 1e-9 for c in few)} of {len(few)} cells and PPI++ alone "
              f"in {sum(c.widths[PPI_ONLY] <= c.widths[WILSON] + 1e-9 for c in few)}.")
        failed |= any(v.lowest_coverage < 0.93 for v in best[:len(DESIGNS) + 1])
        failed |= best[1].share < 0.95 or below[1].share < 0.95
        if args.write:
            EVIDENCE.write_text(json.dumps(evidence(args.worlds, cells, few), indent=1) + "\n")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
