"""EnterpriseRAG's composition, its paper's Tables 5 and 6: instances and average constraints per domain (and per
constraint category), and instances per retrieval mode with their share and natural and augmented counts, over the
latest instance versions. Declared as `Protocol.composition`, shown on Browse benchmark and by `gauntlet stats`."""

from __future__ import annotations

from dataclasses import dataclass

from sqlalchemy import func
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
    row last. Counted by the database (instances per domain, mode and origin; constraints per domain and category)."""
    latest = (Instance.is_latest == True, col(Instance.protocol).in_(constraint_protocols()))  # noqa: E712
    with Session(engine) as session:
        groups = session.exec(
            select(Domain.name, Instance.mode, Instance.origin, func.count())
            .join(Domain, col(Domain.id) == Instance.domain_id).where(*latest)
            .group_by(col(Domain.name), col(Instance.mode), col(Instance.origin))
        ).all()
        categories = session.exec(
            select(Domain.name, Constraint.category, func.count())
            .join(Instance, col(Instance.id) == Constraint.instance_id)
            .join(Domain, col(Domain.id) == Instance.domain_id).where(*latest)
            .group_by(col(Domain.name), col(Constraint.category))
        ).all()
    instances: dict[str, int] = {}
    for name, _, _, n in groups:
        instances[name] = instances.get(name, 0) + int(n)
    sums: dict[str, dict[str, int]] = {name: dict.fromkeys(CATEGORIES, 0) for name in instances}
    for name, category, n in categories:
        sums[name][category] += int(n)

    def domain_row(name: str, members: int, by_category: dict[str, int]) -> DomainRow:
        n = members or 1
        return DomainRow(
            domain=name,
            instances=members,
            avg_constraints=round(sum(by_category.values()) / n, 2),
            avg_persona=round(by_category["persona"] / n, 2),
            avg_output=round(by_category["output"] / n, 2),
            avg_knowledge_protocol=round(by_category["knowledge_protocol"] / n, 2),
        )

    table5 = [domain_row(d, instances[d], sums[d]) for d in sorted(instances)]
    table5.append(domain_row("All", sum(instances.values()),
                             {c: sum(s[c] for s in sums.values()) for c in CATEGORIES}))
    total = sum(instances.values()) or 1
    table6 = []
    for mode in MODES:
        members = [(origin, int(n)) for _, m, origin, n in groups if m == mode]
        count = sum(n for _, n in members)
        table6.append(
            ModeRow(
                mode=mode,
                count=count,
                ratio=round(count / total, 3),
                natural=sum(n for origin, n in members if origin == "natural"),
                augmented=sum(n for origin, n in members if origin == "augmented"),
            )
        )
    return table5, table6


def composition_tables(engine: Engine) -> tuple[CompositionTable, ...]:
    """Tables 5 (per domain) and 6 (per mode), as the declared composition."""
    table5, table6 = composition(engine)
    return (CompositionTable("Table 5: per domain", "domain", [vars(r) for r in table5]),
            CompositionTable("Table 6: per mode", "mode", [vars(r) for r in table6]))
