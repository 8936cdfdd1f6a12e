"""Annotations: the append-only label store (client tokens, retries), guidelines, and JSONL export/import.

Every write re-checks the session and the role (`core.review.auth.authorize`, over the permission table); every
write carries a client token so that a double submit is stored once; no annotation row is ever updated or deleted.
"""

from __future__ import annotations

import hashlib
import json
import re
import time
import uuid
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from sqlalchemy.engine import Connection, Engine
from sqlalchemy.exc import IntegrityError, OperationalError
from sqlmodel import Session, col, select

from core.config import REPO_ROOT
from core.review.auth import Principal, authorize
from core.store.benchmark import InstanceDetail, instance_detail
from core.store.label_models import DECISIONS, KINDS, PAYLOADS, LabelLine, payload_problems, printable, problems  # noqa: F401
from core.store.labels import live_annotations, retracted_tokens, well_formed
from core.store.models import Annotation, Instance, Model, Response

GUIDELINES_PATH = REPO_ROOT / "annotations" / "guidelines.md"
DEFAULT_OVERLAP = 0.2  # share of instances (per domain x mode) that need two independent verification decisions
DEFAULT_SAMPLE_SIZE = 150
DECISION_STATUS = {"accept": "accepted", "reject": "rejected", "needs_edit": "needs_edit"}


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


def load_bundle(engine: Engine | Connection, instance_id: int) -> InstanceDetail:
    detail = instance_detail(engine, instance_id)
    if detail is None:
        raise ValueError(f"target_id: no instance {instance_id}")
    return detail


def with_retry(fn, attempts: int = 5):
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


def append_annotation(engine: Engine, annotation: Annotation) -> tuple[Annotation, bool]:
    """Insert one annotation; returns (row, created). A repeated client token returns the stored row instead."""
    if annotation.client_token:
        existing = _existing_by_token(engine, annotation.client_token)
        if existing is not None:
            return existing, False

    def write() -> Annotation:
        with Session(engine) as session:
            session.add(annotation)
            session.flush()  # the write lock (SQLite), the response's row lock by the foreign key (PostgreSQL) first
            if annotation.target_type == "response" and session.get(Response, annotation.target_id) is None:
                session.rollback()
                raise _response_gone(annotation.target_id)
            session.commit()
            session.refresh(annotation)
            return annotation

    try:
        return with_retry(write), True
    except IntegrityError:
        existing = _existing_by_token(engine, annotation.client_token or "")
        if existing is not None:
            return existing, False
        if annotation.target_type == "response" and _response_missing(engine, annotation.target_id):
            raise _response_gone(annotation.target_id) from None
        raise


class TargetGone(ValueError):
    """The labelled response was deleted (with its run) before the label was stored: nothing was stored."""


def _response_gone(response_id: int) -> TargetGone:
    return TargetGone(f"response {response_id} no longer exists (its run was deleted meanwhile); the label was not "
                      "stored")


def _response_missing(engine: Engine, response_id: int) -> bool:
    with Session(engine) as session:
        return session.get(Response, response_id) is None


@dataclass(frozen=True)
class HistoryEntry:
    """One stored label in a target's history: who, when, what, and whether its author undid it."""

    id: int
    kind: str
    target_id: int
    author: str
    created_at: datetime
    payload: dict[str, Any]
    undone: bool


def label_history(engine: Engine, target_type: str, target_ids: Iterable[int], kinds: Iterable[str],
                  author: str | None = None) -> list[HistoryEntry]:
    """Every well-formed label of `kinds` on the targets (optionally by one author), oldest first, undone ones marked."""
    with Session(engine) as session:
        query = select(Annotation).where(Annotation.target_type == target_type, col(Annotation.kind).in_(list(kinds)),
                                         col(Annotation.target_id).in_(list(target_ids)))
        if author is not None:
            query = query.where(Annotation.author == author)
        rows = session.exec(query.order_by(col(Annotation.created_at), col(Annotation.id))).all()
        undone = retracted_tokens(session)
    return [HistoryEntry(r.id or 0, r.kind, r.target_id, r.author, r.created_at, r.payload, r.client_token in undone)
            for r in rows if well_formed(r)]


def last_own_label(engine: Engine, kind: str, author: str) -> Annotation | None:
    """The author's most recent label of `kind` that they have not undone."""
    rows = live_annotations(engine, kind, author=author)
    return max(rows, key=lambda a: (a.created_at, a.id or 0)) if rows else None


UNDO_NOUNS = {"verification": "verification decision", "gold_label": "label"}


@dataclass(frozen=True)
class Undone:
    """What an undo took back: the label, its target and (for verifications) the status the target has now."""

    annotation_id: int
    target_id: int
    what: str
    status: str = ""


def start_undo(engine: Engine, principal: Principal | None, action: str, kind: str,
               client_token: str) -> tuple[Principal, Annotation | Undone]:
    """Check who undoes (re-checked: `action`) and find their latest label of `kind`; an Undone instead when this
    client token already undid something (a double click), ValueError when there is nothing to undo."""
    principal = authorize(engine, principal, action)
    existing = _existing_by_token(engine, client_token)
    if existing is not None:
        return principal, Undone(existing.id or 0, existing.target_id, "already undone")
    last = last_own_label(engine, kind, principal.username)
    if last is None:
        raise ValueError(f"undo: you have no {UNDO_NOUNS.get(kind, kind)} to undo")
    return principal, last


def retraction(label: Annotation, author: str, client_token: str, note: str = "") -> Annotation:
    """The append-only undo of `label` by its author."""
    return Annotation(kind="retraction", target_type=label.target_type, target_id=label.target_id, author=author,
                      payload={"retracts": label.client_token, "retracted_kind": label.kind, "note": note},
                      guidelines_version=guidelines_version(), client_token=client_token)


@dataclass(frozen=True)
class MalformedAnnotation:
    """A stored label that every reader skips: its id, kind, author and what is wrong with it."""

    id: int
    kind: str
    author: str
    problem: str

    def __str__(self) -> str:
        return f"#{self.id} ({printable(self.kind)} by {printable(self.author)}): {self.problem}"


def malformed_annotations(engine: Engine) -> list[MalformedAnnotation]:
    """Stored labels whose payload does not have the shape of their kind (skipped by every reader), oldest first."""
    with Session(engine) as session:
        rows = session.exec(select(Annotation).order_by(col(Annotation.id))).all()
    out = []
    for row in rows:
        found = payload_problems(row.kind, row.target_type, row.payload)
        if found:
            out.append(MalformedAnnotation(row.id or 0, row.kind, row.author, "; ".join(f"{f}: {m}" for f, m in found)))
    return out


# --------------------------------------------------------------------------- export / import


def export_annotations(engine: Engine, path: Path, kinds: Iterable[str] | None = None) -> int:
    """Write every annotation (optionally of some kinds) as one JSON object per line; returns the count."""
    with Session(engine) as session:
        query = select(Annotation).order_by(col(Annotation.id))
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
            fh.write(json.dumps(row, ensure_ascii=True, sort_keys=True) + "\n")  # one line whatever the text
    return len(rows)


def export_labels(engine: Engine, principal: Principal | None, folder: Path = REPO_ROOT / "annotations") -> tuple[Path, int]:
    """An admin exports every label to a new timestamped JSONL file in `folder` (re-checked: export_labels)."""
    authorize(engine, principal, "export_labels")
    out = folder / f"labels-{datetime.now().strftime('%Y%m%d-%H%M%S')}.jsonl"
    return out, export_annotations(engine, out)
