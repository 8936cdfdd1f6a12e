"""Repeated answers (`gauntlet run --repeats k`) as per-item values: the one computation behind every table.

A repeated item is one observation, not k: its value is the mean over its repeats (a pass rate for a 0/1 metric),
the n of a table stays the number of items, and the intervals (stats.metric_intervals on the per-item values) are
clustered by item. Runs without repeats pass through unchanged. The gate (core.analysis.gate) reads the same
per-item values through item_means.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

ITEM_KEYS: tuple[str, ...] = ("run_id", "model", "instance_uid")  # an EnterpriseRAG item of one run and model
SUMMED_COLUMNS = frozenset({"judge_cost_usd", "judge_calls", "n_constraint_errors", "n_constraint_unjudged"})
REPEAT_COLUMNS = ["model", "repeats", "items", "flaky_items"]


def item_means(frame: pd.DataFrame, keys: Sequence[str], columns: Sequence[str]) -> pd.DataFrame:
    """Per item (the `keys`, in first-seen order): each column's mean over the item's repeats, NaN unless every
    repeat has a value (a pass rate over fewer repeats than the others is not the same measure)."""
    grouped = frame.groupby(list(keys), sort=False, dropna=False)
    means, counts = grouped[list(columns)].mean(), grouped[list(columns)].count()
    return means.where(counts.eq(grouped.size(), axis=0))


def has_repeats(frame: pd.DataFrame, keys: Sequence[str]) -> bool:
    """Whether some item (the `keys`) has more than one response in a frame of one row per response."""
    one_per_response = "response_id" not in frame or not frame["response_id"].duplicated().any()
    return (not frame.empty and set(keys) <= set(frame.columns) and one_per_response
            and bool(frame.duplicated(list(keys)).any()))


def per_item(frame: pd.DataFrame, keys: Sequence[str] = ITEM_KEYS) -> pd.DataFrame:
    """One row per item: float columns are item_means, counts and judge cost are summed over the repeats, every
    other column is the first repeat's (its response_id), and a `<metric>_state`/`_status` is that of the first
    repeat without a value, else of the first not scored, else scored. Unchanged when no item has repeats."""
    if not has_repeats(frame, keys):
        return frame
    keys = list(keys)
    ordered = frame.sort_values("response_id", kind="stable") if "response_id" in frame else frame
    out = ordered.drop_duplicates(keys).set_index(keys)
    floats = [c for c in frame.columns if c not in keys and c not in SUMMED_COLUMNS and frame[c].dtype == float]
    summed = [c for c in frame.columns if c in SUMMED_COLUMNS]
    grouped = ordered.groupby(keys, sort=False, dropna=False)
    out[floats] = item_means(ordered, keys, floats).reindex(out.index)
    out[summed] = grouped[summed].sum().reindex(out.index).astype(frame[summed].dtypes.to_dict())
    for metric in floats:
        labels = [c for c in (f"{metric}_state", f"{metric}_status") if c in frame.columns]
        if labels:
            rank = np.where(ordered[metric].isna(), 0, 1) + (ordered[labels[0]] == "scored").to_numpy(dtype=int)
            valued = ordered.assign(_rank=rank).sort_values("_rank", kind="stable")
            out[labels] = valued.drop_duplicates(keys).set_index(keys)[labels].reindex(out.index)
    return out.reset_index()[list(frame.columns)]


def binary_metrics(frame: pd.DataFrame, metrics: Sequence[str]) -> list[str]:
    """The metrics whose every response value is 0 or 1 (pass / fail)."""
    return [m for m in metrics if m in frame.columns and frame[m].notna().any()
            and bool(frame[m].dropna().isin((0.0, 1.0)).all())]


def repeat_summary(frame: pd.DataFrame, metrics: Sequence[str], keys: Sequence[str] = ITEM_KEYS) -> pd.DataFrame:
    """Per model of a repeated run: repeats per item (the most any item has), items, and flaky items (a 0/1 metric's
    pass rate over the item's repeats strictly between 0 and 1). Empty when no item has repeats."""
    if not has_repeats(frame, keys):
        return pd.DataFrame(columns=REPEAT_COLUMNS)
    binary = binary_metrics(frame, metrics)
    rates = item_means(frame, keys, binary)
    flaky = ((rates > 0) & (rates < 1)).any(axis=1) if binary else pd.Series(False, index=rates.index)
    counts = frame.groupby(list(keys), sort=False, dropna=False).size()
    per_model = pd.DataFrame({"repeats": counts, "flaky": flaky}).reset_index().groupby("model", sort=True)
    out = per_model.agg(repeats=("repeats", "max"), items=("repeats", "size"), flaky_items=("flaky", "sum"))
    return out.reset_index().astype({"repeats": int, "items": int, "flaky_items": int})[REPEAT_COLUMNS]


def repeat_text(summary: pd.DataFrame) -> str:
    """The table's line for a repeated run, e.g. 'model-a: 3 repeats per item, 40 items, 2 flaky (pass rate strictly
    between 0 and 1)'; empty without repeats."""
    parts = [f"{r['model']}: {r['repeats']} repeats per item, {r['items']} items, {r['flaky_items']} flaky"
             for r in summary.to_dict("records")]
    return "; ".join(parts) + " (flaky: pass rate strictly between 0 and 1; each item counts once, by its mean "\
        "over its repeats)" if parts else ""


def latest_run_rows(frame: pd.DataFrame, keys: Sequence[str] = ("model", "instance_uid")) -> pd.DataFrame:
    """The rows of the run holding each (model, instance)'s latest response (highest response_id), with all of
    that run's repeats of it, when several runs overlap."""
    if frame.empty or not frame.duplicated(list(keys)).any():
        return frame
    latest = frame.loc[frame.groupby(list(keys), sort=False)["response_id"].idxmax(), [*keys, "run_id"]]
    run = pd.MultiIndex.from_frame(frame[list(keys)]).map(dict(zip(pd.MultiIndex.from_frame(latest[list(keys)]),
                                                                   latest["run_id"], strict=True)))
    return frame[np.asarray(run) == frame["run_id"].to_numpy()]
