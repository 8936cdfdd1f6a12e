"""Paired model comparison per subset (the Model pairs page, Figure 5)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from core.analysis import stats
from core.analysis.readmodel.bootstrap import _ci, bootstrap_means
from core.analysis.readmodel.scope import MODES
from core.analysis.readmodel.states import metric_state_counts
from core.metrics import get_metric

SUBSET_ACCURACY = {"noisy": "strict_ias", "gap": "rejection", "conflict": "conflict_recognition"}


def significance_stars(p: float) -> str:
    """'***' p<.001, '**' p<.01, '*' p<.05, 'n.s.' otherwise ('' for NaN)."""
    if p is None or np.isnan(p):
        return ""
    return "***" if p < 0.001 else "**" if p < 0.01 else "*" if p < 0.05 else "n.s."


def paired_comparison(scores: pd.DataFrame, model_a: str, model_b: str, metric: str | None = None, n_resamples: int = 2_000, seed: int = 0) -> pd.DataFrame:
    """Figure 5: model A vs model B on the same instances, per subset.

    metric=None uses each subset's accuracy (noisy: Strict IAS, gap: rejection, conflict: conflict recognition).
    Binary metrics get McNemar's test; continuous ones a paired t-test. The difference (A - B) has a paired
    bootstrap CI. Only instances where both models have a value are compared.
    """
    rows = []
    for mode in MODES:
        key = metric or SUBSET_ACCURACY[mode]
        sub = scores[scores["mode"] == mode]
        a = sub[sub["model"] == model_a].set_index("instance_uid")[key]
        b = sub[sub["model"] == model_b].set_index("instance_uid")[key]
        joined = pd.concat([a.rename("a"), b.rename("b")], axis=1, join="inner").dropna()
        row = {"mode": mode, "metric": key, "model_a": model_a, "model_b": model_b, "n": len(joined),
               "small_n": 0 < len(joined) < stats.SMALL_N}
        if joined.empty:
            rows.append(row | {"mean_a": np.nan, "mean_b": np.nan, "diff": np.nan, "ci_low": np.nan, "ci_high": np.nan, "p_value": np.nan, "test": "", "stars": ""})
            continue
        x, y = joined["a"].to_numpy(float), joined["b"].to_numpy(float)
        diff_reps = bootstrap_means((x - y)[:, None], n_resamples, seed)
        low, high = _ci(diff_reps)
        if get_metric(key).kind == "rate":
            mcnemar = stats.mcnemar(x.astype(int), y.astype(int))
            p, test = mcnemar.p_value, f"McNemar ({mcnemar.method})"
        elif len(joined) >= 2 and np.std(x - y) > 0:
            paired = stats.paired_t(x, y)
            p, test = paired.p_value, "paired t"
        else:
            p, test = np.nan, "paired t (no variance)"
        rows.append(row | {"mean_a": x.mean(), "mean_b": y.mean(), "diff": x.mean() - y.mean(), "ci_low": float(low[0]), "ci_high": float(high[0]), "p_value": p, "test": test, "stars": significance_stars(p)})
    return pd.DataFrame(rows)


def pair_states(scores: pd.DataFrame, pair: pd.DataFrame, models: Sequence[str]) -> pd.DataFrame:
    """Per row (subset and metric) of a paired comparison and per model: the count of each score state among the
    model's responses of that subset."""
    frames = [metric_state_counts(scores[(scores["mode"] == mode) & scores["model"].isin(models)], [metric])
              .assign(mode=mode) for mode, metric in zip(pair["mode"], pair["metric"], strict=True)]
    return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame(columns=["model", "metric", "mode"])
