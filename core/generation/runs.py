"""Run records: options, creation, estimates, progress, cancel and retry requests, model registration and the prompts of pending items."""

from __future__ import annotations

import os
import socket
import subprocess
import time
import uuid
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable
from dataclasses import asdict, dataclass, field, replace
from datetime import datetime
from importlib import metadata
from typing import Any

from sqlalchemy import bindparam, update
from sqlalchemy.engine import Engine
from sqlmodel import Session, col, select

from core.config import REPO_ROOT
from core.generation.baselines import BASELINES
from core.generation.llm import cache_key, config_from_model, insert_ignore_statement, repeat_config
from core.generation.providers.base import ChatMessage, ModelConfig
from core.generation.providers.prices import price_errors
from core.generation.tokens import count_tokens
from core.protocols import Protocol, get_protocol
from core.protocols.prompting import InstanceView, fit_documents
from core.store.db import saved_id, select_columns, table_of
from core.store.model_settings import check_settings
from core.store.models import Constraint, Document, Domain, Instance, Lease, LLMCall, Model, Response, Run, utc_now

FINAL_STATUSES = ("done", "failed", "cancelled", "budget_stopped")
CANCEL_REQUEST = "cancelling"
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


@dataclass
class Estimate:
    """Calls, tokens and cost a run would need (cached calls are free; output at the max is an upper bound), and the
    prompts over their model's context window: with the 'refuse' policy they fail unsent (`refused`), with
    'truncate' they lose documents from the end (`truncated`; `refused` counts those that still do not fit)."""

    items: int = 0
    calls: int = 0
    cached: int = 0
    input_tokens: int = 0
    max_output_tokens: int = 0
    max_cost_usd: float = 0.0
    per_model: dict[str, dict[str, float]] = field(default_factory=dict)
    context_policy: str = "refuse"
    over_window: int = 0
    truncated: int = 0
    refused: int = 0
    instances: int = 0
    by_condition: dict[str, int] = field(default_factory=dict)  # items per condition name ('' = default)

    def shape(self) -> str:
        """The items as models x (instances x conditions), with each condition's items per model (a condition that
        applies to some question types only has fewer)."""
        models = len(self.per_model) or 1
        parts = ", ".join(f"{name or 'default'} {count // models}" for name, count in self.by_condition.items())
        return (f"items {self.items} = {models} model(s) x {self.items // models} instance-conditions ({self.instances} "
                f"instances x {len(self.by_condition)} conditions; per condition: {parts})")

    def context_summary(self) -> str:
        """What the context policy does with the prompts over their model's context window ('' when none is)."""
        if not self.over_window:
            return ""
        head = f"{self.over_window} prompt(s) exceed their model's context window (policy {self.context_policy}): "
        if self.context_policy == "truncate":
            return head + (f"{self.truncated} will lose documents from the end of the bundle until they fit"
                           + (f"; {self.refused} do not fit even so and will fail unsent" if self.refused else ""))
        return head + f"{self.refused} will fail unsent and cost nothing (--context-policy truncate drops documents)"


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


def check_generators(models: list[Model]) -> None:
    """Refuse models that hold a deployed system's imported answers (provider 'deployed'): they cannot answer."""
    deployed = [m.name for m in models if m.provider == "deployed"]
    if deployed:
        raise ValueError(f"{', '.join(deployed)} holds a deployed system's imported answers and cannot answer new "
                         "prompts; run candidate models on its set instead")


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
        instances = select_instances(session, options.domains, options.modes, options.limit)
        if not instances:
            raise ValueError("no instances match the domain/mode filters")
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


PromptKey = tuple[int, str]  # (instance id, condition)


@dataclass
class PromptPlan:
    """The prompt of one (instance, condition) before any context-window check, with what it was built from."""

    protocol: Protocol
    instance: InstanceView
    condition: str
    documents: list[Any]  # the bundle after the condition, in prompt order
    bundle_meta: dict[str, Any]
    messages: list[ChatMessage]
    meta: dict[str, Any]
    _tokens: int | None = None

    @property
    def tokens(self) -> int:
        """The prompt's estimated input tokens (counted once)."""
        if self._tokens is None:
            self._tokens = prompt_tokens(self.messages)
        return self._tokens

    def render(self, documents: list[Any]) -> tuple[list[ChatMessage], dict[str, Any]]:
        """The same prompt over a subset of its documents."""
        return self.protocol.render_prompt(self.instance, documents, self.condition, self.bundle_meta)


@dataclass
class ItemPrompt:
    """What one (model, instance, condition) item sends after the context-window check, or why it sends nothing."""

    messages: list[ChatMessage]
    meta: dict[str, Any]
    error: str | None = None
    over_window: bool = False

    @property
    def truncated(self) -> bool:
        """Documents were dropped to fit the context window."""
        return self.over_window and self.error is None


def prompt_tokens(messages: list[ChatMessage]) -> int:
    """Estimated input tokens of a prompt (core.generation.tokens), as the context-window check counts them."""
    return sum(count_tokens(m.content) for m in messages)


def load_prompt_plans(session: Session, keys: list[PromptKey], order: str, seed: int) -> dict[PromptKey, PromptPlan]:
    """The prompt of every (instance, condition), built by the instance's protocol from a few chunked column queries
    (no ORM objects)."""
    plans: dict[PromptKey, PromptPlan] = {}
    conditions: dict[int, list[str]] = defaultdict(list)
    for instance_id, condition in dict.fromkeys(keys):
        conditions[instance_id].append(condition)
    unique = sorted(conditions)
    for start in range(0, len(unique), PROMPT_CHUNK):
        chunk = unique[start : start + PROMPT_CHUNK]
        instances = session.exec(select_columns(Instance.id, Instance.query, Instance.protocol, Instance.mode,
                                        Instance.language, Instance.reference, Instance.attributes)
                                 .where(col(Instance.id).in_(chunk))).all()
        constraints: dict[int, list[Any]] = defaultdict(list)
        for c in session.exec(select_columns(Constraint.instance_id, Constraint.position, Constraint.text, Constraint.cid)
                              .where(col(Constraint.instance_id).in_(chunk))):
            constraints[c.instance_id].append(c)
        documents: dict[int, list[Any]] = defaultdict(list)
        for d in session.exec(select_columns(Document.instance_id, Document.position, Document.title, Document.text,
                                     Document.role, Document.doc_uid, Document.content_type, Document.variant)
                              .where(col(Document.instance_id).in_(chunk))):
            documents[d.instance_id].append(d)
        for row in instances:
            protocol = get_protocol(row.protocol)
            view = InstanceView(query=row.query, id=row.id, protocol=row.protocol, mode=row.mode,
                                language=row.language, constraints=tuple(constraints[row.id]),
                                reference=row.reference, attributes=row.attributes or {})
            for condition in conditions[row.id]:
                bundle, bundle_meta = protocol.bundle(documents[row.id], condition, order, seed)
                messages, meta = protocol.render_prompt(view, bundle, condition, bundle_meta)
                plans[(row.id, condition)] = PromptPlan(protocol, view, condition, bundle, bundle_meta, messages, meta)
    return plans


def load_prompts(session: Session, instance_ids: list[int], order: str, seed: int,
                 condition: str = "") -> dict[int, tuple[list, dict]]:
    """Messages and prompt_meta for many instances under one condition (the protocol's default by default)."""
    plans = load_prompt_plans(session, [(i, condition) for i in instance_ids], order, seed)
    return {instance_id: (plan.messages, plan.meta) for (instance_id, _), plan in plans.items()}


def instance_prompt(session: Session, instance_id: int, order: str, seed: int,
                    condition: str = "") -> tuple[list[ChatMessage], dict]:
    """Messages and prompt_meta for one instance."""
    return load_prompts(session, [instance_id], order, seed, condition)[instance_id]


def context_error(tokens: int, config: ModelConfig) -> str:
    """Why a prompt is not sent: it does not fit the model's context window with its output reserved."""
    reserve = f" ({config.max_output_tokens} reserved for the output)" if config.max_output_tokens else ""
    return (f"prompt of {tokens} tokens exceeds the context window of {config.context_window} tokens of "
            f"{config.name}{reserve}")


def fit_context(plan: PromptPlan, config: ModelConfig, policy: str) -> ItemPrompt:
    """The prompt `config` gets: unchanged when it fits the context window (prompt + max output tokens) or the
    model declares none; over it, 'refuse' fails the item unsent, 'truncate' drops whole documents from the end of
    the bundle (the last, lowest-priority ones first) until it fits, recording what was dropped in prompt_meta."""
    window = config.context_window
    if not window:
        return ItemPrompt(plan.messages, plan.meta)
    limit = window - config.max_output_tokens
    if plan.tokens <= limit:
        return ItemPrompt(plan.messages, plan.meta)
    context = {"policy": policy, "window": window, "tokens_before": plan.tokens}
    if policy == "truncate":
        fitted = fit_documents(plan.documents, plan.render, lambda prompt: prompt_tokens(prompt[0]), limit)
        if fitted is not None:
            kept, (messages, meta), tokens = fitted
            dropped = [d.doc_uid for d in plan.documents[kept:]]
            return ItemPrompt(messages, {**meta, "context": {**context, "tokens": tokens, "dropped": dropped}},
                              over_window=True)
    error = context_error(plan.tokens, config)
    if policy == "truncate":
        error += "; it does not fit even with only its first document"
    return ItemPrompt(plan.messages, {**plan.meta, "context": context}, error=error, over_window=True)


class PromptBook:
    """Every item's prompt: the (instance, condition) plans and each context window's fitted version, memoised."""

    def __init__(self, plans: dict[PromptKey, PromptPlan], policy: str) -> None:
        self.plans = plans
        self.policy = policy
        self._fitted: dict[tuple[PromptKey, int | None, int], ItemPrompt] = {}

    def item(self, config: ModelConfig, key: PromptKey) -> ItemPrompt:
        """The prompt `config` sends for `key` under the book's context policy."""
        memo = (key, config.context_window, config.max_output_tokens)
        if memo not in self._fitted:
            self._fitted[memo] = fit_context(self.plans[key], config, self.policy)
        return self._fitted[memo]


def estimate_run(engine: Engine, run_id: int) -> Estimate:
    """Calls, tokens and an upper-bound cost for the run's pending items (cache hits cost nothing)."""
    options = run_options(engine, run_id)
    with Session(engine) as session:
        models = {m.id: m for m in session.exec(select(Model))}
        pairs = [(models[i.model_id], (i.instance_id, i.condition), i.repeat) for i in pending_items(session, run_id)]
        return _estimate_pairs(session, pairs, options)


def estimate_options(engine: Engine, options: RunOptions) -> Estimate:
    """The estimate of a run that `options` would create, without creating it."""
    check_options(options)
    with Session(engine) as session:
        models = resolve_models(session, options.models)
        instances = select_instances(session, options.domains, options.modes, options.limit)
        items = instance_conditions(instances, options.conditions) if instances else []
        pairs = [(m, (saved_id(i), condition), repeat) for m in models for i, condition in items
                 for repeat in range(options.repeats)]
        return _estimate_pairs(session, pairs, options)


def _estimate_pairs(session: Session, pairs: list[tuple[Model, PromptKey, int]], options: RunOptions) -> Estimate:
    estimate = Estimate(context_policy=options.context_policy, instances=len({key[0] for _, key, _ in pairs}),
                        by_condition=dict(Counter(key[1] for _, key, _ in pairs)))
    book = PromptBook(load_prompt_plans(session, [key for _, key, _ in pairs], options.order, options.seed),
                      options.context_policy)
    configs = {model_id: config_from_model(model) for model_id, model in {m.id: m for m, _, _ in pairs}.items()}
    sendable = []
    for model, key, repeat in pairs:
        prompt = book.item(configs[model.id], key)
        if _count_context(estimate, model.name, prompt):
            call = None if model.is_baseline else cache_key(repeat_config(configs[model.id], repeat), prompt.messages)
            sendable.append((model, prompt.messages, call))
    cached = _cached_keys(session, [call for *_, call in sendable if call])
    for model, messages, call in sendable:
        _add_to_estimate(estimate, model, messages, configs[model.id], model.is_baseline or call in cached)
    return estimate


def _cached_keys(session: Session, keys: list[str]) -> set[str]:
    """The keys among `keys` that the call cache holds, looked up in chunks (not one query per call)."""
    unique, found = sorted(set(keys)), set[str]()
    for start in range(0, len(unique), PROMPT_CHUNK):
        found.update(session.exec(select(LLMCall.key).where(col(LLMCall.key).in_(unique[start : start + PROMPT_CHUNK]))))
    return found


def _count_context(estimate: Estimate, name: str, prompt: ItemPrompt) -> bool:
    """Count the item and whether it is over its context window; False when it will fail unsent (no call, no cost)."""
    per_model = estimate.per_model.setdefault(name, {"calls": 0, "cached": 0, "max_cost_usd": 0.0, "over_window": 0})
    estimate.over_window += prompt.over_window
    estimate.truncated += prompt.truncated
    estimate.refused += prompt.error is not None
    per_model["over_window"] += prompt.over_window
    if prompt.error is not None:
        estimate.items += 1
    return prompt.error is None


def _add_to_estimate(estimate: Estimate, model: Model, messages: list[ChatMessage], config: ModelConfig,
                     cached: bool) -> None:
    estimate.items += 1
    per_model = estimate.per_model.setdefault(model.name, {"calls": 0, "cached": 0, "max_cost_usd": 0.0})
    if cached:
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
                       run.spent_usd, elapsed_s, run.status, run.rebought_calls, run.rebought_usd)


def run_message(engine: Engine, run_id: int) -> str:
    """The run's last status message."""
    with Session(engine) as session:
        return get_run(session, run_id).message


def _aware(value: datetime) -> datetime:
    return value if value.tzinfo else value.replace(tzinfo=utc_now().tzinfo)


def register_model(engine: Engine, config: ModelConfig) -> Model:
    """Insert or update the Model row for `config`; settings may name env vars but never hold secrets."""
    check_settings(config.settings)
    problems = price_errors(config.price_input_per_mtok, config.price_output_per_mtok)
    if problems:
        raise ValueError(f"model {config.name}: " + "; ".join(problems))
    fields = config.model_dump(exclude={"name"})
    with Session(engine) as session:
        row = session.exec(select(Model).where(Model.name == config.name)).first() or Model(name=config.name, provider=config.provider)
        for key, value in fields.items():
            setattr(row, key, value)
        session.add(row)
        session.commit()
        session.refresh(row)
        return row


def ensure_baselines(engine: Engine) -> list[Model]:
    """Register the no-network baselines (baseline:always-refuse, baseline:extractive) as Model rows."""
    return [
        register_model(engine, ModelConfig(name=name, provider="baseline", model_name=name, is_baseline=True,
                                           access="open", temperature=None, max_output_tokens=512))
        for name in BASELINES
    ]


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


# --- ownership: one live executor per run (and one scorer per run and judge) ------------------------------------

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
FENCE = update(LEASES).where(LEASES.c.name == bindparam("p_name"), LEASES.c.generation == bindparam("p_generation")
                             ).values(generation=LEASES.c.generation)


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
    return row.expires_at < now or (row.host == socket.gethostname() and not pid_alive(row.pid))


def lease_holder(engine: Engine, name: str) -> Any | None:
    """The live holding of lease `name` (owner, pid, host, expires_at), or None when free or stale."""
    with engine.connect() as conn:
        row = conn.execute(LEASES.select().where(LEASES.c.name == name)).first()
    return None if row is None or _stale(row, time.time()) else row


def lease_subject(name: str) -> str:
    """What a lease guards, in words: 'run 7', 'run 7 shard 2' (a Ray task's), else the name."""
    parts = name.split(":")
    if parts[0] != "run":
        return name
    return f"run {parts[1]}" + (f" shard {parts[3]}" if len(parts) == 4 else "")


def check_fences(conn: Any, fences: Iterable[Fence]) -> None:
    """Inside a write transaction, before its writes: lock each lease at its generation (a take-over waits for the
    commit); LeaseLost naming the new owner when one was taken over, so the transaction writes nothing."""
    for name, generation in fences:
        if conn.execute(FENCE, {"p_name": name, "p_generation": generation}).rowcount != 1:
            row = conn.execute(select(LEASES.c.owner, LEASES.c.generation).where(LEASES.c.name == name)).first()
            owner = f"{row.owner} (generation {row.generation})" if row is not None else "nobody (the lease is gone)"
            raise LeaseLost(f"lease of {lease_subject(name)} taken over by {owner}; stopping")


def held_message(name: str, row: Any) -> str:
    """Who holds a lease, in words."""
    what = lease_subject(name)
    left = max(0.0, row.expires_at - time.time())
    return (f"{what} is owned by {row.owner} (heartbeat valid {left:.0f} s more); wait for it to finish or cancel "
            "it, or pass --wait")


def take_lease(engine: Engine, name: str, purpose: str, *, wait_s: float = 0.0) -> Holding:
    """Take lease `name` atomically: insert it, or take it over from a holder that stopped renewing it or whose
    process is gone on this host. Held by a live owner: wait up to `wait_s` seconds, then LeaseHeld."""
    deadline = time.monotonic() + wait_s
    while True:
        holding, row = _try_take(engine, name, purpose)
        if holding is not None:
            return holding
        if time.monotonic() >= deadline:
            raise LeaseHeld(held_message(name, row))
        time.sleep(LEASE_POLL_S)


def _try_take(engine: Engine, name: str, purpose: str) -> tuple[Holding | None, Any]:
    """Insert the lease at generation 1, or take over a stale one at its next generation if it did not change since
    it was read (a holder that renewed it in between keeps it)."""
    now, host, pid = time.time(), socket.gethostname(), os.getpid()
    holding = Holding(name, uuid.uuid4().hex, f"pid {pid} on {host} ({purpose})")
    values = {"name": name, "token": holding.token, "owner": holding.owner, "host": host, "pid": pid,
              "acquired_at": now, "expires_at": now + lease_ttl()}
    with engine.begin() as conn:
        if conn.execute(insert_ignore_statement(engine, LEASES).values(**values, generation=1)).rowcount == 1:
            return holding, None
    with engine.begin() as conn:
        row = conn.execute(LEASES.select().where(LEASES.c.name == name)).first()
        if row is None or not _stale(row, now):
            return None, row
        generation = row.generation + 1
        taken = conn.execute(update(LEASES).where(LEASES.c.name == name, LEASES.c.generation == row.generation,
                                                  LEASES.c.expires_at == row.expires_at)
                             .values(**values, generation=generation)).rowcount
    return (replace(holding, generation=generation), None) if taken == 1 else (None, row)


def renew_lease(conn: Any, holding: Holding) -> bool:
    """Inside a transaction: extend the lease by its TTL; False when it is no longer ours."""
    now = time.time()
    return conn.execute(update(LEASES).where(LEASES.c.name == holding.name, LEASES.c.token == holding.token)
                        .values(expires_at=now + lease_ttl())).rowcount == 1


def release_lease(engine: Engine, holding: Holding) -> None:
    """Give the lease up (only if still ours): it expires now; its row stays, so its generation keeps counting."""
    with engine.begin() as conn:
        conn.execute(update(LEASES).where(LEASES.c.name == holding.name, LEASES.c.token == holding.token)
                     .values(expires_at=0.0))


def check_prices(models: list[Model]) -> None:
    """Refuse models whose stored prices are negative or not finite (a run could never be budgeted)."""
    problems = [f"model {m.name}: {p}" for m in models
                for p in price_errors(m.price_input_per_mtok, m.price_output_per_mtok)]
    if problems:
        raise ValueError("; ".join(problems) + " (fix it with gauntlet models add NAME --price-in/--price-out)")
