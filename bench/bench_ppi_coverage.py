"""Coverage of the judge-corrected intervals by seeded simulation against a known truth: the unweighted PPI++ interval
by number of gold labels (which chooses MIN_LABELS), the inverse-probability-weighted one under the product's own
uncertainty sampling, and the orchestration-gap interval by share of responses whose Strict IAS is determined.

Run: python -m bench.bench_ppi_coverage [--reps 1000] [--only unweighted,weighted,gap]
Prints one markdown table per estimator (the tables in docs/metrics.md) and exits 1 if a shown cell covers < 93%.
tests/test_ppi_coverage.py runs the same cells with fewer repetitions.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import pandas as pd

from core.analysis import readmodel
from core.analysis.ppi import MIN_LABELS, ipw_rows, ppi_mean, sampling_probabilities

TARGET = 0.93
RATES = (0.05, 0.15, 0.5, 0.7, 0.95)
ACCURACIES = (0.6, 0.8, 0.95)
POPULATION = 600  # responses of one model on one metric
HARD_SHARE = 0.3  # responses the judges disagree on (uncertainty 0.25 instead of 0.02)


@dataclass(frozen=True)
class Cell:
    """Coverage of one simulated cell: the share of repetitions whose CI held the truth, among those shown."""

    coverage: float
    shown: float
    mean_width: float


def _cell(hits: list[bool], widths: list[float], reps: int) -> Cell:
    shown = len(hits)
    return Cell(float(np.mean(hits)) if shown else float("nan"), shown / reps,
                float(np.mean(widths)) if shown else float("nan"))


def _judge(rng: np.random.Generator, y: np.ndarray, error: np.ndarray) -> np.ndarray:
    return np.where(rng.random(y.size) < error, 1 - y, y)


def unweighted_cell(rate: float, accuracy: float, n: int, reps: int, seed: int) -> Cell:
    """PPI++ (small-sample interval) with n gold labels drawn uniformly from POPULATION responses."""
    rng = np.random.default_rng(seed)
    hits, widths = [], []
    for _ in range(reps):
        y = (rng.random(POPULATION) < rate).astype(float)
        f = _judge(rng, y, np.full(POPULATION, 1 - accuracy))
        labeled = np.zeros(POPULATION, bool)
        labeled[rng.choice(POPULATION, n, replace=False)] = True
        e = ppi_mean(y[labeled], f[labeled], f[~labeled])
        hits.append(e.ci_low <= rate <= e.ci_high)
        widths.append(e.width)
    return _cell(hits, widths, reps)


def _errors(accuracy: float, hard: np.ndarray) -> np.ndarray:
    """Per-response judge error: three times as likely on hard responses (at most 0.5), overall 1 - accuracy."""
    easy_error = (1 - accuracy) / (1 - HARD_SHARE + 3 * HARD_SHARE)
    hard_error = min(0.5, 3 * easy_error)
    easy_error = (1 - accuracy - HARD_SHARE * hard_error) / (1 - HARD_SHARE)
    return np.where(hard, hard_error, easy_error)


def weighted_cell(rate: float, accuracy: float, n: int, reps: int, seed: int) -> Cell:
    """Inverse-probability-weighted PPI++ (lam cross-fitted) with gold labels drawn by the product's uncertainty
    sampling (expected n), all repetitions at once through ppi.ipw_rows (tests pin it to ipw_ppi_mean)."""
    rng = np.random.default_rng(seed)
    shape = (reps, POPULATION)
    y = (rng.random(shape) < rate).astype(float)
    hard = rng.random(shape) < HARD_SHARE
    f = np.where(rng.random(shape) < _errors(accuracy, hard), 1 - y, y)
    pi = np.stack([sampling_probabilities(np.where(h, 0.25, 0.02) + 0.01, n) for h in hard])
    labeled = rng.random(shape) < pi
    shown = labeled.sum(axis=1) >= MIN_LABELS
    r = ipw_rows(f[shown], np.where(labeled, y, np.nan)[shown], pi[shown])
    hits = ((r.low <= rate) & (rate <= r.high)).tolist()
    return _cell(hits, (r.high - r.low).tolist(), reps)


GAP_CONSTRAINTS, GAP_RESPONSES = 8, 150


def gap_cell(pass_rate: float, determined: float, reps: int, seed: int) -> Cell:
    """Orchestration gap (Loose - Strict IAS) of GAP_RESPONSES responses with GAP_CONSTRAINTS constraints each, a
    constraint undetermined with the probability that leaves Strict IAS determined on `determined` of responses."""
    rng = np.random.default_rng(seed)
    error = 1 - determined ** (1 / GAP_CONSTRAINTS)
    shape = (reps, GAP_RESPONSES, GAP_CONSTRAINTS)
    passed, errored = rng.random(shape) < pass_rate, rng.random(shape) < error
    judged = (~errored).sum(axis=2)
    loose = np.where(judged > 0, (passed & ~errored).sum(axis=2) / np.maximum(judged, 1), np.nan)
    strict = np.where(errored.any(axis=2), np.nan, passed.all(axis=2).astype(float))
    frame = pd.DataFrame({"model": np.repeat([f"m{i:04d}" for i in range(reps)], GAP_RESPONSES),
                          "loose_ias": loose.ravel(), "strict_ias": strict.ravel(), "cost_usd": 0.0,
                          "latency_ms": 1.0, "mode": "noisy"})
    for key in readmodel.METRICS:
        frame[key] = frame.get(key, np.nan)
    models = pd.DataFrame({"model": frame["model"].unique(), "paradigm": "standard", "access": "open",
                           "is_baseline": False})
    gap = readmodel.leaderboard(frame, models).query("metric == 'orchestration_gap'").dropna(subset=["ci_low"])
    truth = pass_rate - pass_rate**GAP_CONSTRAINTS
    hits = list((gap["ci_low"] <= truth) & (truth <= gap["ci_high"]))
    return _cell(hits, list(gap["ci_high"] - gap["ci_low"]), reps)


UNWEIGHTED_NS = (3, 5, 10, 15, 20, 30, 50)
MAX_HALF_WIDTH = 1 / 3  # an interval wider than two thirds of the range says too little to show
WEIGHTED_NS = (30, 50, 100)
GAP_PASS_RATES = (0.7, 0.85, 0.95)
GAP_DETERMINED = (0.03, 0.1, 0.3, 0.6, 1.0)


def markdown(rows: list[dict]) -> str:
    """A markdown table of {'row', 'col', 'cell'} records, rows and columns in first-seen order."""
    cols = list(dict.fromkeys(r["col"] for r in rows))
    cells = {(r["row"], r["col"]): r["cell"] for r in rows}
    lines = ["| | " + " | ".join(cols) + " |", "|---" * (len(cols) + 1) + "|"]
    lines += [f"| {row} | " + " | ".join(cells.get((row, c), "") for c in cols) + " |"
              for row in dict.fromkeys(r["row"] for r in rows)]
    return "\n".join(lines)


def _fmt(c: Cell) -> str:
    if np.isnan(c.coverage):
        return "no data"
    share = "" if c.shown >= 0.995 else f" (shown {c.shown:.0%})"
    return f"{c.coverage:.1%} ±{c.mean_width / 2:.3f}{share}"


def chosen_min_labels(cells: dict[tuple[str, int], Cell]) -> int | None:
    """The smallest n of UNWEIGHTED_NS from which every cell covers >= TARGET and no mean half-width exceeds
    MAX_HALF_WIDTH (that n and every larger one): the fewest gold labels worth showing a corrected value for."""
    ok = [all(c.coverage >= TARGET and c.mean_width / 2 <= MAX_HALF_WIDTH for (_, m), c in cells.items() if m == n)
          for n in UNWEIGHTED_NS]
    return next((n for i, n in enumerate(UNWEIGHTED_NS) if all(ok[i:])), None)


def run(reps: int, only: set[str]) -> tuple[list[str], float, int | None]:
    """Markdown tables, the lowest coverage over every shown cell and the chosen minimum number of labels."""
    out, worst, unweighted = [], 1.0, {}
    titles = {
        "unweighted": "PPI++ (uniform gold sample of n of 600), coverage ±mean half-width; rows: true rate × judge "
                      "accuracy, columns: n",
        "weighted": "Inverse-probability-weighted PPI++ (uncertainty sampling, expected n of 600); rows: true rate × "
                    "judge accuracy, columns: expected n",
        "gap": f"Orchestration gap ({GAP_RESPONSES} responses × {GAP_CONSTRAINTS} constraints); rows: constraint "
               "pass rate, columns: share of responses with Strict IAS determined",
    }
    suites: dict[str, list[tuple[str, str, Callable[[int], Cell]]]] = {
        "unweighted": [(f"{r} × {a}", f"n={n}", lambda s, r=r, a=a, n=n: unweighted_cell(r, a, n, reps, s))
                       for r in RATES for a in ACCURACIES for n in UNWEIGHTED_NS],
        "weighted": [(f"{r} × {a}", f"n={n}", lambda s, r=r, a=a, n=n: weighted_cell(r, a, n, reps, s))
                     for r in RATES for a in ACCURACIES for n in WEIGHTED_NS],
        "gap": [(f"pass {p}", f"{d:.0%} determined", lambda s, p=p, d=d: gap_cell(p, d, reps, s))
                for p in GAP_PASS_RATES for d in GAP_DETERMINED],
    }
    for name, cells in suites.items():
        if name not in only:
            continue
        rows = []
        for seed, (row, col, compute) in enumerate(cells):
            c = compute(seed + 1)
            if name == "unweighted":
                unweighted[(row, int(col[2:]))] = c
            rows.append({"row": row, "col": col, "cell": _fmt(c)})
            if name != "unweighted" or int(col[2:]) >= MIN_LABELS:
                worst = min(worst, c.coverage) if not np.isnan(c.coverage) else worst
        out.append(f"### {titles[name]}\n\n{markdown(rows)}\n")
    return out, worst, chosen_min_labels(unweighted) if unweighted else MIN_LABELS


def main() -> None:
    """Parse arguments, run the chosen suites, print their tables and the lowest coverage."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--reps", type=int, default=1000)
    parser.add_argument("--only", default="unweighted,weighted,gap")
    args = parser.parse_args()
    tables, worst, k = run(args.reps, set(args.only.split(",")))
    print(f"{args.reps} repetitions per cell; MIN_LABELS = {MIN_LABELS}\n")
    print("\n".join(tables))
    print(f"lowest coverage among shown cells (unweighted: n >= {MIN_LABELS}): {worst:.1%} (target {TARGET:.0%})")
    print(f"chosen minimum number of labels: {k} (coverage >= {TARGET:.0%} and half-width <= {MAX_HALF_WIDTH:.2f} "
          f"from there on)")
    sys.exit(0 if worst >= TARGET and k == MIN_LABELS else 1)


if __name__ == "__main__":
    main()
