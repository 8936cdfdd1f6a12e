"""One live read of the runs per results-page render (readmodel.run_states) gives the same first-start banner
(first_start_runs) and the same runs being worked on (active_runs, the live refresh's key) as their own reads of the
run table, and a run written after a read is in the next one; on the active backend."""

from __future__ import annotations

import os

import pytest
from sqlmodel import Session

from core.analysis import readmodel
from core.generation.models_admin import active_runs
from core.store.db import make_engine
from core.store.models import Run

pytestmark = pytest.mark.db

FAILED = "RuntimeError: disk full"
RUNS = {  # name -> (status, config)
    "first start to run": ("pending", {"first_start": True}),
    "first start failed": ("failed", {"first_start": True, "first_start_failed": FAILED}),
    "generating in this process": ("running", {"pid": os.getpid(), "pipeline": {"stage": "generation"}}),
    "running, no process": ("running", {}),
    "done": ("done", {"first_start": True, "scored": True}),
}


@pytest.fixture
def runs(session_url_factory):
    engine = make_engine(session_url_factory())
    with Session(engine) as session:
        rows = [Run(name=name, status=status, config=config) for name, (status, config) in RUNS.items()]
        session.add_all(rows)
        session.commit()
        ids = {row.name: int(row.id) for row in rows}
    yield engine, ids
    engine.dispose()


def test_one_read_of_the_runs_serves_the_banner_and_the_live_refresh(runs) -> None:
    engine, ids = runs
    states = readmodel.run_states(engine)
    assert readmodel.first_start_runs(engine, states) == readmodel.first_start_runs(engine)
    assert active_runs(engine, states) == active_runs(engine) == sorted(
        [ids["first start to run"], ids["generating in this process"]])
    running, failed = readmodel.first_start_runs(engine, states)
    assert [r.id for r in running] == [ids["first start to run"]]
    assert failed == [(ids["first start failed"], FAILED)]


def test_a_run_started_after_a_read_is_in_the_next_one(runs) -> None:
    engine, _ = runs
    before = readmodel.run_states(engine)
    with Session(engine) as session:
        run = Run(name="started", status="running", config={"pid": os.getpid(), "pipeline": {"stage": "scoring"}})
        session.add(run)
        session.commit()
        new = int(run.id)
    assert new not in active_runs(engine, before)
    assert new in active_runs(engine, readmodel.run_states(engine))
