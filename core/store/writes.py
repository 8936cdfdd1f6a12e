"""Writes that wait out a locked database: one transaction retried while SQLite or PostgreSQL reports a lock (then
DatabaseLocked), and the group commit that shares one transaction among the writes queued in one event-loop turn."""

from __future__ import annotations

import asyncio
import math
import os
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from sqlalchemy.engine import Connection, Engine
from sqlalchemy.exc import IntegrityError, OperationalError
from sqlalchemy.sql.base import Executable

from core.store.leases import LeaseLost, lease_ttl

Write = tuple[Executable, dict[str, Any]]
Unit = Callable[[Connection], Any]


@dataclass(frozen=True)
class Merged:
    """A unit that a group commit merges with the other Merged units of the same `apply`: `apply(conn, items)` runs
    once per group on all their items (in order) and returns one result per item."""

    apply: Callable[[Connection, list[Any]], list[Any]]
    item: Any


Job = list[Write] | Unit | Merged
DB_PATIENCE_ENV = "GAUNTLET_DB_PATIENCE_S"
DB_PATIENCE_S = 120.0
LOCK_RETRY_S = 0.2
GUARD_FRESH_S = 0.25  # how often a lapsed lease's guard is checked again while waiting for its heartbeat


class DatabaseLocked(RuntimeError):
    """Another process held the database's write lock longer than we wait (busy timeout, then DB_PATIENCE_S)."""


def db_patience() -> float:
    """Seconds a write keeps retrying while the database is locked ($GAUNTLET_DB_PATIENCE_S, default 120)."""
    try:
        return max(0.0, float(os.environ.get(DB_PATIENCE_ENV, DB_PATIENCE_S)))
    except ValueError:
        return DB_PATIENCE_S


RETRYABLE_SQLSTATES = frozenset({"40001", "40P01", "55P03"})  # PostgreSQL: serialization failure, deadlock, lock timeout


def is_lock_error(error: BaseException) -> bool:
    """A write that may succeed when retried: SQLite locked / busy past its busy timeout; on PostgreSQL a deadlock,
    serialization failure or lock timeout (the transaction was rolled back whole)."""
    orig = getattr(error, "orig", error)
    text = str(orig).lower()
    return isinstance(error, OperationalError) and (
        "locked" in text or "busy" in text or "lock timeout" in text
        or getattr(orig, "sqlstate", None) in RETRYABLE_SQLSTATES)


def with_lock_patience(engine: Engine, unit: Unit, patience: float | None = None, *,
                       connection: Connection | None = None) -> Any:
    """Run `unit` in one transaction (on `connection` if given, else a pooled one), retrying while the database is
    locked; DatabaseLocked after the patience."""
    deadline = time.monotonic() + (db_patience() if patience is None else patience)
    while True:
        try:
            if connection is not None:
                with connection.begin():
                    return unit(connection)
            with engine.begin() as conn:
                return unit(conn)
        except OperationalError as error:
            if not is_lock_error(error):
                raise
            if time.monotonic() >= deadline:
                raise DatabaseLocked(
                    "the database stayed locked by another process (a write lock held longer than the busy timeout "
                    f"and {db_patience():g} s of retries)") from None
            time.sleep(LOCK_RETRY_S)


class GroupWriter:
    """Group commit on the event loop: the units queued in one loop turn share one transaction (the same statement
    of several units goes as one executemany, Merged units of one function run as one call); each awaiter resumes
    only after its unit is committed, and a unit is all or nothing. A locked database is retried (db_patience), then
    every waiting unit gets DatabaseLocked. The groups share one connection (no pool checkout per commit), opened on
    the first and closed by close(). A `guard` runs first in every transaction (e.g. the lease fence): what it raises
    rolls the transaction back and reaches every unit of it."""

    def __init__(self, engine: Engine, observe: Callable[[Connection], None] | None = None,
                 guard: Callable[[Connection], float | None] | None = None) -> None:
        self.engine = engine
        self.observe = observe  # called inside each group's transaction after its writes (e.g. to read shared spend)
        self.guard = guard
        self.guarded_at = time.monotonic()  # when the guard of the last committed transaction was checked
        self.valid_until = -math.inf  # monotonic time until which the last passed guard holds (its lease's expiry)
        self._checking = self.guarded_at
        self._verdict: tuple[float, float] | None = None  # (monotonic, valid until) of the guard checked last
        self._jobs: list[tuple[Job, asyncio.Future]] = []
        self._connection: Connection | None = None

    async def confirm_guard(self) -> None:
        """Immediately before an action outside the database (a paid call): check the guard again in its own
        transaction, always (a lease taken over a moment ago, even while its holder's deadline had not passed, is
        seen: LeaseLost). A lease past its expiry on the database's clock but not taken over waits for its
        heartbeat's renewal (up to a TTL, then LeaseLost); the last check comes right before returning."""
        if self.guard is None:
            return
        await self.commit([])
        patience = time.monotonic() + lease_ttl()
        while time.monotonic() >= self.valid_until:
            if time.monotonic() >= patience:
                # One last check before giving up: a process paused past its lease's expiry (between the check and
                # this loop) learns who took the lease over (the guard's LeaseLost), or finds it renewed after all.
                await self.commit([])
                if time.monotonic() < self.valid_until:
                    return
                raise LeaseLost(f"lease expired {time.monotonic() - self.valid_until:.1f} s ago and its heartbeat "
                                "did not renew it; stopping")
            await asyncio.sleep(GUARD_FRESH_S)
            await self.commit([])

    async def write(self, statement: Executable, params: dict[str, Any]) -> None:
        """Execute `statement` with `params` and wait for the commit."""
        await self.commit([(statement, params)])

    async def commit(self, writes: Job) -> Any:
        """Commit `writes` (statements with parameters, a function of the connection or a Merged unit) atomically;
        its result."""
        loop = asyncio.get_running_loop()
        future = loop.create_future()
        if not self._jobs:
            loop.call_soon(self._flush)
        self._jobs.append((writes, future))
        return await future

    def close(self) -> None:
        """Commit anything still queued and release the connection."""
        self._flush()
        if self._connection is not None:
            self._connection.close()
            self._connection = None

    def _flush(self) -> None:
        jobs, self._jobs = self._jobs, []
        if not jobs:
            return
        if self._connection is None or self._connection.closed:
            self._connection = self.engine.connect()
        try:
            results = with_lock_patience(self.engine, lambda conn: self._apply(conn, [unit for unit, _ in jobs]),
                                         connection=self._connection)
            outcomes: list[tuple[Any, BaseException | None]] = [(result, None) for result in results]
            self.guarded_at = self._checking  # checked before a pause, if any: its locks held until the commit
            self._hold_verdict()
        except DatabaseLocked as locked:
            outcomes = [(None, locked)] * len(jobs)
        except Exception:  # noqa: BLE001 - one bad unit must not sink the others: retry them one by one
            outcomes = [commit_one(self.engine, unit, self.guard) for unit, _ in jobs]
        for (_, future), (result, error) in zip(jobs, outcomes, strict=True):
            _settle(future, result, error)

    def _hold_verdict(self) -> None:
        """The guard passed and committed: valid until its lease expires (the seconds left on the database's clock,
        counted from the check on the local monotonic clock, which keeps running while the process is paused), or
        for good when it named no expiry."""
        if self.guard is not None:
            self.valid_until = math.inf if self._verdict is None else self._verdict[0] + self._verdict[1]

    def _apply(self, conn: Connection, units: list[Job]) -> list[Any]:
        if self.guard is not None:
            self._checking = time.monotonic()
            left = self.guard(conn)
            self._verdict = None if left is None else (self._checking, float(left))
        batches: dict[int, tuple[Executable, list[dict[str, Any]]]] = {}
        merged: dict[Callable[[Connection, list[Any]], list[Any]], list[tuple[int, Any]]] = {}
        for index, unit in enumerate(units):
            if isinstance(unit, Merged):
                merged.setdefault(unit.apply, []).append((index, unit.item))
            for statement, params in unit if isinstance(unit, list) else ():
                batches.setdefault(id(statement), (statement, []))[1].append(params)
        for statement, group in batches.values():
            conn.execute(statement, group)
        results = [None if isinstance(unit, (list, Merged)) else unit(conn) for unit in units]
        for apply, entries in merged.items():
            for (index, _), result in zip(entries, apply(conn, [item for _, item in entries]), strict=True):
                results[index] = result
        if self.observe is not None:
            self.observe(conn)
        return results


def _run_unit(conn: Connection, unit: Job) -> Any:
    if isinstance(unit, Merged):
        return unit.apply(conn, [unit.item])[0]
    if not isinstance(unit, list):
        return unit(conn)
    for statement, params in unit:
        conn.execute(statement, params)
    return None


def _guarded_unit(conn: Connection, unit: Job, guard: Callable[[Connection], float | None] | None) -> Any:
    if guard is not None:
        guard(conn)
    return _run_unit(conn, unit)


def commit_one(engine: Engine, unit: Job,
               guard: Callable[[Connection], float | None] | None = None) -> tuple[Any, BaseException | None]:
    """Commit one unit on its own (after its group failed): (result, None), or (None, the error) to hand on."""
    try:
        return with_lock_patience(engine, lambda conn: _guarded_unit(conn, unit, guard)), None
    except IntegrityError as error:
        if isinstance(unit, list) and len(unit) == 1:
            return None, None  # a lone cache row that already exists (dialects without insert-or-ignore)
        return None, error
    except Exception as error:  # noqa: BLE001 - handed to the awaiting coroutine
        return None, error


def _settle(future: asyncio.Future, result: Any, error: BaseException | None) -> None:
    if future.done():
        return
    if error is None:
        future.set_result(result)
    else:
        future.set_exception(error)
