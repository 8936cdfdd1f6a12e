"""PROTOCOL_JOIN_SQL (has_protocol: the instance carries a knowledge-protocol constraint that applies in its mode) joins
the response's instance by primary key: on a synthetic set with such constraints applying in every mode, in their own
mode only, in another mode only, and twice on one instance, it gives every response exactly the flag the former
derived table of such instances gave, one row per response, on the active backend."""

from __future__ import annotations

import pytest
from sqlalchemy import text

from bench.make_synthetic_results import make_results
from core.scoring.summaries import HAS_PROTOCOL_SQL, PROTOCOL_JOIN_SQL
from core.store.db import make_engine

pytestmark = pytest.mark.db

# the formulation before the primary-key join (a DISTINCT derived table of the instances carrying one), as reference
DERIVED_JOIN_SQL = """
LEFT JOIN (SELECT DISTINCT c.instance_id FROM "constraint" c JOIN instance ci ON ci.id = c.instance_id
           WHERE c.category = 'knowledge_protocol' AND (c.precondition IS NULL OR c.precondition = ci.mode)) p
       ON p.instance_id = r.instance_id"""
DERIVED_HAS_SQL = "CASE WHEN p.instance_id IS NULL THEN 0 ELSE 1 END"
FLAGS_SQL = "SELECT r.id, {has} FROM response r JOIN instance i ON i.id = r.instance_id {join} ORDER BY r.id"
COPIED = "instance_id, position, cid, text, category, sub_dimension, judge_method, checker_id, checker_kwargs, precondition"
PRECONDITIONS = [  # every third knowledge-protocol constraint: applies in every mode, its own mode, another mode
    pytest.param("NULL", id="every-mode"),
    pytest.param("(SELECT i.mode FROM instance i WHERE i.id = instance_id)", id="its-own-mode"),
    pytest.param("'no-such-mode'", id="another-mode"),
]


@pytest.fixture
def engine(backend_url_factory):
    url = backend_url_factory()
    make_results(url, n_models=2, n_instances=60, seed=3, with_baselines=False)
    engine = make_engine(url)
    yield engine
    engine.dispose()


def _flags(engine, has: str, join: str) -> list[tuple[int, int]]:
    with engine.connect() as conn:
        return [tuple(row) for row in conn.execute(text(FLAGS_SQL.format(has=has, join=join)))]


@pytest.mark.parametrize("precondition", PRECONDITIONS)
def test_the_key_join_flags_what_the_derived_table_flagged(engine, precondition: str) -> None:
    with engine.begin() as conn:
        conn.execute(text(f"""UPDATE "constraint" SET precondition = {precondition}
                              WHERE category = 'knowledge_protocol' AND id % 3 = 0"""))
        conn.execute(text(f"""INSERT INTO "constraint" (id, {COPIED})
                              SELECT id + (SELECT MAX(id) FROM "constraint"), {COPIED.replace("cid", "cid || 'b'")}
                              FROM "constraint" WHERE category = 'knowledge_protocol' AND id % 5 = 0"""))
    mine, reference = _flags(engine, HAS_PROTOCOL_SQL, PROTOCOL_JOIN_SQL), _flags(engine, DERIVED_HAS_SQL,
                                                                                   DERIVED_JOIN_SQL)
    with engine.connect() as conn:
        responses = int(conn.execute(text("SELECT COUNT(*) FROM response")).scalar_one())
    assert len(mine) == responses
    assert {flag for _, flag in reference} == {0, 1}
    assert mine == reference
