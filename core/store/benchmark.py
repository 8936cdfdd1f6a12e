"""The stored benchmark for the app: filtered instance lists and one instance with its bundle (the admin's build and
import, re-checked against the permission table, are in core.services.benchmarks)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

from sqlalchemy import Select, func, or_
from sqlalchemy import select as sa_select
from sqlalchemy.engine import Connection, Engine
from sqlmodel import Session, col, select

from core.store.generated import HUMAN, GeneratedMark, generated_mark, mark_cell, mark_counts
from core.store.models import BenchmarkSetMember, Constraint, Document, Domain, Instance, Response

Query = TypeVar("Query", bound=Select[*tuple[Any, ...]])


def where_instances(query: Query, *, latest_only: bool, set_id: int | None = None, domains: Sequence[str] = (),
                    modes: Sequence[str] = (), statuses: Sequence[str] = (), protocols: Sequence[str] = ()) -> Query:
    """`query` (over Instance joined to Domain) narrowed to latest versions (`latest_only`), set `set_id`'s members
    (None: any set) and the given domain names, modes, statuses and protocols (an empty filter keeps all)."""
    if latest_only:
        query = query.where(col(Instance.is_latest) == True)  # noqa: E712
    if set_id is not None:
        members = select(BenchmarkSetMember.instance_id).where(BenchmarkSetMember.set_id == set_id)
        query = query.where(col(Instance.id).in_(members))
    for column, wanted in ((Domain.name, domains), (Instance.mode, modes), (Instance.status, statuses),
                           (Instance.protocol, protocols)):
        if wanted:
            query = query.where(col(column).in_(wanted))
    return query


def benchmark_version(session: Session) -> tuple[int, int, int, int]:
    """A cheap fingerprint of every prompt's inputs: (max instance id, instance count, max constraint id, max document
    id); instances, constraints and documents are only ever added (an edit or import adds a version), so any change to
    what a prompt is built from changes it."""
    fingerprint = [session.exec(query).one() for query in (  # one aggregate per query: SQLite answers each from the b-tree
        select(func.max(Instance.id)), select(func.count()).select_from(Instance),
        select(func.max(Constraint.id)), select(func.max(Document.id)))]
    return (int(fingerprint[0] or 0), int(fingerprint[1] or 0), int(fingerprint[2] or 0), int(fingerprint[3] or 0))


def benchmark_fingerprint(engine: Engine) -> tuple[int, int, int, int]:
    """benchmark_version in its own session: what a page caches the benchmark's composition under."""
    with Session(engine) as session:
        return benchmark_version(session)


@dataclass(frozen=True)
class InstanceRow:
    """One line of the benchmark browser."""

    id: int
    uid: str
    version: int
    domain: str
    mode: str | None
    origin: str
    status: str
    constraints: int
    documents: int
    query: str
    generated: str = ""  # the LLM mark (core.store.generated), '' for human-written items


@dataclass(frozen=True)
class InstanceDetail:
    """An instance version with its domain name, ordered constraints and ordered documents."""

    instance: Instance
    domain: str
    constraints: list[Constraint]
    documents: list[Document]


def domain_names(engine: Engine) -> list[str]:
    """All domain names, sorted."""
    with Session(engine) as session:
        return sorted(session.exec(select(Domain.name)).all())


def instance_rows(
    engine: Engine,
    *,
    domains: list[str] | None = None,
    modes: list[str] | None = None,
    statuses: list[str] | None = None,
    search: str = "",
    latest_only: bool = True,
    set_id: int | None = None,
) -> list[InstanceRow]:
    """Instances matching the filters (empty filter = all, set None = any set); `search` matches query, uid and
    document text."""
    n_constraints = (select(func.count()).select_from(Constraint).where(col(Constraint.instance_id) == Instance.id)
                     .correlate(Instance).scalar_subquery())
    n_documents = (select(func.count()).select_from(Document).where(col(Document.instance_id) == Instance.id)
                   .correlate(Instance).scalar_subquery())
    query = (  # the listed columns only (not whole Instance objects): one index count per instance and table
        sa_select(col(Instance.id), col(Instance.uid), col(Instance.version), col(Domain.name), col(Instance.mode),
                  col(Instance.origin), col(Instance.status), col(Instance.query), col(Instance.meta), n_constraints,
                  n_documents)
        .join(Domain, col(Domain.id) == Instance.domain_id)
    )
    query = where_instances(query, latest_only=latest_only, set_id=set_id, domains=domains or (), modes=modes or (),
                            statuses=statuses or ())
    if search.strip():
        pattern = f"%{search.strip()}%"
        in_documents = select(Document.instance_id).where(
            or_(col(Document.text).ilike(pattern), col(Document.title).ilike(pattern))
        )
        query = query.where(
            or_(col(Instance.query).ilike(pattern), col(Instance.uid).ilike(pattern), col(Instance.id).in_(in_documents))
        )
    with engine.connect() as conn:
        results = conn.execute(query.order_by(col(Instance.uid), col(Instance.version))).all()
    return [
        InstanceRow(id=int(i), uid=uid, version=version, domain=name, mode=mode, origin=origin, status=status,
                    constraints=nc or 0, documents=nd or 0, query=text,
                    generated=mark_cell(generated_mark(meta, nc or 0)))
        for i, uid, version, name, mode, origin, status, text, meta, nc, nd in results
    ]


def instance_detail(engine: Engine | Connection, instance_id: int) -> InstanceDetail | None:
    """One instance version with its constraints and documents in order, or None if it does not exist."""
    with Session(engine) as session:
        instance = session.get(Instance, instance_id)
        if instance is None:
            return None
        domain = session.get(Domain, instance.domain_id)
        constraints = session.exec(
            select(Constraint).where(Constraint.instance_id == instance_id).order_by(col(Constraint.position))
        ).all()
        documents = session.exec(
            select(Document).where(Document.instance_id == instance_id).order_by(col(Document.position))
        ).all()
        assert domain is not None, f"instance {instance.uid} names a missing domain"
        return InstanceDetail(instance=instance, domain=domain.name, constraints=list(constraints), documents=list(documents))



def _marked_instances(session: Session, instance_ids: Iterable[int] | None) -> list[tuple[int, str, GeneratedMark | None]]:
    """(instance id, protocol, LLM mark) of the latest instance versions, or of the given instance versions."""
    n_constraints = (
        select(Constraint.instance_id, func.count().label("n")).group_by(col(Constraint.instance_id)).subquery()
    )
    query = select(Instance.id, Instance.protocol, Instance.meta, n_constraints.c.n).outerjoin(
        n_constraints, n_constraints.c.instance_id == Instance.id)
    if instance_ids is None:
        query = query.where(Instance.is_latest == True)  # noqa: E712
    else:
        query = query.where(col(Instance.id).in_(list(instance_ids)))
    return [(i, protocol, generated_mark(meta, n or 0)) for i, protocol, meta, n in session.exec(query).all()
            if i is not None]


def instance_marks(engine: Engine | Connection, instance_ids: Iterable[int] | None = None
                   ) -> list[tuple[str, GeneratedMark | None]]:
    """(protocol, LLM mark) of the latest instance versions, or of the given instance versions."""
    with Session(engine) as session:
        return [(protocol, mark) for _, protocol, mark in _marked_instances(session, instance_ids)]


def marks_by_instance(engine: Engine | Connection, instance_ids: Iterable[int]) -> dict[int, GeneratedMark | None]:
    """The LLM mark of each given instance version, by id (listings of answered instances)."""
    with Session(engine) as session:
        return {i: mark for i, _, mark in _marked_instances(session, instance_ids)}


def marks_by_response(engine: Engine | Connection, response_ids: Iterable[int]) -> dict[int, GeneratedMark | None]:
    """The LLM mark of the instance version each given response answered, by response id (drill-down listings)."""
    with Session(engine) as session:
        answered = dict(session.exec(select(Response.id, Response.instance_id)
                                     .where(col(Response.id).in_(list(response_ids)))).all())
        marks = {i: mark for i, _, mark in _marked_instances(session, set(answered.values()))}
    return {int(r): marks.get(i) for r, i in answered.items() if r is not None}


@dataclass(frozen=True)
class GeneratedCount:
    """How many instances of a protocol carry one LLM mark ('not generated ...' for the rule- or human-made)."""

    protocol: str
    generated: str
    instances: int
    marked: bool


def generated_counts(engine: Engine | Connection, instance_ids: Iterable[int] | None = None) -> list[GeneratedCount]:
    """Instances per protocol and LLM mark (core.store.generated): how many a model drafted, wrote or edited, and by
    which model, beside the rule- or human-made ones."""
    by_protocol: dict[str, list[GeneratedMark | None]] = {}
    for protocol, mark in instance_marks(engine, instance_ids):
        by_protocol.setdefault(protocol, []).append(mark)
    return [GeneratedCount(protocol, mark, n, mark != HUMAN)
            for protocol, marks in sorted(by_protocol.items()) for mark, n in mark_counts(marks).items()]
