"""The `gauntlet report` content and its JSON document."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd
from sqlalchemy.engine import Engine
from sqlalchemy.orm import Session

from core.analysis.readmodel.instructions import instruction_scores, instruction_summary
from core.analysis.readmodel.leaderboard import GAP_ASSUMPTION, GAP_KEY, LONG_COLUMNS, gap_bounds, leaderboard
from core.analysis.readmodel.reference import (
    PRODUCTION_PROTOCOL,
    REFERENCE_ITEM_KEYS,
    reference_metric_names,
    reference_scores,
    reference_summary,
)
from core.analysis.readmodel.repeats import latest_run_rows, repeat_summary, repeat_text
from core.analysis.readmodel.responses import RULE_JUDGE, response_scores
from core.analysis.readmodel.runs import generation_summary, run_judges
from core.analysis.readmodel.scope import (
    MODES,
    QUALITY_METRICS,
    filter_scores,
    latest_per_model_instance,
    model_catalog,
    prepare_scores,
)
from core.analysis.readmodel.sections import ProtocolSection, protocol_sections
from core.scoring.summaries import METRIC_NAMES
from core.store.models import Run


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
    reference: pd.DataFrame | None = None  # reference_summary rows (and instruction rows) of reference-answer instances
    production: pd.DataFrame | None = None  # the same summary for production_rag instances (imported traces)
    sections: tuple[ProtocolSection, ...] = ()  # per protocol of the run: its metrics with the count of each state
    repeats: pd.DataFrame | None = None  # run_repeats: per model repeats per item, items, flaky items (empty: none)
    gap_bounds: pd.DataFrame | None = None  # leaderboard.gap_bounds: the gap's worst-case bound per model


def run_report(engine: Engine, run_id: int, judge: str | None = None, modes: Sequence[str] = ()) -> RunReport:
    """The `gauntlet report` content: the same leaderboard the dashboards show, for one run and one judge.

    With no judge given, the run's only judge is used; several judges raise ValueError naming them. `modes` narrows
    the EnterpriseRAG responses to those subsets (noisy, gap, conflict; empty: all), as the dashboards' subset filter.
    """
    from core.scoring.judges.names import judge_label

    unknown = [m for m in modes if m not in MODES]
    if unknown:
        raise ValueError(f"unknown subset {unknown[0]!r}; subsets: {', '.join(MODES)}")
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
    responses = response_scores(engine, [run_id], judge)
    scores = filter_scores(prepare_scores(latest_per_model_instance(responses)), modes)
    board = leaderboard(scores, model_catalog(engine))
    counts = model_counts(scores)
    reference = reference_scores(engine, [run_id], judge)
    summary = with_instructions(reference_summary(reference) if not reference.empty else None,
                                instruction_scores(engine, [run_id], judge), judge)
    production = reference_scores(engine, [run_id], judge, PRODUCTION_PROTOCOL)
    production_summary = reference_summary(production, PRODUCTION_PROTOCOL) if not production.empty else None
    repeats = run_repeats(responses, reference, production)
    note = "; ".join(filter(None, (f"EnterpriseRAG subset: {', '.join(modes)}" if modes else "",
                                   repeat_text(repeats))))
    return RunReport(run_id, judge, judge_label(judge), generation, board, counts, note=note, reference=summary,
                     production=production_summary, sections=tuple(protocol_sections(engine, run_id, judge, scores)),
                     repeats=repeats, gap_bounds=gap_bounds(scores))


def enterprise_repeats(engine: Engine, run_ids: Sequence[int], judge: str) -> pd.DataFrame:
    """Per model of the runs' EnterpriseRAG responses (the latest run of each item): repeats per item, items and
    flaky items (readmodel.repeats.repeat_summary); empty without repeats."""
    return repeats_from_responses(response_scores(engine, run_ids, judge))


def repeats_from_responses(responses: pd.DataFrame) -> pd.DataFrame:
    """enterprise_repeats from an already read per-response frame (response_scores)."""
    return repeat_summary(latest_run_rows(responses), [m.id for m in QUALITY_METRICS])


def run_repeats(responses: pd.DataFrame, reference: pd.DataFrame, production: pd.DataFrame) -> pd.DataFrame:
    """Per model of a repeated run (readmodel.repeats.repeat_summary over its EnterpriseRAG, reference and
    production responses): repeats per item, items and flaky items; empty without repeats."""
    parts = [repeat_summary(responses, [m.id for m in QUALITY_METRICS]),
             repeat_summary(reference, reference_metric_names(), REFERENCE_ITEM_KEYS),
             repeat_summary(production, reference_metric_names(PRODUCTION_PROTOCOL), REFERENCE_ITEM_KEYS)]
    found = [p for p in parts if not p.empty]
    if not found:
        return parts[0]
    both = pd.concat(found, ignore_index=True).groupby("model", sort=True)
    return both.agg(repeats=("repeats", "max"), items=("items", "sum"), flaky_items=("flaky_items", "sum")).reset_index()


def with_instructions(summary: pd.DataFrame | None, instructions: pd.DataFrame, judge: str) -> pd.DataFrame | None:
    """The reference summary with the instruction rows (Loose / Strict IAS, instruction score) of the responses
    whose instance has instructions beside each model and condition's reference metrics."""
    if instructions.empty:
        return summary
    rows = instruction_summary(instructions, judge)
    both = rows if summary is None else pd.concat([summary, rows], ignore_index=True)
    return both.sort_values(["model", "condition"], kind="stable", ignore_index=True)


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
        if GAP_KEY in metrics_doc:
            metrics_doc[GAP_KEY] |= _gap_entry(report.gap_bounds, model)
        out.append({"model": model,
                    "generation": {k: _num(v) for k, v in gen.loc[model].items()} if model in gen.index else {},
                    "counts": {k: int(v) for k, v in counts.loc[model].items()} if model in counts.index else {},
                    "metrics": metrics_doc})
    reference = [] if report.reference is None else _records(report.reference)
    production = [] if report.production is None else _records(report.production)
    protocols = {s.protocol: {"title": s.title, "metrics": _records(s.table)} for s in report.sections}
    return {"run": report.run_id, "judge": report.judge, "judge_label": report.judge_label, "note": report.note,
            "models": out, "reference_metrics": reference, "production_metrics": production, "protocols": protocols,
            "failed": failures, **_repeats_entry(report)}


def _gap_entry(bounds: pd.DataFrame | None, model: str) -> dict:
    """The gap's stated assumption and its worst-case bound for one model (None where not computable)."""
    row = bounds[bounds["model"] == model] if bounds is not None else pd.DataFrame()
    bound = ([_num(row["bound_low"].iloc[0]), _num(row["bound_high"].iloc[0])] if len(row) else None)
    return {"assumption": GAP_ASSUMPTION, "worst_case_bound": bound}


def _repeats_entry(report: RunReport) -> dict:
    """The document's 'repeats' entry for a repeated run (per model: repeats, items, flaky_items); none otherwise."""
    if report.repeats is None or report.repeats.empty:
        return {}
    return {"repeats": _records(report.repeats)}


def _records(frame: pd.DataFrame) -> list[dict]:
    """The frame's rows as JSON-ready dicts."""
    return [{k: _num(v) for k, v in row.items()} for row in frame.to_dict("records")]


def _num(value):
    """A JSON-safe scalar: NaN becomes None, numpy scalars become Python numbers."""
    if value is None:
        return None
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, float) and np.isnan(value):
        return None
    return value
