"""Benchmark verification: experts' queues, decisions (new instance versions on edits), disagreements and their adjudication.

Every write re-checks the session and the role (`core.review.auth.authorize`, over the permission table); every
write carries a client token so that a double submit is stored once; no annotation row is ever updated or deleted.
"""

from __future__ import annotations

import hashlib
import math
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, NamedTuple, Protocol

from sqlalchemy import func
from sqlalchemy import select as sa_select
from sqlalchemy.engine import Engine
from sqlalchemy.exc import IntegrityError
from sqlmodel import Session, col, select

from core.config import get_secret
from core.ingest.io import add_instance, instance_spec
from core.permissions import allowed
from core.review.annotations import (
    DECISION_STATUS,
    DECISIONS,
    DEFAULT_OVERLAP,
    Bundle,
    HistoryEntry,
    Undone,
    _existing_by_token,
    append_annotation,
    guidelines_version,
    label_history,
    load_bundle,
    retraction,
    start_undo,
    with_retry,
)
from core.review.auth import Principal, authorize
from core.store.db import saved_id
from core.store.generated import generated_mark, mark_cell
from core.store.labels import effective_annotations, live_annotations
from core.store.models import Annotation, Constraint, Domain, Instance
from core.store.schema import DOCUMENT_ROLES, InstanceSpec


class Stratified(Protocol):
    """What the double-check draw reads of an instance: its uid and its stratum (domain, mode)."""

    @property
    def uid(self) -> str: ...
    @property
    def domain_id(self) -> int | None: ...
    @property
    def mode(self) -> str | None: ...


class _Latest(NamedTuple):
    """The columns of a latest instance version the verification queue reads (not the whole row)."""

    id: int
    uid: str
    domain_id: int | None
    mode: str | None
    status: str
    created_at: datetime


def double_check_uids(instances: Sequence[Stratified], domains: dict[int | None, str], fraction: float) -> set[str]:
    """Instance uids that need two decisions: ceil(fraction * n) per (domain, mode) stratum, picked by a stable hash."""
    if fraction <= 0:
        return set()
    strata: dict[tuple[str, str | None], list[str]] = defaultdict(list)
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
        latest = [_Latest(*row) for row in session.execute(
            sa_select(col(Instance.id), col(Instance.uid), col(Instance.domain_id), col(Instance.mode),
                      col(Instance.status), col(Instance.created_at)).where(col(Instance.is_latest) == True)  # noqa: E712
        ).all()]
    decisions = live_annotations(engine, "verification")
    deciders: dict[int, set[str]] = defaultdict(set)
    for ann in decisions:
        deciders[ann.target_id].add(ann.author)
    doubles = double_check_uids(latest, domains, overlap)
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


def check_verification(
    bundle: Bundle,
    consistency: str,
    decision: str,
    clashing_constraints: Iterable[str],
    role_corrections: dict[str, str],
    constraint_edits: dict[str, str],
) -> tuple[list[str], dict[str, str], dict[str, str]]:
    """The verification rules for an instance version: raise ValueError naming the field, else return the sorted
    clashing constraint ids, the role corrections that change a role and the constraint edits that change a text."""
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
    role_changes = {k: v for k, v in role_corrections.items() if k in docs and docs[k].role != v}
    for doc_uid, role in role_corrections.items():
        if doc_uid not in docs:
            raise ValueError(f"role_corrections: unknown document {doc_uid!r}")
        if role not in DOCUMENT_ROLES:
            raise ValueError(f"role_corrections.{doc_uid}: role must be one of {', '.join(DOCUMENT_ROLES)}")
    text_changes = {}
    for cid, text in constraint_edits.items():
        if cid not in cids:
            raise ValueError(f"constraint_edits: unknown constraint {cid!r}")
        if not text.strip():
            raise ValueError(f"constraint_edits.{cid}: text must not be empty")
        if text.strip() != cids[cid].text.strip():
            text_changes[cid] = text.strip()
    return clashing, role_changes, text_changes


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
    if _adjudicated(engine, instance_id):
        raise ValueError("instance: an admin settled this instance's verification; ask an admin to change it")
    clashing, role_changes, text_changes = check_verification(
        bundle, consistency, decision, clashing_constraints, role_corrections or {}, constraint_edits or {})
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
                status: str = new_spec.status
                new = _add_next_version(session, bundle, new_spec, principal.username)
                old = session.get_one(Instance, bundle.instance.id)
                old.status = DECISION_STATUS[decision]
                session.add(old)
                new_id = new.id
            else:
                status = _status_after(session, bundle.instance, principal.username, decision, overlap)
                inst = session.get_one(Instance, bundle.instance.id)
                inst.status = status
                session.add(inst)
            ann = Annotation(
                kind="verification",
                target_type="instance",
                target_id=saved_id(bundle.instance),
                author=principal.username,
                payload={**payload, "resulting_status": status, "new_instance_id": new_id},
                guidelines_version=gv,
                client_token=client_token,
            )
            session.add(ann)
            session.commit()
            return VerificationResult(ann.id or 0, True, status, new_id)

    try:
        return with_retry(write)
    except IntegrityError:
        again = _existing_by_token(engine, client_token)
        if again is not None:
            return VerificationResult(again.id or 0, False, again.payload.get("resulting_status", ""))
        # The instance was edited by someone else meanwhile: keep the decision, without the edit.
        ann, _ = append_annotation(
            engine,
            Annotation(
                kind="verification",
                target_type="instance",
                target_id=saved_id(bundle.instance),
                author=principal.username,
                payload={**payload, "resulting_status": "unverified", "edit_conflict": True},
                guidelines_version=gv,
                client_token=client_token,
            ),
        )
        return VerificationResult(ann.id or 0, True, "unverified")


class PermissionDenied_(ValueError):
    """A write outside the expert's domains or assignments (a ValueError so forms can show it)."""


def _adjudicated(engine: Engine, instance_id: int) -> bool:
    return bool(effective_annotations(engine, "adjudication", [instance_id], "instance"))


def _status_after(session: Session, inst: Instance, author: str, decision: str | None, overlap: float) -> str:
    """The instance status once this decision is counted (None: once the author's last one is undone): settled when
    enough deciders agree, else unverified."""
    rows = live_annotations(session.get_bind(), "verification", [saved_id(inst)], "instance")
    latest: dict[str, Any] = {a.author: a.payload.get("decision") for a in rows}
    if decision is None:
        latest.pop(author, None)
    else:
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
        return with_retry(write)
    except IntegrityError:
        again = _existing_by_token(engine, client_token)
        if again is None:
            raise
        return VerificationResult(again.id or 0, False, again.payload.get("resulting_status", ""))


# --------------------------------------------------------------------------- gold labels




# --------------------------------------------------------------------------- undo, revisit, follow-up, history


def undo_last_verification(engine: Engine, principal: Principal | None, client_token: str, note: str = "") -> Undone:
    """Take back the expert's most recent verification decision (append-only: a retraction row); the instance's status
    is recomputed from the decisions that remain. A decision that saved a new version, or one an admin already
    settled, cannot be undone (decide again on the latest version instead)."""
    principal, last = start_undo(engine, principal, "verify_instance", "verification", client_token)
    if isinstance(last, Undone):
        return last
    payload = last.payload
    what = f"{payload.get('instance_uid')} v{payload.get('instance_version')}: {str(payload.get('decision')).replace('_', ' ')}"
    if payload.get("new_instance_id"):
        raise ValueError(f"undo: your decision on {what} saved a new version; decide again on that version instead")
    if _adjudicated(engine, last.target_id):
        raise ValueError(f"undo: an admin already settled {payload.get('instance_uid')}; ask an admin")

    def write() -> Undone:
        with Session(engine) as session:
            inst = session.get_one(Instance, last.target_id)
            status = inst.status
            if inst.is_latest:
                status = _status_after(session, inst, principal.username, None, overlap_setting())
                inst.status = status
                session.add(inst)
            row = retraction(last, principal.username, client_token, note)
            session.add(row)
            session.commit()
            return Undone(row.id or 0, last.target_id, what, status)

    return with_retry(write)


def needs_edit_queue(engine: Engine, principal: Principal) -> list[int]:
    """Latest instances of the expert's domains marked 'needs edit', oldest first: the follow-up queue."""
    with Session(engine) as session:
        domains = {d.id: d.name for d in session.exec(select(Domain)).all()}
        rows = session.exec(select(Instance).where(Instance.is_latest == True, Instance.status == "needs_edit")  # noqa: E712
                            .order_by(col(Instance.created_at), col(Instance.id))).all()
    return [saved_id(i) for i in rows if _covers(principal, domains.get(i.domain_id, ""))]


@dataclass(frozen=True)
class MyDecision:
    """An instance the expert decided (their latest decision that stands), for revisiting."""

    instance_id: int
    uid: str
    version: int
    decision: str
    at: Any
    latest_id: int | None  # the latest version's id (None when it is this one)
    generated: str = ""  # the LLM mark (core.store.generated), '' for rule- or human-made items


def my_verifications(engine: Engine, principal: Principal) -> list[MyDecision]:
    """The expert's standing verification decisions, newest first, with the id of a newer version when one exists."""
    mine = {a.target_id: a for a in live_annotations(engine, "verification", author=principal.username)}
    with Session(engine) as session:
        versions = {i.id: i for i in session.exec(select(Instance).where(col(Instance.id).in_(list(mine)))).all()}
        uids = {i.uid for i in versions.values()}
        latest = {i.uid: i.id for i in session.exec(select(Instance).where(col(Instance.uid).in_(list(uids)),
                                                                          Instance.is_latest == True)).all()}  # noqa: E712
        constraints = dict(session.exec(select(Constraint.instance_id, func.count()).where(
            col(Constraint.instance_id).in_(list(versions))).group_by(col(Constraint.instance_id))).all())
    out = [MyDecision(t, versions[t].uid, versions[t].version, a.payload.get("decision", ""), a.created_at,
                      None if latest.get(versions[t].uid) == t else latest.get(versions[t].uid),
                      mark_cell(generated_mark(versions[t].meta, constraints.get(t, 0))))
           for t, a in mine.items() if t in versions]
    return sorted(out, key=lambda d: d.at, reverse=True)


def my_decision(engine: Engine, principal: Principal, instance_id: int) -> dict[str, Any] | None:
    """The expert's standing decision payload on one instance version, if any."""
    rows = live_annotations(engine, "verification", [instance_id], "instance", author=principal.username)
    return rows[-1].payload if rows else None


def verification_history(engine: Engine, instance_id: int) -> list[tuple[int, HistoryEntry]]:
    """(version, entry) for every verification decision and admin decision on any version of the instance, oldest
    first; undone decisions are marked."""
    with Session(engine) as session:
        inst = session.get(Instance, instance_id)
        if inst is None:
            return []
        versions = {saved_id(i): i.version for i in session.exec(select(Instance).where(Instance.uid == inst.uid)).all()}
    entries = label_history(engine, "instance", versions, ("verification", "adjudication"))
    return [(versions[e.target_id], e) for e in entries]


def live_decisions(engine: Engine, instance_id: int) -> dict[str, dict[str, Any]]:
    """The standing verification decision of each expert on one instance version (undone ones left out)."""
    return {a.author: a.payload for a in live_annotations(engine, "verification", [instance_id], "instance")}
