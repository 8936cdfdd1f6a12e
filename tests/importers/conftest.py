"""Shared helpers of the importer tests: where the shared data slices and fixtures are, and how to write slices."""

from __future__ import annotations

import csv
import io
import json
import textwrap
from pathlib import Path

import pytest
from sqlmodel import Session, func, select

from core.store.db import make_engine
from core.store.models import Constraint, Document, Domain, Instance

SHARED = Path(__file__).resolve().parents[2] / ".." / "shared"
FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "importers"


def shared(relative: str) -> Path:
    """A file of the shared data folder next to the repository; a clear failure when it is missing."""
    path = SHARED / relative
    if not path.exists():
        pytest.fail(f"shared data not found at {path.resolve()} (the tests read ../shared/ next to the repository)")
    return path


def write_records(path: Path, records: list, layout: str) -> list[int]:
    """Write records as JSONL, a pretty JSON array or header-less CSV; returns the line each record starts on."""
    if layout == "jsonl":
        path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records), encoding="utf-8")
        return list(range(1, len(records) + 1))
    if layout == "csv":
        chunks = []
        for row in records:
            buffer = io.StringIO()
            csv.writer(buffer, lineterminator="\n").writerow(row)
            chunks.append(buffer.getvalue())
        path.write_text("".join(chunks), encoding="utf-8")
        return [1 + sum(c.count("\n") for c in chunks[:i]) for i in range(len(chunks))]
    items = [textwrap.indent(json.dumps(r, indent=4, ensure_ascii=False), "    ") for r in records]
    path.write_text("[\n" + ",\n".join(items) + "\n]\n", encoding="utf-8")
    return [2 + sum(item.count("\n") + 1 for item in items[:i]) for i in range(len(items))]


@pytest.fixture
def second_engine(backend_url_factory):
    """Another fresh migrated database, for import -> export -> import round trips."""
    engine = make_engine(backend_url_factory())
    yield engine
    engine.dispose()


def table_counts(engine) -> dict[str, int]:
    """Rows per table the import writes (instances, constraints, documents, domains)."""
    with Session(engine) as session:
        return {model.__name__: session.exec(select(func.count()).select_from(model)).one()
                for model in (Instance, Constraint, Document, Domain)}
