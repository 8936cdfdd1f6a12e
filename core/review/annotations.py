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
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from pydantic import ValidationError
from sqlalchemy.engine import Connection, Engine
from sqlalchemy.exc import IntegrityError, OperationalError
from sqlmodel import Session, col, select

from core.config import REPO_ROOT
from core.ingest.io import LineError
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



@dataclass
class AnnotationImportReport:
    imported: int = 0
    skipped: int = 0
    errors: list[LineError] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.errors


class _LineProblem(ValueError):
    """The problems of one label line, (field path, printable message) each, found at one stage of the checks."""

    def __init__(self, field_path: str, message: str, *more: tuple[str, str]) -> None:
        super().__init__(message)
        self.found = [(field_path, message), *more]


def _from_rule(error: ValueError, prefix: str) -> _LineProblem:
    """A write-path rule's `name: message` ValueError as a problem at `prefix.name`."""
    name, sep, message = str(error).partition(": ")
    if sep and re.fullmatch(r"[\w.-]+", name):
        return _LineProblem(f"{prefix}.{name}", printable(message))
    return _LineProblem(prefix, printable(str(error)))


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON value")


def _json_object(text: str) -> dict[str, Any]:
    try:
        row = json.loads(text, parse_constant=_no_constant)
    except RecursionError:
        raise _LineProblem("(line)", "not valid JSON: nested too deeply") from None
    except ValueError as exc:  # JSONDecodeError and the constants NaN/Infinity
        raise _LineProblem("(line)", f"not valid JSON: {printable(getattr(exc, 'msg', str(exc)))}") from None
    if not isinstance(row, dict):
        raise _LineProblem("(line)", "must be a JSON object")
    return row


def _created_at(text: str | None) -> datetime | None:
    if not text:
        return None
    try:
        when = datetime.fromisoformat(text)
    except ValueError:
        raise _LineProblem("created_at", "must be an ISO 8601 timestamp") from None
    return (when if when.tzinfo else when.replace(tzinfo=UTC)).astimezone(UTC)  # naive times are UTC


def _instance_target(session: Session, line: LabelLine) -> Instance:
    ref = line.target_ref
    if ref.instance_uid:
        found = session.exec(
            select(Instance).where(Instance.uid == ref.instance_uid, Instance.version == ref.instance_version)).first()
        if found is None:
            raise _LineProblem("target_ref", f"no instance {printable(ref.instance_uid)} v{ref.instance_version}")
        return found
    if line.target_id is None:
        raise _LineProblem("target_id", "required (or target_ref.instance_uid)")
    found = session.get(Instance, line.target_id)
    if found is None:
        raise _LineProblem("target_id", f"no instance {line.target_id}")
    return found


def _response_target(session: Session, line: LabelLine) -> Response:
    if line.target_id is None:
        raise _LineProblem("target_id", "required for a response label")
    found = session.get(Response, line.target_id)
    if found is None:
        raise _LineProblem("target_id", f"no response {line.target_id}")
    ref = line.target_ref
    model = session.get(Model, found.model_id)
    instance = session.get(Instance, found.instance_id)
    actual: dict[str, Any] = {"run_id": found.run_id, "model": model.name if model else "", "instance_uid": instance.uid if instance else ""}
    claimed = {"run_id": ref.run_id, "model": ref.model, "instance_uid": ref.instance_uid}
    if any(value and value != actual[key] for key, value in claimed.items()):
        raise _LineProblem("target_ref", "names a different response than target_id "
                           f"{found.id} (run {actual['run_id']}, model {printable(actual['model'])}, "
                           f"instance {printable(actual['instance_uid'])})")
    return found


def _same_instance(payload: dict[str, Any], instance: Instance) -> None:
    if (payload["instance_uid"], payload["instance_version"]) != (instance.uid, instance.version):
        raise _LineProblem("payload.instance_uid", f"the label names {printable(payload['instance_uid'])} "
                           f"v{payload['instance_version']} but its target is {printable(instance.uid)} v{instance.version}")


def _check_shape(line: LabelLine) -> None:
    shape = payload_problems(line.kind, line.target_type, line.payload)
    if shape:
        raise _LineProblem(*shape[0], *shape[1:])


def _checked_payload(session: Session, line: LabelLine) -> tuple[int, dict[str, Any]]:
    """The target's database id and the payload to store, after the write paths' rules for that target."""
    from core.review.gold import validate_gold_payload  # gold and verification import this module
    from core.review.verification import check_verification

    if (line.kind, line.target_type) not in PAYLOADS:
        raise _LineProblem("target_type", f"a {line.kind} label cannot target a {line.target_type}")
    engine, payload = session.get_bind(), line.payload
    if line.kind == "retraction":
        target = _response_target(session, line) if line.target_type == "response" else _instance_target(session, line)
        _check_shape(line)
        return target.id or 0, payload
    if line.target_type == "response":
        response = _response_target(session, line)
        _check_shape(line)
        try:
            return response.id or 0, validate_gold_payload(payload, load_bundle(engine, response.instance_id))
        except ValueError as exc:
            raise _from_rule(exc, "payload") from None
    instance = _instance_target(session, line)
    _check_shape(line)
    _same_instance(payload, instance)
    if line.kind == "verification":
        try:
            check_verification(load_bundle(engine, instance.id or 0), payload["consistency"], payload["decision"],
                               payload.get("clashing_constraints", []), payload.get("role_corrections", {}),
                               payload.get("constraint_edits", {}))
        except ValueError as exc:
            raise _from_rule(exc, "payload") from None
    return instance.id or 0, payload


def _fallback_token(row: dict[str, Any]) -> str:
    basis = json.dumps(
        [row.get(k) for k in ("kind", "target_type", "target_id", "author", "created_at", "payload")], sort_keys=True
    )
    return "import-" + hashlib.sha256(basis.encode()).hexdigest()[:32]


def _parse_line(session: Session, text: str) -> Annotation:
    """One label line as an Annotation to store; raises _LineProblem with the problems of the first failing stage:
    JSON, the line's fields, created_at, the target, the payload's shape (by kind), the write paths' rules."""
    row = _json_object(text)
    try:
        line = LabelLine.model_validate(row)
    except ValidationError as exc:
        raise _LineProblem(*problems(exc)[0], *problems(exc)[1:]) from None
    created_at = _created_at(line.created_at)
    target_id, payload = _checked_payload(session, line)
    extra: dict[str, Any] = {"created_at": created_at} if created_at else {}
    return Annotation(kind=line.kind, target_type=line.target_type, target_id=target_id, author=line.author,
                      payload=payload, guidelines_version=line.guidelines_version,
                      client_token=line.client_token or _fallback_token(row), **extra)


def _read_lines(path: Path) -> list[str]:
    """The file's lines, split on \\n only (JSON text may hold U+2028, U+0085 and other separators raw)."""
    text = path.read_text(encoding="utf-8-sig")
    return [line.removesuffix("\r") for line in text.split("\n")]


def import_annotations(engine: Engine, path: Path, principal: Principal | None = None, *, cli: bool = False) -> AnnotationImportReport:
    """Import a JSONL file of labels atomically: any bad line imports nothing; already-stored tokens are skipped.

    Each line is checked against the typed model of its kind (core/store/label_models.py) and the write paths'
    rules for its target; every problem is reported as `line N: field.path: message`, never raised.
    From the app an admin principal is required; the command line (`cli=True`) runs with the operator's rights.
    """
    if not cli:
        authorize(engine, principal, "import_labels")
    report = AnnotationImportReport()
    try:
        lines = _read_lines(path)
    except (OSError, UnicodeDecodeError) as exc:
        report.errors.append(LineError(0, "(file)", printable(str(exc))))
        return report
    parsed: list[Annotation] = []
    first_line: dict[str, int] = {}
    with Session(engine) as session:
        for number, text in enumerate(lines, start=1):
            if not text.strip():
                continue
            try:
                ann = _parse_line(session, text)
            except _LineProblem as problem:
                report.errors.extend(LineError(number, where, message) for where, message in problem.found)
                continue
            token = ann.client_token or ""
            if token in first_line:
                report.errors.append(LineError(number, "client_token", f"already used on line {first_line[token]}"))
                continue
            first_line[token] = number
            parsed.append(ann)
        if report.errors:
            return report
        stored = set(session.exec(
            select(Annotation.client_token).where(col(Annotation.client_token).in_(list(first_line)))).all())
    fresh = [a for a in parsed if a.client_token not in stored]
    report.skipped = len(parsed) - len(fresh)

    def write() -> None:
        with Session(engine) as session:
            session.add_all(fresh)
            session.commit()

    try:
        with_retry(write)
    except IntegrityError:
        report.errors.append(LineError(0, "(file)", "another import stored some of these labels meanwhile; "
                                                      "nothing was imported, run it again"))
        return report
    report.imported = len(fresh)
    return report
