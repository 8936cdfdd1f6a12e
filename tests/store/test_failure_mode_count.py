"""failure_mode_count (migration 0032) is failure_count summed over the domains, for every run and judge: as the
summarise stage writes it, as the migration back-fills it, and gone with its run; on the active backend (SQLite, and
PostgreSQL in its pass). Figure 4's reads from it equal the pandas path in tests/analysis/test_failure_view.py."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from alembic import command
from sqlalchemy import text
from sqlalchemy.engine import Engine

from bench.make_synthetic_results import make_results
from core.scoring.summaries import FAILURE_COUNT_COLUMNS, FAILURE_KEYS, rebuild_summaries
from core.store.db import alembic_config, make_engine

pytestmark = pytest.mark.db

JUDGES = ("heuristic", "llm:second")
KEYS = ", ".join(FAILURE_KEYS)


@pytest.fixture
def results(session_url_factory):
    url = session_url_factory()
    make_results(url, n_models=2, n_instances=24, seed=5, with_baselines=False, extra_judges=JUDGES[1:])  # summarised
    engine = make_engine(url)
    yield engine
    engine.dispose()


def summed(engine: Engine) -> list[tuple]:
    """failure_count's rows summed over the domains, in key order."""
    sums = ", ".join(f"SUM({c})" for c in FAILURE_COUNT_COLUMNS)
    with engine.connect() as conn:
        rows = conn.execute(text(f"SELECT {KEYS}, {sums} FROM failure_count GROUP BY {KEYS} ORDER BY {KEYS}")).all()
    return [(*row[:len(FAILURE_KEYS)], *(int(n) for n in row[len(FAILURE_KEYS):])) for row in rows]


def stored(engine: Engine) -> list[tuple]:
    """failure_mode_count's rows, in key order."""
    with engine.connect() as conn:
        rows = conn.execute(text(f"SELECT {KEYS}, {', '.join(FAILURE_COUNT_COLUMNS)} FROM failure_mode_count "
                                 f"ORDER BY {KEYS}")).all()
    return [tuple(row) for row in rows]


def _rebuilt(engine: Engine) -> None:
    rebuild_summaries(engine, 1, JUDGES[0])  # its old rows go, the new ones come


def _migrated(engine: Engine) -> None:
    url = engine.url.render_as_string(hide_password=False)
    engine.dispose()
    command.downgrade(alembic_config(url), "0031")
    command.upgrade(alembic_config(url), "head")  # back-filled from failure_count
    engine.dispose()


CASES = [
    pytest.param(lambda engine: None, id="written-by-the-summarise-stage"),
    pytest.param(_rebuilt, id="rebuilt"),
    pytest.param(_migrated, id="back-filled-by-the-migration"),
]


@pytest.mark.parametrize("step", CASES)
def test_the_stored_rows_are_failure_count_summed_over_the_domains(results, step: Callable[[Engine], None]) -> None:
    step(results)
    rows = stored(results)
    assert rows == summed(results)
    assert {row[1] for row in rows} == set(JUDGES)  # every judge's rows, fewer than failure_count's
    with results.connect() as conn:
        assert len(rows) < conn.execute(text("SELECT COUNT(*) FROM failure_count")).scalar_one()
