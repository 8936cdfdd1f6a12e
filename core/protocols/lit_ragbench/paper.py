"""LIT-RAGBench's main table as the paper prints it (Table 2: one row per model, the five category accuracies for
Japanese then English), with the category average (the paper's overall accuracy) and the over-abstention rate (its
Table 3) beside each language. Every number is core.protocols.lit_ragbench.analysis's, under one prompt setting."""

from __future__ import annotations

from typing import Any

import pandas as pd

from core.analysis import stats
from core.analysis.readmodel.states import state_totals
from core.protocols.lit_ragbench import CATEGORIES, NAME
from core.protocols.lit_ragbench.analysis import lit_report, undetermined_text
from core.protocols.lit_ragbench.authors import AUTHORS_JUDGE_MODEL
from core.protocols.lit_ragbench.released import PAPER, SETTING_CONDITIONS
from core.protocols.paper import PaperCell, PaperTable
from core.scoring.judges.names import judge_label

LANGUAGES = (("ja", "Japanese"), ("en", "English"))  # the paper's column order
AVERAGE = "Avg"
OVER_ABSTENTION = "Over-abstention"
COLUMNS_PER_LANGUAGE = (*CATEGORIES, AVERAGE, OVER_ABSTENTION)
TITLE = ("Table 2: accuracy per category, category average and over-abstention (Table 3) per model, Japanese and "
         "English")


def table_columns() -> tuple[str, ...]:
    """'Model', then per language (ja, en) the five categories, the category average and over-abstention."""
    return ("Model", *(f"{language} {column}" for language, _ in LANGUAGES for column in COLUMNS_PER_LANGUAGE))


def _missing(counts: Any, what: str) -> PaperCell:
    """A cell with no value and why: its responses' states, or that there are none."""
    if counts is None:
        return PaperCell(None, state=f"no {what}")
    left = {k: int(counts.get(k, 0)) for k in ("n_error", "n_unscored", "n_not_applicable") if counts.get(k, 0)}
    reason = ", ".join(f"{k.removeprefix('n_').replace('_', ' ')} {v}" for k, v in left.items())
    return PaperCell(None, state=reason or f"no {what}")


def _cell(value: Any, low: Any, high: Any, n: Any) -> PaperCell:
    return PaperCell(float(value), float(low), float(high), int(n))


def _category_cell(cells: pd.DataFrame, key: str) -> PaperCell:
    found = cells[cells["key"] == key]
    if found.empty:
        return _missing(None, "questions of this category")
    row = found.iloc[0]
    return _missing(row, "scored responses") if pd.isna(row["value"]) else _cell(row["value"], row["ci_low"],
                                                                               row["ci_high"], row["n"])


def _average_cell(overall: pd.DataFrame) -> PaperCell:
    if overall.empty:
        return _missing(None, "responses")
    row = overall.iloc[0]
    if int(row["n_categories"]) < len(CATEGORIES) or pd.isna(row["value"]):
        return PaperCell(None, n=int(row["n"]),
                         state=f"{int(row['n_categories'])}/{len(CATEGORIES)} categories scored")
    return _cell(row["value"], row["ci_low"], row["ci_high"], row["n"])


def _abstention_cell(abstention: pd.DataFrame) -> PaperCell:
    if abstention.empty:
        return _missing(None, "responses")
    row = abstention.iloc[0]
    if pd.isna(row["over_abstention"]):
        return PaperCell(None, state=f"undetermined: {undetermined_text(row)}" if row["oa_undetermined"]
                         else "no answerable questions")
    return _cell(row["over_abstention"], row["oa_ci_low"], row["oa_ci_high"], row["oa_n"])


def _select(frame: pd.DataFrame, model: str, language: str) -> pd.DataFrame:
    return frame[(frame["model"] == model) & (frame["language"] == language)]


def language_cells(report: dict[str, pd.DataFrame], model: str, language: str) -> list[PaperCell]:
    """One model's seven cells for one language: the five categories, the average, over-abstention."""
    cells = _select(report["categories"], model, language)
    return [*(_category_cell(cells, c) for c in CATEGORIES), _average_cell(_select(report["overall"], model, language)),
            _abstention_cell(_select(report["abstention"], model, language))]


def _small_cells(rows: list[tuple[str, tuple[PaperCell, ...]]], columns: tuple[str, ...]) -> list[str]:
    return [f"{label} / {column} (n = {cell.n})" for label, cells in rows
            for column, cell in zip(columns[1:], cells, strict=True) if cell.value is not None and cell.n < stats.SMALL_N]


def table_notes(setting: str, judge: str, rows: list[tuple[str, tuple[PaperCell, ...]]],
                columns: tuple[str, ...]) -> tuple[str, ...]:
    """Judge, prompt setting, small-n cells and what differs from the paper."""
    prompts = ("prompts=paper: the authors' released generator and judge prompts, read at run time from the dataset's "
               "prompts/ folder, in the messages their run.py builds (its layout, document order and judge output "
               f"format; condition paper_prompts); the authors' judge is {AUTHORS_JUDGE_MODEL}"
               if setting == PAPER else
               "prompts=product: the product's own generator and judge prompts (default condition); its generator "
               "prompt asks for the question's unit, which removes a failure the paper reports (§5.4.3)")
    small = _small_cells(rows, columns)
    return (f"judge: {judge_label(judge)} (the authors' run.py judges with {AUTHORS_JUDGE_MODEL}); accuracy is the judge's 1/0, a question counts "
            "for every category of its aspects; Avg is the unweighted mean of the five category accuracies",
            prompts,
            "Over-abstention: share of answerable (non-Abstention) questions declined and judged wrong (the paper's "
            "Table 3; its ja/en mean column is not repeated); whether an answer declines is judged by the product's "
            "refusal prompt under both settings",
            "every cell: value [95% CI] (n = questions); the paper prints point values only",
            "small n (< 30): " + ("; ".join(small) if small else "none"))


def table_2(engine: Any, run_ids: list[int], judge: str, settings: dict[str, str]) -> PaperTable:
    """The paper's Table 2 (with its Table 3 over-abstention) for these runs under `judge` and one prompt setting."""
    setting = settings.get("prompts", PAPER)
    condition = SETTING_CONDITIONS[setting]
    report = lit_report(engine, run_ids, judge)
    report = {k: v[v["condition"] == condition] if "condition" in v else v for k, v in report.items()}
    models = list(dict.fromkeys(report["overall"]["model"]))
    if not models:
        raise ValueError(f"runs {run_ids} hold no judged lit_ragbench responses under prompts={setting} "
                         f"(condition {condition or 'default'!r}) for judge {judge}")
    columns = table_columns()
    rows = [(model, tuple(cell for language, _ in LANGUAGES for cell in language_cells(report, model, language)))
            for model in models]
    return PaperTable(NAME, "2", TITLE, columns, tuple(rows), table_notes(setting, judge, rows, columns),
                      dict(state_totals(report["categories"][report["categories"]["model"].isin(models)])))
