"""The tests a decision across protocols makes, as one family: per protocol and metric, every pair of candidates
(the rank-sets) and the top two per segment (protocol x domain x condition x language), each by one paired
sign-flip randomisation test on the items both answered, with one Holm correction over all of them together.

Values are the read model's per-item values (core.analysis.readmodel.decision_scores), on each metric's declared
direction; nothing here computes a metric.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from itertools import combinations

import numpy as np
import pandas as pd

from core.analysis import stats
from core.analysis.readmodel import decision_scores as keys

ALPHA = 0.05
N_PERMUTATIONS = 10_000
SEED = 0
SEGMENT_KEYS = ("protocol", "domain", "condition", "language")
PAIR_COLUMNS = ["protocol", "key", "label", "model_a", "model_b", "shared", "diff", "p_value", "p_holm", "significant"]
RANK_COLUMNS = ["protocol", "key", "label", "model", "estimate", "ci_low", "ci_high", "n", "rank_low", "rank_high",
                "could_be_first"]
SEGMENT_COLUMNS = [*SEGMENT_KEYS, "key", "label", "model_a", "model_b", "shared", "diff", "p_value", "p_holm",
                   "significant", "note"]


@dataclass
class Family:
    """Every test of the decision with its Holm-adjusted p-value, the rank-sets they give and the segment cells."""

    pairs: pd.DataFrame = field(default_factory=lambda: pd.DataFrame(columns=PAIR_COLUMNS))
    rank_sets: pd.DataFrame = field(default_factory=lambda: pd.DataFrame(columns=RANK_COLUMNS))
    segments: pd.DataFrame = field(default_factory=lambda: pd.DataFrame(columns=SEGMENT_COLUMNS))
    alpha: float = ALPHA

    @property
    def tests(self) -> int:
        """How many tests the one Holm correction covers."""
        return int(self.pairs["p_value"].notna().sum() + self.segments["p_value"].notna().sum())


def paired_p(a: np.ndarray, b: np.ndarray, seed: int = SEED) -> tuple[int, float, float]:
    """(shared items, mean of a − b, two-sided p) of the paired sign-flip randomisation test on the items where both
    have a value: p = (1 + #|flipped mean| ≥ |observed|) / (1 + N_PERMUTATIONS); p NaN with fewer than 2 items."""
    both = ~np.isnan(a) & ~np.isnan(b)
    d = (a - b)[both]
    n = int(d.size)
    if n < 2:
        return n, float(d.mean()) if n else np.nan, np.nan
    observed = abs(float(d.mean()))
    flipped = np.abs(_signs(n, seed) @ d) / n
    return n, float(d.mean()), float((1 + np.sum(flipped >= observed - 1e-12)) / (1 + N_PERMUTATIONS))


@lru_cache(maxsize=16)
def _signs(n: int, seed: int) -> np.ndarray:
    """The N_PERMUTATIONS x n random signs of paired_p (the same for every test on n items, drawn once)."""
    signs = np.random.default_rng(seed).choice((-1.0, 1.0), size=(N_PERMUTATIONS, n))
    signs.flags.writeable = False
    return signs


def _utility_frame(scores: pd.DataFrame, key: str) -> pd.DataFrame:
    """model x item of one key's values on its protocol's items, as 'higher is better' (lower-is-better inverted)."""
    entry = keys.decision_key(key)
    mine = scores[(scores["protocol"] == entry.protocol) & scores[key].notna()] if key in scores else scores.iloc[:0]
    table = mine.pivot_table(index="instance_uid", columns="model", values=key, aggfunc="first") if len(mine) else (
        pd.DataFrame())
    return table if entry.metric.higher_is_better else -table


def _pairs(scores: pd.DataFrame, candidates: Sequence[str], metrics: Sequence[str]) -> pd.DataFrame:
    rows = []
    for key in metrics:
        entry = keys.decision_key(key)
        table = _utility_frame(scores, key)
        for a, b in combinations(candidates, 2):
            xa = table[a].to_numpy(float) if a in table else np.full(len(table), np.nan)
            xb = table[b].to_numpy(float) if b in table else np.full(len(table), np.nan)
            shared, diff, p = paired_p(xa, xb)
            rows.append({"protocol": entry.protocol, "key": key, "label": entry.label, "model_a": a, "model_b": b,
                         "shared": shared, "diff": diff, "p_value": p})
    return pd.DataFrame(rows, columns=PAIR_COLUMNS)


def _segment_rows(scores: pd.DataFrame, top: tuple[str, str], metrics: Sequence[str]) -> pd.DataFrame:
    frame = scores.copy()
    condition = frame["condition"] if "condition" in frame else pd.Series(np.nan, index=frame.index)
    frame["condition"] = condition.where(condition.notna() & (condition != ""), frame.get("mode"))
    for column in ("domain", "condition", "language"):
        values = frame[column] if column in frame else pd.Series(np.nan, index=frame.index)
        frame[column] = values.astype(object).where(values.notna(), "").astype(str).replace("", "(none)")
    rows = []
    for key in metrics:
        entry = keys.decision_key(key)
        mine = frame[frame["protocol"] == entry.protocol]
        for segment, g in mine.groupby(list(SEGMENT_KEYS), sort=True):
            table = _utility_frame(g, key)
            xa, xb = (table[m].to_numpy(float) if m in table else np.full(len(table), np.nan) for m in top)
            shared, diff, p = paired_p(xa, xb)
            note = "" if shared >= 2 else f"{shared} item(s) answered by both: not tested"
            rows.append({**dict(zip(SEGMENT_KEYS, segment, strict=True)), "key": key, "label": entry.label,
                         "model_a": top[0], "model_b": top[1], "shared": shared, "diff": diff, "p_value": p,
                         "note": note})
    return pd.DataFrame(rows, columns=SEGMENT_COLUMNS)


def _rank_sets(pairs: pd.DataFrame, evidence: pd.DataFrame, candidates: Sequence[str],
               metrics: Sequence[str]) -> pd.DataFrame:
    """Per key, each candidate's ranks from the Holm-significant pairs: rank_low = 1 + those significantly better,
    rank_high = K − those significantly worse (all hold together with probability ≥ 1 − α)."""
    rows = []
    k = len(candidates)
    for key in metrics:
        entry = keys.decision_key(key)
        mine = pairs[(pairs["key"] == key) & (pairs["significant"] == True)]  # noqa: E712 - object column
        for model in candidates:
            better = int((((mine["model_a"] == model) & (mine["diff"] < 0))
                          | ((mine["model_b"] == model) & (mine["diff"] > 0))).sum())
            worse = int((((mine["model_a"] == model) & (mine["diff"] > 0))
                         | ((mine["model_b"] == model) & (mine["diff"] < 0))).sum())
            ev = evidence[(evidence["key"] == key) & (evidence["model"] == model)]
            value = ev.iloc[0] if len(ev) else None
            rows.append({"protocol": entry.protocol, "key": key, "label": entry.label, "model": model,
                         "estimate": float(value["value"]) if value is not None else np.nan,
                         "ci_low": float(value["ci_low"]) if value is not None else np.nan,
                         "ci_high": float(value["ci_high"]) if value is not None else np.nan,
                         "n": int(value["n"]) if value is not None else 0,
                         "rank_low": 1 + better, "rank_high": k - worse, "could_be_first": better == 0})
    return pd.DataFrame(rows, columns=RANK_COLUMNS)


def family(scores: pd.DataFrame, evidence: pd.DataFrame, candidates: Sequence[str], metrics: Sequence[str],
           top: tuple[str, str] | None, alpha: float = ALPHA) -> Family:
    """Every pairwise test of the candidates per metric and every segment cell of the top two, with one Holm
    correction over all of them, and the rank-sets the pairwise tests give."""
    scoped = scores[scores["model"].isin(list(candidates))]
    pairs = _pairs(scoped, candidates, metrics) if len(candidates) >= 2 else pd.DataFrame(columns=PAIR_COLUMNS)
    segments = _segment_rows(scoped, top, metrics) if top else pd.DataFrame(columns=SEGMENT_COLUMNS)
    p = np.concatenate([pairs["p_value"].to_numpy(float), segments["p_value"].to_numpy(float)])
    tested = ~np.isnan(p)
    adjusted = np.full(p.shape, np.nan)
    if tested.any():
        adjusted[tested] = stats.holm(p[tested], alpha).adjusted
    for frame, part in ((pairs, adjusted[: len(pairs)]), (segments, adjusted[len(pairs):])):
        frame["p_holm"] = part
        frame["significant"] = pd.Series(part <= alpha, index=frame.index, dtype=object).where(~np.isnan(part), None)
    ranks = _rank_sets(pairs, evidence, candidates, metrics) if len(candidates) >= 2 else pd.DataFrame(
        columns=RANK_COLUMNS)
    return Family(pairs, ranks, segments, alpha)
