"""Each protocol's own composition over the latest instance versions: the tables a protocol declares
(`Protocol.composition`, e.g. EnterpriseRAG's Tables 5 and 6), else its facets: RAGStress and LIT by category,
DomainRAG by ability (question type), misleading evidence by source dataset, any other protocol by its question types and categories. Shares are within the protocol."""

from __future__ import annotations

import importlib
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from sqlalchemy import func
from sqlalchemy.engine import Engine
from sqlmodel import Session, col, select

from core.protocols import DEFAULT_PROTOCOL, PROTOCOLS
from core.protocols.base import CompositionTable
from core.store.models import Instance

Row = tuple[str | None, dict[str, Any], dict[str, Any]]  # mode, attributes, meta
NONE = "(none)"


@dataclass(frozen=True)
class Facet:
    """One way a protocol's instances divide: its name and what each instance counts under (one or several)."""

    name: str
    values: Callable[[Row], Iterable[str]]


@dataclass(frozen=True)
class FacetRow:
    """How many of a protocol's instances count under one value of one facet, and their share of the protocol."""

    protocol: str
    facet: str
    value: str
    count: int
    share: float


def _question_type(row: Row) -> list[str]:
    return [row[1].get("question_type") or NONE]


def _categories(row: Row) -> list[str]:
    return list(row[1].get("categories") or []) or [NONE]


def _source_dataset(row: Row) -> list[str]:
    return [(row[2].get("rag_stress") or {}).get("source_format") or NONE]


FACETS: dict[str, tuple[Facet, ...]] = {
    "kb_corruption": (Facet("category", _categories),),
    "lit_ragbench": (Facet("category", _categories),),
    "domainrag": (Facet("ability", _question_type),),
    "misleading_evidence": (Facet("dataset", _source_dataset), Facet("question type", _question_type)),
}
OTHER_FACETS = (Facet("question type", _question_type), Facet("category", _categories))


def _latest_counts(engine: Engine) -> dict[str, int]:
    """Latest instance versions per protocol."""
    with Session(engine) as session:
        found = session.exec(select(Instance.protocol, func.count()).where(col(Instance.is_latest) == True)  # noqa: E712
                             .group_by(Instance.protocol)).all()
    return {str(protocol): int(n) for protocol, n in found}


def _latest_rows(engine: Engine, protocols: Iterable[str]) -> dict[str, list[Row]]:
    """The (mode, attributes, meta) of the latest instance versions of `protocols` (their facets are counted here)."""
    wanted = list(protocols)
    grouped: dict[str, list[Row]] = {p: [] for p in wanted}
    if not wanted:
        return grouped
    with Session(engine) as session:
        found = session.exec(select(Instance.protocol, Instance.mode, Instance.attributes, Instance.meta)
                             .where(col(Instance.is_latest) == True, col(Instance.protocol).in_(wanted))  # noqa: E712
                             .order_by(col(Instance.id))).all()
    for protocol, mode, attributes, meta in found:
        grouped[protocol].append((mode, dict(attributes or {}), dict(meta or {})))
    return grouped


def facet_rows(protocol: str, rows: list[Row], facet: Facet) -> list[FacetRow]:
    """One facet's rows for a protocol's instances, most frequent first (an instance in several categories counts
    in each, so a multi-valued facet's shares can sum past 100%)."""
    counts = Counter(value for row in rows for value in dict.fromkeys(facet.values(row)))
    total = len(rows) or 1
    return [FacetRow(protocol, facet.name, value, count, round(count / total, 4))
            for value, count in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))]


@dataclass(frozen=True)
class ProtocolComposition:
    """One protocol's latest instances, its title, and its declared tables or else its facets' rows."""

    protocol: str
    instances: int
    rows: list[FacetRow]
    tables: tuple[CompositionTable, ...] = ()
    title: str = ""


def declared_tables(engine: Engine, protocol: str) -> tuple[CompositionTable, ...]:
    """The composition tables `protocol` declares ('module:function' imported now); none declared: ()."""
    hook = PROTOCOLS.get(protocol).composition if protocol in PROTOCOLS else ""
    if not hook:
        return ()
    module, _, name = hook.partition(":")
    return tuple(getattr(importlib.import_module(module), name)(engine))


def _order(protocol: str) -> tuple[bool, str]:
    return protocol != DEFAULT_PROTOCOL, protocol


def protocol_composition(engine: Engine) -> list[ProtocolComposition]:
    """Every protocol with instances, the default protocol first, then by name: its declared tables, or its facets'
    rows (the instances' attributes and metadata are read only for the protocols counted by facet)."""
    counts = _latest_counts(engine)
    order = sorted(counts, key=_order)
    tables = {p: declared_tables(engine, p) for p in order}
    grouped = _latest_rows(engine, [p for p in order if not tables[p]])
    parts = []
    for p in order:
        rows = [] if tables[p] else [r for facet in FACETS.get(p, OTHER_FACETS) for r in facet_rows(p, grouped[p], facet)]
        parts.append(ProtocolComposition(p, counts[p], rows, tables[p],
                                         PROTOCOLS.get(p).title if p in PROTOCOLS else p))
    return parts


def _cell(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:.3f}" if abs(value) < 1 else f"{value:.2f}"
    return str(value)


def composition_text(table: CompositionTable) -> str:
    """A declared composition table as plain text: its title, then its columns right-aligned under their names."""
    columns = list(table.rows[0]) if table.rows else [table.key]
    cells = [[_cell(row.get(c, "")) for c in columns] for row in table.rows]
    widths = [max(len(c), *(len(r[i]) for r in cells)) + 2 for i, c in enumerate(columns)]
    lines = [table.title, "".join(c.rjust(w) for c, w in zip(columns, widths, strict=True))]
    lines += ["".join(v.rjust(w) for v, w in zip(r, widths, strict=True)) for r in cells]
    return "\n".join(lines)
