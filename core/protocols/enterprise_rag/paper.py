"""EnterpriseRAG's Table 2 as `gauntlet reproduce enterprise_rag --table 2` prints it: one row per model (the
paper's order: open before closed, reasoning before standard), its inference paradigm, then Faithfulness, Answer
Coverage, Loose and Strict IAS and the Loose IAS of each constraint category, on the noisy-retrieval subset.

Every number is a cell of the Leaderboard (core.analysis.readmodel.leaderboard) for the same runs, judge and subset;
a cell without a value says which score states its responses are in (core.analysis.readmodel.states).
"""

from __future__ import annotations

import pandas as pd
from sqlalchemy.engine import Engine

from core.analysis import readmodel
from core.analysis.readmodel.states import STATE_COLUMNS, metric_state_counts, state_text
from core.analysis.stats import SMALL_N
from core.protocols.paper import Cell, PaperCell, PaperTable

TABLE2_METRICS: tuple[tuple[str, str], ...] = (
    ("faithfulness", "Faithfulness"), ("coverage", "Answer Coverage"), ("loose_ias", "Loose IAS"),
    ("strict_ias", "Strict IAS"), ("loose_persona", "Loose IAS: Persona Definition"),
    ("loose_output", "Loose IAS: Output Constraints"),
    ("loose_knowledge_protocol", "Loose IAS: Knowledge Interaction Protocol"))
SUBSETS: tuple[str, ...] = ("noisy", "gap", "conflict", "all")  # the first is the paper's Table 2
PAPER_DIFFERENCES = (
    "The paper evaluates 13 named LLMs on its own 983 instances (447 noisy; not released) with Kimi-k2-thinking "
    "judging the behavioural constraints; these rows are the models, instances and judge of the runs given.",
    "Calibration baselines (rows in the calibration group) are the product's own and not in the paper.")


def _state_of(scores: pd.DataFrame, model: str, metric: str) -> str:
    """Why a cell has no value: its responses counted by the states they are in ('12 not applicable · 2 unjudged')."""
    mine = scores[scores["model"] == model]
    if mine.empty:
        return "no responses"
    counts = metric_state_counts(mine, [metric]).iloc[0]
    totals = {state: int(counts[column]) for state, column in STATE_COLUMNS.items()}
    return state_text({k: v for k, v in totals.items() if v}, metric).removeprefix("n = ")


def _cell(row: pd.Series, scores: pd.DataFrame) -> PaperCell:
    """A Leaderboard row as a paper cell (percent, one decimal), or its state when it has no value."""
    if pd.isna(row["value"]):
        return PaperCell(None, n=int(row["n"]), state=_state_of(scores, str(row["model"]), str(row.name)))
    return PaperCell(float(row["value"]), float(row["ci_low"]), float(row["ci_high"]), n=int(row["n"]))


def _paradigm(board: pd.DataFrame, model: str) -> str:
    first = board[board["model"] == model].iloc[0]
    return "Baseline" if bool(first["is_baseline"]) else str(first["paradigm"]).capitalize()


def _notes(judge: str, subset: str, scores: pd.DataFrame, small: int) -> tuple[str, ...]:
    from core.scoring.judges.names import judge_label

    instances = scores["instance_uid"].nunique() if not scores.empty else 0
    paper_subset = "the paper's subset" if subset == "noisy" else "the paper's Table 2 is the noisy subset"
    return (f"Judge: {judge_label(judge)}. Subset: {subset} ({paper_subset}); {instances} instances, "
            f"{scores['model'].nunique() if not scores.empty else 0} models.",
            "Cells: mean in percent [95% interval] (n = responses with a value); the intervals are the Leaderboard's.",
            f"{small} cells rest on n < {SMALL_N}: read their intervals, not their ranks." if small else
            f"Every cell rests on n >= {SMALL_N}.", *PAPER_DIFFERENCES)


def table2(engine: Engine, run_ids: list[int], judge: str, settings: dict[str, str]) -> PaperTable:
    """Table 2: per model its paradigm, RAG quality, Loose and Strict IAS and the Loose IAS of each category."""
    subset = settings.get("subset", SUBSETS[0])
    scores = readmodel.filter_scores(readmodel.load_scores(engine, run_ids, judge),
                                     [] if subset == "all" else [subset])
    board = readmodel.leaderboard(scores, readmodel.model_catalog(engine)) if not scores.empty else pd.DataFrame()
    rows: list[tuple[str, tuple[Cell, ...]]] = []
    small = 0
    for model in dict.fromkeys(board["model"]) if not board.empty else []:
        cells = board[board["model"] == model].set_index("metric")
        data = [_cell(cells.loc[key], scores) for key, _ in TABLE2_METRICS]
        small += sum(1 for c in data if 0 < c.n < SMALL_N)
        rows.append((model, (_paradigm(board, model), *data)))
    columns = ("Model", "Inference Paradigm", *(label for _, label in TABLE2_METRICS))
    return PaperTable("enterprise_rag", "2", f"Performance of the models on the {subset} subset (%)", columns,
                      tuple(rows), _notes(judge, subset, scores, small))

