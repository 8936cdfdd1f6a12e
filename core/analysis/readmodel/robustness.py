"""Knowledge-gap, conflict and protocol-effect views (the Robustness page, Figures 2, 3 and 6)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from core.analysis import stats
from core.analysis.readmodel.leaderboard import LONG_COLUMNS, group_positions, mean_rows
from core.analysis.readmodel.scope import with_model_info
from core.analysis.readmodel.states import metric_state_counts


def knowledge_gap_view(scores: pd.DataFrame, models: pd.DataFrame) -> pd.DataFrame:
    """Figure 2: on the gap subset, per model knowledge-protocol adherence (Loose IAS) and rejection accuracy, with CIs."""
    gap = scores[scores["mode"] == "gap"]
    labels = {"loose_knowledge_protocol": "Protocol adherence", "rejection": "Rejection accuracy"}
    out = pd.DataFrame(mean_rows(gap, list(labels)), columns=LONG_COLUMNS)
    out.insert(2, "label", out["metric"].map(labels))
    return with_model_info(out, models)


def conflict_view(scores: pd.DataFrame, models: pd.DataFrame) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Figure 3 / Table 3: per model conflict recognition and coverage on the conflict subset, ranked by CR;
    and Spearman rho between the two per paradigm (needs >= 3 models with both values)."""
    conflict = scores[scores["mode"] == "conflict"]
    per_model = conflict.groupby("model", sort=True).agg(
        conflict_recognition=("conflict_recognition", "mean"),
        coverage=("coverage", "mean"),
        n=("conflict_recognition", lambda s: int(s.notna().sum())),
    )
    return conflict_ranking(per_model.reset_index(), models)


def conflict_ranking(per_model: pd.DataFrame, models: pd.DataFrame) -> tuple[pd.DataFrame, pd.DataFrame]:
    """conflict_view from its per-model means (model, conflict_recognition, coverage, n): ranked by CR, with the
    Spearman rho per paradigm."""
    per_model = with_model_info(per_model, models)
    per_model = per_model.sort_values("conflict_recognition", ascending=False, na_position="last").reset_index(drop=True)
    per_model["rank"] = per_model["conflict_recognition"].rank(method="min", ascending=False)
    per_model["small_n"] = (per_model["n"] > 0) & (per_model["n"] < stats.SMALL_N)
    corr_rows = []
    for paradigm, block in per_model[~per_model["is_baseline"]].groupby("paradigm"):
        block = block.dropna(subset=["conflict_recognition", "coverage"])
        if len(block) >= 3 and block["conflict_recognition"].nunique() > 1 and block["coverage"].nunique() > 1:
            res = stats.spearman(block["conflict_recognition"].to_numpy(), block["coverage"].to_numpy())
            corr_rows.append({"paradigm": paradigm, "rho": res.rho, "p_value": res.p_value, "models": res.n})
        else:
            corr_rows.append({"paradigm": paradigm, "rho": np.nan, "p_value": np.nan, "models": len(block)})
    return per_model, pd.DataFrame(corr_rows, columns=["paradigm", "rho", "p_value", "models"])


PROTOCOL_EFFECT_METRICS = {"rejection": "gap", "conflict_recognition": "conflict"}


def protocol_effect(scores: pd.DataFrame, models: pd.DataFrame, metric: str) -> pd.DataFrame:
    """Figure 6: per model accuracy with vs without knowledge-protocol constraints (independent groups).

    Uses stats.two_proportions: Yates chi-square, or Fisher's exact test for small expected counts; the
    difference (with - without) has a Wald CI. Models lacking either group get a row with a note.
    """
    mode = PROTOCOL_EFFECT_METRICS[metric]
    subset = scores.loc[(scores["mode"] == mode) & scores[metric].notna(), ["model", metric, "has_protocol"]]
    values, protocol = subset[metric].to_numpy(dtype=float), subset["has_protocol"].astype(bool).to_numpy()
    counts = []
    for model, positions in group_positions(subset["model"]):  # groupby("model") as row positions: no frame per model
        with_p, without = values[positions][protocol[positions]], values[positions][~protocol[positions]]
        counts.append((model, int(with_p.sum()), int(with_p.size), int(without.sum()), int(without.size)))
    return effect_rows(counts, models, metric)


EFFECT_COLUMNS = ["model", "metric", "k_with", "n_with", "k_without", "n_without", "small_n", "acc_with", "acc_without",
                  "diff", "ci_low", "ci_high", "p_value", "test", "note"]


def effect_rows(counts: Sequence[tuple[str, int, int, int, int]], models: pd.DataFrame, metric: str) -> pd.DataFrame:
    """protocol_effect from its per-model counts (model, correct with, n with, correct without, n without)."""
    rows = []
    for model, k1, n1, k2, n2 in counts:
        row = {"model": model, "metric": metric, "k_with": k1, "n_with": n1, "k_without": k2, "n_without": n2,
               "small_n": min(n1, n2) < stats.SMALL_N}
        if n1 and n2:
            res = stats.two_proportions(k1, n1, k2, n2)
            row |= {"acc_with": res.p1, "acc_without": res.p2, "diff": res.diff, "ci_low": res.ci_low, "ci_high": res.ci_high, "p_value": res.p_value, "test": res.method, "note": ""}
        else:
            row |= {"acc_with": k1 / n1 if n1 else np.nan, "acc_without": k2 / n2 if n2 else np.nan, "diff": np.nan, "ci_low": np.nan, "ci_high": np.nan, "p_value": np.nan, "test": "", "note": "no instances with protocol" if not n1 else "no instances without protocol"}
        rows.append(row)
    return with_model_info(pd.DataFrame(rows, columns=EFFECT_COLUMNS), models)

# metric of a Robustness view -> the subset (mode) whose responses are behind it
ROBUSTNESS_SUBSETS = {"loose_knowledge_protocol": "gap", "rejection": "gap", "conflict_recognition": "conflict",
                      "coverage": "conflict"}


def robustness_states(scores: pd.DataFrame, metrics: Sequence[str] = tuple(ROBUSTNESS_SUBSETS)) -> pd.DataFrame:
    """Per model and metric of the Robustness views (or of `metrics`): the count of each score state among its
    subset's responses."""
    frames = [metric_state_counts(scores[scores["mode"] == ROBUSTNESS_SUBSETS[metric]], [metric]) for metric in metrics]
    return pd.concat(frames, ignore_index=True)


RobustnessViews = tuple[pd.DataFrame, tuple[pd.DataFrame, pd.DataFrame], dict[str, pd.DataFrame], pd.DataFrame]


def robustness_views(scores: pd.DataFrame, models: pd.DataFrame) -> RobustnessViews:
    """The Robustness page's views of the per-response frame: knowledge gap, conflict ranking with Spearman's rho,
    the protocol effect per PROTOCOL_EFFECT_METRICS metric, and the state counts behind them."""
    effects = {k: protocol_effect(scores, models, k) for k in PROTOCOL_EFFECT_METRICS}
    return knowledge_gap_view(scores, models), conflict_view(scores, models), effects, robustness_states(scores)
