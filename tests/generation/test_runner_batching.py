"""Group commits batch the runner's per-call writes: Merged units of one function run as one call per group, and the
budget reservations of a group take two statements when the budget covers them all, else one by one as before."""

from __future__ import annotations

import asyncio

import pytest
from sqlalchemy import event
from sqlmodel import Session, select

from core.generation import runner, runs
from core.store.models import Response, Run
from core.store.writes import GroupWriter, Merged
from tests.factories import add_model, seed_instances


@pytest.mark.parametrize("items, calls, outcomes", [
    pytest.param([1, 2, 3], [[1, 2, 3]], [10, 20, 30], id="one-call-for-the-group"),
    pytest.param([1, 0, 3], [[1, 0, 3], [1], [0], [3]], [10, "ZeroDivisionError", 30],
                 id="a-failing-item-fails-alone"),
])
def test_merged_units_run_once_per_group(engine, items, calls, outcomes):
    seen: list[list[int]] = []

    def apply(conn, batch: list[int]) -> list[int]:
        seen.append(list(batch))
        return [10 * (item // item) * item for item in batch]

    async def main() -> list:
        writer = GroupWriter(engine)
        return await asyncio.gather(*(writer.commit(Merged(apply, item)) for item in items), return_exceptions=True)

    results = asyncio.run(main())
    assert seen == calls
    assert [type(r).__name__ if isinstance(r, BaseException) else r for r in results] == outcomes


@pytest.mark.parametrize("budget, accepted, statements", [
    pytest.param(None, 4, 2, id="no-budget-two-statements"),
    pytest.param(4.5, 4, 2, id="budget-covers-all-two-statements"),
    pytest.param(2.5, 2, None, id="budget-covers-two-first-come"),
    pytest.param(0.5, 0, None, id="budget-covers-none"),
])
def test_reservations_of_a_group(engine, budget, accepted, statements):
    seed_instances(engine, 4)
    add_model(engine, "gpt-x", "openai")
    run_id = runs.create_run(engine, runs.RunOptions(models=["gpt-x"], budget_usd=budget))
    with Session(engine) as session:
        ids = sorted(session.exec(select(Response.id).where(Response.run_id == run_id)))
    execution = runner._Execution(engine, run_id, runs.run_options(engine, run_id), None, None)
    execution.writer = GroupWriter(engine)
    executed: list[str] = []
    listener = lambda *args: executed.append(args[2])  # noqa: E731 - (conn, cursor, statement, ...)
    event.listen(engine, "before_cursor_execute", listener)

    async def main() -> list[tuple[bool, float]]:
        return await asyncio.gather(*(execution.writer.commit(Merged(execution._try_reserve_many, (i, 1.0)))
                                      for i in ids))

    try:
        results = asyncio.run(main())
    finally:
        event.remove(engine, "before_cursor_execute", listener)
    assert [ok for ok, _ in results] == [True] * accepted + [False] * (4 - accepted)
    assert all(in_flight == accepted for ok, in_flight in results if not ok)
    if statements is not None:
        assert len(executed) == statements
    with Session(engine) as session:
        assert session.get(Run, run_id).reserved_usd == pytest.approx(accepted)
        reserved = [session.get(Response, i).reserved_usd for i in ids]
    assert reserved == [1.0] * accepted + [None] * (4 - accepted)
