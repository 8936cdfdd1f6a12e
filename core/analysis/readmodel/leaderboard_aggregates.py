"""The leaderboard from aggregates (readmodel.enterprise_aggregates): per model and metric the mean, its interval of
the declared kind, n, the orchestration gap with its MOVER interval and worst-case bound, the state counts and the
gap's bound table, from per-group sums instead of per-response rows. Each is leaderboard.py's computation rewritten
on sums (n, sum, sum of squares); tests/analysis/test_enterprise_aggregates.py holds them equal to it to 1e-12.

Sums cannot tell equal values from nearly equal ones exactly: a column whose centred sum of squares is below
EQUAL_SHARE of its sum of squares is taken as equal values (variance 0, as stats.metric_intervals does for equal
values). Real scores differ far more than that (a single value 1/8 away among 100,000 is 1.6e-7 of it).
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import partial

import numpy as np
import pandas as pd
from scipy import stats as st
from sqlalchemy.engine import Engine

from core.analysis import stats
from core.analysis.readmodel.aggregates import stored_model_sums
from core.analysis.readmodel.enterprise_aggregates import enterprise_aggregates, filter_aggregates, group_metric_states
from core.analysis.readmodel.leaderboard import (
    GAP_BOUND_COLUMNS,
    LONG_COLUMNS,
    _marks,
    gap_row,
    shown_rows,
)
from core.analysis.readmodel.scope import COST_METRICS, QUALITY_METRICS, model_order, with_model_info
from core.analysis.readmodel.states import STATE_COLUMNS
from core.metrics import STATES, VERDICT_STATES, MetricDeclaration, get_metric
from core.scoring.summaries import RESPONSES_METRIC, stale_summary_runs

EQUAL_SHARE = 1e-10
BOARD_METRICS: tuple[str, ...] = tuple(m.id for m in QUALITY_METRICS + COST_METRICS)


def with_over_abstention(aggregates: pd.DataFrame) -> pd.DataFrame:
    """The aggregates with over-abstention's rows: refusal's outside the gap subset, not applicable on gap instances
    (scope.prepare_scores)."""
    rows = aggregates[aggregates["metric"] == "refusal"].copy()
    gap = (rows["mode"] == "gap").to_numpy()
    rows["metric"] = "over_abstention"
    rows.loc[gap, "state"] = "not_applicable"
    rows.loc[gap, ["n_values", "total", "total_sq"]] = 0
    return pd.concat([aggregates, rows], ignore_index=True)


def _counted_mask(aggregates: pd.DataFrame, metrics: Sequence[str]) -> np.ndarray:
    """Rows of the aggregates whose metric is one of `metrics` and whose state that metric counts in its mean (the
    gap's helpers, named with a leading '_', count every row)."""
    keys = list(dict.fromkeys(metrics))
    # counted[metric code, state code]; code -1 (a metric not asked for, a state outside STATES) is the last row/column
    counted = np.zeros((len(keys) + 1, len(STATES) + 1), dtype=bool)
    for i, key in enumerate(keys):
        if key.startswith("_"):
            counted[i, :] = True
        else:
            counted[i, [STATES.index(VERDICT_STATES[s]) for s in get_metric(key).counted_statuses()]] = True
    metric_codes = pd.Index(keys).get_indexer(aggregates["metric"])
    state_codes = pd.Index(list(STATES)).get_indexer(aggregates["state"])
    return counted[metric_codes, state_codes]


def model_sums(aggregates: pd.DataFrame, metrics: Sequence[str]) -> dict[str, pd.DataFrame]:
    """Per metric: n, sum and sum of squares of its counted values per model with a done response (sorted; 0 where a
    model has none), summed in one bincount per column over (metric, model) cells."""
    models = pd.Index(sorted(aggregates.loc[aggregates["metric"] == RESPONSES_METRIC, "model"].unique()), name="model")
    counted = aggregates[_counted_mask(aggregates, metrics)]
    model_codes = models.get_indexer(counted["model"])
    cells = pd.Index(list(metrics)).get_indexer(counted["metric"]) * len(models) + model_codes
    mine, size = model_codes >= 0, len(metrics) * len(models)
    n = np.bincount(cells[mine], weights=counted["n_values"].to_numpy(dtype=float)[mine], minlength=size)
    total, total_sq = (np.bincount(cells[mine], weights=counted[c].to_numpy(dtype=float)[mine], minlength=size)
                       for c in ("total", "total_sq"))
    shape = (len(metrics), len(models))
    n, total, total_sq = n.reshape(shape).astype("int64"), total.reshape(shape), total_sq.reshape(shape)
    return {m: pd.DataFrame({"n_values": n[i], "total": total[i], "total_sq": total_sq[i]}, index=models)
            for i, m in enumerate(metrics)}


def _moments(n: np.ndarray, total: np.ndarray, total_sq: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Means, sample variances (0 for equal values, see EQUAL_SHARE) and whether the values are equal, from sums."""
    with np.errstate(invalid="ignore", divide="ignore"):
        m = total / n
        centred = total_sq - total * m
        equal = (n > 0) & (centred <= EQUAL_SHARE * total_sq)
        var = np.where(equal, 0.0, centred / (n - 1))
    var = np.where(var <= stats._ROUNDING_VAR * (m**2 + 1), 0.0, var)
    return m, var, equal


def sums_intervals(n: np.ndarray, total: np.ndarray, total_sq: np.ndarray, metrics: Sequence[MetricDeclaration],
                   confidence: float = 0.95) -> stats.MeanCI:
    """stats.metric_intervals from each column's n, sum and sum of squares (values in their declared range); the last
    axis runs over `metrics`, any leading axes (e.g. models) broadcast."""
    n = np.asarray(n, dtype=float)
    _, origin, width = stats.declared_scale(metrics)
    su = (np.asarray(total, dtype=float) - n * origin) / width
    su2 = (np.asarray(total_sq, dtype=float) - 2 * origin * np.asarray(total, dtype=float) + n * origin**2) / width**2
    with np.errstate(invalid="ignore", divide="ignore"):
        m, var, _ = _moments(n, su, su2)
    binary = su == su2  # values in [0, 1] are all 0 or 1 exactly when sum(u) = sum(u^2)
    return stats.intervals_from_moments(m, var, n, binary, metrics, confidence)


def _mean_rows(sums: dict[str, pd.DataFrame], keys: Sequence[str]) -> list[dict]:
    """leaderboard.mean_rows from the per-model sums (one interval computation over every model and metric)."""
    models = list(sums[keys[0]].index)
    columns = {c: np.column_stack([sums[k][c].to_numpy(dtype=float) for k in keys]) for c in
               ("n_values", "total", "total_sq")}
    ci = sums_intervals(columns["n_values"], columns["total"], columns["total_sq"], [get_metric(k) for k in keys])
    mean, low, high, n, method = (a.tolist() for a in (ci.mean, ci.ci_low, ci.ci_high, ci.n, ci.method))
    return [{"model": model, "metric": key, "value": mean[i][j], "ci_low": low[i][j], "ci_high": high[i][j],
             "n": n[i][j], "interval": method[i][j], "small_n": 0 < n[i][j] < stats.SMALL_N}
            for i, model in enumerate(models) for j, key in enumerate(keys)]


def gap_bounds_from_sums(sums: dict[str, pd.DataFrame], confidence: float = 0.95) -> pd.DataFrame:
    """leaderboard.gap_bounds from the sums of the per-response bounds (_gap_lo, _gap_hi) and of the responses with
    an undetermined constraint (_gap_hidden)."""
    lo, hi, hidden = sums["_gap_lo"], sums["_gap_hi"], sums["_gap_hidden"]
    ns, undetermined = lo["n_values"].to_numpy(dtype="int64"), hidden["total"].to_numpy(dtype=float)
    columns = {s: (lo[s].to_numpy(dtype=float), hi[s].to_numpy(dtype=float)) for s in ("total", "total_sq")}
    rows = []
    for i, model in enumerate(lo.index):
        n, hidden_n = int(ns[i]), int(round(float(undetermined[i])))
        if n < 2:
            rows.append({"model": model, "bound_low": np.nan, "bound_high": np.nan, "responses": n,
                         "undetermined": hidden_n})
            continue
        q = st.t.ppf(1 - (1 - confidence) / 2, n - 1)
        (m_lo, v_lo, _), (m_hi, v_hi, _) = (_moments(np.array([float(n)]), np.array([columns["total"][j][i]]),
                                                     np.array([columns["total_sq"][j][i]])) for j in (0, 1))
        rows.append({"model": model, "bound_low": float(max(m_lo[0] - q * np.sqrt(v_lo[0]) / np.sqrt(n), -1.0)),
                     "bound_high": float(min(m_hi[0] + q * np.sqrt(v_hi[0]) / np.sqrt(n), 1.0)), "responses": n,
                     "undetermined": hidden_n})
    return pd.DataFrame(rows, columns=GAP_BOUND_COLUMNS)


def _spread(n: float, total: float, total_sq: float, mean: float) -> float:
    """sum over the values of ((x - mean) / n)^2, 0 for equal values."""
    _, var, equal = _moments(np.array([n]), np.array([total]), np.array([total_sq]))
    return 0.0 if equal[0] or n < 2 else float(var[0] * (n - 1) + n * (total / n - mean) ** 2) / n**2


def _gap_interval_from_sums(sums: dict[str, dict[str, dict[str, float]]], model: str,
                            shown: dict[str, dict]) -> tuple[float, float]:
    """leaderboard._gap_interval from sums: the correlation of the two means from Loose and Strict IAS's sums and
    Loose IAS's sum over the responses with a determined Strict IAS (there Loose IAS is 1 where Strict IAS is)."""
    (m_l, l_l, u_l, n_l), (m_s, l_s, u_s, n_s) = ((shown[k]["value"], shown[k]["ci_low"], shown[k]["ci_high"],
                                                   shown[k]["n"]) for k in ("loose_ias", "strict_ias"))
    loose, strict, both = (sums[k][model] for k in ("loose_ias", "strict_ias", "_loose_strict"))
    s_l = _spread(float(loose["n_values"]), float(loose["total"]), float(loose["total_sq"]), m_l)
    s_s = _spread(float(strict["n_values"]), float(strict["total"]), float(strict["total_sq"]), m_s)
    n_b, sum_ls, sum_l, sum_s = float(both["n_values"]), float(strict["total"]), float(both["total"]), float(
        strict["total"])
    cross = (sum_ls - m_s * sum_l - m_l * sum_s + n_b * m_l * m_s) / (n_l * n_s)
    spread = np.sqrt(s_l * s_s)
    r = float(cross / spread) if spread > 0 else 0.0
    below = np.sqrt(max((m_l - l_l) ** 2 + (u_s - m_s) ** 2 - 2 * r * (m_l - l_l) * (u_s - m_s), 0.0))
    above = np.sqrt(max((u_l - m_l) ** 2 + (m_s - l_s) ** 2 - 2 * r * (u_l - m_l) * (m_s - l_s), 0.0))
    return float(max(m_l - m_s - below, -1.0)), float(min(m_l - m_s + above, 1.0))


def _gap_rows(sums: dict[str, pd.DataFrame], means: list[dict], bounds: pd.DataFrame) -> list[dict]:
    """leaderboard._gap_rows from the sums and the gap's bound table (gap_bounds_from_sums)."""
    by_model = bounds.set_index("model")
    rows = {k: sums[k].to_dict("index") for k in ("loose_ias", "strict_ias", "_loose_strict")}  # model -> its sums
    return [gap_row(model, shown, by_model, partial(_gap_interval_from_sums, rows, model, shown))
            for model, shown in shown_rows(means).items()]


GAP_SUMS: tuple[str, ...] = ("_gap_lo", "_gap_hi", "_gap_hidden", "_loose_strict")


# every metric board_from_aggregates reads: the board's, refusal (over-abstention's source), the gap's helpers and
# the done responses per group
BOARD_READS: tuple[str, ...] = (*BOARD_METRICS, "refusal", *GAP_SUMS, RESPONSES_METRIC)


def board_aggregates(engine: Engine, run_ids: Sequence[int], judge: str, modes: Sequence[str] = (),
                     domains: Sequence[str] = (), stale: bool | None = None) -> pd.DataFrame:
    """The aggregates board_from_aggregates reads (BOARD_READS) in the chosen modes and domains: the stored ones
    summed per model, mode, metric and state by the database when every run's summaries are current (`stale` False;
    None: ask stale_summary_runs), else enterprise_aggregates' inline rows narrowed alike (reads only)."""
    if stale is None:
        stale = bool(stale_summary_runs(engine, run_ids, judge))
    if not stale:
        return stored_model_sums(engine, run_ids, judge, modes, domains, BOARD_READS)
    return filter_aggregates(enterprise_aggregates(engine, run_ids, judge, modes, BOARD_READS), modes, domains)


def board_from_aggregates(aggregates: pd.DataFrame,
                          models: pd.DataFrame) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    """leaderboard_from_aggregates, leaderboard_states_from_aggregates and gap_bounds_from_aggregates of the same
    aggregates, with over-abstention's rows, the per-model sums and the gap's bounds made once for the three."""
    aggregates = with_over_abstention(aggregates)
    sums = model_sums(aggregates, [*BOARD_METRICS, *GAP_SUMS])
    bounds = gap_bounds_from_sums(sums)
    return _board(sums, bounds, models), _states(aggregates), bounds


def leaderboard_from_aggregates(aggregates: pd.DataFrame, models: pd.DataFrame) -> pd.DataFrame:
    """leaderboard.leaderboard from the aggregates (already narrowed to the subset and domains)."""
    return board_from_aggregates(aggregates, models)[0]


def _board(sums: dict[str, pd.DataFrame], bounds: pd.DataFrame, models: pd.DataFrame) -> pd.DataFrame:
    """The leaderboard's long rows from the per-model sums and the gap's bound table."""
    rows = _mean_rows(sums, list(BOARD_METRICS)) if len(sums[BOARD_METRICS[0]]) else []
    rows += _gap_rows(sums, rows, bounds) if rows else []
    long = with_model_info(pd.DataFrame(rows, columns=LONG_COLUMNS), models)
    long["label"] = long["metric"].map(lambda k: get_metric(k).label)
    long["mark"] = _marks(long)
    order = model_order(long["model"].unique(), models)
    long["model"] = pd.Categorical(long["model"], categories=order, ordered=True)
    return long.sort_values(["model", "metric"]).reset_index(drop=True).assign(model=lambda d: d["model"].astype(str))


def leaderboard_states_from_aggregates(aggregates: pd.DataFrame) -> pd.DataFrame:
    """leaderboard.leaderboard_states from the aggregates."""
    return _states(with_over_abstention(aggregates))


def _states(aggregates: pd.DataFrame) -> pd.DataFrame:
    """The state counts per model and board metric of aggregates that carry over-abstention's rows."""
    states = group_metric_states(aggregates, ["model"], BOARD_METRICS)
    return states[["model", "metric", *STATE_COLUMNS.values()]]


def gap_bounds_from_aggregates(aggregates: pd.DataFrame) -> pd.DataFrame:
    """leaderboard.gap_bounds from the aggregates."""
    return gap_bounds_from_sums(model_sums(aggregates, GAP_SUMS))
