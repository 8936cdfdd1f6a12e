"""Aggregation of verdict rows: IAS arithmetic, per-response scores, per model x subset summaries, failure counts."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd
from sqlalchemy import text
from sqlalchemy.engine import Engine

from core.schema import CATEGORIES

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


# The loaders read with a few aggregate SQL queries and assemble the frames with vectorised pandas (no ORM objects,
# no per-response Python loop, no correlated subqueries; `+v.run_id` keeps SQLite on a table scan, which beats the
# run_id index when a run holds most verdicts), so a paper-scale run (~15k responses, ~120k verdicts)
# loads in well under a second. Which verdicts count: constraint verdicts of `judge`, plus rule verdicts of
# constraints whose judge_method is 'rule'; metric verdicts of `judge` only.
JUDGE_FILTER_SQL = "(v.judge = :judge OR (v.judge = 'rule' AND c.judge_method = 'rule'))"
_OK_DECIDED = "v.status = 'ok' AND v.passed IS NOT NULL"


def _scores_sql() -> str:
    """One query: done responses with their verdicts aggregated per response (one scan of the verdicts)."""
    con = "v.metric = 'constraint'"
    sums = [f"SUM(CASE WHEN {con} THEN 1 ELSE 0 END) AS n",
            f"SUM(CASE WHEN {con} AND {_OK_DECIDED} THEN 1 ELSE 0 END) AS judged",
            f"SUM(CASE WHEN {con} AND {_OK_DECIDED} AND v.passed THEN 1 ELSE 0 END) AS passed",
            f"SUM(CASE WHEN {con} AND v.status = 'error' THEN 1 ELSE 0 END) AS errors"]
    for cat in CATEGORIES:
        sums += [f"SUM(CASE WHEN {con} AND c.category = '{cat}' AND {_OK_DECIDED} THEN 1 ELSE 0 END) AS judged_{cat}",
                 f"SUM(CASE WHEN {con} AND c.category = '{cat}' AND {_OK_DECIDED} AND v.passed THEN 1 ELSE 0 END) AS passed_{cat}"]
    for m in METRIC_NAMES:
        sums += [f"MAX(CASE WHEN v.metric = '{m}' AND v.status = 'ok' THEN v.value END) AS {m}",
                 f"MAX(CASE WHEN v.metric = '{m}' THEN v.status END) AS {m}_status"]
    sums += ["SUM(COALESCE(v.calls, 0)) AS judge_calls", "SUM(COALESCE(v.cost_usd, 0)) AS judge_cost_usd"]
    agg_cols = ["n", "judged", "passed", "errors", *(f"{k}_{c}" for c in CATEGORIES for k in ("judged", "passed")),
                *(x for m in METRIC_NAMES for x in (m, f"{m}_status")), "judge_calls", "judge_cost_usd"]
    return f"""
SELECT r.run_id, r.id AS response_id, m.name AS model, i.uid AS instance_uid, d.name AS domain, i.mode, i.origin,
       r.cost_usd, r.latency_ms, CASE WHEN p.instance_id IS NULL THEN 0 ELSE 1 END AS has_protocol,
       {", ".join(f"a.{col}" for col in agg_cols)}
FROM response r JOIN instance i ON i.id = r.instance_id JOIN domain d ON d.id = i.domain_id
JOIN model m ON m.id = r.model_id
LEFT JOIN (SELECT DISTINCT c.instance_id FROM "constraint" c JOIN instance ci ON ci.id = c.instance_id
           WHERE c.category = 'knowledge_protocol' AND (c.precondition IS NULL OR c.precondition = ci.mode)) p
       ON p.instance_id = r.instance_id
LEFT JOIN (SELECT v.response_id, {", ".join(sums)}
           FROM verdict v LEFT JOIN "constraint" c ON c.id = v.constraint_id
           WHERE +v.run_id IN ({{runs}})
             AND ((v.metric = 'constraint' AND {JUDGE_FILTER_SQL}) OR (v.metric != 'constraint' AND v.judge = :judge))
           GROUP BY v.response_id) a ON a.response_id = r.id
WHERE r.status = 'done' AND r.run_id IN ({{runs}})
ORDER BY r.id
"""


_SCORES_SQL = _scores_sql()
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
    """A DataFrame from a textual SQL query with bound parameters."""
    with engine.connect() as conn:
        return pd.read_sql_query(text(sql), conn, params=params or {})


def _empty_scores() -> pd.DataFrame:
    return pd.DataFrame({c: pd.Series(dtype=float if c in _FLOAT_COLUMNS else object) for c in RESPONSE_COLUMNS})


_FLOAT_COLUMNS = frozenset({"loose_ias", "strict_ias", *(f"loose_{c}" for c in CATEGORIES), *METRIC_NAMES,
                            "cost_usd", "latency_ms", "judge_cost_usd"})
_INT_COLUMNS = ("run_id", "response_id", "n_constraints", "n_constraint_errors", "n_constraint_unjudged", "judge_calls")


def response_scores(engine: Engine, run_ids: Sequence[int], judge: str) -> pd.DataFrame:
    """One row per done response: IAS (loose, strict, per category), RAG metrics, counts, generator and judge cost."""
    out = read_sql(engine, runs_sql(_SCORES_SQL, run_ids), {"judge": judge})
    if out.empty:
        return _empty_scores()
    counts = ["n", "judged", "passed", "errors", *(f"{k}_{c}" for c in CATEGORIES for k in ("judged", "passed")), "judge_calls"]
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
