"""readmodel.run_judges by index seeks (every results page asks on every render) names exactly the judges with a
verdict in the chosen runs: LLM judges first, 'rule' only when nothing else judged, nothing for runs without
verdicts, and never a judge of another run; on the active backend."""

from __future__ import annotations

import pytest
from sqlalchemy import text

from bench.make_synthetic_results import make_results
from core.analysis import readmodel
from core.store.db import make_engine

pytestmark = pytest.mark.db


@pytest.fixture(scope="module")
def engine(session_url_factory):
    url = session_url_factory()
    make_results(url, n_models=1, n_instances=12, seed=1, with_baselines=False, extra_judges=("llm:b", "llm:a"))
    eng = make_engine(url)
    with eng.begin() as conn:
        for run in (2, 3):
            conn.execute(text("INSERT INTO run (id, name, status, config, code_version, spent_usd, message, created_at) "
                              "SELECT :run, name, status, config, code_version, spent_usd, message, created_at "
                              "FROM run WHERE id = 1"), {"run": run})
        conn.execute(text("INSERT INTO verdict (response_id, run_id, judge, metric, constraint_id, status, passed, "
                          "value, method, reason, details, calls, cost_usd, created_at) SELECT response_id, 2, judge, "
                          "metric, constraint_id, status, passed, value, method, reason, details, calls, cost_usd, "
                          "created_at FROM verdict WHERE run_id = 1 AND judge = 'rule'"))
    yield eng
    eng.dispose()


@pytest.mark.parametrize(("runs", "judges"), [
    pytest.param([1], ["llm:a", "llm:b", "heuristic"], id="llm-first"),
    pytest.param([2], ["rule"], id="rule-only"),
    pytest.param([3], [], id="no-verdicts"),
    pytest.param([2, 3], ["rule"], id="rule-and-empty"),
    pytest.param([1, 2], ["llm:a", "llm:b", "heuristic"], id="both"),
    pytest.param([], [], id="no-runs"),
])
def test_run_judges_names_the_runs_judges(engine, runs: list[int], judges: list[str]) -> None:
    assert readmodel.run_judges(engine, runs) == judges
