"""Benchmark core.analysis.stats.bootstrap_ci: 10,000 paired resamples of 1,000 items; prints the best of a few runs.

Run: .venv/bin/python bench/bench_stats.py [--items 1000] [--resamples 10000] [--repeats 5]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from core.analysis.stats import bootstrap_ci, mean_diff  # noqa: E402


def time_bootstrap(items: int, resamples: int, paired: bool, repeats: int) -> list[float]:
    """Wall-clock seconds of each of `repeats` bootstrap_ci(mean_diff) calls on binary outcomes."""
    rng = np.random.default_rng(0)
    a = (rng.random(items) < 0.42).astype(float)
    b = (rng.random(items) < 0.35).astype(float)
    times = []
    for seed in range(repeats):
        start = time.perf_counter()
        bootstrap_ci(mean_diff, a, b, paired=paired, n_resamples=resamples, seed=seed)
        times.append(time.perf_counter() - start)
    return times


def main() -> None:
    """Parse arguments, time paired and independent bootstraps, print the figures."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--items", type=int, default=1000)
    parser.add_argument("--resamples", type=int, default=10_000)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    for paired in (True, False):
        times = time_bootstrap(args.items, args.resamples, paired, args.repeats)
        label = "paired" if paired else "independent"
        print(
            f"bootstrap_ci mean_diff {label}: {args.resamples} resamples x {args.items} items: "
            f"best {min(times) * 1000:.0f} ms, median {np.median(times) * 1000:.0f} ms over {args.repeats} runs"
        )


if __name__ == "__main__":
    main()
