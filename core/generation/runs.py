"""Run records: options, creation, estimates, progress, cancel and retry requests, model registration and the prompts of pending items."""

from __future__ import annotations

import subprocess
from collections import defaultdict
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from datetime import datetime
from importlib import metadata
from typing import Any

from sqlalchemy.engine import Engine
from sqlmodel import Session, col, select

from core.generation.baselines import BASELINES
from core.config import REPO_ROOT, known_secret_values
from core.generation.llm import cache_key, config_from_model, estimate_tokens
from core.store.models import Constraint, Document, Domain, Instance, LLMCall, Model, Response, Run, utc_now
from core.generation.prompting import build_messages
from core.generation.providers.base import ChatMessage, ModelConfig
from core.generation.tokens import count_tokens
from core.review.auth import Principal, authorize
from core.scoring.judges.names import HEURISTIC


FINAL_STATUSES = ("done", "failed", "cancelled", "budget_stopped")
CANCEL_REQUEST = "cancelling"
SECRET_WORDS = ("api_key", "apikey", "token", "secret", "password")


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


@dataclass
class Estimate:
    """Calls, tokens and cost a run would need (cached calls are free; output at the max is an upper bound)."""

    items: int = 0
    calls: int = 0
    cached: int = 0
    input_tokens: int = 0
    max_output_tokens: int = 0
    max_cost_usd: float = 0.0
    per_model: dict[str, dict[str, float]] = field(default_factory=dict)


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


PROMPT_CHUNK = 500


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


def select_instances(session: Session, domains: list[str], modes: list[str], limit: int | None) -> list[Instance]:
    """Latest instance versions filtered by domain names and modes, in a stable order, at most `limit`."""
    query = select(Instance).join(Domain, col(Domain.id) == col(Instance.domain_id)).where(col(Instance.is_latest))
    if domains:
        query = query.where(col(Domain.name).in_(domains))
    if modes:
        query = query.where(col(Instance.mode).in_(modes))
    query = query.order_by(col(Domain.name), col(Instance.uid), col(Instance.id))
    if limit:
        query = query.limit(limit)
    return list(session.exec(query))


def resolve_models(session: Session, names: list[str]) -> list[Model]:
    """Model rows by name, in the given order; unknown names raise ValueError listing the registered ones."""
    rows = {m.name: m for m in session.exec(select(Model))}
    missing = [n for n in names if n not in rows]
    if missing:
        raise ValueError(f"unknown model(s) {', '.join(missing)}; registered: {', '.join(sorted(rows)) or '(none)'}")
    return [rows[n] for n in names]


def create_run(engine: Engine, options: RunOptions) -> int:
    """Record a run with its config and code version, and one pending Response per (model, instance)."""
    with Session(engine) as session:
        models = resolve_models(session, options.models)
        instances = select_instances(session, options.domains, options.modes, options.limit)
        if not instances:
            raise ValueError("no instances match the domain/mode filters")
        run = Run(name=options.name, status="pending", config=asdict(options), code_version=code_version(),
                  budget_usd=options.budget_usd)
        session.add(run)
        session.flush()
        for model in models:
            for instance in instances:
                session.add(Response(run_id=run.id, model_id=model.id, instance_id=instance.id))
        session.commit()
        return int(run.id)


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


def load_prompts(session: Session, instance_ids: list[int], order: str, seed: int) -> dict[int, tuple[list, dict]]:
    """Messages and prompt_meta for many instances, loaded with a few chunked column queries (no ORM objects)."""
    prompts: dict[int, tuple[list, dict]] = {}
    unique = sorted(set(instance_ids))
    for start in range(0, len(unique), PROMPT_CHUNK):
        chunk = unique[start : start + PROMPT_CHUNK]
        instances = session.exec(select(Instance.id, Instance.query).where(col(Instance.id).in_(chunk))).all()
        constraints: dict[int, list[Any]] = defaultdict(list)
        for c in session.exec(select(Constraint.instance_id, Constraint.position, Constraint.text, Constraint.cid)
                              .where(col(Constraint.instance_id).in_(chunk))):
            constraints[c.instance_id].append(c)
        documents: dict[int, list[Any]] = defaultdict(list)
        for d in session.exec(select(Document.instance_id, Document.position, Document.title, Document.text,
                                     Document.role, Document.doc_uid).where(col(Document.instance_id).in_(chunk))):
            documents[d.instance_id].append(d)
        for instance in instances:
            prompts[instance.id] = build_messages(instance, constraints[instance.id], documents[instance.id],
                                                  order=order, seed=seed)
    return prompts


def instance_prompt(session: Session, instance_id: int, order: str, seed: int) -> tuple[list[ChatMessage], dict]:
    """Messages and prompt_meta for one instance."""
    return load_prompts(session, [instance_id], order, seed)[instance_id]


def estimate_run(engine: Engine, run_id: int) -> Estimate:
    """Calls, tokens and an upper-bound cost for the run's pending items (cache hits cost nothing)."""
    options = run_options(engine, run_id)
    with Session(engine) as session:
        models = {m.id: m for m in session.exec(select(Model))}
        pairs = [(models[i.model_id], i.instance_id) for i in pending_items(session, run_id)]
        return _estimate_pairs(session, pairs, options)


def estimate_options(engine: Engine, options: RunOptions) -> Estimate:
    """The estimate of a run that `options` would create, without creating it."""
    with Session(engine) as session:
        models = resolve_models(session, options.models)
        instances = select_instances(session, options.domains, options.modes, options.limit)
        pairs = [(m, i.id) for m in models for i in instances]
        return _estimate_pairs(session, pairs, options)


def _estimate_pairs(session: Session, pairs: list[tuple[Model, int]], options: RunOptions) -> Estimate:
    estimate = Estimate()
    prompts = load_prompts(session, [instance_id for _, instance_id in pairs], options.order, options.seed)
    for model, instance_id in pairs:
        _add_to_estimate(session, estimate, model, prompts[instance_id][0])
    return estimate


def _add_to_estimate(session: Session, estimate: Estimate, model: Model, messages: list[ChatMessage]) -> None:
    config = config_from_model(model)
    estimate.items += 1
    per_model = estimate.per_model.setdefault(model.name, {"calls": 0, "cached": 0, "max_cost_usd": 0.0})
    if model.is_baseline or session.get(LLMCall, cache_key(config, messages)) is not None:
        estimate.cached += 0 if model.is_baseline else 1
        per_model["cached"] += 0 if model.is_baseline else 1
        return
    tokens_in = sum(count_tokens(m.content) for m in messages)
    cost = config.cost_usd(tokens_in, config.max_output_tokens)
    estimate.calls += 1
    estimate.input_tokens += tokens_in
    estimate.max_output_tokens += config.max_output_tokens
    estimate.max_cost_usd += cost
    per_model["calls"] += 1
    per_model["max_cost_usd"] += cost


def progress_snapshot(engine: Engine, run_id: int, elapsed_s: float = 0.0) -> RunProgress:
    """Counts of the run's items by status, cached count and spend, read from the database."""
    with Session(engine) as session:
        run = get_run(session, run_id)
        rows = session.exec(select(Response.status, Response.cached).where(Response.run_id == run_id)).all()
    counts: dict[str, int] = defaultdict(int)
    for status, _ in rows:
        counts[status] += 1
    cached = sum(1 for status, was_cached in rows if status == "done" and was_cached)
    if not elapsed_s and run.started_at:
        elapsed_s = (utc_now() - _aware(run.started_at)).total_seconds()
    return RunProgress(run_id, len(rows), counts["done"], counts["failed"], counts["pending"], cached,
                       run.spent_usd, elapsed_s, run.status)


def _aware(value: datetime) -> datetime:
    return value if value.tzinfo else value.replace(tzinfo=utc_now().tzinfo)


def register_model(engine: Engine, config: ModelConfig) -> Model:
    """Insert or update the Model row for `config`; settings may name env vars but never hold secrets."""
    check_settings(config.settings)
    fields = config.model_dump(exclude={"name"})
    with Session(engine) as session:
        row = session.exec(select(Model).where(Model.name == config.name)).first() or Model(name=config.name)
        for key, value in fields.items():
            setattr(row, key, value)
        session.add(row)
        session.commit()
        session.refresh(row)
        return row


def check_settings(settings: dict[str, Any]) -> None:
    """Refuse settings that look like secrets (key/token/secret fields, or a configured secret's value)."""
    secrets = set(known_secret_values())
    for key, value in settings.items():
        lowered = key.lower()
        if any(word in lowered for word in SECRET_WORDS) and not lowered.endswith("_env"):
            raise ValueError(f"setting {key!r} looks like a secret; store the env var name in '<name>_env' instead")
        if isinstance(value, str) and value in secrets:
            raise ValueError(f"setting {key!r} holds a secret value; reference it by env var name instead")


def ensure_baselines(engine: Engine) -> list[Model]:
    """Register the no-network baselines (baseline:always-refuse, baseline:extractive) as Model rows."""
    return [
        register_model(engine, ModelConfig(name=name, provider="baseline", model_name=name, is_baseline=True,
                                           access="open", temperature=None, max_output_tokens=512))
        for name in BASELINES
    ]


def request_cancel(engine: Engine, run_id: int) -> None:
    """Ask a running run to stop (the runner polls its status); a run not running is marked cancelled at once."""
    with Session(engine) as session:
        run = get_run(session, run_id)
        if run.status == "running":
            run.status = CANCEL_REQUEST
        elif run.status not in FINAL_STATUSES:
            run.status = "cancelled"
            run.finished_at = utc_now()
        session.add(run)
        session.commit()


def retry_failed(engine: Engine, run_id: int) -> int:
    """Put the run's failed items back to pending (keeping nothing of the failed attempt but the count)."""
    with Session(engine) as session:
        rows = session.exec(select(Response).where(Response.run_id == run_id, Response.status == "failed")).all()
        for row in rows:
            row.status, row.error, row.finished_at = "pending", None, None
            session.add(row)
        session.commit()
        return len(rows)


def save_options(engine: Engine, run_id: int, options: RunOptions) -> None:
    with Session(engine) as session:
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
        return [{"response_id": r.id, "model": name, "instance": uid, "attempts": r.attempts, "error": r.error}
                for r, name, uid in rows]


def recent_runs(engine: Engine, limit: int = 20) -> list[Run]:
    """The most recent runs, newest first."""
    with Session(engine) as session:
        return list(session.exec(select(Run).order_by(col(Run.id).desc()).limit(limit)))


def model_names(engine: Engine) -> list[str]:
    """Registered model names, baselines included."""
    with Session(engine) as session:
        return sorted(session.exec(select(Model.name)).all())


def domain_names(engine: Engine) -> list[str]:
    """Domain names in the benchmark."""
    with Session(engine) as session:
        return sorted(session.exec(select(Domain.name)).all())


def judge_choices(engine: Engine) -> list[str]:
    """Judge ids a run can be scored with: the offline heuristic judge, then `llm:<name>` per non-baseline model."""
    with Session(engine) as session:
        names = session.exec(select(Model.name).where(col(Model.is_baseline) == False).order_by(Model.name)).all()  # noqa: E712
    return [HEURISTIC, *(f"llm:{name}" for name in names)]


def register_baselines(engine: Engine, principal: Principal | None) -> list[str]:
    """An admin registers the offline baselines (re-checked: register_models); their names."""
    authorize(engine, principal, "register_models")
    return [model.name for model in ensure_baselines(engine)]


@dataclass
class PendingItem:
    response_id: int
    model_id: int
    instance_id: int


def pending_items(session: Session, run_id: int, shard: tuple[int, int] | None = None) -> list[PendingItem]:
    """The run's items still pending, in id order; with `shard` (k, n) only those whose id modulo n is k."""
    query = select(Response.id, Response.model_id, Response.instance_id).where(
        Response.run_id == run_id, Response.status == "pending")
    if shard is not None:
        query = query.where(col(Response.id) % shard[1] == shard[0])
    return [PendingItem(*row) for row in session.exec(query.order_by(col(Response.id)))]
