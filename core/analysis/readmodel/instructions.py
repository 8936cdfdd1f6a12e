"""Instruction adherence of reference-answer responses whose instance carries its own instructions (FollowRAG): Loose
and Strict IAS as EnterpriseRAG defines them, and FollowRAG's instruction score, per model and condition."""

from __future__ import annotations

import json
from collections.abc import Sequence

import numpy as np
import pandas as pd
from sqlalchemy.engine import Engine

from core.analysis import stats
from core.analysis.readmodel.reference import REFERENCE_SUMMARY_COLUMNS
from core.analysis.readmodel.responses import ias_from_counts, read_sql
from core.metrics import get_metric
from core.scoring.summaries import JUDGE_FILTER_SQL, runs_sql

INSTRUCTION_METRICS = ("loose_ias", "strict_ias", "instruction_score")
INSTRUCTION_COLUMNS = ("run_id", "response_id", "model", "instance_uid", "condition", "n_instructions", "judged",
                       "passed", "errors", "unjudged", "loose_passed", *INSTRUCTION_METRICS)

_VERDICTS_SQL = """
SELECT r.run_id, r.id AS response_id, m.name AS model, i.uid AS instance_uid, r.condition, c.id AS constraint_id,
       v.status, v.passed, v.details
FROM response r JOIN instance i ON i.id = r.instance_id JOIN model m ON m.id = r.model_id
JOIN "constraint" c ON c.instance_id = r.instance_id
LEFT JOIN verdict v ON v.response_id = r.id AND v.constraint_id = c.id AND v.metric = 'constraint'
     AND """ + JUDGE_FILTER_SQL + """
WHERE r.status = 'done' AND r.run_id IN ({runs}) AND i.protocol = :protocol
ORDER BY r.id, c.position
"""


def _loose(details, passed) -> float:
    """IFEval's loose verdict of a rule instruction (stored in the verdict's details), else the verdict itself."""
    found = (json.loads(details) if isinstance(details, str) else details or {}).get("loose")
    return float(passed if found is None else found)


def _loose_passed(details: pd.Series, passed: pd.Series, judged: pd.Series) -> np.ndarray:
    """_loose of every judged verdict (0 where not judged): details are parsed only where they can hold a loose
    verdict (a mapping, or JSON text naming "loose"); elsewhere the verdict is its own loose verdict."""
    out = passed.to_numpy(dtype=float, copy=True)
    text, decided = details.to_numpy(dtype=object), judged.to_numpy() != 0
    for i in np.flatnonzero(decided):
        if not isinstance(text[i], str) or '"loose"' in text[i]:
            out[i] = _loose(text[i], out[i])
    return np.where(decided, out, 0.0)


def instruction_scores(engine: Engine, run_ids: Sequence[int], judge: str,
                       protocol: str = "reference_qa") -> pd.DataFrame:
    """One row per done response of `protocol` whose instance has instructions: counts (instructions, judged,
    passed, errors, unjudged: no verdict of this judge or not applicable), IFEval-loose passes, Loose and Strict
    IAS (NaN where undetermined) and the response's share of instructions followed by the loose rule."""
    rows = read_sql(engine, runs_sql(_VERDICTS_SQL, run_ids), {"judge": judge, "protocol": protocol})
    if rows.empty:
        return pd.DataFrame(columns=list(INSTRUCTION_COLUMNS))
    rows = rows.drop_duplicates(["response_id", "constraint_id"], keep="last")
    decided = (rows["status"] == "ok") & rows["passed"].notna()
    rows["judged"] = decided.astype(int)
    rows["passed"] = (decided & pd.to_numeric(rows["passed"], errors="coerce").fillna(0).astype(bool)).astype(int)
    rows["errors"] = (rows["status"] == "error").astype(int)
    rows["loose_passed"] = _loose_passed(rows["details"], rows["passed"], rows["judged"])
    keys = ["run_id", "response_id", "model", "instance_uid", "condition"]
    out = rows.groupby(keys, sort=False, dropna=False).agg(
        n_instructions=("constraint_id", "size"), judged=("judged", "sum"), passed=("passed", "sum"),
        errors=("errors", "sum"), loose_passed=("loose_passed", "sum")).reset_index()
    out["unjudged"] = out["n_instructions"] - out["judged"] - out["errors"]
    out["loose_ias"], out["strict_ias"] = ias_from_counts(out["judged"], out["passed"], out["errors"], out["unjudged"])
    out["instruction_score"] = (out["loose_passed"] / out["judged"]).where(out["judged"] > 0)
    return out.reindex(columns=list(INSTRUCTION_COLUMNS))


def pooled_share(passed: np.ndarray, judged: np.ndarray) -> stats.Interval:
    """Σpassed / Σjudged over responses with its 95% interval: Clopper-Pearson on the effective number of
    instructions of a ratio estimator clustered by response (instructions of one response are not independent)."""
    keep = judged > 0
    passed, judged = passed[keep].astype(float), judged[keep].astype(float)
    total, m = judged.sum(), int(keep.sum())
    if m == 0:
        return stats.Interval(float("nan"), float("nan"), float("nan"), 0, "")
    share = passed.sum() / total
    spread = ((passed - share * judged) ** 2).sum() / (m * (m - 1)) if m > 1 else 0.0
    variance = spread / (total / m) ** 2
    n_eff = total if variance <= 0 or share in (0.0, 1.0) else min(total, max(1.0, share * (1 - share) / variance))
    low, high = stats.effective_n_bounds([share], [n_eff])
    return stats.Interval(float(share), float(low[0]), float(high[0]), m, "ratio-effective-n")


def instruction_summary(scores: pd.DataFrame, judge: str) -> pd.DataFrame:
    """Per model x condition: Loose IAS, Strict IAS (determined responses) and the pooled instruction score, each
    with its 95% CI, n responses with a value, and the responses left out (an instruction in error, or unjudged),
    in the rows of reference_summary."""
    from core.scoring.judges.names import judge_label

    declared = [get_metric(m) for m in INSTRUCTION_METRICS[:2]]
    rows: list[dict] = []
    for (model, condition), group in scores.groupby(["model", "condition"], sort=True):
        ci = stats.metric_intervals(group[list(INSTRUCTION_METRICS[:2])].to_numpy(dtype=float), declared)
        cells = [stats.Interval(float(ci.mean[j]), float(ci.ci_low[j]), float(ci.ci_high[j]), int(ci.n[j]),
                                str(ci.method[j])) for j in range(2)]
        cells.append(pooled_share(group["loose_passed"].to_numpy(), group["judged"].to_numpy()))
        for metric, cell in zip(INSTRUCTION_METRICS, cells, strict=True):
            rows.append({"model": model, "condition": condition, "metric": metric, "judge": judge,
                         "judge_label": judge_label(judge), "value": cell.mean, "ci_low": cell.ci_low, "ci_high": cell.ci_high,
                         "n": cell.n, "n_not_applicable": 0, "n_error": int((group["errors"] > 0).sum()),
                         "n_unscored": int(((group["unjudged"] > 0) & (group["errors"] == 0)).sum()),
                         "n_unparseable": 0, "interval": cell.method,
                         "small_n": bool(0 < cell.n < stats.SMALL_N)})
    return pd.DataFrame(rows, columns=REFERENCE_SUMMARY_COLUMNS)
