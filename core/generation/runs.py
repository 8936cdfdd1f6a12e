"""Run records: options, creation, the run as stored, cancel and retry requests, and the items still pending."""

from __future__ import annotations

import subprocess
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from importlib import metadata
from typing import Any

from sqlalchemy.engine import Engine
from sqlmodel import Session, col, select

from core.config import REPO_ROOT
from core.generation.registered_models import check_generators, check_prices, resolve_models
from core.generation.run_prompts import PromptKey
from core.protocols import get_protocol
from core.store.benchmark import where_instances
from core.store.db import saved_id, select_columns
from core.store.leases import Fence, LeaseHeld, check_fences, held_message, lease_holder, run_lease
from core.store.models import Domain, Instance, Model, Response, Run, utc_now
from core.store.run_kinds import BUILD_KIND as BUILD_KIND  # re-exported: builds record their spend as run rows
from core.store.run_kinds import is_build as is_build

FINAL_STATUSES = ("done", "failed", "cancelled", "budget_stopped")
CANCEL_REQUEST = "cancelling"
BUILD_INTERRUPTED = "build interrupted (its process ended before the build finished)"
BUILD_OUTCOMES = {"running": "building", "done": "build done", "budget_stopped": "build stopped at the budget",
                  "failed": "build failed"}

CONTEXT_POLICIES = ("refuse", "truncate")
EXECUTORS = ("local", "ray")
MAX_REPEATS = 20


@dataclass
class RunOptions:
    """What to run: models by name, instance filters, limits and the scheduling knobs."""

    models: list[str]
    domains: list[str] = field(default_factory=list)
    modes: list[str] = field(default_factory=list)
    limit: int | None = None
    concurrency: int = 8
    rpm: float | None = None
    tpm: float | None = None
    budget_usd: float | None = None
    judge: str | None = None
    order: str = "stored"
    seed: int = 0
    max_retries: int = 4
    name: str = ""
    workers: int = 1
    conditions: list[str] = field(default_factory=lambda: [""])
    repeats: int = 1  # answers per item, each with its own seed and cache key (repeat 0 is the plain call)
    context_policy: str = "refuse"
    executor: str = "local"  # or "ray": core.generation.ray_executor
    ray_address: str | None = None
    protocols: list[str] = field(default_factory=list)  # empty: every protocol
    set_id: int | None = None  # a benchmark set: only its instance versions


def code_version() -> str:
    """`git describe --always --dirty` of the checkout, else the installed package version."""
    try:
        out = subprocess.run(["git", "describe", "--always", "--dirty", "--tags"], cwd=REPO_ROOT, capture_output=True,
                             text=True, timeout=5, check=True)
        return out.stdout.strip()
    except (OSError, subprocess.SubprocessError):
        try:
            return metadata.version("rag-gauntlet")
        except metadata.PackageNotFoundError:
            return "unknown"


def select_instances(session: Session, domains: list[str], modes: list[str], limit: int | None,
                     protocols: Sequence[str] = (), set_id: int | None = None) -> list[Instance]:
    """Latest instance versions (a set's own versions with `set_id`) filtered by domain names, modes and protocols,
    in a stable order, at most `limit`."""
    query = where_instances(select(Instance).join(Domain, col(Domain.id) == col(Instance.domain_id)),
                            latest_only=set_id is None, set_id=set_id, domains=domains, modes=modes, protocols=protocols)
    query = query.order_by(col(Domain.name), col(Instance.uid), col(Instance.id))
    if limit:
        query = query.limit(limit)
    return list(session.exec(query))


def options_instances(session: Session, options: RunOptions) -> list[Instance]:
    """The instances a run created from `options` covers (before conditions)."""
    return select_instances(session, options.domains, options.modes, options.limit, options.protocols, options.set_id)


def instance_conditions(instances: list[Instance], conditions: list[str]) -> list[tuple[Instance, str]]:
    """(instance, condition) for each requested condition its protocol declares and that applies to the instance's
    question type ('' = the protocol's default); a condition no selected instance's protocol declares raises
    ValueError listing the known ones per protocol."""
    wanted = list(dict.fromkeys(conditions or [""]))
    protocols = {p.name: p for p in (get_protocol(name) for name in sorted({i.protocol for i in instances}))}
    unknown = [c for c in wanted if not any(c in p.condition_names() for p in protocols.values())]
    if unknown:
        known = "; ".join(f"{p.name}: {', '.join(c or '(default)' for c in p.condition_names())}"
                          for p in protocols.values())
        raise ValueError(f"unknown condition(s) {', '.join(repr(c) for c in unknown)}; known: {known}")
    return [(i, c) for i in instances for c in wanted
            if c in protocols[i.protocol].condition_names() and protocols[i.protocol].applies(i.attributes, c)]


def check_options(options: RunOptions) -> None:
    """Raise ValueError for a context policy or executor that is not one of CONTEXT_POLICIES or EXECUTORS."""
    if options.context_policy not in CONTEXT_POLICIES:
        raise ValueError(f"unknown context policy {options.context_policy!r}; known: {', '.join(CONTEXT_POLICIES)}")
    if options.executor not in EXECUTORS:
        raise ValueError(f"unknown executor {options.executor!r}; known: {', '.join(EXECUTORS)}")
    if not 1 <= options.repeats <= MAX_REPEATS:
        raise ValueError(f"--repeats must be between 1 and {MAX_REPEATS}, got {options.repeats}")


def create_run(engine: Engine, options: RunOptions) -> int:
    """Record a run with its config and code version, and one pending Response per (model, instance, condition,
    repeat)."""
    check_options(options)
    with Session(engine) as session:
        models = resolve_models(session, options.models)
        check_generators(models)
        check_prices(models)
        instances = options_instances(session, options)
        if not instances:
            raise ValueError("no instances match the protocol/set/domain/mode filters")
        items = instance_conditions(instances, options.conditions)
        run = Run(name=options.name, status="pending", config=asdict(options), code_version=code_version(),
                  budget_usd=options.budget_usd)
        session.add(run)
        session.flush()
        for model in models:
            for instance, condition in items:
                session.add_all(Response(run_id=saved_id(run), model_id=saved_id(model), instance_id=saved_id(instance),
                                         condition=condition, repeat=repeat) for repeat in range(options.repeats))
        session.commit()
        return saved_id(run)


def run_options(engine: Engine, run_id: int) -> RunOptions:
    """The options a run was created with."""
    with Session(engine) as session:
        run = get_run(session, run_id)
        known = set(RunOptions.__dataclass_fields__)
        return RunOptions(**{k: v for k, v in run.config.items() if k in known})


def get_run(session: Session, run_id: int) -> Run:
    run = session.get(Run, run_id)
    if run is None:
        raise ValueError(f"no run with id {run_id}")
    return run


def request_cancel(engine: Engine, run_id: int) -> None:
    """Ask a running run to stop (the runner polls its status); a run not running is marked cancelled at once. A run
    whose executor holds its lease but has not marked it running yet gets the request too (it honours it on start)."""
    owned = lease_holder(engine, run_lease(run_id)) is not None
    with Session(engine) as session:
        run = get_run(session, run_id)
        if run.status == "running" or (owned and run.status not in FINAL_STATUSES):
            run.status = CANCEL_REQUEST
        elif run.status not in FINAL_STATUSES:
            run.status = "cancelled"
            run.finished_at = utc_now()
        session.add(run)
        session.commit()


def retry_failed(engine: Engine, run_id: int) -> int:
    """Put the run's failed items back to pending (keeping nothing of the failed attempt but the count); refused
    (LeaseHeld) while another executor owns the run."""
    holder = lease_holder(engine, run_lease(run_id))
    if holder is not None:
        raise LeaseHeld(held_message(run_lease(run_id), holder))
    with Session(engine) as session:
        get_run(session, run_id)
        rows = session.exec(select(Response).where(Response.run_id == run_id, Response.status == "failed")).all()
        for row in rows:
            row.status, row.error, row.finished_at = "pending", None, None
            session.add(row)
        session.commit()
        return len(rows)


def save_options(engine: Engine, run_id: int, options: RunOptions, fences: list[Fence] | None = None) -> None:
    """Store `options` on the run (under the run's lease when `fences` are given: LeaseLost once taken over)."""
    with Session(engine) as session:
        check_fences(session.connection(), fences or [])
        run = get_run(session, run_id)
        run.config = {**run.config, **asdict(options)}
        session.add(run)
        session.commit()


def failed_items(engine: Engine, run_id: int) -> list[dict[str, Any]]:
    """Every failed item of the run with its model, instance uid, attempts and reason."""
    with Session(engine) as session:
        rows = session.exec(select(Response, Model.name, Instance.uid)
                            .join(Model, col(Model.id) == col(Response.model_id))
                            .join(Instance, col(Instance.id) == col(Response.instance_id))
                            .where(Response.run_id == run_id, Response.status == "failed")).all()
        return [{"response_id": r.id, "model": name, "instance": uid, "condition": r.condition,
                 "attempts": r.attempts, "error": r.error} for r, name, uid in rows]


def recent_runs(engine: Engine, limit: int = 20) -> list[Run]:
    """The most recent runs not hidden, newest first."""
    with Session(engine) as session:
        return list(session.exec(select(Run).where(col(Run.hidden_at).is_(None)).order_by(col(Run.id).desc())
                                 .limit(limit)))


def domain_names(engine: Engine) -> list[str]:
    """Domain names in the benchmark."""
    with Session(engine) as session:
        return sorted(session.exec(select(Domain.name)).all())


@dataclass
class PendingItem:
    response_id: int
    model_id: int
    instance_id: int
    condition: str = ""
    repeat: int = 0

    @property
    def key(self) -> PromptKey:
        """The (instance, condition) whose prompt this item sends."""
        return self.instance_id, self.condition


def pending_items(session: Session, run_id: int, shard: tuple[int, int] | None = None) -> list[PendingItem]:
    """The run's items still pending, in id order; with `shard` (k, n) only those whose id modulo n is k."""
    query = select_columns(Response.id, Response.model_id, Response.instance_id, Response.condition,
                           Response.repeat).where(
        Response.run_id == run_id, Response.status == "pending")
    if shard is not None:
        query = query.where(col(Response.id) % shard[1] == shard[0])
    return [PendingItem(*row) for row in session.exec(query.order_by(col(Response.id)))]
