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
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from sqlalchemy.engine import Engine
from sqlalchemy.exc import IntegrityError, OperationalError
from sqlmodel import Session, col, select

from core.review.auth import Principal, authorize
from core.store.benchmark import InstanceDetail, instance_detail
from core.config import REPO_ROOT
from core.store.io import LineError
from core.store.models import Annotation, Instance, Model, Response


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
            session.commit()
            session.refresh(annotation)
            return annotation

    try:
        return with_retry(write), True
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

    with_retry(write)
    report.imported = len(fresh)
    return report
