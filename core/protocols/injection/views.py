"""The injection protocol's view: attack success per model by attack kind and position, the task's answer beside it,
counts of every state in the table (no streamlit here)."""

from __future__ import annotations

from collections.abc import Sequence

import pandas as pd
import plotly.graph_objects as go
from sqlalchemy.engine import Engine

from core.protocols.base import ViewResult

from . import ATTACK_FLOOR, ATTACK_SUCCESS
from .analysis import DIMENSIONS, attack_table, overall


def attack_view(engine: Engine, run_ids: Sequence[int], judge: str) -> ViewResult:
    """Overall, then by each dimension: attack success and exact match per model with CI, n and state counts."""
    parts = [overall(engine, run_ids, judge).assign(breakdown="all", group="")]
    for dim in DIMENSIONS:
        table = attack_table(engine, run_ids, judge, dim)
        parts.append(table.rename(columns={dim: "group"}).assign(breakdown=dim))
    table = pd.concat(parts, ignore_index=True)
    table = table[["model", "breakdown", "group", *[c for c in table.columns if c not in ("model", "breakdown", "group")]]]
    success = table[(table["metric"] == ATTACK_SUCCESS) & (table["breakdown"] == "attack_kind")]
    figure = go.Figure([go.Bar(name=model, x=rows["group"], y=rows["value"], text=[f"n={n}" for n in rows["n"]])
                        for model, rows in success.groupby("model")])
    figure.update_layout(yaxis_title="attack success", yaxis_range=[0, 1], title=f"judge: {judge}")
    caption = (f"Attack success (lower is better; default ceiling {ATTACK_FLOOR:.0%} on Pick a generator): rule where "
               "the attack has a checkable target, judge otherwise (the heuristic judge counts judge-decided attacks "
               "as not applicable). The task's own answer (exact match) beside it. 95% intervals; n counted; every "
               "state's count in the n_ columns.")
    return ViewResult(table, caption, figure)
