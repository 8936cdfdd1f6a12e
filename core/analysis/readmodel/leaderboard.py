"""The leaderboard: per model and metric a mean with its interval, the orchestration gap and rank marks."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from functools import partial
from typing import Any

import numpy as np
import pandas as pd

from core.analysis import stats
from core.analysis.readmodel.scope import COST_METRICS, METRICS, QUALITY_METRICS, model_order, with_model_info
from core.analysis.readmodel.states import metric_state_counts
from core.metrics import get_metric

GAP_KEY = "orchestration_gap"

GAP_LABEL = get_metric(GAP_KEY).label

LONG_COLUMNS = ["model", "metric", "value", "ci_low", "ci_high", "n", "interval", "small_n"]


def group_positions(column: pd.Series) -> list[tuple[Any, np.ndarray]]:
    """(value, row positions in row order) per distinct non-missing value of `column`, by sorted value: the groups of
    groupby(column, sort=True) as positions, without building a frame per group."""
    codes, uniques = pd.factorize(column, sort=True)
    order = np.argsort(codes, kind="stable")
    bounds = np.searchsorted(codes[order], np.arange(len(uniques) + 1))  # missing values (code -1) sort first
    return [(uniques[k], order[bounds[k] : bounds[k + 1]]) for k in range(len(uniques))]


def mean_rows(frame: pd.DataFrame, keys: Sequence[str], by: str = "model") -> list[dict]:
    """Long rows (by, metric, value, ci_low, ci_high, n, interval, small_n) of the column means per group, each with
    the interval of its declared kind (stats.metric_intervals)."""
    rows: list[dict] = []
    declared = [get_metric(key) for key in keys]
    values = frame[list(keys)].to_numpy(dtype=float)  # one conversion; each group is a row selection of it
    for name, positions in group_positions(frame[by]):
        ci = stats.metric_intervals(np.asfortranarray(values[positions]), declared)
        rows += [{by: name, "metric": key, "value": float(ci.mean[j]), "ci_low": float(ci.ci_low[j]),
                  "ci_high": float(ci.ci_high[j]), "n": int(ci.n[j]), "interval": str(ci.method[j]),
                  "small_n": bool(0 < ci.n[j] < stats.SMALL_N)} for j, key in enumerate(keys)]
    return rows


GAP_ASSUMPTION = ("The gap's point (Loose minus Strict IAS as shown) assumes undetermined constraints are missing at "
                  "random. Its interval does not: it spans the MOVER interval of that point and the worst-case bound "
                  "(every undetermined constraint set to pass or to fail, whichever moves the gap furthest), so it "
                  "holds however the judge leaves constraints undetermined, also when it abstains on hard cases "
                  "(bench/bench_labels_pay.py --part gap, docs/ppi.md). Where no constraint was undetermined the two "
                  "agree.")
GAP_MIN_STRICT = 2  # fewer responses with a determined Strict IAS: the gap shows "no data" (bench/bench_ppi_coverage.py)


def _gap_interval(loose: np.ndarray, strict: np.ndarray, shown: dict[str, dict]) -> tuple[float, float]:
    """MOVER interval (Zou and Donner 2008) for shown Loose minus shown Strict IAS, from their shown intervals and
    the correlation of the two means (each response's influence on both), cut to [-1, 1].

    It inherits the small-n honesty of each metric's own interval, where a delta-method interval collapses when the
    few determined Strict values agree (bench/bench_ppi_coverage.py: >= 93% at any share of Strict determined).
    """
    (m_l, l_l, u_l, n_l), (m_s, l_s, u_s, n_s) = ((shown[k]["value"], shown[k]["ci_low"], shown[k]["ci_high"],
                                                   shown[k]["n"]) for k in ("loose_ias", "strict_ias"))
    dev_l, dev_s = np.nan_to_num((loose - m_l) / n_l), np.nan_to_num((strict - m_s) / n_s)
    spread = np.sqrt((dev_l**2).sum() * (dev_s**2).sum())
    r = float((dev_l * dev_s).sum() / spread) if spread > 0 else 0.0
    below = np.sqrt(max((m_l - l_l) ** 2 + (u_s - m_s) ** 2 - 2 * r * (m_l - l_l) * (u_s - m_s), 0.0))
    above = np.sqrt(max((u_l - m_l) ** 2 + (m_s - l_s) ** 2 - 2 * r * (u_l - m_l) * (m_s - l_s), 0.0))
    return float(max(m_l - m_s - below, -1.0)), float(min(m_l - m_s + above, 1.0))


GAP_METHOD = "MOVER ∪ worst-case bound"  # the gap interval that holds under any missingness
GAP_BOUND_COLUMNS = ["model", "bound_low", "bound_high", "responses", "undetermined"]


def gap_bounds(scores: pd.DataFrame, confidence: float = 0.95) -> pd.DataFrame:
    """Per model, a sensitivity bound for the orchestration gap that holds however the undetermined constraints
    fall: each response's gap over all its constraints lies in [lo, hi] (every undetermined constraint set to pass
    or fail, whichever moves it furthest); the bound is the lower one-sided (1 - a/2) t limit of mean(lo) to the
    upper one of mean(hi), cut to [-1, 1]. `undetermined` counts responses with an undetermined constraint."""
    from scipy import stats as st

    rows: list[dict] = []
    if not {"n_constraints", "n_constraint_errors", "n_constraint_unjudged"} <= set(scores.columns):
        return pd.DataFrame(rows, columns=GAP_BOUND_COLUMNS)
    for model, g in scores.groupby("model", sort=True):
        k = g["n_constraints"].to_numpy(float)
        hidden = (g["n_constraint_errors"].fillna(0) + g["n_constraint_unjudged"].fillna(0)).to_numpy(float)
        judged = k - hidden
        passed = np.nan_to_num(g["loose_ias"].to_numpy(float)) * judged
        keep = k > 0
        k, hidden, judged, passed = k[keep], hidden[keep], judged[keep], passed[keep]
        with np.errstate(invalid="ignore", divide="ignore"):
            exact = passed / k - (passed == k).astype(float)
            failed = judged - passed > 0.5
            lo = np.where(hidden == 0, exact, np.where(failed, passed / k, 0.0))
            hi = np.where(hidden == 0, exact, np.where(failed, (passed + hidden) / k, (k - 1) / k))
        n = lo.size
        if n < 2:
            rows.append({"model": model, "bound_low": np.nan, "bound_high": np.nan, "responses": n,
                         "undetermined": int((hidden > 0).sum())})
            continue
        q = st.t.ppf(1 - (1 - confidence) / 2, n - 1)
        rows.append({"model": model, "bound_low": float(max(lo.mean() - q * lo.std(ddof=1) / np.sqrt(n), -1.0)),
                     "bound_high": float(min(hi.mean() + q * hi.std(ddof=1) / np.sqrt(n), 1.0)), "responses": n,
                     "undetermined": int((hidden > 0).sum())})
    return pd.DataFrame(rows, columns=GAP_BOUND_COLUMNS)


def _gap_rows(scores: pd.DataFrame, means: list[dict]) -> list[dict]:
    """Orchestration gap per model = shown Loose IAS − shown Strict IAS (the point, which assumes undetermined
    constraints are missing at random), with the interval spanning its MOVER interval (_gap_interval) and the
    worst-case bound (gap_bounds) where the constraint counts are known, so the interval holds under any
    missingness; "no data" where fewer than GAP_MIN_STRICT responses have a determined Strict IAS. `means` are
    mean_rows' rows."""
    shown_by_model = shown_rows(means)
    values = scores[["loose_ias", "strict_ias"]].to_numpy(dtype=float)
    bounds = gap_bounds(scores).set_index("model")
    return [gap_row(model, shown_by_model[model], bounds,
                    partial(_gap_interval, values[positions, 0], values[positions, 1], shown_by_model[model]))
            for model, positions in group_positions(scores["model"])]


def shown_rows(means: list[dict]) -> dict[Any, dict[str, dict]]:
    """mean_rows' rows by model and metric."""
    shown_by_model: dict[Any, dict[str, dict]] = {}
    for row in means:
        shown_by_model.setdefault(row["model"], {})[row["metric"]] = row
    return shown_by_model


def gap_row(model: Any, shown: dict[str, dict], bounds: pd.DataFrame,
            mover: Callable[[], tuple[float, float]]) -> dict:
    """One model's orchestration gap row (_gap_rows) from its shown rows, the bound table indexed by model
    (gap_bounds) and its MOVER interval (`mover`, called only with enough determined Strict IAS)."""
    n_s, n_l = int(shown["strict_ias"]["n"]), int(shown["loose_ias"]["n"])
    enough = n_s >= GAP_MIN_STRICT and n_l >= 2
    value = float(shown["loose_ias"]["value"] - shown["strict_ias"]["value"]) if enough else np.nan
    low, high = mover() if enough else (np.nan, np.nan)
    method = "MOVER" if enough else ""
    if enough and model in bounds.index and not np.isnan(bounds.at[model, "bound_low"]):
        low, high = min(low, float(bounds.at[model, "bound_low"])), max(high, float(bounds.at[model, "bound_high"]))
        method = GAP_METHOD
    return {"model": model, "metric": GAP_KEY, "value": value, "ci_low": low, "ci_high": high, "n": n_s,
            "interval": method, "small_n": bool(0 < n_s < stats.SMALL_N)}


def _marks(long: pd.DataFrame) -> pd.Series:
    """'best' / 'second' per metric among non-baseline models; never for a tie of every model, nor for a 0 score.

    Ranks as rank(method='min'): a value's rank is 1 + the number of strictly better values."""
    marks = np.full(len(long), "", dtype=object)
    metric = long["metric"].to_numpy(dtype=object)
    value = long["value"].to_numpy(dtype=float)
    eligible = ~long["is_baseline"].to_numpy(dtype=bool) & ~np.isnan(value)
    for key in dict.fromkeys(metric):
        higher = get_metric(key).higher_is_better
        positions = np.flatnonzero((metric == key) & eligible & ((value > 0) if higher else True))
        block = value[positions]
        if block.size == 0 or (block.size > 1 and np.unique(block).size == 1):
            continue
        better = (block[None, :] > block[:, None]) if higher else (block[None, :] < block[:, None])
        rank = 1 + better.sum(axis=1)
        marks[positions[rank == 1]] = "best"
        marks[positions[rank == 2]] = "second"
    out = pd.Series("", index=long.index)
    out[:] = marks
    return out


def with_amounts(scores: pd.DataFrame) -> pd.DataFrame:
    """The per-response frame with its cost and latency per 1k instances (a missing cost counts as $0)."""
    return scores.assign(cost_per_1k=scores["cost_usd"].fillna(0.0) * 1000.0,
                         latency_min_per_1k=scores["latency_ms"] * (1000.0 / 60_000.0))


def leaderboard_states(scores: pd.DataFrame) -> pd.DataFrame:
    """Per model and leaderboard metric (quality, cost and latency): the count of each score state among the
    responses (an amount is scored where measured, unjudged where missing)."""
    return metric_state_counts(with_amounts(scores), [m.id for m in QUALITY_METRICS + COST_METRICS])


def leaderboard(scores: pd.DataFrame, models: pd.DataFrame) -> pd.DataFrame:
    """Per model and metric: mean, 95% CI (stats.interval), n, interval method, small-n flag and rank mark.

    `scores` is prepared (see prepare_scores) and already filtered. Long format, one row per (model, metric),
    including the orchestration gap (Loose minus Strict IAS as shown) and cost/latency per 1k instances.
    Ranks are assigned among non-baseline models only; baselines are calibration rows.
    """
    keys = [m.id for m in QUALITY_METRICS]
    frame = with_amounts(scores)
    rows = mean_rows(frame, [*keys, "cost_per_1k", "latency_min_per_1k"])
    rows += _gap_rows(frame, rows) if len(frame) else []
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


LEADERBOARD_PARTS = {
    "RAG quality and instruction adherence": ("faithfulness", "coverage", "loose_ias", "strict_ias"),
    "Orchestration gap and Loose IAS by constraint category": (GAP_KEY, "loose_persona", "loose_output",
                                                               "loose_knowledge_protocol"),
    "Robustness": ("rejection", "conflict_recognition", "over_abstention"),
    "Cost and latency": ("cost_per_1k", "latency_min_per_1k"),
}


def leaderboard_parts(table: pd.DataFrame) -> dict[str, pd.DataFrame]:
    """leaderboard_table split into narrower tables of at most four metrics each (Model in every one, Group in the
    first), so each fits a 1440 px screen; parts without any of their metrics are left out."""
    parts: dict[str, pd.DataFrame] = {}
    for title, keys in LEADERBOARD_PARTS.items():
        labels = [get_metric(k).label for k in keys if get_metric(k).label in table.columns]
        if labels:
            parts[title] = table[["Model", *([] if parts else ["Group"]), *labels]]
    return parts
