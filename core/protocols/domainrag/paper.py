"""DomainRAG's Table 2 (Wang et al. 2024): per setting (close book, golden reference, BM25 / dense top 1 and 3) and
model, EM, EMS, F1 and ROUGE-L on extractive and time-sensitive QA, ROUGE-L and GE on conversational and multi-doc
QA. Every cell is `analysis.ability_setting` of one metric (mean over questions, 95% CI, n, states counted)."""

from __future__ import annotations

from collections.abc import Sequence

import pandas as pd
from sqlalchemy.engine import Engine

from core.analysis import stats
from core.analysis.readmodel.states import state_totals
from core.protocols.domainrag import NAME, RELEASED_TYPES
from core.protocols.domainrag.analysis import (
    CELL_STATS,
    ability_setting,
    domainrag_scores,
    unreadable_dense_share,
    unreadable_dense_warning,
)
from core.protocols.domainrag.declarations import EM_AUTHORS, EMS_AUTHORS, F1_JIEBA, GE_PAPER, NEEDS_LLM, ROUGE_L_JIEBA
from core.protocols.paper import Cell, PaperCell, PaperTable
from core.scoring.judges.names import judge_label

EM_RULES: dict[str, dict[str, str]] = {  # setting em -> the paper's EM / EMS columns -> our metric id
    "authors": {"EM": EM_AUTHORS, "EMS": EMS_AUTHORS},  # their evaluator: as written
    "normalised": {"EM": "exact_match", "EMS": "strict_exact_match"},  # case, width and punctuation folded
}
TOKENIZERS: dict[str, dict[str, str]] = {  # setting tokenizer -> the paper's F1 / ROUGE-L columns -> our metric id
    "jieba": {"F1": F1_JIEBA, "Rouge-L": ROUGE_L_JIEBA},
    "char": {"F1": "token_f1", "Rouge-L": "rouge_l"},
}
GE_METRICS = {"paper": GE_PAPER, "product": "consistency"}  # setting ge -> the GE column's metric
BLOCKS: tuple[tuple[str, str, tuple[str, ...]], ...] = (  # (ability, its header, the paper's metrics for it)
    ("extractive", "Extractive", ("EM", "EMS", "F1", "Rouge-L")),
    ("conversational", "Conversational", ("Rouge-L", "GE")),
    ("time_sensitive", "Time-sensitive", ("EM", "EMS", "F1", "Rouge-L")),
    ("multidoc", "Multi-doc", ("Rouge-L", "GE")),
)
SETTINGS: tuple[tuple[str, str, str], ...] = (  # (row label, retriever or '', k; without a retriever: the setting)
    ("Close Book", "", "close_book"), ("Golden Reference", "", "golden"),
    ("BM25 TOP1", "bm25", "1"), ("BM25 TOP3", "bm25", "3"), ("Dense TOP1", "dense", "1"), ("Dense TOP3", "dense", "3"),
)
RETRIEVAL = {"released": "released_", "ours": ""}  # setting retrieval -> the condition prefix


def columns() -> tuple[str, ...]:
    """The header: setting, model, then '<ability> <metric>' in the paper's order."""
    return ("Setting", "Model", *(f"{header} {metric}" for _, header, metrics in BLOCKS for metric in metrics))


def row_setting(retriever: str, k: str, retrieval: str) -> str:
    """The `ability_setting` setting name of a Table 2 row under the retrieval setting."""
    return k if not retriever else f"{RETRIEVAL[retrieval]}{retriever}_top{k}"


def no_value_state(row: pd.Series | None, ability: str, setting: str) -> str:
    """Why a cell has no value: not run, not released for this ability, or the states of its responses."""
    if row is None:
        if setting.startswith("released_") and ability not in RELEASED_TYPES:
            return "the authors released no retrieval runs for this ability (use retrieval=ours)"
        return "no responses under this condition"
    counts = {"not applicable": row["n_not_applicable"], "judge error": row["n_error"],
              "unparseable": row["n_unparseable"], "unjudged": row["n_unscored"], "skipped": row["n_skipped"]}
    named = [f"{k} {int(v)}" for k, v in counts.items() if v]
    return ", ".join(named) or "no scored responses"


def paper_cell(row: pd.Series | None, ability: str, setting: str) -> PaperCell:
    """One cell from an ability_setting row (None: no responses for it)."""
    if row is None or int(row["n"]) == 0 or pd.isna(row["value"]):
        return PaperCell(None, n=0 if row is None else int(row["n"]), state=no_value_state(row, ability, setting))
    return PaperCell(float(row["value"]), float(row["ci_low"]), float(row["ci_high"]), int(row["n"]))


def _lookup(frames: dict[str, pd.DataFrame]) -> dict[tuple[str, str, str, str], pd.Series]:
    return {(metric, r["model"], r["ability"], r["setting"]): r
            for metric, frame in frames.items() for _, r in frame.iterrows()}


def _notes(judge: str, settings: dict[str, str], sizes: list[int]) -> tuple[str, ...]:
    tokenizer = ("the authors' (jieba segmentation; F1 over the characters of the segmented text)"
                 if settings["tokenizer"] == "jieba" else "ours (by character, normalised)")
    retrieval = ("the authors' released BM25 / BGE runs over their full corpus (none for multi-doc)"
                 if settings["retrieval"] == "released" else "our BM25 / embedder over the 2,353-passage corpus slice")
    ge = ("the paper's criteria (agreement, coverage, nothing beyond the golden answer), 0-5 / 5" if settings["ge"] ==
          "paper" else "the product's consistency (extra correct detail allowed), 0-5 / 5")
    em = ("the authors' (as written, no normalisation)" if settings.get("em", "authors") == "authors" else
          "normalised (case, width and punctuation folded; not the authors')")
    notes = [f"Judge: {judge_label(judge)}; GE (ge={settings['ge']}): {ge}.",
             f"Settings: em={settings.get('em', 'authors')}: EM and EMS {em}; "
             f"tokenizer={settings['tokenizer']}: F1 and ROUGE-L {tokenizer}; "
             f"retrieval={settings['retrieval']}: {retrieval}.",
             "Values x 100 (the paper prints shares 0-1); 95% CI in brackets; n = questions.",
             "Differs from the paper: the models are yours; GE is graded by the scoring judge with our prompt "
             "on their criteria, not by GPT-4 with theirs; EM is the best alternative's share of parts contained, "
             "as theirs."]
    small = [n for n in sizes if 0 < n < stats.SMALL_N]
    if settings["ge"] == "paper" and not judge.startswith("llm:"):
        notes.append(f"GE cells are not applicable: {NEEDS_LLM}; ge=product gives the heuristic's token F1.")
    if small:
        notes.append(f"Small n (< {stats.SMALL_N}) in {len(small)} of {len(sizes)} cells (smallest n = {min(small)}): "
                     "read their intervals, not their means.")
    return tuple(notes)


def table_2(engine: Engine, run_ids: Sequence[int], judge: str, settings: dict[str, str]) -> PaperTable:
    """Table 2 for these runs: rows setting x model, columns ability x metric, every cell with CI and n."""
    scores = domainrag_scores(engine, run_ids, judge)
    chosen = (EM_RULES[settings.get("em", "authors")] | TOKENIZERS[settings["tokenizer"]]
              | {"GE": GE_METRICS[settings["ge"]]})
    metrics = sorted({chosen[m] for _, _, names in BLOCKS for m in names})
    cells = _lookup({m: ability_setting(scores, judge, m) for m in metrics})
    models = sorted(scores["model"].dropna().unique()) if not scores.empty else []
    rows: list[tuple[str, tuple[Cell, ...]]] = []
    sizes: list[int] = []
    behind: list[pd.Series] = []  # the ability_setting rows behind the cells, for the states line
    for label, retriever, k in SETTINGS:
        setting = row_setting(retriever, k, settings["retrieval"])
        for model in models:
            row: list[Cell] = [str(model)]
            for ability, _, names in BLOCKS:
                for name in names:
                    found = cells.get((chosen[name], model, ability, setting))
                    cell = paper_cell(found, ability, setting)
                    behind += [] if found is None else [found]
                    sizes.append(cell.n)
                    row.append(cell)
            rows.append((label, tuple(row)))
    share = unreadable_dense_share(scores) if settings["retrieval"] == "ours" else None
    notes = _notes(judge, settings, sizes) + ((unreadable_dense_warning(share),) if share is not None else ())
    return PaperTable(NAME, "2", "DomainRAG Table 2: overall results by setting and model", columns(), tuple(rows),
                      notes, dict(state_totals(pd.DataFrame(behind).reindex(columns=CELL_STATS))))

