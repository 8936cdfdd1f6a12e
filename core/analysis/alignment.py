"""Judge alignment: expert-expert agreement, each judge against the adjudicated gold labels, and cross-judge reliability.

Dimensions follow the paper's alignment study: per-constraint adherence, Strict IAS (all constraints of a response
satisfied), proper rejection on gap instances, and conflict recognition on conflict instances.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field
from itertools import combinations
from typing import Any

import numpy as np
from sqlalchemy.engine import Engine
from sqlmodel import Session, col, select

from core.analysis import stats
from core.review.labels import DECISIONS, expert_labels, gold_labels, verification_decisions
from core.store.models import Constraint, Model, Response, Verdict

DIMENSIONS: dict[str, str] = {
    "constraint": "Per-constraint adherence",
    "strict_ias": "Strict IAS",
    "rejection": "Proper rejection",
    "conflict_recognition": "Conflict recognition",
}
Item = tuple[int, str]  # (response id, item name)


def items_from_label(response_id: int, payload: dict[str, Any]) -> dict[str, dict[Item, int]]:
    """Binary items per dimension from one gold-label payload."""
    out: dict[str, dict[Item, int]] = {d: {} for d in DIMENSIONS}
    cons = payload.get("constraints") or {}
    for cid, value in cons.items():
        out["constraint"][(response_id, cid)] = int(bool(value))
    if cons:
        out["strict_ias"][(response_id, "all constraints")] = int(all(bool(v) for v in cons.values()))
    if payload.get("valid_refusal") is not None:
        out["rejection"][(response_id, "valid refusal")] = int(payload["valid_refusal"])
    if payload.get("conflict_recognized") is not None:
        out["conflict_recognition"][(response_id, "conflict recognized")] = int(payload["conflict_recognized"])
    return out


def _binary(v: Verdict) -> int | None:
    if v.status == "not_applicable":
        return 1  # a constraint whose precondition does not hold counts as satisfied
    if v.status != "ok":
        return None
    if v.passed is not None:
        return int(v.passed)
    if v.value is not None:
        return int(v.value >= 0.5)
    return None


def judge_items(engine: Engine, response_ids: Iterable[int], judge: str) -> dict[str, dict[Item, int]]:
    """Binary items per dimension from one judge's verdicts on the given responses."""
    ids = list(response_ids)
    out: dict[str, dict[Item, int]] = {d: {} for d in DIMENSIONS}
    if not ids:
        return out
    with Session(engine) as session:
        verdicts = session.exec(
            select(Verdict).where(col(Verdict.response_id).in_(ids), Verdict.judge == judge)
        ).all()
        cids = {c.id: c.cid for c in session.exec(select(Constraint)).all()} if verdicts else {}
        all_constraints: dict[int, int] = {}
        for resp in session.exec(select(Response).where(col(Response.id).in_(ids))).all():
            all_constraints[resp.id] = len(
                session.exec(select(Constraint.id).where(Constraint.instance_id == resp.instance_id)).all()
            )
    per_response: dict[int, list[int | None]] = defaultdict(list)
    for v in verdicts:
        value = _binary(v)
        if v.metric == "constraint" and v.constraint_id is not None:
            per_response[v.response_id].append(value)
            if value is not None:
                out["constraint"][(v.response_id, cids.get(v.constraint_id, str(v.constraint_id)))] = value
        elif v.metric == "rejection" and value is not None:
            out["rejection"][(v.response_id, "valid refusal")] = value
        elif v.metric == "conflict_recognition" and value is not None:
            out["conflict_recognition"][(v.response_id, "conflict recognized")] = value
    for rid, values in per_response.items():
        if None not in values and len(values) == all_constraints.get(rid, -1):
            out["strict_ias"][(rid, "all constraints")] = int(all(values))
    return out


@dataclass(frozen=True)
class Agreement:
    """Agreement of two raters on one dimension; kappa None when there is nothing to compare."""

    dimension: str
    n: int
    kappa: float | None
    agreement: float | None
    confusion: list[list[int]] = field(default_factory=lambda: [[0, 0], [0, 0]])  # rows: reference 0/1, cols: other 0/1
    disagreements: list[tuple[int, str, int, int]] = field(default_factory=list)  # (response, item, reference, other)

    @property
    def label(self) -> str:
        return DIMENSIONS[self.dimension]


def compare(dimension: str, reference: dict[Item, int], other: dict[Item, int]) -> Agreement:
    """Cohen's kappa, observed agreement and confusion matrix on the items both raters labelled."""
    common = sorted(set(reference) & set(other))
    if not common:
        return Agreement(dimension, 0, None, None)
    a = np.array([reference[i] for i in common])
    b = np.array([other[i] for i in common])
    result = stats.cohen_kappa(a, b)
    confusion = [[int(((a == r) & (b == o)).sum()) for o in (0, 1)] for r in (0, 1)]
    disagreements = [(i[0], i[1], reference[i], other[i]) for i in common if reference[i] != other[i]]
    return Agreement(dimension, len(common), result.kappa, result.agreement, confusion, disagreements)


def expert_agreement(engine: Engine, run_ids: Iterable[int] | None = None) -> list[Agreement]:
    """Inter-annotator agreement between the two experts who labelled each response (first two by name)."""
    first: dict[str, dict[Item, int]] = {d: {} for d in DIMENSIONS}
    second: dict[str, dict[Item, int]] = {d: {} for d in DIMENSIONS}
    for rid, by_author in expert_labels(engine, run_ids).items():
        if len(by_author) < 2:
            continue
        a, b = sorted(by_author)[:2]
        for dim, items in items_from_label(rid, by_author[a]).items():
            first[dim].update(items)
        for dim, items in items_from_label(rid, by_author[b]).items():
            second[dim].update(items)
    return [compare(d, first[d], second[d]) for d in DIMENSIONS]


def judges_for(engine: Engine, run_ids: Iterable[int]) -> list[str]:
    """Judges that produced verdicts in the given runs, sorted."""
    with Session(engine) as session:
        return sorted(set(session.exec(select(Verdict.judge).where(col(Verdict.run_id).in_(list(run_ids)))).all()))


def judge_vs_gold(engine: Engine, run_ids: Iterable[int], judge: str) -> list[Agreement]:
    """One judge against the gold labels (adjudicated, or agreed by both experts), per dimension."""
    gold = gold_labels(engine, list(run_ids))
    reference: dict[str, dict[Item, int]] = {d: {} for d in DIMENSIONS}
    for rid, payload in gold.items():
        for dim, items in items_from_label(rid, payload).items():
            reference[dim].update(items)
    judged = judge_items(engine, gold.keys(), judge)
    return [compare(d, reference[d], judged[d]) for d in DIMENSIONS]


def average_kappa(rows: list[Agreement], dims: Iterable[str] = ("strict_ias", "rejection", "conflict_recognition")) -> float | None:
    """Mean kappa over the given dimensions that have data (the 'Overall avg.' row of the paper's Table 9)."""
    values = [r.kappa for r in rows if r.dimension in dims and r.kappa is not None]
    return float(np.mean(values)) if values else None


# --------------------------------------------------------------------------- benchmark verification agreement

VERIFICATION_DIMENSIONS: dict[str, tuple[str, tuple[str, ...]]] = {
    "decision": ("Decision (accept / reject / needs edit)", DECISIONS),
    "consistency": ("Instruction–query consistency", ("consistent", "inconsistent")),
    "context_valid": ("Context validity", ("valid", "invalid")),
}


@dataclass(frozen=True)
class CategoricalAgreement:
    """Agreement of two raters on one categorical dimension; kappa None when there is nothing to compare."""

    dimension: str
    categories: tuple[str, ...]
    n: int
    kappa: float | None
    agreement: float | None
    confusion: list[list[int]]  # rows: first rater, cols: second rater, both in `categories` order

    @property
    def label(self) -> str:
        return VERIFICATION_DIMENSIONS[self.dimension][0]


def compare_categorical(dimension: str, categories: tuple[str, ...], pairs: list[tuple[str, str]]) -> CategoricalAgreement:
    """Cohen's kappa, observed agreement and a categories x categories confusion table of (first, second) pairs."""
    pairs = [(a, b) for a, b in pairs if a in categories and b in categories]
    confusion = [[sum(1 for a, b in pairs if (a, b) == (r, c)) for c in categories] for r in categories]
    if not pairs:
        return CategoricalAgreement(dimension, categories, 0, None, None, confusion)
    result = stats.cohen_kappa([a for a, _ in pairs], [b for _, b in pairs])
    return CategoricalAgreement(dimension, categories, len(pairs), result.kappa, result.agreement, confusion)


def verification_values(payload: dict[str, Any]) -> dict[str, str | None]:
    """The three verdicts of one verification decision as category names."""
    valid = payload.get("context_valid")
    return {
        "decision": payload.get("decision"),
        "consistency": payload.get("consistency"),
        "context_valid": None if valid is None else ("valid" if valid else "invalid"),
    }


def verification_agreement(engine: Engine) -> list[CategoricalAgreement]:
    """Expert-expert agreement on double-checked instances (first two deciders by name), per verification verdict."""
    pairs: dict[str, list[tuple[str, str]]] = {d: [] for d in VERIFICATION_DIMENSIONS}
    for _iid, by_author in sorted(verification_decisions(engine).items()):
        if len(by_author) < 2:
            continue
        a, b = sorted(by_author)[:2]
        first, second = verification_values(by_author[a]), verification_values(by_author[b])
        for dim in VERIFICATION_DIMENSIONS:
            pairs[dim].append((first[dim], second[dim]))
    return [compare_categorical(d, cats, pairs[d]) for d, (_label, cats) in VERIFICATION_DIMENSIONS.items()]


# --------------------------------------------------------------------------- cross-judge reliability

CROSS_METRICS: dict[str, str] = {"loose_ias": "Loose IAS", "rejection": "Reject Acc", "conflict_recognition": "Conflict Acc"}


@dataclass(frozen=True)
class CrossJudge:
    """Per-model scores (%) by judge and metric, plus ICC(2,k) and average pairwise Spearman of model rankings."""

    scores: dict[str, dict[str, dict[str, float]]]  # metric -> model -> judge -> score in %
    icc: dict[str, stats.ICCResult | None]
    spearman: dict[str, float | None]
    notes: dict[str, str]


def model_scores(engine: Engine, run_ids: Iterable[int], judges: list[str]) -> dict[str, dict[str, dict[str, float]]]:
    """Loose IAS, rejection and conflict accuracy (%) per model and judge."""
    with Session(engine) as session:
        rows = session.exec(
            select(Verdict, Response.model_id)
            .join(Response, Response.id == Verdict.response_id)
            .where(col(Verdict.run_id).in_(list(run_ids)), col(Verdict.judge).in_(judges))
        ).all()
        models = {m.id: m.name for m in session.exec(select(Model)).all()}
    loose: dict[tuple[str, str, int], list[int]] = defaultdict(list)
    robust: dict[tuple[str, str, str], list[int]] = defaultdict(list)
    for v, model_id in rows:
        value = _binary(v)
        if value is None:
            continue
        model = models.get(model_id, str(model_id))
        if v.metric == "constraint":
            loose[(model, v.judge, v.response_id)].append(value)
        elif v.metric in ("rejection", "conflict_recognition"):
            robust[(v.metric, model, v.judge)].append(value)
    out: dict[str, dict[str, dict[str, float]]] = {m: defaultdict(dict) for m in CROSS_METRICS}
    per_model: dict[tuple[str, str], list[float]] = defaultdict(list)
    for (model, judge, _rid), values in loose.items():
        per_model[(model, judge)].append(float(np.mean(values)))
    for (model, judge), values in per_model.items():
        out["loose_ias"][model][judge] = 100 * float(np.mean(values))
    for (metric, model, judge), values in robust.items():
        out[metric][model][judge] = 100 * float(np.mean(values))
    return {m: dict(v) for m, v in out.items()}


def cross_judge(engine: Engine, run_ids: Iterable[int], judges: list[str] | None = None) -> CrossJudge:
    """Reliability of several judges scoring the same run(s): ICC(2,k) over models x judges and mean Spearman rho."""
    run_ids = list(run_ids)
    judges = judges if judges is not None else judges_for(engine, run_ids)
    scores = model_scores(engine, run_ids, judges)
    icc_out: dict[str, stats.ICCResult | None] = {}
    rho_out: dict[str, float | None] = {}
    notes: dict[str, str] = {}
    for metric, by_model in scores.items():
        complete = sorted(m for m, by_judge in by_model.items() if all(j in by_judge for j in judges))
        matrix = np.array([[by_model[m][j] for j in judges] for m in complete]) if complete else np.zeros((0, 0))
        icc_out[metric], rho_out[metric] = None, None
        if len(judges) < 2 or len(complete) < 2:
            notes[metric] = "needs at least two judges scoring at least two models"
            continue
        try:
            icc_out[metric] = stats.icc(matrix, kind="2,k")
        except ValueError as exc:
            notes[metric] = str(exc)
        if len(complete) >= 3:
            rhos = []
            for a, b in combinations(range(len(judges)), 2):
                try:
                    rhos.append(stats.spearman(matrix[:, a], matrix[:, b]).rho)
                except ValueError:
                    continue
            rho_out[metric] = float(np.mean(rhos)) if rhos else None
        else:
            notes.setdefault(metric, "Spearman needs at least three models")
    return CrossJudge(scores, icc_out, rho_out, notes)
