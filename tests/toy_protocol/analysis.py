"""The toy protocol's aggregate: echo match per model, the mean over counted answers with the count of each state."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pandas as pd
from sqlalchemy.engine import Engine

from core.analysis.readmodel import reference_scores

from . import ECHO_MATCH, NAME

STATES = ("ok", "unparseable", "not_applicable", "error")


def accuracy(engine: Engine, run_ids: Sequence[int], judge: str) -> pd.DataFrame:
    """One row per model: echo_match (mean of the counted values), n counted, and the count of every state."""
    scores = reference_scores(engine, run_ids, judge, protocol=NAME)
    rows = []
    for model, mine in scores.groupby("model", sort=True):
        status = mine[f"{ECHO_MATCH}_status"].fillna("unjudged")
        counted = mine[ECHO_MATCH].dropna()
        rows.append({"model": model, "echo_match": counted.mean() if len(counted) else float("nan"),
                     "n": len(counted), **{s: int((status == s).sum()) for s in (*STATES, "unjudged")}})
    return pd.DataFrame(rows, columns=["model", "echo_match", "n", *STATES, "unjudged"])


def echo_decisions(details: dict[str, Any]) -> list[int | None]:
    """The judge's decision on the one unit of the echo label kind: echo_match's verdict (None where it has none)."""
    return [None if "accepted" not in details else int(bool(details["accepted"]))]
