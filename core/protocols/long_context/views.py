"""The long-context protocol's view: per model and task, which setting wins with the cost of each, then accuracy by
setting with n and every state's count (documents over a model's window counted as skipped)."""

from __future__ import annotations

from collections.abc import Sequence

import plotly.graph_objects as go
from sqlalchemy.engine import Engine

from core.protocols.base import ViewResult

from .analysis import setting_table, setting_winners


def setting_view(engine: Engine, run_ids: Sequence[int], judge: str) -> ViewResult:
    """The winners table; a bar chart of accuracy by task and setting, per model."""
    winners = setting_winners(engine, run_ids, judge)
    table = setting_table(engine, run_ids, judge)
    figure = go.Figure([go.Bar(name=f"{model} · {setting}", x=rows["task"], y=rows["value"],
                               text=[f"n={n}" for n in rows["n"]])
                        for (model, setting), rows in table.groupby(["model", "setting"])])
    figure.update_layout(barmode="group", yaxis_range=[0, 1], yaxis_title="accuracy", title=f"judge: {judge}")
    caption = ("Per generator and task: accuracy with retrieved chunks and with the whole document, the generation "
               "cost per answer of each, whole documents too long for the model's context window (skipped, not "
               "wrong) and the winner (the higher accuracy when the 95% intervals do not overlap). The chart's n are "
               "the scored answers.")
    return ViewResult(winners, caption, figure)
