"""The toy protocol's view: its aggregate as a table and a bar chart, with a caption (no streamlit here)."""

from __future__ import annotations

from collections.abc import Sequence

import plotly.graph_objects as go
from sqlalchemy.engine import Engine

from core.protocols.base import ViewResult

from .analysis import accuracy


def accuracy_view(engine: Engine, run_ids: Sequence[int], judge: str) -> ViewResult:
    """Echo match per model with n and the state counts beside it."""
    table = accuracy(engine, run_ids, judge)
    figure = go.Figure(go.Bar(x=table["model"], y=table["echo_match"], text=[f"n={n}" for n in table["n"]]))
    return ViewResult(table, "Echo match per model: the mean over counted answers; n and each state's count beside "
                             "it.", figure)
