"""The Robustness page from aggregates (readmodel.enterprise_aggregates, already narrowed to the chosen subset and
domains) instead of per-response rows: the knowledge-gap means with their intervals, the conflict ranking, the
knowledge-protocol effect (the aggregates are grouped by has_protocol) and the state counts behind each view.

Each is robustness.py's computation fed from per-group sums (n, sum, sum of squares); the ranking, the Spearman rho
and the two-proportion tests are robustness.py's own functions. tests/analysis/test_robustness_aggregates.py holds
them equal to the per-response computation to 1e-12 on both backends, with stored and stale summaries.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd
from sqlalchemy.engine import Engine

from core.analysis.readmodel.enterprise_aggregates import enterprise_aggregates, group_metric_states
from core.analysis.readmodel.leaderboard import LONG_COLUMNS
from core.analysis.readmodel.leaderboard_aggregates import _counted_mask, _mean_rows, model_sums
from core.analysis.readmodel.robustness import (
    PROTOCOL_EFFECT_METRICS,
    ROBUSTNESS_SUBSETS,
    RobustnessViews,
    conflict_ranking,
    effect_rows,
)
from core.analysis.readmodel.scope import with_model_info
from core.analysis.readmodel.states import STATE_COLUMNS
from core.scoring.summaries import RESPONSES_METRIC

GAP_LABELS = {"loose_knowledge_protocol": "Protocol adherence", "rejection": "Rejection accuracy"}


def _in_mode(aggregates: pd.DataFrame, mode: str) -> pd.DataFrame:
    return aggregates[aggregates["mode"] == mode]


def knowledge_gap_from_aggregates(aggregates: pd.DataFrame, models: pd.DataFrame) -> pd.DataFrame:
    """robustness.knowledge_gap_view from the aggregates."""
    sums = model_sums(_in_mode(aggregates, "gap"), list(GAP_LABELS))
    rows = _mean_rows(sums, list(GAP_LABELS)) if len(sums["rejection"]) else []
    out = pd.DataFrame(rows, columns=LONG_COLUMNS)
    out.insert(2, "label", out["metric"].map(GAP_LABELS))
    return with_model_info(out, models)


def conflict_from_aggregates(aggregates: pd.DataFrame, models: pd.DataFrame) -> tuple[pd.DataFrame, pd.DataFrame]:
    """robustness.conflict_view from the aggregates."""
    sums = model_sums(_in_mode(aggregates, "conflict"), ["conflict_recognition", "coverage"])
    cr, cov = sums["conflict_recognition"], sums["coverage"]
    with np.errstate(invalid="ignore", divide="ignore"):
        per_model = pd.DataFrame({"model": list(cr.index),
                                  "conflict_recognition": (cr["total"] / cr["n_values"]).to_numpy(dtype=float),
                                  "coverage": (cov["total"] / cov["n_values"]).to_numpy(dtype=float),
                                  "n": cr["n_values"].to_numpy(dtype="int64")})
    return conflict_ranking(per_model, models)


def protocol_effect_from_aggregates(aggregates: pd.DataFrame, models: pd.DataFrame, metric: str) -> pd.DataFrame:
    """robustness.protocol_effect from the aggregates: per model the counted values' sum and n with and without a
    knowledge-protocol constraint (models with no counted value are left out, as there)."""
    mine = _in_mode(aggregates, PROTOCOL_EFFECT_METRICS[metric])
    mine = mine[_counted_mask(mine, [metric])]
    sums = mine.groupby(["model", "has_protocol"], sort=True)[["n_values", "total"]].sum()
    counts = []
    for model in sorted(sums.index.get_level_values(0).unique()):
        block = sums.loc[model]
        n1, n2 = (int(block["n_values"].get(flag, 0)) for flag in (1, 0))
        if n1 + n2 == 0:
            continue
        k1, k2 = (int(float(block["total"].get(flag, 0.0))) for flag in (1, 0))
        counts.append((model, k1, n1, k2, n2))
    return effect_rows(counts, models, metric)


def robustness_states_from_aggregates(aggregates: pd.DataFrame,
                                      metrics: Sequence[str] = tuple(ROBUSTNESS_SUBSETS)) -> pd.DataFrame:
    """robustness.robustness_states from the aggregates (counted per mode and model at once)."""
    modes = sorted({ROBUSTNESS_SUBSETS[m] for m in metrics})
    counts = group_metric_states(aggregates[aggregates["mode"].isin(modes)], ["mode", "model"], list(metrics))
    frames = [counts[(counts["mode"] == ROBUSTNESS_SUBSETS[metric]) & (counts["metric"] == metric)]
              for metric in metrics]
    return pd.concat(frames, ignore_index=True)[["model", "metric", *STATE_COLUMNS.values()]]


def robustness_views_from_aggregates(aggregates: pd.DataFrame, models: pd.DataFrame) -> RobustnessViews:
    """robustness.robustness_views from the aggregates (narrowed once to the rows and columns the views read)."""
    aggregates = _views_rows(aggregates)
    effects = {k: protocol_effect_from_aggregates(aggregates, models, k) for k in PROTOCOL_EFFECT_METRICS}
    return (knowledge_gap_from_aggregates(aggregates, models), conflict_from_aggregates(aggregates, models), effects,
            robustness_states_from_aggregates(aggregates))


_VIEW_COLUMNS = ["model", "mode", "has_protocol", "metric", "state", "responses", "n_values", "total", "total_sq"]
VIEW_MODES: tuple[str, ...] = tuple(sorted(set(ROBUSTNESS_SUBSETS.values())))
VIEW_METRICS: tuple[str, ...] = tuple(dict.fromkeys([RESPONSES_METRIC, *ROBUSTNESS_SUBSETS, *GAP_LABELS]))


def _views_rows(aggregates: pd.DataFrame) -> pd.DataFrame:
    """The aggregate rows of the Robustness views' subsets and metrics (with each group's done responses), in the
    columns they read."""
    keep = aggregates["mode"].isin(list(VIEW_MODES)) & aggregates["metric"].isin(list(VIEW_METRICS))
    return aggregates.loc[keep, _VIEW_COLUMNS]


def robustness_aggregates(engine: Engine, run_ids: Sequence[int], judge: str) -> pd.DataFrame:
    """The aggregates the Robustness views read (enterprise_aggregates' rows of their subsets and metrics, selected
    by the database; the domain kept for the domain filter): a fifth of the rows the other results pages read."""
    rows = enterprise_aggregates(engine, run_ids, judge, VIEW_MODES, VIEW_METRICS)
    return rows[["domain", *_VIEW_COLUMNS]].reset_index(drop=True)
