"""Concurrent writers on both backends (threads released together, a pooled connection each): the run cache's
insert-ignore stores one answer per key, one of many racing executors takes a run's lease, and budget reservations
never overspend (conditional UPDATE: no lost update), and a PostgreSQL deadlock is retried. Label submits racing on
one token: tests/review."""

from __future__ import annotations

import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest
from sqlalchemy import func, select, update
from sqlmodel import Session

from core.generation.runner import RUN_RESERVE_WITHIN
from core.store.db import insert_ignore_statement, make_engine
from core.store.leases import LeaseHeld, take_lease
from core.store.models import LLMCall, Run
from core.store.writes import with_lock_patience

THREADS = 12
BACKENDS = [pytest.param("sqlite_url_factory", id="sqlite"), pytest.param("postgres_url_factory", id="postgresql")]


@pytest.fixture(params=BACKENDS)
def engine(request):
    """A fresh migrated database on each backend, its pool large enough for every thread at once."""
    eng = make_engine(request.getfixturevalue(request.param)())
    yield eng
    eng.dispose()


def race(work: Callable[[int], Any], threads: int = THREADS) -> list[Any]:
    """work(0..threads-1) in as many threads, all started at the same moment; their results in order."""
    barrier = threading.Barrier(threads)

    def run(i: int) -> Any:
        barrier.wait()
        return work(i)

    with ThreadPoolExecutor(threads) as pool:
        return list(pool.map(run, range(threads)))


@pytest.mark.parametrize("same_key, rows", [pytest.param(True, 1, id="one-key"),
                                            pytest.param(False, THREADS, id="a-key-each")])
def test_cache_insert_ignore_stores_one_answer_per_key(engine, same_key, rows):
    statement = insert_ignore_statement(engine, LLMCall.__table__)

    def insert(i: int) -> int:
        key = "k" if same_key else f"k{i}"
        with engine.begin() as conn:
            return conn.execute(statement.values(key=key, provider="p", model_name="m", request={}, text=f"answer {i}",
                                                 purpose="generate")).rowcount

    inserted = race(insert)
    assert sorted(set(inserted)) == ([0, 1] if same_key else [1]) and sum(inserted) == rows
    with Session(engine) as session:
        stored = dict(session.execute(select(LLMCall.key, LLMCall.text)).all())
    assert len(stored) == rows
    if same_key:
        assert stored["k"] == f"answer {inserted.index(1)}", "the first writer's answer is the one kept"


def test_one_of_many_racing_executors_takes_the_lease(engine):
    def take(i: int) -> str | None:
        try:
            return take_lease(engine, "run:1", f"executor {i}").token
        except LeaseHeld:
            return None

    tokens = race(take)
    assert len([t for t in tokens if t]) == 1, tokens


@pytest.mark.parametrize("budget, amount, granted", [
    pytest.param(5.0, 1.0, 5, id="five-of-twelve"),
    pytest.param(0.5, 1.0, 0, id="none-over-budget"),
    pytest.param(100.0, 1.0, THREADS, id="all-within-budget"),
])
def test_budget_reservations_never_overspend(engine, budget, amount, granted):
    with Session(engine) as session:
        run = Run(name="race", status="running", budget_usd=budget)
        session.add(run)
        session.commit()
        run_id = run.id

    def reserve(_: int) -> int:
        with engine.begin() as conn:
            return conn.execute(RUN_RESERVE_WITHIN, {"p_id": run_id, "p_amount": amount, "p_limit": budget}).rowcount

    assert sum(race(reserve)) == granted
    with Session(engine) as session:
        assert session.execute(select(func.sum(Run.reserved_usd))).scalar_one() == pytest.approx(granted * amount)


def test_a_postgresql_deadlock_is_retried_not_raised(postgres_url_factory):
    eng = make_engine(postgres_url_factory())
    with Session(eng) as session:
        session.add_all([Run(name="a"), Run(name="b")])
        session.commit()
    first_attempt = threading.Barrier(2, timeout=30)
    attempts = [0, 0]

    def cross(i: int) -> None:
        def unit(conn) -> None:
            attempts[i] += 1
            conn.execute(update(Run).where(Run.id == 1 + i).values(message=f"writer {i}"))
            if attempts[i] == 1:
                first_attempt.wait()
            conn.execute(update(Run).where(Run.id == 2 - i).values(message=f"writer {i}"))

        with_lock_patience(eng, unit, patience=30)

    race(cross, threads=2)
    eng.dispose()
    assert sorted(attempts) == [1, 2], "one writer was chosen as the deadlock victim and retried"
