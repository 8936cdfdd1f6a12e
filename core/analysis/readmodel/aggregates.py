"""Stored aggregates of the response-level metrics (metric_aggregate): per run, model, protocol, condition, domain,
language, origin, knowledge protocol (has_protocol), metric and state, the responses, the counted values' n, sum and sum of squares, so a page can show means,
n and state counts without loading every response. The same SELECT runs inline for runs whose summaries are stale,
so the stored rows are a cache of this computation, never a second one (tests/analysis/test_metric_aggregates.py
checks both against the per-response frame to 1e-12 on both backends)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd
from sqlalchemy.engine import Engine

from core.analysis.readmodel.responses import read_sql
from core.analysis.readmodel.states import STATE_COLUMNS
from core.metrics import STATES, VERDICT_STATES, get_metric
from core.scoring.summaries import (
    RESPONSES_METRIC,
    aggregate_select_sql,
    constraint_protocols_sql,
    metric_select_sql,
    runs_sql,
    stale_summary_runs,
)

AGGREGATE_FRAME_COLUMNS: tuple[str, ...] = ("run_id", "model", "protocol", "mode", "domain", "language", "origin",
                                            "has_protocol", "metric", "state", "responses", "n_values", "total",
                                            "total_sq")

_NAMED_SQL = """
SELECT a.run_id, m.name AS model, a.protocol, a.mode, d.name AS domain, a.language, a.origin, a.has_protocol, a.metric, a.state, a.responses,
       a.n_values, a.total, a.total_sq
FROM {source} a JOIN model m ON m.id = a.model_id JOIN domain d ON d.id = a.domain_id
WHERE a.judge = :judge AND a.run_id IN ({runs})
"""


def rows_in(column: str, values: Sequence[str], name: str) -> tuple[str, dict[str, str]]:
    """An SQL condition ' AND <column> IN (:<name>0, ...)' and its parameters; no condition when `values` is empty."""
    if not values:
        return "", {}
    params = {f"{name}{i}": str(v) for i, v in enumerate(values)}
    return f" AND {column} IN ({', '.join(':' + k for k in params)})", params


def metric_aggregates(engine: Engine, run_ids: Sequence[int], judge: str, stale: bool | None = None,
                      modes: Sequence[str] = (), metrics: Sequence[str] = ()) -> pd.DataFrame:
    """The runs' metric aggregates under `judge` (AGGREGATE_FRAME_COLUMNS; the done responses per group as metric
    RESPONSES_METRIC), model and domain by name: the stored rows when every run's summaries are current (`stale`
    False; None: ask stale_summary_runs), which also hold the IAS sums the summarise stage stores
    (core.scoring.ias_sums); else the response-level metrics aggregated inline over the verdicts, without the IAS
    sums (readmodel.enterprise_aggregates adds them; reads only). Non-empty `modes` or `metrics` read only the rows
    of those modes or metrics (the same rows filter_aggregates keeps, selected by the database)."""
    if stale is None:
        stale = bool(stale_summary_runs(engine, run_ids, judge))
    if stale:
        inline = "(" + metric_select_sql(judge) + ")"
        source = "(" + aggregate_select_sql(inline) + ")"
    else:
        source = "metric_aggregate"
    in_modes, mode_params = rows_in("a.mode", modes, "mode")
    in_metrics, metric_params = rows_in("a.metric", metrics, "metric")
    sql = runs_sql(_NAMED_SQL.replace("{source}", source), run_ids) + in_modes + in_metrics
    frame = read_sql(engine, sql, {"judge": judge} | mode_params | metric_params)
    frame = frame.reindex(columns=list(AGGREGATE_FRAME_COLUMNS))
    for column in ("responses", "n_values", "has_protocol"):
        frame[column] = frame[column].fillna(0).astype("int64")
    for column in ("total", "total_sq"):
        frame[column] = pd.to_numeric(frame[column], errors="coerce").fillna(0.0).astype(float)
    return frame


MODEL_SUM_COLUMNS: tuple[str, ...] = ("model", "mode", "metric", "state", "responses", "n_values", "total",
                                      "total_sq")

_MODEL_SUMS_SQL = """
SELECT m.name AS model, a.mode, a.metric, a.state, SUM(a.responses) AS responses, SUM(a.n_values) AS n_values,
       SUM(a.total) AS total, SUM(a.total_sq) AS total_sq
FROM metric_aggregate a JOIN model m ON m.id = a.model_id{domain_join}
WHERE a.judge = :judge AND a.run_id IN ({runs}) AND a.protocol IN ({constraint_protocols}){where}
GROUP BY m.name, a.mode, a.metric, a.state
"""


def stored_model_sums(engine: Engine, run_ids: Sequence[int], judge: str, modes: Sequence[str] = (),
                      domains: Sequence[str] = (), metrics: Sequence[str] = ()) -> pd.DataFrame:
    """The runs' stored metric aggregates of the constraint protocols (current summaries only) in the chosen modes,
    domains and metrics (empty = all), summed by the database per model (by name), mode, metric and state
    (MODEL_SUM_COLUMNS): what a view grouped by model reads, a few hundred rows instead of every group's."""
    in_modes, mode_params = rows_in("a.mode", modes, "mode")
    in_domains, domain_params = rows_in("d.name", domains, "domain")
    in_metrics, metric_params = rows_in("a.metric", metrics, "metric")
    sql = (_MODEL_SUMS_SQL.replace("{domain_join}", " JOIN domain d ON d.id = a.domain_id" if domains else "")
           .replace("{where}", in_modes + in_domains + in_metrics))
    frame = read_sql(engine, constraint_protocols_sql(runs_sql(sql, run_ids)),
                     {"judge": judge} | mode_params | domain_params | metric_params)
    frame = frame.reindex(columns=list(MODEL_SUM_COLUMNS))
    for column in ("responses", "n_values"):
        frame[column] = pd.to_numeric(frame[column]).fillna(0).astype("int64")
    for column in ("total", "total_sq"):
        frame[column] = pd.to_numeric(frame[column], errors="coerce").fillna(0.0).astype(float)
    return frame


def _counted_states(metric: str) -> list[str]:
    """The score states whose values `metric`'s declaration counts in its mean."""
    return [VERDICT_STATES[status] for status in get_metric(metric).counted_statuses()]


def aggregate_state_counts(aggregates: pd.DataFrame, metrics: Sequence[str], by: str = "model") -> pd.DataFrame:
    """Per `by` value and metric: the count of each score state among the done responses (metric_state_counts'
    frame, read from the aggregates: a response with no row of the metric, or a row no verdict holds, is unjudged); rows in sorted `by` order."""
    columns = [by, "metric", *STATE_COLUMNS.values()]
    totals = aggregates[aggregates["metric"] == RESPONSES_METRIC].groupby(by, sort=True)["responses"].sum()
    if totals.empty or not metrics:
        return pd.DataFrame(columns=columns)
    mine = aggregates[aggregates["metric"].isin(list(metrics))]
    # as metric_state_counts counts the per-response frame's statuses: a state no verdict holds (skipped) is unjudged
    mine = mine.assign(state=mine["state"].where(mine["state"].isin(list(VERDICT_STATES.values())), "unjudged"))
    full = pd.MultiIndex.from_product([list(totals.index), list(metrics)], names=[by, "metric"])
    table = (mine.pivot_table(index=[by, "metric"], columns="state", values="responses", aggfunc="sum")
             .reindex(index=full, columns=list(STATES)).fillna(0).astype("int64"))
    missing = np.repeat(totals.to_numpy(), len(metrics)) - table.to_numpy().sum(axis=1)
    table["unjudged"] += missing
    table.columns = [STATE_COLUMNS[s] for s in STATES]
    return table.reset_index()[columns]


def aggregate_means(aggregates: pd.DataFrame, metrics: Sequence[str], by: str = "model") -> pd.DataFrame:
    """Per `by` value (every one with a done response) and metric: the mean of the counted values (NaN when none),
    their n and sample standard deviation (from the sums; NaN below two values), from the aggregates."""
    rows = []
    keys = sorted(aggregates.loc[aggregates["metric"] == RESPONSES_METRIC, by].unique())
    for metric in metrics:
        mine = aggregates[(aggregates["metric"] == metric) & aggregates["state"].isin(_counted_states(metric))]
        sums = mine.groupby(by, sort=True)[["n_values", "total", "total_sq"]].sum().reindex(keys, fill_value=0)
        n = sums["n_values"].to_numpy(dtype=float)
        with np.errstate(invalid="ignore", divide="ignore"):
            mean = np.where(n > 0, sums["total"].to_numpy() / n, np.nan)
            var = np.where(n > 1, (sums["total_sq"].to_numpy() - n * mean**2) / (n - 1), np.nan)
        rows.append(pd.DataFrame({by: sums.index, "metric": metric, "value": mean, "n": n.astype("int64"),
                                  "sd": np.sqrt(np.maximum(var, 0.0))}))
    if not rows:
        return pd.DataFrame(columns=[by, "metric", "value", "n", "sd"])
    return pd.concat(rows, ignore_index=True).sort_values([by, "metric"], kind="stable").reset_index(drop=True)
