"""Tables a protocol package's analysis builds from the read model's per-response scores: a metric broken down per
model and any attribute columns (mean, 95% interval, n and the count of every state beside it), and the stored
attributes of a protocol's instances (to break down by). The one computation of such tables for every protocol."""

from __future__ import annotations

import json
from collections.abc import Sequence

import pandas as pd
from sqlalchemy.engine import Engine

from core.analysis import stats
from core.analysis.readmodel.responses import read_sql
from core.metrics import STATES, get_metric

_ATTRIBUTES_SQL = "SELECT uid AS instance_uid, attributes FROM instance WHERE protocol = :protocol"


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
