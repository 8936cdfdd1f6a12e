"""The summarise stage: per-response score rows and Figure-4 failure counts, built in SQL from one judge's verdicts.

Which verdicts count for judge J: J's constraint verdicts plus the rule verdicts of rule-checked constraints (one
merged set per judge), and J's metric verdicts. The write side (`rebuild_summaries`, called by the pipeline after
scoring) stores them in response_score / failure_count; the read model runs the same SELECTs inline for any run whose
verdicts changed since (`stale_summary_runs`), so the stored rows are a cache of this computation, never a second one.
"""

from __future__ import annotations

from collections.abc import Sequence

from sqlalchemy import text
from sqlalchemy.engine import Engine

from core.store.schema import CATEGORIES, NO_MODE

METRIC_NAMES: tuple[str, ...] = ("faithfulness", "coverage", "rejection", "conflict_recognition", "refusal")
JUDGE_FILTER_SQL = "(v.judge = :judge OR (v.judge = 'rule' AND c.judge_method = 'rule'))"
OK_DECIDED_SQL = "v.status = 'ok' AND v.passed IS NOT NULL"
MODE_SQL = f"COALESCE(i.mode, '{NO_MODE}')"  # failure counts are keyed by mode, and an IFEval prompt has none
COUNT_COLUMNS: tuple[str, ...] = ("n", "judged", "passed", "errors",
                                  *(f"{k}_{c}" for c in CATEGORIES for k in ("judged", "passed")))
SUMMARY_COLUMNS: tuple[str, ...] = (*COUNT_COLUMNS, *(x for m in METRIC_NAMES for x in (m, f"{m}_status")),
                                    "judge_calls", "judge_cost_usd")


def runs_sql(sql: str, run_ids: Sequence[int]) -> str:
    """`sql` with its {runs} placeholder replaced by the integer run ids (NULL when there are none)."""
    return sql.replace("{runs}", ", ".join(str(int(r)) for r in run_ids) or "NULL")


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
    for m in METRIC_NAMES:
        sums += [f"MAX(CASE WHEN v.metric = '{m}' AND v.status = 'ok' THEN v.value END)",
                 f"MAX(CASE WHEN v.metric = '{m}' THEN v.status END)"]
    sums += ["SUM(COALESCE(v.calls, 0))", "SUM(COALESCE(v.cost_usd, 0))"]
    names = ", ".join(f"{expr} AS {col}" for expr, col in zip(sums, SUMMARY_COLUMNS, strict=True))
    return f"""
SELECT v.response_id, CAST(:judge AS VARCHAR) AS judge, v.run_id, {names}
FROM verdict v LEFT JOIN "constraint" c ON c.id = v.constraint_id
WHERE {run_filter}
  AND ((v.metric = 'constraint' AND {JUDGE_FILTER_SQL}) OR (v.metric != 'constraint' AND v.judge = :judge))
GROUP BY v.response_id, v.run_id
"""


def _failure_select(run_filter: str) -> str:
    """SELECT of failure_count rows for :judge over `run_filter`."""
    return f"""
SELECT v.run_id, CAST(:judge AS VARCHAR) AS judge, r.model_id, i.domain_id, {MODE_SQL} AS mode, c.category, c.sub_dimension,
       COUNT(*) AS verdicts, SUM(CASE WHEN {OK_DECIDED_SQL} THEN 1 ELSE 0 END) AS decided,
       SUM(CASE WHEN {OK_DECIDED_SQL} AND NOT v.passed THEN 1 ELSE 0 END) AS failed
FROM verdict v JOIN "constraint" c ON c.id = v.constraint_id JOIN response r ON r.id = v.response_id
JOIN instance i ON i.id = r.instance_id
WHERE v.metric = 'constraint' AND {run_filter} AND {JUDGE_FILTER_SQL}
GROUP BY v.run_id, r.model_id, i.domain_id, {MODE_SQL}, c.category, c.sub_dimension
"""


# `+v.run_id` keeps SQLite on a table scan, which beats the run_id index when a run holds most verdicts.
SUMMARY_SELECT_SQL = _summary_select("v.run_id IN ({runs})")
FAILURE_SELECT_SQL = _failure_select("v.run_id IN ({runs})")
_SUMMARY_INSERT_SQL = (f"INSERT INTO response_score (response_id, judge, run_id, {', '.join(SUMMARY_COLUMNS)})"
                       + _summary_select("+v.run_id = :run"))
_FAILURE_INSERT_SQL = ("INSERT INTO failure_count (run_id, judge, model_id, domain_id, mode, category, sub_dimension, "
                       "verdicts, decided, failed)" + _failure_select("+v.run_id = :run"))
_FINGERPRINT_SQL = "SELECT run_id, COUNT(*), MAX(id) FROM verdict WHERE run_id IN ({runs}) GROUP BY run_id"
_STATE_SQL = "SELECT run_id, verdicts, max_verdict_id FROM response_score_state WHERE judge = :judge AND run_id IN ({runs})"


def stale_summary_runs(engine: Engine, run_ids: Sequence[int], judge: str) -> list[int]:
    """Runs whose stored summaries for `judge` were not built from their current verdicts (count, max id); reads only."""
    runs = sorted({int(r) for r in run_ids})
    if not runs:
        return []
    with engine.connect() as conn:
        current = {int(r): (int(n), int(mx or 0)) for r, n, mx in conn.execute(text(runs_sql(_FINGERPRINT_SQL, runs)))}
        built = {int(r): (int(n), int(mx)) for r, n, mx in conn.execute(text(runs_sql(_STATE_SQL, runs)), {"judge": judge})}
    return [r for r in runs if current.get(r, (0, 0)) != built.get(r, (0, 0))]


def rebuild_summaries(engine: Engine, run_id: int, judge: str) -> int:
    """Rebuild one run's response_score and failure_count rows for `judge` from its verdicts; returns response rows."""
    params = {"run": int(run_id), "judge": judge}
    with engine.begin() as conn:
        for table in ("response_score", "failure_count", "response_score_state"):
            conn.execute(text(f"DELETE FROM {table} WHERE run_id = :run AND judge = :judge"), params)
        written = conn.execute(text(_SUMMARY_INSERT_SQL), params).rowcount
        conn.execute(text(_FAILURE_INSERT_SQL), params)
        n, mx = conn.execute(text("SELECT COUNT(*), MAX(id) FROM verdict WHERE run_id = :run"), params).one()
        conn.execute(text("INSERT INTO response_score_state (run_id, judge, verdicts, max_verdict_id) "
                          "VALUES (:run, :judge, :n, :mx)"), params | {"n": int(n), "mx": int(mx or 0)})
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
