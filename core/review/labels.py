"""Expert work: verification queues and decisions (with new instance versions on edits), gold-label sampling,
assignments, append-only label writes, adjudication, and export/import of annotations as JSONL.

Every write re-checks the session and the role (`core.review.auth.authorize`, over the permission table); every
write carries a client token so that a double submit is stored once; no annotation row is ever updated or deleted.
"""

from __future__ import annotations

import hashlib
import json
import math
import random
import re
import time
import uuid
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from sqlalchemy.engine import Engine
from sqlalchemy.exc import IntegrityError, OperationalError
from sqlmodel import Session, col, func, select

from core.review.auth import Principal, authorize
from core.review.permissions import allowed
from core.store.benchmark import InstanceDetail, instance_detail
from core.config import REPO_ROOT, get_secret
from core.store.io import LineError, add_instance, instance_spec
from core.store.models import Annotation, Assignment, Domain, Instance, Model, Response, Run, User
from core.store.schema import DOCUMENT_ROLES, InstanceSpec

GUIDELINES_PATH = REPO_ROOT / "annotations" / "guidelines.md"
DEFAULT_OVERLAP = 0.2  # share of instances (per domain x mode) that need two independent verification decisions
DEFAULT_SAMPLE_SIZE = 150
DECISIONS: tuple[str, ...] = ("accept", "reject", "needs_edit")
DECISION_STATUS = {"accept": "accepted", "reject": "rejected", "needs_edit": "needs_edit"}
KINDS: tuple[str, ...] = ("verification", "gold_label", "adjudication")


# --------------------------------------------------------------------------- shared helpers


def guidelines_text(path: Path = GUIDELINES_PATH) -> str:
    return path.read_text(encoding="utf-8") if path.is_file() else ""


def guidelines_version(path: Path = GUIDELINES_PATH) -> str:
    """The declared `Version:` of the guidelines plus a short content hash, so labels record exactly what was read."""
    text = guidelines_text(path)
    found = re.search(r"^Version:\s*(\S+)", text, flags=re.MULTILINE)
    digest = hashlib.sha256(text.encode()).hexdigest()[:8]
    return f"{found.group(1) if found else 'unversioned'}+{digest}"


def new_client_token() -> str:
    return uuid.uuid4().hex


Bundle = InstanceDetail  # an instance version with its domain name, constraints and documents in order


def load_bundle(engine: Engine, instance_id: int) -> InstanceDetail:
    detail = instance_detail(engine, instance_id)
    if detail is None:
        raise ValueError(f"target_id: no instance {instance_id}")
    return detail


def _with_retry(fn, attempts: int = 5):
    """Run a write transaction, retrying briefly when SQLite reports the database as locked."""
    for attempt in range(attempts):
        try:
            return fn()
        except OperationalError as exc:
            if "locked" not in str(exc).lower() or attempt == attempts - 1:
                raise
            time.sleep(0.05 * (attempt + 1))
    raise AssertionError("unreachable")


def _existing_by_token(engine: Engine, token: str) -> Annotation | None:
    with Session(engine) as session:
        return session.exec(select(Annotation).where(Annotation.client_token == token)).first()


def _append(engine: Engine, annotation: Annotation) -> tuple[Annotation, bool]:
    """Insert one annotation; returns (row, created). A repeated client token returns the stored row instead."""
    if annotation.client_token:
        existing = _existing_by_token(engine, annotation.client_token)
        if existing is not None:
            return existing, False

    def write() -> Annotation:
        with Session(engine) as session:
            session.add(annotation)
            session.commit()
            session.refresh(annotation)
            return annotation

    try:
        return _with_retry(write), True
    except IntegrityError:
        existing = _existing_by_token(engine, annotation.client_token or "")
        if existing is None:
            raise
        return existing, False


def effective_annotations(
    engine: Engine, kind: str, target_ids: Iterable[int] | None = None, target_type: str | None = None
) -> dict[int, dict[str, Annotation]]:
    """The latest annotation of `kind` per (target, author): later labels supersede earlier ones for computing."""
    with Session(engine) as session:
        query = select(Annotation).where(Annotation.kind == kind)
        if target_type is not None:
            query = query.where(Annotation.target_type == target_type)
        if target_ids is not None:
            query = query.where(col(Annotation.target_id).in_(list(target_ids)))
        rows = session.exec(query.order_by(Annotation.created_at, Annotation.id)).all()
    out: dict[int, dict[str, Annotation]] = defaultdict(dict)
    for row in rows:
        out[row.target_id][row.author] = row
    return dict(out)


# --------------------------------------------------------------------------- verification


def double_check_uids(instances: list[Instance], domains: dict[int, str], fraction: float) -> set[str]:
    """Instance uids that need two decisions: ceil(fraction * n) per (domain, mode) stratum, picked by a stable hash."""
    if fraction <= 0:
        return set()
    strata: dict[tuple[str, str], list[str]] = defaultdict(list)
    for inst in instances:
        strata[(domains.get(inst.domain_id, ""), inst.mode)].append(inst.uid)
    chosen: set[str] = set()
    for uids in strata.values():
        ordered = sorted(set(uids), key=lambda u: hashlib.sha256(u.encode()).hexdigest())
        chosen.update(ordered[: math.ceil(min(fraction, 1.0) * len(ordered))])
    return chosen


def _covers(principal: Principal, domain: str) -> bool:
    return allowed(principal.role, "review_all_domains") or domain in principal.domains


def overlap_setting() -> float:
    """Share of instances per domain x mode that get a second, independent verification (GAUNTLET_VERIFY_OVERLAP)."""
    raw = get_secret("GAUNTLET_VERIFY_OVERLAP")
    try:
        return min(max(float(raw), 0.0), 1.0) if raw else DEFAULT_OVERLAP
    except ValueError:
        return DEFAULT_OVERLAP


@dataclass(frozen=True)
class QueueState:
    """An expert's verification queue (instance ids, oldest first) and how much they have decided already."""

    instance_ids: list[int]
    decided: int

    @property
    def total(self) -> int:
        return self.decided + len(self.instance_ids)


def verification_queue(engine: Engine, principal: Principal, overlap: float = DEFAULT_OVERLAP) -> QueueState:
    """Unverified latest instances of the expert's domains that still need a decision from them, oldest first."""
    with Session(engine) as session:
        domains = {d.id: d.name for d in session.exec(select(Domain)).all()}
        latest = session.exec(select(Instance).where(Instance.is_latest == True)).all()  # noqa: E712
        decisions = session.exec(select(Annotation).where(Annotation.kind == "verification")).all()
    deciders: dict[int, set[str]] = defaultdict(set)
    for ann in decisions:
        deciders[ann.target_id].add(ann.author)
    doubles = double_check_uids(list(latest), domains, overlap)
    mine = [i for i in latest if _covers(principal, domains.get(i.domain_id, ""))]
    queue = [
        i
        for i in mine
        if i.status == "unverified"
        and principal.username not in deciders[i.id]
        and len(deciders[i.id]) < (2 if i.uid in doubles else 1)
    ]
    queue.sort(key=lambda i: (i.created_at, i.id))
    decided = len({t for t, who in deciders.items() if principal.username in who})
    return QueueState([i.id for i in queue], decided)


@dataclass(frozen=True)
class VerificationResult:
    annotation_id: int
    created: bool
    status: str
    new_instance_id: int | None = None


def _edited_spec(engine: Engine, bundle: Bundle, role_changes: dict[str, str], text_changes: dict[str, str], status: str) -> InstanceSpec:
    """The interchange form of the next version with the expert's edits; raises ValueError if it no longer validates."""
    with Session(engine) as session:
        data = instance_spec(session, bundle.instance).model_dump()
    for c in data["constraints"]:
        c["text"] = text_changes.get(c["id"], c["text"])
    for d in data["documents"]:
        d["role"] = role_changes.get(d["doc_id"], d["role"])
    data["status"] = status
    data["metadata"] = {**data["metadata"], "edited_from_version": bundle.instance.version}
    return InstanceSpec.model_validate(data)


def _add_next_version(session: Session, bundle: Bundle, spec: InstanceSpec, author: str) -> Instance:
    old = session.get(Instance, bundle.instance.id)
    if old is None or not old.is_latest:
        raise ValueError("instance: this version is no longer the latest; reload and decide again")
    old.is_latest = False
    session.add(old)
    session.flush()
    return add_instance(session, spec, old.domain_id, version=old.version + 1, author=author)


def record_verification(
    engine: Engine,
    principal: Principal | None,
    instance_id: int,
    *,
    consistency: str,
    context_valid: bool,
    decision: str,
    clashing_constraints: Iterable[str] = (),
    consistency_note: str = "",
    context_note: str = "",
    role_corrections: dict[str, str] | None = None,
    constraint_edits: dict[str, str] | None = None,
    client_token: str,
    overlap: float = DEFAULT_OVERLAP,
) -> VerificationResult:
    """Store an expert's verification decision; edits to document roles or constraint texts create version+1."""
    principal = authorize(engine, principal, "verify_instance")
    existing = _existing_by_token(engine, client_token)
    if existing is not None:
        return VerificationResult(existing.id or 0, False, existing.payload.get("resulting_status", ""))
    bundle = load_bundle(engine, instance_id)
    if not _covers(principal, bundle.domain):
        raise PermissionDenied_(f"domain: {bundle.domain!r} is not among your assigned domains")
    if consistency not in ("consistent", "inconsistent"):
        raise ValueError("consistency: must be 'consistent' or 'inconsistent'")
    if decision not in DECISIONS:
        raise ValueError(f"decision: must be one of {', '.join(DECISIONS)}")
    cids = {c.cid: c for c in bundle.constraints}
    docs = {d.doc_uid: d for d in bundle.documents}
    clashing = sorted(set(clashing_constraints))
    unknown = [c for c in clashing if c not in cids]
    if unknown:
        raise ValueError(f"clashing_constraints: unknown constraint ids {unknown}")
    role_changes = {k: v for k, v in (role_corrections or {}).items() if k in docs and docs[k].role != v}
    for doc_uid, role in (role_corrections or {}).items():
        if doc_uid not in docs:
            raise ValueError(f"role_corrections: unknown document {doc_uid!r}")
        if role not in DOCUMENT_ROLES:
            raise ValueError(f"role_corrections.{doc_uid}: role must be one of {', '.join(DOCUMENT_ROLES)}")
    text_changes = {}
    for cid, text in (constraint_edits or {}).items():
        if cid not in cids:
            raise ValueError(f"constraint_edits: unknown constraint {cid!r}")
        if not text.strip():
            raise ValueError(f"constraint_edits.{cid}: text must not be empty")
        if text.strip() != cids[cid].text.strip():
            text_changes[cid] = text.strip()
    # A rejected instance is not re-versioned: its corrections are kept in the label as the reason.
    edited = bool(role_changes or text_changes) and decision != "reject"
    new_spec = None
    if edited:
        new_spec = _edited_spec(
            engine, bundle, role_changes, text_changes, "accepted" if decision == "accept" else "unverified"
        )

    payload: dict[str, Any] = {
        "instance_uid": bundle.instance.uid,
        "instance_version": bundle.instance.version,
        "consistency": consistency,
        "clashing_constraints": clashing,
        "consistency_note": consistency_note.strip(),
        "context_valid": bool(context_valid),
        "context_note": context_note.strip(),
        "role_corrections": role_changes,
        "constraint_edits": text_changes,
        "decision": decision,
    }
    gv = guidelines_version()

    def write() -> VerificationResult:
        with Session(engine) as session:
            new_id = None
            if new_spec is not None:
                status = new_spec.status
                new = _add_next_version(session, bundle, new_spec, principal.username)
                old = session.get(Instance, bundle.instance.id)
                old.status = DECISION_STATUS[decision]
                session.add(old)
                new_id = new.id
            else:
                status = _status_after(session, bundle.instance, principal.username, decision, overlap)
                inst = session.get(Instance, bundle.instance.id)
                inst.status = status
                session.add(inst)
            ann = Annotation(
                kind="verification",
                target_type="instance",
                target_id=bundle.instance.id,
                author=principal.username,
                payload={**payload, "resulting_status": status, "new_instance_id": new_id},
                guidelines_version=gv,
                client_token=client_token,
            )
            session.add(ann)
            session.commit()
            return VerificationResult(ann.id or 0, True, status, new_id)

    try:
        return _with_retry(write)
    except IntegrityError:
        again = _existing_by_token(engine, client_token)
        if again is not None:
            return VerificationResult(again.id or 0, False, again.payload.get("resulting_status", ""))
        # The instance was edited by someone else meanwhile: keep the decision, without the edit.
        ann, _ = _append(
            engine,
            Annotation(
                kind="verification",
                target_type="instance",
                target_id=bundle.instance.id,
                author=principal.username,
                payload={**payload, "resulting_status": "unverified", "edit_conflict": True},
                guidelines_version=gv,
                client_token=client_token,
            ),
        )
        return VerificationResult(ann.id or 0, True, "unverified")


class PermissionDenied_(ValueError):
    """A write outside the expert's domains or assignments (a ValueError so forms can show it)."""


def _status_after(session: Session, inst: Instance, author: str, decision: str, overlap: float) -> str:
    """The instance status once this decision is counted: settled when enough deciders agree, else unverified."""
    rows = session.exec(
        select(Annotation).where(Annotation.kind == "verification", Annotation.target_id == inst.id).order_by(Annotation.id)
    ).all()
    latest = {a.author: a.payload.get("decision") for a in rows}
    latest[author] = decision
    domains = {d.id: d.name for d in session.exec(select(Domain)).all()}
    peers = session.exec(select(Instance).where(Instance.is_latest == True)).all()  # noqa: E712
    required = 2 if inst.uid in double_check_uids(list(peers), domains, overlap) else 1
    if len(latest) < required:
        return "unverified"
    values = set(latest.values())
    return DECISION_STATUS[values.pop()] if len(values) == 1 else "unverified"


@dataclass(frozen=True)
class VerificationDisagreement:
    """A latest, still unverified instance whose experts' latest verification decisions differ."""

    instance_id: int
    decisions: dict[str, dict[str, Any]]  # author -> verification payload, authors sorted by name


def verification_disagreements(engine: Engine) -> list[VerificationDisagreement]:
    """Latest instances still unverified although two or more experts decided differently and no admin settled them."""
    eff = effective_annotations(engine, "verification", target_type="instance")
    adjudicated = set(effective_annotations(engine, "adjudication", target_type="instance"))
    out = []
    with Session(engine) as session:
        for target, by_author in sorted(eff.items()):
            if target in adjudicated or len(by_author) < 2:
                continue
            inst = session.get(Instance, target)
            decisions = {a.payload.get("decision") for a in by_author.values()}
            if inst and inst.is_latest and inst.status == "unverified" and len(decisions) > 1:
                out.append(VerificationDisagreement(target, {a: by_author[a].payload for a in sorted(by_author)}))
    return out


def record_verification_adjudication(
    engine: Engine, principal: Principal | None, instance_id: int, decision: str, note: str, client_token: str
) -> VerificationResult:
    """Append an admin's final decision on a verification disagreement and set the instance status from it."""
    principal = authorize(engine, principal, "adjudicate")
    existing = _existing_by_token(engine, client_token)
    if existing is not None:
        return VerificationResult(existing.id or 0, False, existing.payload.get("resulting_status", ""))
    if decision not in DECISIONS:
        raise ValueError(f"decision: must be one of {', '.join(DECISIONS)}")
    pending = {d.instance_id: d for d in verification_disagreements(engine)}
    if instance_id not in pending:
        raise ValueError(f"instance_id: instance {instance_id} has no open verification disagreement; reload")
    status = DECISION_STATUS[decision]
    gv = guidelines_version()

    def write() -> VerificationResult:
        with Session(engine) as session:
            inst = session.get(Instance, instance_id)
            if inst is None or not inst.is_latest or inst.status != "unverified":
                raise ValueError(f"instance_id: instance {instance_id} was settled meanwhile; reload")
            inst.status = status
            session.add(inst)
            ann = Annotation(
                kind="adjudication",
                target_type="instance",
                target_id=instance_id,
                author=principal.username,
                payload={
                    "instance_uid": inst.uid,
                    "instance_version": inst.version,
                    "decision": decision,
                    "note": note.strip(),
                    "expert_decisions": {a: p.get("decision") for a, p in pending[instance_id].decisions.items()},
                    "resulting_status": status,
                },
                guidelines_version=gv,
                client_token=client_token,
            )
            session.add(ann)
            session.commit()
            return VerificationResult(ann.id or 0, True, status)

    try:
        return _with_retry(write)
    except IntegrityError:
        again = _existing_by_token(engine, client_token)
        if again is None:
            raise
        return VerificationResult(again.id or 0, False, again.payload.get("resulting_status", ""))


def verification_decisions(engine: Engine) -> dict[int, dict[str, dict[str, Any]]]:
    """Latest verification payload per instance version and author (for agreement statistics)."""
    return {
        iid: {a: ann.payload for a, ann in by_author.items()}
        for iid, by_author in effective_annotations(engine, "verification", target_type="instance").items()
    }


# --------------------------------------------------------------------------- gold labels


@dataclass(frozen=True)
class SampleReport:
    """What drawing a gold sample did: responses sampled per stratum and assignments created."""

    sampled: int
    assignments: int
    batch: str
    strata: dict[str, int] = field(default_factory=dict)


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
    rest = n - sum(alloc.values())
    for k in sorted(keys, key=lambda k: (-(quotas[k] - int(quotas[k])), str(k))):
        if rest <= 0:
            break
        if alloc[k] < sizes[k]:
            alloc[k] += 1
            rest -= 1
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
    """Every run, newest first, with its count of finished (done) responses."""
    with Session(engine) as session:
        runs = session.exec(select(Run).order_by(col(Run.id).desc())).all()
        done = dict(session.exec(select(Response.run_id, func.count()).where(Response.status == "done")
                                 .group_by(Response.run_id)).all())
    return [RunChoice(r.id, r.name, r.status, done.get(r.id, 0)) for r in runs]


def draw_gold_sample(
    engine: Engine,
    principal: Principal | None,
    run_id: int,
    n: int = DEFAULT_SAMPLE_SIZE,
    experts: list[str] | None = None,
    seed: int = 0,
) -> SampleReport:
    """Stratified sample (domain x mode x model) of a run's finished responses, each assigned to two experts."""
    principal = authorize(engine, principal, "draw_gold_sample")
    if n < 1:
        raise ValueError("n: must be at least 1")
    experts_by_name = active_experts(engine)
    with Session(engine) as session:
        rows = session.exec(
            select(Response, Instance, Domain, Model)
            .join(Instance, Instance.id == Response.instance_id)
            .join(Domain, Domain.id == Instance.domain_id)
            .join(Model, Model.id == Response.model_id)
            .where(Response.run_id == run_id, Response.status == "done")
        ).all()
        already = set(session.exec(select(Assignment.target_id).where(Assignment.kind == "gold_label")).all())
    pool = {name: set(doms) for name, doms in experts_by_name.items() if experts is None or name in experts}
    if len(pool) < 2:
        raise ValueError("experts: at least two active experts are needed (each response is labelled twice)")
    strata: dict[tuple[str, str, str], list[int]] = defaultdict(list)
    for resp, inst, dom, model in rows:
        if resp.id not in already:
            strata[(dom.name, inst.mode, model.name)].append(resp.id)
    if not strata:
        raise ValueError("run_id: no finished, not yet sampled responses in this run")
    alloc = _allocate({k: len(v) for k, v in strata.items()}, n)
    rng = random.Random(seed)
    load = {name: 0 for name in pool}
    batch = f"run{run_id}-{datetime.now().strftime('%Y%m%d%H%M%S')}"
    chosen: list[tuple[int, str]] = []
    for key in sorted(strata):
        ids = sorted(strata[key])
        chosen.extend((rid, key[0]) for rid in rng.sample(ids, alloc[key]))
    assignments = []
    for rid, domain in chosen:
        eligible = [u for u, doms in pool.items() if not doms or domain in doms]
        if len(eligible) < 2:
            eligible = list(pool)
        pair = sorted(eligible, key=lambda u: (load[u], u))[:2]
        for who in pair:
            load[who] += 1
            assignments.append(Assignment(kind="gold_label", target_id=rid, assignee=who, batch=batch))

    def write() -> None:
        with Session(engine) as session:
            session.add_all(assignments)
            session.commit()

    _with_retry(write)
    return SampleReport(len(chosen), len(assignments), batch, {"/".join(k): alloc[k] for k in sorted(alloc) if alloc[k]})


@dataclass(frozen=True)
class ResponseContext:
    """What a labeller sees: the response text, its model, and the instance bundle (never judge verdicts)."""

    response: Response
    model: str
    run_id: int
    bundle: Bundle


def load_response(engine: Engine, response_id: int) -> ResponseContext:
    with Session(engine) as session:
        resp = session.get(Response, response_id)
        if resp is None:
            raise ValueError(f"target_id: no response {response_id}")
        model = session.get(Model, resp.model_id)
    return ResponseContext(resp, model.name if model else "", resp.run_id, load_bundle(engine, resp.instance_id))


def gold_queue(engine: Engine, principal: Principal) -> QueueState:
    """Responses assigned to this expert that they have not labelled yet, in assignment order."""
    with Session(engine) as session:
        assigned = session.exec(
            select(Assignment.target_id)
            .where(Assignment.kind == "gold_label", Assignment.assignee == principal.username)
            .order_by(Assignment.id)
        ).all()
        done = set(
            session.exec(
                select(Annotation.target_id).where(Annotation.kind == "gold_label", Annotation.author == principal.username)
            ).all()
        )
    return QueueState([t for t in assigned if t not in done], len([t for t in assigned if t in done]))


def expected_fields(bundle: Bundle) -> tuple[list[str], bool, bool]:
    """(constraint ids, asks valid refusal, asks conflict recognition) for an instance."""
    return [c.cid for c in bundle.constraints], bundle.instance.mode == "gap", bundle.instance.mode == "conflict"


def _as_binary(value: Any, name: str) -> int:
    if isinstance(value, bool):
        return int(value)
    if value in (0, 1) and not isinstance(value, float):
        return int(value)
    raise ValueError(f"{name}: must be 0/1 or true/false, got {value!r}")


def validate_gold_payload(payload: dict[str, Any], bundle: Bundle) -> dict[str, Any]:
    """Normalise a gold label: every constraint answered yes/no, refusal for gap, conflict recognition for conflict."""
    cids, wants_refusal, wants_conflict = expected_fields(bundle)
    given = payload.get("constraints")
    if not isinstance(given, dict):
        raise ValueError("constraints: must be an object mapping constraint id to true/false")
    missing = [c for c in cids if c not in given]
    extra = [c for c in given if c not in cids]
    if missing:
        raise ValueError(f"constraints: missing answers for {missing}")
    if extra:
        raise ValueError(f"constraints: unknown constraint ids {extra}")
    out: dict[str, Any] = {"constraints": {c: bool(_as_binary(given[c], f"constraints.{c}")) for c in cids}}
    for name, wanted in (("valid_refusal", wants_refusal), ("conflict_recognized", wants_conflict)):
        value = payload.get(name)
        if wanted:
            if value is None:
                raise ValueError(f"{name}: required for a {bundle.instance.mode} instance")
            out[name] = _as_binary(value, name)
        elif value is not None:
            raise ValueError(f"{name}: only applies to {'gap' if name == 'valid_refusal' else 'conflict'} instances")
    note = payload.get("note", "")
    if not isinstance(note, str):
        raise ValueError("note: must be text")
    out["note"] = note.strip()
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
    clean = validate_gold_payload(payload, load_response(engine, response_id).bundle)
    ann, created = _append(
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


def label_items(payload: dict[str, Any]) -> dict[str, int]:
    """Flatten a gold label into comparable items: 'constraint:<cid>', 'valid_refusal', 'conflict_recognized'."""
    items = {f"constraint:{c}": int(v) for c, v in (payload.get("constraints") or {}).items()}
    for name in ("valid_refusal", "conflict_recognized"):
        if payload.get(name) is not None:
            items[name] = int(payload[name])
    return items


@dataclass(frozen=True)
class Disagreement:
    """A response whose two experts' latest labels differ on at least one item."""

    response_id: int
    labels: dict[str, dict[str, Any]]  # author -> payload
    differing: list[str]
    adjudicated: bool


def _response_ids_for_runs(engine: Engine, run_ids: Iterable[int] | None) -> set[int] | None:
    if run_ids is None:
        return None
    with Session(engine) as session:
        return set(session.exec(select(Response.id).where(col(Response.run_id).in_(list(run_ids)))).all())


def label_disagreements(engine: Engine, run_ids: Iterable[int] | None = None) -> list[Disagreement]:
    """Responses with at least two expert labels that differ on some item, adjudicated or not."""
    scope = _response_ids_for_runs(engine, run_ids)
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


def gold_labels(engine: Engine, run_ids: Iterable[int] | None = None) -> dict[int, dict[str, Any]]:
    """Gold label per response: the latest adjudication, else the experts' label when at least two agree fully."""
    scope = _response_ids_for_runs(engine, run_ids)
    out: dict[int, dict[str, Any]] = {}
    for rid, by_author in effective_annotations(engine, "gold_label", scope, "response").items():
        if len(by_author) >= 2:
            flats = [label_items(a.payload) for a in by_author.values()]
            if all(f == flats[0] for f in flats):
                out[rid] = next(iter(by_author.values())).payload
    for rid, by_author in effective_annotations(engine, "adjudication", scope, "response").items():
        out[rid] = max(by_author.values(), key=lambda a: (a.created_at, a.id or 0)).payload
    return out


def expert_labels(engine: Engine, run_ids: Iterable[int] | None = None) -> dict[int, dict[str, dict[str, Any]]]:
    """Latest expert label payloads per response and author (for agreement statistics; admins and analysts only)."""
    scope = _response_ids_for_runs(engine, run_ids)
    return {
        rid: {a: ann.payload for a, ann in by_author.items()}
        for rid, by_author in effective_annotations(engine, "gold_label", scope, "response").items()
    }


# --------------------------------------------------------------------------- export / import


@dataclass
class AnnotationImportReport:
    imported: int = 0
    skipped: int = 0
    errors: list[LineError] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.errors


def _fallback_token(row: dict[str, Any]) -> str:
    basis = json.dumps(
        [row.get(k) for k in ("kind", "target_type", "target_id", "author", "created_at", "payload")], sort_keys=True
    )
    return "import-" + hashlib.sha256(basis.encode()).hexdigest()[:32]


def export_annotations(engine: Engine, path: Path, kinds: Iterable[str] | None = None) -> int:
    """Write every annotation (optionally of some kinds) as one JSON object per line; returns the count."""
    with Session(engine) as session:
        query = select(Annotation).order_by(Annotation.id)
        if kinds:
            query = query.where(col(Annotation.kind).in_(list(kinds)))
        rows = session.exec(query).all()
        instances = {i.id: i for i in session.exec(select(Instance)).all()}
        responses = {r.id: r for r in session.exec(select(Response)).all()}
        models = {m.id: m.name for m in session.exec(select(Model)).all()}
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", encoding="utf-8") as fh:
        for a in rows:
            ref: dict[str, Any] = {}
            if a.target_type == "instance" and a.target_id in instances:
                ref = {"instance_uid": instances[a.target_id].uid, "instance_version": instances[a.target_id].version}
            elif a.target_type == "response" and a.target_id in responses:
                r = responses[a.target_id]
                inst = instances.get(r.instance_id)
                ref = {"run_id": r.run_id, "model": models.get(r.model_id, ""), "instance_uid": inst.uid if inst else ""}
            row = {
                "kind": a.kind,
                "target_type": a.target_type,
                "target_id": a.target_id,
                "target_ref": ref,
                "author": a.author,
                "payload": a.payload,
                "guidelines_version": a.guidelines_version,
                "client_token": a.client_token,
                "created_at": a.created_at.isoformat() if a.created_at else None,
            }
            fh.write(json.dumps(row, ensure_ascii=False, sort_keys=True) + "\n")
    return len(rows)


def export_labels(engine: Engine, principal: Principal | None, folder: Path = REPO_ROOT / "annotations") -> tuple[Path, int]:
    """An admin exports every label to a new timestamped JSONL file in `folder` (re-checked: export_labels)."""
    authorize(engine, principal, "export_labels")
    out = folder / f"labels-{datetime.now().strftime('%Y%m%d-%H%M%S')}.jsonl"
    return out, export_annotations(engine, out)


def _parse_line(number: int, text: str, session: Session, errors: list[LineError]) -> Annotation | None:
    try:
        row = json.loads(text)
    except json.JSONDecodeError as exc:
        errors.append(LineError(number, "(line)", f"not valid JSON: {exc.msg}"))
        return None
    if not isinstance(row, dict):
        errors.append(LineError(number, "(line)", "must be a JSON object"))
        return None
    before = len(errors)
    kind = row.get("kind")
    if kind not in KINDS:
        errors.append(LineError(number, "kind", f"must be one of {', '.join(KINDS)}"))
    target_type = row.get("target_type")
    if target_type not in ("instance", "response"):
        errors.append(LineError(number, "target_type", "must be 'instance' or 'response'"))
    if not isinstance(row.get("author"), str) or not row["author"].strip():
        errors.append(LineError(number, "author", "must be a non-empty string"))
    if not isinstance(row.get("payload"), dict):
        errors.append(LineError(number, "payload", "must be an object"))
    target_id = row.get("target_id")
    ref = row.get("target_ref") or {}
    if target_type == "instance" and ref.get("instance_uid"):
        inst = session.exec(
            select(Instance).where(Instance.uid == ref["instance_uid"], Instance.version == ref.get("instance_version", 1))
        ).first()
        if inst is None:
            errors.append(LineError(number, "target_ref", f"no instance {ref['instance_uid']} v{ref.get('instance_version', 1)}"))
        else:
            target_id = inst.id
    elif not isinstance(target_id, int) or isinstance(target_id, bool):
        errors.append(LineError(number, "target_id", "must be an integer"))
    elif target_type == "response" and session.get(Response, target_id) is None:
        errors.append(LineError(number, "target_id", f"no response {target_id}"))
    elif target_type == "instance" and session.get(Instance, target_id) is None:
        errors.append(LineError(number, "target_id", f"no instance {target_id}"))
    created_at = None
    if row.get("created_at"):
        try:
            created_at = datetime.fromisoformat(row["created_at"])
        except (TypeError, ValueError):
            errors.append(LineError(number, "created_at", "must be an ISO 8601 timestamp"))
    if len(errors) > before:
        return None
    extra = {"created_at": created_at} if created_at else {}
    return Annotation(
        kind=kind,
        target_type=target_type,
        target_id=target_id,
        author=row["author"].strip(),
        payload=row["payload"],
        guidelines_version=str(row.get("guidelines_version") or ""),
        client_token=row.get("client_token") or _fallback_token(row),
        **extra,
    )


def import_annotations(engine: Engine, path: Path, principal: Principal | None = None, *, cli: bool = False) -> AnnotationImportReport:
    """Import a JSONL file of labels atomically: any bad line imports nothing; already-stored tokens are skipped.

    From the app an admin principal is required; the command line (`cli=True`) runs with the operator's rights.
    """
    if not cli:
        authorize(engine, principal, "import_labels")
    report = AnnotationImportReport()
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError) as exc:
        report.errors.append(LineError(0, "(file)", str(exc)))
        return report
    parsed: list[Annotation] = []
    with Session(engine) as session:
        seen: set[str] = set()
        for number, text in enumerate(lines, start=1):
            if not text.strip():
                continue
            ann = _parse_line(number, text, session, report.errors)
            if ann is None:
                continue
            if ann.client_token in seen:
                report.errors.append(LineError(number, "client_token", "appears twice in this file"))
                continue
            seen.add(ann.client_token or "")
            parsed.append(ann)
        if report.errors:
            return report
        stored = set(
            session.exec(select(Annotation.client_token).where(col(Annotation.client_token).in_(list(seen)))).all()
        )
    fresh = [a for a in parsed if a.client_token not in stored]
    report.skipped = len(parsed) - len(fresh)

    def write() -> None:
        with Session(engine) as session:
            session.add_all(fresh)
            session.commit()

    _with_retry(write)
    report.imported = len(fresh)
    return report
