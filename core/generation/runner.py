"""Evaluation runner: plan (models x instances), estimate, execute with bounded concurrency, resume, retry, report."""

from __future__ import annotations

import asyncio
import logging
import multiprocessing
import os
import signal
import subprocess
import sys
import time
from collections import defaultdict
from collections.abc import Callable
from dataclasses import asdict, dataclass, field, replace
from datetime import datetime
from importlib import metadata
from multiprocessing import connection as mp_connection
from typing import Any

from sqlalchemy import bindparam, update
from sqlalchemy.engine import Engine
from sqlmodel import Session, col, select

from core.generation.baselines import BASELINES
from core.config import REPO_ROOT, known_secret_values, redact
from core.generation.llm import GroupWriter, LLMClient, cache_key, config_from_model, estimate_tokens
from core.store.models import Constraint, Document, Domain, Instance, LLMCall, Model, Response, Run, utc_now
from core.generation.prompting import build_messages
from core.generation.providers.base import ChatMessage, Completion, ModelConfig, ProviderError
from core.generation.ratelimit import Clock, RateLimiter
from core.pipeline import split_judges
from core.review.auth import Principal, authorize
from core.scoring.judges.names import HEURISTIC

log = logging.getLogger("gauntlet.runner")

FINAL_STATUSES = ("done", "failed", "cancelled", "budget_stopped")
CANCEL_REQUEST = "cancelling"
MONITOR_INTERVAL_S = 0.5
PROMPT_CHUNK = 500
RESPONSES = Response.__table__
RUNS = Run.__table__
RESPONSE_DONE = update(RESPONSES).where(RESPONSES.c.id == bindparam("p_id")).values(
    status="done", text=bindparam("p_text"), error=None, attempts=RESPONSES.c.attempts + bindparam("p_attempts"),
    cache_key=bindparam("p_cache_key"), cached=bindparam("p_cached"), latency_ms=bindparam("p_latency"),
    input_tokens=bindparam("p_in"), output_tokens=bindparam("p_out"), cost_usd=bindparam("p_cost"),
    prompt_meta=bindparam("p_meta", type_=RESPONSES.c.prompt_meta.type),
    finished_at=bindparam("p_finished", type_=RESPONSES.c.finished_at.type),
)
RESPONSE_FAILED = update(RESPONSES).where(RESPONSES.c.id == bindparam("p_id")).values(
    status="failed", error=bindparam("p_error"), attempts=RESPONSES.c.attempts + bindparam("p_attempts"),
    prompt_meta=bindparam("p_meta", type_=RESPONSES.c.prompt_meta.type),
    finished_at=bindparam("p_finished", type_=RESPONSES.c.finished_at.type),
)
RUN_SPEND = update(RUNS).where(RUNS.c.id == bindparam("p_id")).values(
    spent_usd=RUNS.c.spent_usd + bindparam("p_paid"))
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
        run = _get_run(session, run_id)
        known = set(RunOptions.__dataclass_fields__)
        return RunOptions(**{k: v for k, v in run.config.items() if k in known})


def _get_run(session: Session, run_id: int) -> Run:
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


@dataclass
class _Item:
    response_id: int
    model_id: int
    instance_id: int


def pending_items(session: Session, run_id: int, shard: tuple[int, int] | None = None) -> list[_Item]:
    """The run's items still pending, in id order; with `shard` (k, n) only those whose id modulo n is k."""
    query = select(Response.id, Response.model_id, Response.instance_id).where(
        Response.run_id == run_id, Response.status == "pending")
    if shard is not None:
        query = query.where(col(Response.id) % shard[1] == shard[0])
    return [_Item(*row) for row in session.exec(query.order_by(col(Response.id)))]


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
    tokens_in = sum(estimate_tokens(m.content) for m in messages)
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
        run = _get_run(session, run_id)
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
        run = _get_run(session, run_id)
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


class _Execution:
    """State of one execution of a run's pending items: one process, or one shard of a multi-process run."""

    def __init__(self, engine: Engine, run_id: int, options: RunOptions, clock: Clock | None,
                 progress: ProgressFn | None, shard: tuple[int, int] | None = None) -> None:
        self.engine = engine
        self.shard = shard
        self.parent_pid = os.getppid()
        self.notes: list[str] = []
        self.children: list[Any] = []
        self.run_id = run_id
        self.options = options
        self.clock = clock
        self.progress = progress
        self.stop_reason: str | None = None
        self.started = time.monotonic()
        self.counts: dict[str, int] = defaultdict(int)
        self.total = 0
        self.spent = 0.0
        self.pending = 0

    def budget_reached(self) -> bool:
        budget = self.options.budget_usd
        return budget is not None and self.spent >= budget

    async def run(self) -> RunProgress:
        with Session(self.engine) as session:
            items = pending_items(session, self.run_id, self.shard)
            models = {m.id: m for m in session.exec(select(Model))}
            run = _get_run(session, self.run_id)
            self.spent = run.spent_usd
            prompts = load_prompts(session, [item.instance_id for item in items], self.options.order,
                                   self.options.seed)
            self.total = len(session.exec(select(Response.id).where(Response.run_id == self.run_id)).all())
            self.counts["done"] = len(session.exec(select(Response.id).where(
                Response.run_id == self.run_id, Response.status == "done")).all())
            self.counts["failed"] = len(session.exec(select(Response.id).where(
                Response.run_id == self.run_id, Response.status == "failed")).all())
        self.pending = len(items)
        self._mark_started()
        queues = self._queues(items, models)
        shared_budget = self.shard is not None and self.options.budget_usd is not None
        self.writer = GroupWriter(self.engine, observe=self._observe_spend if shared_budget else None)
        clients = {mid: self._client(models[mid]) for mid in {item.model_id for item in items}}
        for model_id, client in clients.items():
            client.preload(prompts[i.instance_id][0] for i in items if i.model_id == model_id)
        monitor = asyncio.create_task(self._monitor())
        self._install_signal_handler()
        try:
            workers = [self._worker(queue, clients, prompts) for queue in queues.values()
                       for _ in range(max(1, self.options.concurrency))]
            await asyncio.gather(*workers)
        finally:
            monitor.cancel()
            self.writer.close()
            await asyncio.gather(*(client.aclose() for client in clients.values()), return_exceptions=True)
        return self._finish()

    def _queues(self, items: list[_Item], models: dict[int, Model]) -> dict[str, asyncio.Queue[_Item]]:
        queues: dict[str, asyncio.Queue[_Item]] = {}
        for item in items:
            queues.setdefault(models[item.model_id].provider, asyncio.Queue()).put_nowait(item)
        self.limiters = {p: RateLimiter(self.options.rpm, self.options.tpm, self.clock) for p in queues}
        self.models = models
        return queues

    def _client(self, model: Model) -> LLMClient:
        limiter = None if model.is_baseline else self.limiters.get(model.provider)
        return LLMClient(config_from_model(model), self.engine, max_retries=self.options.max_retries,
                         limiter=limiter, clock=self.clock, writer=self.writer,
                         max_connections=max(1, self.options.concurrency))

    async def _worker(self, queue: asyncio.Queue[_Item], clients: dict[int, LLMClient],
                      prompts: dict[int, tuple[list[ChatMessage], dict]]) -> None:
        while not queue.empty():
            if self.stop_reason or self.budget_reached():
                self.stop_reason = self.stop_reason or "budget"
                return
            item = queue.get_nowait()
            messages, meta = prompts[item.instance_id]
            await self._process(item, clients[item.model_id], messages, meta)

    async def _process(self, item: _Item, client: LLMClient, messages: list[ChatMessage], meta: dict) -> None:
        try:
            completion = await client.complete(messages, purpose="generate")
        except ProviderError as error:
            await self._write_failed(item, f"{error.kind}: {redact(str(error))}", getattr(error, "attempts", 1), meta)
            return
        except Exception as error:  # noqa: BLE001 - nothing is silently skipped: the item fails with the reason
            log.exception("item %s failed unexpectedly", item.response_id)
            await self._write_failed(item, f"unexpected: {redact(f'{type(error).__name__}: {error}')}", 1, meta)
            return
        paid = 0.0 if completion.cached else completion.cost_usd
        self.spent += paid
        await self._write_done(item, completion, meta, paid)
        self.counts["cached"] += int(completion.cached)
        self._advance("done")

    async def _write_done(self, item: _Item, completion: Completion, meta: dict, paid: float) -> None:
        await self.writer.write(RESPONSE_DONE, {
            "p_id": item.response_id, "p_text": completion.text, "p_attempts": completion.attempts,
            "p_cache_key": completion.cache_key, "p_cached": completion.cached, "p_latency": completion.latency_ms,
            "p_in": completion.input_tokens, "p_out": completion.output_tokens, "p_cost": completion.cost_usd,
            "p_meta": meta, "p_finished": utc_now(),
        })
        if paid:
            await self.writer.write(RUN_SPEND, {"p_id": self.run_id, "p_paid": paid})

    async def _write_failed(self, item: _Item, reason: str, attempts: int, meta: dict) -> None:
        await self.writer.write(RESPONSE_FAILED, {"p_id": item.response_id, "p_error": reason, "p_attempts": attempts,
                                                  "p_meta": meta, "p_finished": utc_now()})
        log.warning("item %s failed: %s", item.response_id, reason)
        self._advance("failed")

    def _advance(self, status: str) -> None:
        self.counts[status] += 1
        self.pending -= 1
        if self.progress:
            self.progress(self.snapshot())

    def snapshot(self, status: str = "running") -> RunProgress:
        return RunProgress(self.run_id, self.total, self.counts["done"], self.counts["failed"],
                           self.total - self.counts["done"] - self.counts["failed"], self.counts["cached"],
                           self.spent, time.monotonic() - self.started, status)

    async def run_sharded(self, workers: int) -> RunProgress:
        """Shard the pending items over `workers` processes (response id modulo workers); wait for every one."""
        url = shareable_url(self.engine)
        self._mark_started()
        context = _process_context()
        share = asdict(shard_options(self.options, workers))
        processes = [context.Process(target=_shard_main, args=(url, self.run_id, k, workers, share),
                                     name=f"gauntlet-run-{self.run_id}-worker-{k}") for k in range(workers)]
        for process in processes:
            process.start()
        self.children = processes
        self._record_workers([process.pid for process in processes])
        self._install_signal_handler()
        running = list(processes)
        while running:
            sentinels = [process.sentinel for process in running]
            ended = await asyncio.to_thread(mp_connection.wait, sentinels, MONITOR_INTERVAL_S)
            running = [process for process in running if process.sentinel not in ended]
            snapshot = await asyncio.to_thread(progress_snapshot, self.engine, self.run_id,
                                               time.monotonic() - self.started)
            if snapshot.status == CANCEL_REQUEST:
                self.stop_reason = "cancel"
            if self.progress:
                self.progress(snapshot)
        for process in processes:
            process.join()
            self._collect_exit(process)
        snapshot = progress_snapshot(self.engine, self.run_id)
        self.total, self.spent = snapshot.total, snapshot.spent_usd
        self.counts.update(done=snapshot.done, failed=snapshot.failed, cached=snapshot.cached)
        return self._finish()

    def _collect_exit(self, process: Any) -> None:
        reason = SHARD_EXIT_REASONS.get(process.exitcode)
        if reason:
            self.stop_reason = "cancel" if "cancel" in (reason, self.stop_reason) else reason
        elif process.exitcode:
            self.notes.append(f"{process.name} exited with code {process.exitcode}; resume finishes its items")

    def _record_workers(self, pids: list[int]) -> None:
        with Session(self.engine) as session:
            run = _get_run(session, self.run_id)
            run.config = {**run.config, "worker_pids": pids}
            session.add(run)
            session.commit()

    def _observe_spend(self, conn: Any) -> None:
        """Inside a write transaction: take the run's spend across all workers (it includes this worker's)."""
        spent = conn.execute(select(RUNS.c.spent_usd).where(RUNS.c.id == self.run_id)).scalar_one()
        self.spent = max(self.spent, float(spent or 0.0))

    def _mark_started(self) -> None:
        if self.shard is not None:
            return  # the parent process marked the run started and holds its pid
        with Session(self.engine) as session:
            run = _get_run(session, self.run_id)
            run.status = "running"
            run.started_at = run.started_at or utc_now()
            run.heartbeat_at = utc_now()
            run.config = {**run.config, "pid": os.getpid()}
            if self.options.budget_usd is not None:
                run.budget_usd = self.options.budget_usd
            session.add(run)
            session.commit()

    async def _monitor(self) -> None:
        while True:
            await asyncio.sleep(MONITOR_INTERVAL_S)
            status, spent = await asyncio.to_thread(self._heartbeat)
            if status == CANCEL_REQUEST:
                self.stop_reason = "cancel"
            if self.shard is not None:
                self.spent = max(self.spent, spent)
                if os.getppid() != self.parent_pid:
                    self.stop_reason = "cancel"  # the parent is gone: stop dispatching, leave the rest pending

    def _heartbeat(self) -> tuple[str, float]:
        with Session(self.engine) as session:
            run = _get_run(session, self.run_id)
            run.heartbeat_at = utc_now()
            session.add(run)
            session.commit()
            return run.status, run.spent_usd

    def _install_signal_handler(self) -> None:
        for signum in (signal.SIGTERM, signal.SIGINT):
            try:
                asyncio.get_running_loop().add_signal_handler(signum, self._on_signal)
            except (NotImplementedError, RuntimeError, ValueError):
                pass

    def _on_signal(self) -> None:
        """SIGTERM (the app's cancel) or Ctrl-C: stop dispatching, let in-flight calls finish, end as cancelled."""
        self.stop_reason = "cancel"
        for child in self.children:
            if child.is_alive():
                os.kill(child.pid, signal.SIGTERM)

    def _finish(self) -> RunProgress:
        if self.shard is not None:
            status = {"cancel": "cancelled", "budget": "budget_stopped"}.get(self.stop_reason or "", "done")
            return self.snapshot(status)
        with Session(self.engine) as session:
            run = _get_run(session, self.run_id)
            pending = len(session.exec(select(Response.id).where(
                Response.run_id == self.run_id, Response.status == "pending")).all())
            if self.stop_reason == "cancel" or run.status == CANCEL_REQUEST:
                run.status = "cancelled"
            elif pending and self.stop_reason == "budget":
                run.status = "budget_stopped"
            elif pending:
                run.status = "pending"
            else:
                run.status = "done"
            run.message = "; ".join([f"{self.counts['done']} done, {self.counts['failed']} failed, {pending} pending",
                                     f"spent ${run.spent_usd:.4f}", *self.notes])
            run.finished_at = utc_now() if run.status != "pending" else None
            session.add(run)
            session.commit()
            status = run.status
        log.info("run %s %s", self.run_id, status)
        return self.snapshot(status)


async def execute_run(
    engine: Engine,
    run_id: int,
    *,
    progress: ProgressFn | None = None,
    clock: Clock | None = None,
    overrides: dict[str, Any] | None = None,
) -> RunProgress:
    """Process every pending item of the run; ends done, budget_stopped or cancelled, every item done/failed/listed."""
    options = run_options(engine, run_id)
    for key, value in (overrides or {}).items():
        if value is not None:
            setattr(options, key, value)
    if overrides:
        _save_options(engine, run_id, options)
    execution = _Execution(engine, run_id, options, clock, progress)
    if options.workers > 1:
        return await execution.run_sharded(options.workers)
    return await execution.run()


SHARD_EXIT_CODES = {"cancelled": 3, "budget_stopped": 4}
SHARD_EXIT_REASONS = {3: "cancel", 4: "budget"}


def shard_options(options: RunOptions, workers: int) -> RunOptions:
    """One worker's share of the options: concurrency, RPM and TPM divided by `workers` (concurrency rounded up)."""
    share = RunOptions(**asdict(options))
    share.workers = 1
    share.concurrency = max(1, -(-options.concurrency // workers))
    share.rpm = options.rpm / workers if options.rpm else options.rpm
    share.tpm = options.tpm / workers if options.tpm else options.tpm
    return share


def shareable_url(engine: Engine) -> str:
    """The engine's URL for worker processes to connect with; an in-memory SQLite database cannot be shared."""
    if engine.dialect.name == "sqlite" and engine.url.database in (None, "", ":memory:"):
        raise ValueError("--workers > 1 needs a database file or server, not in-memory SQLite")
    return engine.url.render_as_string(hide_password=False)


def _process_context() -> Any:
    """fork where available (workers start without re-importing anything), else spawn."""
    methods = multiprocessing.get_all_start_methods()
    return multiprocessing.get_context("fork" if "fork" in methods else "spawn")


def _shard_main(url: str, run_id: int, shard: int, shards: int, options: dict[str, Any]) -> None:
    """A worker process: run shard `shard` of `shards` on its own engine and client; exit code tells how it ended."""
    for signum in (signal.SIGTERM, signal.SIGINT):
        signal.signal(signum, signal.SIG_DFL)
    try:
        signal.set_wakeup_fd(-1)  # a forked child must not wake the parent's event loop
    except ValueError:
        pass
    from core.store.db import make_engine

    engine = make_engine(url)
    try:
        result = asyncio.run(_Execution(engine, run_id, RunOptions(**options), None, None, (shard, shards)).run())
    finally:
        engine.dispose()
    sys.exit(SHARD_EXIT_CODES.get(result.status, 0))


def _save_options(engine: Engine, run_id: int, options: RunOptions) -> None:
    with Session(engine) as session:
        run = _get_run(session, run_id)
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


_LAUNCHED: dict[int, subprocess.Popen] = {}


def launch_in_background(engine: Engine, run_id: int, *, log_dir: str | os.PathLike | None = None) -> int:
    """Start `python -m core.cli run --resume RUN_ID` detached (it survives the caller); records and returns its pid."""
    from pathlib import Path

    logs = Path(log_dir or os.environ.get("GAUNTLET_LOG_DIR") or REPO_ROOT / "var" / "logs")
    logs.mkdir(parents=True, exist_ok=True)
    with open(logs / f"run-{run_id}.log", "ab") as out:
        process = subprocess.Popen(
            [sys.executable, "-m", "core.cli", "run", "--resume", str(run_id), "--quiet"],
            cwd=REPO_ROOT, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True,
        )
    _LAUNCHED[process.pid] = process
    with Session(engine) as session:
        run = _get_run(session, run_id)
        run.config = {**run.config, "pid": process.pid}
        session.add(run)
        session.commit()
    return process.pid


def process_alive(pid: int | None) -> bool:
    """Whether the process `pid` is still running (reaping it if we launched it)."""
    if not pid:
        return False
    if pid in _LAUNCHED:
        return _LAUNCHED[pid].poll() is None
    try:
        os.kill(pid, 0)
    except (ProcessLookupError, PermissionError):
        return False
    return True


def cancel_run(engine: Engine, run_id: int) -> str:
    """Cancel a run: ask the runner to stop, signal its process; a run whose process is gone is marked cancelled."""
    request_cancel(engine, run_id)
    with Session(engine) as session:
        run = _get_run(session, run_id)
        pid = run.config.get("pid")
        if run.status == CANCEL_REQUEST and process_alive(pid):
            os.kill(pid, signal.SIGTERM)
        elif run.status == CANCEL_REQUEST:
            run.status, run.finished_at = "cancelled", utc_now()
            session.add(run)
            session.commit()
        return run.status


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


def launch_run(engine: Engine, principal: Principal | None, options: RunOptions) -> tuple[int, int]:
    """An admin creates a run from `options` and starts it (generation, then scoring) in the background.

    Re-checked server-side (launch_run); returns (run id, process id).
    """
    authorize(engine, principal, "launch_run")
    run_id = create_run(engine, options)
    return run_id, launch_in_background(engine, run_id)


def stop_run(engine: Engine, principal: Principal | None, run_id: int) -> str:
    """An admin cancels a run (re-checked: cancel_run); the run's status afterwards."""
    authorize(engine, principal, "cancel_run")
    return cancel_run(engine, run_id)


@dataclass(frozen=True)
class StageLine:
    """One line of a run's pipeline progress: generation, or scoring with one judge."""

    stage: str  # generation | scoring
    judge: str | None
    done: int
    total: int
    state: str  # waiting | running | finished | not scored | stopped

    @property
    def fraction(self) -> float:
        return self.done / self.total if self.total else (1.0 if self.state == "finished" else 0.0)


def _scoring_line(judges: list[str], position: int, info: dict[str, Any], run_status: str, responses: int) -> StageLine:
    """Scoring progress of judges[position] from the run row's pipeline stage (judges score one after another)."""
    judge, stage = judges[position], info.get("stage")
    if stage == "finished":
        scored = run_status == "done"  # the pipeline scores only a run whose generation finished
        return StageLine("scoring", judge, responses if scored else 0, responses, "finished" if scored else "not scored")
    if stage != "scoring" or info.get("judge") not in judges:
        return StageLine("scoring", judge, 0, 0, "waiting")
    current, total = judges.index(info["judge"]), int(info.get("total", 0))
    if position < current:
        return StageLine("scoring", judge, total, total, "finished")
    if position > current:
        return StageLine("scoring", judge, 0, total, "waiting")
    done = int(info.get("done", 0))
    return StageLine("scoring", judge, done, total, "finished" if done >= total else "running")


def pipeline_progress(engine: Engine, run_id: int, snapshot: RunProgress | None = None) -> list[StageLine]:
    """Generation (from the run's responses), then one scoring line per chosen judge (from the run row's stage).

    A line still waiting or running whose background process is gone reads "stopped". Pass `snapshot` when the
    caller already holds the run's progress_snapshot.
    """
    snap = snapshot or progress_snapshot(engine, run_id)
    with Session(engine) as session:
        config = dict(_get_run(session, run_id).config or {})
    info, judges, pid = dict(config.get("pipeline") or {}), split_judges(config.get("judge")), config.get("pid")
    generation = "finished" if snap.status in FINAL_STATUSES else "waiting" if snap.status == "pending" else "running"
    lines = [StageLine("generation", None, snap.finished, snap.total, generation)]
    lines += [_scoring_line(judges, i, info, snap.status, snap.done) for i in range(len(judges))]
    if info.get("stage") != "finished" and pid and not process_alive(pid):
        lines = [replace(line, state="stopped") if line.state in ("waiting", "running") else line for line in lines]
    return lines
