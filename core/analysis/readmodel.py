"""The read model: every metric the product reports is computed here, once, from the stored verdicts.

The dashboards, `gauntlet report`, the picker, judge alignment and every export call these functions; nothing here
writes to the database. Per-response scores come from the summary tables that the scoring pipeline's summarise stage
writes (core.scoring.summaries); for a run whose verdicts changed since its summaries were built, the same SELECT runs
inline instead, so a stale summary can never change a number.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
from sqlalchemy import func, select, text
from sqlalchemy.engine import Engine
from sqlalchemy.orm import Session

from core.analysis import stats
from core.metrics import MetricDeclaration, get_metric
from core.scoring.summaries import (
    COUNT_COLUMNS,
    FAILURE_SELECT_SQL,
    JUDGE_FILTER_SQL,
    METRIC_NAMES,
    MODE_SQL,
    SUMMARY_COLUMNS,
    SUMMARY_SELECT_SQL,
    runs_sql,
    stale_summary_runs,
)
from core.store.db import saved_id
from core.store.first_start_state import first_start_failure, first_start_pending
from core.store.models import (
    Annotation,
    Assignment,
    Constraint,
    Document,
    Domain,
    Instance,
    Model,
    Response,
    Run,
    Verdict,
)
from core.store.schema import CATEGORIES, NO_MODE

RULE_JUDGE = "rule"
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


def ias_from_counts(judged, passed, errors, unjudged) -> tuple[np.ndarray, np.ndarray]:
    """Loose and Strict IAS from per-response counts (arrays or scalars); NaN where undetermined.

    Loose = passed / judged over judged constraints (errors and unjudged leave the denominator). Strict is
    complete-case: 1 when every constraint was judged and satisfied, 0 when every constraint was judged and one
    failed, undetermined as soon as any constraint is an error or unjudged, whatever the others say (keeping
    "error + failure" as 0 while dropping "error + no failure" biases Strict down: tests/test_strict_ias_simulation.py).
    """
    judged, passed = np.asarray(judged, dtype=float), np.asarray(passed, dtype=float)
    hidden = np.asarray(errors, dtype=float) + np.asarray(unjudged, dtype=float)
    with np.errstate(invalid="ignore", divide="ignore"):
        loose = np.where(judged > 0, passed / judged, np.nan)
    strict = np.where((hidden > 0) | (judged == 0), np.nan, (passed == judged).astype(float))
    return loose, strict


def ias(verdicts: Iterable[tuple[str, bool | None]]) -> IAS:
    """IAS of one response from its (status, passed) pairs, by ias_from_counts (None where undetermined)."""
    pairs = list(verdicts)
    judged = [bool(p) for s, p in pairs if s == "ok" and p is not None]
    n_errors = sum(s == "error" for s, _ in pairs)
    n_unjudged = sum(s == "not_applicable" or (s == "ok" and p is None) for s, p in pairs)
    loose, strict = (float(x) for x in ias_from_counts(len(judged), sum(judged), n_errors, n_unjudged))
    return IAS(None if np.isnan(loose) else loose, None if np.isnan(strict) else strict, len(judged),
               judged.count(False), n_errors, n_unjudged)


_PROTOCOL_JOIN = """
LEFT JOIN (SELECT DISTINCT c.instance_id FROM "constraint" c JOIN instance ci ON ci.id = c.instance_id
           WHERE c.category = 'knowledge_protocol' AND (c.precondition IS NULL OR c.precondition = ci.mode)) p
       ON p.instance_id = r.instance_id"""
_SCORES_SQL = f"""
SELECT r.run_id, r.id AS response_id, m.name AS model, i.uid AS instance_uid, d.name AS domain, i.mode, i.origin,
       r.cost_usd, r.latency_ms, CASE WHEN p.instance_id IS NULL THEN 0 ELSE 1 END AS has_protocol,
       COALESCE(k.constraints, 0) AS instance_constraints, {", ".join(f"s.{col}" for col in SUMMARY_COLUMNS)}
FROM response r JOIN instance i ON i.id = r.instance_id JOIN domain d ON d.id = i.domain_id
JOIN model m ON m.id = r.model_id {_PROTOCOL_JOIN}
LEFT JOIN (SELECT instance_id, COUNT(*) AS constraints FROM "constraint" GROUP BY instance_id) k
       ON k.instance_id = r.instance_id
LEFT JOIN {{source}} s ON s.response_id = r.id AND s.judge = :judge
WHERE r.status = 'done' AND r.run_id IN ({{runs}}) AND i.protocol = 'enterprise_rag'
ORDER BY r.id
"""
_FAILURE_COUNTS_SQL = """
SELECT m.name AS model, d.name AS domain, f.mode, f.category, f.sub_dimension, SUM(f.verdicts) AS verdicts,
       SUM(f.decided) AS decided, SUM(f.failed) AS failed
FROM {source} f JOIN model m ON m.id = f.model_id JOIN domain d ON d.id = f.domain_id
WHERE f.judge = :judge AND f.run_id IN ({runs})
GROUP BY m.name, d.name, f.mode, f.category, f.sub_dimension
"""


def _summary_source(engine: Engine, run_ids: Sequence[int], judge: str, table: str, select_sql: str) -> str:
    """The stored summary table when every run's summaries are current, else the same SELECT inline (reads only)."""
    if stale_summary_runs(engine, run_ids, judge):
        return "(" + runs_sql(select_sql, run_ids) + ")"
    return table


_CONSTRAINT_VERDICTS_SQL = """
SELECT v.response_id, v.run_id, m.name AS model, i.uid AS instance_uid, d.name AS domain, """ + MODE_SQL + """ AS mode,
       c.category,
       c.sub_dimension, c.cid, c.text, v.method, v.judge, v.status, v.passed, v.reason
FROM verdict v JOIN "constraint" c ON c.id = v.constraint_id JOIN response r ON r.id = v.response_id
JOIN instance i ON i.id = r.instance_id JOIN domain d ON d.id = i.domain_id JOIN model m ON m.id = r.model_id
WHERE v.metric = 'constraint' AND v.run_id IN ({runs}) AND """ + JUDGE_FILTER_SQL + """ {extra}
ORDER BY v.response_id, c.position
"""


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
    """One row per done EnterpriseRAG response: IAS (loose, strict, per category), RAG metrics, counts, generator and
    judge cost (other protocols' responses are read by their own functions, e.g. reference_scores)."""
    source = _summary_source(engine, run_ids, judge, "response_score", SUMMARY_SELECT_SQL)
    out = read_sql(engine, runs_sql(_SCORES_SQL.replace("{source}", source), run_ids), {"judge": judge})
    if out.empty:
        return _empty_scores()
    counts = [*COUNT_COLUMNS, "judge_calls"]
    out[counts] = out[counts].fillna(0).astype("int64")
    # unjudged = not_applicable, ok without a decision, or no verdict of this judge at all for a constraint
    out["n"] = np.maximum(out["n"].to_numpy(), out["instance_constraints"].fillna(0).to_numpy().astype("int64"))
    unjudged = out["n"].to_numpy() - out["judged"].to_numpy() - out["errors"].to_numpy()
    out["loose_ias"], out["strict_ias"] = ias_from_counts(out["judged"], out["passed"], out["errors"], unjudged)
    for c in CATEGORIES:
        out[f"loose_{c}"] = ias_from_counts(out[f"judged_{c}"], out[f"passed_{c}"], 0, 0)[0]
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
    source = _summary_source(engine, run_ids, judge, "failure_count", FAILURE_SELECT_SQL)
    return read_sql(engine, runs_sql(_FAILURE_COUNTS_SQL.replace("{source}", source), run_ids), {"judge": judge})


def constraint_verdicts(engine: Engine, run_ids: Sequence[int], judge: str, *, model: str | None = None,
                        category: str | None = None, sub_dimension: str | None = None,
                        failed_only: bool = False, response_ids: Iterable[int] | None = None) -> pd.DataFrame:
    """One row per constraint verdict (this judge's plus rule verdicts), for drill-down and Figure-4 failure counts;
    `response_ids` narrows them to those responses."""
    extra, params = "", {"judge": judge}
    if response_ids is not None:
        extra += f" AND v.response_id IN ({', '.join(str(int(r)) for r in response_ids) or 'NULL'})"
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


# --------------------------------------------------------------------------- dashboards

MODES: tuple[str, ...] = ("noisy", "gap", "conflict")
CATEGORY_LABELS = {"persona": "Persona definition", "output": "Output constraints", "knowledge_protocol": "Knowledge protocol"}


QUALITY_METRICS: tuple[MetricDeclaration, ...] = tuple(get_metric(key) for key in (
    "faithfulness", "coverage", "loose_ias", "strict_ias", "loose_persona", "loose_output", "loose_knowledge_protocol",
    "rejection", "conflict_recognition", "over_abstention"))
COST_METRICS: tuple[MetricDeclaration, ...] = (get_metric("cost_per_1k"), get_metric("latency_min_per_1k"))
METRICS: dict[str, MetricDeclaration] = {m.id: m for m in QUALITY_METRICS + COST_METRICS}  # the dashboards' metrics
NUMERIC_COLUMNS = (
    "loose_ias",
    "strict_ias",
    "loose_persona",
    "loose_output",
    "loose_knowledge_protocol",
    "faithfulness",
    "coverage",
    "rejection",
    "conflict_recognition",
    "refusal",
    "cost_usd",
    "latency_ms",
)
MODEL_COLUMNS = ("model", "paradigm", "access", "is_baseline")


# --------------------------------------------------------------------------- inputs


def model_catalog(engine: Engine) -> pd.DataFrame:
    """The Model table as a frame: model, paradigm, access, is_baseline and prices."""
    with Session(engine) as session:
        rows = session.execute(select(Model)).scalars().all()
    return pd.DataFrame(
        [
            {
                "model": m.name,
                "paradigm": m.paradigm,
                "access": m.access,
                "is_baseline": bool(m.is_baseline),
                "price_input_per_mtok": m.price_input_per_mtok,
                "price_output_per_mtok": m.price_output_per_mtok,
            }
            for m in rows
        ],
        columns=[*MODEL_COLUMNS, "price_input_per_mtok", "price_output_per_mtok"],
    )


def data_version(engine: Engine) -> tuple[int, int, int]:
    """A cheap fingerprint of the results data: (max verdict id, verdict count, max response id)."""
    with Session(engine) as session:  # one aggregate per query: SQLite answers a lone max(id) or count(*) from the b-tree
        vmax = session.execute(select(func.max(Verdict.id))).one()[0]
        vcount = session.execute(select(func.count()).select_from(Verdict)).one()[0]
        rmax = session.execute(select(func.max(Response.id))).one()[0]
    return int(vmax or 0), int(vcount or 0), int(rmax or 0)


def gold_version(engine: Engine) -> tuple[int, int, int]:
    """A cheap fingerprint of the expert labels: (max annotation id, annotation count, max assignment id).

    Annotations are append-only (a label, an adjudication or an undo adds a row) and a gold draw adds assignments
    (with their sampling probabilities), so any change to the gold labels or their probabilities changes it.
    """
    with Session(engine) as session:
        amax = session.execute(select(func.max(Annotation.id))).one()[0]
        acount = session.execute(select(func.count()).select_from(Annotation)).one()[0]
        smax = session.execute(select(func.max(Assignment.id))).one()[0]
    return int(amax or 0), int(acount or 0), int(smax or 0)


def benchmark_composition(engine: Engine) -> pd.DataFrame:
    """Latest benchmark instances counted by domain, mode and origin."""
    from sqlmodel import col

    stmt = (
        select(col(Domain.name), col(Instance.mode), col(Instance.origin), func.count(col(Instance.id)))
        .join(Domain, col(Domain.id) == Instance.domain_id)
        .where(col(Instance.is_latest) == True)  # noqa: E712 (SQL expression)
        .group_by(col(Domain.name), col(Instance.mode), col(Instance.origin))
    )
    with Session(engine) as session:
        rows = session.execute(stmt).all()
    return pd.DataFrame(rows, columns=["domain", "mode", "origin", "instances"]).sort_values(["domain", "mode", "origin"])


def prepare_scores(scores: pd.DataFrame) -> pd.DataFrame:
    """Normalise response_scores: numeric float columns (None -> NaN) and the derived over_abstention column.

    Over-abstention is the refusal rate on instances that can be answered (every mode except 'gap').
    """
    out = scores.copy()
    for col in NUMERIC_COLUMNS:
        if col in out and out[col].dtype != float:  # float columns (response_scores' own) are already normalised
            out[col] = pd.to_numeric(out[col].astype(object).where(out[col].notna()), errors="coerce").astype(float)
    answerable = out["mode"] != "gap"
    out["over_abstention"] = out["refusal"].where(answerable)
    return out


def filter_scores(scores: pd.DataFrame, modes: Iterable[str] | None = None, domains: Iterable[str] | None = None) -> pd.DataFrame:
    """Rows of `scores` in the chosen modes and domains (None or empty = all)."""
    mask = pd.Series(True, index=scores.index)
    modes, domains = list(modes or []), list(domains or [])
    if modes:
        mask &= scores["mode"].isin(modes)
    if domains:
        mask &= scores["domain"].isin(domains)
    return scores[mask]


def with_model_info(frame: pd.DataFrame, models: pd.DataFrame) -> pd.DataFrame:
    """Join paradigm/access/is_baseline onto a frame with a 'model' column (unknown models: standard/closed)."""
    info = models[list(MODEL_COLUMNS)].drop_duplicates("model")
    out = frame.merge(info, on="model", how="left")
    out["paradigm"] = out["paradigm"].fillna("standard")
    out["access"] = out["access"].fillna("closed")
    out["is_baseline"] = out["is_baseline"].fillna(False).astype(bool)
    out["group"] = np.where(out["is_baseline"], "calibration baseline", out["access"] + "-source · " + out["paradigm"])
    return out


def model_order(models_in_view: Iterable[str], models: pd.DataFrame) -> list[str]:
    """Models in Table 2 order: open before closed, reasoning before standard, by name; baselines last."""
    frame = with_model_info(pd.DataFrame({"model": sorted(set(models_in_view))}), models)
    frame["k_access"] = frame["access"].map({"open": 0, "closed": 1}).fillna(2)
    frame["k_paradigm"] = frame["paradigm"].map({"reasoning": 0, "standard": 1}).fillna(2)
    frame = frame.sort_values(["is_baseline", "k_access", "k_paradigm", "model"])
    return frame["model"].tolist()


# --------------------------------------------------------------------------- bootstrap


def bootstrap_weights(n: int, n_resamples: int, seed: int) -> np.ndarray:
    """Resample counts, shape (R, n) float32: how often each of n rows is drawn in each of R with-replacement resamples."""
    rng = np.random.default_rng(seed)
    draws = rng.integers(0, n, size=(n_resamples, n), dtype=np.int64)
    weights = np.empty((n_resamples, n), dtype=np.float32)
    block = max(1, min(n_resamples, _BINCOUNT_CELLS // max(n, 1)))  # counted in cache-sized blocks of resamples
    offsets = (np.arange(block) * n)[:, None]
    for start in range(0, n_resamples, block):
        rows = draws[start : start + block]
        weights[start : start + len(rows)] = np.bincount((rows + offsets[: len(rows)]).ravel(),
                                                         minlength=len(rows) * n).reshape(len(rows), n)
    return weights


_BINCOUNT_CELLS = 1 << 17


def bootstrap_means(values: np.ndarray, n_resamples: int, seed: int, weights: np.ndarray | None = None) -> np.ndarray:
    """Percentile-bootstrap replicates of column means of `values` (n x m, NaN = missing), shape (R, m).

    Every column is resampled with the same row indices (as stats.bootstrap_ci with paired=True) and the
    mean of each replicate ignores missing cells. Implemented as resampling counts (how often each row was
    drawn) times the data, so all metrics cost one matrix product; pass `weights` (bootstrap_weights) to reuse
    one resample matrix for several blocks of columns with the same number of rows.
    """
    values = np.asarray(values, dtype=float)
    if values.ndim == 1:
        values = values[:, None]
    n = values.shape[0]
    mask = ~np.isnan(values)
    filled = np.where(mask, values, 0.0)
    w = bootstrap_weights(n, n_resamples, seed) if weights is None else weights
    with np.errstate(invalid="ignore", divide="ignore"):
        return (w @ filled.astype(np.float32)).astype(float) / (w @ mask.astype(np.float32)).astype(float)


def _ci(replicates: np.ndarray, confidence: float = 0.95) -> tuple[np.ndarray, np.ndarray]:
    """Percentile bounds per column, NaN-safe (matches np.quantile linear interpolation)."""
    lo, hi = (1 - confidence) / 2, (1 + confidence) / 2
    missing = np.isnan(replicates)
    if not missing.any():
        bounds = np.quantile(replicates, [lo, hi], axis=0)
    else:  # nanquantile is slow; only columns with an empty resample need it
        bounds = np.full((2, replicates.shape[1]), np.nan)
        full = ~missing.any(axis=0)
        bounds[:, full] = np.quantile(replicates[:, full], [lo, hi], axis=0)
        for j in np.flatnonzero(~full):
            col = replicates[:, j][~missing[:, j]]
            if col.size:
                bounds[:, j] = np.quantile(col, [lo, hi])
    return bounds[0], bounds[1]


# --------------------------------------------------------------------------- leaderboard


GAP_KEY = "orchestration_gap"
GAP_LABEL = get_metric(GAP_KEY).label
LONG_COLUMNS = ["model", "metric", "value", "ci_low", "ci_high", "n", "interval", "small_n"]


def mean_rows(frame: pd.DataFrame, keys: Sequence[str], by: str = "model") -> list[dict]:
    """Long rows (by, metric, value, ci_low, ci_high, n, interval, small_n) of the column means per group, each with
    the interval of its declared kind (stats.metric_intervals)."""
    rows: list[dict] = []
    declared = [get_metric(key) for key in keys]
    for name, group in frame[[by, *keys]].groupby(by, sort=True):  # only the columns used: no copy of the rest per group
        ci = stats.metric_intervals(group[list(keys)].to_numpy(dtype=float), declared)
        rows += [{by: name, "metric": key, "value": float(ci.mean[j]), "ci_low": float(ci.ci_low[j]),
                  "ci_high": float(ci.ci_high[j]), "n": int(ci.n[j]), "interval": str(ci.method[j]),
                  "small_n": bool(0 < ci.n[j] < stats.SMALL_N)} for j, key in enumerate(keys)]
    return rows


GAP_MIN_STRICT = 2  # fewer responses with a determined Strict IAS: the gap shows "no data" (bench/bench_ppi_coverage.py)


def _gap_interval(loose: np.ndarray, strict: np.ndarray, shown: pd.DataFrame) -> tuple[float, float]:
    """MOVER interval (Zou and Donner 2008) for shown Loose minus shown Strict IAS, from their shown intervals and
    the correlation of the two means (each response's influence on both), cut to [-1, 1].

    It inherits the small-n honesty of each metric's own interval, where a delta-method interval collapses when the
    few determined Strict values agree (bench/bench_ppi_coverage.py: >= 93% at any share of Strict determined).
    """
    (m_l, l_l, u_l, n_l), (m_s, l_s, u_s, n_s) = (shown.loc[k, ["value", "ci_low", "ci_high", "n"]] for k in
                                                  ("loose_ias", "strict_ias"))
    dev_l, dev_s = np.nan_to_num((loose - m_l) / n_l), np.nan_to_num((strict - m_s) / n_s)
    spread = np.sqrt((dev_l**2).sum() * (dev_s**2).sum())
    r = float((dev_l * dev_s).sum() / spread) if spread > 0 else 0.0
    below = np.sqrt(max((m_l - l_l) ** 2 + (u_s - m_s) ** 2 - 2 * r * (m_l - l_l) * (u_s - m_s), 0.0))
    above = np.sqrt(max((u_l - m_l) ** 2 + (m_s - l_s) ** 2 - 2 * r * (u_l - m_l) * (m_s - l_s), 0.0))
    return float(max(m_l - m_s - below, -1.0)), float(min(m_l - m_s + above, 1.0))


def _gap_rows(scores: pd.DataFrame, means: pd.DataFrame) -> list[dict]:
    """Orchestration gap per model = shown Loose IAS − shown Strict IAS, with a MOVER interval (_gap_interval);
    "no data" where fewer than GAP_MIN_STRICT responses have a determined Strict IAS."""
    rows = []
    for model, group in scores[["model", "loose_ias", "strict_ias"]].groupby("model", sort=True):
        shown = means.loc[model]
        n_s, n_l = int(shown.loc["strict_ias", "n"]), int(shown.loc["loose_ias", "n"])
        enough = n_s >= GAP_MIN_STRICT and n_l >= 2
        value = float(shown.loc["loose_ias", "value"] - shown.loc["strict_ias", "value"]) if enough else np.nan
        low, high = (_gap_interval(group["loose_ias"].to_numpy(float), group["strict_ias"].to_numpy(float), shown)
                     if enough else (np.nan, np.nan))
        rows.append({"model": model, "metric": GAP_KEY, "value": value, "ci_low": low, "ci_high": high,
                     "n": n_s, "interval": "MOVER" if enough else "", "small_n": bool(0 < n_s < stats.SMALL_N)})
    return rows


def _marks(long: pd.DataFrame) -> pd.Series:
    """'best' / 'second' per metric among non-baseline models; never for a tie of every model, nor for a 0 score."""
    marks = pd.Series("", index=long.index)
    used = long[["metric", "is_baseline", "value"]]
    for metric, idx in used.groupby("metric").groups.items():
        block = used.loc[idx]
        block = block[~block["is_baseline"] & block["value"].notna()]
        ascending = not get_metric(metric).higher_is_better
        if not ascending:
            block = block[block["value"] > 0]
        if block.empty or (len(block) > 1 and block["value"].nunique() == 1):
            continue
        order = block["value"].rank(method="min", ascending=ascending)
        marks[order[order == 1].index] = "best"
        marks[order[order == 2].index] = "second"
    return marks


def leaderboard(scores: pd.DataFrame, models: pd.DataFrame) -> pd.DataFrame:
    """Per model and metric: mean, 95% CI (stats.interval), n, interval method, small-n flag and rank mark.

    `scores` is prepared (see prepare_scores) and already filtered. Long format, one row per (model, metric),
    including the orchestration gap (Loose minus Strict IAS as shown) and cost/latency per 1k instances.
    Ranks are assigned among non-baseline models only; baselines are calibration rows.
    """
    keys = [m.id for m in QUALITY_METRICS]
    frame = scores.assign(cost_per_1k=scores["cost_usd"].fillna(0.0) * 1000.0,
                          latency_min_per_1k=scores["latency_ms"] * (1000.0 / 60_000.0))
    rows = mean_rows(frame, [*keys, "cost_per_1k", "latency_min_per_1k"])
    means = pd.DataFrame(rows, columns=LONG_COLUMNS).set_index(["model", "metric"])
    rows += _gap_rows(frame, means) if len(frame) else []
    long = with_model_info(pd.DataFrame(rows, columns=LONG_COLUMNS), models)
    long["label"] = long["metric"].map(lambda k: get_metric(k).label)
    long["mark"] = _marks(long)
    order = model_order(long["model"].unique(), models)
    long["model"] = pd.Categorical(long["model"], categories=order, ordered=True)
    return long.sort_values(["model", "metric"]).reset_index(drop=True).assign(model=lambda d: d["model"].astype(str))


def leaderboard_table(long: pd.DataFrame, percent: bool = True) -> pd.DataFrame:
    """Wide display table: one row per model (Table 2 order), 'value [low, high] n=N' cells, best ★ second ☆.

    A cell with no value reads "no data"; n below stats.SMALL_N carries a '†' (small sample).
    """
    if long.empty:
        return pd.DataFrame()
    order = list(dict.fromkeys(long["model"]))

    def cell(r: dict) -> str:
        if pd.isna(r["value"]):
            return "no data"
        scale = get_metric(r["metric"]).scale if percent else 1.0
        digits = 1 if scale == 100.0 else 2
        mark = {"best": " ★", "second": " ☆"}.get(r["mark"], "")
        bounds = "" if pd.isna(r["ci_low"]) else f" [{r['ci_low'] * scale:.{digits}f}, {r['ci_high'] * scale:.{digits}f}]"
        small = "†" if r["small_n"] else ""
        return f"{r['value'] * scale:.{digits}f}{bounds} n={int(r['n'])}{small}{mark}"

    frame = long.assign(cell=[cell(r) for r in long[["metric", "value", "ci_low", "ci_high", "n", "small_n", "mark"]]
                              .to_dict("records")])
    wide = frame.pivot(index="model", columns="label", values="cell")
    labels = [METRICS[k].label for k in METRICS if METRICS[k].label in wide.columns]
    if GAP_LABEL in wide.columns:
        labels.insert(labels.index("Strict IAS") + 1 if "Strict IAS" in labels else 0, GAP_LABEL)
    info = frame.drop_duplicates("model").set_index("model")[["group"]]
    wide = info.join(wide[labels]).reindex(order)
    return wide.reset_index().rename(columns={"model": "Model", "group": "Group"})


# --------------------------------------------------------------------------- domains


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


# --------------------------------------------------------------------------- constraint errors


def failure_rates(counts: pd.DataFrame, level: str = "category") -> pd.DataFrame:
    """Constraint failure rate per model and category (level='category') or sub-dimension ('sub_dimension').

    `counts` has the load_failure_counts / verdict_counts layout (already filtered by mode and domain).
    Only verdicts with status 'ok' and a decided pass/fail count; errors and not-applicable are reported as
    'undetermined'. `share_of_failures` normalises each model's failures to sum to 1 (the stacked view).
    """
    keys = ["model", "category"] + (["sub_dimension"] if level == "sub_dimension" else [])
    out = counts.groupby(keys, sort=True)[["verdicts", "decided", "failed"]].sum().reset_index()
    out["undetermined"] = out["verdicts"] - out["decided"]
    out["failure_rate"] = out["failed"] / out["decided"].where(out["decided"] > 0)
    totals = out.groupby("model")["failed"].transform("sum")
    out["share_of_failures"] = out["failed"] / totals.where(totals > 0)
    return out


def modeless_verdicts(counts: pd.DataFrame) -> int:
    """Constraint verdicts in `counts` of instances without a mode (counted under NO_MODE, outside Figure 4's modes)."""
    return int(counts.loc[counts["mode"] == NO_MODE, "verdicts"].sum()) if not counts.empty else 0


def failing_verdicts(verdicts: pd.DataFrame, model: str, category: str | None = None, sub_dimension: str | None = None) -> pd.DataFrame:
    """The failed constraint verdicts behind one bar: response, instance, constraint text, method, judge, reason."""
    mask = (verdicts["model"] == model) & (verdicts["status"] == "ok") & (verdicts["passed"].astype(object) == False)  # noqa: E712
    if category:
        mask &= verdicts["category"] == category
    if sub_dimension:
        mask &= verdicts["sub_dimension"] == sub_dimension
    cols = ["response_id", "instance_uid", "domain", "mode", "category", "sub_dimension", "cid", "text", "method", "judge", "reason"]
    return verdicts.loc[mask, cols].sort_values(["instance_uid", "cid"]).reset_index(drop=True)


# --------------------------------------------------------------------------- robustness


def knowledge_gap_view(scores: pd.DataFrame, models: pd.DataFrame) -> pd.DataFrame:
    """Figure 2: on the gap subset, per model knowledge-protocol adherence (Loose IAS) and rejection accuracy, with CIs."""
    gap = scores[scores["mode"] == "gap"]
    labels = {"loose_knowledge_protocol": "Protocol adherence", "rejection": "Rejection accuracy"}
    out = pd.DataFrame(mean_rows(gap, list(labels)), columns=LONG_COLUMNS)
    out.insert(2, "label", out["metric"].map(labels))
    return with_model_info(out, models)


def conflict_view(scores: pd.DataFrame, models: pd.DataFrame) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Figure 3 / Table 3: per model conflict recognition and coverage on the conflict subset, ranked by CR;
    and Spearman rho between the two per paradigm (needs >= 3 models with both values)."""
    conflict = scores[scores["mode"] == "conflict"]
    per_model = conflict.groupby("model", sort=True).agg(
        conflict_recognition=("conflict_recognition", "mean"),
        coverage=("coverage", "mean"),
        n=("conflict_recognition", lambda s: int(s.notna().sum())),
    )
    per_model = with_model_info(per_model.reset_index(), models)
    per_model = per_model.sort_values("conflict_recognition", ascending=False, na_position="last").reset_index(drop=True)
    per_model["rank"] = per_model["conflict_recognition"].rank(method="min", ascending=False)
    per_model["small_n"] = (per_model["n"] > 0) & (per_model["n"] < stats.SMALL_N)
    corr_rows = []
    for paradigm, block in per_model[~per_model["is_baseline"]].groupby("paradigm"):
        block = block.dropna(subset=["conflict_recognition", "coverage"])
        if len(block) >= 3 and block["conflict_recognition"].nunique() > 1 and block["coverage"].nunique() > 1:
            res = stats.spearman(block["conflict_recognition"].to_numpy(), block["coverage"].to_numpy())
            corr_rows.append({"paradigm": paradigm, "rho": res.rho, "p_value": res.p_value, "models": res.n})
        else:
            corr_rows.append({"paradigm": paradigm, "rho": np.nan, "p_value": np.nan, "models": len(block)})
    return per_model, pd.DataFrame(corr_rows, columns=["paradigm", "rho", "p_value", "models"])


PROTOCOL_EFFECT_METRICS = {"rejection": "gap", "conflict_recognition": "conflict"}


def protocol_effect(scores: pd.DataFrame, models: pd.DataFrame, metric: str) -> pd.DataFrame:
    """Figure 6: per model accuracy with vs without knowledge-protocol constraints (independent groups).

    Uses stats.two_proportions: Yates chi-square, or Fisher's exact test for small expected counts; the
    difference (with - without) has a Wald CI. Models lacking either group get a row with a note.
    """
    mode = PROTOCOL_EFFECT_METRICS[metric]
    subset = scores[(scores["mode"] == mode) & scores[metric].notna()]
    rows = []
    for model, group in subset.groupby("model", sort=True):
        with_p = group[group["has_protocol"].astype(bool)][metric]
        without = group[~group["has_protocol"].astype(bool)][metric]
        k1, n1, k2, n2 = int(with_p.sum()), int(with_p.size), int(without.sum()), int(without.size)
        row = {"model": model, "metric": metric, "k_with": k1, "n_with": n1, "k_without": k2, "n_without": n2,
               "small_n": min(n1, n2) < stats.SMALL_N}
        if n1 and n2:
            res = stats.two_proportions(k1, n1, k2, n2)
            row |= {"acc_with": res.p1, "acc_without": res.p2, "diff": res.diff, "ci_low": res.ci_low, "ci_high": res.ci_high, "p_value": res.p_value, "test": res.method, "note": ""}
        else:
            row |= {"acc_with": k1 / n1 if n1 else np.nan, "acc_without": k2 / n2 if n2 else np.nan, "diff": np.nan, "ci_low": np.nan, "ci_high": np.nan, "p_value": np.nan, "test": "", "note": "no instances with protocol" if not n1 else "no instances without protocol"}
        rows.append(row)
    cols = ["model", "metric", "k_with", "n_with", "k_without", "n_without", "small_n", "acc_with", "acc_without", "diff", "ci_low", "ci_high", "p_value", "test", "note"]
    return with_model_info(pd.DataFrame(rows, columns=cols), models)


# --------------------------------------------------------------------------- model pairs


SUBSET_ACCURACY = {"noisy": "strict_ias", "gap": "rejection", "conflict": "conflict_recognition"}


def significance_stars(p: float) -> str:
    """'***' p<.001, '**' p<.01, '*' p<.05, 'n.s.' otherwise ('' for NaN)."""
    if p is None or np.isnan(p):
        return ""
    return "***" if p < 0.001 else "**" if p < 0.01 else "*" if p < 0.05 else "n.s."


def paired_comparison(scores: pd.DataFrame, model_a: str, model_b: str, metric: str | None = None, n_resamples: int = 2_000, seed: int = 0) -> pd.DataFrame:
    """Figure 5: model A vs model B on the same instances, per subset.

    metric=None uses each subset's accuracy (noisy: Strict IAS, gap: rejection, conflict: conflict recognition).
    Binary metrics get McNemar's test; continuous ones a paired t-test. The difference (A - B) has a paired
    bootstrap CI. Only instances where both models have a value are compared.
    """
    rows = []
    for mode in MODES:
        key = metric or SUBSET_ACCURACY[mode]
        sub = scores[scores["mode"] == mode]
        a = sub[sub["model"] == model_a].set_index("instance_uid")[key]
        b = sub[sub["model"] == model_b].set_index("instance_uid")[key]
        joined = pd.concat([a.rename("a"), b.rename("b")], axis=1, join="inner").dropna()
        row = {"mode": mode, "metric": key, "model_a": model_a, "model_b": model_b, "n": len(joined),
               "small_n": 0 < len(joined) < stats.SMALL_N}
        if joined.empty:
            rows.append(row | {"mean_a": np.nan, "mean_b": np.nan, "diff": np.nan, "ci_low": np.nan, "ci_high": np.nan, "p_value": np.nan, "test": "", "stars": ""})
            continue
        x, y = joined["a"].to_numpy(float), joined["b"].to_numpy(float)
        diff_reps = bootstrap_means((x - y)[:, None], n_resamples, seed)
        low, high = _ci(diff_reps)
        if get_metric(key).kind == "rate":
            mcnemar = stats.mcnemar(x.astype(int), y.astype(int))
            p, test = mcnemar.p_value, f"McNemar ({mcnemar.method})"
        elif len(joined) >= 2 and np.std(x - y) > 0:
            paired = stats.paired_t(x, y)
            p, test = paired.p_value, "paired t"
        else:
            p, test = np.nan, "paired t (no variance)"
        rows.append(row | {"mean_a": x.mean(), "mean_b": y.mean(), "diff": x.mean() - y.mean(), "ci_low": float(low[0]), "ci_high": float(high[0]), "p_value": p, "test": test, "stars": significance_stars(p)})
    return pd.DataFrame(rows)


# --------------------------------------------------------------------------- data quality


EQUIVALENCE_METRICS: tuple[str, ...] = ("conflict_recognition", "strict_ias", "loose_ias", "coverage", "faithfulness")


def natural_vs_augmented(scores: pd.DataFrame, margin: float = 0.2, metrics: Sequence[str] = EQUIVALENCE_METRICS, n_resamples: int = 1_000, seed: int = 0) -> pd.DataFrame:
    """Figure 8 / Table 8: natural minus augmented means per metric with equivalence testing at +/- margin.

    Per model the difference natural - augmented is computed; TOST (stats.tost) runs over those per-model
    differences (needs >= 2 models with both origins and some spread). A pooled unpaired percentile-bootstrap
    CI of the difference is reported too (each origin resampled independently, as stats.bootstrap_ci with
    paired=False), and 'equivalent_by_ci' says whether that CI lies inside the margin.
    """
    metrics = list(metrics)
    nat_all = scores[scores["origin"] == "natural"]
    aug_all = scores[scores["origin"] == "augmented"]
    boot_low = boot_high = np.full(len(metrics), np.nan)
    if len(nat_all) and len(aug_all):
        reps = bootstrap_means(nat_all[metrics].to_numpy(float), n_resamples, seed) - bootstrap_means(aug_all[metrics].to_numpy(float), n_resamples, seed + 1)
        boot_low, boot_high = _ci(reps)
    rows = []
    for i, key in enumerate(metrics):
        nat, aug = nat_all[nat_all[key].notna()], aug_all[aug_all[key].notna()]
        row: dict[str, Any] = {"metric": key, "label": METRICS[key].label if key in METRICS else key, "natural": nat[key].mean() if len(nat) else np.nan,
               "augmented": aug[key].mean() if len(aug) else np.nan, "n_natural": len(nat), "n_augmented": len(aug)}
        row["diff"] = row["natural"] - row["augmented"]
        has_both = bool(len(nat) and len(aug))
        row |= {"boot_low": boot_low[i] if has_both else np.nan, "boot_high": boot_high[i] if has_both else np.nan,
                "equivalent_by_ci": bool(has_both and stats.equivalent_by_ci(boot_low[i], boot_high[i], margin))}
        per_model = pd.concat([nat.groupby("model")[key].mean().rename("nat"), aug.groupby("model")[key].mean().rename("aug")], axis=1, join="inner")
        diffs = (per_model["nat"] - per_model["aug"]).to_numpy(float)
        if diffs.size >= 2 and np.std(diffs) > 0:
            t = stats.tost(diffs, margin)
            row |= {"models": int(diffs.size), "tost_mean": t.mean_diff, "tost_low": t.ci_low, "tost_high": t.ci_high, "tost_p": t.p_value, "tost_equivalent": t.equivalent}
        else:
            row |= {"models": int(diffs.size), "tost_mean": np.nan, "tost_low": np.nan, "tost_high": np.nan, "tost_p": np.nan, "tost_equivalent": False}
        rows.append(row)
    out = pd.DataFrame(rows)
    out["margin"] = margin
    return out


def evaluated_composition(scores: pd.DataFrame) -> pd.DataFrame:
    """Distinct evaluated instances by domain, mode and origin."""
    inst = scores.drop_duplicates("instance_uid")
    return inst.groupby(["domain", "mode", "origin"]).size().rename("instances").reset_index()


# --------------------------------------------------------------------------- loaders
#
# Per-response scores and constraint verdicts come from core.analysis.readmodel (response_scores, constraint_verdicts: the one
# implementation of the IAS rules), as do the Figure 4 failure counts (failure_count_rows).


def latest_per_model_instance(scores: pd.DataFrame) -> pd.DataFrame:
    """One row per (model, instance): the latest response (highest response_id) when several runs overlap."""
    if scores.empty or not scores.duplicated(["model", "instance_uid"]).any():
        return scores
    keep = scores.groupby(["model", "instance_uid"], sort=False)["response_id"].idxmax()
    return scores.loc[sorted(keep)]


def load_scores(engine: Engine, run_ids: Sequence[int], judge: str) -> pd.DataFrame:
    """Prepared per-response scores of the runs under `judge`, one per (model, instance): the latest response wins."""
    return prepare_scores(latest_per_model_instance(response_scores(engine, run_ids, judge)))


def load_failure_counts(engine: Engine, run_ids: Sequence[int], judge: str) -> pd.DataFrame:
    """Constraint verdict counts per model, domain, mode, category and sub-dimension (core.analysis.readmodel.failure_count_rows)."""
    return failure_count_rows(engine, run_ids, judge)


def verdict_counts(verdicts: pd.DataFrame) -> pd.DataFrame:
    """The load_failure_counts layout computed from a verdict-level frame (constraint_verdicts columns)."""
    decided = (verdicts["status"] == "ok") & verdicts["passed"].notna()
    failed = decided & (verdicts["passed"].astype(object) == False)  # noqa: E712
    frame = verdicts.assign(verdicts=1, decided=decided.astype(int), failed=failed.astype(int))
    keys = ["model", "domain", "mode", "category", "sub_dimension"]
    return frame.groupby(keys, as_index=False)[["verdicts", "decided", "failed"]].sum()


def response_details(engine: Engine, response_id: int, judge: str) -> dict:
    """Everything behind one response for drill-down: query, documents, response text, constraint and metric verdicts."""
    from sqlmodel import col

    with Session(engine) as session:
        resp = session.get(Response, response_id)
        if resp is None:
            return {}
        inst = session.get_one(Instance, resp.instance_id)
        model = session.get(Model, resp.model_id)
        docs = session.execute(select(Document).where(col(Document.instance_id) == inst.id).order_by(col(Document.position))).scalars().all()
        cons = {c.id: c for c in session.execute(select(Constraint).where(col(Constraint.instance_id) == inst.id)).scalars().all()}
        verdicts = session.execute(select(Verdict).where(col(Verdict.response_id) == response_id)).scalars().all()
    constraint_rows = []
    for c in sorted(cons.values(), key=lambda c: c.position):
        for v in verdicts:
            if v.constraint_id == c.id and v.judge in (judge, "rule"):
                constraint_rows.append({"cid": c.cid, "constraint": c.text, "category": c.category, "sub_dimension": c.sub_dimension,
                                        "judge": v.judge, "method": v.method, "status": v.status, "passed": v.passed, "reason": v.reason})
    metric_rows = [{"metric": v.metric, "judge": v.judge, "method": v.method, "status": v.status, "value": v.value, "passed": v.passed, "reason": v.reason}
                   for v in verdicts if v.constraint_id is None]
    return {
        "response_id": response_id, "model": model.name if model else "", "instance_uid": inst.uid, "mode": inst.mode, "origin": inst.origin,
        "query": inst.query, "response": resp.text or "", "status": resp.status, "latency_ms": resp.latency_ms, "cost_usd": resp.cost_usd,
        "documents": [{"position": d.position + 1, "title": d.title, "role": d.role, "source": d.source, "text": d.text} for d in docs],
        "constraints": pd.DataFrame(constraint_rows, columns=["cid", "constraint", "category", "sub_dimension", "judge", "method", "status", "passed", "reason"]),
        "metrics": pd.DataFrame(metric_rows, columns=["metric", "judge", "method", "status", "value", "passed", "reason"]),
        "judges": sorted({v.judge for v in verdicts}),
    }


# --------------------------------------------------------------------------- judge-corrected estimates (PPI)

GOLD_METRICS: dict[str, str] = {"strict_ias": "Strict IAS", "loose_ias": "Loose IAS", "rejection": "Rejection accuracy",
                                "conflict_recognition": "Conflict recognition"}
TARGET_CI_WIDTH = 0.10  # +/- 5 points
CORRECTED_COLUMNS = ["model", "metric", "label", "judge_value", "judge_n", "estimate", "ci_low", "ci_high", "lam",
                     "N", "n", "effective_n", "gold_mean", "gold_ci_low", "gold_ci_high", "method", "small_n",
                     "labels_for_target", "note"]


def gold_values(gold: dict[int, dict]) -> pd.DataFrame:
    """Per gold-labelled response, the expert value of each metric gold labels can decide (NaN where it cannot)."""
    rows = []
    for rid, payload in gold.items():
        cons = [bool(v) for v in (payload.get("constraints") or {}).values()]
        rows.append({"response_id": int(rid),
                     "strict_ias": float(all(cons)) if cons else np.nan,
                     "loose_ias": float(np.mean(cons)) if cons else np.nan,
                     "rejection": float(payload["valid_refusal"]) if payload.get("valid_refusal") is not None else np.nan,
                     "conflict_recognition": float(payload["conflict_recognized"])
                     if payload.get("conflict_recognized") is not None else np.nan})
    return pd.DataFrame(rows, columns=["response_id", *GOLD_METRICS])


def response_uncertainty(engine: Engine, run_id: int) -> dict[int, float]:
    """How unsure the judges are about each response of a run, as an expected squared error of a 0/1 verdict.

    Per response, over the gold-decidable metrics: 0.25 where no judge could decide, the variance of the judges'
    verdicts where several judges decided (0 when they agree), and 0.05 for a single judge's decision; plus a floor
    of 0.01. Used to spend expert labels where they shrink the corrected CIs most (core.review.gold).
    """
    judges = [j for j in run_judges(engine, [run_id]) if j != RULE_JUDGE]
    frames = [load_scores(engine, [run_id], j).set_index("response_id")[list(GOLD_METRICS)] for j in judges]
    if not frames:
        return {}
    stacked = np.stack([f.reindex(frames[0].index).to_numpy(float) for f in frames])  # judges x responses x metrics
    decided = (~np.isnan(stacked)).sum(axis=0)
    with np.errstate(invalid="ignore"):
        spread = np.nanvar(stacked, axis=0) if len(frames) > 1 else np.zeros(stacked.shape[1:])
    per_metric = np.where(decided == 0, 0.25, np.where(decided == 1, 0.05, spread))
    return {int(r): float(u) + 0.01 for r, u in zip(frames[0].index, per_metric.mean(axis=1), strict=True)}


def corrected_estimates(scores: pd.DataFrame, gold: pd.DataFrame, confidence: float = 0.95,
                        probabilities: dict[int, float] | None = None) -> pd.DataFrame:
    """Per model and gold-decidable metric: the judge's raw mean beside the PPI++ corrected mean and CI.

    `scores` are the prepared per-response scores of one judge (one row per model and instance), `gold` the
    gold_values of the labelled responses. N counts the model's responses the metric applies to (every response for
    IAS, gap responses for rejection, conflict responses for conflict recognition), n those with a gold label. With
    `probabilities` recorded for every labelled response (draw_gold_sample), the inverse-probability-weighted PPI is
    used, which stays unbiased under stratified or uncertainty-weighted sampling; otherwise PPI++ assumes the labels
    are a uniform sample within the model, and the note says so. Where the judge left a response undetermined its prediction
    is the judge's own mean on that model (any fixed prediction keeps PPI unbiased). Gold labels are treated as a
    uniform sample within the model (drawn by core.review.gold.draw_gold_sample, stratified; a stratum-weighted
    estimator is core.analysis.ppi.ipw_ppi_mean).
    """
    from core.analysis.ppi import MIN_LABELS, ipw_ppi_mean, labels_for_width, ppi_mean

    merged = scores[["response_id", "model", "mode", *GOLD_METRICS]].merge(gold, on="response_id", how="left",
                                                                           suffixes=("", "_gold"))
    rows = []
    for model, g in merged.groupby("model", sort=True):
        for metric, label in GOLD_METRICS.items():
            gold_col = f"{metric}_gold"
            mode = {"rejection": "gap", "conflict_recognition": "conflict"}.get(metric)
            sub = g[g["mode"] == mode] if mode else g
            judge = sub[metric].astype(float)
            fill = judge.mean() if judge.notna().any() else 0.5
            f = judge.fillna(fill).to_numpy(float)
            y = sub[gold_col].to_numpy(float)
            labeled = ~np.isnan(y)
            row = {"model": model, "metric": metric, "label": label, "judge_value": float(judge.mean()),
                   "judge_n": int(judge.notna().sum()), "N": int(len(sub)), "n": int(labeled.sum())}
            if labeled.sum() < MIN_LABELS or (~labeled).sum() < 1:
                rows.append(row | {"note": f"needs at least {MIN_LABELS} gold labels (has {int(labeled.sum())}) "
                                           "and 1 unlabelled response"})
                continue
            pi = sub["response_id"].map(probabilities or {}).to_numpy(float)
            weighted = bool(probabilities) and not np.isnan(pi[labeled]).any()
            e = (ipw_ppi_mean(f, np.where(labeled, y, np.nan), np.where(labeled, pi, 1.0), confidence=confidence)
                 if weighted else ppi_mean(y[labeled], f[labeled], f[~labeled], confidence=confidence))
            note = "" if weighted else "sampling probabilities not recorded: labels assumed a uniform sample"
            rows.append(row | {"estimate": e.estimate, "ci_low": e.ci_low, "ci_high": e.ci_high, "lam": e.lam,
                               "effective_n": e.effective_n, "gold_mean": e.gold_mean, "gold_ci_low": e.gold_ci_low,
                               "gold_ci_high": e.gold_ci_high, "method": e.method, "small_n": e.small_n,
                               "labels_for_target": labels_for_width(e, TARGET_CI_WIDTH),
                               "note": "; ".join(x for x in ("small sample of gold labels" if e.small_n else "", note)
                                                 if x)})
    return pd.DataFrame(rows, columns=CORRECTED_COLUMNS)


def corrected_difference(scores: pd.DataFrame, gold: pd.DataFrame, model_a: str, model_b: str,
                         metric: str = "strict_ias", confidence: float = 0.95) -> dict:
    """Model A minus model B on the instances both answered: raw judge difference and its PPI++ correction.

    Per shared instance the gold difference Y_A - Y_B is known where both responses carry a gold label; the judge's
    difference f_A - f_B (undetermined values predicted by that model's judge mean) is known everywhere.
    """
    from core.analysis.ppi import MIN_LABELS, ppi_mean

    def side(model: str) -> pd.DataFrame:
        mine = scores[scores["model"] == model].merge(gold[["response_id", metric]].rename(columns={metric: "gold"}),
                                                      on="response_id", how="left")
        judged = mine[metric].astype(float)
        return mine.assign(f=judged.fillna(judged.mean() if judged.notna().any() else 0.5)).set_index("instance_uid")

    a, b = side(model_a), side(model_b)
    shared = a.index.intersection(b.index)
    d_f = (a.loc[shared, "f"] - b.loc[shared, "f"]).to_numpy(float)
    d_y = (a.loc[shared, "gold"] - b.loc[shared, "gold"]).to_numpy(float)
    labeled = ~np.isnan(d_y)
    out = {"model_a": model_a, "model_b": model_b, "metric": metric, "shared": int(len(shared)),
           "n": int(labeled.sum()), "judge_diff": float(d_f.mean()) if len(shared) else np.nan}
    if labeled.sum() < MIN_LABELS or (~labeled).sum() < 1:
        return out | {"estimate": np.nan, "ci_low": np.nan, "ci_high": np.nan,
                      "note": f"needs gold labels on both models' responses for at least {MIN_LABELS} shared instances"}
    e = ppi_mean(d_y[labeled], d_f[labeled], d_f[~labeled], confidence=confidence, bounds=(-1.0, 1.0))
    return out | {"estimate": e.estimate, "ci_low": e.ci_low, "ci_high": e.ci_high, "effective_n": e.effective_n,
                  "note": "small sample of gold labels" if e.small_n else ""}


def ranking_changes(corrected: pd.DataFrame) -> list[str]:
    """Metrics on which the corrected means order the models differently from the raw judge means."""
    changed = []
    for metric, g in corrected.dropna(subset=["estimate", "judge_value"]).groupby("metric"):
        if len(g) >= 2 and list(g.sort_values("judge_value", ascending=False)["model"]) != list(
                g.sort_values("estimate", ascending=False)["model"]):
            changed.append(GOLD_METRICS.get(metric, metric))
    return changed


def corrected_trust(corrected: pd.DataFrame) -> str:
    """What to make of a ranking the correction changed: trust the corrected column only where every corrected cell
    rests on at least SMALL_N gold labels; otherwise compare the intervals first."""
    shown = corrected.dropna(subset=["estimate"])
    if not shown.empty and (shown["n"] >= stats.SMALL_N).all():
        return "Trust the corrected column: it removes the judge's bias."
    return (f"Some corrected cells rest on fewer than {stats.SMALL_N} gold labels: compare their intervals before "
            "re-ranking, and label more to settle it.")


def load_corrected(engine: Engine, run_ids: Sequence[int], judge: str, scores: pd.DataFrame | None = None,
                   gold: dict[int, dict] | None = None) -> pd.DataFrame:
    """corrected_estimates of the runs under `judge` from the stored scores and the gold labels (reads only); pass
    `scores` (load_scores of the same runs and judge) or `gold` (gold_labels of the runs) when already loaded."""
    from core.store.labels import gold_labels, gold_probabilities

    gold = gold_labels(engine, list(run_ids)) if gold is None else gold
    probabilities = gold_probabilities(engine, list(run_ids)) if gold else {}  # only labelled responses use them
    return corrected_estimates(load_scores(engine, run_ids, judge) if scores is None else scores, gold_values(gold),
                               probabilities=probabilities)


# --------------------------------------------------------------------------- runs, judges and the run report

_GENERATION_SQL = """
SELECT m.name AS model, r.status, r.cached, r.input_tokens, r.output_tokens, r.cost_usd, r.latency_ms
FROM response r JOIN model m ON m.id = r.model_id WHERE r.run_id = :run
"""


def scored_runs(engine: Engine) -> pd.DataFrame:
    """Runs that have verdicts, newest first: id, name, status, config, verdicts."""
    from sqlmodel import col

    with Session(engine) as session:
        rows = session.execute(select(col(Run.id), col(Run.name), col(Run.status), col(Run.config),
                                      func.count(col(Verdict.id)))
                               .join(Verdict, col(Verdict.run_id) == Run.id).group_by(col(Run.id))
                               .order_by(col(Run.id).desc())).all()
    return pd.DataFrame(rows, columns=["id", "name", "status", "config", "verdicts"])


def run_judges(engine: Engine, run_ids: Sequence[int]) -> list[str]:
    """Judges that scored any of the runs (LLM judges first); ['rule'] when only rule checks ran."""
    from sqlmodel import col

    with Session(engine) as session:
        judges = session.execute(select(col(Verdict.judge)).where(col(Verdict.run_id).in_(list(run_ids))).distinct()).scalars().all()
    named = sorted(j for j in judges if j != RULE_JUDGE)
    return sorted(named, key=lambda j: (not j.startswith("llm:"), j)) or ([RULE_JUDGE] if judges else [])


def _configured_runs(engine: Engine) -> list[Run]:
    from sqlmodel import col

    with Session(engine) as session:
        return list(session.execute(select(Run).where(col(Run.config).is_not(None))).scalars().all())


def unscored_first_start_runs(engine: Engine) -> list[Run]:
    """First-start runs still being generated or scored (not those whose last attempt failed)."""
    return [r for r in _configured_runs(engine) if first_start_pending(r.config)]


def failed_first_start_runs(engine: Engine) -> list[tuple[int, str]]:
    """(run id, why) of first-start runs whose last attempt failed."""
    return [(saved_id(r), why) for r in _configured_runs(engine) if (why := first_start_failure(r.config))]


def generation_summary(engine: Engine, run_id: int) -> pd.DataFrame:
    """Per model of one run: items, done, failed, pending, cached, tokens, cost, paid spend, latency mean and p95."""
    frame = read_sql(engine, _GENERATION_SQL, {"run": int(run_id)})
    rows = []
    for model, g in frame.groupby("model", sort=True):
        done = g[g["status"] == "done"]
        latency = done.loc[~done["cached"].astype(bool), "latency_ms"].dropna().to_numpy(float)
        rows.append({"model": model, "items": len(g), "done": len(done), "failed": int((g["status"] == "failed").sum()),
                     "pending": int((g["status"] == "pending").sum()), "cached": int(done["cached"].astype(bool).sum()),
                     "input_tokens": int(done["input_tokens"].sum()), "output_tokens": int(done["output_tokens"].sum()),
                     "cost_usd": round(float(done["cost_usd"].sum()), 6),
                     "spent_usd": round(float(done.loc[~done["cached"].astype(bool), "cost_usd"].sum()), 6),
                     "latency_ms_mean": round(float(latency.mean()), 1) if latency.size else None,
                     "latency_ms_p95": round(float(np.percentile(latency, 95, method="nearest")), 1) if latency.size else None})
    return pd.DataFrame(rows)


@dataclass(frozen=True)
class RunReport:
    """One run under one judge: generation per model, the leaderboard cells and the undetermined counts."""

    run_id: int
    judge: str | None
    judge_label: str
    generation: pd.DataFrame
    board: pd.DataFrame
    counts: pd.DataFrame
    note: str = ""
    reference: pd.DataFrame | None = None  # reference_summary rows when the run holds reference-answer instances
    production: pd.DataFrame | None = None  # the same summary for production_rag instances (imported traces)


def run_report(engine: Engine, run_id: int, judge: str | None = None) -> RunReport:
    """The `gauntlet report` content: the same leaderboard the dashboards show, for one run and one judge.

    With no judge given, the run's only judge is used; several judges raise ValueError naming them.
    """
    from core.scoring.judges.names import judge_label

    with Session(engine) as session:
        if session.get(Run, int(run_id)) is None:
            raise ValueError(f"run {run_id} not found")
    judges = [j for j in run_judges(engine, [run_id]) if j != RULE_JUDGE]
    if judge is None and len(judges) > 1:
        raise ValueError(f"run {run_id} was scored by several judges ({', '.join(judges)}): pick one with --judge")
    judge = judge or (judges[0] if judges else None)
    generation = generation_summary(engine, run_id)
    if judge is None:
        return RunReport(run_id, None, "not scored", generation, pd.DataFrame(columns=LONG_COLUMNS),
                         pd.DataFrame(), note=f"run {run_id} has no judge verdicts yet: gauntlet score {run_id}")
    if judge not in judges:
        raise ValueError(f"judge {judge!r} did not score run {run_id}; judges: {', '.join(judges) or '(none)'}")
    scores = load_scores(engine, [run_id], judge)
    board = leaderboard(scores, model_catalog(engine))
    counts = model_counts(scores)
    reference = reference_scores(engine, [run_id], judge)
    summary = reference_summary(reference) if not reference.empty else None
    production = reference_scores(engine, [run_id], judge, PRODUCTION_PROTOCOL)
    production_summary = reference_summary(production, PRODUCTION_PROTOCOL) if not production.empty else None
    return RunReport(run_id, judge, judge_label(judge), generation, board, counts, reference=summary,
                     production=production_summary)


def model_counts(scores: pd.DataFrame) -> pd.DataFrame:
    """Per model: responses, Strict-undetermined responses, constraint errors and unjudged, metric errors / not applicable."""
    rows = []
    for model, g in scores.groupby("model", sort=True):
        row = {"model": model, "responses": len(g), "n_strict_undetermined": int(g["strict_ias"].isna().sum()),
               "n_constraint_errors": int(g["n_constraint_errors"].sum()),
               "n_constraint_unjudged": int(g["n_constraint_unjudged"].sum())}
        for metric in METRIC_NAMES:
            row[f"n_{metric}_error"] = int((g[f"{metric}_status"] == "error").sum())
            row[f"n_{metric}_na"] = int((g[f"{metric}_status"] == "not_applicable").sum())
        rows.append(row)
    return pd.DataFrame(rows)


def report_document(report: RunReport, failures: list[dict]) -> dict:
    """The report as one JSON-ready document: per model its generation figures, every metric cell and the counts."""
    models = sorted(set(report.generation.get("model", pd.Series(dtype=object))) | set(report.board.get("model", [])))
    gen = report.generation.set_index("model") if not report.generation.empty else pd.DataFrame()
    counts = report.counts.set_index("model") if not report.counts.empty else pd.DataFrame()
    out = []
    for model in models:
        cells = report.board[report.board["model"] == model]
        metrics_doc = {r["metric"]: {"label": r["label"], "value": _num(r["value"]), "ci_low": _num(r["ci_low"]),
                                     "ci_high": _num(r["ci_high"]), "n": int(r["n"]), "interval": r["interval"],
                                     "small_n": bool(r["small_n"]), "mark": r["mark"]}
                       for r in cells.to_dict("records")}
        out.append({"model": model,
                    "generation": {k: _num(v) for k, v in gen.loc[model].items()} if model in gen.index else {},
                    "counts": {k: int(v) for k, v in counts.loc[model].items()} if model in counts.index else {},
                    "metrics": metrics_doc})
    reference = [] if report.reference is None else [{k: _num(v) for k, v in row.items()}
                                                     for row in report.reference.to_dict("records")]
    production = [] if report.production is None else [{k: _num(v) for k, v in row.items()}
                                                       for row in report.production.to_dict("records")]
    return {"run": report.run_id, "judge": report.judge, "judge_label": report.judge_label, "note": report.note,
            "models": out, "reference_metrics": reference, "production_metrics": production, "failed": failures}


def _num(value):
    """A JSON-safe scalar: NaN becomes None, numpy scalars become Python numbers."""
    if value is None:
        return None
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, float) and np.isnan(value):
        return None
    return value


# --------------------------------------------------------------------------- reference-answer protocols (reference_qa)

PRODUCTION_PROTOCOL = "production_rag"  # imported traces: faithfulness and coverage, no reference
REFERENCE_ID_COLUMNS = ("run_id", "response_id", "judge", "model", "instance_uid", "domain", "language", "condition",
                        "answer_type")
REFERENCE_SUMMARY_COLUMNS = ["model", "condition", "metric", "judge", "judge_label", "value", "ci_low", "ci_high", "n",
                             "n_not_applicable", "n_error", "n_unscored", "n_unparseable", "interval", "small_n"]
_REFERENCE_RESPONSES_SQL = """
SELECT r.run_id, r.id AS response_id, m.name AS model, i.uid AS instance_uid, d.name AS domain, i.language,
       r.condition, i.reference
FROM response r JOIN instance i ON i.id = r.instance_id JOIN domain d ON d.id = i.domain_id JOIN model m ON m.id = r.model_id
WHERE r.status = 'done' AND r.run_id IN ({runs}) AND i.protocol = :protocol
ORDER BY r.id
"""
_REFERENCE_VERDICTS_SQL = """
SELECT v.response_id, v.metric, v.status, v.value FROM verdict v
WHERE v.run_id IN ({runs}) AND v.judge = :judge AND v.constraint_id IS NULL AND v.metric IN ({metrics})
ORDER BY v.id
"""


def reference_metric_names(protocol: str = "reference_qa") -> tuple[str, ...]:
    """The response-level metrics a reference protocol declares (its `metrics`, without 'constraint')."""
    from core.protocols import get_protocol

    return tuple(m for m in get_protocol(protocol).metrics if m != "constraint")


def _answer_type(reference) -> str | None:
    import json

    if isinstance(reference, str):
        reference = json.loads(reference)
    return (reference or {}).get("answer_type", "short") if reference else None


def reference_scores(engine: Engine, run_ids: Sequence[int], judge: str, protocol: str = "reference_qa") -> pd.DataFrame:
    """One row per done response of a reference protocol: ids, model, instance, domain, language, condition,
    answer_type, and per metric its value and `<metric>_status` (ok, unparseable, error, not_applicable, or None when
    `judge` has not scored it). The value is NaN unless the status is counted by the metric's declaration: ok, and
    unparseable where an unreadable answer counts as wrong (its stored value, 0). Reference metrics are lexical;
    correctness and consistency are `judge`'s."""
    metrics = reference_metric_names(protocol)
    runs = ", ".join(str(int(r)) for r in run_ids) or "NULL"
    frame = read_sql(engine, _REFERENCE_RESPONSES_SQL.replace("{runs}", runs), {"protocol": protocol})
    quoted = ", ".join(f"'{m}'" for m in metrics)
    verdicts = read_sql(engine, _REFERENCE_VERDICTS_SQL.replace("{runs}", runs).replace("{metrics}", quoted),
                        {"judge": judge}).drop_duplicates(["response_id", "metric"], keep="last")
    frame["judge"] = judge
    frame["answer_type"] = frame["reference"].map(_answer_type) if not frame.empty else pd.Series(dtype=object)
    frame = frame.drop(columns="reference")
    for metric in metrics:
        got = verdicts[verdicts["metric"] == metric].set_index("response_id")
        status = frame["response_id"].map(got["status"]) if not got.empty else pd.Series(None, index=frame.index)
        values = frame["response_id"].map(got["value"]) if not got.empty else pd.Series(np.nan, index=frame.index)
        counted = status.isin(get_metric(metric).counted_statuses())
        frame[metric] = pd.to_numeric(values, errors="coerce").astype(float).where(counted)
        frame[f"{metric}_status"] = status.astype(object).where(status.notna(), None)
    columns = [*REFERENCE_ID_COLUMNS, *(c for m in metrics for c in (m, f"{m}_status"))]
    return frame.reindex(columns=columns)


def reference_summary(scores: pd.DataFrame, protocol: str = "reference_qa") -> pd.DataFrame:
    """Per model x condition x metric: mean with the 95% CI of its declared kind (stats.metric_intervals), n with a
    value, the responses left out: not_applicable, error (judge failed) and unscored; and the unparseable answers
    (counted as wrong or left out, as the metric declares); small_n flags 0 < n < stats.SMALL_N."""
    from core.scoring.judges.names import judge_label

    metrics = [m for m in reference_metric_names(protocol) if m in scores.columns]
    declared = [get_metric(m) for m in metrics]
    rows: list[dict] = []
    for (model, condition), group in scores.groupby(["model", "condition"], sort=True):
        ci = stats.metric_intervals(group[metrics].to_numpy(dtype=float), declared)
        judge = str(group["judge"].iloc[0])
        for j, metric in enumerate(metrics):
            status = group[f"{metric}_status"]
            rows.append({"model": model, "condition": condition, "metric": metric, "judge": judge,
                         "judge_label": judge_label(judge), "value": float(ci.mean[j]), "ci_low": float(ci.ci_low[j]),
                         "ci_high": float(ci.ci_high[j]), "n": int(ci.n[j]),
                         "n_not_applicable": int((status == "not_applicable").sum()),
                         "n_error": int((status == "error").sum()), "n_unscored": int(status.isna().sum()),
                         "n_unparseable": int((status == "unparseable").sum()),
                         "interval": str(ci.method[j]), "small_n": bool(0 < ci.n[j] < stats.SMALL_N)})
    return pd.DataFrame(rows, columns=REFERENCE_SUMMARY_COLUMNS)
