"""Judge alignment: expert-expert agreement, each judge against the adjudicated gold labels, and cross-judge reliability.

Dimensions follow the paper's alignment study: per-constraint adherence, Strict IAS (all constraints of a response
satisfied), proper rejection on gap instances, and conflict recognition on conflict instances. A judge's items come
from the read model (core.analysis.readmodel): its constraint verdicts merged with the rule checker's, and its Strict
IAS, rejection and conflict recognition per response. Only items both raters decided are compared; a judge's
unjudged (not applicable) and error items are counted, never folded into agreement.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from itertools import combinations
from typing import Any

import numpy as np
import pandas as pd
from sqlalchemy.engine import Engine
from sqlmodel import Session, col, select

from core.analysis import stats
from core.analysis.readmodel import RULE_JUDGE, constraint_verdicts, load_scores, response_scores, run_judges
from core.store.db import saved_id
from core.store.label_models import DECISIONS
from core.store.labels import expert_labels, gold_labels, verification_decisions
from core.store.models import Run
from core.store.run_kinds import evaluation_run

DIMENSIONS: dict[str, str] = {
    "constraint": "Per-constraint adherence",
    "strict_ias": "Strict IAS",
    "rejection": "Proper rejection",
    "conflict_recognition": "Conflict recognition",
}
RESPONSE_ITEMS: dict[str, str] = {"strict_ias": "all constraints", "rejection": "valid refusal",
                                  "conflict_recognition": "conflict recognized"}
OUTCOMES: dict[int, str] = {0: "fail", 1: "pass"}
GOLD_VS_JUDGE = ("gold", "the judge")
FIRST_VS_SECOND = ("the first expert", "the second expert")
Item = tuple[int, str]  # (response id, item name)


def items_from_label(response_id: int, payload: dict[str, Any]) -> dict[str, dict[Item, int]]:
    """Binary items per dimension from one gold-label payload."""
    out: dict[str, dict[Item, int]] = {d: {} for d in DIMENSIONS}
    cons = payload.get("constraints") or {}
    for cid, value in cons.items():
        out["constraint"][(response_id, cid)] = int(bool(value))
    if cons:
        out["strict_ias"][(response_id, RESPONSE_ITEMS["strict_ias"])] = int(all(bool(v) for v in cons.values()))
    if payload.get("valid_refusal") is not None:
        out["rejection"][(response_id, RESPONSE_ITEMS["rejection"])] = int(payload["valid_refusal"])
    if payload.get("conflict_recognized") is not None:
        out["conflict_recognition"][(response_id, RESPONSE_ITEMS["conflict_recognition"])] = int(payload["conflict_recognized"])
    return out


def _merged_labels(labels: Mapping[int, dict[str, Any]]) -> dict[str, dict[Item, int]]:
    """Items per dimension of many label payloads keyed by response id."""
    out: dict[str, dict[Item, int]] = {d: {} for d in DIMENSIONS}
    for rid, payload in labels.items():
        for dim, items in items_from_label(rid, payload).items():
            out[dim].update(items)
    return out


@dataclass
class Ratings:
    """One rater's items on one dimension: decided 0/1 values, and the items it left unjudged or failed on."""

    values: dict[Item, int] = field(default_factory=dict)
    unjudged: set[Item] = field(default_factory=set)
    errors: set[Item] = field(default_factory=set)

    def record(self, item: Item, status: str | None, passed: bool | None) -> None:
        """File one verdict: 'ok' with a decision is a value, 'error' an error, anything else (not_applicable) unjudged."""
        self.values.pop(item, None)
        self.unjudged.discard(item)
        self.errors.discard(item)
        if status == "ok" and passed is not None:
            self.values[item] = int(passed)
        elif status == "error":
            self.errors.add(item)
        else:
            self.unjudged.add(item)


def _strict_verdict(row: Mapping[str, Any], n_gold_constraints: int) -> tuple[str, bool | None]:
    """(status, passed) of the read model's Strict IAS for one response; unjudged when it rests on fewer constraints than gold."""
    if row["n_constraints"] < n_gold_constraints:
        return "not_applicable", None
    if not pd.isna(row["strict_ias"]):
        return "ok", bool(row["strict_ias"] == 1)
    return ("error" if row["n_constraint_errors"] else "not_applicable"), None


def judge_ratings(engine: Engine, run_ids: Sequence[int], judge: str, gold: Mapping[int, dict[str, Any]]) -> dict[str, Ratings]:
    """One judge's items per dimension on the gold responses, read from the read model (rule verdicts merged in)."""
    out = {d: Ratings() for d in DIMENSIONS}
    if not gold:
        return out
    verdicts = constraint_verdicts(engine, run_ids, judge, response_ids=list(gold))
    verdicts = verdicts.assign(own=verdicts["judge"] == judge).sort_values("own", kind="stable")  # own verdict wins
    for row in verdicts.to_dict("records"):
        out["constraint"].record((int(row["response_id"]), row["cid"]), row["status"], row["passed"])
    scores = response_scores(engine, run_ids, judge)
    for row in scores[scores["response_id"].isin(list(gold))].to_dict("records"):
        rid = int(row["response_id"])
        n_gold = len(gold[rid].get("constraints") or {})
        out["strict_ias"].record((rid, RESPONSE_ITEMS["strict_ias"]), *_strict_verdict(row, n_gold))
        for dim in ("rejection", "conflict_recognition"):
            value = row[dim]
            out[dim].record((rid, RESPONSE_ITEMS[dim]), row[f"{dim}_status"], None if pd.isna(value) else bool(value >= 0.5))
    return out


@dataclass(frozen=True)
class Kappa:
    """Cohen's kappa with its 95% CI (clipped to [-1, 1]); value None with the reason when it is undefined."""

    value: float | None
    ci_low: float | None
    ci_high: float | None
    note: str


def kappa_of(a: Sequence, b: Sequence, names: tuple[str, str], name_of: Callable[[Any], str] = str) -> Kappa:
    """Kappa of two raters' labels; undefined (None) when there is nothing to compare or either rater is constant."""
    if not a:
        return Kappa(None, None, None, "nothing to compare")
    constant = [f"{who} gave only '{name_of(labels[0])}'" for who, labels in zip(names, (a, b), strict=True)
                if len(set(labels)) == 1]
    if constant:
        return Kappa(None, None, None, "κ undefined: " + " and ".join(constant))
    result = stats.cohen_kappa(list(a), list(b))
    return Kappa(result.kappa, max(-1.0, result.ci_low), min(1.0, result.ci_high), "")


@dataclass(frozen=True)
class Agreement:
    """Agreement of two raters on one dimension, on the items both decided; kappa None when undefined (see note)."""

    dimension: str
    n_compared: int
    n_unjudged: int  # reference items the other rater left unjudged (not applicable, or no verdict at all)
    n_error: int  # reference items on which the other rater (a judge) failed
    kappa: float | None
    ci_low: float | None
    ci_high: float | None
    agreement: float | None
    note: str
    confusion: list[list[int]] = field(default_factory=lambda: [[0, 0], [0, 0]])  # rows: reference 0/1, cols: other 0/1
    disagreements: list[tuple[int, str, int, int]] = field(default_factory=list)  # (response, item, reference, other)

    @property
    def label(self) -> str:
        return DIMENSIONS[self.dimension]

    @property
    def small_sample(self) -> bool:
        return 0 < self.n_compared < stats.SMALL_N


def compare(dimension: str, reference: dict[Item, int], other: Ratings, names: tuple[str, str]) -> Agreement:
    """Cohen's kappa, observed agreement and confusion matrix on the items both raters decided, with the other counts."""
    common = sorted(set(reference) & set(other.values))
    n_error = len(set(reference) & other.errors)
    a = [reference[i] for i in common]
    b = [other.values[i] for i in common]
    k = kappa_of(a, b, names, lambda value: str(OUTCOMES.get(value)))
    confusion = [[sum(1 for x, y in zip(a, b, strict=True) if (x, y) == (r, o)) for o in (0, 1)] for r in (0, 1)]
    disagreements = [(i[0], i[1], reference[i], other.values[i]) for i in common if reference[i] != other.values[i]]
    agreement = float(np.mean(np.array(a) == np.array(b))) if common else None
    return Agreement(dimension, len(common), len(reference) - len(common) - n_error, n_error, k.value, k.ci_low,
                     k.ci_high, agreement, k.note, confusion, disagreements)


def expert_agreement(engine: Engine, run_ids: Iterable[int] | None = None) -> list[Agreement]:
    """Inter-annotator agreement between the two experts who labelled each response (first two by name)."""
    first: dict[int, dict[str, Any]] = {}
    second: dict[int, dict[str, Any]] = {}
    for rid, by_author in expert_labels(engine, run_ids).items():
        if len(by_author) >= 2:
            a, b = sorted(by_author)[:2]
            first[rid], second[rid] = by_author[a], by_author[b]
    first_items, second_items = _merged_labels(first), _merged_labels(second)
    return [compare(d, first_items[d], Ratings(values=second_items[d]), FIRST_VS_SECOND) for d in DIMENSIONS]


def run_choices(engine: Engine) -> dict[int, str]:
    """Every evaluation run not hidden (no build's spend row) as id -> '#id name', newest first (the page's run
    picker)."""
    with Session(engine) as session:
        return {saved_id(r): f"#{r.id} {r.name}" for r in session.exec(select(Run).where(evaluation_run())
                                                                       .order_by(col(Run.id).desc())).all()}


def default_run(engine: Engine, runs: Sequence[int]) -> list[int]:
    """The run Judge alignment opens on: of `runs` (newest first) the newest with both a judge's verdicts and gold
    labels, else the newest a judge scored, else the newest; [] without runs."""
    if not runs:
        return []
    judged = {r for r in runs if judges_for(engine, [r])}  # index seeks per run, not a scan of their verdicts
    labelled = next((r for r in runs if r in judged and gold_labels(engine, [r])), None)
    return [labelled or next((r for r in runs if r in judged), runs[0])]


def judges_for(engine: Engine, run_ids: Iterable[int]) -> list[str]:
    """Judges that produced verdicts in the given runs, sorted; the rule checker is not a judge."""
    return sorted(set(run_judges(engine, list(run_ids))) - {RULE_JUDGE})  # each judge's index seek, not a scan


def judge_vs_gold(engine: Engine, run_ids: Iterable[int], judge: str,
                  gold: Mapping[int, dict[str, Any]] | None = None) -> list[Agreement]:
    """One judge against the gold labels (adjudicated, or agreed by both experts), per dimension; pass `gold`
    (gold_labels of the runs) when already loaded."""
    run_ids = list(run_ids)
    gold = gold_labels(engine, run_ids) if gold is None else gold
    reference = _merged_labels(gold)
    judged = judge_ratings(engine, run_ids, judge, gold)
    return [compare(d, reference[d], judged[d], GOLD_VS_JUDGE) for d in DIMENSIONS]


AVERAGED_DIMENSIONS = ("strict_ias", "rejection", "conflict_recognition")


def average_kappa(rows: list[Agreement], dims: Iterable[str] = AVERAGED_DIMENSIONS) -> float | None:
    """Mean kappa over the given dimensions with a defined kappa (the 'Overall avg.' row of the paper's Table 9)."""
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
    """Agreement of two raters on one categorical dimension; kappa None when undefined (see note)."""

    dimension: str
    categories: tuple[str, ...]
    n: int
    kappa: float | None
    ci_low: float | None
    ci_high: float | None
    agreement: float | None
    note: str
    confusion: list[list[int]]  # rows: first rater, cols: second rater, both in `categories` order

    @property
    def label(self) -> str:
        return VERIFICATION_DIMENSIONS[self.dimension][0]

    @property
    def small_sample(self) -> bool:
        return 0 < self.n < stats.SMALL_N


def compare_categorical(dimension: str, categories: tuple[str, ...],
                        pairs: list[tuple[str | None, str | None]]) -> CategoricalAgreement:
    """Cohen's kappa, observed agreement and a categories x categories confusion table of (first, second) pairs."""
    pairs = [(a, b) for a, b in pairs if a in categories and b in categories]
    confusion = [[sum(1 for a, b in pairs if (a, b) == (r, c)) for c in categories] for r in categories]
    k = kappa_of([a for a, _ in pairs], [b for _, b in pairs], FIRST_VS_SECOND)
    agreement = sum(a == b for a, b in pairs) / len(pairs) if pairs else None
    return CategoricalAgreement(dimension, categories, len(pairs), k.value, k.ci_low, k.ci_high, agreement, k.note, confusion)


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
    pairs: dict[str, list[tuple[str | None, str | None]]] = {d: [] for d in VERIFICATION_DIMENSIONS}
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


FEW_MODELS = 5
FEW_MODELS_NOTE = "ICC on fewer than 5 models: unstable"


@dataclass(frozen=True)
class CrossJudge:
    """Per-model scores (%) by judge and metric with their n, plus ICC(2,k) and mean pairwise Spearman of model rankings."""

    judges: list[str]
    scores: dict[str, dict[str, dict[str, float]]]  # metric -> model -> judge -> mean in %
    n: dict[str, dict[str, dict[str, int]]]  # metric -> model -> judge -> responses behind the mean
    n_models: dict[str, int]  # metric -> models scored by every judge (the ICC's targets)
    icc: dict[str, stats.ICCResult | None]
    spearman: dict[str, float | None]
    notes: dict[str, list[str]]


def model_scores(engine: Engine, run_ids: Sequence[int], judges: list[str]) -> tuple[dict, dict]:
    """Per-model means (%) and counts of Loose IAS, rejection and conflict accuracy per judge, over the read model's scores."""
    scores: dict[str, dict[str, dict[str, float]]] = {m: {} for m in CROSS_METRICS}
    counts: dict[str, dict[str, dict[str, int]]] = {m: {} for m in CROSS_METRICS}
    for judge in judges:
        grouped = load_scores(engine, run_ids, judge).groupby("model", sort=True)[list(CROSS_METRICS)]
        means, n = grouped.mean(), grouped.count()
        for metric in CROSS_METRICS:
            for model in means.index[n[metric] > 0]:
                scores[metric].setdefault(model, {})[judge] = 100 * float(means.loc[model, metric])
                counts[metric].setdefault(model, {})[judge] = int(n.loc[model, metric])
    return scores, counts


def _mean_spearman(matrix: np.ndarray) -> tuple[float | None, list[str]]:
    """Mean pairwise Spearman rho of the judges' columns, and a note for pairs where it is undefined."""
    rhos, skipped = [], 0
    for a, b in combinations(range(matrix.shape[1]), 2):
        try:
            rhos.append(stats.spearman(matrix[:, a], matrix[:, b]).rho)
        except ValueError:
            skipped += 1
    notes = [f"Spearman undefined for {skipped} judge pair(s) with a constant score"] if skipped else []
    return (float(np.mean(rhos)) if rhos else None), notes


def cross_judge(engine: Engine, run_ids: Iterable[int], judges: list[str] | None = None) -> CrossJudge:
    """Reliability of several judges scoring the same run(s): ICC(2,k) over models x judges and mean Spearman rho."""
    run_ids = list(run_ids)
    judges = [j for j in (judges if judges is not None else judges_for(engine, run_ids)) if j != RULE_JUDGE]
    scores, counts = model_scores(engine, run_ids, judges)
    icc_out: dict[str, stats.ICCResult | None] = {}
    rho_out: dict[str, float | None] = {}
    n_models: dict[str, int] = {}
    notes: dict[str, list[str]] = {}
    for metric, by_model in scores.items():
        complete = sorted(m for m, by_judge in by_model.items() if all(j in by_judge for j in judges))
        icc_out[metric], rho_out[metric], n_models[metric], notes[metric] = None, None, len(complete), []
        if len(judges) < 2 or len(complete) < 2:
            notes[metric].append("needs at least two judges scoring at least two models")
            continue
        matrix = np.array([[by_model[m][j] for j in judges] for m in complete])
        if len(complete) < FEW_MODELS:
            notes[metric].append(FEW_MODELS_NOTE)
        try:
            icc = stats.icc(matrix, kind="2,k")
            icc_out[metric] = icc
            notes[metric] += [icc.note] if icc.note else []
        except ValueError as exc:
            notes[metric].append(str(exc))
        if len(complete) >= 3:
            rho_out[metric], rho_notes = _mean_spearman(matrix)
            notes[metric] += rho_notes
        else:
            notes[metric].append("Spearman needs at least three models")
    return CrossJudge(judges, scores, counts, n_models, icc_out, rho_out, notes)


# --------------------------------------------------------------------------- what a judge is worth with gold labels


def judge_value(engine: Engine, run_ids: Sequence[int], judges: Sequence[str],
                gold: Mapping[int, dict[str, Any]] | None = None) -> pd.DataFrame:
    """Per judge and gold-decidable metric: the mean width of the corrected (PPI++) CI over models beside the
    gold-only width on the same n, so a team sees which judge buys the narrowest intervals for its expert labels.
    `models` counts those with at least ppi.MIN_LABELS gold labels (the widths are NaN when none has), `n` every
    gold label on the metric."""
    from core.analysis import readmodel

    rows = []
    gold = gold_labels(engine, list(run_ids)) if gold is None else gold
    for judge in judges:
        if not gold:  # no estimate without gold labels
            continue
        table = readmodel.load_corrected(engine, list(run_ids), judge, gold=dict(gold))
        for metric, labelled in table[table["n"] > 0].groupby("metric", sort=True):
            g = labelled.dropna(subset=["estimate"])  # models with at least MIN_LABELS labels; NaN widths without
            width = float((g["ci_high"] - g["ci_low"]).mean()) if len(g) else np.nan
            gold_width = float((g["gold_ci_high"] - g["gold_ci_low"]).mean()) if len(g) else np.nan
            rows.append({"judge": judge, "metric": readmodel.GOLD_METRICS[metric], "models": int(len(g)),
                         "n": int(labelled["n"].sum()), "corrected_ci_width": width, "gold_only_ci_width": gold_width,
                         "labels_saved_share": 1 - (width / gold_width) ** 2 if gold_width > 0 else np.nan})
    return pd.DataFrame(rows, columns=["judge", "metric", "models", "n", "corrected_ci_width", "gold_only_ci_width",
                                       "labels_saved_share"])
