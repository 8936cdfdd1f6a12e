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


def failure_view(counts: pd.DataFrame, modes: Sequence[str], domains: Sequence[str] = (),
                 category: str | None = None) -> pd.DataFrame:
    """The rows of a load_failure_counts / verdict_counts frame that Figure 4 shows: of `modes` and `domains` (empty:
    every domain) and, with `category`, of that category only (failure_mode_counts selects the domains and category in SQL)."""
    view = counts[counts["mode"].isin(list(modes))]
    if domains:
        view = view[view["domain"].isin(list(domains))]
    return view if category is None else view[view["category"] == category]


def _group_codes(keys: list[pd.Series]) -> tuple[np.ndarray, np.ndarray]:
    """Each row's group among the distinct rows of the `keys` columns in sorted order (-1: a row with a missing key,
    left out as groupby(sort=True) leaves it out), and the row where each group first occurs."""
    size = len(keys[0])
    combined, missing = np.zeros(size, dtype=np.int64), np.zeros(size, dtype=bool)
    for column in keys:
        codes, uniques = pd.factorize(column, sort=True)
        combined = combined * (len(uniques) + 1) + codes  # sorted codes, combined in key order: the groups' order
        missing |= codes < 0
    rows = np.flatnonzero(~missing)
    _, first, inverse = np.unique(combined[rows], return_index=True, return_inverse=True)
    codes = np.full(size, -1, dtype=np.intp)
    codes[rows] = inverse.reshape(-1)
    return codes, rows[first]


def _ratio(numerator: np.ndarray, denominator: np.ndarray) -> np.ndarray:
    """numerator / denominator, NaN where the denominator is not positive."""
    out = np.full(len(numerator), np.nan)
    np.divide(numerator, denominator, out=out, where=denominator > 0)
    return out


def failure_rates(counts: pd.DataFrame, level: str = "category") -> pd.DataFrame:
    """Constraint failure rate per model and category (level='category') or sub-dimension ('sub_dimension').

    `counts` has the load_failure_counts / verdict_counts layout (already filtered by mode and domain; or
    failure_mode_counts' rows, summed per mode). Only verdicts with status 'ok' and a decided pass/fail
    count; errors and not-applicable are reported as 'undetermined'. `share_of_failures` normalises each model's
    failures to sum to 1 (the stacked view). Rows sorted by model, category (and sub-dimension).
    """
    keys = ["model", "category"] + (["sub_dimension"] if level == "sub_dimension" else [])
    states = [c for c in STATE_COLUMNS.values() if c in counts.columns]
    columns = ["verdicts", "decided", "failed", *states]
    key_columns = [counts[key] for key in keys]  # column by column: no sub-frame is copied
    codes, first = _group_codes(key_columns)
    taken = codes >= 0
    sums = np.zeros((len(first), len(columns)), dtype=np.int64)
    values = np.column_stack([counts[column].to_numpy(dtype=np.int64) for column in columns])
    np.add.at(sums, codes[taken], values[taken])
    verdicts, decided, failed = sums[:, 0], sums[:, 1], sums[:, 2]
    out = {key: column.array.take(first) for key, column in zip(keys, key_columns, strict=True)}
    model_codes = pd.factorize(out["model"])[0]  # the groups are sorted by model first: each model's rows adjoin
    totals = np.bincount(model_codes, weights=failed)[model_codes] if len(first) else np.zeros(0)  # exact below 2**53
    out |= {column: sums[:, i] for i, column in enumerate(columns)}
    out |= {"undetermined": verdicts - decided, "failure_rate": _ratio(failed, decided),
            "share_of_failures": _ratio(failed, totals)}
    return pd.DataFrame(out)


def verdict_totals_text(rates: pd.DataFrame) -> str:
    """Under the failure chart: its constraint verdicts, decided and failed, the undetermined rest split by state
    (judge errors, unparseable, not applicable, skipped) and the constraints left unjudged, zeros included."""
    verdicts, decided, failed = (int(rates[column].sum()) for column in ("verdicts", "decided", "failed"))
    text = f"n = {verdicts:,} constraint verdicts · {decided:,} decided ({failed:,} failed) · {verdicts - decided:,} undetermined"
    totals = state_totals(rates)
    split = {state: n for state, n in totals.items() if state not in ("scored", "unjudged")}
    if split:
        text += " (" + state_text(split).removeprefix("n = ") + ")"
    if "unjudged" in totals:
        text += f" · {totals['unjudged']:,} constraints unjudged (no verdict of the judge)"
    return text


def modeless_verdicts(counts: pd.DataFrame) -> int:
    """Constraint verdicts in `counts` of instances without a mode (counted under NO_MODE, outside Figure 4's modes)."""
    if counts.empty:
        return 0
    modeless = counts["mode"].to_numpy(dtype=object) == NO_MODE  # on the arrays: no masked frame or Series
    return int(counts["verdicts"].to_numpy()[modeless].sum())


def failing_verdicts(verdicts: pd.DataFrame, model: str, category: str | None = None, sub_dimension: str | None = None) -> pd.DataFrame:
    """The failed constraint verdicts behind one bar: response, instance, constraint text, method, judge, reason."""
    mask = (verdicts["model"] == model) & (verdicts["status"] == "ok") & (verdicts["passed"].astype(object) == False)  # noqa: E712
    if category:
        mask &= verdicts["category"] == category
    if sub_dimension:
        mask &= verdicts["sub_dimension"] == sub_dimension
    cols = ["response_id", "instance_uid", "domain", "mode", "category", "sub_dimension", "cid", "text", "method", "judge", "reason"]
    return verdicts.loc[mask, cols].sort_values(["instance_uid", "cid"]).reset_index(drop=True)
