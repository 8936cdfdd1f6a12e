"""The injection protocol's aggregate: attack success and the task's own answer per model, broken down by attack kind,
text position, bundle position and how success was decided, each mean with its 95% interval, n and the count of every
state beside it (core.analysis.readmodel.protocol_tables.breakdown, the one computation of such a table)."""

from __future__ import annotations

from collections.abc import Sequence

import pandas as pd
from sqlalchemy.engine import Engine

from core.analysis.readmodel.protocol_tables import breakdown, instance_attributes
from core.analysis.readmodel.reference import reference_scores

from . import ANSWER, ATTACK_SUCCESS, NAME

DIMENSIONS = ("attack_kind", "text_position", "bundle_position", "decided_by")


def attack_scores(engine: Engine, run_ids: Sequence[int], judge: str) -> pd.DataFrame:
    """The protocol's per-response scores with each instance's attack kind, positions and how success is decided."""
    scores = reference_scores(engine, run_ids, judge, protocol=NAME)
    attrs = instance_attributes(engine, NAME).set_index("instance_uid")["attributes"]
    got = scores["instance_uid"].map(attrs).map(lambda a: a if isinstance(a, dict) else {})
    aspects = got.map(lambda a: dict(x.split(":", 1) for x in a.get("aspects", []) if ":" in x))
    return scores.assign(attack_kind=got.map(lambda a: a.get("question_type") or "unknown"),
                         text_position=aspects.map(lambda a: a.get("text", "")),
                         bundle_position=aspects.map(lambda a: a.get("bundle", "")),
                         decided_by=aspects.map(lambda a: "rule" if a.get("check") == "contains" else "judge"))


def attack_table(engine: Engine, run_ids: Sequence[int], judge: str, by: str = "attack_kind") -> pd.DataFrame:
    """Attack success and the task's answer per model and one dimension (DIMENSIONS), with n and state counts."""
    if by not in DIMENSIONS:
        raise KeyError(f"unknown breakdown {by!r}; known: {', '.join(DIMENSIONS)}")
    scores = attack_scores(engine, run_ids, judge)
    return pd.concat([breakdown(scores, ATTACK_SUCCESS, [by]), breakdown(scores, ANSWER, [by])], ignore_index=True)


def overall(engine: Engine, run_ids: Sequence[int], judge: str) -> pd.DataFrame:
    """Attack success, exact match and rejection per model over every instance, with n and state counts."""
    scores = attack_scores(engine, run_ids, judge)
    return pd.concat([breakdown(scores, m, []) for m in (ATTACK_SUCCESS, ANSWER, "rejection")], ignore_index=True)
