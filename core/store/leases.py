"""Leases: one live owner per run (and per run and judge when scoring), taken atomically, renewed by heartbeat,
taken over when stale, and the fences every owner's write checks.

Every lease time (taken, renewed, expired, time left) is read on the database's clock, never the local one: hosts
whose clocks disagree still agree on when a lease lapses."""

from __future__ import annotations

import os
import socket
import time
import uuid
from collections.abc import Iterable
from dataclasses import dataclass, replace
from typing import Any

from sqlalchemy import Float, bindparam, cast, extract, func, update
from sqlalchemy.engine import Engine
from sqlalchemy.sql.elements import ColumnElement
from sqlmodel import select

from core.store.db import insert_ignore_statement, table_of
from core.store.models import Lease

LEASES = table_of(Lease)
LEASE_TTL_ENV = "GAUNTLET_LEASE_TTL_S"
LEASE_TTL_S = 30.0
LEASE_POLL_S = 0.5


class LeaseHeld(RuntimeError):
    """Another live executor holds the lease; the message names it."""


class LeaseLost(LeaseHeld):
    """A write was refused: the lease it was fenced by was taken over (the message names the new owner)."""


@dataclass(frozen=True)
class Holding:
    """A lease this process holds: renew and release it with its token; its writes are fenced by its generation."""

    name: str
    token: str
    owner: str
    generation: int = 1

    @property
    def fence(self) -> Fence:
        """The (lease name, generation) every write under this holding is checked against."""
        return self.name, self.generation


Fence = tuple[str, int]  # (lease name, generation): a holding's fencing token, shareable with worker processes
FENCE = (update(LEASES).where(LEASES.c.name == bindparam("p_name"), LEASES.c.generation == bindparam("p_generation"))
         .values(generation=LEASES.c.generation).returning(LEASES.c.expires_at))
UNIX_EPOCH_JULIAN_DAY = 2440587.5


def db_clock(dialect: str) -> ColumnElement[float]:
    """The database's current time as Unix seconds (SQLite: julianday('now'), millisecond precision; PostgreSQL:
    clock_timestamp(), the wall clock, not the transaction's start)."""
    if dialect == "postgresql":
        return cast(extract("epoch", func.clock_timestamp()), Float)
    return (func.julianday("now") - UNIX_EPOCH_JULIAN_DAY) * 86400.0


def db_now(conn: Any) -> float:
    """The database's current time (Unix seconds) on connection `conn`."""
    return float(conn.execute(select(db_clock(conn.dialect.name))).scalar_one())


def lease_ttl() -> float:
    """Seconds a lease lives without a heartbeat ($GAUNTLET_LEASE_TTL_S, default 30)."""
    try:
        return max(0.5, float(os.environ.get(LEASE_TTL_ENV, LEASE_TTL_S)))
    except ValueError:
        return LEASE_TTL_S


def run_lease(run_id: int) -> str:
    """The lease name of executing run `run_id`."""
    return f"run:{run_id}"


def pid_alive(pid: int) -> bool:
    """Whether process `pid` exists on this host and is not a zombie."""
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:
        with open(f"/proc/{pid}/stat", encoding="utf-8") as fh:
            return fh.read().rsplit(")", 1)[1].split()[0] != "Z"
    except (OSError, IndexError):
        return True


def _stale(row: Any, now: float) -> bool:
    """A holding that lapsed (`now` on the database's clock) or whose process is gone on this host."""
    return row.expires_at < now or (row.host == socket.gethostname() and not pid_alive(row.pid))


def lease_holder(engine: Engine, name: str) -> Any | None:
    """The live holding of lease `name` (owner, pid, host, expires_at), or None when free or stale."""
    with engine.connect() as conn:
        row = conn.execute(LEASES.select().where(LEASES.c.name == name)).first()
        now = db_now(conn)
    return None if row is None or _stale(row, now) else row


def lease_subject(name: str) -> str:
    """What a lease guards, in words: 'run 7', 'run 7 shard 2' (a Ray task's), else the name."""
    parts = name.split(":")
    if parts[0] != "run":
        return name
    return f"run {parts[1]}" + (f" shard {parts[3]}" if len(parts) == 4 else "")


def check_fences(conn: Any, fences: Iterable[Fence]) -> float | None:
    """Inside a write transaction, before its writes: lock each lease at its generation (a take-over waits for the
    commit); LeaseLost naming the new owner when one was taken over, so the transaction writes nothing. Returns the
    seconds left before the earliest of them expires, on the database's clock (negative once lapsed; None without
    fences): no take-over can happen before then."""
    fences = list(fences)
    if not fences:
        return None
    expiries: list[float] = []
    for name, generation in fences:
        expires_at = conn.execute(FENCE, {"p_name": name, "p_generation": generation}).scalar()
        if expires_at is None:
            row = conn.execute(select(LEASES.c.owner, LEASES.c.generation).where(LEASES.c.name == name)).first()
            owner = f"{row.owner} (generation {row.generation})" if row is not None else "nobody (the lease is gone)"
            raise LeaseLost(f"lease of {lease_subject(name)} taken over by {owner}; stopping")
        expiries.append(float(expires_at))
    return min(expiries) - db_now(conn)


def held_message(name: str, row: Any, now: float | None = None) -> str:
    """Who holds a lease, in words (`now`: the database's time the row was read at; the local clock when unknown)."""
    what = lease_subject(name)
    left = max(0.0, row.expires_at - (time.time() if now is None else now))
    return (f"{what} is owned by {row.owner} (heartbeat valid {left:.0f} s more); wait for it to finish or cancel "
            "it, or pass --wait")


def take_lease(engine: Engine, name: str, purpose: str, *, wait_s: float = 0.0) -> Holding:
    """Take lease `name` atomically: insert it, or take it over from a holder that stopped renewing it or whose
    process is gone on this host. Held by a live owner: wait up to `wait_s` seconds, then LeaseHeld."""
    deadline = time.monotonic() + wait_s
    while True:
        holding, row, now = _try_take(engine, name, purpose)
        if holding is not None:
            return holding
        if time.monotonic() >= deadline:
            raise LeaseHeld(held_message(name, row, now))
        time.sleep(LEASE_POLL_S)


def _try_take(engine: Engine, name: str, purpose: str) -> tuple[Holding | None, Any, float]:
    """Insert the lease at generation 1, or take over a stale one at its next generation if it did not change since
    it was read (a holder that renewed it in between keeps it); with the row that kept it and the database's time."""
    host, pid = socket.gethostname(), os.getpid()
    holding = Holding(name, uuid.uuid4().hex, f"pid {pid} on {host} ({purpose})")

    def values(now: float) -> dict[str, Any]:
        return {"name": name, "token": holding.token, "owner": holding.owner, "host": host, "pid": pid,
                "acquired_at": now, "expires_at": now + lease_ttl()}

    with engine.begin() as conn:
        now = db_now(conn)
        if conn.execute(insert_ignore_statement(engine, LEASES).values(**values(now), generation=1)).rowcount == 1:
            return holding, None, now
    with engine.begin() as conn:
        row = conn.execute(LEASES.select().where(LEASES.c.name == name)).first()
        now = db_now(conn)
        if row is None or not _stale(row, now):
            return None, row, now
        generation = row.generation + 1
        taken = conn.execute(update(LEASES).where(LEASES.c.name == name, LEASES.c.generation == row.generation,
                                                  LEASES.c.expires_at == row.expires_at)
                             .values(**values(now), generation=generation)).rowcount
    return (replace(holding, generation=generation), None, now) if taken == 1 else (None, row, now)


def renew_lease(conn: Any, holding: Holding) -> bool:
    """Inside a transaction: extend the lease by its TTL from the database's now; False when it is no longer ours."""
    return conn.execute(update(LEASES).where(LEASES.c.name == holding.name, LEASES.c.token == holding.token)
                        .values(expires_at=db_now(conn) + lease_ttl())).rowcount == 1


def release_lease(engine: Engine, holding: Holding) -> None:
    """Give the lease up (only if still ours): it expires now; its row stays, so its generation keeps counting."""
    with engine.begin() as conn:
        conn.execute(update(LEASES).where(LEASES.c.name == holding.name, LEASES.c.token == holding.token)
                     .values(expires_at=0.0))
