"""core.store.db.bulk_insert writes the rows an executemany INSERT writes (a COPY on PostgreSQL): the same values, ids
from the same sequence positions, JSON serialised alike and Python column defaults filled in for missing keys. On the
active backend (SQLite: it is the INSERT)."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime

import pytest
from sqlalchemy import Table, func, insert, select, text
from sqlalchemy.engine import Connection, Engine

from bench.make_synthetic_results import make_results
from core.store.db import bulk_insert, make_engine
from core.store.models import Document, Instance, Verdict

pytestmark = pytest.mark.db

WRITTEN_AT = datetime(2026, 12, 7, 10, 0, 0, 123456, tzinfo=UTC)


@pytest.fixture(scope="module")
def results(session_url_factory):
    url = session_url_factory()
    make_results(url, n_models=2, n_instances=20, seed=5, with_baselines=False)
    engine = make_engine(url)
    yield engine
    engine.dispose()


def verdict_copies(conn: Connection) -> list[dict]:
    """Copies of every stored verdict under another judge, without ids (NULLs, JSON details, timestamps)."""
    table = Verdict.__table__
    stored = conn.execute(select(*[c for c in table.columns if c.name != "id"])).all()
    return [dict(r._mapping, judge="copied", created_at=WRITTEN_AT) for r in stored]


def instances_with_defaults(conn: Connection) -> list[dict]:
    """New instances without attributes, reference, protocol, status or is_latest (their column defaults)."""
    return [{"uid": f"bulk-{i}", "version": 1, "domain_id": 1, "query": f"Question {i}?", "mode": None,
             "origin": "natural", "meta": {"n": i, "tags": ["a", None], "nested": {"x": 0.1}},
             "created_at": WRITTEN_AT, "created_by": "test"} for i in range(40)]


def documents_without_ids(conn: Connection) -> list[dict]:
    """New documents without id or variant, text with tabs, newlines and backslashes (COPY's escapes)."""
    return [{"instance_id": 1, "position": 10 + i, "doc_uid": f"bulk-doc-{i}", "title": f"Title {i}",
             "text": f"line one\tcell\\n literal\nline two {i} é", "source": "test", "content_type": "text",
             "role": "supporting", "conflict_group": None, "conflict_summary": None} for i in range(40)]


def _next_id_from_max(conn: Connection, table: Table) -> int:
    """The largest id; on PostgreSQL the id sequence is moved back to it (a rolled-back write leaves it advanced)."""
    newest = int(conn.execute(select(func.coalesce(func.max(table.c.id), 0))).scalar_one())
    if conn.dialect.name == "postgresql":
        conn.execute(text("SELECT setval(pg_get_serial_sequence(:t, 'id'), :v, true)"),
                     {"t": table.name, "v": max(newest, 1)})
    return newest


def _written(engine: Engine, table: Table, make_rows: Callable[[Connection], list[dict]],
             write: Callable[[Connection, Table, list[dict]], object]) -> list[tuple]:
    """The rows `write` adds to `table` (read back, then rolled back)."""
    with engine.connect() as conn, conn.begin() as transaction:
        newest = _next_id_from_max(conn, table)
        write(conn, table, make_rows(conn))
        added = [tuple(r) for r in conn.execute(select(table).where(table.c.id > newest).order_by(table.c.id))]
        transaction.rollback()
    return added


def _executemany(conn: Connection, table: Table, rows: list[dict]) -> None:
    conn.execute(insert(table), rows)


@pytest.mark.parametrize(("table", "make_rows"), [
    pytest.param(Verdict.__table__, verdict_copies, id="verdicts-copied"),
    pytest.param(Instance.__table__, instances_with_defaults, id="instances-with-column-defaults"),
    pytest.param(Document.__table__, documents_without_ids, id="documents-with-escapes"),
])
def test_bulk_insert_writes_the_rows_an_insert_writes(results, table: Table,
                                                     make_rows: Callable[[Connection], list[dict]]) -> None:
    inserted = _written(results, table, make_rows, _executemany)
    copied = _written(results, table, make_rows, bulk_insert)
    with results.connect() as conn:
        assert len(inserted) == len(make_rows(conn)) > 0
    assert copied == inserted
