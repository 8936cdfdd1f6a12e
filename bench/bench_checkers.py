"""Time strict IFEval checks (541 GPT-4 responses x their instructions) on one core; print checks/s.

Run: python bench/bench_checkers.py [--repeats N]
Checkers are built before timing; every timed pass starts with cold per-response caches (word and
sentence splits, language detection, loose variants), so a pass never reuses another pass's work.
One-time process costs (imports, loading language profiles) are paid in an untimed warm-up pass.
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

from core.checkers import build_checker  # noqa: E402
from core.checkers.base import loose_variants  # noqa: E402
from core.checkers.text import clear_caches  # noqa: E402
from core.ifeval_conformance import _kwargs_for  # noqa: E402

SHARED = ROOT / ".." / "shared" / "ifeval"
REFERENCE_CHECKS_PER_S = 2700


def _load(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def load_work() -> list[tuple[object, str]]:
    """(checker, response) pairs for every instruction of every IFEval prompt."""
    responses = {row["prompt"]: row["response"] for row in _load(SHARED / "input_response_data_gpt4.jsonl")}
    work = []
    for row in _load(SHARED / "input_data.jsonl"):
        for iid, kwargs in zip(row["instruction_id_list"], row["kwargs"], strict=True):
            work.append((build_checker(iid, _kwargs_for(kwargs, row["prompt"], iid)), responses[row["prompt"]]))
    return work


def timed_pass(work: list[tuple[object, str]]) -> tuple[float, list[bool]]:
    """Seconds for one cold-cache strict pass, and its verdicts."""
    clear_caches()
    loose_variants.cache_clear()
    start = time.perf_counter()
    verdicts = [checker.check(response) for checker, response in work]
    return time.perf_counter() - start, verdicts


def main() -> None:
    """Pin to one core, warm up, time several cold passes, print the figures."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=7)
    args = parser.parse_args()
    if hasattr(os, "sched_setaffinity"):
        os.sched_setaffinity(0, {sorted(os.sched_getaffinity(0))[0]})
    work = load_work()
    _, first = timed_pass(work)
    runs = [timed_pass(work) for _ in range(args.repeats)]
    assert all(verdicts == first for _, verdicts in runs), "verdicts changed between passes"
    times = sorted(seconds for seconds, _ in runs)
    best, median = times[0], times[len(times) // 2]
    print(f"strict checks per pass: {len(work)} (true: {sum(first)})")
    print(f"best   {best * 1000:8.1f} ms  -> {len(work) / best:9.0f} checks/s")
    print(f"median {median * 1000:8.1f} ms  -> {len(work) / median:9.0f} checks/s")
    print(f"speed-up over reference ({REFERENCE_CHECKS_PER_S} checks/s), median: {len(work) / median / REFERENCE_CHECKS_PER_S:.1f}x")


if __name__ == "__main__":
    main()
