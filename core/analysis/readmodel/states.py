"""Score-state counts beside every mean: how many responses behind a number were scored, not applicable,
unparseable, judge errors, unjudged or skipped, counted once from the stored verdict statuses, and the one sentence
that every table caption, chart caption and CSV of the results pages shows for them."""

from __future__ import annotations

from collections.abc import Mapping

import pandas as pd

from core.metrics import STATES, ScoreState, get_metric

# score state -> the count column every summary frame carries for it (the existing names where they were in use)
STATE_COLUMNS: dict[ScoreState, str] = {"scored": "n_scored", "not_applicable": "n_not_applicable",
                                        "unparseable": "n_unparseable", "judge_error": "n_error",
                                        "unjudged": "n_unscored", "skipped": "n_skipped"}
# score state -> the stored verdict status that holds it (unjudged: no verdict of the judge, a missing status)
STATE_STATUSES: dict[ScoreState, str] = {"scored": "ok", "not_applicable": "not_applicable",
                                         "unparseable": "unparseable", "judge_error": "error", "skipped": "skipped"}
_WORDS: dict[ScoreState, tuple[str, str]] = {"scored": ("scored", "scored"),
                                             "not_applicable": ("not applicable", "not applicable"),
                                             "unparseable": ("unparseable", "unparseable"),
                                             "judge_error": ("judge error", "judge errors"),
                                             "unjudged": ("unjudged", "unjudged"), "skipped": ("skipped", "skipped")}


def state_counts(statuses: pd.Series) -> dict[str, int]:
    """The count column of each score state among stored verdict statuses (None or NaN: unjudged)."""
    counts = {STATE_COLUMNS[state]: int((statuses == status).sum()) for state, status in STATE_STATUSES.items()}
    return {**counts, STATE_COLUMNS["unjudged"]: int(statuses.isna().sum())}


def state_columns(frame: pd.DataFrame) -> dict[str, pd.Series]:
    """The state count columns of a summary frame under readable headers, for a table that shows them beside its
    means ("scored", "not applicable", "unparseable", "judge errors", "unjudged", "skipped")."""
    return {_WORDS[state][1]: frame[column] for state, column in STATE_COLUMNS.items() if column in frame.columns}


def state_totals(frame: pd.DataFrame) -> dict[ScoreState, int]:
    """Each state's count summed over the rows of a summary frame (the states whose column it carries)."""
    return {state: int(pd.to_numeric(frame[column], errors="coerce").fillna(0).sum())
            for state, column in STATE_COLUMNS.items() if column in frame.columns}


def _unparseable_note(metric: str | None) -> str:
    if metric is None:
        return ""
    return " (counted as wrong)" if get_metric(metric).counts_unparseable_as_wrong else " (left out)"


def state_text(totals: Mapping[ScoreState, int], metric: str | None = None) -> str:
    """'n = 412 scored · 3 unparseable (counted as wrong) · 2 judge errors · 11 not applicable · 0 unjudged ·
    0 skipped': every state counted, zeros included; `metric` says whether unparseable answers enter its mean."""
    parts = []
    for state in STATES:
        if state not in totals:
            continue
        count = int(totals[state])
        word = _WORDS[state][0 if count == 1 else 1]
        parts.append(f"{count:,} {word}" + (_unparseable_note(metric) if state == "unparseable" else ""))
    return ("n = " + " · ".join(parts)) if parts else ""


def frame_state_text(frame: pd.DataFrame, metric: str | None = None) -> str:
    """state_text of a summary frame's summed state columns; `metric` defaults to the frame's one metric."""
    if metric is None and "metric" in frame.columns and frame["metric"].nunique() == 1:
        metric = str(frame["metric"].iloc[0])
    return state_text(state_totals(frame), metric)
