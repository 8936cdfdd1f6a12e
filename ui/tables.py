"""Readable tables: every column gets a label and a unit (rates in percent, differences in percentage points),
raw field names stay out of sight, the key column is pinned, and rows on fewer than 30 items carry a † caveat."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pandas as pd
import streamlit as st

from core.analysis.readmodel import frame_state_text

SMALL_N = 30
SMALL_N_MARK = "†"
SMALL_N_NOTE = f"{SMALL_N_MARK} fewer than {SMALL_N} items: a small sample, read with care."


@dataclass(frozen=True)
class Col:
    """How a column is shown: its label, its kind (text, int, pct = rate in %, pp = difference in percentage points,
    num, usd, ms, p = p-value) and an optional help text."""

    label: str
    kind: str = "text"
    help: str | None = None


FORMATS = {"int": "%d", "num": "%.3f", "usd": "$%.4f", "ms": "%.0f ms", "p": "%.4f", "pct": "percent", "pp": "percent"}


def column(c: Col, pin: bool = False) -> Any:
    """The st.column_config entry of one column."""
    if c.kind == "text":
        return st.column_config.TextColumn(c.label, help=c.help, pinned=pin or None)
    if c.kind == "bool":
        return st.column_config.CheckboxColumn(c.label, help=c.help, pinned=pin or None)
    unit = {"pct": " (%)", "pp": " (pts)"}.get(c.kind, "")
    return st.column_config.NumberColumn(c.label + unit if unit not in c.label else c.label, format=FORMATS[c.kind],
                                         help=c.help, pinned=pin or None)


def table_config(columns: dict[str, Col | None], pin: str | None = "model") -> dict[str, Any]:
    """Column config for st.dataframe: labels and units, None hides a column, `pin` stays visible when scrolling."""
    return {name: None if c is None else column(c, pin=name == pin) for name, c in columns.items()}


def with_small_n(frame: pd.DataFrame, n_column: str, mark_column: str = "small n") -> pd.DataFrame:
    """`frame` with a column holding † where the row rests on fewer than 30 items (blank otherwise)."""
    n = pd.to_numeric(frame[n_column], errors="coerce")
    return frame.assign(**{mark_column: [SMALL_N_MARK if pd.notna(v) and v < SMALL_N else "" for v in n]})


def show_table(frame: pd.DataFrame, columns: dict[str, Col | None], *, pin: str | None = "model",
               n_column: str | None = None, key: str | None = None) -> None:
    """A dataframe with the given columns in order (labels, units, the key column pinned) and, when `n_column` is
    given, the † small-sample column and its note."""
    shown = frame[[c for c in columns if c in frame.columns]]
    config = table_config(columns, pin)
    if n_column is not None and n_column in frame:
        shown = shown.assign(**{"small n": with_small_n(frame, n_column)["small n"]})
        config["small n"] = st.column_config.TextColumn("n < 30", help=SMALL_N_NOTE, width="small")
    st.dataframe(shown, hide_index=True, width="stretch", column_config=config, key=key)
    if n_column is not None and n_column in frame and (pd.to_numeric(frame[n_column], errors="coerce") < SMALL_N).any():
        st.caption(SMALL_N_NOTE)


STATE_COUNT_COLUMNS: dict[str, Col | None] = {
    "n_scored": Col("scored", "int"), "n_not_applicable": Col("not applicable", "int"),
    "n_unparseable": Col("unparseable", "int"), "n_error": Col("judge errors", "int"),
    "n_unscored": Col("unjudged", "int"), "n_skipped": Col("skipped", "int"),
}  # the read model's state count columns (readmodel.STATE_COLUMNS) as visible table columns


def state_caption(frame: pd.DataFrame, metric: str | None = None, what: str = "") -> str:
    """Right under a table or chart: the count of each score state behind the numbers of `frame` (a summary frame
    with the read model's state columns), e.g. "n = 412 scored · 3 unparseable (counted as wrong) · ..."; returns it."""
    return caption_state_text(frame_state_text(frame, metric), what)


def caption_state_text(text: str, what: str = "") -> str:
    """state_caption of a text already made (readmodel.metric_state_texts: one pass for many captions); returns it."""
    if text:
        st.caption(f"{what}{': ' if what else ''}{text}")
    return text


COMPOSITION_COLUMNS: dict[str, Col | None] = {
    "domain": Col("Domain"),
    "instances": Col("Instances", "int"),
    "avg_constraints": Col("Constraints per instance", "num"),
    "avg_persona": Col("Persona constraints per instance", "num"),
    "avg_output": Col("Output constraints per instance", "num"),
    "avg_knowledge_protocol": Col("Knowledge-protocol constraints per instance", "num"),
    "mode": Col("Mode"),
    "count": Col("Instances", "int"),
    "ratio": Col("Share", "pct"),
    "natural": Col("Natural", "int"),
    "augmented": Col("Augmented", "int"),
}

RESPONSE_COLUMNS: dict[str, Col | None] = {
    "response_id": Col("Response", "int"), "model": Col("Model"), "instance_uid": Col("Instance"),
    "domain": Col("Domain"), "mode": Col("Mode"), "category": Col("Category"), "sub_dimension": Col("Sub-dimension"),
    "cid": Col("Constraint"), "text": Col("Constraint text"), "method": Col("Method"), "judge": Col("Judge"),
    "reason": Col("Reason"), "faithfulness": Col("Faithfulness", "pct"), "coverage": Col("Answer coverage", "pct"),
    "loose_ias": Col("Loose IAS", "pct"), "strict_ias": Col("Strict IAS", "pct"),
    "loose_persona": Col("Loose IAS: persona", "pct"), "loose_output": Col("Loose IAS: output", "pct"),
    "loose_knowledge_protocol": Col("Loose IAS: knowledge protocol", "pct"), "rejection": Col("Rejection", "pct"),
    "conflict_recognition": Col("Conflict recognition", "pct"), "over_abstention": Col("Over-abstention", "pct"),
}


def response_config(frame: pd.DataFrame) -> dict[str, Any]:
    """Labels and units for a per-response or per-verdict table, the model column pinned."""
    return table_config({c: RESPONSE_COLUMNS[c] for c in frame.columns if c in RESPONSE_COLUMNS}, pin="model")
