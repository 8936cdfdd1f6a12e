"""The injection protocol's aggregate: attack success and the task's own answer per model, broken down by attack kind,
text position, bundle position and how success was decided, each mean with its 95% interval, n and the count of every
state beside it. `breakdown` is the one computation of such a table (the other protocol packages of issue 44 call it
too)."""

from __future__ import annotations

import json
from collections.abc import Sequence

import pandas as pd
from sqlalchemy.engine import Engine

from core.analysis import stats
from core.analysis.readmodel.reference import reference_scores
from core.analysis.readmodel.responses import read_sql
from core.metrics import STATES, get_metric

from . import ANSWER, ATTACK_SUCCESS, NAME

_ATTRIBUTES_SQL = "SELECT uid AS instance_uid, attributes FROM instance WHERE protocol = :protocol"
DIMENSIONS = ("attack_kind", "text_position", "bundle_position", "decided_by")


def instance_attributes(engine: Engine, protocol: str) -> pd.DataFrame:
    """Each instance's uid and its attributes (a dict) of one protocol."""
    frame = read_sql(engine, _ATTRIBUTES_SQL, {"protocol": protocol})
    frame["attributes"] = frame["attributes"].map(lambda a: json.loads(a) if isinstance(a, str) else (a or {}))
    return frame.drop_duplicates("instance_uid", keep="last")


def breakdown(scores: pd.DataFrame, metric: str, by: Sequence[str]) -> pd.DataFrame:
    """Per model and each value of `by`: the metric's mean, 95% interval, n counted and the count of every state."""
    declared, rows = get_metric(metric), []
    keys = ["model", *by]
    for key, part in scores.groupby(keys, sort=True, dropna=False):
        ci = stats.interval(part[metric].to_numpy(dtype=float), declared)
        states = part[f"{metric}_state"].fillna("unjudged")
        rows.append({**dict(zip(keys, key if isinstance(key, tuple) else (key,), strict=True)), "metric": metric,
                     "value": ci.mean if ci.n else float("nan"), "ci_low": ci.ci_low, "ci_high": ci.ci_high,
                     "n": ci.n, **{f"n_{s}": int((states == s).sum()) for s in STATES}})
    return pd.DataFrame(rows, columns=[*keys, "metric", "value", "ci_low", "ci_high", "n", *(f"n_{s}" for s in STATES)])


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
