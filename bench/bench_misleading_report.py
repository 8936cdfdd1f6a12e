"""`gauntlet misleading-evidence report`'s tables at the paper's scale: 15 models x 5 datasets x N questions under
every condition (bench/misleading_outcomes.py), CPU seconds per table (best of --repeat), with the load stated.

Run:  .venv/bin/python bench/bench_misleading_report.py [--models 15] [--questions 500] [--repeat 3]
      (one JSON object on stdout)
Smoke-tested small by tests/misleading_evidence/test_report_bench_smoke.py.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.misleading_outcomes import synthetic_outcomes
from core.protocols.misleading_evidence import analysis

TABLES = {"misleading_rate": analysis.misleading_rates, "accuracy": analysis.accuracy,
          "policy_gap": analysis.policy_gap, "mean_over_models": analysis.model_means}


def cpu_seconds(build, out, repeat: int) -> float:
    """The least CPU time of `repeat` builds of one table."""
    times = []
    for _ in range(repeat):
        start = time.process_time()
        build(out)
        times.append(time.process_time() - start)
    return round(min(times), 3)


def main() -> None:
    """Time every table of the report on one synthetic outcome set."""
    parser = argparse.ArgumentParser()
    parser.add_argument("--models", type=int, default=15)
    parser.add_argument("--questions", type=int, default=500)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    out = synthetic_outcomes(args.models, args.questions, seed=0)
    result = {"outcomes": len(out), "models": args.models, "questions_per_dataset": args.questions,
              "load_1min": os.getloadavg()[0],
              "cpu_s": {name: cpu_seconds(build, out, args.repeat) for name, build in TABLES.items()}}
    print(json.dumps(result))


if __name__ == "__main__":
    main()
