"""Time strict IFEval checks (541 GPT-4 responses x their instructions) on one core; print checks/s.

Run: python bench/bench_checkers.py [--repeats N]
Checkers are built before timing; every timed pass starts with cold per-response caches (word and
sentence splits, language detection, loose variants), so a pass never reuses another pass's work.
One-time process costs (imports, loading language profiles, compiling the numba language-detection
kernel or loading it from numba's cache) are paid before timing; the kernel's cost is printed separately.
Pure lookup tables (the per-word n-gram rows and character normalisations of language detection)
stay warm between passes; a second series of passes clears them too and is reported separately.
Every timed pass's verdicts are compared with the reference implementation's strict verdicts.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from core.langid import clear_tables, warm_up  # noqa: E402
from core.scoring.checkers import build_checker  # noqa: E402
from core.scoring.checkers.base import loose_variants  # noqa: E402
from core.scoring.checkers.text import clear_caches  # noqa: E402
from core.scoring.ifeval_conformance import _kwargs_for  # noqa: E402

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


def reference_verdicts() -> list[bool | None]:
    """The reference implementation's strict verdicts in the order of load_work(); None where it flags the key nondeterministic."""
    reference = {row["key"]: row for row in _load(SHARED / "reference_verdicts.jsonl")}
    flags = []
    for row in _load(SHARED / "input_data.jsonl"):
        ref = reference[row["key"]]
        flags.extend([None] * len(ref["strict"]) if ref.get("nondeterministic_in_reference") else ref["strict"])
    return flags


def disagreements(verdicts: list[bool], reference: list[bool | None]) -> int:
    """Verdicts differing from the reference's deterministic ones."""
    return sum(theirs is not None and ours != theirs for ours, theirs in zip(verdicts, reference, strict=True))


def timed_pass(work: list[tuple[object, str]], cold_tables: bool = False) -> tuple[float, list[bool]]:
    """Seconds for one cold-cache strict pass, and its verdicts."""
    clear_caches()
    loose_variants.cache_clear()
    if cold_tables:
        clear_tables()
    start = time.perf_counter()
    verdicts = [checker.check(response) for checker, response in work]
    return time.perf_counter() - start, verdicts


def _rate_line(label: str, count: int, seconds: float) -> str:
    rate = count / seconds
    return f"{label:<8}{seconds * 1000:8.1f} ms  -> {rate:9.0f} checks/s  = {rate / REFERENCE_CHECKS_PER_S:5.1f}x reference"


def main() -> None:
    """Pin to one core, warm up, time several cold passes, print the figures."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=15)
    args = parser.parse_args()
    if hasattr(os, "sched_setaffinity"):
        os.sched_setaffinity(0, {sorted(os.sched_getaffinity(0))[0]})
    kernel_seconds, cached = warm_up()
    work = load_work()
    reference = reference_verdicts()
    _, first = timed_pass(work)
    runs = [timed_pass(work) for _ in range(args.repeats)]
    cold = [timed_pass(work, cold_tables=True) for _ in range(max(3, args.repeats // 3))]
    differing = max(disagreements(verdicts, reference) for _, verdicts in runs + cold)
    compared = sum(flag is not None for flag in reference)
    times = [seconds for seconds, _ in runs]
    print(f"strict checks per pass: {len(work)} (true: {sum(first)}); reference: {REFERENCE_CHECKS_PER_S} checks/s")
    how = "loaded from numba's cache" if cached else "compiled (no usable numba cache)"
    print(f"language-detection kernels {how}, n-gram table built: {kernel_seconds * 1000:.0f} ms once per process, untimed")
    print(_rate_line("best", len(work), min(times)))
    print(_rate_line("median", len(work), statistics.median(times)))
    cold_median = statistics.median(seconds for seconds, _ in cold)
    print(_rate_line("cold", len(work), cold_median) + "  (median; lookup tables also cleared every pass)")
    print(f"verdicts identical in every timed pass: {all(v == first for _, v in runs + cold)}")
    print(f"timed verdicts differing from the reference's strict verdicts: {differing} of {compared} deterministic")


if __name__ == "__main__":
    main()
