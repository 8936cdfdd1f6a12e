"""The summarise stage: per-response score rows, metric rows with their states and Figure-4 failure counts, built in
SQL from one judge's verdicts.

Which verdicts count for judge J: J's constraint verdicts plus the rule verdicts of rule-checked constraints (one
merged set per judge), and J's metric verdicts. The write side (`rebuild_summaries`, called by the pipeline after
scoring) stores them in response_score (constraint counts, judge cost), response_metric (one row per response and
response-level metric its protocol declares, every protocol, with its state) and failure_count (and its sums over the
domains, failure_mode_count); the read model runs the same SELECTs inline for any run whose verdicts changed since
(`stale_summary_runs`), so the stored rows are a cache of this computation, never a second one.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

import numpy as np
import pandas as pd
from sqlalchemy import text
from sqlalchemy.engine import Connection, Engine

from core.metrics import DECLARATIONS, JUDGED, STATES, VERDICT_STATES, concern_prefix, get_metric
from core.protocols import constraint_protocols, get_protocol
from core.scoring.ias_sums import group_sums
from core.store.schema import CATEGORIES, NO_MODE

METRIC_NAMES: tuple[str, ...] = ("faithfulness", "coverage", "rejection", "conflict_recognition", "refusal")
JUDGE_FILTER_SQL = "(v.judge = :judge OR (v.judge = 'rule' AND c.judge_method = 'rule'))"
OK_DECIDED_SQL = "v.status = 'ok' AND v.passed IS NOT NULL"
MODE_SQL = f"COALESCE(i.mode, '{NO_MODE}')"  # failure counts are keyed by mode, and an IFEval prompt has none
COUNT_COLUMNS: tuple[str, ...] = ("n", "judged", "passed", "errors",
                                  *(f"{k}_{c}" for c in CATEGORIES for k in ("judged", "passed")))
SUMMARY_COLUMNS: tuple[str, ...] = (*COUNT_COLUMNS, "judge_calls", "judge_cost_usd")
METRIC_COLUMNS: tuple[str, ...] = ("response_id", "judge", "run_id", "metric", "value", "state")
# the one place a stored verdict status becomes a score state (core.metrics.VERDICT_STATES); an unknown status maps
# to NULL, which response_metric.state refuses, so it fails loudly instead of being counted as something else
STATE_SQL = "CASE v.status " + " ".join(f"WHEN '{k}' THEN '{v}'" for k, v in VERDICT_STATES.items()) + " END"


def runs_sql(sql: str, run_ids: Sequence[int]) -> str:
    """`sql` with its {runs} placeholder replaced by the integer run ids (NULL when there are none)."""
    return sql.replace("{runs}", ", ".join(str(int(r)) for r in run_ids) or "NULL")


def constraint_protocols_sql(sql: str) -> str:
    """`sql` with its {constraint_protocols} placeholder replaced by the quoted ids of the protocols scored constraint
    by constraint (core.protocols.constraint_protocols; registry ids are word characters only)."""
    names = [name for name in constraint_protocols() if re.fullmatch(r"\w+", name)]
    return sql.replace("{constraint_protocols}", ", ".join(f"'{name}'" for name in names) or "NULL")


def _summary_select(run_filter: str) -> str:
    """SELECT of response_score rows (response_id, judge, run_id, SUMMARY_COLUMNS) for :judge over `run_filter`."""
    con = "v.metric = 'constraint'"
    sums = [f"SUM(CASE WHEN {con} THEN 1 ELSE 0 END)",
            f"SUM(CASE WHEN {con} AND {OK_DECIDED_SQL} THEN 1 ELSE 0 END)",
            f"SUM(CASE WHEN {con} AND {OK_DECIDED_SQL} AND v.passed THEN 1 ELSE 0 END)",
            f"SUM(CASE WHEN {con} AND v.status = 'error' THEN 1 ELSE 0 END)"]
    for cat in CATEGORIES:
        sums += [f"SUM(CASE WHEN {con} AND c.category = '{cat}' AND {OK_DECIDED_SQL} THEN 1 ELSE 0 END)",
                 f"SUM(CASE WHEN {con} AND c.category = '{cat}' AND {OK_DECIDED_SQL} AND v.passed THEN 1 ELSE 0 END)"]
    sums += ["SUM(COALESCE(v.calls, 0))", "SUM(COALESCE(v.cost_usd, 0))"]
    names = ", ".join(f"{expr} AS {col}" for expr, col in zip(sums, SUMMARY_COLUMNS, strict=True))
    return f"""
SELECT v.response_id, CAST(:judge AS VARCHAR) AS judge, v.run_id, {names}
FROM verdict v LEFT JOIN "constraint" c ON c.id = v.constraint_id
WHERE {run_filter}
  AND ((v.metric = 'constraint' AND {JUDGE_FILTER_SQL}) OR (v.metric != 'constraint' AND v.judge = :judge))
GROUP BY v.response_id, v.run_id
"""


def metric_producible(metric: str, judge: str) -> bool:
    """Whether `judge`'s scoring pass can produce `metric`: a lexical, rule, measured or derived metric always; a judged
    one when the judge's kind ('heuristic', 'llm') is among the declaration's judges. An undeclared metric: yes."""
    if metric not in DECLARATIONS:
        return True
    producers = DECLARATIONS.get(metric).judges
    return any(p not in JUDGED for p in producers) or judge.partition(":")[0] in producers


def _computed_modes(protocol: str, metric: str) -> str:
    """',mode,mode,' of the instance modes the scorer computes `metric` in ('' = every mode, or not applicable
    outside them): the protocol's declaration (`Protocol.metric_modes`, EnterpriseRAG's RAG metrics), with no verdict
    outside its modes."""
    scope = next((s for s in get_protocol(protocol).metric_modes if s.metric == metric), None)
    if scope is None or scope.outside:
        return ""
    return "," + ",".join(scope.modes) + ","


def _declared_metrics_sql(judge: str) -> str:
    """A derived table (protocol, metric, modes, producible, prefix) of every registered protocol's response-level
    metrics; a benchmark's own measure concerns only the instances whose id has its prefix (core.metrics.concerns)."""
    from core.protocols import PROTOCOLS, get_protocol

    rows = [f"SELECT '{p}' AS protocol, '{m}' AS metric, '{_computed_modes(p, m)}' AS modes, "
            f"{int(metric_producible(m, judge))} AS producible, '{concern_prefix(m)}' AS prefix"
            for p in sorted(PROTOCOLS.names()) for m in get_protocol(p).metrics if m != "constraint"]
    return " UNION ALL ".join(rows) or "SELECT '' AS protocol, '' AS metric, '' AS modes, 0 AS producible, '' AS prefix"


def _metric_select(verdict_runs: str, response_runs: str, judge: str) -> str:
    """SELECT of response_metric rows for :judge: every metric verdict (the latest per response and metric) with its
    state, then, for each response and metric its protocol declares with no such verdict, 'skipped' (generation not
    done, the judge cannot produce it, or the scorer does not compute it in the instance's mode) or 'unjudged'."""
    metric_verdict = "v.judge = :judge AND v.constraint_id IS NULL AND v.metric != 'constraint'"
    skipped = ("r.status != 'done' OR e.producible = 0 OR "
               "(e.modes != '' AND e.modes NOT LIKE '%,' || COALESCE(i.mode, '') || ',%')")
    return f"""
SELECT v.response_id, CAST(:judge AS VARCHAR) AS judge, v.run_id, v.metric, v.value, {STATE_SQL} AS state
FROM verdict v
WHERE {verdict_runs} AND {metric_verdict}
  AND NOT EXISTS (SELECT 1 FROM verdict w WHERE w.response_id = v.response_id AND w.metric = v.metric
                  AND w.judge = v.judge AND w.constraint_id IS NULL AND w.id > v.id)
UNION ALL
SELECT r.id, CAST(:judge AS VARCHAR), r.run_id, e.metric, CAST(NULL AS FLOAT),
       CASE WHEN {skipped} THEN 'skipped' ELSE 'unjudged' END
FROM response r JOIN instance i ON i.id = r.instance_id
JOIN ({_declared_metrics_sql(judge)}) e ON e.protocol = i.protocol
WHERE {response_runs} AND (e.prefix = '' OR LOWER(i.uid) LIKE e.prefix || '%')
  AND NOT EXISTS (SELECT 1 FROM verdict v WHERE v.response_id = r.id AND v.metric = e.metric AND {metric_verdict})
"""


def metric_select_sql(judge: str) -> str:
    """The response_metric rows of `judge` over the {runs} placeholder's runs (the read model's inline source)."""
    return _metric_select("v.run_id IN ({runs})", "r.run_id IN ({runs})", judge)


FAILURE_STATUS_COLUMNS: dict[str, str] = {"not_applicable": "not_applicable", "unparseable": "unparseable",
                                          "judge_errors": "error", "skipped": "skipped"}  # column -> verdict status


def _failure_select(run_filter: str, response_filter: str) -> str:
    """SELECT of failure_count rows for :judge: the constraint verdicts over `run_filter` (decided, failed, and the
    undetermined rest split by status) and, as `unjudged`, each constraint of a done response over `response_filter`
    that has no verdict of the judge."""
    statuses = ", ".join(f"CASE WHEN v.status = '{status}' THEN 1 ELSE 0 END AS {column}"
                         for column, status in FAILURE_STATUS_COLUMNS.items())
    zeros = ", ".join(f"0 AS {column}" for column in FAILURE_STATUS_COLUMNS)
    sums = ", ".join(f"SUM(x.{column}) AS {column}" for column in FAILURE_STATUS_COLUMNS)
    return f"""
SELECT x.run_id, CAST(:judge AS VARCHAR) AS judge, x.model_id, x.domain_id, x.mode, x.category, x.sub_dimension,
       SUM(x.verdict) AS verdicts, SUM(x.decided) AS decided, SUM(x.failed) AS failed, {sums},
       SUM(1 - x.verdict) AS unjudged
FROM (
SELECT v.run_id, r.model_id, i.domain_id, {MODE_SQL} AS mode, c.category, c.sub_dimension, 1 AS verdict,
       CASE WHEN {OK_DECIDED_SQL} THEN 1 ELSE 0 END AS decided,
       CASE WHEN {OK_DECIDED_SQL} AND NOT v.passed THEN 1 ELSE 0 END AS failed, {statuses}
FROM verdict v JOIN "constraint" c ON c.id = v.constraint_id JOIN response r ON r.id = v.response_id
JOIN instance i ON i.id = r.instance_id
WHERE v.metric = 'constraint' AND {run_filter} AND {JUDGE_FILTER_SQL}
UNION ALL
SELECT r.run_id, r.model_id, i.domain_id, {MODE_SQL}, c.category, c.sub_dimension, 0, 0, 0, {zeros}
FROM response r JOIN instance i ON i.id = r.instance_id JOIN "constraint" c ON c.instance_id = i.id
WHERE r.status = 'done' AND {response_filter}
  AND NOT EXISTS (SELECT 1 FROM verdict v WHERE v.response_id = r.id AND v.constraint_id = c.id
                  AND v.metric = 'constraint' AND {JUDGE_FILTER_SQL})
) x
GROUP BY x.run_id, x.model_id, x.domain_id, x.mode, x.category, x.sub_dimension
"""


AGGREGATE_COLUMNS: tuple[str, ...] = ("run_id", "judge", "model_id", "protocol", "mode", "domain_id", "language",
                                      "origin", "has_protocol", "metric", "state", "responses", "n_values", "total",
                                      "total_sq")
# whether an instance carries a knowledge-protocol constraint that applies in its mode (the Robustness page's
# protocol effect); as a LEFT JOIN of `p` (the response's instance when it carries one, by primary key: a derived
# table of such instances was scanned once per row by SQLite, ~1 s per paper-scale inline read) on the response r, 1
# or 0 by HAS_PROTOCOL_SQL
PROTOCOL_JOIN_SQL = """
LEFT JOIN instance p ON p.id = r.instance_id
       AND EXISTS (SELECT 1 FROM "constraint" c WHERE c.instance_id = p.id AND c.category = 'knowledge_protocol'
                   AND (c.precondition IS NULL OR c.precondition = p.mode))"""
HAS_PROTOCOL_SQL = "CASE WHEN p.id IS NULL THEN 0 ELSE 1 END"


RESPONSES_METRIC = ""  # metric_aggregate's row of every done response of a group (metric and state ''), so a
# metric's responses with no response_metric row count as unjudged, as the per-response frame counts them


def aggregate_select_sql(source: str, run_filter: str = "s.run_id IN ({runs})",
                         response_filter: str = "r.run_id IN ({runs})") -> str:
    """SELECT of metric_aggregate rows for :judge from `source` (response_metric or its SELECT inline) over
    `run_filter` (default: the {runs} placeholder's runs): per run, model, protocol, mode, domain, language, origin,
    knowledge protocol (has_protocol), metric and state of the done responses, the responses, the values present,
    their sum and sum of squares (the state decides whether a metric counts a value); plus, per group, one
    RESPONSES_METRIC row counting its done responses over `response_filter`."""
    groups = (f"r.model_id, i.protocol, {MODE_SQL}, i.domain_id, COALESCE(i.language, ''), COALESCE(i.origin, ''), "
              f"{HAS_PROTOCOL_SQL}")
    named = (f"CAST(:judge AS VARCHAR) AS judge, r.model_id, i.protocol, {MODE_SQL} AS mode, i.domain_id, "
             f"COALESCE(i.language, '') AS language, COALESCE(i.origin, '') AS origin, "
             f"{HAS_PROTOCOL_SQL} AS has_protocol")
    return f"""
SELECT s.run_id, {named}, s.metric, s.state, COUNT(*) AS responses, COUNT(s.value) AS n_values,
       COALESCE(SUM(s.value), 0.0) AS total, COALESCE(SUM(s.value * s.value), 0.0) AS total_sq
FROM {source} s JOIN response r ON r.id = s.response_id JOIN instance i ON i.id = r.instance_id {PROTOCOL_JOIN_SQL}
WHERE s.judge = :judge AND {run_filter} AND r.status = 'done'
GROUP BY s.run_id, {groups}, s.metric, s.state
UNION ALL
SELECT r.run_id, {named}, '{RESPONSES_METRIC}', '{RESPONSES_METRIC}', COUNT(*), 0, 0.0, 0.0
FROM response r JOIN instance i ON i.id = r.instance_id {PROTOCOL_JOIN_SQL}
WHERE {response_filter} AND r.status = 'done'
GROUP BY r.run_id, {groups}
"""


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


def response_counts_sql(source: str, run_filter: str = "r.run_id IN ({runs})") -> str:
    """SELECT of one row per done response of a constraint protocol over `run_filter`: its group (GROUP_COLUMNS of
    ias_sums, model and domain by id) and its constraint counts from `source` (response_score or its SELECT inline),
    cost and latency."""
    categories = ", ".join(f"COALESCE(s.judged_{c}, 0) AS judged_{c}, COALESCE(s.passed_{c}, 0) AS passed_{c}"
                           for c in CATEGORIES)
    sql = (_RESPONSE_COUNTS_SQL.replace("{mode}", MODE_SQL).replace("{categories}", categories)
           .replace("{source}", source).replace("{has_protocol}", HAS_PROTOCOL_SQL)
           .replace("{protocol_join}", PROTOCOL_JOIN_SQL).replace("r.run_id IN ({runs})", run_filter))
    return constraint_protocols_sql(sql)


_IAS_INSERT_SQL = (f"INSERT INTO metric_aggregate ({', '.join(AGGREGATE_COLUMNS)}) VALUES "
                   f"({', '.join(':' + c for c in AGGREGATE_COLUMNS)})")


def _store_ias_sums(conn: Connection, params: dict) -> None:
    """metric_aggregate rows of the IAS metrics, amounts and gap helpers of one run (ias_sums.group_sums) from the
    response_score rows just written on `conn`."""
    result = conn.execute(text(response_counts_sql("response_score", "r.run_id = :run")), params)
    counts = pd.DataFrame.from_records(result.fetchall(), columns=list(result.keys()), coerce_float=True)
    sums = group_sums(counts).rename(columns={"model": "model_id", "domain": "domain_id"})
    if sums.empty:
        return
    sums["judge"] = params["judge"]
    rows = [{c: _plain(row[c]) for c in AGGREGATE_COLUMNS} for row in sums.to_dict("records")]
    conn.execute(text(_IAS_INSERT_SQL), rows)


def _plain(value: object) -> object:
    """A numpy scalar as the Python value a DB-API driver takes."""
    return value.item() if isinstance(value, np.generic) else value


# `+v.run_id` keeps SQLite on a table scan, which beats the run_id index when a run holds most verdicts.
SUMMARY_SELECT_SQL = _summary_select("v.run_id IN ({runs})")
FAILURE_SELECT_SQL = _failure_select("v.run_id IN ({runs})", "r.run_id IN ({runs})")
_SUMMARY_INSERT_SQL = (f"INSERT INTO response_score (response_id, judge, run_id, {', '.join(SUMMARY_COLUMNS)})"
                       + _summary_select("+v.run_id = :run"))
_FAILURE_INSERT_SQL = ("INSERT INTO failure_count (run_id, judge, model_id, domain_id, mode, category, sub_dimension, "
                       f"verdicts, decided, failed, {', '.join(FAILURE_STATUS_COLUMNS)}, unjudged)"
                       + _failure_select("+v.run_id = :run", "r.run_id = :run"))
FAILURE_KEYS: tuple[str, ...] = ("run_id", "judge", "model_id", "mode", "category", "sub_dimension")
FAILURE_COUNT_COLUMNS: tuple[str, ...] = ("verdicts", "decided", "failed", *FAILURE_STATUS_COLUMNS, "unjudged")
# failure_count summed over the domains (Figure 4 over every domain reads a sixth of the rows), from the run's
# failure_count rows just written
_FAILURE_MODE_INSERT_SQL = (
    f"INSERT INTO failure_mode_count ({', '.join(FAILURE_KEYS)}, {', '.join(FAILURE_COUNT_COLUMNS)}) "
    f"SELECT {', '.join(FAILURE_KEYS)}, {', '.join(f'SUM({c})' for c in FAILURE_COUNT_COLUMNS)} FROM failure_count "
    f"WHERE run_id = :run AND judge = :judge GROUP BY {', '.join(FAILURE_KEYS)}")
_AGGREGATE_INSERT_SQL = (f"INSERT INTO metric_aggregate ({', '.join(AGGREGATE_COLUMNS)})"
                         + aggregate_select_sql("response_metric", "s.run_id = :run", "r.run_id = :run"))
# per run asked: the change counter its stored summaries for :judge were built at, and its current one
# (run_verdict_count, kept by triggers on verdict, migration 0030): primary-key lookups, where counting a run's
# verdicts took 3.7 ms at paper scale
_FRESHNESS_SQL = """
SELECT r.run_id, s.verdicts, s.verdict_changes, c.verdicts, c.changes
FROM ({asked}) r LEFT JOIN response_score_state s ON s.run_id = r.run_id AND s.judge = :judge
LEFT JOIN run_verdict_count c ON c.run_id = r.run_id
"""


def stale_summary_runs(engine: Engine, run_ids: Sequence[int], judge: str) -> list[int]:
    """Runs whose stored summaries for `judge` were not built from their current verdicts: a verdict inserted,
    deleted or moved since (a run with neither verdicts nor summaries is current); reads only, one statement."""
    runs = sorted({int(r) for r in run_ids})
    if not runs:
        return []
    asked = " UNION ALL ".join(f"SELECT {r} AS run_id" for r in runs)
    with engine.connect() as conn:
        rows = conn.execute(text(_FRESHNESS_SQL.replace("{asked}", asked)), {"judge": judge}).all()
    return sorted(int(r) for r, n, built, now_n, now in rows if (n or 0, built or 0) != (now_n or 0, now or 0))


def rebuild_summaries(engine: Engine, run_id: int, judge: str) -> int:
    """Rebuild one run's response_score, response_metric, failure_count, failure_mode_count and metric_aggregate rows
    and its response_pack (core.scoring.summaries.store_response_pack) for `judge` from its verdicts; returns the
    response_score rows written."""
    params = {"run": int(run_id), "judge": judge}
    metric_insert = (f"INSERT INTO response_metric ({', '.join(METRIC_COLUMNS)})"
                     + _metric_select("+v.run_id = :run", "r.run_id = :run", judge))
    with engine.begin() as conn:
        if conn.dialect.name == "postgresql":
            # fresh planner statistics: right after a run's verdicts are bulk-written, PostgreSQL's autovacuum may not
            # have analysed them yet, and the summaries' joins then got a nested-loop plan taking minutes at paper scale
            conn.execute(text('ANALYZE verdict, response, instance, "constraint"'))
        for table in ("response_score", "response_metric", "failure_count", "failure_mode_count", "metric_aggregate",
                      "response_pack", "response_score_state"):
            conn.execute(text(f"DELETE FROM {table} WHERE run_id = :run AND judge = :judge"), params)
        # the counter before the summaries read the verdicts: one written meanwhile leaves them stale, never current
        changes = conn.execute(text("SELECT changes FROM run_verdict_count WHERE run_id = :run"), params).scalar()
        written = conn.execute(text(_SUMMARY_INSERT_SQL), params).rowcount
        conn.execute(text(metric_insert), params)
        conn.execute(text(_FAILURE_INSERT_SQL), params)
        conn.execute(text(_FAILURE_MODE_INSERT_SQL), params)  # from the failure_count rows just written
        conn.execute(text(_AGGREGATE_INSERT_SQL), params)  # from the response_metric rows just written
        _store_ias_sums(conn, params)  # from the response_score rows just written
        store_response_pack(conn, run_id, judge)  # the scores statement over the summaries just written
        n, mx = conn.execute(text("SELECT COUNT(*), MAX(id) FROM verdict WHERE run_id = :run"), params).one()
        conn.execute(text("INSERT INTO response_score_state (run_id, judge, verdicts, max_verdict_id, verdict_changes) "
                          "VALUES (:run, :judge, :n, :mx, :changes)"),
                     params | {"n": int(n), "mx": int(mx or 0), "changes": int(changes or 0)})
    return int(written)


def refresh_summaries(engine: Engine, run_ids: Sequence[int], judge: str) -> list[int]:
    """Rebuild the summaries of `judge` for the runs whose verdicts changed since they were built; returns those runs."""
    stale = stale_summary_runs(engine, run_ids, judge)
    for run_id in stale:
        rebuild_summaries(engine, run_id, judge)
    return stale


def scored_judges(engine: Engine, run_id: int) -> list[str]:
    """Judges (other than 'rule') that wrote verdicts in `run_id`."""
    with engine.connect() as conn:
        rows = conn.execute(text("SELECT DISTINCT judge FROM verdict WHERE run_id = :run AND judge != 'rule'"),
                            {"run": int(run_id)}).scalars()
        return sorted(rows)


def summarise_run(engine: Engine, run_id: int) -> list[str]:
    """The summarise stage: refresh the summaries of every judge that scored `run_id`; returns the judges rebuilt."""
    return [j for j in scored_judges(engine, run_id) if refresh_summaries(engine, [run_id], j)]


# ---- the per-response scores statement and its packs (response_pack)
# The per-response scores statement of the constraint protocols (ids, costs, summary counts, the RAG metrics' counted
# values and state codes, one row per done response in response order) and its stored copy per run and judge,
# response_pack: the summarise stage runs the same statement over the summaries it has just written and packs its
# columns as little-endian float64 cells (core.scoring.summaries.rebuild_summaries, in the summaries' transaction); the read model
# (core.analysis.readmodel.responses.response_scores) reads the packs where every run's summaries are current and packed,
# else runs the statement. One statement, so a stored pack holds what a read of the statement gives (NULL -> NaN).

UNJUDGED = "unjudged"  # the state of a declared metric with no response_metric row (nothing stored for it)

# per response only what is its own (ids, costs, summary counts): its instance's and model's values are read once
# each (the read model's instance and model statements) and spread over the responses by id
SCORES_COLUMNS_SQL = f"""
r.run_id, r.id AS response_id, r.model_id, r.instance_id, r.cost_usd, r.latency_ms,
{", ".join(f"s.{col}" for col in SUMMARY_COLUMNS)}"""

# the columns of the scores statement (enterprise_scores_sql), in order: what a pack holds
PACK_COLUMNS: tuple[str, ...] = ("run_id", "response_id", "model_id", "instance_id", "cost_usd", "latency_ms",
                                 *SUMMARY_COLUMNS, *(c for m in METRIC_NAMES for c in (m, f"{m}_state")))

_SCORES_SQL = """
SELECT {columns}
FROM response r JOIN instance i ON i.id = r.instance_id {joins}
LEFT JOIN {source} s ON s.response_id = r.id AND s.judge = :judge
{metric_joins}
WHERE r.status = 'done' AND r.run_id IN ({runs}) AND i.protocol IN ({constraint_protocols})
ORDER BY r.id
"""


def summary_source(stale: bool, run_ids: Sequence[int]) -> str:
    """response_score, or for stale runs its SELECT over them inline (reads only)."""
    return "(" + runs_sql(SUMMARY_SELECT_SQL, run_ids) + ")" if stale else "response_score"


def scores_sql(columns: str, source: str, metric_joins: str, run_ids: Sequence[int], joins: str = "") -> str:
    """SELECT `columns` per done response of a constraint protocol in the runs, in response order: the response r, its
    instance i, `joins` (e.g. CONSTRAINT_COUNT_JOIN_SQL), its summary row s of :judge (from `source`, summary_source)
    and `metric_joins` (metric_cells_sql)."""
    sql = (_SCORES_SQL.replace("{columns}", columns).replace("{joins}", joins)
           .replace("{source}", source).replace("{metric_joins}", metric_joins))
    return runs_sql(constraint_protocols_sql(sql), run_ids)


def counted_value_sql(metric: str, row: str = "s") -> str:
    """SQL of `metric`'s value in the response_metric row `row` where its declaration counts the row's state, else NULL."""
    states = ", ".join(f"'{VERDICT_STATES[status]}'" for status in get_metric(metric).counted_statuses())
    return f"CASE WHEN {row}.state IN ({states}) THEN {row}.value END"


def _metric_pivot_sql(source: str, metrics: Sequence[str]) -> str:
    """One row per response of the {runs} runs: per metric its counted value and its state (columns m, m_state)."""
    cells = ", ".join(f"MAX(CASE WHEN s.metric = '{m}' THEN {counted_value_sql(m)} END) AS {m}, "
                      f"MAX(CASE WHEN s.metric = '{m}' THEN s.state END) AS {m}_state" for m in metrics)
    names = ", ".join(f"'{m}'" for m in metrics)
    return (f"SELECT s.response_id, {cells} FROM {source} s "
            f"WHERE s.judge = :judge AND s.run_id IN ({{runs}}) AND s.metric IN ({names}) GROUP BY s.response_id")


def metric_cells_sql(stale: bool, run_ids: Sequence[int], judge: str, metrics: Sequence[str] = METRIC_NAMES
                     ) -> tuple[str, dict[str, tuple[str, str]]]:
    """(joins, metric -> (counted value, state) SQL) joining `metrics`' response_metric rows of `judge` onto the
    response `r`: stored rows by their primary key (one join per metric), or the inline rows of stale runs pivoted once."""
    if stale:
        pivot = _metric_pivot_sql("(" + runs_sql(metric_select_sql(judge), run_ids) + ")", metrics)
        return f"LEFT JOIN ({pivot}) x ON x.response_id = r.id", {m: (f"x.{m}", f"x.{m}_state") for m in metrics}
    joins = " ".join(f"LEFT JOIN response_metric x_{m} ON x_{m}.response_id = r.id AND x_{m}.judge = :judge "
                     f"AND x_{m}.metric = '{m}'" for m in metrics)
    return joins, {m: (counted_value_sql(m, f"x_{m}"), f"x_{m}.state") for m in metrics}


def state_code_sql(state: str) -> str:
    """SQL of a stored state's position in core.metrics.STATES (no row: unjudged's; a state outside STATES: -1)."""
    whens = " ".join(f"WHEN {state} = '{name}' THEN {code}" for code, name in enumerate(STATES))
    return f"CASE WHEN {state} IS NULL THEN {STATES.index(UNJUDGED)} {whens} ELSE -1 END"


def enterprise_scores_sql(stale: bool, run_ids: Sequence[int], judge: str) -> str:
    """The scores statement (columns PACK_COLUMNS): SCORES_COLUMNS_SQL with METRIC_NAMES' counted value and state code
    (state_code_sql; the status follows from the state) by metric_cells_sql, from the stored summaries or, for stale
    runs, their SELECTs inline."""
    joins, cells = metric_cells_sql(stale, run_ids, judge)
    columns = ", ".join(f"{value} AS {m}, {state_code_sql(state)} AS {m}_state" for m, (value, state) in cells.items())
    return scores_sql(f"{SCORES_COLUMNS_SQL},\n{columns}", summary_source(stale, run_ids), joins, run_ids)


def _protocols() -> str:
    """The constraint protocols the scores statement reads, as it names them."""
    return constraint_protocols_sql("{constraint_protocols}")


def store_response_pack(conn: Connection, run_id: int, judge: str) -> int:
    """Run the scores statement over one run's stored summaries on `conn` (in the transaction that has just written
    them) and store its columns as the run's pack for `judge`; returns its rows."""
    result = conn.execute(text(enterprise_scores_sql(False, [int(run_id)], judge)), {"judge": judge})
    names = tuple(result.keys())
    if names != PACK_COLUMNS:
        raise ValueError(f"the scores statement gave columns {names}, not {PACK_COLUMNS}")
    rows = result.fetchall()
    cells = np.array(rows, dtype="<f8").reshape(len(rows), len(names))  # NULL -> NaN
    conn.execute(text("INSERT INTO response_pack (run_id, judge, protocols, names, rows, cells) "
                      "VALUES (:run, :judge, :protocols, :names, :rows, :cells)"),
                 {"run": int(run_id), "judge": judge, "protocols": _protocols(), "names": ",".join(names),
                  "rows": len(rows), "cells": np.ascontiguousarray(cells).tobytes()})
    return len(rows)


def read_response_pack(engine: Engine, run_ids: Sequence[int], judge: str) -> dict[str, np.ndarray] | None:
    """The scores statement's columns over the runs from their packs for `judge` (float64, NULL as NaN; rows in
    response order; empty without a row), or None when a run has no pack, or one packed other columns or constraint
    protocols than the statement now reads (the caller then runs the statement). The runs' summaries must be current
    (stale_summary_runs): a pack is written with them. Reads only."""
    runs = sorted({int(r) for r in run_ids})
    if not runs:
        return None
    sql = runs_sql("SELECT run_id, protocols, names, rows, cells FROM response_pack "
                   "WHERE judge = :judge AND run_id IN ({runs})", runs)
    with engine.connect() as conn:
        packs = conn.execute(text(sql), {"judge": judge}).all()
    names, protocols = ",".join(PACK_COLUMNS), _protocols()
    if len(packs) != len(runs) or any(p.names != names or p.protocols != protocols for p in packs):
        return None
    parts = [np.frombuffer(bytes(p.cells), dtype="<f8").reshape(int(p.rows), len(PACK_COLUMNS)) for p in packs]
    cells = np.concatenate(parts) if len(parts) > 1 else parts[0]
    if not len(cells):
        return {}
    if len(parts) > 1:  # the statement's order: by response id (unique)
        cells = cells[np.argsort(cells[:, PACK_COLUMNS.index("response_id")], kind="stable")]
    return {name: cells[:, i] for i, name in enumerate(PACK_COLUMNS)}
