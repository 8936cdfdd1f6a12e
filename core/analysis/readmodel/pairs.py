"""Paired model comparison per subset (the Model pairs page, Figure 5)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from core.analysis import stats
from core.analysis.readmodel.bootstrap import _ci, bootstrap_means
from core.analysis.readmodel.scope import MODES
from core.analysis.readmodel.states import metric_state_counts
from core.metrics import get_metric

SUBSET_ACCURACY = {"noisy": "strict_ias", "gap": "rejection", "conflict": "conflict_recognition"}
TOST_MARGIN = 0.2  # the paper's equivalence margin (20 points), used beside the paired t-test


@dataclass(frozen=True)
class PairStatistics:
    """How a paired comparison tests and bounds A − B: the alternative of McNemar's and the t-test ('two-sided', or
    'greater': A better than B) and the paired bootstrap's resamples."""

    alternative: stats.Alternative
    n_resamples: int
    description: str


PAIR_STATISTICS: dict[str, PairStatistics] = {
    "product": PairStatistics("two-sided", 2_000, "two-sided tests, 2,000 paired bootstrap resamples"),
    "paper": PairStatistics("greater", 10_000, "EnterpriseRAG's Figure 5: one-sided (A better than B), "
                                               "10,000 paired bootstrap resamples"),
}

PAIR_EMPTY = {"mean_a": np.nan, "mean_b": np.nan, "diff": np.nan, "ci_low": np.nan, "ci_high": np.nan,
              "p_value": np.nan, "test": "", "stars": "", "t": np.nan, "t_p": np.nan, "cohen_d": np.nan,
              "tost_p": np.nan, "tost_equivalent": False}


def significance_stars(p: float) -> str:
    """'***' p<.001, '**' p<.01, '*' p<.05, 'n.s.' otherwise ('' for NaN)."""
    if p is None or np.isnan(p):
        return ""
    return "***" if p < 0.001 else "**" if p < 0.01 else "*" if p < 0.05 else "n.s."


def paired_t_columns(x: np.ndarray, y: np.ndarray, alternative: stats.Alternative) -> dict:
    """The paired t-test of x − y (t, its p under `alternative`), Cohen's d_z and TOST at ±TOST_MARGIN beside it;
    NaN where the differences have no spread (a t statistic is undefined there)."""
    if len(x) < 2 or np.std(x - y) == 0:
        return {"t": np.nan, "t_p": np.nan, "cohen_d": np.nan, "tost_p": np.nan, "tost_equivalent": False}
    paired, equivalence = stats.paired_t(x, y, alternative), stats.tost(x - y, TOST_MARGIN)
    return {"t": paired.t, "t_p": paired.p_value, "cohen_d": paired.cohen_dz, "tost_p": equivalence.p_value,
            "tost_equivalent": equivalence.equivalent}


def paired_comparison(scores: pd.DataFrame, model_a: str, model_b: str, metric: str | None = None,
                      n_resamples: int | None = None, seed: int = 0, statistics: str = "product") -> pd.DataFrame:
    """Figure 5: model A vs model B on the same instances, per subset.

    metric=None uses each subset's accuracy (noisy: Strict IAS, gap: rejection, conflict: conflict recognition).
    Binary metrics get McNemar's test; continuous ones a paired t-test. The difference (A - B) has a paired
    bootstrap CI. Only instances where both models have a value are compared. `statistics` names the tests'
    alternative and the resamples (PAIR_STATISTICS: 'product' two-sided with 2,000, 'paper' one-sided with 10,000);
    `n_resamples` overrides its resamples. Every row also carries the paired t-test, Cohen's d_z and TOST.
    """
    chosen = PAIR_STATISTICS[statistics]
    resamples = n_resamples or chosen.n_resamples
    rows = []
    for mode in MODES:
        key = metric or SUBSET_ACCURACY[mode]
        sub = scores[scores["mode"] == mode]
        a = sub[sub["model"] == model_a].set_index("instance_uid")[key]
        b = sub[sub["model"] == model_b].set_index("instance_uid")[key]
        joined = pd.concat([a.rename("a"), b.rename("b")], axis=1, join="inner").dropna()
        row = {"mode": mode, "metric": key, "model_a": model_a, "model_b": model_b, "n": len(joined),
               "small_n": 0 < len(joined) < stats.SMALL_N, "statistics": statistics}
        if joined.empty:
            rows.append(row | PAIR_EMPTY)
            continue
        x, y = joined["a"].to_numpy(float), joined["b"].to_numpy(float)
        diff_reps = bootstrap_means((x - y)[:, None], resamples, seed)
        low, high = _ci(diff_reps)
        t_columns = paired_t_columns(x, y, chosen.alternative)
        if get_metric(key).kind == "rate":
            mcnemar = stats.mcnemar(x.astype(int), y.astype(int), chosen.alternative)
            p, test = mcnemar.p_value, f"McNemar ({mcnemar.method})"
        else:
            p, test = t_columns["t_p"], "paired t" if not np.isnan(t_columns["t_p"]) else "paired t (no variance)"
        if chosen.alternative != "two-sided":
            test += ", one-sided"
        rows.append(row | {"mean_a": x.mean(), "mean_b": y.mean(), "diff": x.mean() - y.mean(), "ci_low": float(low[0]),
                           "ci_high": float(high[0]), "p_value": p, "test": test, "stars": significance_stars(p)}
                    | t_columns)
    return pd.DataFrame(rows)


def pair_states(scores: pd.DataFrame, pair: pd.DataFrame, models: Sequence[str]) -> pd.DataFrame:
    """Per row (subset and metric) of a paired comparison and per model: the count of each score state among the
    model's responses of that subset."""
    frames = [metric_state_counts(scores[(scores["mode"] == mode) & scores["model"].isin(models)], [metric])
              .assign(mode=mode) for mode, metric in zip(pair["mode"], pair["metric"], strict=True)]
    return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame(columns=["model", "metric", "mode"])
