"""The dashboards' metric catalogue and inputs: models, data versions, prepared scores and their filters."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import numpy as np
import pandas as pd
from sqlalchemy import Select, func, select
from sqlalchemy.engine import Engine
from sqlalchemy.orm import Session

from core.analysis.readmodel.repeats import latest_run_rows, per_item
from core.analysis.readmodel.responses import failure_count_rows, response_scores
from core.metrics import MetricDeclaration, get_metric
from core.store.models import Annotation, Assignment, Domain, Instance, Model, Response, RunVerdictCount, Verdict

MODES: tuple[str, ...] = ("noisy", "gap", "conflict")

CATEGORY_LABELS = {"persona": "Persona definition", "output": "Output constraints", "knowledge_protocol": "Knowledge protocol"}

QUALITY_METRICS: tuple[MetricDeclaration, ...] = tuple(get_metric(key) for key in (
    "faithfulness", "coverage", "loose_ias", "strict_ias", "loose_persona", "loose_output", "loose_knowledge_protocol",
    "rejection", "conflict_recognition", "over_abstention"))

COST_METRICS: tuple[MetricDeclaration, ...] = (get_metric("cost_per_1k"), get_metric("latency_min_per_1k"))

METRICS: dict[str, MetricDeclaration] = {m.id: m for m in QUALITY_METRICS + COST_METRICS}  # the dashboards' metrics

NUMERIC_COLUMNS = (
    "loose_ias",
    "strict_ias",
    "loose_persona",
    "loose_output",
    "loose_knowledge_protocol",
    "faithfulness",
    "coverage",
    "rejection",
    "conflict_recognition",
    "refusal",
    "cost_usd",
    "latency_ms",
)

MODEL_COLUMNS = ("model", "paradigm", "access", "is_baseline")


CATALOG_COLUMNS = (*MODEL_COLUMNS, "price_input_per_mtok", "price_output_per_mtok")


def model_catalog(engine: Engine) -> pd.DataFrame:
    """The Model table as a frame: model, paradigm, access, is_baseline and prices (every results page reads it: its
    columns through a plain connection, no ORM objects)."""
    table = Model.__table__  # type: ignore[attr-defined]
    stmt = select(table.c.name, table.c.paradigm, table.c.access, table.c.is_baseline, table.c.price_input_per_mtok,
                  table.c.price_output_per_mtok)
    with engine.connect() as conn:
        rows = [(name, paradigm, access, bool(baseline), price_in, price_out)
                for name, paradigm, access, baseline, price_in, price_out in conn.execute(stmt)]
    return pd.DataFrame(rows, columns=list(CATALOG_COLUMNS))


# row counts kept by triggers (migration 0030): the verdicts summed over the runs' counters, where count(*) walked
# every entry of a verdict index (0.66 ms a render at paper scale on SQLite; a sequential scan on PostgreSQL)
_KEPT_COUNTS: dict[type, Select] = {
    Verdict: select(func.coalesce(func.sum(RunVerdictCount.verdicts), 0)),
}


def _fingerprint_statement(tables: Sequence[tuple[type, bool]]) -> Select:
    """Per (table, counted) of `tables`: its max id, then its row count when counted (a kept count where
    _KEPT_COUNTS has one); one statement of scalar subqueries, each a lone aggregate."""
    cells = []
    for table, counted in tables:
        cells.append(select(func.max(table.id)).scalar_subquery())  # type: ignore[attr-defined]
        if counted:
            count = _KEPT_COUNTS.get(table, select(func.count()).select_from(table))
            cells.append(count.scalar_subquery())
    return select(*cells)


_FINGERPRINTS: dict[tuple[tuple[type, bool], ...], Select] = {}  # built once: every results page asks on every run


def _fingerprint(engine: Engine, tables: tuple[tuple[type, bool], ...]) -> tuple[int, ...]:
    """The values of _fingerprint_statement(tables), its statement built once per process."""
    if (stmt := _FINGERPRINTS.get(tables)) is None:
        stmt = _FINGERPRINTS.setdefault(tables, _fingerprint_statement(tables))
    with engine.connect() as conn:
        return tuple(int(v or 0) for v in conn.execute(stmt).one())


DATA_TABLES = ((Verdict, True), (Response, False))  # (max verdict id, verdict count, max response id)
GOLD_TABLES = ((Annotation, True), (Assignment, False))  # (max annotation id, annotation count, max assignment id)


def data_version(engine: Engine) -> tuple[int, int, int]:
    """A cheap fingerprint of the results data: (max verdict id, verdict count, max response id)."""
    vmax, vcount, rmax = _fingerprint(engine, DATA_TABLES)
    return vmax, vcount, rmax


def gold_version(engine: Engine) -> tuple[int, int, int]:
    """A cheap fingerprint of the expert labels: (max annotation id, annotation count, max assignment id).

    Annotations are append-only (a label, an adjudication or an undo adds a row) and a gold draw adds assignments
    (with their sampling probabilities), so any change to the gold labels or their probabilities changes it.
    """
    amax, acount, smax = _fingerprint(engine, GOLD_TABLES)
    return amax, acount, smax


def versions(engine: Engine) -> tuple[tuple[int, int, int], tuple[int, int, int]]:
    """(data_version, gold_version) in one statement: what a results page reads on every run."""
    vmax, vcount, rmax, amax, acount, smax = _fingerprint(engine, DATA_TABLES + GOLD_TABLES)
    return (vmax, vcount, rmax), (amax, acount, smax)


def benchmark_composition(engine: Engine) -> pd.DataFrame:
    """Latest benchmark instances counted by domain, mode and origin."""
    from sqlmodel import col

    stmt = (
        select(col(Domain.name), col(Instance.mode), col(Instance.origin), func.count(col(Instance.id)))
        .join(Domain, col(Domain.id) == Instance.domain_id)
        .where(col(Instance.is_latest) == True)  # noqa: E712 (SQL expression)
        .group_by(col(Domain.name), col(Instance.mode), col(Instance.origin))
    )
    with Session(engine) as session:
        rows = session.execute(stmt).all()
    return pd.DataFrame(rows, columns=["domain", "mode", "origin", "instances"]).sort_values(["domain", "mode", "origin"])


def prepare_scores(scores: pd.DataFrame) -> pd.DataFrame:
    """Normalise response_scores: numeric float columns (None -> NaN) and the derived over_abstention column.

    Over-abstention is the refusal rate on instances that can be answered (every mode except 'gap').
    """
    out = scores.copy()
    for col in NUMERIC_COLUMNS:
        if col in out and out[col].dtype != float:  # float columns (response_scores' own) are already normalised
            out[col] = pd.to_numeric(out[col].astype(object).where(out[col].notna()), errors="coerce").astype(float)
    answerable = out["mode"] != "gap"
    out["over_abstention"] = out["refusal"].where(answerable)
    return out


def filter_scores(scores: pd.DataFrame, modes: Iterable[str] | None = None, domains: Iterable[str] | None = None) -> pd.DataFrame:
    """Rows of `scores` in the chosen modes and domains (None or empty = all)."""
    mask = pd.Series(True, index=scores.index)
    modes, domains = list(modes or []), list(domains or [])
    if modes:
        mask &= scores["mode"].isin(modes)
    if domains:
        mask &= scores["domain"].isin(domains)
    return scores[mask]


def with_model_info(frame: pd.DataFrame, models: pd.DataFrame) -> pd.DataFrame:
    """Join paradigm/access/is_baseline onto a frame with a 'model' column (unknown models: standard/closed)."""
    info = models[list(MODEL_COLUMNS)].drop_duplicates("model")
    out = frame.merge(info, on="model", how="left")
    out["paradigm"] = out["paradigm"].fillna("standard")
    out["access"] = out["access"].fillna("closed")
    out["is_baseline"] = out["is_baseline"].fillna(False).astype(bool)
    out["group"] = np.where(out["is_baseline"], "calibration baseline", out["access"] + "-source · " + out["paradigm"])
    return out


ACCESS_ORDER = {"open": 0, "closed": 1}
PARADIGM_ORDER = {"reasoning": 0, "standard": 1}


def model_order(models_in_view: Iterable[str], models: pd.DataFrame) -> list[str]:
    """Models in Table 2 order: open before closed, reasoning before standard, by name; baselines last (a model
    missing from the catalogue, or with no access or paradigm, counts as closed / standard, as in with_model_info)."""
    info: dict = {}
    for m, p, a, b in zip(*(models[column].tolist() for column in MODEL_COLUMNS), strict=True):
        info.setdefault(m, (a, p, b))  # a model's first catalogue row

    def key(model: str) -> tuple[bool, int, int, str]:
        access, paradigm, baseline = info.get(model, (None, None, False))
        access = "closed" if pd.isna(access) else access
        paradigm = "standard" if pd.isna(paradigm) else paradigm
        return (bool(False if pd.isna(baseline) else baseline), ACCESS_ORDER.get(access, 2),
                PARADIGM_ORDER.get(paradigm, 2), model)

    return sorted(set(models_in_view), key=key)


def in_model_order(frame: pd.DataFrame, models: pd.DataFrame) -> tuple[pd.DataFrame, list[str]]:
    """`frame`'s models in model_order and its rows in that order (a stable sort: each model's rows keep theirs)."""
    order = model_order(frame["model"].unique(), models)
    position = {model: i for i, model in enumerate(order)}
    rows = np.argsort(np.fromiter(map(position.__getitem__, frame["model"].tolist()), dtype=np.intp,
                                  count=len(frame)), kind="stable")
    return frame.take(rows), order


def latest_per_model_instance(scores: pd.DataFrame) -> pd.DataFrame:
    """One row per (model, instance): the run of the latest response (highest response_id) when several runs
    overlap, its repeats averaged into per-item values (readmodel.repeats.per_item). A frame with one row per (model,
    instance) is returned as it is after one duplicate check (both steps would each check it again: a repeat or an
    overlapping run is such a duplicate)."""
    if scores.empty or not scores.duplicated(["model", "instance_uid"]).any():
        return scores
    return per_item(latest_run_rows(scores))


def load_scores(engine: Engine, run_ids: Sequence[int], judge: str) -> pd.DataFrame:
    """Prepared per-item scores of the runs under `judge`, one per (model, instance): the latest run wins and a
    repeated item's value is its mean over its repeats."""
    return scores_from_responses(response_scores(engine, run_ids, judge))


def scores_from_responses(responses: pd.DataFrame) -> pd.DataFrame:
    """load_scores from an already read per-response frame (response_scores), so one read serves several views."""
    return prepare_scores(latest_per_model_instance(responses))


def load_failure_counts(engine: Engine, run_ids: Sequence[int], judge: str) -> pd.DataFrame:
    """Constraint verdict counts per model, domain, mode, category and sub-dimension (core.analysis.readmodel.failure_count_rows)."""
    return failure_count_rows(engine, run_ids, judge)


def verdict_counts(verdicts: pd.DataFrame) -> pd.DataFrame:
    """The load_failure_counts layout computed from a verdict-level frame (constraint_verdicts columns): the verdicts'
    states are counted; constraints with no verdict are not in such a frame, so it has no unjudged column."""
    decided = (verdicts["status"] == "ok") & verdicts["passed"].notna()
    failed = decided & (verdicts["passed"].astype(object) == False)  # noqa: E712
    states = {column: (verdicts["status"] == status).astype(int) for status, column in
              (("not_applicable", "n_not_applicable"), ("unparseable", "n_unparseable"), ("error", "n_error"),
               ("skipped", "n_skipped"))}
    frame = verdicts.assign(verdicts=1, decided=decided.astype(int), failed=failed.astype(int),
                            n_scored=decided.astype(int), **states)
    keys = ["model", "domain", "mode", "category", "sub_dimension"]
    return frame.groupby(keys, as_index=False)[["verdicts", "decided", "failed", "n_scored", *states]].sum()
