"""Per-response scores and summaries of the reference-answer protocols (reference_qa, production_rag)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd
from sqlalchemy.engine import Engine

from core.analysis import stats
from core.analysis.readmodel.responses import read_sql
from core.metrics import BENCHMARK_MEASURES, concerns, get_metric

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


def applicable_metrics(scores: pd.DataFrame, protocol: str) -> list[str]:
    """The protocol's response metrics present in `scores`, without a benchmark's own measures (RGB, CRAG, ...) when
    none of the instances comes from that benchmark."""
    uids = scores["instance_uid"].astype(str) if "instance_uid" in scores.columns else pd.Series(dtype=str)
    return [m for m in reference_metric_names(protocol) if m in scores.columns
            and (m not in BENCHMARK_MEASURES or any(concerns(m, u) for u in uids))]


def reference_summary(scores: pd.DataFrame, protocol: str = "reference_qa") -> pd.DataFrame:
    """Per model x condition x metric: mean with the 95% CI of its declared kind (stats.metric_intervals), n with a
    value, the responses left out: not_applicable, error (judge failed) and unscored; and the unparseable answers
    (counted as wrong or left out, as the metric declares); small_n flags 0 < n < stats.SMALL_N."""
    from core.scoring.judges.names import judge_label

    metrics = applicable_metrics(scores, protocol)
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
