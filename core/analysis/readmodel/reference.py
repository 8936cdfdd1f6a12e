"""Per-response scores and summaries of the reference-answer protocols (reference_qa, production_rag)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd
from sqlalchemy.engine import Engine

from core.analysis import stats
from core.analysis.readmodel.repeats import per_item
from core.analysis.readmodel.responses import UNJUDGED, metric_source, read_sql, state_statuses
from core.analysis.readmodel.states import count_states
from core.metrics import BENCHMARK_MEASURES, STATES, VERDICT_STATES, concerns, get_metric

PRODUCTION_PROTOCOL = "production_rag"  # imported traces: faithfulness and coverage, no reference

REFERENCE_ITEM_KEYS = ("run_id", "model", "instance_uid", "condition")  # a repeated answer is one of these items
REFERENCE_ID_COLUMNS = ("run_id", "response_id", "judge", "model", "instance_uid", "domain", "language", "condition",
                        "answer_type")

STATE_COUNT_COLUMNS: tuple[str, ...] = tuple(f"n_{state}" for state in STATES)  # n_scored, ..., n_skipped
REFERENCE_SUMMARY_COLUMNS = ["model", "condition", "metric", "judge", "judge_label", "value", "ci_low", "ci_high", "n",
                             "n_not_applicable", "n_error", "n_unscored", "n_unparseable", "interval", "small_n",
                             "n_scored", "n_judge_error", "n_unjudged", "n_skipped"]

_REFERENCE_RESPONSES_SQL = """
SELECT r.run_id, r.id AS response_id, m.name AS model, i.uid AS instance_uid, d.name AS domain, i.language,
       r.condition, i.reference
FROM response r JOIN instance i ON i.id = r.instance_id JOIN domain d ON d.id = i.domain_id JOIN model m ON m.id = r.model_id
WHERE r.status = 'done' AND r.run_id IN ({runs}) AND i.protocol = :protocol
ORDER BY r.id
"""

_REFERENCE_METRICS_SQL = """
SELECT s.response_id, s.metric, s.state, s.value FROM {source} s
WHERE s.run_id IN ({runs}) AND s.judge = :judge AND s.metric IN ({metrics})
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
    """One row per done response of a protocol's instances (any protocol but EnterpriseRAG, whose load_scores has its
    constraints): ids, model, instance, domain, language, condition, answer_type, and per declared metric its value,
    `<metric>_status` (the verdict's: ok, unparseable, error, not_applicable, or None when there is no verdict) and,
    last, `<metric>_state` (core.metrics.STATES), read from response_metric. The value is NaN unless the metric's
    declaration counts the state: scored, and unparseable where an unreadable answer counts as wrong (its stored
    value, 0). Reference metrics are lexical; correctness and consistency are `judge`'s."""
    metrics = reference_metric_names(protocol)
    runs = ", ".join(str(int(r)) for r in run_ids) or "NULL"
    frame = read_sql(engine, _REFERENCE_RESPONSES_SQL.replace("{runs}", runs), {"protocol": protocol})
    quoted = ", ".join(f"'{m}'" for m in metrics) or "NULL"
    source = metric_source(engine, run_ids, judge)
    sql = _REFERENCE_METRICS_SQL.replace("{source}", source).replace("{metrics}", quoted).replace("{runs}", runs)
    rows = read_sql(engine, sql, {"judge": judge})
    frame["judge"] = judge
    frame["answer_type"] = frame["reference"].map(_answer_type) if not frame.empty else pd.Series(dtype=object)
    frame = frame.drop(columns="reference")
    for metric in metrics:
        got = rows[rows["metric"] == metric].set_index("response_id")
        state = frame["response_id"].map(got["state"]) if not got.empty else pd.Series(None, index=frame.index)
        values = frame["response_id"].map(got["value"]) if not got.empty else pd.Series(np.nan, index=frame.index)
        counted = state.isin([VERDICT_STATES[s] for s in get_metric(metric).counted_statuses()])
        frame[metric] = pd.to_numeric(values, errors="coerce").astype(float).where(counted)
        frame[f"{metric}_state"] = state.astype(object).where(state.notna(), UNJUDGED)
        frame[f"{metric}_status"] = state_statuses(frame[f"{metric}_state"])
    columns = [*REFERENCE_ID_COLUMNS, *(c for m in metrics for c in (m, f"{m}_status")), *(f"{m}_state" for m in metrics)]
    return frame.reindex(columns=columns)


def applicable_metrics(scores: pd.DataFrame, protocol: str) -> list[str]:
    """The protocol's response metrics present in `scores`, without a benchmark's own measures (RGB, CRAG, ...) when
    none of the instances comes from that benchmark."""
    uids = scores["instance_uid"].astype(str) if "instance_uid" in scores.columns else pd.Series(dtype=str)
    return [m for m in reference_metric_names(protocol) if m in scores.columns
            and (m not in BENCHMARK_MEASURES or any(concerns(m, u) for u in uids))]


def metric_states(scores: pd.DataFrame, metric: str) -> pd.Series:
    """Each row's state of `metric`: its `<metric>_state` column, else from `<metric>_status` (None: unjudged)."""
    if f"{metric}_state" in scores:
        return scores[f"{metric}_state"].fillna(UNJUDGED)
    return scores[f"{metric}_status"].map(VERDICT_STATES).fillna(UNJUDGED)


def state_count_columns(states: pd.Series) -> dict[str, int]:
    """n_<state> for every state of core.metrics.STATES (states.count_states), and the older names: n_error
    (judge_error), n_unscored (no verdict: unjudged + skipped)."""
    counts = {f"n_{state}": n for state, n in count_states(states).items()}
    return counts | {"n_error": counts["n_judge_error"], "n_unscored": counts["n_unjudged"] + counts["n_skipped"]}


def metric_summary(scores: pd.DataFrame, metrics: Sequence[str], by: Sequence[str] = ("model", "condition")) -> pd.DataFrame:
    """Per group of `by` x metric: mean with the 95% CI of the metric's declared kind (stats.metric_intervals), n with
    a value, the count of every state beside it (state_count_columns), small_n when 0 < n < stats.SMALL_N; `judge` and
    `judge_label` when `scores` has a judge column; a repeated item counts once, by its mean over its repeats
    (readmodel.repeats.per_item). The one state-count summary the protocols' tables call."""
    from core.scoring.judges.names import judge_label

    scores = per_item(scores, REFERENCE_ITEM_KEYS)
    metrics = [m for m in metrics if m in scores.columns]
    declared = [get_metric(m) for m in metrics]
    rows: list[dict] = []
    for keys, group in scores.groupby(list(by), sort=True):
        ci = stats.metric_intervals(group[metrics].to_numpy(dtype=float), declared)
        judge = str(group["judge"].iloc[0]) if "judge" in group else ""
        for j, metric in enumerate(metrics):
            rows.append({**dict(zip(by, keys, strict=True)), "metric": metric, "judge": judge,
                         "judge_label": judge_label(judge) if judge else "", "value": float(ci.mean[j]),
                         "ci_low": float(ci.ci_low[j]), "ci_high": float(ci.ci_high[j]), "n": int(ci.n[j]),
                         **state_count_columns(metric_states(group, metric)),
                         "interval": str(ci.method[j]), "small_n": bool(0 < ci.n[j] < stats.SMALL_N)})
    return pd.DataFrame(rows, columns=[*by, *(c for c in REFERENCE_SUMMARY_COLUMNS if c not in ("model", "condition"))])


def reference_summary(scores: pd.DataFrame, protocol: str = "reference_qa") -> pd.DataFrame:
    """Per model x condition x metric of a protocol's reference_scores: metric_summary's mean, CI, n and the count
    of every state (n_not_applicable, n_error, n_unscored and n_unparseable keep their older names beside n_scored,
    n_judge_error, n_unjudged, n_skipped); an unparseable answer counts as wrong or is left out as the metric
    declares, and is counted either way."""
    return metric_summary(scores, applicable_metrics(scores, protocol))
