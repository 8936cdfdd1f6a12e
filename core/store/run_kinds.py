"""What a run row is: an evaluation run, or the LLM-spend row of a benchmark build (`core.construction.cost.
record_build`, config kind 'build'), listed with the runs and their spend but never offered where an evaluation run
is chosen. `evaluation_run()` is the one SQL condition every such choice filters by."""

from __future__ import annotations

from collections.abc import Sequence

from sqlalchemy import and_, func
from sqlalchemy.engine import Engine
from sqlalchemy.sql.elements import ColumnElement
from sqlmodel import col, select

from core.store.leases import lease_holder
from core.store.models import Run

BUILD_KIND = "build"  # run.config['kind'] of a benchmark build's LLM-spend row


def is_build(run: Run) -> bool:
    """Whether a run row records a benchmark build's LLM spend (no responses, nothing to score)."""
    return (run.config or {}).get("kind") == BUILD_KIND


def evaluation_run(*, hidden_too: bool = False) -> ColumnElement[bool]:
    """The SQL condition of a run row an evaluation-run choice offers: no build's spend row, and not hidden (unless
    `hidden_too`)."""
    not_build = func.coalesce(col(Run.config)["kind"].as_string(), "") != BUILD_KIND
    return not_build if hidden_too else and_(col(Run.hidden_at).is_(None), not_build)


def require_evaluation_runs(engine: Engine, run_ids: Sequence[int]) -> None:
    """ValueError naming any of `run_ids` that is a build's spend row (hidden runs may still be named)."""
    if not run_ids:
        return
    with engine.connect() as conn:
        builds = conn.execute(select(col(Run.id), col(Run.name)).where(
            col(Run.id).in_([int(r) for r in run_ids]), ~evaluation_run(hidden_too=True)).order_by(col(Run.id))).all()
    if builds:
        named = ", ".join(f"run {run_id} ({name})" for run_id, name in builds)
        raise ValueError(f"{named}: the LLM spend of a benchmark build, not an evaluation run; it has no responses "
                         "to score or report (the Run evaluation page lists both kinds)")


def build_lease_name(token: str) -> str:
    """The lease a build process holds while it runs (taken before its run row is written, named in its config)."""
    return f"build:{token}"


def build_interrupted(engine: Engine, run: Run) -> bool:
    """Whether a build row still marked running has no live owner: its process ended (crashed, killed) before the
    build finished. Read only: the lease row is read, nothing is written (the next build marks the row failed)."""
    if not is_build(run) or run.status != "running":
        return False
    lease = (run.config or {}).get("lease")
    return not lease or lease_holder(engine, str(lease)) is None
