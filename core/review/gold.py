"""Gold labels on responses: the stratified sample, expert queues, labels, disagreements and adjudication.

Every write re-checks the session and the role (`core.review.auth.authorize`, over the permission table); every
write carries a client token so that a double submit is stored once; no annotation row is ever updated or deleted.
"""

from __future__ import annotations

import json
import random
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any, cast

from sqlalchemy import case, update
from sqlalchemy import select as sa_select
from sqlalchemy.engine import CursorResult, Engine
from sqlmodel import Session, col, func, select

from core.analysis.ppi import SMALL_N
from core.analysis.trace_sampling import add_remainders
from core.metrics import resolve_hook
from core.protocols import label_kinds
from core.protocols.base import LabelKind
from core.review.annotations import (
    DEFAULT_SAMPLE_SIZE,
    Bundle,
    HistoryEntry,
    Undone,
    append_annotation,
    guidelines_version,
    label_history,
    load_bundle,
    retraction,
    start_undo,
    with_retry,
)
from core.review.auth import Principal, authorize
from core.review.verification import PermissionDenied_, QueueState, needs_edit_queue, verification_queue
from core.store.db import saved_id
from core.store.label_models import GoldPayload
from core.store.labels import (
    GOLD_DESIGN,
    LABEL_ITEM_APPLIES,
    PRODUCTION,
    effective_annotations,
    label_items,
    live_annotations,
    response_ids_for_runs,
)
from core.store.models import Annotation, Assignment, Domain, Instance, Model, Response, Run, User
from core.store.run_kinds import evaluation_run
from core.store.schema import NO_MODE


@dataclass(frozen=True)
class SampleReport:
    """What drawing a gold sample did: responses sampled per stratum and assignments created."""

    sampled: int
    assignments: int
    batch: str
    strata: dict[str, int] = field(default_factory=dict)
    uncovered: dict[str, int] = field(default_factory=dict)  # domain -> responses left out: < 2 chosen experts cover it


def _allocate(sizes: dict[Any, int], n: int) -> dict[Any, int]:
    """Proportional allocation of n over strata (largest remainder), every non-empty stratum at least one if n allows."""
    total = sum(sizes.values())
    if n >= total:
        return dict(sizes)
    keys = sorted(sizes)
    alloc = {k: 0 for k in keys}
    if n >= len(keys):
        alloc = {k: 1 for k in keys}
    left = n - sum(alloc.values())
    spare = {k: sizes[k] - alloc[k] for k in keys}
    spare_total = sum(spare.values())
    quotas = {k: left * spare[k] / spare_total if spare_total else 0 for k in keys}
    for k in keys:
        alloc[k] += int(quotas[k])
    add_remainders(alloc, quotas, sizes, n)
    return alloc


def active_experts(engine: Engine) -> dict[str, tuple[str, ...]]:
    """Active expert accounts by username, with their assigned domains (empty: every domain)."""
    with Session(engine) as session:
        query = select(User).where(User.role == "expert", User.active == True)  # noqa: E712
        users = session.exec(query.order_by(User.username)).all()
    return {u.username: tuple(u.domains or ()) for u in users}


@dataclass(frozen=True)
class RunChoice:
    """A run a gold sample can be drawn from, with how many of its responses are finished."""

    id: int
    name: str
    status: str
    done: int

    @property
    def label(self) -> str:
        return f"#{self.id} {self.name} ({self.status}, {self.done} finished responses)"


def sample_runs(engine: Engine) -> list[RunChoice]:
    """Every evaluation run not hidden (no build's spend row), newest first, with its count of finished (done)
    responses."""
    done = (select(func.count()).select_from(Response)  # per run from the (run_id, status) index: no GROUP BY sort
            .where(col(Response.run_id) == Run.id, col(Response.status) == "done").correlate(Run).scalar_subquery())
    with Session(engine) as session:
        rows = session.exec(select(Run, done).where(evaluation_run()).order_by(col(Run.id).desc())).all()
    return [RunChoice(saved_id(r), r.name, r.status, int(n or 0)) for r, n in rows]


def labelable_run(engine: Engine, runs: list[RunChoice], experts: dict[str, Any] | None = None) -> int:
    """Index in `runs` (newest first) of the newest run with a finished response that two active experts' domains
    cover (what Draw a sample needs); else the newest with finished responses; else 0."""
    pool = {name: set(doms) for name, doms in (active_experts(engine) if experts is None else experts).items()}
    ids = [r.id for r in runs if r.done]
    if not ids:
        return 0
    newest_done = next(i for i, r in enumerate(runs) if r.done)
    if len(pool) < 2 or sum(not doms for doms in pool.values()) >= 2:
        return newest_done  # no domain has two experts, or two cover every domain: the answer needs no query
    with Session(engine) as session:
        pairs = session.exec(select(Response.run_id, Domain.name).distinct()
                             .join(Instance, col(Instance.id) == Response.instance_id)
                             .join(Domain, col(Domain.id) == Instance.domain_id)
                             .where(col(Response.run_id).in_(ids), Response.status == "done")).all()
    coverable = {int(run) for run, domain in pairs if len(_covering(pool, domain)) >= 2}
    return next((i for i, r in enumerate(runs) if r.id in coverable), newest_done)


def draw_gold_sample(
    engine: Engine,
    principal: Principal | None,
    run_id: int,
    n: int = DEFAULT_SAMPLE_SIZE,
    experts: list[str] | None = None,
    seed: int = 0,
    strategy: str = "stratified",
) -> SampleReport:
    """A sample of a run's finished responses, each assigned to two experts, with each one's inclusion probability.

    strategy 'stratified' (the default): proportional allocation over domain x mode x model strata. 'uncertainty' and
    'active': Poisson sampling with probabilities from core.analysis.ppi.sampling_probabilities over the judges'
    uncertainty on each response (readmodel.response_uncertainty), mixed with 10% / 50% uniform (UNIFORM_SHARE:
    active inference's optimal rule, Zrnic and Candès 2024); the recorded probabilities keep the corrected estimates
    unbiased (inverse-probability weighting). Neither is narrower than uniform labels in the product's own benchmark
    (design_evidence), so neither is the default.
    """
    if strategy not in (*SAMPLING_STRATEGIES, SEGMENT_UNCERTAINTY):
        raise ValueError(f"strategy: must be one of {', '.join((*SAMPLING_STRATEGIES, SEGMENT_UNCERTAINTY))}")
    principal = authorize(engine, principal, "draw_gold_sample")
    if n < 1:
        raise ValueError("n: must be at least 1")
    experts_by_name = active_experts(engine)
    with Session(engine) as session:
        rows = session.exec(
            select(Response, Instance, Domain, Model)
            .join(Instance, col(Instance.id) == Response.instance_id)
            .join(Domain, col(Domain.id) == Instance.domain_id)
            .join(Model, col(Model.id) == Response.model_id)
            .where(Response.run_id == run_id, Response.status == "done")
        ).all()
        already = set(session.exec(select(Assignment.target_id).where(Assignment.kind == "gold_label")).all())
    pool = {name: set(doms) for name, doms in experts_by_name.items() if experts is None or name in experts}
    if len(pool) < 2:
        raise ValueError("experts: at least two active experts are needed (each response is labelled twice)")
    key_of = _segment_key(engine, run_id) if strategy == SEGMENT_UNCERTAINTY else _design_key
    strata: dict[tuple[str, str | None, str], list[int]] = defaultdict(list)
    uncovered: dict[str, int] = defaultdict(int)
    before: list[int] = []  # the draw's population sampled by an earlier draw: recorded at probability 1
    for resp, inst, dom, model in rows:
        covered = len(_covering(pool, dom.name)) >= 2
        if resp.id in already:
            before += [saved_id(resp)] if covered else []
            continue
        if not covered:
            uncovered[dom.name] += 1
            continue
        strata[key_of(resp, inst, dom, model)].append(saved_id(resp))
    if not strata:
        short = f" ({_uncovered_text(uncovered)})" if uncovered else ""
        raise ValueError(f"run_id: no finished, not yet sampled responses in this run that two of the chosen experts' "
                         f"domains cover{short}")
    alloc = (_segment_allocation(engine, run_id, strata, n) if strategy == SEGMENT_UNCERTAINTY
             else _allocate({k: len(v) for k, v in strata.items()}, n))
    rng = random.Random(seed)
    batch = f"run{run_id}-{datetime.now().strftime('%Y%m%d%H%M%S')}"
    chosen: list[tuple[int, str]] = []
    probability: dict[int, float] = {}
    if strategy in ("stratified", SEGMENT_UNCERTAINTY):
        for key in sorted(strata):
            ids = sorted(strata[key])
            chosen.extend((rid, key[0]) for rid in rng.sample(ids, alloc[key]))
            probability.update({rid: alloc[key] / len(ids) for rid in ids})
    else:
        chosen, probability = _uncertainty_draw(engine, run_id, strata, n, rng, UNIFORM_SHARE[strategy])
    assignments = assign_pairs(chosen, probability, pool, batch, queue_seed=seed)
    write_assignments(engine, design_rows(before, batch) + assignments)
    if strategy in UNIFORM_SHARE:
        alloc = {k: sum(1 for rid, _ in chosen if rid in set(v)) for k, v in strata.items()}
    return SampleReport(len(chosen), len(assignments), batch, {"/".join(k): alloc[k] for k in sorted(alloc) if alloc[k]},
                        dict(sorted(uncovered.items())))


def design_rows(sampled_before: Iterable[int], batch: str) -> list[Assignment]:
    """GOLD_DESIGN rows (no work, a weight) at probability 1 for the responses of a new draw's population that an
    earlier draw sampled.

    Why: the new draw's probabilities are conditional on the earlier sample, so conditional on it each response of
    the population has E[z_i] = Y_i when the earlier-sampled ones weigh 1 and the new ones 1/pi (Horvitz-Thompson
    per draw); keeping an earlier draw's 1/pi beside a later draw's would count their rectifiers twice over."""
    return [Assignment(kind=GOLD_DESIGN, target_id=rid, assignee=batch, batch=batch, probability=1.0)
            for rid in sorted(set(sampled_before))]


def assign_pairs(chosen: list[tuple[int, str]], probability: dict[int, float], pool: dict[str, set[str]],
                 batch: str, queue_seed: int | None = None) -> list[Assignment]:
    """Gold-label assignments of each chosen (response id, domain) to the two least-loaded experts covering its
    domain, each carrying the response's inclusion probability, blind, and placed in the queues by shuffle_queues."""
    load = {name: 0 for name in pool}
    assignments = []
    for rid, domain in chosen:
        for who in sorted(_covering(pool, domain), key=lambda u: (load[u], u))[:2]:
            load[who] += 1
            assignments.append(Assignment(kind="gold_label", target_id=rid, assignee=who, batch=batch,
                                          probability=probability[rid]))
    return shuffle_queues(assignments, random.SystemRandom().randrange(2**31) if queue_seed is None else queue_seed)


def shuffle_queues(assignments: list[Assignment], seed: int) -> list[Assignment]:
    """Give the assignments queue positions from a seeded shuffle (recorded on each), so an expert's queue mixes the
    models instead of following the draw's strata; the same seed gives the same order."""
    positions = list(range(len(assignments)))
    random.Random(seed).shuffle(positions)
    for assignment, position in zip(assignments, positions, strict=True):
        assignment.queue_seed, assignment.queue_position = seed, position
    return assignments


def write_assignments(engine: Engine, assignments: list[Assignment]) -> None:
    """Store the assignments in one transaction (retried on a transient error)."""

    def write() -> None:
        with Session(engine) as session:
            session.add_all(assignments)
            session.commit()

    with_retry(write)


def _covering(pool: dict[str, set[str]], domain: str) -> list[str]:
    """The experts of the pool whose domains include `domain` (an expert without domains covers every domain)."""
    return [u for u, doms in pool.items() if not doms or domain in doms]


def _uncovered_text(uncovered: dict[str, int]) -> str:
    return "; ".join(f"{d}: {n} responses" for d, n in sorted(uncovered.items())) + " need two experts of their domain"


SAMPLING_STRATEGIES: tuple[str, ...] = ("stratified", "uncertainty", "active")  # the first is the page's default
UNIFORM_SHARE = {"uncertainty": 0.1, "active": 0.5}  # share of each draw spread uniformly (the rest by uncertainty)
DESIGN_EVIDENCE = Path(__file__).resolve().parents[2] / "data" / "sampling_designs.json"  # bench/bench_labels_pay.py


STANDARD_TEXT = ("the standard labels-only interval on uniform labels (Clopper-Pearson's exact interval below "
                 f"{SMALL_N} labels, Wilson's from {SMALL_N})")


def design_evidence(path: Path = DESIGN_EVIDENCE) -> dict[str, str]:
    """Per sampling strategy, what the product's own benchmark measured against uniform labels with the standard
    labels-only interval at the same number of labels; empty when the benchmark has not written its file."""
    if not path.exists():
        return {}
    data = json.loads(path.read_text())
    out = {}
    for name, d in data["designs"].items():
        if not d.get("strategy"):
            continue
        share = d["narrower"] / data["cells"]
        verdict = ("at least as narrow" if share >= 0.95 else "NOT narrower: not the default, and not a saving")
        median, worst = d["median_ratio"], d["worst_ratio"]
        out[d["strategy"]] = (f"{name}: {verdict} — at least as narrow as {STANDARD_TEXT} in "
                              f"{d['narrower']} of {data['cells']} simulated cells ({share:.0%}); median width "
                              f"{median:.2f}× the labels-only width at the same number of labels (about "
                              f"{median**2:.2f}× the labels for the same width), worst {worst:.2f}× (about "
                              f"{worst**2:.1f}× the labels); lowest coverage {d['lowest_coverage']:.1%} "
                              f"(bench/bench_labels_pay.py, {data['worlds']} worlds per cell, "
                              f"{_labels_text(data.get('labels', []))} labels).{_below_text(data, d)}")
    return out


def _labels_text(labels: list[int]) -> str:
    """The label counts a benchmark verdict covers, as text."""
    return ", ".join(str(n) for n in labels) or "the grid's"


def _reference_below(data: dict) -> dict:
    """The benchmark's verdict on Wilson's interval at every n (a reference the product does not show below
    SMALL_N labels) in the cells below SMALL_N labels; empty when not measured."""
    return data["designs"].get(data.get("reference", ""), {}).get("below") or {}


def _below_text(data: dict, d: dict) -> str:
    """The verdict below SMALL_N labels, where the benchmark measured one."""
    below = d.get("below")
    if not below:
        return ""
    verdict = ("" if below["narrower"] >= 0.95 * below["cells"] else
               f" NOT narrower below {SMALL_N} labels either.")
    wilson = _reference_below(data)
    reference = (f" Wilson's interval would be narrower there (median {wilson['median_ratio']:.2f}× the "
                 f"labels-only width) but covers only {wilson['lowest_coverage']:.1%} in its worst cell, below the "
                 "93% floor every shown interval keeps, so the product does not show it." if wilson else "")
    return (f" With {_labels_text(data.get('small_labels', []))} labels: at least as narrow in {below['narrower']} "
            f"of {below['cells']} cells, median {below['median_ratio']:.2f}×, worst {below['worst_ratio']:.2f}×, "
            f"lowest coverage {below['lowest_coverage']:.1%}.{verdict}{reference}")


def small_sample_evidence(path: Path = DESIGN_EVIDENCE) -> str:
    """What the product's own benchmark measured for the default draw below SMALL_N labels, for the leaderboard's
    rows on fewer labels: the shown interval and the correction alone against the labels-only interval at the same
    labels (Clopper-Pearson there, the 'gold only' column), and Wilson's coverage; empty when the benchmark has not
    written its file or measured no such cell."""
    if not path.exists():
        return ""
    data = json.loads(path.read_text())
    default: dict = next((d for d in data["designs"].values() if d.get("strategy") == SAMPLING_STRATEGIES[0]), {})
    below = default.get("below")
    correction = data["designs"].get(data.get("correction", ""), {}).get("below")
    wilson = _reference_below(data)
    if not below or not correction or not wilson:
        return ""
    pays = correction["narrower"] >= 0.95 * correction["cells"]
    return (f"Below {SMALL_N} gold labels the 'gold only' column is Clopper-Pearson's exact labels-only interval, "
            f"and the corrected column shows the narrower of PPI++ and that interval: in the product's benchmark "
            f"(bench/bench_labels_pay.py, {data['worlds']} worlds per cell, "
            f"{_labels_text(data.get('small_labels', []))} labels) it is at least as narrow as labels alone in "
            f"{below['narrower']} of {below['cells']} cells (median {below['median_ratio']:.2f}× their width) and "
            f"covers at least {below['lowest_coverage']:.1%}. The correction itself "
            f"{'pays' if pays else 'does NOT reliably pay'} there: PPI++ alone is at least as narrow as labels alone "
            f"in {correction['narrower']} of {correction['cells']} cells (median {correction['median_ratio']:.2f}×, "
            f"worst {correction['worst_ratio']:.2f}×); elsewhere the row's method reads 'labels only'. Wilson's "
            f"interval, narrower still, covers only {wilson['lowest_coverage']:.1%} in its worst cell there, so it "
            "is not shown.")


SEGMENT_UNCERTAINTY = "segment_uncertainty"  # production traces: segment x judge-uncertainty band (core.review.traces)


def _design_key(resp: Response, inst: Instance, dom: Domain, model: Model) -> tuple[str, str | None, str]:
    return (dom.name, inst.mode or NO_MODE, model.name)  # IFEval, FollowRAG, production items: no EnterpriseRAG mode


def _segment_key(engine: Engine, run_id: int):
    """Strata of production items: (domain, language, band of the judges' uncertainty on the response)."""
    from core.analysis.trace_sampling import uncertainty_band, verdict_uncertainty

    uncertainty = verdict_uncertainty(engine, run_id)

    def key(resp: Response, inst: Instance, dom: Domain, model: Model) -> tuple[str, str, str]:
        return (dom.name, inst.language or "und", uncertainty_band(uncertainty.get(saved_id(resp))))

    return key


def _segment_allocation(engine: Engine, run_id: int, strata: dict[tuple[str, str | None, str], list[int]],
                        n: int) -> dict[tuple[str, str | None, str], int]:
    """Neyman-like allocation over the segment x uncertainty strata (more where the judges are less sure)."""
    from core.analysis.trace_sampling import UNDECIDED, neyman_allocation, verdict_uncertainty

    uncertainty = verdict_uncertainty(engine, run_id)
    weights = {k: sum(uncertainty.get(rid, UNDECIDED) for rid in ids) / len(ids) for k, ids in strata.items()}
    return neyman_allocation({k: len(v) for k, v in strata.items()}, weights, n)


def _uncertainty_draw(engine: Engine, run_id: int, strata: dict[tuple[str, str | None, str], list[int]], n: int,
                      rng: random.Random, uniform: float = 0.1) -> tuple[list[tuple[int, str]], dict[int, float]]:
    """Poisson sample with probabilities proportional to the square root of the judges' uncertainty (the optimal
    rule of active inference, Zrnic and Candès 2024), mixed with a `uniform` share spread evenly."""
    from core.analysis.ppi import sampling_probabilities
    from core.analysis.readmodel import response_uncertainty

    domain_of = {rid: key[0] for key, ids in strata.items() for rid in ids}
    ids = sorted(domain_of)
    uncertainty = response_uncertainty(engine, run_id)
    pi = sampling_probabilities([uncertainty.get(rid, 0.25) for rid in ids], min(n, len(ids)), uniform)
    probability = {rid: float(p) for rid, p in zip(ids, pi, strict=True)}
    chosen = [(rid, domain_of[rid]) for rid in ids if rng.random() < probability[rid]]
    return chosen, probability


@dataclass(frozen=True)
class ResponseContext:
    """What a labeller sees: the response text, its model, and the instance bundle (never judge verdicts)."""

    response: Response
    model: str
    run_id: int
    bundle: Bundle


def load_response(engine: Engine, response_id: int) -> ResponseContext:
    """A response with its model's name and its instance bundle (for admins and adjudication: never blinded)."""
    with Session(engine) as session:
        resp = session.get(Response, response_id)
        if resp is None:
            raise ValueError(f"target_id: no response {response_id}")
        model = session.get(Model, resp.model_id)
    return ResponseContext(resp, model.name if model else "", resp.run_id, load_bundle(engine, resp.instance_id))


HIDDEN_MODEL = "model hidden until you save your label"


def blinded_for(engine: Engine, principal: Principal, response_id: int) -> bool:
    """Whether the model of a response stays hidden from this expert: a blind gold-label assignment of it to them
    and no standing label of theirs on it yet."""
    with Session(engine) as session:
        blind = session.exec(select(Assignment.blind).where(
            Assignment.kind == "gold_label", Assignment.target_id == response_id,
            Assignment.assignee == principal.username)).first()
    if not blind:
        return False
    return not live_annotations(engine, "gold_label", [response_id], author=principal.username)


def labelling_context(engine: Engine, principal: Principal, response_id: int) -> ResponseContext:
    """What the expert sees while labelling: load_response with the model's name replaced by HIDDEN_MODEL while
    blinded_for holds (the name is revealed once they have saved a label)."""
    ctx = load_response(engine, response_id)
    if blinded_for(engine, principal, response_id):
        return ResponseContext(ctx.response, HIDDEN_MODEL, ctx.run_id, ctx.bundle)
    return ctx


def gold_queue(engine: Engine, principal: Principal) -> QueueState:
    """Responses assigned to this expert that they have not labelled yet: samples in the order they were drawn, each
    in its seeded shuffle's order (assignment order where a sample predates the shuffle)."""
    with Session(engine) as session:
        rows = session.exec(
            select(Assignment.target_id, Assignment.batch, Assignment.queue_position, Assignment.id)
            .where(Assignment.kind == "gold_label", Assignment.assignee == principal.username)
            .order_by(col(Assignment.id))
        ).all()
    first_id: dict[str, int] = {}
    for _, batch, _, aid in rows:
        first_id.setdefault(batch, int(aid or 0))
    ordered = sorted(rows, key=lambda r: (first_id[r[1]], r[2] if r[2] is not None else int(r[3] or 0), int(r[3] or 0)))
    assigned = [target for target, *_ in ordered]
    done = {a.target_id for a in live_annotations(engine, "gold_label", author=principal.username)}
    return QueueState([t for t in assigned if t not in done], len([t for t in assigned if t in done]))


@dataclass(frozen=True)
class SampleBatch:
    """One drawn gold sample: its responses and assignments, whether it is labelled blind, and its queue seed."""

    batch: str
    responses: int
    assignments: int
    blind: bool
    queue_seed: int | None


def sample_batches(engine: Engine) -> list[SampleBatch]:
    """Every gold-label sample, newest first (a sample is blind when all its assignments are)."""
    with Session(engine) as session:
        rows = session.execute(
            sa_select(col(Assignment.batch), func.count(func.distinct(col(Assignment.target_id))), func.count(),
                      func.min(case((col(Assignment.blind), 1), else_=0)), func.max(col(Assignment.queue_seed)),
                      func.max(col(Assignment.id)))
            .where(col(Assignment.kind) == "gold_label").group_by(col(Assignment.batch))
        ).all()
    ordered = sorted(rows, key=lambda r: -int(r[5]))
    return [SampleBatch(b, int(n), int(a), bool(blind), seed) for b, n, a, blind, seed, _ in ordered]


def set_sample_blinding(engine: Engine, principal: Principal | None, batch: str, blind: bool, read_blind: bool) -> int:
    """Turn blind labelling on or off for one sample (admins); refused when the sample's setting is no longer
    `read_blind`, the value the caller read. Returns the number of assignments changed."""
    authorize(engine, principal, "set_sample_blinding")

    def write() -> int:
        with Session(engine) as session:
            mine = (col(Assignment.kind) == "gold_label") & (col(Assignment.batch) == batch)
            total = session.exec(select(func.count()).select_from(Assignment).where(mine)).one()
            if not total:
                raise ValueError(f"batch: no gold-label sample {batch!r}")
            result = session.execute(update(Assignment).where(mine, col(Assignment.blind) == read_blind)
                                     .values(blind=blind))
            changed = cast(CursorResult, result).rowcount
            if changed != total:
                session.rollback()
                raise ValueError(f"batch: the blinding of {batch!r} changed since you read it; reload and try again")
            session.commit()
            return int(changed)

    return with_retry(write)


def expected_fields(bundle: Bundle) -> tuple[list[str], bool, bool]:
    """(constraint ids, asks valid refusal, asks conflict recognition) for an instance."""
    return [c.cid for c in bundle.constraints], bundle.instance.mode == "gap", bundle.instance.mode == "conflict"





def wants_faithful(bundle: Bundle) -> bool:
    """Whether the label asks if the answer is faithful to the documents: production items (no reference, no
    constraints) are labelled on that."""
    return bundle.instance.protocol == PRODUCTION


def _as_binary(value: Any, name: str) -> int:
    if isinstance(value, bool):
        return int(value)
    if value in (0, 1) and not isinstance(value, float):
        return int(value)
    raise ValueError(f"{name}: must be 0/1 or true/false, got {value!r}")


def auto_satisfied(bundle: Bundle) -> dict[str, str]:
    """Conditional constraints that cannot apply to this instance (precondition gap|conflict on another mode), by id,
    with their precondition: they are satisfied automatically, as the scorer does, so nobody is asked about them."""
    mode = bundle.instance.mode
    return {c.cid: c.precondition for c in bundle.constraints if c.precondition and c.precondition != mode}


def validate_gold_payload(payload: dict[str, Any], bundle: Bundle, response_text: str | None = None) -> dict[str, Any]:
    """Normalise a gold label: every constraint answered yes/no (conditional ones that cannot apply are satisfied
    automatically), refusal for gap, conflict recognition for conflict, faithfulness for production items, and each
    expert label kind the response's protocol declares, a value per unit (checked against `response_text`'s units
    when given)."""
    cids, wants_refusal, wants_conflict = expected_fields(bundle)
    given = payload.get("constraints")
    if not isinstance(given, dict):
        raise ValueError("constraints: must be an object mapping constraint id to true/false")
    auto = auto_satisfied(bundle)
    for cid, precondition in auto.items():
        if cid in given and not _as_binary(given[cid], f"constraints.{cid}"):
            raise ValueError(f"constraints.{cid}: applies only to {precondition} instances, so it is satisfied "
                             f"automatically on this {bundle.instance.mode} instance")
    given = {**dict.fromkeys(auto, True), **given}
    missing = [c for c in cids if c not in given]
    extra = [c for c in given if c not in cids]
    if missing:
        raise ValueError(f"constraints: missing answers for {missing}")
    if extra:
        raise ValueError(f"constraints: unknown constraint ids {extra}")
    out: dict[str, Any] = {"constraints": {c: bool(_as_binary(given[c], f"constraints.{c}")) for c in cids}}
    kind = bundle.instance.protocol if bundle.instance.protocol == PRODUCTION else bundle.instance.mode
    for name, wanted in (("valid_refusal", wants_refusal), ("conflict_recognized", wants_conflict),
                         ("faithful", wants_faithful(bundle))):
        value = payload.get(name)
        if wanted:
            if value is None:
                raise ValueError(f"{name}: required for a {kind} instance")
            out[name] = _as_binary(value, name)
        elif value is not None:
            raise ValueError(f"{name}: only applies to {LABEL_ITEM_APPLIES[name]} instances")
    out.update(validate_label_kinds(payload, bundle, response_text))
    note = payload.get("note", "")
    if not isinstance(note, str):
        raise ValueError("note: must be text")
    out["note"] = note.strip()
    return out


def response_label_kinds(bundle: Bundle) -> tuple[LabelKind, ...]:
    """The expert label kinds the response's protocol declares (`Protocol.labels`), asked beside the gold label."""
    return label_kinds(bundle.instance.protocol)


def label_units(kind: LabelKind, response_text: str) -> list[str]:
    """The units of the answer an expert labels for `kind` (its declared `units` reading), reasoning removed."""
    from core.generation.reasoning import split_reasoning

    units: list[str] = resolve_hook(kind.units)(split_reasoning(response_text).answer)
    return units


def validate_unit_labels(kind: LabelKind, protocol: str, value: Any, units: Sequence[str] | None) -> dict[str, str]:
    """Every unit ("1".."n") labelled with a value of the kind's scale (the count unchecked when `units` is None)."""
    values = kind.values()
    if not isinstance(value, dict) or not value:
        raise ValueError(f"{kind.name}: required for a {protocol} response: each {kind.unit} {' / '.join(values)}")
    bad = {k: v for k, v in value.items() if v not in values}
    if bad:
        raise ValueError(f"{kind.name}: {bad} — each value must be one of {', '.join(values)}")
    if units is not None:
        wanted = [str(n) for n in range(1, len(units) + 1)]
        if sorted(value, key=lambda k: (len(k), k)) != wanted:
            raise ValueError(f"{kind.name}: one label per {kind.unit} 1..{len(units)}, got {sorted(value)}")
    return {str(k): str(v) for k, v in value.items()}


def validate_label_kinds(payload: dict[str, Any], bundle: Bundle, response_text: str | None) -> dict[str, Any]:
    """The payload's label-kind fields checked against the kinds the response's protocol declares: each one it
    takes given in full, no other field beyond the shared ones."""
    kinds = response_label_kinds(bundle)
    protocol = bundle.instance.protocol
    out = {kind.name: validate_unit_labels(kind, protocol, payload.get(kind.name),
                                           None if response_text is None else label_units(kind, response_text))
           for kind in kinds}
    for name in sorted(set(payload) - set(GoldPayload.model_fields) - set(out)):
        if payload[name] is not None:
            takes = ", ".join(k.name for k in kinds) or "none"
            raise ValueError(f"{name}: not a label a {protocol} response takes (its label kinds: {takes})")
    return out


def record_gold_label(
    engine: Engine, principal: Principal | None, response_id: int, payload: dict[str, Any], client_token: str
) -> tuple[int, bool]:
    """Append an expert's label for an assigned response; returns (annotation id, created)."""
    principal = authorize(engine, principal, "label_response")
    with Session(engine) as session:
        assigned = session.exec(
            select(Assignment).where(
                Assignment.kind == "gold_label",
                Assignment.target_id == response_id,
                Assignment.assignee == principal.username,
            )
        ).first()
    if assigned is None:
        raise PermissionDenied_("response: not assigned to you")
    return _append_response_label(engine, "gold_label", principal, response_id, payload, client_token)


def _append_response_label(
    engine: Engine, kind: str, principal: Principal, response_id: int, payload: dict[str, Any], client_token: str
) -> tuple[int, bool]:
    ctx = load_response(engine, response_id)
    clean = validate_gold_payload(payload, ctx.bundle, ctx.response.text)
    ann, created = append_annotation(
        engine,
        Annotation(
            kind=kind,
            target_type="response",
            target_id=response_id,
            author=principal.username,
            payload=clean,
            guidelines_version=guidelines_version(),
            client_token=client_token,
        ),
    )
    return ann.id or 0, created


def record_adjudication(
    engine: Engine, principal: Principal | None, response_id: int, payload: dict[str, Any], client_token: str
) -> tuple[int, bool]:
    """Append an admin's adjudicated gold label for a response; the latest adjudication is the gold label."""
    principal = authorize(engine, principal, "adjudicate")
    return _append_response_label(engine, "adjudication", principal, response_id, payload, client_token)


@dataclass(frozen=True)
class Disagreement:
    """A response whose two experts' latest labels differ on at least one item."""

    response_id: int
    labels: dict[str, dict[str, Any]]  # author -> payload
    differing: list[str]
    adjudicated: bool


def label_disagreements(engine: Engine, run_ids: Iterable[int] | None = None) -> list[Disagreement]:
    """Responses with at least two expert labels that differ on some item, adjudicated or not."""
    scope = response_ids_for_runs(engine, run_ids)
    labels = effective_annotations(engine, "gold_label", scope, "response")
    adjudicated = set(effective_annotations(engine, "adjudication", scope, "response"))
    out = []
    for rid, by_author in sorted(labels.items()):
        if len(by_author) < 2:
            continue
        flat = {a: label_items(ann.payload) for a, ann in by_author.items()}
        keys = sorted(set().union(*flat.values()))
        differing = [k for k in keys if len({f.get(k) for f in flat.values()}) > 1]
        if differing:
            out.append(Disagreement(rid, {a: ann.payload for a, ann in sorted(by_author.items())}, differing, rid in adjudicated))
    return out


# --------------------------------------------------------------------------- export / import




# --------------------------------------------------------------------------- undo, revisit, progress


def undo_last_label(engine: Engine, principal: Principal | None, client_token: str, note: str = "") -> Undone:
    """Take back the expert's most recent gold label (append-only: a retraction row); their previous label on that
    response, if any, counts again, else the response returns to their queue."""
    principal, last = start_undo(engine, principal, "label_response", "gold_label", client_token)
    if isinstance(last, Undone):
        return last
    row, _ = append_annotation(engine, retraction(last, principal.username, client_token, note))
    return Undone(row.id or 0, last.target_id, f"label on response {last.target_id}")


def my_labels(engine: Engine, principal: Principal) -> list[tuple[int, datetime]]:
    """(response id, when) of the expert's standing labels, newest first, for revisiting."""
    latest = {a.target_id: a.created_at for a in live_annotations(engine, "gold_label", author=principal.username)}
    return sorted(latest.items(), key=lambda kv: kv[1], reverse=True)


def my_label(engine: Engine, principal: Principal, response_id: int) -> dict[str, Any] | None:
    """The expert's standing label payload on one response, if any."""
    rows = live_annotations(engine, "gold_label", [response_id], "response", author=principal.username)
    return rows[-1].payload if rows else None


def label_history_of(engine: Engine, response_id: int, author: str) -> list[HistoryEntry]:
    """One expert's labels on one response, oldest first, undone ones marked (what a re-label replaces)."""
    return label_history(engine, "response", [response_id], ("gold_label",), author=author)


@dataclass(frozen=True)
class ExpertProgress:
    """One expert's work for the admin: verification decisions and queue, follow-ups, gold labels, last activity."""

    expert: str
    domains: tuple[str, ...]
    verified: int
    to_verify: int
    needs_edit: int
    labelled: int
    to_label: int
    last_active: datetime | None


def expert_progress(engine: Engine, overlap: float) -> list[ExpertProgress]:
    """Per active expert: standing verification decisions, instances waiting in their queue, 'needs edit' follow-ups
    in their domains, gold labels done and waiting, and when they last labelled anything."""
    from core.review.auth import Principal as _Principal

    out = []
    for name, domains in active_experts(engine).items():
        who = _Principal(name, "expert", domains, datetime.now(), datetime.now())
        queue, labels = verification_queue(engine, who, overlap), gold_queue(engine, who)
        with Session(engine) as session:
            last = session.exec(select(func.max(Annotation.created_at)).where(Annotation.author == name)).one()
        out.append(ExpertProgress(name, domains, queue.decided, len(queue.instance_ids), len(needs_edit_queue(engine, who)),
                                  labels.decided, len(labels.instance_ids), last))
    return out
