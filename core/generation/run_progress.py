"""A run's progress: counts by status, cache hits, spend and rate, read from the database."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import func
from sqlalchemy.engine import Engine
from sqlmodel import Session, col, select

from core.generation.runs import get_run
from core.store.db import saved_id
from core.store.leases import Fence
from core.store.models import Response, Run, Verdict, utc_now


@dataclass
class RunProgress:
    """A snapshot of a run's progress for progress bars and the app page."""

    run_id: int
    total: int
    done: int
    failed: int
    pending: int
    cached: int
    spent_usd: float
    elapsed_s: float
    status: str = "running"
    rebought_calls: int = 0
    rebought_usd: float = 0.0
    fences: tuple[Fence, ...] = ()  # the leases of the executor reporting it: a progress callback's writes check them

    @property
    def finished(self) -> int:
        """Items done or failed."""
        return self.done + self.failed

    @property
    def rate(self) -> float:
        """Finished items per second so far."""
        return self.finished / self.elapsed_s if self.elapsed_s > 0 else 0.0

    @property
    def eta_s(self) -> float | None:
        """Seconds left at the current rate, if known."""
        return self.pending / self.rate if self.rate > 0 else None


ProgressFn = Callable[[RunProgress], None]


def progress_snapshot(engine: Engine, run_id: int, elapsed_s: float = 0.0) -> RunProgress:
    """Counts of the run's items by status, cached count and spend, read from the database."""
    with Session(engine) as session:
        run = get_run(session, run_id)
        rows = session.exec(_status_counts().where(Response.run_id == run_id)).all()  # counted by the database
    return _snapshot(run, [(status, cached, n) for _, status, cached, n in rows], elapsed_s)


def progress_snapshots(engine: Engine, rows: list[Run]) -> dict[int, RunProgress]:
    """progress_snapshot of each run row just read (a list of runs), their items counted in one GROUP BY."""
    ids = [saved_id(run) for run in rows]
    counts: dict[int, list[tuple[str, bool, int]]] = defaultdict(list)
    if ids:
        with Session(engine) as session:
            for run_id, status, cached, n in session.exec(_status_counts().where(col(Response.run_id).in_(ids))):
                counts[run_id].append((status, cached, n))
    return {saved_id(run): _snapshot(run, counts[saved_id(run)]) for run in rows}


def _status_counts() -> Any:
    """Items per run, status and cache hit (to be filtered to the runs wanted)."""
    return (select(Response.run_id, Response.status, Response.cached, func.count())
            .group_by(col(Response.run_id), col(Response.status), col(Response.cached)))


def _snapshot(run: Run, rows: list[tuple[str, bool, int]], elapsed_s: float = 0.0) -> RunProgress:
    """The run's progress from its row and its items counted by (status, cached)."""
    counts: dict[str, int] = defaultdict(int)
    for status, _, n in rows:
        counts[status] += n
    cached = sum(n for status, was_cached, n in rows if status == "done" and was_cached)
    if not elapsed_s and run.started_at:
        elapsed_s = (utc_now() - _aware(run.started_at)).total_seconds()
    return RunProgress(saved_id(run), sum(counts.values()), counts["done"], counts["failed"], counts["pending"],
                       cached, run.spent_usd, elapsed_s, run.status, run.rebought_calls, run.rebought_usd)


@dataclass(frozen=True)
class RunSpend:
    """What a run has paid so far, in USD: its generation calls and its judges' calls, apart and together."""

    generation_usd: float
    judging_usd: float

    @property
    def total_usd(self) -> float:
        """Generation plus judging."""
        return self.generation_usd + self.judging_usd


def run_spend(engine: Engine, run_id: int, generation: float | None = None) -> RunSpend:
    """The run's paid generation (run.spent_usd, or `generation` when the caller just read it: a progress snapshot's
    spent_usd) and the recorded cost of every judge call on its responses (the verdicts' cost_usd, every judge; a
    cached judge call is recorded at 0)."""
    with Session(engine) as session:
        if generation is None:
            generation = get_run(session, run_id).spent_usd
        judging = session.exec(select(func.coalesce(func.sum(col(Verdict.cost_usd)), 0.0))
                               .where(Verdict.run_id == run_id, col(Verdict.cost_usd) != 0)).one()  # ix_verdict_paid
    return RunSpend(float(generation or 0.0), float(judging or 0.0))


def spend_text(spend: RunSpend) -> str:
    """'$total (generation $g, judging $j)', four decimals each."""
    return (f"${spend.total_usd:.4f} (generation ${spend.generation_usd:.4f}, "
            f"judging ${spend.judging_usd:.4f})")


def run_message(engine: Engine, run_id: int) -> str:
    """The run's last status message."""
    with Session(engine) as session:
        return get_run(session, run_id).message


def _aware(value: datetime) -> datetime:
    return value if value.tzinfo else value.replace(tzinfo=utc_now().tzinfo)
