"""The conversation protocol's aggregates: per-turn scores with the turn's position, question type, multi-turn type
and answerability; tables by each (mean, 95% interval, n and the count of every state beside it, the one `breakdown`
computation); and the later-turn drop per model (answer quality on turns 1-3 minus later turns, with an independent
bootstrap interval of the difference, inside [-1, 1])."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd
from sqlalchemy.engine import Engine

from core.analysis import stats
from core.analysis.readmodel.reference import reference_scores
from core.protocols.injection.analysis import breakdown, instance_attributes

from . import ANSWERABILITY, EARLY_TURNS, HANDLING, LATER_DROP, NAME, QUALITY, UNANSWERABLE_HANDLING

DIMENSIONS = ("turn", "turn_group", "question_type", "multi_turn", "answerability")
TABLE_METRICS = (QUALITY, HANDLING, UNANSWERABLE_HANDLING, "faithfulness")
DROP_COLUMNS = ["model", "metric", "value", "ci_low", "ci_high", "early", "later", "n_early", "n_later"]


def aspects_of(attributes: dict) -> dict[str, list[str]]:
    """An instance's aspects 'key:value' grouped by key."""
    found: dict[str, list[str]] = {}
    for aspect in attributes.get("aspects") or []:
        key, _, value = aspect.partition(":")
        found.setdefault(key, []).append(value)
    return found


def turn_scores(engine: Engine, run_ids: Sequence[int], judge: str) -> pd.DataFrame:
    """The protocol's per-response scores with turn, turn group, question type, multi-turn type and answerability."""
    scores = reference_scores(engine, run_ids, judge, protocol=NAME)
    attrs = scores["instance_uid"].map(instance_attributes(engine, NAME).set_index("instance_uid")["attributes"])
    attrs = attrs.map(lambda a: a if isinstance(a, dict) else {})
    aspects = attrs.map(aspects_of)
    turn = aspects.map(lambda a: int(a["turn"][0]) if a.get("turn") else 0)
    return scores.assign(
        turn=turn, turn_group=turn.map(lambda t: f"1-{EARLY_TURNS}" if t <= EARLY_TURNS else f"{EARLY_TURNS + 1}+"),
        question_type=attrs.map(lambda a: a.get("question_type") or "unknown"),
        multi_turn=aspects.map(lambda a: "+".join(a.get("multi_turn") or []) or "first turn / none"),
        answerability=attrs.map(lambda a: next((c for c in a.get("categories") or [] if c in ANSWERABILITY), "?")))


def turn_table(engine: Engine, run_ids: Sequence[int], judge: str, by: str = "turn") -> pd.DataFrame:
    """Each per-turn metric per model and one dimension (DIMENSIONS), with n and the count of every state."""
    if by not in DIMENSIONS:
        raise KeyError(f"unknown breakdown {by!r}; known: {', '.join(DIMENSIONS)}")
    scores = turn_scores(engine, run_ids, judge)
    return pd.concat([breakdown(scores, metric, [by]) for metric in TABLE_METRICS], ignore_index=True)


def drop_of(model: str, early: np.ndarray, later: np.ndarray) -> dict:
    """One model's later-turn drop: mean early minus mean later, its bootstrap interval (independent samples)."""
    row = {"model": model, "metric": LATER_DROP, "n_early": len(early), "n_later": len(later),
           "early": float(early.mean()) if len(early) else float("nan"),
           "later": float(later.mean()) if len(later) else float("nan")}
    if not len(early) or not len(later):
        return {**row, "value": float("nan"), "ci_low": float("nan"), "ci_high": float("nan")}
    ci = stats.bootstrap_ci(stats.mean_diff, early, later, paired=False, n_resamples=2000, seed=0)
    return {**row, "value": ci.estimate, "ci_low": max(-1.0, ci.ci_low), "ci_high": min(1.0, ci.ci_high)}


def later_turn_drop(engine: Engine, run_ids: Sequence[int], judge: str) -> pd.DataFrame:
    """Per model: answer quality on turns 1-EARLY_TURNS minus after, with its interval and both n (scored turns)."""
    scores = turn_scores(engine, run_ids, judge)
    rows = []
    for model, part in scores.groupby("model", sort=True):
        values = part[[QUALITY, "turn"]].dropna()
        rows.append(drop_of(str(model), values.loc[values["turn"] <= EARLY_TURNS, QUALITY].to_numpy(float),
                            values.loc[values["turn"] > EARLY_TURNS, QUALITY].to_numpy(float)))
    return pd.DataFrame(rows, columns=DROP_COLUMNS)
