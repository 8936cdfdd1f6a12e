"""EnterpriseRAG's results pages from aggregates instead of per-response rows: the stored metric aggregates of the RAG
metrics (metric_aggregate) beside the instruction-adherence metrics (Loose and Strict IAS, Loose IAS per category)
aggregated in one GROUP BY over the stored per-response constraint counts (response_score), in the same frame
(aggregates.AGGREGATE_FRAME_COLUMNS), so a page shows means, n and state counts from a few thousand rows.

The IAS rules are responses.ias_from_counts' and the states states.response_statuses', written in SQL; the golden
tests (tests/analysis/test_enterprise_aggregates.py) hold every number equal to the per-response computation to
1e-12 on both backends, with stored and stale summaries. Runs whose summaries are stale are aggregated inline from
their verdicts (reads only); a benchmark-set or 'accepted only' scope needs the per-response rows (the aggregates are
per run), so the pages keep the per-response path for it.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd
from sqlalchemy.engine import Engine

from core.analysis.readmodel.aggregates import AGGREGATE_FRAME_COLUMNS, metric_aggregates, rows_in
from core.analysis.readmodel.breakdowns import DOMAIN_METRICS
from core.analysis.readmodel.responses import read_sql
from core.analysis.readmodel.states import STATE_COLUMNS
from core.metrics import STATES, VERDICT_STATES, get_metric
from core.protocols import constraint_protocols
from core.scoring.ias_sums import IAS_AGGREGATE_METRICS, group_sums
from core.scoring.summaries import (
    RESPONSES_METRIC,
    SUMMARY_SELECT_SQL,
    constraint_protocols_sql,
    response_counts_sql,
    runs_sql,
    stale_summary_runs,
)

__all__ = ["DOMAIN_READS", "IAS_AGGREGATE_METRICS", "domain_aggregates", "enterprise_aggregates", "filter_aggregates", "group_metric_states", "ias_aggregates",
           "id_names",
           "items_repeat", "domain_metrics_from_aggregates", "domain_pooled_from_aggregates"]

_NAMES_SQL = "SELECT 'model' AS kind, id, name FROM model UNION ALL SELECT 'domain', id, name FROM domain"


def _response_counts(engine: Engine, run_ids: Sequence[int], judge: str) -> pd.DataFrame:
    """One row per done response of a constraint protocol: its group (model and domain by id) and its constraint
    counts, cost and latency (summaries.response_counts_sql), from response_score when every run's summaries are
    current, else from the same summary SELECT inline (reads only)."""
    stale = bool(stale_summary_runs(engine, run_ids, judge))
    source = "(" + runs_sql(SUMMARY_SELECT_SQL, run_ids) + ")" if stale else "response_score"
    return read_sql(engine, runs_sql(response_counts_sql(source), run_ids), {"judge": judge})


def id_names(engine: Engine) -> dict[str, dict[int, str]]:
    """The names of the models and domains by id, per kind ('model', 'domain')."""
    names = read_sql(engine, _NAMES_SQL)
    return {kind: dict(zip(names["id"][names["kind"] == kind].astype("int64"),
                           names["name"][names["kind"] == kind], strict=True)) for kind in ("model", "domain")}


def _named(frame: pd.DataFrame, engine: Engine) -> pd.DataFrame:
    """`frame` with its model and domain ids replaced by their names."""
    for kind, names in id_names(engine).items():
        frame[kind] = frame[kind].map(names)
    return frame


def ias_aggregates(engine: Engine, run_ids: Sequence[int], judge: str) -> pd.DataFrame:
    """The runs' aggregates under `judge` (AGGREGATE_FRAME_COLUMNS, model and domain by name) of the metrics the stored
    metric aggregates do not hold: Loose and Strict IAS (and per category), the amounts and the orchestration gap's
    helpers, over the done responses of constraint protocols, summed from their stored constraint counts."""
    return _typed(_named(group_sums(_response_counts(engine, run_ids, judge)), engine))


def _typed(frame: pd.DataFrame) -> pd.DataFrame:
    frame = frame.reindex(columns=list(AGGREGATE_FRAME_COLUMNS))
    for column in ("responses", "n_values", "has_protocol"):
        frame[column] = pd.to_numeric(frame[column]).fillna(0).astype("int64")
    for column in ("total", "total_sq"):
        frame[column] = pd.to_numeric(frame[column], errors="coerce").fillna(0.0).astype(float)
    return frame


def enterprise_aggregates(engine: Engine, run_ids: Sequence[int], judge: str, modes: Sequence[str] = (),
                          metrics: Sequence[str] = ()) -> pd.DataFrame:
    """The aggregates behind the per-response frame (response_scores) of the done responses of constraint protocols,
    in one frame: the RAG metrics' and the IAS metrics' stored rows (metric_aggregate) when every run's summaries are
    current, else both aggregated inline (metric_aggregates and ias_aggregates; reads only). Non-empty `modes` or
    `metrics`: only the rows of those modes or metrics (the stored ones selected by the database)."""
    stale = bool(stale_summary_runs(engine, run_ids, judge))
    rag = metric_aggregates(engine, run_ids, judge, stale, modes, metrics)
    rag = rag[rag["protocol"].isin(list(constraint_protocols()))]
    if not stale:
        return rag.reset_index(drop=True)
    ias = filter_aggregates(ias_aggregates(engine, run_ids, judge), modes)
    ias = ias[ias["metric"].isin(list(metrics))] if metrics else ias
    return pd.concat([rag, ias], ignore_index=True)


# what the Domains page reads of the aggregates: its four metrics and the done responses per group
DOMAIN_READS: tuple[str, ...] = (*DOMAIN_METRICS, RESPONSES_METRIC)
DOMAIN_COLUMNS: tuple[str, ...] = ("model", "domain", "mode", "metric", "state", "responses", "n_values", "total")

_DOMAIN_SQL = """
SELECT m.name AS model, d.name AS domain, a.mode, a.metric, a.state, a.responses, a.n_values, a.total
FROM metric_aggregate a JOIN model m ON m.id = a.model_id JOIN domain d ON d.id = a.domain_id
WHERE a.judge = :judge AND a.run_id IN ({runs}) AND a.protocol IN ({constraint_protocols})
"""


def domain_aggregates(engine: Engine, run_ids: Sequence[int], judge: str, stale: bool | None = None) -> pd.DataFrame:
    """The aggregates the Domains page reads (DOMAIN_READS, every mode): enterprise_aggregates' rows of those metrics
    with only the columns its views use (DOMAIN_COLUMNS), as stored when every run's summaries are current (`stale`
    False; None: ask stale_summary_runs; the database selects the rows, a third of the read), else
    enterprise_aggregates' inline rows of those metrics (reads only). Rows not summed: each view sums the same rows
    in the same order as from the full read, so its numbers are the same bit for bit."""
    if stale is None:
        stale = bool(stale_summary_runs(engine, run_ids, judge))
    if stale:
        return enterprise_aggregates(engine, run_ids, judge, metrics=DOMAIN_READS)
    in_metrics, params = rows_in("a.metric", DOMAIN_READS, "metric")
    sql = constraint_protocols_sql(runs_sql(_DOMAIN_SQL, run_ids)) + in_metrics
    frame = read_sql(engine, sql, {"judge": judge} | params).reindex(columns=list(DOMAIN_COLUMNS))
    for column in ("responses", "n_values"):
        frame[column] = frame[column].fillna(0).astype("int64")
    frame["total"] = pd.to_numeric(frame["total"], errors="coerce").fillna(0.0).astype(float)
    return frame


def filter_aggregates(aggregates: pd.DataFrame, modes: Sequence[str] = (), domains: Sequence[str] = (),
                      models: Sequence[str] | None = None) -> pd.DataFrame:
    """Aggregate rows in the chosen modes, domains and models (empty modes or domains = all; None models = all), as
    scope.filter_scores narrows the per-response frame."""
    mask = pd.Series(True, index=aggregates.index)
    if modes:
        mask &= aggregates["mode"].isin(list(modes))
    if domains:
        mask &= aggregates["domain"].isin(list(domains))
    if models is not None:
        mask &= aggregates["model"].isin(list(models))
    return aggregates[mask]


def _counted(metric: str) -> list[str]:
    return [VERDICT_STATES[status] for status in get_metric(metric).counted_statuses()]


def group_metric_states(aggregates: pd.DataFrame, by: Sequence[str], metrics: Sequence[str]) -> pd.DataFrame:
    """Per group of `by` with a done response (sorted) and metric: mean of the counted values (NaN when none), n and
    the count of each score state (a response with no row of the metric, or a state no verdict holds, is unjudged):
    breakdowns.domain_metric_states' frame, from the aggregates (counted with one bincount per column)."""
    by = list(by)
    columns = [*by, "metric", "mean", "n", *STATE_COLUMNS.values()]
    done = aggregates[aggregates["metric"] == RESPONSES_METRIC].groupby(by, sort=True)["responses"].sum()
    if done.empty or not metrics:
        return pd.DataFrame(columns=columns)
    mine = aggregates[aggregates["metric"].isin(list(metrics))]
    keys = done.index
    key_codes = keys.get_indexer(pd.MultiIndex.from_frame(mine[by]) if len(by) > 1 else pd.Index(mine[by[0]]))
    metric_codes = pd.Index(list(metrics)).get_indexer(mine["metric"])
    raw_states = pd.Index(list(STATES)).get_indexer(mine["state"])  # -1 (a state outside STATES): the last column
    held = np.zeros(len(STATES) + 1, dtype=bool)
    held[[STATES.index(s) for s in VERDICT_STATES.values()]] = True
    state_codes = np.where(held[raw_states], raw_states, STATES.index("unjudged"))  # a state no verdict holds
    counts_in_mean = np.zeros((len(metrics), len(STATES) + 1), dtype=bool)
    for j, metric in enumerate(metrics):
        counts_in_mean[j, [STATES.index(s) for s in _counted(metric)]] = True
    counted = counts_in_mean[metric_codes, raw_states]
    k, m, width = len(keys), len(metrics), len(STATES)
    cell = key_codes * m + metric_codes
    table = np.bincount(cell * width + state_codes, weights=mine["responses"].to_numpy(dtype=float),
                        minlength=k * m * width).reshape(k * m, width).astype("int64")
    n = np.bincount(cell, weights=np.where(counted, mine["n_values"].to_numpy(dtype=float), 0.0),
                    minlength=k * m).astype("int64")
    total = np.bincount(cell, weights=np.where(counted, mine["total"].to_numpy(dtype=float), 0.0), minlength=k * m)
    table[:, STATES.index("unjudged")] += np.repeat(done.to_numpy(dtype="int64"), m) - table.sum(axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        mean = np.where(n > 0, total / n, np.nan)
    out = keys.to_frame(index=False).loc[np.repeat(np.arange(k), m)].reset_index(drop=True)
    out["metric"], out["mean"], out["n"] = list(metrics) * k, mean, n
    for j, state_name in enumerate(STATES):
        out[STATE_COLUMNS[state_name]] = table[:, j]
    return out[columns]


def _wide(states: pd.DataFrame, by: Sequence[str], column: str, metrics: Sequence[str]) -> pd.DataFrame:
    """group_metric_states' `column` as one column per metric (in `metrics` order), indexed by `by`; no row when
    there is no group (no model chosen on the Domains page: the per-response path's empty heatmap, not a KeyError)."""
    if states.empty:
        index = (pd.MultiIndex.from_arrays([[] for _ in by], names=list(by)) if len(by) > 1
                 else pd.Index([], name=by[0]))
        return pd.DataFrame(index=index, columns=list(metrics))
    return states.pivot(index=list(by), columns="metric", values=column)[list(metrics)].rename_axis(columns=None)


def domain_metrics_from_aggregates(aggregates: pd.DataFrame, metrics: Sequence[str]) -> pd.DataFrame:
    """breakdowns.domain_metrics' frame from the aggregates: per (model, domain) the metrics' means, n per metric and
    the responses."""
    keys = ["model", "domain"]
    states = group_metric_states(aggregates, keys, metrics)
    out = _wide(states, keys, "mean", metrics).astype(float)
    for metric, n in _wide(states, keys, "n", metrics).items():
        out[f"n_{metric}"] = n.astype("int64")
    done = aggregates[aggregates["metric"] == RESPONSES_METRIC].groupby(keys, sort=True)["responses"].sum()
    out["responses"] = done.reindex(out.index).astype("int64")
    return out.reset_index()


def domain_pooled_from_aggregates(aggregates: pd.DataFrame, metrics: Sequence[str]
                                  ) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    """The domain page's pooled views of the chosen models' aggregates: state counts per domain and metric
    (metric_state_counts by domain), the radar points with their states (domain_metric_states by model and domain),
    the heatmap cells with their states (domain_metric_states by domain), the heatmap's domain x metric means
    (domain_heatmap) and its value counts."""
    per_domain = group_metric_states(aggregates, ["domain"], metrics)
    states = per_domain.drop(columns=["mean", "n"])
    drawn = group_metric_states(aggregates, ["model", "domain"], metrics)
    matrix = _wide(per_domain, ["domain"], "mean", metrics).astype(float)
    counts = _wide(per_domain, ["domain"], "n", metrics).astype("int64")
    return states, drawn, per_domain, matrix, counts


_REPEATED_SQL = """
SELECT 1 FROM response r JOIN instance i ON i.id = r.instance_id
WHERE r.status = 'done' AND r.run_id IN ({runs}) AND i.protocol IN ({constraint_protocols})
GROUP BY r.model_id, i.uid HAVING COUNT(*) > 1 LIMIT 1
"""


def items_repeat(engine: Engine, run_ids: Sequence[int]) -> bool:
    """Whether a model answered an instance more than once in the runs (repeats, or runs that overlap): the
    per-response frame then keeps one value per item (scope.latest_per_model_instance), which sums over responses
    cannot give, so the pages read the responses."""
    return not read_sql(engine, runs_sql(constraint_protocols_sql(_REPEATED_SQL), run_ids)).empty
