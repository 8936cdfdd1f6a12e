"""The conversation protocol's view: answer quality, handling and faithfulness per model by turn, and the later-turn
drop, with n and the count of every state (no streamlit here)."""

from __future__ import annotations

from collections.abc import Sequence

import pandas as pd
import plotly.graph_objects as go
from sqlalchemy.engine import Engine

from core.protocols.base import ViewResult

from . import EARLY_TURNS, QUALITY
from .analysis import DIMENSIONS, later_turn_drop, turn_table


def turn_view(engine: Engine, run_ids: Sequence[int], judge: str) -> ViewResult:
    """Every per-turn metric by each breakdown, the later-turn drop first; a line of answer quality by turn."""
    drop = later_turn_drop(engine, run_ids, judge).assign(breakdown="later-turn drop", group="")
    parts = [drop]
    for dim in DIMENSIONS:
        parts.append(turn_table(engine, run_ids, judge, dim).rename(columns={dim: "group"}).assign(breakdown=dim))
    table = pd.concat(parts, ignore_index=True)
    table["group"] = table["group"].astype(str)
    table = table[["model", "breakdown", "group", *[c for c in table.columns if c not in ("model", "breakdown", "group")]]]
    by_turn = table[(table["breakdown"] == "turn") & (table["metric"] == QUALITY)]
    figure = go.Figure([go.Scatter(name=model, x=rows["group"].astype(int), y=rows["value"], mode="lines+markers",
                                   text=[f"n={n}" for n in rows["n"]]) for model, rows in by_turn.groupby("model")])
    figure.update_layout(xaxis_title="turn", yaxis_title="answer quality (token F1)", yaxis_range=[0, 1],
                         title=f"judge: {judge}")
    caption = (f"Each turn answered with the conversation so far. Later-turn drop: per turn after {EARLY_TURNS}, "
               f"its conversation's answer quality on turns 1-{EARLY_TURNS} minus its own, averaged (lower is better; "
               "95% interval; n = later turns with a drop, every state's count; early and later: mean quality). "
               "Per-turn metrics by turn, question type, multi-turn type and answerability: mean, 95% "
               "interval, n counted and every state's count in the n_ columns.")
    return ViewResult(table, caption, figure)
