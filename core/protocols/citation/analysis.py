"""The citation protocol's aggregate: citation recall and precision (and exact match where there is a reference) per
model, each mean with its 95% interval, n and the count of every state (the one `breakdown` computation)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pandas as pd
from sqlalchemy.engine import Engine

from core.analysis.label_kinds import Agreement, label_kind_agreement
from core.analysis.readmodel.protocol_tables import breakdown
from core.analysis.readmodel.reference import reference_scores

from . import NAME, PRECISION, RECALL, SUPPORT


def citation_table(engine: Engine, run_ids: Sequence[int], judge: str) -> pd.DataFrame:
    """Citation recall and precision per model with n and the state counts."""
    scores = reference_scores(engine, run_ids, judge, protocol=NAME)
    return pd.concat([breakdown(scores, metric, []) for metric in (RECALL, PRECISION)], ignore_index=True)


def sentence_support(details: dict[str, Any]) -> list[int | None]:
    """The judge's support decision per answer sentence in a citation.recall verdict's details (1 supported, 0 not,
    None undecided): what the experts' citation-support labels are compared with."""
    return [None if row.get("supported") is None else int(bool(row["supported"])) for row in details.get("sentences", [])]


def expert_support_agreement(engine: Engine, run_ids: Sequence[int] | None, judge: str) -> Agreement:
    """The judge's support verdict on each answer sentence (its citation.recall details) against the experts'
    citation-support labels (each expert's latest; 'supported' = 1, 'partial' or 'not' = 0, as ALCE's annotators'
    fully-supported rule): agreement, Cohen's kappa and n over the sentences the judge decided, the rest counted
    (`run_ids` None: every run)."""
    return label_kind_agreement(engine, run_ids, judge, SUPPORT)
