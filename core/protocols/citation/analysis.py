"""The citation protocol's aggregate: citation recall and precision (and exact match where there is a reference) per
model, each mean with its 95% interval, n and the count of every state (the one `breakdown` computation)."""

from __future__ import annotations

from collections.abc import Sequence

import pandas as pd
from sqlalchemy.engine import Engine

from core.analysis.readmodel.reference import reference_scores
from core.protocols.injection.analysis import breakdown

from . import NAME, PRECISION, RECALL


def citation_table(engine: Engine, run_ids: Sequence[int], judge: str) -> pd.DataFrame:
    """Citation recall and precision per model with n and the state counts."""
    scores = reference_scores(engine, run_ids, judge, protocol=NAME)
    return pd.concat([breakdown(scores, metric, []) for metric in (RECALL, PRECISION)], ignore_index=True)
