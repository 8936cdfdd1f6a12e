"""Coverage of the picker's prediction-powered rank-sets (picker.rank_sets) by seeded simulation against a known truth:
K models with known true rates on a binary metric, a biased judge of the given accuracy, gold labels on n responses
per model (a uniform sample, or the product's uncertainty sampling with recorded probabilities). A cell reports the
share of repetitions whose could-be-first set held the true best, the share where every model's true rank lay in its
rank set (the sets' joint claim, nominal 95%), and the mean size of the could-be-first set.

Run: python -m bench.bench_rank_sets [--reps 1000]. Prints the markdown table of docs/ppi.md and exits 1 if a cell's
joint coverage is below 95% minus the Monte Carlo margin (2 standard errors).
tests/analysis/test_rank_sets.py runs four of the cells with 120 repetitions.
"""

from __future__ import annotations

import argparse
import sys

import numpy as np
import pandas as pd

from core.analysis import picker, readmodel

CELLS: tuple[tuple[tuple[float, ...], float, int, bool], ...] = (
    ((0.5, 0.47, 0.4, 0.3), 0.8, 30, False),
    ((0.5, 0.47, 0.4, 0.3), 0.8, 60, False),
    ((0.5, 0.47, 0.4, 0.3), 0.8, 60, True),
    ((0.7, 0.69, 0.68, 0.67), 0.6, 30, False),
    ((0.15, 0.1, 0.05), 0.95, 30, False),
    ((0.15, 0.1, 0.05), 0.95, 30, True),
    ((0.6, 0.4, 0.2), 0.9, 100, False),
)


def simulate(seed: int, rates: tuple[float, ...], accuracy: float, labels: int, per_model: int = 600,
             weighted: bool = False) -> tuple[pd.DataFrame, pd.DataFrame, dict[int, float] | None]:
    """Scores of len(rates) models on one binary metric (Strict IAS) with the given true rates, a judge right with
    probability `accuracy` that errs towards a pass (a biased judge), and gold labels on `labels` responses per model:
    a uniform sample, or drawn by ppi.sampling_probabilities (expected `labels`) with the probabilities returned."""
    from core.analysis.ppi import sampling_probabilities

    rng = np.random.default_rng(seed)
    rows, gold, probabilities = [], {}, {}
    for m, rate in enumerate(rates):
        truth = rng.random(per_model) < rate
        wrong = rng.random(per_model) > accuracy
        judged = np.where(wrong, ~truth | (rng.random(per_model) < 0.3), truth)
        ids = np.arange(per_model) + 1 + m * per_model
        if weighted:
            pi = sampling_probabilities(np.where(wrong, 0.25, 0.02), labels)
            chosen = rng.random(per_model) < pi
            probabilities |= {int(i): float(p) for i, p in zip(ids[chosen], pi[chosen], strict=True)}
        else:
            chosen = np.isin(np.arange(per_model), rng.choice(per_model, labels, replace=False))
        gold |= {int(i): {"constraints": {"c1": bool(t)}} for i, t in zip(ids[chosen], truth[chosen], strict=True)}
        rows += [{"response_id": int(i), "model": f"m{m}", "instance_uid": f"i{k}", "mode": "noisy",
                  "strict_ias": float(j), "loose_ias": np.nan, "rejection": np.nan, "conflict_recognition": np.nan}
                 for k, (i, j) in enumerate(zip(ids, judged, strict=True))]
    return pd.DataFrame(rows), readmodel.gold_values(gold), probabilities if weighted else None


def coverage(rates: tuple[float, ...], accuracy: float, labels: int, reps: int, seed: int = 0,
             weighted: bool = False) -> tuple[float, float, float]:
    """(share of repetitions whose could-be-first set holds the true best, share where every true rank lies in its
    set, mean size of the could-be-first set)."""
    best, order = int(np.argmax(rates)), np.argsort(-np.asarray(rates), kind="stable")
    true_rank = {f"m{m}": int(np.flatnonzero(order == m)[0]) + 1 for m in range(len(rates))}
    first = joint = size = 0.0
    for r in range(reps):
        scores, gold, probabilities = simulate(seed * 100_003 + r, rates, accuracy, labels, weighted=weighted)
        sets = picker.rank_sets(scores, gold, [f"m{m}" for m in range(len(rates))], ["strict_ias"], probabilities)
        first += bool(sets.set_index("model").loc[f"m{best}", "could_be_first"])
        joint += all(row["rank_low"] <= true_rank[row["model"]] <= row["rank_high"] for row in sets.to_dict("records"))
        size += sets["could_be_first"].sum()
    return first / reps, joint / reps, size / reps


def main() -> None:
    """Print the coverage table; exit 1 when a cell's joint coverage falls short."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--reps", type=int, default=1000)
    reps = parser.parse_args().reps
    margin = 2 * np.sqrt(0.95 * 0.05 / reps)
    print(f"| true rates | judge accuracy | gold labels per model | sampling | best in could-be-first set | "
          f"every true rank in its set | mean could-be-first size |  ({reps:,} repetitions per cell)")
    print("|---|---|---|---|---|---|---|")
    short = []
    for rates, accuracy, labels, weighted in CELLS:
        first, joint, size = coverage(rates, accuracy, labels, reps, weighted=weighted)
        print(f"| {', '.join(f'{r:g}' for r in rates)} | {accuracy:g} | {labels} | "
              f"{'uncertainty' if weighted else 'uniform'} | {first:.1%} | {joint:.1%} | {size:.2f} |", flush=True)
        short += [rates] if joint < 0.95 - margin else []
    sys.exit(1 if short else 0)


if __name__ == "__main__":
    main()
