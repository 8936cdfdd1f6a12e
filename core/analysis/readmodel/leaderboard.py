"""The leaderboard: per model and metric a mean with its interval, the orchestration gap and rank marks."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from core.analysis import stats
from core.analysis.readmodel.scope import METRICS, QUALITY_METRICS, model_order, with_model_info
from core.metrics import get_metric

GAP_KEY = "orchestration_gap"

GAP_LABEL = get_metric(GAP_KEY).label

LONG_COLUMNS = ["model", "metric", "value", "ci_low", "ci_high", "n", "interval", "small_n"]

def mean_rows(frame: pd.DataFrame, keys: Sequence[str], by: str = "model") -> list[dict]:
    """Long rows (by, metric, value, ci_low, ci_high, n, interval, small_n) of the column means per group, each with
    the interval of its declared kind (stats.metric_intervals)."""
    rows: list[dict] = []
    declared = [get_metric(key) for key in keys]
    for name, group in frame[[by, *keys]].groupby(by, sort=True):  # only the columns used: no copy of the rest per group
        ci = stats.metric_intervals(group[list(keys)].to_numpy(dtype=float), declared)
        rows += [{by: name, "metric": key, "value": float(ci.mean[j]), "ci_low": float(ci.ci_low[j]),
                  "ci_high": float(ci.ci_high[j]), "n": int(ci.n[j]), "interval": str(ci.method[j]),
                  "small_n": bool(0 < ci.n[j] < stats.SMALL_N)} for j, key in enumerate(keys)]
    return rows

GAP_MIN_STRICT = 2  # fewer responses with a determined Strict IAS: the gap shows "no data" (bench/bench_ppi_coverage.py)

def _gap_interval(loose: np.ndarray, strict: np.ndarray, shown: pd.DataFrame) -> tuple[float, float]:
    """MOVER interval (Zou and Donner 2008) for shown Loose minus shown Strict IAS, from their shown intervals and
    the correlation of the two means (each response's influence on both), cut to [-1, 1].

    It inherits the small-n honesty of each metric's own interval, where a delta-method interval collapses when the
    few determined Strict values agree (bench/bench_ppi_coverage.py: >= 93% at any share of Strict determined).
    """
    (m_l, l_l, u_l, n_l), (m_s, l_s, u_s, n_s) = (shown.loc[k, ["value", "ci_low", "ci_high", "n"]] for k in
                                                  ("loose_ias", "strict_ias"))
    dev_l, dev_s = np.nan_to_num((loose - m_l) / n_l), np.nan_to_num((strict - m_s) / n_s)
    spread = np.sqrt((dev_l**2).sum() * (dev_s**2).sum())
    r = float((dev_l * dev_s).sum() / spread) if spread > 0 else 0.0
    below = np.sqrt(max((m_l - l_l) ** 2 + (u_s - m_s) ** 2 - 2 * r * (m_l - l_l) * (u_s - m_s), 0.0))
    above = np.sqrt(max((u_l - m_l) ** 2 + (m_s - l_s) ** 2 - 2 * r * (u_l - m_l) * (m_s - l_s), 0.0))
    return float(max(m_l - m_s - below, -1.0)), float(min(m_l - m_s + above, 1.0))

def _gap_rows(scores: pd.DataFrame, means: pd.DataFrame) -> list[dict]:
    """Orchestration gap per model = shown Loose IAS − shown Strict IAS, with a MOVER interval (_gap_interval);
    "no data" where fewer than GAP_MIN_STRICT responses have a determined Strict IAS."""
    rows = []
    for model, group in scores[["model", "loose_ias", "strict_ias"]].groupby("model", sort=True):
        shown = means.loc[model]
        n_s, n_l = int(shown.loc["strict_ias", "n"]), int(shown.loc["loose_ias", "n"])
        enough = n_s >= GAP_MIN_STRICT and n_l >= 2
        value = float(shown.loc["loose_ias", "value"] - shown.loc["strict_ias", "value"]) if enough else np.nan
        low, high = (_gap_interval(group["loose_ias"].to_numpy(float), group["strict_ias"].to_numpy(float), shown)
                     if enough else (np.nan, np.nan))
        rows.append({"model": model, "metric": GAP_KEY, "value": value, "ci_low": low, "ci_high": high,
                     "n": n_s, "interval": "MOVER" if enough else "", "small_n": bool(0 < n_s < stats.SMALL_N)})
    return rows

def _marks(long: pd.DataFrame) -> pd.Series:
    """'best' / 'second' per metric among non-baseline models; never for a tie of every model, nor for a 0 score."""
    marks = pd.Series("", index=long.index)
    used = long[["metric", "is_baseline", "value"]]
    for metric, idx in used.groupby("metric").groups.items():
        block = used.loc[idx]
        block = block[~block["is_baseline"] & block["value"].notna()]
        ascending = not get_metric(metric).higher_is_better
        if not ascending:
            block = block[block["value"] > 0]
        if block.empty or (len(block) > 1 and block["value"].nunique() == 1):
            continue
        order = block["value"].rank(method="min", ascending=ascending)
        marks[order[order == 1].index] = "best"
        marks[order[order == 2].index] = "second"
    return marks

def leaderboard(scores: pd.DataFrame, models: pd.DataFrame) -> pd.DataFrame:
    """Per model and metric: mean, 95% CI (stats.interval), n, interval method, small-n flag and rank mark.

    `scores` is prepared (see prepare_scores) and already filtered. Long format, one row per (model, metric),
    including the orchestration gap (Loose minus Strict IAS as shown) and cost/latency per 1k instances.
    Ranks are assigned among non-baseline models only; baselines are calibration rows.
    """
    keys = [m.id for m in QUALITY_METRICS]
    frame = scores.assign(cost_per_1k=scores["cost_usd"].fillna(0.0) * 1000.0,
                          latency_min_per_1k=scores["latency_ms"] * (1000.0 / 60_000.0))
    rows = mean_rows(frame, [*keys, "cost_per_1k", "latency_min_per_1k"])
    means = pd.DataFrame(rows, columns=LONG_COLUMNS).set_index(["model", "metric"])
    rows += _gap_rows(frame, means) if len(frame) else []
    long = with_model_info(pd.DataFrame(rows, columns=LONG_COLUMNS), models)
    long["label"] = long["metric"].map(lambda k: get_metric(k).label)
    long["mark"] = _marks(long)
    order = model_order(long["model"].unique(), models)
    long["model"] = pd.Categorical(long["model"], categories=order, ordered=True)
    return long.sort_values(["model", "metric"]).reset_index(drop=True).assign(model=lambda d: d["model"].astype(str))

def leaderboard_table(long: pd.DataFrame, percent: bool = True) -> pd.DataFrame:
    """Wide display table: one row per model (Table 2 order), 'value [low, high] n=N' cells, best ★ second ☆.

    A cell with no value reads "no data"; n below stats.SMALL_N carries a '†' (small sample).
    """
    if long.empty:
        return pd.DataFrame()
    order = list(dict.fromkeys(long["model"]))

    def cell(r: dict) -> str:
        if pd.isna(r["value"]):
            return "no data"
        scale = get_metric(r["metric"]).scale if percent else 1.0
        digits = 1 if scale == 100.0 else 2
        mark = {"best": " ★", "second": " ☆"}.get(r["mark"], "")
        bounds = "" if pd.isna(r["ci_low"]) else f" [{r['ci_low'] * scale:.{digits}f}, {r['ci_high'] * scale:.{digits}f}]"
        small = "†" if r["small_n"] else ""
        return f"{r['value'] * scale:.{digits}f}{bounds} n={int(r['n'])}{small}{mark}"

    frame = long.assign(cell=[cell(r) for r in long[["metric", "value", "ci_low", "ci_high", "n", "small_n", "mark"]]
                              .to_dict("records")])
    wide = frame.pivot(index="model", columns="label", values="cell")
    labels = [METRICS[k].label for k in METRICS if METRICS[k].label in wide.columns]
    if GAP_LABEL in wide.columns:
        labels.insert(labels.index("Strict IAS") + 1 if "Strict IAS" in labels else 0, GAP_LABEL)
    info = frame.drop_duplicates("model").set_index("model")[["group"]]
    wide = info.join(wide[labels]).reindex(order)
    return wide.reset_index().rename(columns={"model": "Model", "group": "Group"})
