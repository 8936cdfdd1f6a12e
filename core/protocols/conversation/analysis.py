"""The conversation protocol's aggregates: per-turn scores with the turn's position, question type, multi-turn type
and answerability; tables by each (mean, 95% interval, n and the count of every state beside it, the one `breakdown`
computation); and the later-turn drop: per later turn, the model's mean quality on turns 1-3 (of the same
conversation when scored, else of all) minus its own (with_drop), averaged per model with the interval of its
declared kind, the one computation the page, the command and the decision (the `decision_scores` hook) read."""

from __future__ import annotations

import re
from collections.abc import Sequence

import numpy as np
import pandas as pd
from sqlalchemy.engine import Engine

from core.analysis import stats
from core.analysis.readmodel.protocol_tables import breakdown, instance_attributes
from core.analysis.readmodel.reference import reference_scores
from core.analysis.readmodel.responses import UNJUDGED
from core.analysis.readmodel.states import count_states
from core.metrics import STATES, VERDICT_STATES, get_metric

from . import ANSWERABILITY, EARLY_TURNS, HANDLING, LATER_DROP, NAME, QUALITY, UNANSWERABLE_HANDLING

DIMENSIONS = ("turn", "turn_group", "question_type", "multi_turn", "answerability")
TABLE_METRICS = (QUALITY, HANDLING, UNANSWERABLE_HANDLING, "faithfulness")
DROP_COLUMNS = ["model", "metric", "value", "ci_low", "ci_high", "n", "early", "later", "n_early", "n_later"]
TURN_SUFFIX = re.compile(r"/t\d+(?:/[^/]+)?$")


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
        non_ideal=aspects.map(lambda a: bool(a.get("non_ideal"))),
        answerability=attrs.map(lambda a: next((c for c in a.get("categories") or [] if c in ANSWERABILITY), "?")))


def turn_table(engine: Engine, run_ids: Sequence[int], judge: str, by: str = "turn") -> pd.DataFrame:
    """Each per-turn metric per model and one dimension (DIMENSIONS), with n and the count of every state."""
    if by not in DIMENSIONS:
        raise KeyError(f"unknown breakdown {by!r}; known: {', '.join(DIMENSIONS)}")
    scores = turn_scores(engine, run_ids, judge)
    return pd.concat([breakdown(scores, metric, [by]) for metric in TABLE_METRICS], ignore_index=True)


def conversation_of(uid: str) -> str:
    """The conversation an instance belongs to: its uid without the turn ('/tN') and a non-ideal mode after it."""
    return TURN_SUFFIX.sub("", uid)


def _drop_status(later: pd.Series, value: pd.Series, quality_status: pd.Series) -> pd.Series:
    """The drop's stored status per response: ok with a value; on a later turn whose quality is not scored, that
    status (no reference: not applicable); a later turn of a model with no scored early turn, and every early or
    non-ideal turn: not applicable."""
    status = np.where(~later, "not_applicable", np.where(value.notna(), "ok", np.where(
        quality_status.isin(["ok", "unparseable"]), "not_applicable", quality_status.astype(object))))
    return pd.Series(status, index=later.index, dtype=object).where(pd.notna(status) & (status != "None"), None)


def with_drop(scores: pd.DataFrame) -> pd.DataFrame:
    """turn_scores with the later-turn drop per response (LATER_DROP and its `_status`): on an ideal turn after
    EARLY_TURNS, the model's mean answer quality on ideal turns 1-EARLY_TURNS under the same condition, minus this
    turn's quality. The early mean is taken in the same conversation when the run scored early turns of it (the
    team's conversations, production traces: conversations of different difficulty do not pass for a drop), else over
    all of the model's conversations (MTRAG-UN, where each task is one turn of its own conversation). Its mean over a
    model's later turns is the model's drop; the page, the command and the decision all read it from here."""
    ideal = ~scores["non_ideal"]
    condition = scores["condition"].fillna("")
    group = [scores["model"], scores["instance_uid"].map(conversation_of), condition]
    early = ideal & (scores["turn"] <= EARLY_TURNS) & scores[QUALITY].notna()
    paired = scores.loc[early, QUALITY].groupby([g[early] for g in group]).mean()
    pooled = scores.loc[early, QUALITY].groupby([g[early] for g in (group[0], group[2])]).mean()
    base = pd.Series(paired.reindex(pd.MultiIndex.from_arrays(group)).to_numpy(float), index=scores.index)
    overall = pd.Series(pooled.reindex(pd.MultiIndex.from_arrays([group[0], group[2]])).to_numpy(float),
                        index=scores.index)
    later = ideal & (scores["turn"] > EARLY_TURNS)
    value = (base.fillna(overall) - scores[QUALITY]).where(later)
    status = _drop_status(later, value, scores[f"{QUALITY}_status"])
    return scores.assign(**{LATER_DROP: value.astype(float), f"{LATER_DROP}_status": status})


def decision_scores(engine: Engine, run_ids: Sequence[int], judge: str) -> pd.DataFrame:
    """The decision's per-response values (core.analysis.readmodel.decision_scores): the protocol's reference
    values with the later-turn drop of each later turn (with_drop), so Pick a generator and the decision report weigh
    the drop and unanswerable-turn handling as the conversation page shows them."""
    return with_drop(turn_scores(engine, run_ids, judge))


def drop_row(model: str, part: pd.DataFrame) -> dict:
    """One model's later-turn drop: the mean of its per-turn drops with the interval of the metric's declared kind
    (stats.interval, as the decision's evidence), n, every state's count, and early / later quality for reading."""
    ci = stats.interval(part[LATER_DROP].to_numpy(float), get_metric(LATER_DROP))
    states = count_states(part[f"{LATER_DROP}_status"].map(lambda s: VERDICT_STATES.get(s, UNJUDGED) if s else UNJUDGED))
    ideal = part[~part["non_ideal"]]
    early = ideal.loc[ideal["turn"] <= EARLY_TURNS, QUALITY].dropna()
    later = ideal.loc[ideal["turn"] > EARLY_TURNS, QUALITY].dropna()
    return {"model": model, "metric": LATER_DROP, "value": ci.mean, "ci_low": ci.ci_low, "ci_high": ci.ci_high,
            "n": ci.n, "early": float(early.mean()) if len(early) else float("nan"),
            "later": float(later.mean()) if len(later) else float("nan"), "n_early": len(early),
            "n_later": len(later), **{f"n_{k}": v for k, v in states.items()}}


def later_turn_drop(engine: Engine, run_ids: Sequence[int], judge: str) -> pd.DataFrame:
    """Per model: the later-turn drop (with_drop's per-turn values averaged), its interval, n and state counts."""
    scores = with_drop(turn_scores(engine, run_ids, judge))
    rows = [drop_row(str(model), part) for model, part in scores.groupby("model", sort=True)]
    return pd.DataFrame(rows, columns=[*DROP_COLUMNS, *(f"n_{s}" for s in STATES)])
