"""The results chrome checks the stored summaries' staleness against the trigger-kept verdict counts (one small read)
and reads the first-start runs through a plain connection; a change to the data still shows on the next render:
summaries marked stale (a migration, or a rebuild) are computed from the verdicts, a new verdict is counted, a deleted
one is no longer, and a newly configured or failed first-start run gets its banner."""

from __future__ import annotations

import re
from collections.abc import Callable

import pytest
import streamlit as st
from sqlalchemy import create_engine, text
from sqlalchemy.engine import Engine
from sqlmodel import Session

from core.scoring.summaries import rebuild_summaries, stale_summary_runs
from core.store.first_start_state import FAILED_KEY
from core.store.models import Run, Verdict
from tests.pages import state_counts as sc
from tests.pages.test_dashboards import REPO

PAGE = str(REPO / "pages" / "constraint_errors.py")
JUDGE = "heuristic"
BEHIND = re.compile(r"n = ([\d,]+) constraint verdicts · ([\d,]+) decided \(([\d,]+) failed\)")


@pytest.fixture(scope="module")
def results_url(session_url_factory):
    return sc.synthetic_results(session_url_factory())


@pytest.fixture
def engine(results_url, monkeypatch):
    monkeypatch.setenv("GAUNTLET_DATABASE_URL", results_url)
    monkeypatch.setenv("GAUNTLET_FIRST_START", "0")
    engine = create_engine(results_url)
    yield engine
    rebuild_summaries(engine, 1, JUDGE)  # stored summaries current again for the next case
    st.cache_data.clear()
    engine.dispose()


def behind_the_chart() -> tuple[int, int, int]:
    """(verdicts, decided, failed) under the Constraint errors chart, opened by an analyst."""
    at = sc.open_page(PAGE)
    texts = [c.value for c in at.caption if c.value.startswith("Behind the chart: ")]
    verdicts, decided, failed = (int(n.replace(",", "")) for n in BEHIND.search(texts[0]).groups())
    return verdicts, decided, failed


def _sql(engine: Engine, *statements: str) -> None:
    with engine.begin() as conn:
        for statement in statements:
            conn.execute(text(statement))


# stored rows that no longer match: per domain, and summed over the domains (the page's opening view reads these)
CORRUPT_STORED = tuple(f"UPDATE {table} SET failed = 0, decided = verdicts"
                       for table in ("failure_count", "failure_mode_count"))


def _mark_stale(engine: Engine) -> None:
    """As migration 0029 does: the build states go, so every run's summaries count as stale (stored rows wrong)."""
    _sql(engine, *CORRUPT_STORED, "DELETE FROM response_score_state")


def _corrupt_only(engine: Engine) -> None:
    """The control: stored rows changed behind the build states' back are read as they are (the test can fail)."""
    _sql(engine, *CORRUPT_STORED)


def _add_failed_verdict(engine: Engine) -> None:
    """A re-score adds one failed, decided constraint verdict to run 1 (the data version changes)."""
    cols = [c.name for c in Verdict.__table__.columns if c.name != "id"]
    values = {"status": "'ok'", "passed": "FALSE"}
    _sql(engine, f"INSERT INTO verdict ({', '.join(cols)}) SELECT {', '.join(values.get(c, c) for c in cols)} "
                 "FROM verdict WHERE id = (SELECT MIN(id) FROM verdict WHERE metric = 'constraint' "
                 f"AND judge = '{JUDGE}' AND run_id = 1)")


def _delete_failed_verdict(engine: Engine) -> None:
    """A deletion takes one failed, decided constraint verdict out of run 1 (not its newest: the count changes)."""
    _sql(engine, "DELETE FROM verdict WHERE id = (SELECT MIN(id) FROM verdict WHERE metric = 'constraint' "
                 f"AND judge = '{JUDGE}' AND run_id = 1 AND status = 'ok' AND passed = FALSE)")


def _one_failure_less(before: tuple[int, int, int]) -> tuple[int, int, int]:
    verdicts, decided, failed = before
    return verdicts - 1, decided - 1, failed - 1


def _unchanged(before: tuple[int, int, int]) -> tuple[int, int, int]:
    return before


def _one_more_failure(before: tuple[int, int, int]) -> tuple[int, int, int]:
    verdicts, decided, failed = before
    return verdicts + 1, decided + 1, failed + 1


def _as_stored(before: tuple[int, int, int]) -> tuple[int, int, int]:
    verdicts, _, _ = before
    return verdicts, verdicts, 0


CASES = [
    pytest.param(_mark_stale, _unchanged, id="marked-stale-by-a-migration"),
    pytest.param(_corrupt_only, _as_stored, id="control-stored-rows-are-read"),
    pytest.param(_add_failed_verdict, _one_more_failure, id="re-scored"),
    pytest.param(_delete_failed_verdict, _one_failure_less, id="deleted"),
]


@pytest.mark.parametrize(("change", "expected"), CASES)
def test_a_data_change_shows_on_the_next_render(engine, change: Callable, expected: Callable) -> None:
    rebuild_summaries(engine, 1, JUDGE)
    before = behind_the_chart()  # the staleness answer is now kept for this data version
    change(engine)
    st.cache_data.clear()  # another page or session, or an evicted entry: the page computes its counts again
    assert behind_the_chart() == expected(before)


def test_the_staleness_answer_follows_the_build_states(engine) -> None:
    rebuild_summaries(engine, 1, JUDGE)
    assert stale_summary_runs(engine, [1], JUDGE) == []
    _sql(engine, "DELETE FROM response_score_state")
    assert stale_summary_runs(engine, [1], JUDGE) == [1]  # same verdicts, build states gone
    rebuild_summaries(engine, 1, JUDGE)
    assert stale_summary_runs(engine, [1], JUDGE) == []


def _first_start_run(engine: Engine, config: dict, message: str) -> None:
    with Session(engine) as session:
        session.add(Run(name="first start", status="generating", config=config, message=message))
        session.commit()


BANNERS = [
    pytest.param({"first_start": True}, "info", "is being run through", id="first-start-running"),
    pytest.param({"first_start": True, FAILED_KEY: "RuntimeError: disk full"}, "error", "First start failed",
                 id="first-start-failed"),
]


@pytest.mark.parametrize(("config", "kind", "banner"), BANNERS)
def test_a_newly_configured_first_start_run_shows_on_the_next_render(engine, config, kind, banner) -> None:
    first = sc.open_page(PAGE)
    assert not [e.value for e in getattr(first, kind) if banner in e.value]
    _first_start_run(engine, config, "generating 3 of 40")
    try:
        shown = [e.value for e in getattr(sc.open_page(PAGE), kind) if banner in e.value]
    finally:
        _sql(engine, "DELETE FROM run WHERE name = 'first start'")
    assert shown and ("generating 3 of 40" in shown[0] if kind == "info" else "disk full" in shown[0])
