"""Benchmark sets: each import or build is a named set of instance versions. Importing never supersedes an existing
instance silently: the plan previews what would change, and instances whose content differs need an explicit choice
(supersede them with new versions, import them under the set's own ids, or leave them out)."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field

from sqlalchemy.engine import Engine
from sqlmodel import Session, col, func, select

from core.ingest.io import LineError, _domain_ids, add_instance, instance_spec, validate_file
from core.store.db import saved_id, select_columns
from core.store.models import BenchmarkSet, BenchmarkSetMember, Domain, Instance, Response
from core.store.schema import InstanceSpec

ON_CHANGED: dict[str, str] = {
    "rename": "import them under this set's own ids (<set>/<id>): nothing existing changes",
    "supersede": "supersede: store them as new versions of the existing instances (old versions and their results stay)",
    "skip": "leave them out: keep the existing instances, import only the new ones",
}
SCALAR_FIELDS = ("query", "mode", "origin", "protocol", "language", "domain")
BLOCK_FIELDS = ("reference", "attributes", "metadata")


@dataclass(frozen=True)
class PlannedInstance:
    """What importing one instance would do: 'new', 'unchanged' or 'changed' (with what differs from the latest)."""

    uid: str
    action: str
    current_version: int | None = None
    changes: tuple[str, ...] = ()


@dataclass
class SetImportReport:
    """What a set import did: the set, counts per outcome, or the errors that made it import nothing."""

    set_name: str = ""
    created: list[str] = field(default_factory=list)
    superseded: list[str] = field(default_factory=list)
    renamed: list[str] = field(default_factory=list)
    unchanged: list[str] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)
    errors: list[LineError] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.errors

    @property
    def summary(self) -> str:
        parts = [f"{len(self.created)} new", f"{len(self.unchanged)} unchanged (shared with existing sets)",
                 f"{len(self.renamed)} under the set's own ids", f"{len(self.superseded)} superseded",
                 f"{len(self.skipped)} left out"]
        return f"set {self.set_name!r}: " + ", ".join(parts)


@dataclass(frozen=True)
class SetInfo:
    """A benchmark set as listed in the app."""

    id: int
    name: str
    origin: str
    source: str
    instances: int
    created_by: str

    @property
    def label(self) -> str:
        return f"{self.name} ({self.origin}, {self.instances} instances)"


def _by_id(items: Iterable[dict], key: str) -> dict[str, dict]:
    return {str(item[key]): item for item in items}


def _list_changes(name: str, old: list[dict], new: list[dict], key: str) -> list[str]:
    before, after = _by_id(old, key), _by_id(new, key)
    out = [f"{name} {k} added" for k in after if k not in before]
    out += [f"{name} {k} removed" for k in before if k not in after]
    for k in after:
        if k in before and before[k] != after[k]:
            fields = sorted(f for f in set(before[k]) | set(after[k]) if before[k].get(f) != after[k].get(f))
            out.append(f"{name} {k}: {', '.join(fields)} changed")
    if not out and [str(i[key]) for i in old] != [str(i[key]) for i in new]:
        out.append(f"{name} order changed")
    return out


def spec_changes(old: InstanceSpec, new: InstanceSpec) -> list[str]:
    """Readable differences between two versions of an instance (status and version are not content)."""
    a, b = old.model_dump(), new.model_dump()
    out = [f"{f}: {a[f]!r} → {b[f]!r}" if f != "query" else "query changed" for f in SCALAR_FIELDS if a[f] != b[f]]
    out += _list_changes("constraint", a["constraints"], b["constraints"], "id")
    out += _list_changes("document", a["documents"], b["documents"], "doc_id")
    out += [f"{f} changed" for f in BLOCK_FIELDS if a[f] != b[f]]
    return out


def _latest(session: Session, uids: Iterable[str]) -> dict[str, Instance]:
    rows = session.exec(select(Instance).where(col(Instance.uid).in_(list(uids)), Instance.is_latest == True)).all()  # noqa: E712
    return {i.uid: i for i in rows}


def plan_import(engine: Engine, specs: Sequence[tuple[int, InstanceSpec]]) -> list[PlannedInstance]:
    """The preview of an import: per instance, new, unchanged or changed (and what changes) against the latest version."""
    out = []
    with Session(engine) as session:
        latest = _latest(session, (s.id for _, s in specs))
        for _, spec in specs:
            current = latest.get(spec.id)
            if current is None:
                out.append(PlannedInstance(spec.id, "new"))
                continue
            changes = spec_changes(instance_spec(session, current), spec)
            out.append(PlannedInstance(spec.id, "changed" if changes else "unchanged", current.version, tuple(changes)))
    return out


def set_slug(name: str) -> str:
    """The id prefix of a set's own instances: lower case, letters, digits, '-' and '_'."""
    return re.sub(r"[^a-z0-9_-]+", "-", name.strip().lower()).strip("-") or "set"


def _check_name(session: Session, name: str) -> str:
    clean = name.strip()
    if not clean:
        raise ValueError("set_name: give the set a name")
    if session.exec(select(BenchmarkSet).where(BenchmarkSet.name == clean)).first() is not None:
        raise ValueError(f"set_name: a set named {clean!r} already exists; choose another name")
    return clean


def import_set(
    engine: Engine,
    specs: Sequence[tuple[int, InstanceSpec]],
    set_name: str,
    *,
    on_changed: str | None = None,
    origin: str = "import",
    source: str = "",
    author: str = "",
    on_members: Callable[[Session, dict[str, int]], None] | None = None,
) -> SetImportReport:
    """Import validated instances as a new named set in one transaction; any problem imports nothing.

    New ids are created, identical ones join the set as they are; when some existing instances would change,
    `on_changed` must say what to do with them (a key of ON_CHANGED), else nothing is imported. `on_members`, if
    given, runs in the same transaction before it commits, with each imported spec id's member instance version id
    (so rows that refer to the set's instances, like a deployed run's answers, commit with it or not at all).
    """
    if on_changed is not None and on_changed not in ON_CHANGED:
        raise ValueError(f"on_changed: must be one of {', '.join(ON_CHANGED)}")
    plan = {p.uid: p for p in plan_import(engine, specs)}
    changed = [uid for uid, p in plan.items() if p.action == "changed"]
    report = SetImportReport(set_name=set_name.strip())
    if changed and on_changed is None:
        report.errors.append(LineError(0, "on_changed", f"{len(changed)} instances already exist with different content "
                                       f"({', '.join(changed[:5])}{'…' if len(changed) > 5 else ''}): choose "
                                       f"{', '.join(ON_CHANGED)} after reading the preview"))
        return report
    with Session(engine) as session:
        try:
            name = _check_name(session, set_name)
        except ValueError as exc:
            report.errors.append(LineError(0, "set_name", str(exc).partition(": ")[2]))
            return report
        prefix = set_slug(name)
        renamed = {uid: f"{prefix}/{uid}" for uid in changed if on_changed == "rename"}
        taken = _latest(session, renamed.values())
        for new_uid in renamed.values():
            if new_uid in taken:
                report.errors.append(LineError(0, "set_name", f"id {new_uid!r} already exists; choose another set name"))
        if report.errors:
            return report
        bench_set = BenchmarkSet(name=name, origin=origin, source=source, created_by=author)
        session.add(bench_set)
        session.flush()
        latest = _latest(session, plan)
        domain_ids = _domain_ids(session, (s.domain for _, s in specs), {})
        members: list[int] = []
        member_of: dict[str, int] = {}
        for _, spec in specs:
            action = plan[spec.id].action
            count = len(members)
            if action == "unchanged":
                members.append(saved_id(latest[spec.id]))
                report.unchanged.append(spec.id)
            elif action == "new":
                members.append(saved_id(add_instance(session, spec, domain_ids[spec.domain], version=spec.version, author=author)))
                report.created.append(spec.id)
            elif on_changed == "skip":
                report.skipped.append(spec.id)
            elif on_changed == "rename":
                own = spec.model_copy(update={"id": renamed[spec.id], "version": 1})
                members.append(saved_id(add_instance(session, own, domain_ids[spec.domain], version=1, author=author)))
                report.renamed.append(own.id)
            else:
                current = latest[spec.id]
                current.is_latest = False
                session.add(current)
                session.flush()
                members.append(saved_id(add_instance(session, spec, domain_ids[spec.domain],
                                                     version=current.version + 1, author=author)))
                report.superseded.append(spec.id)
            if len(members) > count:
                member_of[spec.id] = members[-1]
        if on_members is not None:
            on_members(session, member_of)
        session.add_all(BenchmarkSetMember(set_id=saved_id(bench_set), instance_id=i) for i in dict.fromkeys(members))
        session.commit()
    return report


def import_set_file(engine: Engine, path, set_name: str, *, on_changed: str | None = None, origin: str = "import",
                    author: str = "") -> SetImportReport:
    """Validate a JSONL benchmark, then import it as a new named set (see import_set)."""
    validation = validate_file(path)
    if not validation.ok:
        return SetImportReport(set_name=set_name, errors=validation.errors)
    return import_set(engine, validation.instances, set_name, on_changed=on_changed, origin=origin,
                      source=getattr(path, "name", str(path)), author=author)


def benchmark_sets(engine: Engine) -> list[SetInfo]:
    """Every benchmark set with its instance count, newest first."""
    sets = BenchmarkSet.__table__.c  # type: ignore[attr-defined]
    with engine.connect() as conn:  # every results page with a set filter reads it: a plain connection, no ORM objects
        counts = {int(i): int(n) for i, n in conn.execute(select(BenchmarkSetMember.set_id, func.count())
                                                          .group_by(col(BenchmarkSetMember.set_id)))}
        rows = conn.execute(select_columns(sets.id, sets.name, sets.origin, sets.source, sets.created_by)
                            .order_by(sets.id.desc())).all()
    return [SetInfo(int(i), name, origin, source, counts.get(i, 0), by) for i, name, origin, source, by in rows]


def set_names_of(engine: Engine, instance_id: int) -> list[str]:
    """Names of the sets an instance version belongs to."""
    with Session(engine) as session:
        rows = session.exec(select(BenchmarkSet.name).join(BenchmarkSetMember, col(BenchmarkSetMember.set_id) == BenchmarkSet.id)
                            .where(BenchmarkSetMember.instance_id == instance_id).order_by(BenchmarkSet.name)).all()
    return list(rows)


def set_instance_ids(engine: Engine, set_id: int) -> set[int]:
    """Instance version ids of a set."""
    with Session(engine) as session:
        return set(session.exec(select(BenchmarkSetMember.instance_id).where(BenchmarkSetMember.set_id == set_id)).all())


def scoped_response_ids(engine: Engine, run_ids: Sequence[int], set_id: int | None = None,
                        accepted_only: bool = False) -> set[int]:
    """Responses of the runs whose instance version is in the set (None: any) and, optionally, accepted by experts."""
    query = select(Response.id).join(Instance, col(Instance.id) == Response.instance_id).where(col(Response.run_id).in_(list(run_ids)))
    if set_id is not None:
        query = query.join(BenchmarkSetMember, col(BenchmarkSetMember.instance_id) == Instance.id).where(
            BenchmarkSetMember.set_id == set_id)
    if accepted_only:
        query = query.where(Instance.status == "accepted")
    with Session(engine) as session:
        return {i for i in session.exec(query).all() if i is not None}  # primary keys: never None once stored


def unknown_domains(engine: Engine, names: Iterable[str]) -> list[str]:
    """The names that are not existing domains (an expert's domains must exist: a typo is an error)."""
    with Session(engine) as session:
        known = set(session.exec(select(Domain.name)).all())
    return sorted({n.strip() for n in names if n and n.strip()} - known)


def check_domains(engine: Engine, names: Iterable[str]) -> None:
    """Raise ValueError('domains: ...') when a name is not an existing domain, listing the known ones."""
    unknown = unknown_domains(engine, names)
    if unknown:
        with Session(engine) as session:
            known = sorted(session.exec(select(Domain.name)).all())
        raise ValueError(f"domains: unknown domain {', '.join(map(repr, unknown))}; known: {', '.join(known) or 'none yet'}")


VERSION_SUFFIX = re.compile(r"^(?P<base>.+) v(?P<n>\d+)$")


def set_versions(engine: Engine, base: str) -> list[tuple[int, int]]:
    """(version, set id) of the sets named '<base> vN', oldest first."""
    with Session(engine) as session:
        rows = session.exec(select(BenchmarkSet.id, BenchmarkSet.name).where(
            col(BenchmarkSet.name).startswith(f"{base.strip()} v"))).all()
    found = [(int(m["n"]), sid) for sid, name in rows
             if sid is not None and (m := VERSION_SUFFIX.match(name)) and m["base"] == base.strip()]
    return sorted(found)


@dataclass(frozen=True)
class SetVersion:
    """A new version of a versioned set: its name, the instances it kept from the previous version and those added."""

    name: str
    version: int
    kept: int
    added: int


def add_set_version(engine: Engine, base: str, instance_ids: Iterable[int], *, origin: str = "promote",
                    source: str = "", author: str = "") -> SetVersion:
    """Create '<base> v(N+1)': the members of '<base> vN' (none for v1) plus `instance_ids`, in one transaction;
    earlier versions stay as they were, so results scored on them remain comparable."""
    if not base.strip():
        raise ValueError("set_name: give the set a name")
    versions = set_versions(engine, base)
    previous = set_instance_ids(engine, versions[-1][1]) if versions else set()
    number = versions[-1][0] + 1 if versions else 1
    new = sorted(set(instance_ids) - previous)
    with Session(engine) as session:
        name = _check_name(session, f"{base.strip()} v{number}")
        bench_set = BenchmarkSet(name=name, origin=origin, source=source, created_by=author,
                                 description=f"version {number} of {base.strip()}")
        session.add(bench_set)
        session.flush()
        session.add_all(BenchmarkSetMember(set_id=saved_id(bench_set), instance_id=i) for i in sorted(previous | set(new)))
        session.commit()
    return SetVersion(name, number, len(previous), len(new))


def free_set_name(engine: Engine, wanted: str) -> str:
    """`wanted`, or with ' 2', ' 3'... appended when a set already has that name."""
    with Session(engine) as session:
        taken = set(session.exec(select(BenchmarkSet.name).where(col(BenchmarkSet.name).startswith(wanted.strip()))))
    base = wanted.strip()
    return next(name for name in (base if n == 1 else f"{base} {n}" for n in range(1, len(taken) + 2))
                if name not in taken)


def name_imported_set(engine: Engine, uids: Iterable[str], name: str, *, source: str = "", author: str = "") -> str:
    """Create the named set of an import's instances (the latest versions of `uids`); returns its name."""
    with Session(engine) as session:
        clean = _check_name(session, name)
        members = sorted(saved_id(i) for i in _latest(session, dict.fromkeys(uids)).values())
        bench_set = BenchmarkSet(name=clean, origin="import", source=source, created_by=author)
        session.add(bench_set)
        session.flush()
        session.add_all(BenchmarkSetMember(set_id=saved_id(bench_set), instance_id=i) for i in members)
        session.commit()
    return clean
