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

from core.analysis.readmodel.aggregates import AGGREGATE_FRAME_COLUMNS, metric_aggregates
from core.analysis.readmodel.responses import ias_from_counts, read_sql
from core.analysis.readmodel.states import STATE_COLUMNS
from core.metrics import STATES, VERDICT_STATES, get_metric
from core.protocols import constraint_protocols
from core.scoring.summaries import (
    HAS_PROTOCOL_SQL,
    MODE_SQL,
    PROTOCOL_JOIN_SQL,
    RESPONSES_METRIC,
    SUMMARY_SELECT_SQL,
    constraint_protocols_sql,
    runs_sql,
    stale_summary_runs,
)
from core.store.schema import CATEGORIES

IAS_AGGREGATE_METRICS: tuple[str, ...] = ("loose_ias", "strict_ias", *(f"loose_{c}" for c in CATEGORIES))

# one row per done response of a constraint protocol: its group and its constraint counts (nn: the constraints, at
# least the instance's, as response_scores counts them; a response with no summary row has judged nothing)
_RESPONSE_COUNTS_SQL = """
SELECT r.run_id, r.model_id AS model, i.protocol, {mode} AS mode, i.domain_id AS domain,
       COALESCE(i.language, '') AS language, COALESCE(i.origin, '') AS origin, {has_protocol} AS has_protocol,
       r.cost_usd, r.latency_ms,
       COALESCE(s.judged, 0) AS judged, COALESCE(s.passed, 0) AS passed, COALESCE(s.errors, 0) AS errors,
       CASE WHEN COALESCE(s.n, 0) > COALESCE(k.constraints, 0) THEN COALESCE(s.n, 0)
            ELSE COALESCE(k.constraints, 0) END AS nn, {categories}
FROM response r JOIN instance i ON i.id = r.instance_id {protocol_join}
LEFT JOIN (SELECT instance_id, COUNT(*) AS constraints FROM "constraint" GROUP BY instance_id) k
       ON k.instance_id = r.instance_id
LEFT JOIN {source} s ON s.response_id = r.id AND s.judge = :judge
WHERE r.status = 'done' AND r.run_id IN ({runs}) AND i.protocol IN ({constraint_protocols})
"""


_NAMES_SQL = "SELECT 'model' AS kind, id, name FROM model UNION ALL SELECT 'domain', id, name FROM domain"
GROUP_COLUMNS = ["run_id", "model", "protocol", "mode", "domain", "language", "origin", "has_protocol"]
GAP_HELPERS: tuple[str, ...] = ("_gap_lo", "_gap_hi", "_gap_hidden", "_loose_strict")  # the leaderboard's gap sums


def _response_counts(engine: Engine, run_ids: Sequence[int], judge: str) -> pd.DataFrame:
    """One row per done response of a constraint protocol: its group (model and domain by id) and its constraint
    counts, cost and latency, from response_score when every run's summaries are current, else from the same summary
    SELECT inline (reads only)."""
    stale = bool(stale_summary_runs(engine, run_ids, judge))
    source = "(" + runs_sql(SUMMARY_SELECT_SQL, run_ids) + ")" if stale else "response_score"
    categories = ", ".join(f"COALESCE(s.judged_{c}, 0) AS judged_{c}, COALESCE(s.passed_{c}, 0) AS passed_{c}"
                           for c in CATEGORIES)
    sql = (_RESPONSE_COUNTS_SQL.replace("{mode}", MODE_SQL).replace("{categories}", categories)
           .replace("{source}", source).replace("{has_protocol}", HAS_PROTOCOL_SQL)
           .replace("{protocol_join}", PROTOCOL_JOIN_SQL))
    return read_sql(engine, runs_sql(constraint_protocols_sql(sql), run_ids), {"judge": judge})


def _named(frame: pd.DataFrame, engine: Engine) -> pd.DataFrame:
    """`frame` with its model and domain ids replaced by their names."""
    names = read_sql(engine, _NAMES_SQL)
    for kind in ("model", "domain"):
        mine = names[names["kind"] == kind]
        frame[kind] = frame[kind].map(dict(zip(mine["id"].astype("int64"), mine["name"], strict=True)))
    return frame


SCORED, ERROR, UNJUDGED, NA = (STATES.index(s) for s in ("scored", "judge_error", "unjudged", "not_applicable"))


def _values(counts: pd.DataFrame) -> dict[str, tuple[np.ndarray, np.ndarray]]:
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


def _sums(counts: pd.DataFrame) -> pd.DataFrame:
    """_values summed per group of GROUP_COLUMNS, metric and state: AGGREGATE_FRAME_COLUMNS rows."""
    if counts.empty:
        return pd.DataFrame(columns=list(AGGREGATE_FRAME_COLUMNS))
    grouped = counts.groupby(GROUP_COLUMNS, sort=True, dropna=False)
    codes, keys = grouped.ngroup().to_numpy(), grouped.size().index.to_frame(index=False)
    width = len(STATES)
    size = len(keys) * width
    metrics: list[str] = []
    columns: dict[str, list[np.ndarray]] = {"responses": [], "n_values": [], "total": [], "total_sq": []}
    for metric, (values, states) in _values(counts).items():
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


def ias_aggregates(engine: Engine, run_ids: Sequence[int], judge: str) -> pd.DataFrame:
    """The runs' aggregates under `judge` (AGGREGATE_FRAME_COLUMNS, model and domain by name) of the metrics the stored
    metric aggregates do not hold: Loose and Strict IAS (and per category), the amounts and the orchestration gap's
    helpers, over the done responses of constraint protocols, summed from their stored constraint counts."""
    return _typed(_named(_sums(_response_counts(engine, run_ids, judge)), engine))


def _typed(frame: pd.DataFrame) -> pd.DataFrame:
    frame = frame.reindex(columns=list(AGGREGATE_FRAME_COLUMNS))
    for column in ("responses", "n_values", "has_protocol"):
        frame[column] = pd.to_numeric(frame[column]).fillna(0).astype("int64")
    for column in ("total", "total_sq"):
        frame[column] = pd.to_numeric(frame[column], errors="coerce").fillna(0.0).astype(float)
    return frame


def enterprise_aggregates(engine: Engine, run_ids: Sequence[int], judge: str) -> pd.DataFrame:
    """The aggregates behind the per-response frame (response_scores): the RAG metrics' (metric_aggregate) and the
    IAS metrics' (ias_aggregates), of the done responses of constraint protocols, in one frame."""
    rag = metric_aggregates(engine, run_ids, judge)
    rag = rag[rag["protocol"].isin(list(constraint_protocols()))]
    return pd.concat([rag, ias_aggregates(engine, run_ids, judge)], ignore_index=True)


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
    state = mine["state"].to_numpy(dtype=object)
    state_codes = pd.Index(list(STATES)).get_indexer(np.where(np.isin(state, list(VERDICT_STATES.values())), state,
                                                              "unjudged"))
    counted = np.zeros(len(mine), dtype=bool)
    for j, metric in enumerate(metrics):
        counted |= (metric_codes == j) & np.isin(state, _counted(metric))
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
    """group_metric_states' `column` as one column per metric (in `metrics` order), indexed by `by`."""
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
