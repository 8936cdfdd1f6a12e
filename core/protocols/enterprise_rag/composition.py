"""EnterpriseRAG's composition, its paper's Tables 5 and 6: instances and average constraints per domain (and per
constraint category), and instances per retrieval mode with their share and natural and augmented counts, over the
latest instance versions. Declared as `Protocol.composition`, shown on Browse benchmark and by `gauntlet stats`."""

from __future__ import annotations

from dataclasses import dataclass

from sqlalchemy.engine import Engine
from sqlmodel import Session, col, select

from core.protocols import constraint_protocols
from core.protocols.base import CompositionTable
from core.store.models import Constraint, Domain, Instance
from core.store.schema import CATEGORIES, MODES


@dataclass(frozen=True)
class DomainRow:
    """Table 5 row: instances and average constraints (total and per category) of one domain."""

    domain: str
    instances: int
    avg_constraints: float
    avg_persona: float
    avg_output: float
    avg_knowledge_protocol: float


@dataclass(frozen=True)
class ModeRow:
    """Table 6 row: instances of one retrieval mode, share, natural and augmented counts."""

    mode: str
    count: int
    ratio: float
    natural: int
    augmented: int



def composition(engine: Engine) -> tuple[list[DomainRow], list[ModeRow]]:
    """The paper's Table 5 (per domain) and Table 6 (per mode) over the latest EnterpriseRAG instance versions; 'All'
    row last."""
    with Session(engine) as session:
        rows = session.exec(
            select(Instance.id, Domain.name, Instance.mode, Instance.origin)
            .join(Domain, col(Domain.id) == Instance.domain_id)
            .where(Instance.is_latest == True, col(Instance.protocol).in_(constraint_protocols()))  # noqa: E712
        ).all()
        ids = [r[0] for r in rows if r[0] is not None]  # stored rows always have their primary key
        counts = session.exec(
            select(Constraint.instance_id, Constraint.category).where(col(Constraint.instance_id).in_(ids))
        ).all()
    per_instance: dict[int, dict[str, int]] = {i: dict.fromkeys(CATEGORIES, 0) for i in ids}
    for instance_id, category in counts:
        per_instance[instance_id][category] += 1
    domain_of = {r[0]: r[1] for r in rows}

    def domain_row(name: str, members: list[int]) -> DomainRow:
        n = len(members) or 1
        sums = {c: sum(per_instance[i][c] for i in members) for c in CATEGORIES}
        return DomainRow(
            domain=name,
            instances=len(members),
            avg_constraints=round(sum(sums.values()) / n, 2),
            avg_persona=round(sums["persona"] / n, 2),
            avg_output=round(sums["output"] / n, 2),
            avg_knowledge_protocol=round(sums["knowledge_protocol"] / n, 2),
        )

    domains = sorted(set(domain_of.values()))
    table5 = [domain_row(d, [i for i in ids if domain_of[i] == d]) for d in domains]
    table5.append(domain_row("All", ids))
    total = len(rows) or 1
    table6 = []
    for mode in MODES:
        members = [r for r in rows if r[2] == mode]
        table6.append(
            ModeRow(
                mode=mode,
                count=len(members),
                ratio=round(len(members) / total, 3),
                natural=sum(1 for r in members if r[3] == "natural"),
                augmented=sum(1 for r in members if r[3] == "augmented"),
            )
        )
    return table5, table6


def composition_tables(engine: Engine) -> tuple[CompositionTable, ...]:
    """Tables 5 (per domain) and 6 (per mode), as the declared composition."""
    table5, table6 = composition(engine)
    return (CompositionTable("Table 5: per domain", "domain", [vars(r) for r in table5]),
            CompositionTable("Table 6: per mode", "mode", [vars(r) for r in table6]))
