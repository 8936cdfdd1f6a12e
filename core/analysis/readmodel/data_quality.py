"""Natural versus augmented instances with equivalence tests (the Data quality page, Figure 8).

The page reads its items as arrays (origin_items: one SELECT of the columns it needs, straight off the cursor) when no
model answered an item twice in the runs; the per-item scores frame (natural_vs_augmented, evaluated_composition) is
the path for repeated items and for callers holding that frame. Both paths compute through the same functions
(_equivalence, evaluated_composition), so they give the same numbers (tests/analysis/test_data_quality_items.py).
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
from sqlalchemy import text
from sqlalchemy.engine import Engine

from core.analysis import stats
from core.analysis.readmodel.bootstrap import _ci, bootstrap_means
from core.analysis.readmodel.enterprise_aggregates import id_names
from core.analysis.readmodel.responses import CONSTRAINT_COUNT_JOIN_SQL, response_ias
from core.analysis.readmodel.scope import METRICS
from core.scoring.summaries import metric_cells_sql, scores_sql, stale_summary_runs, summary_source

EQUIVALENCE_METRICS: tuple[str, ...] = ("conflict_recognition", "strict_ias", "loose_ias", "coverage", "faithfulness")
IAS_METRICS: tuple[str, ...] = ("loose_ias", "strict_ias")  # origin_items computes these from the summary counts
KEYS: tuple[str, ...] = ("model", "instance_uid", "domain", "mode", "origin")  # origin_items' coded columns
COMPOSITION_KEYS: list[str] = ["domain", "mode", "origin"]


@dataclass(frozen=True)
class OriginItems:
    """One row per item in response order: the metrics' values (n x m, NaN = no counted value), the response id and
    each of KEYS as integer codes into its sorted labels (-1: none)."""

    metrics: tuple[str, ...]
    values: np.ndarray
    response_id: np.ndarray
    codes: dict[str, np.ndarray]
    labels: dict[str, tuple[str, ...]]

    def rows(self, mask: np.ndarray) -> OriginItems:
        """The items where `mask` holds."""
        return OriginItems(self.metrics, self.values[mask], self.response_id[mask],
                           {k: c[mask] for k, c in self.codes.items()}, self.labels)

    def isin(self, key: str, labels: Collection[str]) -> np.ndarray:
        """Whether each item's `key` is one of `labels`."""
        wanted = [j for j, label in enumerate(self.labels[key]) if label in set(labels)]
        return np.isin(self.codes[key], wanted)


def _coded(values: Sequence[Any]) -> tuple[np.ndarray, tuple[str, ...]]:
    """Integer codes into the sorted distinct labels (None: -1)."""
    codes, labels = pd.factorize(np.asarray(values, dtype=object), sort=True)
    return codes, tuple(str(label) for label in labels)


def _coded_ids(ids: Sequence[int], names: dict[int, str]) -> tuple[np.ndarray, tuple[str, ...]]:
    """_coded of the names of `ids` (each id's name looked up once)."""
    distinct, inverse = np.unique(np.asarray(ids, dtype=np.int64), return_inverse=True)
    codes, labels = _coded([names[int(i)] for i in distinct])
    return codes[inverse], labels


def _items_sql(engine: Engine, run_ids: Sequence[int], judge: str, metrics: Sequence[str]) -> str:
    """The SELECT behind origin_items: the response id, KEYS, the summary counts and the RAG metrics' counted values."""
    stale = bool(stale_summary_runs(engine, run_ids, judge))
    joins, cells = metric_cells_sql(stale, run_ids, judge, [m for m in metrics if m not in IAS_METRICS])
    counts = ", ".join(f"COALESCE(s.{c}, 0)" for c in ("n", "judged", "passed", "errors"))
    columns = (f"r.id, r.model_id, i.uid, i.domain_id, i.mode, i.origin, {counts}, COALESCE(k.constraints, 0)"
               + "".join(f", {value}" for value, _ in cells.values()))
    return scores_sql(columns, summary_source(stale, run_ids), joins, run_ids, CONSTRAINT_COUNT_JOIN_SQL)


def origin_items(engine: Engine, run_ids: Sequence[int], judge: str,
                 metrics: Sequence[str] = EQUIVALENCE_METRICS) -> OriginItems | None:
    """The runs' done EnterpriseRAG responses under `judge` as OriginItems: the values response_scores gives them, in
    its order; None when a model answered an instance more than once (the per-item frame then averages repeats and
    keeps the latest run, scope.latest_per_model_instance)."""
    unknown = set(metrics) - set(EQUIVALENCE_METRICS)
    if unknown:
        raise ValueError(f"origin_items reads {EQUIVALENCE_METRICS}, not {sorted(unknown)}")
    with engine.connect() as conn:
        result = conn.execute(text(_items_sql(engine, run_ids, judge, metrics)), {"judge": judge})
        rows = result.cursor.fetchall() if result.cursor is not None else []
    columns = list(zip(*rows, strict=True)) if rows else [()] * (11 + len(metrics))
    names = id_names(engine)
    coded = {"model": _coded_ids(columns[1], names["model"]), "instance_uid": _coded(columns[2]),
             "domain": _coded_ids(columns[3], names["domain"]), "mode": _coded(columns[4]), "origin": _coded(columns[5])}
    model, uid = coded["model"][0], coded["instance_uid"][0]
    if len(np.unique(model.astype(np.int64) * max(len(coded["instance_uid"][1]), 1) + uid)) < len(uid):
        return None
    n, judged, passed, errors, constraints = (np.asarray(c, dtype=np.int64) for c in columns[6:11])
    _, _, loose, strict = response_ias(n, judged, passed, errors, constraints)
    rag = iter(columns[11:])
    values = {"loose_ias": loose, "strict_ias": strict} | {m: np.asarray(next(rag), dtype=float)
                                                            for m in metrics if m not in IAS_METRICS}
    return OriginItems(tuple(metrics), np.column_stack([values[m] for m in metrics]),
                       np.asarray(columns[0], dtype=np.int64), {k: c for k, (c, _) in coded.items()},
                       {k: labels for k, (_, labels) in coded.items()})


def select_items(items: OriginItems, modes: Collection[str] = (), domains: Collection[str] = (),
                 response_ids: Collection[int] | None = None) -> OriginItems:
    """The items in the chosen modes and domains (empty = all) and, given `response_ids`, of those responses (as
    scope.filter_scores and results_view.scoped narrow the per-item frame)."""
    mask = np.ones(len(items.response_id), dtype=bool)
    if modes:
        mask &= items.isin("mode", modes)
    if domains:
        mask &= items.isin("domain", domains)
    if response_ids is not None:
        mask &= np.isin(items.response_id, np.fromiter(response_ids, dtype=np.int64, count=len(response_ids)))
    return items.rows(mask)


def origin_equivalence(items: OriginItems, margin: float = 0.2, n_resamples: int = 1_000, seed: int = 0) -> pd.DataFrame:
    """natural_vs_augmented of the items."""
    origins = items.labels["origin"]
    natural, augmented = (items.codes["origin"] == (origins.index(o) if o in origins else -2)
                          for o in ("natural", "augmented"))
    return _equivalence(items.values, natural, augmented, items.codes["model"], items.metrics, margin, n_resamples, seed)


def natural_vs_augmented(scores: pd.DataFrame, margin: float = 0.2, metrics: Sequence[str] = EQUIVALENCE_METRICS,
                         n_resamples: int = 1_000, seed: int = 0) -> pd.DataFrame:
    """Figure 8 / Table 8: natural minus augmented means per metric with equivalence testing at +/- margin.

    Per model the difference natural - augmented is computed; TOST (stats.tost) runs over those per-model
    differences (needs >= 2 models with both origins and some spread). A pooled unpaired percentile-bootstrap
    CI of the difference is reported too (each origin resampled independently, as stats.bootstrap_ci with
    paired=False), and 'equivalent_by_ci' says whether that CI lies inside the margin. Beside TOST, the paired
    t-test over the same per-model means with Cohen's d_z (t, t_p, cohen_d: the paper's Table 8); n_resamples=10_000
    is the paper's bootstrap.
    """
    metrics = list(metrics)
    origin = scores["origin"]
    model, _ = _coded(scores["model"].to_numpy())
    return _equivalence(scores[metrics].to_numpy(float), (origin == "natural").to_numpy(),
                        (origin == "augmented").to_numpy(), model, metrics, margin, n_resamples, seed)


def _equivalence(values: np.ndarray, natural: np.ndarray, augmented: np.ndarray, model: np.ndarray,
                 metrics: Sequence[str], margin: float, n_resamples: int, seed: int) -> pd.DataFrame:
    """natural_vs_augmented over rows of `values` (one column per metric) marked natural or augmented, with each row's
    model code (sorted by name, -1: none)."""
    boot_low = boot_high = np.full(len(metrics), np.nan)
    if natural.any() and augmented.any():
        # column-major, as a DataFrame's to_numpy gives them: the product's summation order (so its last bits)
        # follows the layout, and these are the draws the per-item frame always had
        reps = (bootstrap_means(np.asfortranarray(values[natural]), n_resamples, seed)
                - bootstrap_means(np.asfortranarray(values[augmented]), n_resamples, seed + 1))
        boot_low, boot_high = _ci(reps)
    rows = [_metric_row(key, values[:, i], natural, augmented, model, margin, boot_low[i], boot_high[i])
            for i, key in enumerate(metrics)]
    out = pd.DataFrame(rows)
    out["margin"] = margin
    return out


def _metric_row(key: str, column: np.ndarray, natural: np.ndarray, augmented: np.ndarray, model: np.ndarray,
                margin: float, boot_low: float, boot_high: float) -> dict[str, Any]:
    """One metric's row: the origins' means and n, the pooled bootstrap CI and the per-model tests."""
    present = ~np.isnan(column)
    nat, aug = natural & present, augmented & present
    n_nat, n_aug = int(nat.sum()), int(aug.sum())
    row: dict[str, Any] = {"metric": key, "label": METRICS[key].label if key in METRICS else key,
                           "natural": pd.Series(column[nat]).mean() if n_nat else np.nan,
                           "augmented": pd.Series(column[aug]).mean() if n_aug else np.nan,
                           "n_natural": n_nat, "n_augmented": n_aug}
    row["diff"] = row["natural"] - row["augmented"]
    has_both = bool(n_nat and n_aug)
    row |= {"boot_low": boot_low if has_both else np.nan, "boot_high": boot_high if has_both else np.nan,
            "equivalent_by_ci": bool(has_both and stats.equivalent_by_ci(boot_low, boot_high, margin))}
    per_model = pd.concat([_model_means(column, nat, model).rename("nat"),
                           _model_means(column, aug, model).rename("aug")], axis=1, join="inner")
    return row | _per_model_tests(per_model["nat"].to_numpy(float), per_model["aug"].to_numpy(float), margin)


def _model_means(column: np.ndarray, rows: np.ndarray, model: np.ndarray) -> pd.Series:
    """Mean of `column` over `rows` per model code (rows without a model left out), by code."""
    keep = rows & (model >= 0)
    return pd.Series(column[keep]).groupby(model[keep], sort=True).mean()


def _per_model_tests(nat: np.ndarray, aug: np.ndarray, margin: float) -> dict[str, Any]:
    """Over the models' natural and augmented means: TOST of their differences at ±margin and, as the paper's
    Table 8, the paired t-test (two-sided) with Cohen's d_z; NaN with fewer than 2 models or no spread."""
    diffs = nat - aug
    if diffs.size < 2 or np.std(diffs) == 0:
        return {"models": int(diffs.size), "tost_mean": np.nan, "tost_low": np.nan, "tost_high": np.nan,
                "tost_p": np.nan, "tost_equivalent": False, "t": np.nan, "t_p": np.nan, "cohen_d": np.nan}
    t, paired = stats.tost(diffs, margin), stats.paired_t(nat, aug)
    return {"models": int(diffs.size), "tost_mean": t.mean_diff, "tost_low": t.ci_low, "tost_high": t.ci_high,
            "tost_p": t.p_value, "tost_equivalent": t.equivalent, "t": paired.t, "t_p": paired.p_value,
            "cohen_d": paired.cohen_dz}


def evaluated_composition(scores: pd.DataFrame) -> pd.DataFrame:
    """Distinct evaluated instances by domain, mode and origin."""
    inst = scores.drop_duplicates("instance_uid")
    return inst.groupby(COMPOSITION_KEYS).size().rename("instances").reset_index()


def items_composition(items: OriginItems) -> pd.DataFrame:
    """evaluated_composition of the items (each instance's first item names its domain, mode and origin)."""
    _, first = np.unique(items.codes["instance_uid"], return_index=True)
    first = np.sort(first)
    frame = {key: _labelled(items, key, first) for key in ("instance_uid", *COMPOSITION_KEYS)}
    return evaluated_composition(pd.DataFrame(frame))


def _labelled(items: OriginItems, key: str, rows: np.ndarray) -> pd.Series:
    """The label of `key` of each of `rows` (missing where it has none), as the per-item frame's string column."""
    labels = np.asarray([*items.labels[key], None], dtype=object)
    return pd.Series(labels[items.codes[key][rows]], dtype="str")
