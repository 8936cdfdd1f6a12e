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
from core.analysis.readmodel.responses import read_sql
from core.analysis.readmodel.states import STATE_COLUMNS
from core.metrics import STATES, VERDICT_STATES, get_metric
from core.protocols import constraint_protocols
from core.scoring.summaries import (
    MODE_SQL,
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
       COALESCE(i.language, '') AS language,
       COALESCE(s.judged, 0) AS judged, COALESCE(s.passed, 0) AS passed, COALESCE(s.errors, 0) AS errors,
       CASE WHEN COALESCE(s.n, 0) > COALESCE(k.constraints, 0) THEN COALESCE(s.n, 0)
            ELSE COALESCE(k.constraints, 0) END AS nn, {categories}
FROM response r JOIN instance i ON i.id = r.instance_id
LEFT JOIN (SELECT instance_id, COUNT(*) AS constraints FROM "constraint" GROUP BY instance_id) k
       ON k.instance_id = r.instance_id
LEFT JOIN {source} s ON s.response_id = r.id AND s.judge = :judge
WHERE r.status = 'done' AND r.run_id IN ({runs}) AND i.protocol IN ({constraint_protocols})
"""


def _state_sql(present: str) -> str:
    """The score state of an IAS value (states.response_statuses): scored when present, else a judge error when a
    constraint verdict failed, unjudged when one was left undecided, else not applicable."""
    return (f"CASE WHEN {present} THEN 'scored' WHEN q.errors > 0 THEN 'judge_error' "
            "WHEN q.nn - q.judged - q.errors > 0 THEN 'unjudged' ELSE 'not_applicable' END")


def _ias_values() -> dict[str, tuple[str, str]]:
    """Per IAS metric: (SQL of its value, SQL of its presence) over the response counts `q` (ias_from_counts)."""
    strict_present = "q.judged > 0 AND q.nn - q.judged = 0"
    values = {"loose_ias": ("CASE WHEN q.judged > 0 THEN CAST(q.passed AS DOUBLE PRECISION) / q.judged END", "q.judged > 0"),
              "strict_ias": (f"CASE WHEN {strict_present} THEN CAST(CASE WHEN q.passed = q.judged THEN 1 ELSE 0 END AS DOUBLE PRECISION) "
                             "END", strict_present)}
    for c in CATEGORIES:
        values[f"loose_{c}"] = (f"CASE WHEN q.judged_{c} > 0 THEN CAST(q.passed_{c} AS DOUBLE PRECISION) / q.judged_{c} END",
                                f"q.judged_{c} > 0")
    return values


def _ias_sql(source: str) -> str:
    """One GROUP BY over the responses' counts (per group and combination of the IAS metrics' states: the responses
    and each metric's values present, sum and sum of squares), then split per metric and state: the IAS metrics'
    AGGREGATE_FRAME_COLUMNS rows."""
    categories = ", ".join(f"COALESCE(s.judged_{c}, 0) AS judged_{c}, COALESCE(s.passed_{c}, 0) AS passed_{c}"
                           for c in CATEGORIES)
    counts = (_RESPONSE_COUNTS_SQL.replace("{mode}", MODE_SQL).replace("{categories}", categories)
              .replace("{source}", source))
    cells, states, sums = [], [], []
    for k, (value, present) in enumerate(_ias_values().values()):
        cells += [f"{value} AS v{k}", f"{_state_sql(present)} AS s{k}"]
        states.append(f"x.s{k}")
        sums.append(f"COUNT(x.v{k}) AS n{k}, COALESCE(SUM(x.v{k}), 0.0) AS t{k}, COALESCE(SUM(x.v{k} * x.v{k}), 0.0) "
                    f"AS q{k}")
    groups = "x.run_id, x.model, x.protocol, x.mode, x.domain, x.language"
    inner = f"""
SELECT {groups}, {", ".join(states)}, COUNT(*) AS responses, {", ".join(sums)}
FROM (SELECT q.run_id, q.model, q.protocol, q.mode, q.domain, q.language, {", ".join(cells)} FROM ({counts}) q) x
GROUP BY {groups}, {", ".join(states)}"""
    keys = "g.run_id, g.model, g.protocol, g.mode, g.domain, g.language"
    per_metric = " UNION ALL ".join(
        f"SELECT {keys}, '{metric}' AS metric, g.s{k} AS state, SUM(g.responses) AS responses, SUM(g.n{k}) AS n_values, "
        f"SUM(g.t{k}) AS total, SUM(g.q{k}) AS total_sq FROM g GROUP BY {keys}, g.s{k}"
        for k, metric in enumerate(IAS_AGGREGATE_METRICS))
    return constraint_protocols_sql(f"""
WITH g AS MATERIALIZED ({inner})
SELECT y.run_id, m.name AS model, y.protocol, y.mode, d.name AS domain, y.language, y.metric, y.state, y.responses,
       y.n_values, y.total, y.total_sq
FROM ({per_metric}) y JOIN model m ON m.id = y.model JOIN domain d ON d.id = y.domain""")


def ias_aggregates(engine: Engine, run_ids: Sequence[int], judge: str) -> pd.DataFrame:
    """The runs' IAS aggregates under `judge` (AGGREGATE_FRAME_COLUMNS, model and domain by name) over their done
    responses of constraint protocols: from response_score when every run's summaries are current, else from the same
    summary SELECT inline (reads only)."""
    stale = bool(stale_summary_runs(engine, run_ids, judge))
    source = "(" + runs_sql(SUMMARY_SELECT_SQL, run_ids) + ")" if stale else "response_score"
    return _typed(read_sql(engine, runs_sql(_ias_sql(source), run_ids), {"judge": judge}))


def _typed(frame: pd.DataFrame) -> pd.DataFrame:
    frame = frame.reindex(columns=list(AGGREGATE_FRAME_COLUMNS))
    for column in ("responses", "n_values"):
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
    breakdowns.domain_metric_states' frame, from the aggregates."""
    by = list(by)
    columns = [*by, "metric", "mean", "n", *STATE_COLUMNS.values()]
    done = aggregates[aggregates["metric"] == RESPONSES_METRIC].groupby(by, sort=True)["responses"].sum()
    if done.empty or not metrics:
        return pd.DataFrame(columns=columns)
    keys = done.index
    mine = aggregates[aggregates["metric"].isin(list(metrics))]
    mine = mine.assign(state=mine["state"].where(mine["state"].isin(list(VERDICT_STATES.values())), "unjudged"))
    counted = mine["state"].to_numpy(dtype=object) == None  # noqa: E711 - an all-False mask of the rows
    for metric in metrics:
        counted |= (mine["metric"].to_numpy(dtype=object) == metric) & mine["state"].isin(_counted(metric)).to_numpy()
    sums = (mine[counted].groupby([*by, "metric"], sort=True)[["n_values", "total"]].sum()
            .reindex(pd.MultiIndex.from_tuples([(*_tuple(k), m) for k in keys for m in metrics],
                                               names=[*by, "metric"]), fill_value=0))
    table = (mine.pivot_table(index=[*by, "metric"], columns="state", values="responses", aggfunc="sum")
             .reindex(index=sums.index, columns=list(STATES)).fillna(0).astype("int64"))
    table["unjudged"] += np.repeat(done.to_numpy(), len(metrics)) - table.to_numpy().sum(axis=1)
    n = sums["n_values"].to_numpy(dtype="int64")
    with np.errstate(invalid="ignore", divide="ignore"):
        mean = np.where(n > 0, sums["total"].to_numpy(dtype=float) / n, np.nan)
    out = sums.index.to_frame(index=False)
    out["mean"], out["n"] = mean, n
    for state in STATES:
        out[STATE_COLUMNS[state]] = table[state].to_numpy()
    return out[columns]


def _tuple(key) -> tuple:
    return key if isinstance(key, tuple) else (key,)


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
