"""A build's ownership, as an evaluation run's: the build process takes a lease before it writes its spend row
(`record_build`), renews it from a heartbeat thread, fences its budget and closing writes with it and releases it at
the end. A build whose process died keeps its row "running" with a lease nobody renews: pages read that as
interrupted (core.store.run_kinds.build_interrupted, read only) and the next build marks the row failed
(`sweep_interrupted_builds`), taking the lease over first so a stalled owner that wakes up writes nothing more."""

from __future__ import annotations

import threading
import uuid
from dataclasses import dataclass, field

from sqlalchemy import update
from sqlalchemy.engine import Engine
from sqlalchemy.exc import OperationalError
from sqlmodel import Session, col, select

from core.store.leases import (
    Holding,
    LeaseHeld,
    lease_holder,
    lease_ttl,
    release_lease,
    renew_lease,
    take_lease,
)
from core.store.models import Run, utc_now
from core.store.run_kinds import build_lease_name, evaluation_run

INTERRUPTED = "interrupted: the build's process ended before it finished (found by the next build)"


@dataclass
class BuildLease:
    """The lease a running build holds, renewed every third of its TTL by a daemon thread from `beat` until
    `release` (a build that fails before it begins leaves a lease that lapses on its own)."""

    engine: Engine
    holding: Holding
    lost: bool = False
    _stop: threading.Event = field(default_factory=threading.Event, repr=False)

    @classmethod
    def take(cls, engine: Engine) -> BuildLease:
        """A fresh lease for a new build; it lapses after its TTL unless `beat` starts renewing it."""
        return cls(engine, take_lease(engine, build_lease_name(uuid.uuid4().hex), "gauntlet build"))

    def beat(self) -> None:
        """Start renewing the lease from a daemon thread (the build has begun: BuildSpend.closing)."""
        threading.Thread(target=self._beat, name="build-lease", daemon=True).start()

    @property
    def name(self) -> str:
        """The lease's name, kept in the build row's config."""
        return self.holding.name

    def _beat(self) -> None:
        """Renew until released; once the lease was taken over, stop renewing and mark it lost."""
        while not self._stop.wait(lease_ttl() / 3):
            try:
                with self.engine.begin() as conn:
                    if not renew_lease(conn, self.holding):
                        self.lost = True
                        return
            except OperationalError:  # a locked database skips a beat, as the runner's heartbeat does
                continue

    def release(self) -> None:
        """Stop the heartbeat and give the lease up."""
        self._stop.set()
        release_lease(self.engine, self.holding)


def sweep_interrupted_builds(engine: Engine) -> list[int]:
    """Mark failed every build row still running whose owner is gone (its lease lapsed or its process died on this
    host), each after taking its lease over; the ids marked. A build still renewing its lease is left alone."""
    with Session(engine) as session:
        rows = session.exec(select(Run.id, Run.config).where(~evaluation_run(hidden_too=True),
                                                             col(Run.status) == "running")).all()
    swept = []
    for run_id, config in rows:
        lease = str((config or {}).get("lease") or "")
        if lease and lease_holder(engine, lease) is not None:
            continue
        try:
            holding = take_lease(engine, lease, "sweep of an interrupted build") if lease else None
        except LeaseHeld:  # renewed in between: alive after all
            continue
        with engine.begin() as conn:
            reserved = conn.execute(select(Run.reserved_usd).where(col(Run.id) == run_id)).scalar_one()
            note = INTERRUPTED + (f"; ${reserved:.6f} was reserved for calls in flight, not known to be paid"
                                  if reserved else "")
            marked = conn.execute(update(Run).where(col(Run.id) == run_id, col(Run.status) == "running").values(
                status="failed", message=note, finished_at=utc_now(), reserved_usd=0.0)).rowcount
        if holding is not None:
            release_lease(engine, holding)
        if marked and run_id is not None:
            swept.append(run_id)
    return swept
