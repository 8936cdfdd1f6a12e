"""Hiding (archiving) and deleting runs. A hidden run leaves every list and picker but keeps all its rows; deleting
removes the run with its responses, verdicts and score summaries, only when the admin's confirmation names exactly
what goes (the counts they read), and never a run that holds human labels (annotations are append-only)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import delete, update
from sqlalchemy.engine import Engine
from sqlalchemy.exc import IntegrityError
from sqlmodel import Session, col, func, select

from core.generation.runs import FINAL_STATUSES, get_run
from core.store.labels import GOLD_DESIGN
from core.store.models import (
    Annotation,
    Assignment,
    FailureCount,
    FailureModeCount,
    MetricAggregate,
    Response,
    ResponseMetric,
    ResponsePack,
    ResponseScore,
    ResponseScoreState,
    Run,
    RunVerdictCount,
    Verdict,
    utc_now,
)


class RunChanged(ValueError):
    """The run is no longer as the admin read it (hidden, shown or grown since): nothing was changed."""


@dataclass(frozen=True)
class DeletionPlan:
    """What deleting a run removes: its responses and verdicts (with their summaries) and gold-label assignments."""

    run_id: int
    name: str
    responses: int
    verdicts: int
    assignments: int
    annotations: int

    def summary(self) -> str:
        """The confirmation text: 'run 3 (name): 12 responses, 40 verdicts, 0 label assignments'."""
        name = f" ({self.name})" if self.name else ""
        return (f"run {self.run_id}{name}: {self.responses} responses, {self.verdicts} verdicts, "
                f"{self.assignments} label assignments")


def run_hidden_at(engine: Engine, run_id: int) -> datetime | None:
    """When the run was hidden (None: shown), as a page reads it before offering Hide or Show."""
    with Session(engine) as session:
        return get_run(session, run_id).hidden_at


def hidden_runs(engine: Engine) -> list[Run]:
    """Hidden runs, newest first."""
    with Session(engine) as session:
        return list(session.exec(select(Run).where(col(Run.hidden_at).is_not(None)).order_by(col(Run.id).desc())))


def set_hidden(engine: Engine, run_id: int, hidden: bool, read_hidden_at: datetime | None, actor: str) -> Run:
    """Hide or show a run, refused (RunChanged) unless it is still as read (`read_hidden_at`: None = shown), and a run
    still generating or scoring cannot be hidden."""
    with Session(engine) as session:
        run = get_run(session, run_id)
        if _stamp(run.hidden_at) != _stamp(read_hidden_at):
            raise RunChanged(f"run {run_id} was {'hidden' if run.hidden_at else 'shown again'} by "
                             f"{run.hidden_by or 'another admin'} since you read it; nothing changed")
        if hidden and run.status not in FINAL_STATUSES:
            raise ValueError(f"run {run_id} is {run.status}; cancel it or let it finish before hiding it")
        run.hidden_at, run.hidden_by = (utc_now(), actor) if hidden else (None, actor)
        session.add(run)
        session.commit()
        session.refresh(run)
        return run


def deletion_plan(engine: Engine, run_id: int) -> DeletionPlan:
    """What deleting the run would remove (and its human labels, which block the deletion)."""
    with Session(engine) as session:
        return _plan(session, run_id)


def _plan(session: Session, run_id: int) -> DeletionPlan:
    run = get_run(session, run_id)
    response_ids = select(Response.id).where(Response.run_id == run_id)
    return DeletionPlan(
        run_id, run.name,
        _count(session, select(func.count()).select_from(Response).where(Response.run_id == run_id)),
        _count(session, select(func.count()).select_from(Verdict).where(Verdict.run_id == run_id)),
        _count(session, select(func.count()).select_from(Assignment).where(
            Assignment.kind == "gold_label", col(Assignment.target_id).in_(response_ids))),
        _count(session, select(func.count()).select_from(Annotation).where(
            Annotation.target_type == "response", col(Annotation.target_id).in_(response_ids))))


def delete_run(engine: Engine, run_id: int, confirmed: DeletionPlan) -> DeletionPlan:
    """Delete a hidden run and everything deletion_plan lists, in one transaction; refused (RunChanged) unless
    `confirmed` is still exactly what goes, and (ValueError) for a shown run or one with human labels. Everything is
    re-read under the write lock, and labels reference their response by foreign key: a label written at the same
    moment either lands first (and the deletion is refused) or is refused itself, never an orphan."""
    with Session(engine) as session:
        _lock(session, run_id)
        plan = _plan(session, run_id)
        if plan.annotations:
            since = "" if confirmed.annotations else " (labelled since you confirmed)"
            raise ValueError(f"run {run_id} holds {plan.annotations} human label(s){since}, which are never deleted; "
                             "keep it hidden instead; nothing deleted")
        if plan != confirmed:
            raise RunChanged(f"what would be deleted changed since you confirmed it: now {plan.summary()}; "
                             "nothing deleted")
        if get_run(session, run_id).hidden_at is None:
            raise ValueError(f"run {run_id} is shown; hide it first, then delete it")
        response_ids = select(Response.id).where(Response.run_id == run_id)
        session.execute(delete(Assignment).where(col(Assignment.kind).in_(["gold_label", GOLD_DESIGN]),
                                                 col(Assignment.target_id).in_(response_ids)))
        for table in (MetricAggregate, ResponseMetric, ResponsePack, ResponseScore, FailureCount, FailureModeCount,
                      ResponseScoreState, Verdict, RunVerdictCount, Response):
            session.execute(delete(table).where(col(table.run_id) == run_id))
        session.execute(delete(Run).where(col(Run.id) == run_id))
        try:
            session.commit()
        except IntegrityError:
            raise ValueError(f"run {run_id} was labelled while it was being deleted; human labels are never deleted, "
                             "so nothing was deleted") from None
    return plan


def _lock(session: Session, run_id: int) -> None:
    """Take the write lock before reading what goes: SQLite's database lock (a write), PostgreSQL's row locks on the
    run and its responses (a label being written holds its response's row by its foreign key, so this waits for it)."""
    session.execute(update(Run).where(col(Run.id) == run_id).values(hidden_by=Run.hidden_by))
    session.exec(select(Response.id).where(Response.run_id == run_id).with_for_update()).all()


def _count(session: Session, query) -> int:
    return int(session.exec(query).one())


def _stamp(at: datetime | None) -> str | None:
    """A timestamp compared to the second, whatever the backend kept of its precision and zone."""
    return at.replace(tzinfo=None, microsecond=0).isoformat() if at else None
