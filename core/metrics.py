"""Aggregation of verdict rows: IAS arithmetic, per-response scores, per model x subset summaries, failure counts."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import pandas as pd
from sqlalchemy import and_, exists, or_, select
from sqlalchemy.engine import Engine
from sqlalchemy.orm import aliased

from core.models import Constraint, Domain, Instance, Model, Response, Verdict
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


def _judge_filter(judge: str):
    """Constraint verdicts of `judge` plus rule verdicts of rule constraints; metric verdicts of `judge`."""
    rule_part = and_(Verdict.judge == RULE_JUDGE, Constraint.judge_method == "rule")
    return or_(Verdict.judge == judge, rule_part)


def _frame(engine: Engine, stmt, columns: Sequence[str] | None = None) -> pd.DataFrame:
    with engine.connect() as conn:
        rows = conn.execute(stmt).mappings().all()
    return pd.DataFrame([dict(r) for r in rows], columns=list(columns) if columns else None)


def _protocol_exists():
    """Correlated EXISTS: the instance has a knowledge_protocol constraint applicable to its mode."""
    pc = aliased(Constraint)
    return exists().where(
        pc.instance_id == Instance.id,
        pc.category == "knowledge_protocol",
        or_(pc.precondition.is_(None), pc.precondition == Instance.mode),
    ).correlate(Instance)


def _verdict_rows(engine: Engine, run_ids: Sequence[int], judge: str) -> pd.DataFrame:
    """One query: done responses of the runs left-joined to their verdicts (this judge + rule) and constraints."""
    stmt = (
        select(
            Response.run_id, Response.id.label("response_id"), Model.name.label("model"), Instance.uid.label("instance_uid"),
            Domain.name.label("domain"), Instance.mode, Instance.origin, Response.cost_usd, Response.latency_ms,
            _protocol_exists().label("has_protocol"), Verdict.metric, Verdict.judge, Verdict.status, Verdict.passed,
            Verdict.value, Verdict.calls, Verdict.cost_usd.label("judge_cost_usd"), Constraint.category,
        )
        .select_from(Response)
        .join(Instance, Instance.id == Response.instance_id)
        .join(Domain, Domain.id == Instance.domain_id)
        .join(Model, Model.id == Response.model_id)
        .outerjoin(Verdict, and_(Verdict.response_id == Response.id, Verdict.judge.in_([judge, RULE_JUDGE])))
        .outerjoin(Constraint, Constraint.id == Verdict.constraint_id)
        .where(Response.run_id.in_(list(run_ids)), Response.status == "done")
        .where(or_(Verdict.id.is_(None), _judge_filter(judge)))
    )
    return _frame(engine, stmt)


def _score_one(rows: pd.DataFrame) -> dict:
    first = rows.iloc[0]
    out = {k: first[k] for k in ("run_id", "response_id", "model", "instance_uid", "domain", "mode", "origin",
                                  "has_protocol", "cost_usd", "latency_ms")}
    cons = rows[rows["metric"] == "constraint"]
    pairs = list(zip(cons["status"], cons["passed"].map(lambda p: None if pd.isna(p) else bool(p)), strict=True))
    total = ias(pairs)
    out |= {"loose_ias": total.loose, "strict_ias": total.strict, "n_constraints": len(pairs),
            "n_constraint_errors": total.n_errors, "n_constraint_unjudged": total.n_unjudged}
    for cat in CATEGORIES:
        sel = cons["category"] == cat
        out[f"loose_{cat}"] = ias(pair for pair, keep in zip(pairs, sel, strict=True) if keep).loose
    for metric in METRIC_NAMES:
        m = rows[rows["metric"] == metric]
        status = m["status"].iloc[0] if len(m) else None
        out[metric] = float(m["value"].iloc[0]) if status == "ok" and pd.notna(m["value"].iloc[0]) else None
        out[f"{metric}_status"] = status
    out["judge_calls"] = int(rows["calls"].fillna(0).sum())
    out["judge_cost_usd"] = float(rows["judge_cost_usd"].fillna(0).sum())
    out["has_protocol"] = bool(out["has_protocol"])
    return out


def response_scores(engine: Engine, run_ids: Sequence[int], judge: str) -> pd.DataFrame:
    """One row per done response: IAS (loose, strict, per category), RAG metrics, counts, generator and judge cost."""
    rows = _verdict_rows(engine, run_ids, judge)
    if rows.empty:
        return pd.DataFrame(columns=list(RESPONSE_COLUMNS))
    scored = [_score_one(g) for _, g in rows.groupby("response_id", sort=True)]
    return pd.DataFrame(scored, columns=list(RESPONSE_COLUMNS))


def constraint_verdicts(engine: Engine, run_ids: Sequence[int], judge: str) -> pd.DataFrame:
    """One row per constraint verdict (this judge's plus rule verdicts), for drill-down and Figure-4 failure counts."""
    stmt = (
        select(
            Verdict.response_id, Verdict.run_id, Model.name.label("model"), Instance.uid.label("instance_uid"),
            Domain.name.label("domain"), Instance.mode, Constraint.category, Constraint.sub_dimension, Constraint.cid,
            Constraint.text, Verdict.method, Verdict.judge, Verdict.status, Verdict.passed, Verdict.reason,
        )
        .select_from(Verdict)
        .join(Constraint, Constraint.id == Verdict.constraint_id)
        .join(Response, Response.id == Verdict.response_id)
        .join(Instance, Instance.id == Response.instance_id)
        .join(Domain, Domain.id == Instance.domain_id)
        .join(Model, Model.id == Response.model_id)
        .where(Verdict.run_id.in_(list(run_ids)), Verdict.metric == "constraint", _judge_filter(judge))
        .order_by(Verdict.response_id, Constraint.position)
    )
    return _frame(engine, stmt, CONSTRAINT_COLUMNS)


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
