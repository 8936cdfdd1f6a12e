"""Per-domain means and constraint failure rates (the Domains and Constraint errors pages)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from core.analysis.readmodel.states import STATE_COLUMNS, metric_state_counts, state_text, state_totals
from core.store.schema import NO_MODE

DOMAIN_METRICS: tuple[str, ...] = ("faithfulness", "coverage", "strict_ias", "loose_ias")


def domain_metrics(scores: pd.DataFrame) -> pd.DataFrame:
    """Mean Faithfulness, Coverage, Strict IAS and Loose IAS per (model, domain), with n per metric and responses."""
    grouped = scores.groupby(["model", "domain"], sort=True)
    out = grouped[list(DOMAIN_METRICS)].mean()
    for metric in DOMAIN_METRICS:
        out[f"n_{metric}"] = grouped[metric].count()
    out["responses"] = grouped.size()
    return out.reset_index()


def domain_heatmap(scores: pd.DataFrame, metrics: Sequence[str] = DOMAIN_METRICS) -> pd.DataFrame:
    """Domain x metric matrix of means over the given responses (all selected models pooled)."""
    return scores.groupby("domain", sort=True)[list(metrics)].mean()


def domain_metric_states(scores: pd.DataFrame, by: Sequence[str], metrics: Sequence[str] = DOMAIN_METRICS) -> pd.DataFrame:
    """Per group of `by` (e.g. model and domain) and metric: the mean, n with a value and the count of each score
    state of the responses behind it (states.response_statuses): one row per radar point or heatmap cell, groups in
    sorted order. Counted in one pass per metric over the whole frame (metric_state_counts on the group codes)."""
    columns = [*by, "metric", "mean", "n", *STATE_COLUMNS.values()]
    grouped = scores.groupby(list(by), sort=True)
    if scores.empty or grouped.ngroups == 0:
        return pd.DataFrame(columns=columns)
    means, counts = grouped[list(metrics)].mean(), grouped[list(metrics)].count()
    states = metric_state_counts(scores.assign(_group=grouped.ngroup()), list(metrics), by="_group")
    keys = means.index.to_frame(index=False)
    out = keys.loc[np.repeat(np.arange(len(keys)), len(metrics))].reset_index(drop=True)
    out["metric"] = list(metrics) * len(keys)
    out["mean"] = means.to_numpy(dtype=float).reshape(-1)
    out["n"] = counts.to_numpy(dtype=np.int64).reshape(-1)
    for column in STATE_COLUMNS.values():
        out[column] = states[column].to_numpy(dtype=np.int64)
    return out[columns]


def failure_rates(counts: pd.DataFrame, level: str = "category") -> pd.DataFrame:
    """Constraint failure rate per model and category (level='category') or sub-dimension ('sub_dimension').

    `counts` has the load_failure_counts / verdict_counts layout (already filtered by mode and domain).
    Only verdicts with status 'ok' and a decided pass/fail count; errors and not-applicable are reported as
    'undetermined'. `share_of_failures` normalises each model's failures to sum to 1 (the stacked view).
    """
    keys = ["model", "category"] + (["sub_dimension"] if level == "sub_dimension" else [])
    states = [c for c in STATE_COLUMNS.values() if c in counts.columns]
    out = counts.groupby(keys, sort=True)[["verdicts", "decided", "failed", *states]].sum().reset_index()
    out["undetermined"] = out["verdicts"] - out["decided"]
    out["failure_rate"] = out["failed"] / out["decided"].where(out["decided"] > 0)
    totals = out.groupby("model")["failed"].transform("sum")
    out["share_of_failures"] = out["failed"] / totals.where(totals > 0)
    return out


def verdict_totals_text(rates: pd.DataFrame) -> str:
    """Under the failure chart: its constraint verdicts, decided and failed, the undetermined rest split by state
    (judge errors, unparseable, not applicable, skipped) and the constraints left unjudged, zeros included."""
    verdicts, decided, failed = (int(rates[column].sum()) for column in ("verdicts", "decided", "failed"))
    text = f"n = {verdicts:,} constraint verdicts · {decided:,} decided ({failed:,} failed) · {verdicts - decided:,} undetermined"
    split = {state: n for state, n in state_totals(rates).items() if state not in ("scored", "unjudged")}
    if split:
        text += " (" + state_text(split).removeprefix("n = ") + ")"
    if "unjudged" in state_totals(rates):
        text += f" · {state_totals(rates)['unjudged']:,} constraints unjudged (no verdict of the judge)"
    return text


def modeless_verdicts(counts: pd.DataFrame) -> int:
    """Constraint verdicts in `counts` of instances without a mode (counted under NO_MODE, outside Figure 4's modes)."""
    return int(counts.loc[counts["mode"] == NO_MODE, "verdicts"].sum()) if not counts.empty else 0


def failing_verdicts(verdicts: pd.DataFrame, model: str, category: str | None = None, sub_dimension: str | None = None) -> pd.DataFrame:
    """The failed constraint verdicts behind one bar: response, instance, constraint text, method, judge, reason."""
    mask = (verdicts["model"] == model) & (verdicts["status"] == "ok") & (verdicts["passed"].astype(object) == False)  # noqa: E712
    if category:
        mask &= verdicts["category"] == category
    if sub_dimension:
        mask &= verdicts["sub_dimension"] == sub_dimension
    cols = ["response_id", "instance_uid", "domain", "mode", "category", "sub_dimension", "cid", "text", "method", "judge", "reason"]
    return verdicts.loc[mask, cols].sort_values(["instance_uid", "cid"]).reset_index(drop=True)
