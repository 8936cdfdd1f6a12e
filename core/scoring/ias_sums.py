"""Instruction-adherence sums: each EnterpriseRAG response's Loose and Strict IAS (and Loose IAS per category), its
amounts per 1k instances and the orchestration gap's per-response helpers from its stored constraint counts, with
their score states, summed per group as metric_aggregate rows. The summarise stage stores them
(summaries.rebuild_summaries, in the run's summary transaction); the read model sums the same way inline for stale
runs (readmodel.enterprise_aggregates), so the stored rows are a cache of this computation, never a second one.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from core.metrics import STATES
from core.store.schema import CATEGORIES

IAS_AGGREGATE_METRICS: tuple[str, ...] = ("loose_ias", "strict_ias", *(f"loose_{c}" for c in CATEGORIES))
GAP_HELPERS: tuple[str, ...] = ("_gap_lo", "_gap_hi", "_gap_hidden", "_loose_strict")  # the leaderboard's gap sums
AMOUNT_METRICS: tuple[str, ...] = ("cost_per_1k", "latency_min_per_1k")
GROUP_COLUMNS = ["run_id", "model", "protocol", "mode", "domain", "language", "origin", "has_protocol"]
SUM_COLUMNS = ["metric", "state", "responses", "n_values", "total", "total_sq"]


def ias_from_counts(judged, passed, errors, unjudged) -> tuple[np.ndarray, np.ndarray]:
    """Loose and Strict IAS from per-response counts (arrays or scalars); NaN where undetermined.

    Loose = passed / judged over judged constraints (errors and unjudged leave the denominator). Strict is
    complete-case: 1 when every constraint was judged and satisfied, 0 when every constraint was judged and one
    failed, undetermined as soon as any constraint is an error or unjudged, whatever the others say (keeping
    "error + failure" as 0 while dropping "error + no failure" biases Strict down: tests/test_strict_ias_simulation.py).
    """
    judged, passed = np.asarray(judged, dtype=float), np.asarray(passed, dtype=float)
    hidden = np.asarray(errors, dtype=float) + np.asarray(unjudged, dtype=float)
    with np.errstate(invalid="ignore", divide="ignore"):
        loose = np.where(judged > 0, passed / judged, np.nan)
    strict = np.where((hidden > 0) | (judged == 0), np.nan, (passed == judged).astype(float))
    return loose, strict


SCORED, ERROR, UNJUDGED, NA = (STATES.index(s) for s in ("scored", "judge_error", "unjudged", "not_applicable"))


def response_values(counts: pd.DataFrame) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """Per metric: each response's value (NaN: none) and score state (its position in STATES), by the per-response frame's own rules: IAS by
    ias_from_counts with states.response_statuses' states, the amounts per 1k instances (leaderboard.with_amounts)
    and the orchestration gap's helpers (leaderboard.gap_bounds' per-response bounds over the responses with a
    constraint, whether one is undetermined, and Loose IAS where Strict IAS is determined)."""
    def column(name: str) -> np.ndarray:
        return pd.to_numeric(counts[name]).fillna(0).to_numpy(dtype="int64")

    judged, passed, errors, nn = (column(c) for c in ("judged", "passed", "errors", "nn"))
    unjudged = nn - judged - errors
    loose, strict = ias_from_counts(judged, passed, errors, unjudged)

    def states(values: np.ndarray) -> np.ndarray:
        return np.select([~np.isnan(values), errors > 0, unjudged > 0], [SCORED, ERROR, UNJUDGED], default=NA)

    out = {"loose_ias": (loose, states(loose)), "strict_ias": (strict, states(strict))}
    for c in CATEGORIES:
        value = ias_from_counts(column(f"judged_{c}"), column(f"passed_{c}"), 0, 0)[0]
        out[f"loose_{c}"] = (value, states(value))
    scored = np.full(len(counts), SCORED)
    cost = pd.to_numeric(counts["cost_usd"], errors="coerce").astype(float).fillna(0.0).to_numpy() * 1000.0
    latency = pd.to_numeric(counts["latency_ms"], errors="coerce").astype(float).to_numpy() * (1000.0 / 60_000.0)
    out["cost_per_1k"] = (cost, scored)
    out["latency_min_per_1k"] = (latency, np.where(np.isnan(latency), UNJUDGED, SCORED))
    k, hidden = nn.astype(float), (errors + unjudged).astype(float)
    sure = k - hidden
    right = np.nan_to_num(loose) * sure
    with np.errstate(invalid="ignore", divide="ignore"):
        exact = right / k - (right == k).astype(float)
        failed = sure - right > 0.5
        lo = np.where(hidden == 0, exact, np.where(failed, right / k, 0.0))
        hi = np.where(hidden == 0, exact, np.where(failed, (right + hidden) / k, (k - 1) / k))
    some = k > 0
    out["_gap_lo"] = (np.where(some, lo, np.nan), scored)
    out["_gap_hi"] = (np.where(some, hi, np.nan), scored)
    out["_gap_hidden"] = (np.where(some, (hidden > 0).astype(float), np.nan), scored)
    out["_loose_strict"] = (np.where(np.isnan(strict), np.nan, loose), scored)
    return out


def group_sums(counts: pd.DataFrame) -> pd.DataFrame:
    """response_values summed per group of GROUP_COLUMNS, metric and state: rows of GROUP_COLUMNS, metric, state and SUM_COLUMNS."""
    if counts.empty:
        return pd.DataFrame(columns=[*GROUP_COLUMNS, *SUM_COLUMNS])
    grouped = counts.groupby(GROUP_COLUMNS, sort=True, dropna=False)
    codes, keys = grouped.ngroup().to_numpy(), grouped.size().index.to_frame(index=False)
    width = len(STATES)
    size = len(keys) * width
    metrics: list[str] = []
    columns: dict[str, list[np.ndarray]] = {"responses": [], "n_values": [], "total": [], "total_sq": []}
    for metric, (values, states) in response_values(counts).items():
        cell = codes * width + states
        present = ~np.isnan(values)
        x = np.where(present, values, 0.0)
        metrics.append(metric)
        columns["responses"].append(np.bincount(cell, minlength=size))
        columns["n_values"].append(np.bincount(cell, weights=present, minlength=size))
        columns["total"].append(np.bincount(cell, weights=x, minlength=size))
        columns["total_sq"].append(np.bincount(cell, weights=x * x, minlength=size))
    responses = np.concatenate(columns["responses"])
    kept = np.flatnonzero(responses > 0)
    cell = kept % size
    frame = keys.take(cell // width).reset_index(drop=True)
    frame["metric"] = np.asarray(metrics, dtype=object)[kept // size]
    frame["state"] = np.asarray(STATES, dtype=object)[cell % width]
    frame["responses"] = responses[kept]
    for name in ("n_values", "total", "total_sq"):
        frame[name] = np.concatenate(columns[name])[kept]
    return frame
