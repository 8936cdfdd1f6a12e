"""The sampling design for production items sent to experts: strata by segment and by judge uncertainty, a
Neyman-like allocation, simple random sampling without replacement inside each stratum, and the inclusion
probability n_h / N_h recorded for every item of the stratum, so a Horvitz-Thompson (inverse-probability weighted)
estimate over the labelled sample stays unbiased for the whole run.
"""

from __future__ import annotations

import math
import random
from collections import defaultdict
from collections.abc import Hashable, Iterable, Mapping, Sequence
from typing import TypeVar

from sqlalchemy.engine import Engine
from sqlmodel import Session, col, select

from core.store.models import Verdict

RAG_METRICS = ("faithfulness", "coverage")
UNDECIDED = 0.25  # the largest expected squared error of a 0/1 verdict: nobody could decide
HIGH = 0.16  # a score in [0.2, 0.8] (or judges disagreeing as much) is "high" uncertainty
BANDS = ("undecided", "high", "low")
WEIGHT_FLOOR = 0.01
K = TypeVar("K", bound=Hashable)  # a stratum's key


def value_uncertainty(values: Sequence[float]) -> float:
    """Expected squared error of a 0/1 label given judges' scores in [0, 1]: the mean of v(1-v) plus their variance."""
    mean = sum(values) / len(values)
    spread = sum((v - mean) ** 2 for v in values) / len(values)
    return sum(v * (1 - v) for v in values) / len(values) + spread


def verdict_uncertainty(engine: Engine, run_id: int, metrics: Iterable[str] = RAG_METRICS) -> dict[int, float]:
    """Per response of the run with at least one decided score: the mean over metrics of `value_uncertainty` of the
    judges' values (rule verdicts, errors and not-applicable ones left out); responses absent here are undecided."""
    with Session(engine) as session:
        rows = session.exec(select(Verdict.response_id, Verdict.metric, Verdict.value).where(
            Verdict.run_id == run_id, col(Verdict.metric).in_(list(metrics)), Verdict.status == "ok",
            Verdict.judge != "rule", col(Verdict.value).is_not(None))).all()
    values: dict[int, dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
    for rid, metric, value in rows:
        assert value is not None  # the query keeps non-null values only
        values[int(rid)][metric].append(min(max(float(value), 0.0), 1.0))
    return {rid: sum(value_uncertainty(v) for v in by.values()) / len(by) for rid, by in values.items()}


def uncertainty_band(uncertainty: float | None) -> str:
    """'undecided' (no judge score), 'high' (at least HIGH) or 'low'."""
    if uncertainty is None:
        return "undecided"
    return "high" if uncertainty >= HIGH else "low"


def neyman_allocation(sizes: Mapping[K, int], weights: Mapping[K, float], n: int) -> dict[K, int]:
    """n items over strata in proportion to N_h * sqrt(w_h) (w_h: the stratum's mean uncertainty), every stratum at
    least one when n allows, none above its size; integer by largest remainder. n >= the total takes everything."""
    keys = sorted(sizes, key=str)
    if n >= sum(sizes.values()):
        return {k: sizes[k] for k in keys}
    alloc = {k: (1 if n >= len(keys) and sizes[k] else 0) for k in keys}
    while (left := n - sum(alloc.values())) > 0:
        open_ = [k for k in keys if alloc[k] < sizes[k]]
        mass = {k: sizes[k] * math.sqrt(max(weights.get(k, UNDECIDED), WEIGHT_FLOOR)) for k in open_}
        total = sum(mass.values())
        quotas = {k: left * mass[k] / total for k in open_}
        for k in open_:
            alloc[k] += min(int(quotas[k]), sizes[k] - alloc[k])
        add_remainders(alloc, quotas, sizes, n)
    return alloc


def add_remainders(alloc: dict[K, int], quotas: Mapping[K, float], sizes: Mapping[K, int],
                   n: int) -> None:
    """Largest remainder: one more item to the strata with the largest fractional quota until n are allocated
    (never beyond a stratum's size; ties by name)."""
    rest = n - sum(alloc.values())
    for k in sorted(quotas, key=lambda k: (-(quotas[k] - int(quotas[k])), str(k))):
        if rest <= 0:
            break
        if alloc[k] < sizes[k]:
            alloc[k] += 1
            rest -= 1


def inclusion_probabilities(strata: Mapping[Hashable, Sequence[int]], alloc: Mapping[Hashable, int]) -> dict[int, float]:
    """n_h / N_h for every item of every stratum (the design's probability, drawn or not)."""
    return {item: alloc[key] / len(items) for key, items in strata.items() for item in items}


def draw(strata: Mapping[Hashable, Sequence[int]], alloc: Mapping[Hashable, int], rng: random.Random) -> list[int]:
    """A simple random sample without replacement of alloc[h] items in each stratum (strata in a stable order)."""
    chosen: list[int] = []
    for key in sorted(strata, key=str):
        chosen += rng.sample(sorted(strata[key]), alloc[key])
    return chosen


def horvitz_thompson_mean(values: Mapping[int, float], probabilities: Mapping[int, float], population: int) -> float:
    """The Horvitz-Thompson estimate of a population mean: sum of y_i / pi_i over the sample, divided by N."""
    if population < 1:
        raise ValueError("population: must be at least 1")
    return sum(y / probabilities[i] for i, y in values.items()) / population
