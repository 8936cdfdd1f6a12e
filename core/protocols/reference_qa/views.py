"""The reference-answer protocol's page view: instruction adherence (Loose / Strict IAS, FollowRAG's instruction
score) of the responses whose instance has its own instructions, beside the reference-answer metric of the same
responses (no streamlit here: the generic Protocol views page renders it)."""

from __future__ import annotations

from collections.abc import Sequence

import pandas as pd
from sqlalchemy.engine import Engine

from core.analysis import readmodel
from core.metrics import BENCHMARK_MEASURES, get_metric
from core.protocols.base import ViewResult

ANSWER_METRIC = "exact_match"
_CELL = ["value", "ci_low", "ci_high", "n"]


def _wide(summary: pd.DataFrame) -> pd.DataFrame:
    """One row per model and condition, each metric's value, CI bounds and n as columns."""
    if summary.empty:
        return pd.DataFrame(columns=["model", "condition"])
    parts = []
    for metric, rows in summary.groupby("metric", sort=False):
        cells = rows.set_index(["model", "condition"])[_CELL]
        parts.append(cells.rename(columns={c: metric if c == "value" else f"{metric}_{c}" for c in _CELL}))
    return pd.concat(parts, axis=1).reset_index()


def instruction_view(engine: Engine, run_ids: Sequence[int], judge: str) -> ViewResult:
    """Per model and condition: Loose IAS, Strict IAS, the instruction score and exact match on the same responses,
    each with its 95% CI and n, and the responses left out (an instruction in error or unjudged)."""
    scores = readmodel.instruction_scores(engine, run_ids, judge)
    answers = readmodel.reference_scores(engine, run_ids, judge)
    answers = answers[answers["response_id"].isin(scores["response_id"])]
    summary = readmodel.instruction_summary(scores, judge)
    answer_rows = readmodel.reference_summary(answers) if not answers.empty else summary.iloc[0:0]
    table = _wide(pd.concat([summary, answer_rows[answer_rows["metric"] == ANSWER_METRIC]], ignore_index=True))
    left_out = summary[summary["metric"] == "strict_ias"].set_index(["model", "condition"])[["n_error", "n_unscored"]]
    table = table.join(left_out, on=["model", "condition"]) if not table.empty else table
    caption = (f"Responses whose instance carries its own instructions (FollowRAG): Loose IAS is the mean share of a "
               f"response's instructions followed, Strict IAS the share of responses following all of them (left "
               f"out where an instruction is in error or unjudged: n_error, n_unscored), the instruction score "
               f"FollowRAG's share of all instructions followed by IFEval's loose rule; "
               f"{get_metric(ANSWER_METRIC).label} of the same responses beside them. 95% intervals; n responses.")
    return ViewResult(table, caption)


def benchmark_view(engine: Engine, run_ids: Sequence[int], judge: str) -> ViewResult:
    """Per model, condition and measure: each imported benchmark's own measures (RGB, RAMDocs, CRAG, FollowRAG;
    core.scoring.benchmarks) with the mean, its 95% CI, n and the count of every state behind it."""
    scores = readmodel.reference_scores(engine, run_ids, judge)
    summary = readmodel.reference_summary(scores) if not scores.empty else pd.DataFrame()
    measures = summary[summary["metric"].isin(BENCHMARK_MEASURES)] if not summary.empty else summary
    states = list(readmodel.STATE_COLUMNS.values())
    if measures.empty:
        table = pd.DataFrame(columns=["model", "condition", "measure", *_CELL, *states])
    else:
        table = measures.assign(measure=measures["metric"].map(lambda m: get_metric(m).label))
        table = table[["model", "condition", "measure", *_CELL, *[c for c in states if c in table.columns]]]
    caption = ("Each imported benchmark's own measures, as its authors define them (core/scoring/benchmarks.py): "
               "RGB accuracy, rejection on negatives-only prompts, error detection and correction, integration; "
               "RAMDocs all gold and no wrong answer; CRAG correct / missing / hallucinated and its score (−1 to 1); "
               "FollowRAG answer accuracy. A measure is not applicable outside its benchmark's instances. "
               "95% intervals; n responses scored, and the count of each state beside it.")
    return ViewResult(table.reset_index(drop=True), caption)
