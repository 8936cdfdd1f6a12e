"""Label import: a JSONL file of labels checked line by line (shape, target, the write paths' rules of gold labels
and verification decisions) and appended atomically, every problem named by line and field.

Above annotations.py, gold.py and verification.py: it applies their rules, none of them imports it.
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from pydantic import ValidationError
from sqlalchemy.engine import Engine
from sqlalchemy.exc import IntegrityError
from sqlmodel import Session, col, select

from core.ingest.io import LineError
from core.review.annotations import load_bundle, with_retry
from core.review.auth import Principal, authorize
from core.review.gold import validate_gold_payload
from core.review.verification import check_verification
from core.store.label_models import PAYLOADS, LabelLine, payload_problems, printable, problems
from core.store.models import Annotation, Instance, Model, Response


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
            return response.id or 0, validate_gold_payload(payload, load_bundle(engine, response.instance_id),
                                                           response.text)
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
