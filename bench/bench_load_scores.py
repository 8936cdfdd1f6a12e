"""CPU time of readmodel.load_scores on a synthetic EnterpriseRAG run of about 3,900 responses (4 models x 983
instances), summaries built: the stored path that every results page takes first.

    .venv/bin/python -m bench.bench_load_scores [var/bench_load_scores.db] [--repeat 15]

Prints the median, min and max CPU milliseconds of this process over the repeats (process_time, so it stays comparable
on a loaded machine) after one warm-up call.
"""

from __future__ import annotations

import argparse
import statistics
import time
from pathlib import Path

from sqlalchemy import create_engine

from bench.make_synthetic_results import make_results
from core.analysis.readmodel import load_scores


def cpu_ms(url: str, repeat: int) -> list[float]:
    """CPU milliseconds of `repeat` load_scores calls on run 1 under the heuristic judge, after one warm-up."""
    engine = create_engine(url)
    rows = len(load_scores(engine, [1], "heuristic"))
    print(f"{rows:,} responses")
    times = []
    for _ in range(repeat):
        start = time.process_time()
        load_scores(engine, [1], "heuristic")
        times.append((time.process_time() - start) * 1000)
    engine.dispose()
    return times


def main() -> None:
    """Build the database once (when missing), then time load_scores."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("path", nargs="?", default="var/bench_load_scores.db")
    parser.add_argument("--repeat", type=int, default=15)
    args = parser.parse_args()
    path = Path(args.path)
    url = f"sqlite:///{path}"
    if not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
        make_results(url, n_models=4, n_instances=983, with_baselines=False)
    times = cpu_ms(url, args.repeat)
    print(f"load_scores CPU ms: median {statistics.median(times):.1f} (min {min(times):.1f}, max {max(times):.1f}, "
          f"n={len(times)})")


if __name__ == "__main__":
    main()
