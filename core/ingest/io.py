"""Benchmark IO: validate, import (atomic), export and composition tables for the JSONL interchange format."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from pydantic import ValidationError
from sqlalchemy.engine import Engine
from sqlalchemy.exc import SQLAlchemyError
from sqlmodel import Session, col, select

from core.language import detect_language
from core.store.db import saved_id
from core.store.generated import EXPORT_KEY, generated_mark
from core.store.jsonl import parse_json, shown_field
from core.store.models import Constraint, Document, Domain, Instance
from core.store.schema import (
    ConstraintSpec,
    DocumentSpec,
    DomainSpec,
    InstanceSpec,
    storable_problems,
)

ON_EXISTING = ("reject", "new_version")
ON_CHANGED_QUESTION = {
    "supersede": "store them as new versions all the same (old versions and their results stay)",
    "skip": "leave them out: keep the existing instances, import the rest",
}
CONSTRAINT_FIELDS = set(ConstraintSpec.model_fields) - {"id"}
DOCUMENT_FIELDS = set(DocumentSpec.model_fields) - {"doc_id"}


@dataclass(frozen=True)
class LineError:
    """One problem in an input file: line number, field path and message."""

    line: int
    field: str
    message: str
    file: str = ""  # the file it is in, when one report covers several files

    def __str__(self) -> str:
        where = f"line {self.line}: {shown_field(self.field)}: " if self.field else f"line {self.line}: "
        return where + self.message

    def located(self, path: object) -> str:
        """The problem as `file:line: field: message`, the form every command prints (its own file, else `path`)."""
        field = f" {shown_field(self.field)}:" if self.field else ""
        return f"{self.file or path}:{self.line}:{field} {self.message}"


@dataclass
class ValidationReport:
    """Result of checking a benchmark file: the valid instances (with line numbers) and every error."""

    instances: list[tuple[int, InstanceSpec]] = field(default_factory=list)
    errors: list[LineError] = field(default_factory=list)
    warnings: list[LineError] = field(default_factory=list)  # valid but risky (a regex that may backtrack badly)
    rejected: list[LineError] = field(default_factory=list)  # records left out (an import with skip_invalid)

    @property
    def ok(self) -> bool:
        return not self.errors


@dataclass
class ImportReport:
    """What an import did: counts per outcome, or the errors that made it import nothing."""

    created: list[str] = field(default_factory=list)
    new_versions: list[str] = field(default_factory=list)
    unchanged: list[str] = field(default_factory=list)
    errors: list[LineError] = field(default_factory=list)
    warnings: list[LineError] = field(default_factory=list)  # imported, with a change worth a note
    rejected: list[LineError] = field(default_factory=list)  # records left out (an import with skip_invalid)
    skipped: list[str] = field(default_factory=list)  # changed questions left out (on_changed_question 'skip')

    @property
    def ok(self) -> bool:
        return not self.errors


def field_path(loc: Sequence[str | int]) -> str:
    """Render a pydantic error location as `constraints[3].checker_id`."""
    out = ""
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += f".{part}" if out else str(part)
    return out


def _checker_errors(spec: InstanceSpec, line: int) -> list[LineError]:
    from core.scoring.checkers import kwargs_errors

    errors = []
    for i, constraint in enumerate(spec.constraints):
        if constraint.judge_method != "rule" or not constraint.checker_id:
            continue
        for path, message in kwargs_errors(constraint.checker_id, constraint.checker_kwargs):
            errors.append(LineError(line, f"constraints[{i}].{path}", message))
    return errors


def _checker_warnings(spec: InstanceSpec, line: int) -> list[LineError]:
    from core.scoring.checkers import kwargs_warnings

    return [LineError(line, f"constraints[{i}].{path}", message)
            for i, c in enumerate(spec.constraints) if c.judge_method == "rule" and c.checker_id
            for path, message in kwargs_warnings(c.checker_id, c.checker_kwargs)]


def _protocol_errors(spec: InstanceSpec, line: int) -> list[LineError]:
    from core.protocols import protocol_errors

    return [LineError(line, path, message) for path, message in protocol_errors(spec)]


def _decode_lines(data: bytes) -> Iterable[tuple[int, str | None, str]]:
    for number, raw in enumerate(data.split(b"\n"), start=1):
        try:
            yield number, raw.decode("utf-8").strip(), ""
        except UnicodeDecodeError as exc:
            yield number, None, f"not valid UTF-8 (byte 0x{raw[exc.start]:02x} at column {exc.start + 1})"


def validate_lines(data: bytes) -> ValidationReport:
    """Check every line of a JSONL benchmark: JSON, schema, checker ids and kwargs, duplicate ids."""
    report = ValidationReport()
    first_line_of: dict[str, int] = {}
    for number, text, decode_error in _decode_lines(data):
        if text is None:
            report.errors.append(LineError(number, "", decode_error))
            continue
        if not text:
            continue
        payload, problem = parse_json(text, non_finite=True)
        if problem:
            report.errors.append(LineError(number, "", problem))
            continue
        if not isinstance(payload, dict):
            report.errors.append(LineError(number, "", "expected a JSON object"))
            continue
        unstorable = storable_problems(payload)
        if unstorable:
            report.errors.extend(LineError(number, path, message) for path, message in unstorable)
            continue
        try:
            spec = InstanceSpec.model_validate(payload)
        except ValidationError as exc:
            for err in exc.errors():
                message = err["msg"].removeprefix("Value error, ")
                report.errors.append(LineError(number, field_path(err["loc"]), message))
            continue
        spec.metadata.pop(EXPORT_KEY, None)  # an export's derived LLM mark: recomputed from the metadata, never stored
        checker_errors = _checker_errors(spec, number) + _protocol_errors(spec, number)
        if checker_errors:
            report.errors.extend(checker_errors)
            continue
        if spec.language is None:
            spec = spec.model_copy(update={"language": detect_language(spec.query)})
        if spec.id in first_line_of:
            report.errors.append(
                LineError(number, "id", f"duplicate instance id {spec.id!r} (first on line {first_line_of[spec.id]})")
            )
            continue
        first_line_of[spec.id] = number
        report.instances.append((number, spec))
        report.warnings += _checker_warnings(spec, number)
    return report


def validate_file(path: Path) -> ValidationReport:
    """Validate a JSONL benchmark file on disk."""
    return validate_lines(Path(path).read_bytes())


def load_domain_specs(path: Path) -> list[DomainSpec]:
    """Read a domains JSONL file (name, description per line); ValueError naming the file, line and field."""
    try:
        lines = Path(path).read_bytes().decode("utf-8").split("\n")
    except UnicodeDecodeError as exc:
        raise ValueError(f"{path}:0: (file): not valid UTF-8 ({exc.reason})") from None
    specs = []
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        payload, problem = parse_json(line, non_finite=True)
        problem = f"(line): {problem}" if problem else None
        problem = problem or next((f"{where}: {msg}" for where, msg in storable_problems(payload)), None)
        if problem is None:
            try:
                specs.append(DomainSpec.model_validate(payload))
            except ValidationError as exc:
                err = exc.errors()[0]
                problem = f"{field_path(err['loc']) or '(line)'}: {err['msg']}"
        if problem:
            raise ValueError(f"{path}:{number}: {problem}")
    return specs


def _domain_ids(session: Session, names: Iterable[str], descriptions: dict[str, str]) -> dict[str, int]:
    existing = {d.name: d for d in session.exec(select(Domain)).all()}
    for name in sorted(set(names) | set(descriptions)):
        if name not in existing:
            domain = Domain(name=name, description=descriptions.get(name, ""))
            session.add(domain)
            existing[name] = domain
        elif descriptions.get(name) and not existing[name].description:
            existing[name].description = descriptions[name]
    session.flush()
    return {name: saved_id(d) for name, d in existing.items()}


def add_instance(session: Session, spec: InstanceSpec, domain_id: int, *, version: int, author: str = "") -> Instance:
    """Insert one instance version with its constraints and documents; returns the Instance row."""
    instance = Instance(
        uid=spec.id,
        version=version,
        is_latest=True,
        domain_id=domain_id,
        query=spec.query,
        mode=spec.mode,
        origin=spec.origin,
        protocol=spec.protocol,
        status=spec.status,
        language=spec.language,
        reference=spec.reference.model_dump() if spec.reference else None,
        attributes=spec.attributes.model_dump(),
        meta=spec.metadata,
        created_by=author,
    )
    session.add(instance)
    session.flush()
    for position, c in enumerate(spec.constraints):
        session.add(Constraint(instance_id=saved_id(instance), position=position, cid=c.id, **c.model_dump(exclude={"id"})))
    for position, d in enumerate(spec.documents):
        session.add(Document(instance_id=saved_id(instance), position=position, doc_uid=d.doc_id, **d.model_dump(exclude={"doc_id"})))
    return instance


def _content(spec: InstanceSpec) -> dict:
    return spec.model_dump(exclude={"version", "status"})


def import_specs(
    engine: Engine,
    specs: Sequence[tuple[int, InstanceSpec]],
    *,
    on_existing: str = "reject",
    domain_descriptions: dict[str, str] | None = None,
    author: str = "",
    on_changed_question: str | None = None,
) -> ImportReport:
    """Import validated instances in one transaction; any conflict imports nothing.

    on_existing: 'reject' refuses ids already in the database; 'new_version' stores changed ones as a new version
    and reports identical ones as unchanged. An existing id whose question changed is never replaced silently: each
    is listed and, unless `on_changed_question` chooses (a key of ON_CHANGED_QUESTION), nothing is imported.
    """
    if on_existing not in ON_EXISTING:
        raise ValueError(f"on_existing must be one of {ON_EXISTING}")
    if on_changed_question is not None and on_changed_question not in ON_CHANGED_QUESTION:
        raise ValueError(f"on_changed_question must be one of {', '.join(ON_CHANGED_QUESTION)}")
    report = ImportReport()
    with Session(engine) as session:
        try:
            _add_specs(session, specs, (on_existing, on_changed_question), domain_descriptions or {}, author, report)
            if report.errors:
                return _nothing_imported(session, report)
            session.commit()
        except SQLAlchemyError as exc:
            report.errors.append(LineError(0, "(file)", "the database refused the import: "
                                           + str(getattr(exc, "orig", exc)).splitlines()[0]))
            return _nothing_imported(session, report)
    return report


def _changed_question(line: int, current: Instance, spec: InstanceSpec) -> LineError:
    return LineError(line, "query", f"instance {spec.id!r} (version {current.version}) has another question: "
                     f"{current.query!r} → {spec.query!r}; choose --changed-questions "
                     f"{' or '.join(ON_CHANGED_QUESTION)}")


def _add_specs(session: Session, specs: Sequence[tuple[int, InstanceSpec]], choices: tuple[str, str | None],
               descriptions: dict[str, str], author: str, report: ImportReport) -> None:
    on_existing, on_changed_question = choices
    latest = {
        i.uid: i
        for i in session.exec(select(Instance).where(col(Instance.uid).in_([s.id for _, s in specs]))).all()
        if i.is_latest
    }
    domain_ids = _domain_ids(session, (s.domain for _, s in specs), descriptions)
    for line, spec in specs:
        current = latest.get(spec.id)
        if current is None:
            add_instance(session, spec, domain_ids[spec.domain], version=spec.version, author=author)
            report.created.append(spec.id)
            continue
        if on_existing == "reject":
            report.errors.append(
                LineError(line, "id", f"instance {spec.id!r} already exists (version {current.version}); "
                          "use --new-version to store a new version")
            )
            continue
        if _content(instance_spec(session, current)) == _content(spec):
            report.unchanged.append(spec.id)
            continue
        if current.query != spec.query and on_changed_question != "supersede":
            if on_changed_question == "skip":
                report.skipped.append(spec.id)
            else:
                report.errors.append(_changed_question(line, current, spec))
            continue
        current.is_latest = False
        session.add(current)
        session.flush()
        add_instance(session, spec, domain_ids[spec.domain], version=current.version + 1, author=author)
        report.new_versions.append(spec.id)


def _nothing_imported(session: Session, report: ImportReport) -> ImportReport:
    session.rollback()
    report.created.clear()
    report.new_versions.clear()
    report.unchanged.clear()
    report.skipped.clear()
    return report


def import_file(
    engine: Engine, path: Path, *, on_existing: str = "reject", domains_path: Path | None = None, author: str = "",
    on_changed_question: str | None = None,
) -> ImportReport:
    """Validate then import a JSONL benchmark atomically: a file with any bad line imports nothing."""
    validation = validate_file(path)
    if not validation.ok:
        return ImportReport(errors=validation.errors)
    descriptions = {d.name: d.description for d in load_domain_specs(domains_path)} if domains_path else {}
    return import_specs(
        engine, validation.instances, on_existing=on_existing, domain_descriptions=descriptions, author=author,
        on_changed_question=on_changed_question,
    )


def instance_spec(session: Session, instance: Instance) -> InstanceSpec:
    """Rebuild the interchange form of one stored instance version."""
    domain = session.get(Domain, instance.domain_id)
    constraints = session.exec(
        select(Constraint).where(Constraint.instance_id == instance.id).order_by(col(Constraint.position))
    ).all()
    documents = session.exec(
        select(Document).where(Document.instance_id == instance.id).order_by(col(Document.position))
    ).all()
    assert domain is not None, f"instance {instance.uid} names a missing domain"
    return InstanceSpec(
        id=instance.uid,
        domain=domain.name,
        query=instance.query,
        mode=instance.mode,
        origin=instance.origin,
        protocol=instance.protocol,
        status=instance.status,
        version=instance.version,
        language=instance.language,
        reference=instance.reference,
        attributes=instance.attributes or {},
        metadata=instance.meta,
        constraints=[{"id": c.cid, **c.model_dump(include=CONSTRAINT_FIELDS)} for c in constraints],
        documents=[{"doc_id": d.doc_uid, **d.model_dump(include=DOCUMENT_FIELDS)} for d in documents],
    )


def latest_instances(session: Session, *, domain: str | None = None, mode: str | None = None) -> list[Instance]:
    """Latest version of every instance, optionally filtered by domain name and mode, ordered by uid."""
    query = select(Instance).where(Instance.is_latest == True)  # noqa: E712
    if domain:
        query = query.join(Domain, col(Domain.id) == Instance.domain_id).where(Domain.name == domain)
    if mode:
        query = query.where(Instance.mode == mode)
    return list(session.exec(query.order_by(Instance.uid)).all())


def marked_spec(spec: InstanceSpec) -> InstanceSpec:
    """The spec with its LLM mark (core.store.generated) under metadata.generated, derived afresh (a stale one is
    dropped), so an exported file says which items a model drafted, wrote or edited."""
    meta = {k: v for k, v in spec.metadata.items() if k != EXPORT_KEY}
    mark = generated_mark(meta, len(spec.constraints))
    return spec.model_copy(update={"metadata": {**meta, EXPORT_KEY: mark.to_dict()} if mark else meta})


def export_instances(engine: Engine, out: Path, *, domain: str | None = None, mode: str | None = None) -> int:
    """Write the latest instance versions as JSONL; returns the number written."""
    with Session(engine) as session:
        specs = [marked_spec(instance_spec(session, i)) for i in latest_instances(session, domain=domain, mode=mode)]
    Path(out).parent.mkdir(parents=True, exist_ok=True)
    with Path(out).open("w", encoding="utf-8") as fh:
        for spec in specs:
            fh.write(spec.model_dump_json(exclude_none=False) + "\n")
    return len(specs)
