"""Reading never writes: every read-model function and results page leaves the database untouched."""

from __future__ import annotations

import pytest
from sqlalchemy import event

from bench.make_synthetic_results import make_results
from core.analysis import picker, readmodel
from core.store.db import get_engine

WRITES = ("INSERT", "UPDATE", "DELETE", "REPLACE", "CREATE", "DROP", "ALTER")


@pytest.fixture(scope="module")
def stale_db(session_url_factory) -> str:
    """A results set whose summaries are stale for one judge (verdicts added after summarising)."""
    url = session_url_factory()
    make_results(url, n_models=3, n_instances=60, seed=3, extra_judges=("llm:late-judge",))
    engine = get_engine(url)
    with engine.begin() as conn:
        conn.exec_driver_sql("DELETE FROM response_score_state WHERE judge = 'llm:late-judge'")
    return url


def _statements(engine) -> list[str]:
    seen: list[str] = []
    event.listen(engine, "before_cursor_execute", lambda conn, cursor, sql, *a: seen.append(sql))
    return seen


@pytest.mark.parametrize("judge", ["heuristic", "llm:late-judge"])
def test_read_model_issues_no_write(stale_db, judge) -> None:
    engine = get_engine(stale_db)
    seen = _statements(engine)
    scores = readmodel.load_scores(engine, [1], judge)
    models = readmodel.model_catalog(engine)
    board = readmodel.leaderboard(scores, models)
    readmodel.load_failure_counts(engine, [1], judge)
    readmodel.constraint_verdicts(engine, [1], judge)
    readmodel.run_report(engine, 1, judge)
    readmodel.scored_runs(engine)
    picker.rank(scores, models, picker.PickSpec())
    assert not board.empty and seen
    writes = [s for s in seen if s.lstrip().upper().startswith(WRITES)]
    assert writes == []
