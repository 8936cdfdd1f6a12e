"""`gauntlet report`'s per-protocol sections: for every protocol present in a run, every response metric it declares
per model and condition with mean, CI and n, and the count of each score state beside them (core.metrics.STATES).

Generic over the protocol registry: a protocol joins with its metric declarations, with no edit here. EnterpriseRAG
reads its prepared scores (core.analysis.readmodel.scope), every other protocol `reference_scores`.
"""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd
from sqlalchemy.engine import Engine

from core.analysis.readmodel.instructions import instruction_scores, instruction_summary
from core.analysis.readmodel.reference import (
    applicable_metrics,
    metric_states,
    reference_metric_names,
    reference_scores,
    reference_summary,
)
from core.analysis.readmodel.responses import read_sql
from core.analysis.readmodel.states import count_states
from core.metrics import STATES, get_metric
from core.protocols import DEFAULT_PROTOCOL, constraint_protocols

GROUP = ["model", "condition"]
STATE_COLUMNS = [f"n_{state}" for state in STATES]
SECTION_COLUMNS = ["model", "condition", "metric", "label", "value", "ci_low", "ci_high", "n", *STATE_COLUMNS,
                   "interval", "small_n"]
SUMMARY_KEEP = ["model", "condition", "metric", "value", "ci_low", "ci_high", "n", "interval", "small_n"]

_RUN_PROTOCOLS_SQL = """
SELECT DISTINCT i.protocol FROM response r JOIN instance i ON i.id = r.instance_id WHERE r.run_id = :run
"""

_SKIPPED_SQL = """
SELECT m.name AS model, r.condition, COUNT(*) AS n_skipped
FROM response r JOIN instance i ON i.id = r.instance_id JOIN model m ON m.id = r.model_id
WHERE r.run_id = :run AND r.status <> 'done' AND i.protocol = :protocol
GROUP BY m.name, r.condition
"""


@dataclass(frozen=True)
class ProtocolSection:
    """One protocol's part of the report: its id and title, and its SECTION_COLUMNS rows."""

    protocol: str
    title: str
    table: pd.DataFrame


def run_protocols(engine: Engine, run_id: int) -> list[str]:
    """The protocols of the run's instances that declare response metrics: EnterpriseRAG first, then by id."""
    present = set(read_sql(engine, _RUN_PROTOCOLS_SQL, {"run": int(run_id)})["protocol"].fillna(DEFAULT_PROTOCOL))
    return sorted((p for p in present if reference_metric_names(p)), key=lambda p: (p != DEFAULT_PROTOCOL, p))


def protocol_sections(engine: Engine, run_id: int, judge: str, enterprise_scores: pd.DataFrame) -> list[ProtocolSection]:
    """One section per protocol of the run with response metrics; EnterpriseRAG's from its prepared scores."""
    from core.protocols import get_protocol

    sections = []
    for protocol in run_protocols(engine, run_id):
        scores = _enterprise_frame(enterprise_scores, judge) if protocol in constraint_protocols() else \
            reference_scores(engine, [run_id], judge, protocol)
        skipped = read_sql(engine, _SKIPPED_SQL, {"run": int(run_id), "protocol": protocol})
        table = section_table(scores, protocol, skipped)
        if protocol not in constraint_protocols() and "constraint" in get_protocol(protocol).metrics:
            table = pd.concat([table, instruction_rows(engine, run_id, judge, protocol, skipped)], ignore_index=True)
        sections.append(ProtocolSection(protocol, get_protocol(protocol).title, table))
    return sections


def instruction_rows(engine: Engine, run_id: int, judge: str, protocol: str, skipped: pd.DataFrame) -> pd.DataFrame:
    """Loose IAS, Strict IAS and the instruction score of a protocol whose instances carry instructions (FollowRAG's
    in reference_qa), in the section's columns: scored (n), judge error (an instruction in error), unjudged."""
    scores = instruction_scores(engine, [run_id], judge, protocol)
    if scores.empty:
        return pd.DataFrame(columns=SECTION_COLUMNS)
    summary = instruction_summary(scores, judge)
    rows = summary.drop(columns=[c for c in skipped.columns if c not in GROUP and c in summary]).merge(
        skipped, on=GROUP, how="left")
    rows = rows.assign(n_scored=rows["n"], n_judge_error=rows["n_error"], n_unjudged=rows["n_unscored"],
                       label=rows["metric"].map(lambda m: get_metric(m).label))
    rows[STATE_COLUMNS] = rows[STATE_COLUMNS].fillna(0).astype(int)
    return rows.reindex(columns=SECTION_COLUMNS)


def section_table(scores: pd.DataFrame, protocol: str, skipped: pd.DataFrame) -> pd.DataFrame:
    """Per model x condition x metric: reference_summary's mean, CI and n, with the count of every state beside it;
    a model and condition whose items all failed generation still shows, its items counted as skipped."""
    metrics = applicable_metrics(scores, protocol)
    summary = reference_summary(scores, protocol)[SUMMARY_KEEP] if not scores.empty else \
        pd.DataFrame(columns=SUMMARY_KEEP)
    counts = state_counts(scores, metrics)
    keys = skipped[GROUP].merge(pd.DataFrame({"metric": metrics}), how="cross")
    table = summary.merge(counts, on=[*GROUP, "metric"], how="outer").merge(keys, on=[*GROUP, "metric"], how="outer")
    table = table.merge(skipped.rename(columns={"n_skipped": "n_not_generated"}), on=GROUP, how="left")
    table["n_skipped"] = table["n_skipped"].fillna(0) + table["n_not_generated"].fillna(0)
    table[STATE_COLUMNS] = table[STATE_COLUMNS].fillna(0).astype(int)
    table["n"] = table["n"].fillna(0).astype(int)
    table["small_n"] = table["small_n"].astype(object).where(table["small_n"].notna(), False).astype(bool)
    table["label"] = table["metric"].map(lambda m: get_metric(m).label)
    order = {m: i for i, m in enumerate(metrics)}
    table = table.sort_values([*GROUP, "metric"], key=lambda c: c.map(order) if c.name == "metric" else c)
    return table.reindex(columns=SECTION_COLUMNS).reset_index(drop=True)


def state_counts(scores: pd.DataFrame, metrics: list[str]) -> pd.DataFrame:
    """Per model x condition x metric, the count of every state of the done responses (no verdict: unjudged, or
    skipped where the metric is not computed in the instance's mode); items whose generation failed are added by
    section_table."""
    rows = []
    for (model, condition), group in scores.groupby(GROUP, sort=True):
        for metric in metrics:
            counts = count_states(metric_states(group, metric))
            rows.append({"model": model, "condition": condition, "metric": metric,
                         **{f"n_{state}": counts[state] for state in STATES}})
    return pd.DataFrame(rows, columns=[*GROUP, "metric", *STATE_COLUMNS])


def _enterprise_frame(scores: pd.DataFrame, judge: str) -> pd.DataFrame:
    """EnterpriseRAG's prepared scores in reference_scores' layout: one condition (''), the judge named."""
    return scores.assign(condition="", judge=judge)
