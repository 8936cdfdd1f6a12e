"""Aggregation of verdict rows: IAS arithmetic, per-response scores, per model x subset summaries, failure counts."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd
from sqlalchemy import text
from sqlalchemy.engine import Engine

from core.store.schema import CATEGORIES

RULE_JUDGE = "rule"
METRIC_NAMES: tuple[str, ...] = ("faithfulness", "coverage", "rejection", "conflict_recognition", "refusal")
RESPONSE_COLUMNS: tuple[str, ...] = (
    "run_id", "response_id", "model", "instance_uid", "domain", "mode", "origin",
    "loose_ias", "strict_ias", *(f"loose_{c}" for c in CATEGORIES), *METRIC_NAMES,
    *(f"{m}_status" for m in METRIC_NAMES),
    "n_constraints", "n_constraint_errors", "n_constraint_unjudged", "has_protocol",
    "cost_usd", "latency_ms", "judge_calls", "judge_cost_usd",
)
CONSTRAINT_COLUMNS: tuple[str, ...] = (
    "response_id", "run_id", "model", "instance_uid", "domain", "mode", "category", "sub_dimension", "cid", "text",
    "method", "judge", "status", "passed", "reason",
)


@dataclass(frozen=True)
class IAS:
    """Instruction adherence of one response: Loose (share satisfied) and Strict (all satisfied), with counts."""

    loose: float | None
    strict: float | None
    n_judged: int
    n_failed: int
    n_errors: int
    n_unjudged: int


def ias(verdicts: Iterable[tuple[str, bool | None]]) -> IAS:
    """IAS from (status, passed) pairs: errors and unjudged leave the denominator; Strict is None if they hide a verdict."""
    pairs = list(verdicts)
    judged = [bool(p) for s, p in pairs if s == "ok" and p is not None]
    n_errors = sum(s == "error" for s, _ in pairs)
    n_unjudged = sum(s == "not_applicable" or (s == "ok" and p is None) for s, p in pairs)
    n_failed = judged.count(False)
    loose = sum(judged) / len(judged) if judged else None
    if n_failed:
        strict: float | None = 0.0
    elif n_errors or n_unjudged or not judged:
        strict = None
    else:
        strict = 1.0
    return IAS(loose, strict, len(judged), n_failed, n_errors, n_unjudged)


# Which verdicts count: constraint verdicts of `judge`, plus rule verdicts of constraints whose judge_method is
# 'rule'; metric verdicts of `judge` only. Per-response scores come from the response_score summary table (one row
# per response and judge, ~15k rows at paper scale) and Figure-4 counts from failure_count (a few thousand rows);
# both are rebuilt in SQL (INSERT ... SELECT, one scan of a run's verdicts;
# `+v.run_id` keeps SQLite on a table scan, which beats the run_id index when a run holds most verdicts) by
# core.scoring.scorer.score_run after scoring, and on read for any run whose verdicts changed since (count or max id), which
# also backfills runs scored before the table existed. The frames are assembled with vectorised pandas.
JUDGE_FILTER_SQL = "(v.judge = :judge OR (v.judge = 'rule' AND c.judge_method = 'rule'))"
_OK_DECIDED = "v.status = 'ok' AND v.passed IS NOT NULL"
_COUNT_COLUMNS: tuple[str, ...] = ("n", "judged", "passed", "errors", *(f"{k}_{c}" for c in CATEGORIES for k in ("judged", "passed")))
SUMMARY_COLUMNS: tuple[str, ...] = (*_COUNT_COLUMNS, *(x for m in METRIC_NAMES for x in (m, f"{m}_status")),
                                    "judge_calls", "judge_cost_usd")


def _summary_insert_sql() -> str:
    """INSERT ... SELECT of one run's response_score rows for :judge (one scan of the run's verdicts)."""
    con = "v.metric = 'constraint'"
    sums = [f"SUM(CASE WHEN {con} THEN 1 ELSE 0 END)",
            f"SUM(CASE WHEN {con} AND {_OK_DECIDED} THEN 1 ELSE 0 END)",
            f"SUM(CASE WHEN {con} AND {_OK_DECIDED} AND v.passed THEN 1 ELSE 0 END)",
            f"SUM(CASE WHEN {con} AND v.status = 'error' THEN 1 ELSE 0 END)"]
    for cat in CATEGORIES:
        sums += [f"SUM(CASE WHEN {con} AND c.category = '{cat}' AND {_OK_DECIDED} THEN 1 ELSE 0 END)",
                 f"SUM(CASE WHEN {con} AND c.category = '{cat}' AND {_OK_DECIDED} AND v.passed THEN 1 ELSE 0 END)"]
    for m in METRIC_NAMES:
        sums += [f"MAX(CASE WHEN v.metric = '{m}' AND v.status = 'ok' THEN v.value END)",
                 f"MAX(CASE WHEN v.metric = '{m}' THEN v.status END)"]
    sums += ["SUM(COALESCE(v.calls, 0))", "SUM(COALESCE(v.cost_usd, 0))"]
    return f"""
INSERT INTO response_score (response_id, judge, run_id, {", ".join(SUMMARY_COLUMNS)})
SELECT v.response_id, :judge, :run, {", ".join(sums)}
FROM verdict v LEFT JOIN "constraint" c ON c.id = v.constraint_id
WHERE +v.run_id = :run
  AND ((v.metric = 'constraint' AND {JUDGE_FILTER_SQL}) OR (v.metric != 'constraint' AND v.judge = :judge))
GROUP BY v.response_id
"""


_SUMMARY_INSERT_SQL = _summary_insert_sql()
_SCORES_SQL = f"""
SELECT r.run_id, r.id AS response_id, m.name AS model, i.uid AS instance_uid, d.name AS domain, i.mode, i.origin,
       r.cost_usd, r.latency_ms, CASE WHEN p.instance_id IS NULL THEN 0 ELSE 1 END AS has_protocol,
       {", ".join(f"s.{col}" for col in SUMMARY_COLUMNS)}
FROM response r JOIN instance i ON i.id = r.instance_id JOIN domain d ON d.id = i.domain_id
JOIN model m ON m.id = r.model_id
LEFT JOIN (SELECT DISTINCT c.instance_id FROM "constraint" c JOIN instance ci ON ci.id = c.instance_id
           WHERE c.category = 'knowledge_protocol' AND (c.precondition IS NULL OR c.precondition = ci.mode)) p
       ON p.instance_id = r.instance_id
LEFT JOIN response_score s ON s.response_id = r.id AND s.judge = :judge
WHERE r.status = 'done' AND r.run_id IN ({{runs}})
ORDER BY r.id
"""
_FAILURE_INSERT_SQL = f"""
INSERT INTO failure_count (run_id, judge, model_id, domain_id, mode, category, sub_dimension, verdicts, decided, failed)
SELECT :run, :judge, r.model_id, i.domain_id, i.mode, c.category, c.sub_dimension, COUNT(*),
       SUM(CASE WHEN {_OK_DECIDED} THEN 1 ELSE 0 END), SUM(CASE WHEN {_OK_DECIDED} AND NOT v.passed THEN 1 ELSE 0 END)
FROM verdict v JOIN "constraint" c ON c.id = v.constraint_id JOIN response r ON r.id = v.response_id
JOIN instance i ON i.id = r.instance_id
WHERE v.metric = 'constraint' AND +v.run_id = :run AND {JUDGE_FILTER_SQL}
GROUP BY r.model_id, i.domain_id, i.mode, c.category, c.sub_dimension
"""
_FAILURE_COUNTS_SQL = """
SELECT m.name AS model, d.name AS domain, f.mode, f.category, f.sub_dimension, SUM(f.verdicts) AS verdicts,
       SUM(f.decided) AS decided, SUM(f.failed) AS failed
FROM failure_count f JOIN model m ON m.id = f.model_id JOIN domain d ON d.id = f.domain_id
WHERE f.judge = :judge AND f.run_id IN ({runs})
GROUP BY m.name, d.name, f.mode, f.category, f.sub_dimension
"""
_FINGERPRINT_SQL = "SELECT run_id, COUNT(*), MAX(id) FROM verdict WHERE run_id IN ({runs}) GROUP BY run_id"
_STATE_SQL = "SELECT run_id, verdicts, max_verdict_id FROM response_score_state WHERE judge = :judge AND run_id IN ({runs})"


def stale_summary_runs(engine: Engine, run_ids: Sequence[int], judge: str) -> list[int]:
    """Runs whose summaries for `judge` were not built from their current verdicts (count, max id)."""
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
        conn.execute(text("INSERT INTO response_score_state (run_id, judge, verdicts, max_verdict_id) VALUES (:run, :judge, :n, :mx)"),
                     params | {"n": int(n), "mx": int(mx or 0)})
    return int(written)


def refresh_summaries(engine: Engine, run_ids: Sequence[int], judge: str) -> list[int]:
    """Rebuild the summaries of `judge` for the runs whose verdicts changed since they were built; returns those runs."""
    stale = stale_summary_runs(engine, run_ids, judge)
    for run_id in stale:
        rebuild_summaries(engine, run_id, judge)
    return stale


def summarised_judges(engine: Engine, run_id: int) -> list[str]:
    """Judges whose summaries were built for `run_id`."""
    with engine.connect() as conn:
        return sorted(conn.execute(text("SELECT judge FROM response_score_state WHERE run_id = :run"), {"run": int(run_id)}).scalars())


_CONSTRAINT_VERDICTS_SQL = """
SELECT v.response_id, v.run_id, m.name AS model, i.uid AS instance_uid, d.name AS domain, i.mode, c.category,
       c.sub_dimension, c.cid, c.text, v.method, v.judge, v.status, v.passed, v.reason
FROM verdict v JOIN "constraint" c ON c.id = v.constraint_id JOIN response r ON r.id = v.response_id
JOIN instance i ON i.id = r.instance_id JOIN domain d ON d.id = i.domain_id JOIN model m ON m.id = r.model_id
WHERE v.metric = 'constraint' AND v.run_id IN ({runs}) AND %s {extra}
ORDER BY v.response_id, c.position
""" % JUDGE_FILTER_SQL


def runs_sql(sql: str, run_ids: Sequence[int]) -> str:
    """`sql` with its {runs} placeholder replaced by the integer run ids (NULL when there are none)."""
    return sql.replace("{runs}", ", ".join(str(int(r)) for r in run_ids) or "NULL")


def read_sql(engine: Engine, sql: str, params: dict | None = None) -> pd.DataFrame:
    """A DataFrame from a textual SQL query with bound parameters (rows taken straight off the DB-API cursor)."""
    with engine.connect() as conn:
        result = conn.execute(text(sql), params or {})
        columns = list(result.keys())
        rows = result.cursor.fetchall() if result.cursor is not None else []
    return pd.DataFrame.from_records(rows, columns=columns, coerce_float=True)


def _empty_scores() -> pd.DataFrame:
    return pd.DataFrame({c: pd.Series(dtype=float if c in _FLOAT_COLUMNS else object) for c in RESPONSE_COLUMNS})


_FLOAT_COLUMNS = frozenset({"loose_ias", "strict_ias", *(f"loose_{c}" for c in CATEGORIES), *METRIC_NAMES,
                            "cost_usd", "latency_ms", "judge_cost_usd"})
_INT_COLUMNS = ("run_id", "response_id", "n_constraints", "n_constraint_errors", "n_constraint_unjudged", "judge_calls")


def response_scores(engine: Engine, run_ids: Sequence[int], judge: str) -> pd.DataFrame:
    """One row per done response: IAS (loose, strict, per category), RAG metrics, counts, generator and judge cost."""
    refresh_summaries(engine, run_ids, judge)
    out = read_sql(engine, runs_sql(_SCORES_SQL, run_ids), {"judge": judge})
    if out.empty:
        return _empty_scores()
    counts = [*_COUNT_COLUMNS, "judge_calls"]
    out[counts] = out[counts].fillna(0).astype("int64")
    # IAS: errors and unjudged (not_applicable, or ok without a decision) leave the denominator (see ias()).
    judged, passed, errors = out["judged"].to_numpy(float), out["passed"].to_numpy(float), out["errors"].to_numpy(float)
    unjudged = out["n"].to_numpy() - out["judged"].to_numpy() - out["errors"].to_numpy()
    with np.errstate(invalid="ignore", divide="ignore"):
        out["loose_ias"] = np.where(judged > 0, passed / judged, np.nan)
        for c in CATEGORIES:
            j = out[f"judged_{c}"].to_numpy(float)
            out[f"loose_{c}"] = np.where(j > 0, out[f"passed_{c}"].to_numpy(float) / j, np.nan)
    out["strict_ias"] = np.where(judged - passed > 0, 0.0, np.where((errors + unjudged > 0) | (judged == 0), np.nan, 1.0))
    out["n_constraints"] = out["n"]
    out["n_constraint_errors"] = out["errors"]
    out["n_constraint_unjudged"] = unjudged
    out["has_protocol"] = out["has_protocol"].astype(bool)
    for m in METRIC_NAMES:
        status = out[f"{m}_status"]
        out[f"{m}_status"] = status.astype(object).where(status.notna(), None)
    for col in _FLOAT_COLUMNS:
        out[col] = pd.to_numeric(out[col], errors="coerce").astype(float)
    out["judge_cost_usd"] = out["judge_cost_usd"].fillna(0.0)
    for col in _INT_COLUMNS:
        out[col] = out[col].astype("int64")
    return out[list(RESPONSE_COLUMNS)]


def failure_count_rows(engine: Engine, run_ids: Sequence[int], judge: str) -> pd.DataFrame:
    """Constraint verdicts, decided and failed counts per model, domain, mode, category and sub-dimension (from failure_count)."""
    refresh_summaries(engine, run_ids, judge)
    return read_sql(engine, runs_sql(_FAILURE_COUNTS_SQL, run_ids), {"judge": judge})


def constraint_verdicts(engine: Engine, run_ids: Sequence[int], judge: str, *, model: str | None = None,
                        category: str | None = None, sub_dimension: str | None = None,
                        failed_only: bool = False) -> pd.DataFrame:
    """One row per constraint verdict (this judge's plus rule verdicts), for drill-down and Figure-4 failure counts."""
    extra, params = "", {"judge": judge}
    for column, key, value in (("m.name", "model", model), ("c.category", "category", category),
                               ("c.sub_dimension", "sub_dimension", sub_dimension)):
        if value:
            extra += f" AND {column} = :{key}"
            params[key] = value
    if failed_only:
        extra += " AND v.status = 'ok' AND v.passed IS NOT NULL AND NOT v.passed"
    frame = read_sql(engine, runs_sql(_CONSTRAINT_VERDICTS_SQL.replace("{extra}", extra), run_ids), params)
    frame["passed"] = frame["passed"].map(lambda p: None if pd.isna(p) else bool(p)).astype(object)
    return frame[list(CONSTRAINT_COLUMNS)]


def _mean(series: pd.Series) -> float | None:
    s = series.dropna().astype(float)
    return float(s.mean()) if len(s) else None


def model_subset_summary(scores: pd.DataFrame) -> pd.DataFrame:
    """Per model x mode: means (Strict over determined responses only), with error / not-applicable counts."""
    out = []
    for (model, mode), g in scores.groupby(["model", "mode"], sort=True):
        row = {"model": model, "mode": mode, "n_responses": len(g),
               "loose_ias": _mean(g["loose_ias"]), "strict_ias": _mean(g["strict_ias"]),
               "n_strict_undetermined": int(g["strict_ias"].isna().sum()),
               "n_constraint_errors": int(g["n_constraint_errors"].sum()),
               "n_constraint_unjudged": int(g["n_constraint_unjudged"].sum())}
        row |= {f"loose_{c}": _mean(g[f"loose_{c}"]) for c in CATEGORIES}
        for metric in METRIC_NAMES:
            row[metric] = _mean(g[metric])
            row[f"n_{metric}_error"] = int((g[f"{metric}_status"] == "error").sum())
            row[f"n_{metric}_na"] = int((g[f"{metric}_status"] == "not_applicable").sum())
        row["over_abstention"] = row["refusal"] if mode == "noisy" else None
        row["judge_cost_usd"] = float(g["judge_cost_usd"].sum())
        out.append(row)
    return pd.DataFrame(out)


def failure_counts(verdicts: pd.DataFrame) -> pd.DataFrame:
    """Per model x category x sub-dimension: judged, failed, failure rate, errors, unjudged (the Figure 4 data)."""
    if verdicts.empty:
        return pd.DataFrame(columns=["model", "category", "sub_dimension", "n_judged", "n_failed", "failure_rate",
                                     "n_errors", "n_unjudged"])
    v = verdicts.assign(
        judged=(verdicts["status"] == "ok") & verdicts["passed"].notna(),
        failed=(verdicts["status"] == "ok") & (verdicts["passed"] == False),  # noqa: E712 - pandas elementwise
        error=verdicts["status"] == "error",
        unjudged=verdicts["status"] == "not_applicable",
    )
    g = v.groupby(["model", "category", "sub_dimension"], sort=True).agg(
        n_judged=("judged", "sum"), n_failed=("failed", "sum"), n_errors=("error", "sum"), n_unjudged=("unjudged", "sum"))
    g["failure_rate"] = (g["n_failed"] / g["n_judged"]).where(g["n_judged"] > 0)
    return g.reset_index()[["model", "category", "sub_dimension", "n_judged", "n_failed", "failure_rate",
                            "n_errors", "n_unjudged"]]
