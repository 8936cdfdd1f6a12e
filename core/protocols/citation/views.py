"""The citation protocol's view: citation recall and precision per model with n and state counts (no streamlit)."""

from __future__ import annotations

from collections.abc import Sequence

import plotly.graph_objects as go
from sqlalchemy.engine import Engine

from core.protocols.base import ViewResult

from .analysis import citation_table, expert_support_agreement


def citation_view(engine: Engine, run_ids: Sequence[int], judge: str) -> ViewResult:
    """Recall and precision per model, a grouped bar chart naming the judge."""
    table = citation_table(engine, run_ids, judge)
    experts = expert_support_agreement(engine, run_ids, judge)
    figure = go.Figure([go.Bar(name=metric, x=rows["model"], y=rows["value"], text=[f"n={n}" for n in rows["n"]])
                        for metric, rows in table.groupby("metric")])
    figure.update_layout(barmode="group", yaxis_range=[0, 1], title=f"judge: {judge}")
    caption = ("ALCE-style citation recall (sentences supported by their citations) and precision (citations "
               "needed), per response then averaged; support decided by the judge (the heuristic judge decides only "
               "uncited or mis-cited sentences and leaves the rest not applicable). 95% intervals; n counted; every "
               f"state's count in the n_ columns. Judge vs experts' citation-support labels, per sentence: "
               f"{experts.line()}.")
    return ViewResult(table, caption, figure)
