"""RAG-Stress's main table as `gauntlet reproduce misleading_evidence --table 1` prints it: per dataset (and language),
one row per model and one for the mean over models; columns clean accuracy, MR under the two source-priority policies
at the three positions, and the policy gap. Every cell comes from core.protocols.misleading_evidence.analysis."""

from __future__ import annotations

import math
from collections.abc import Mapping

import pandas as pd
from sqlalchemy.engine import Engine

from core.analysis.readmodel.states import state_totals
from core.metrics import ScoreState
from core.protocols.misleading_evidence import CLEAN, MISLEADING_CONDITIONS, NAME, analysis
from core.protocols.paper import PaperCell, PaperTable
from core.scoring.judges.names import judge_label

TITLE = "Table 1. Clean accuracy, misleading rate (MR) by source-priority policy and position, and the policy gap"
POLICY_SHORT = {"documents": "docs", "prior_knowledge": "prior"}
COLUMNS: tuple[str, ...] = ("Dataset · model", "Clean acc.",
                            *(f"MR {POLICY_SHORT[policy]} · {position}"
                              for policy, position in MISLEADING_CONDITIONS.values()),
                            "Gap docs − prior")
MEAN_ROW = "mean over models"
NO_CLEAN = "no scored clean-evidence answer"
NO_KNOWN = "no closed-book-correct question"
NO_JUDGED = "no judged answer on the closed-book-correct questions"


def _value(x: object) -> float | None:
    return None if x is None or (isinstance(x, float) and math.isnan(x)) else float(x)  # type: ignore[arg-type]


def _cell(value: object, low: object, high: object, n: int, state: str) -> PaperCell:
    v = _value(value)
    if v is None:
        return PaperCell(None, n=int(n), state=state)
    return PaperCell(v, _value(low), _value(high), int(n))


def _model_cells(model: str, acc: pd.DataFrame, rates: pd.DataFrame, gap: pd.DataFrame) -> tuple[PaperCell, ...]:
    clean = acc[(acc["model"] == model) & (acc["condition"] == CLEAN)]
    first = clean.iloc[0] if not clean.empty else None
    cells = [_cell(first["accuracy"], first["ci_low"], first["ci_high"], first["n"], NO_CLEAN) if first is not None
             else PaperCell(None, state=NO_CLEAN)]
    mine = rates[rates["model"] == model].set_index("condition")
    for condition in MISLEADING_CONDITIONS:
        row = mine.loc[condition]
        state = NO_KNOWN if row["n_closed_book_correct"] == 0 else NO_JUDGED
        cells.append(_cell(row["mr"], row["mr_low"], row["mr_high"], row["n"], state))
    pooled = gap[(gap["model"] == model) & (gap["position"] == analysis.ALL_POSITIONS)].iloc[0]
    cells.append(_cell(pooled["gap"], pooled["gap_low"], pooled["gap_high"], pooled["n_pairs"], NO_JUDGED))
    return tuple(cells)


def _mean_cells(means: pd.DataFrame) -> tuple[PaperCell, ...]:
    by = means.set_index("condition")
    order = [CLEAN, *MISLEADING_CONDITIONS, analysis.ALL_POSITIONS]
    return tuple(_cell(by.loc[c, "mean"], by.loc[c, "ci_low"], by.loc[c, "ci_high"], by.loc[c, "n_questions"],
                       NO_CLEAN if c == CLEAN else NO_JUDGED) for c in order)


def _small(table_rows: list[tuple[str, tuple[PaperCell, ...]]]) -> list[str]:
    return [label for label, cells in table_rows if any(0 < c.n < 30 for c in cells)]


def table_states(acc: pd.DataFrame, rates: pd.DataFrame) -> dict[ScoreState, int]:
    """The score states behind the model rows' accuracy and MR cells, summed over them (the mean rows and the gap
    reuse those responses)."""
    clean, misled = state_totals(acc[acc["condition"] == CLEAN]), state_totals(rates)
    return {state: clean.get(state, 0) + misled.get(state, 0) for state in {**clean, **misled}}


def table_1(engine: Engine, run_ids: list[int], judge: str, settings: Mapping[str, str]) -> PaperTable:
    """RAG-Stress Table 1 for these runs under `judge`: per dataset, each model and the mean over models."""
    out = analysis.load_outcomes(engine, run_ids, judge)
    rates, acc, gap, means = (analysis.misleading_rates(out), analysis.accuracy(out), analysis.policy_gap(out),
                              analysis.model_means(out))
    rows: list[tuple[str, tuple[PaperCell, ...]]] = []
    for dataset in sorted(out["dataset"].unique()):
        pick = lambda frame, d=dataset: frame[frame["dataset"] == d]  # noqa: E731
        for model in sorted(pick(rates)["model"].unique()):
            rows.append((f"{dataset} · {model}", _model_cells(model, pick(acc), pick(rates), pick(gap))))
        rows.append((f"{dataset} · {MEAN_ROW}", _mean_cells(pick(means))))
    small = _small(rows)
    notes = (f"Judge: {judge_label(judge)} (lexical reference metrics: MCQ letter, exact-match containment).",
             "Values in %, [95% CI], n. Clean accuracy on every question answered; MR on each model's "
             "closed-book-correct questions (Clopper-Pearson); gap = MR(prioritise the documents) − MR(may rely on "
             "prior knowledge) over all positions, in percentage points, on the same questions (bootstrap over "
             "questions).",
             f"'{MEAN_ROW}': each model's own figure, then the mean over the models; 95% bootstrap interval that "
             "resamples questions, n = questions.",
             "Datasets and languages are never pooled: English and Chinese MedQA are separate rows.",
             "Small n (n < 30) in: " + ("; ".join(small) if small else "none") + ".",
             "Differences from the paper: only HotpotQA questions with a safe one-sentence edit are built; MedQA "
             "evidence is our own review note (the slices have no passages); the models and the judge are yours. "
             "See docs/misleading_evidence.md, 'Paper versus product'.")
    return PaperTable(NAME, "1", TITLE, COLUMNS, tuple(rows), notes, table_states(acc, rates))
