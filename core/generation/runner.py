"""The run executor: answers a run's pending (model, instance, condition) items concurrently with the cache, rate
limits, budget, context-window policy and resume guarantees."""

from __future__ import annotations

import asyncio
import contextlib
import gc
import logging
import multiprocessing
import os
import signal
import sys
import time
from collections import defaultdict
from collections.abc import Collection
from dataclasses import asdict, replace
from multiprocessing import connection as mp_connection
from typing import Any

from sqlalchemy import bindparam, update
from sqlalchemy.engine import Connection, Engine
from sqlalchemy.exc import OperationalError
from sqlmodel import Session, col, select

from core.config import redact
from core.generation.llm import LLMClient, config_from_model, repeat_config
from core.generation.providers.base import ChatMessage, Completion, ProviderError
from core.generation.ratelimit import Clock, RateLimiter
from core.generation.registered_models import check_prices
from core.generation.run_progress import ProgressFn, RunProgress, progress_snapshot
from core.generation.run_prompts import ItemPrompt, PromptBook, load_prompt_plans
from core.generation.runs import (
    CANCEL_REQUEST,
    PendingItem,
    RunOptions,
    check_options,
    get_run,
    pending_items,
    run_options,
    save_options,
)
from core.metrics import resolve_hook
from core.store.db import saved_id, select_columns, table_of
from core.store.leases import Fence, Holding, LeaseLost, check_fences, release_lease, renew_lease, run_lease, take_lease
from core.store.models import Model, Response, Run, utc_now
from core.store.writes import DatabaseLocked, GroupWriter, Merged, Write, db_patience, with_lock_patience

log = logging.getLogger("gauntlet.runner")

MONITOR_INTERVAL_S = 0.5
# Executors other than this module's, by the run option that picks them, as 'module:function' names imported only when
# a run asks for one: ray is an optional extra, and its executor builds on this module (no import back to it).
EXECUTOR_HOOKS = {"ray": "core.generation.ray_executor:execute_on_ray"}

RESPONSES = table_of(Response)
RUNS = table_of(Run)
RESPONSE_DONE = update(RESPONSES).where(RESPONSES.c.id == bindparam("p_id")).values(
    status="done", text=bindparam("p_text"), reasoning=bindparam("p_reasoning"),
    reasoning_state=bindparam("p_reasoning_state"), reasoning_tokens=bindparam("p_reasoning_tokens"), error=None, attempts=RESPONSES.c.attempts + bindparam("p_attempts"),
    cache_key=bindparam("p_cache_key"), cached=bindparam("p_cached"), latency_ms=bindparam("p_latency"),
    input_tokens=bindparam("p_in"), output_tokens=bindparam("p_out"), cost_usd=bindparam("p_cost"), reserved_usd=None,
    prompt_meta=bindparam("p_meta", type_=RESPONSES.c.prompt_meta.type),
    finished_at=bindparam("p_finished", type_=RESPONSES.c.finished_at.type),
)
RESPONSE_FAILED = update(RESPONSES).where(RESPONSES.c.id == bindparam("p_id")).values(
    status="failed", error=bindparam("p_error"), attempts=RESPONSES.c.attempts + bindparam("p_attempts"),
    reserved_usd=None, prompt_meta=bindparam("p_meta", type_=RESPONSES.c.prompt_meta.type),
    finished_at=bindparam("p_finished", type_=RESPONSES.c.finished_at.type),
)
RUN_SPEND = update(RUNS).where(RUNS.c.id == bindparam("p_id")).values(
    spent_usd=RUNS.c.spent_usd + bindparam("p_paid"), reserved_usd=RUNS.c.reserved_usd - bindparam("p_released"))
RUN_RESERVE = update(RUNS).where(RUNS.c.id == bindparam("p_id")).values(
    reserved_usd=RUNS.c.reserved_usd + bindparam("p_amount"))
RUN_RESERVE_WITHIN = RUN_RESERVE.where(
    RUNS.c.spent_usd + RUNS.c.reserved_usd + RUNS.c.rebought_usd + bindparam("p_amount") <= bindparam("p_limit"))
RESPONSE_RESERVE = update(RESPONSES).where(RESPONSES.c.id == bindparam("p_id")).values(
    reserved_usd=bindparam("p_amount"))
BUDGET_SLACK_USD = 1e-12
FINAL_STATUS_PATIENCE_S = 60.0  # the run's last word waits longer for a locked database than item writes do
RESERVE_RETRY_S = 0.5


def by_provider(items: list[PendingItem], models: dict[int, Model]) -> dict[str, list[PendingItem]]:
    """The items per provider of their model, in their order (each provider's queue)."""
    groups: dict[str, list[PendingItem]] = {}
    for item in items:
        groups.setdefault(models[item.model_id].provider, []).append(item)
    return groups


FEED_CHUNK = 256  # items of a queue whose prompts are built, and cache looked up, at a time


class _PromptFeed:
    """The items' prompts, built (and their cached answers looked up) chunk by chunk in each queue's order as the
    workers reach them, and let go once handed out: a run holds a few chunks' prompts, never every item's."""

    def __init__(self, engine: Engine, options: RunOptions, configs: dict[int, Any],
                 clients: dict[tuple[int, int], LLMClient], queues: dict[str, list[PendingItem]]) -> None:
        self.engine, self.options, self.configs, self.clients = engine, options, configs, clients
        self.chunks: dict[tuple[str, int], list[PendingItem]] = {}
        self.chunk_of: dict[int, tuple[str, int]] = {}
        for provider, items in queues.items():
            for start in range(0, len(items), FEED_CHUNK):
                self.chunks[provider, start] = items[start : start + FEED_CHUNK]
                self.chunk_of.update(dict.fromkeys((i.response_id for i in self.chunks[provider, start]),
                                                   (provider, start)))
        self.loaded: dict[tuple[str, int], dict[int, ItemPrompt]] = {}

    def take(self, item: PendingItem) -> ItemPrompt:
        """The item's prompt (its chunk built on first need); the feed keeps it no longer."""
        where = self.chunk_of.pop(item.response_id)
        if where not in self.loaded:
            self.loaded[where] = self._build(self.chunks.pop(where))
        prompts = self.loaded[where]
        prompt = prompts.pop(item.response_id)
        if not prompts:
            del self.loaded[where]
        return prompt

    def _build(self, chunk: list[PendingItem]) -> dict[int, ItemPrompt]:
        with Session(self.engine) as session:
            plans = load_prompt_plans(session, [item.key for item in chunk], self.options.order, self.options.seed)
        book = PromptBook(plans, self.options.context_policy)
        prompts = {item.response_id: book.item(self.configs[item.model_id], item.key) for item in chunk}
        for (model_id, repeat), client in self.clients.items():
            mine = [prompts[i.response_id].messages for i in chunk
                    if (i.model_id, i.repeat) == (model_id, repeat) and prompts[i.response_id].error is None]
            if mine:
                client.preload(mine)
        return prompts


class BudgetReached(Exception):
    """A call's reservation would take the run's spend + reservations past its budget: the call is not sent."""


class _Execution:
    """State of one execution of a run's pending items: one process, or one shard of a multi-process run.

    Every write it makes checks `fences` (its holding's, or the run lease's generation handed down by the process
    holding it) in the same transaction: once a lease was taken over, each write is refused (LeaseLost), the
    execution stops at once (no further call is sent: a call's reservation is a write) and the run is left to the
    new owner."""

    def __init__(self, engine: Engine, run_id: int, options: RunOptions, clock: Clock | None,
                 progress: ProgressFn | None, shard: tuple[int, int] | None = None,
                 holding: Holding | None = None, only: Collection[int] | None = None,
                 fences: list[Fence] | None = None) -> None:
        self.engine = engine
        self.holding = holding
        self.fences = list(fences) if fences is not None else [holding.fence] if holding is not None else []
        self.lost: LeaseLost | None = None
        self.dispatch: asyncio.Future[Any] | None = None
        self.only = None if only is None else set(only)  # a shard given as response ids (the Ray executor's)
        self.released = asyncio.Event()
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
        return budget is not None and self.spent >= budget - BUDGET_SLACK_USD

    async def run(self) -> RunProgress:
        """Answer every pending item of this execution with `concurrency` calls in flight per provider."""
        gc.freeze()  # the objects alive before and through the set-up are left out of the cyclic GC's scans
        try:
            return await self._run()
        finally:
            gc.unfreeze()

    async def _run(self) -> RunProgress:
        with Session(self.engine) as session:
            items = pending_items(session, self.run_id, self.shard)
            if self.only is not None:
                items = [item for item in items if item.response_id in self.only]
            models = {saved_id(m): m for m in session.exec(select(Model))}
            run = get_run(session, self.run_id)
            self.spent = run.spent_usd
            self.total = len(session.exec(select(Response.id).where(Response.run_id == self.run_id)).all())
            self.counts["done"] = len(session.exec(select(Response.id).where(
                Response.run_id == self.run_id, Response.status == "done")).all())
            self.counts["failed"] = len(session.exec(select(Response.id).where(
                Response.run_id == self.run_id, Response.status == "failed")).all())
        check_prices([models[model_id] for model_id in {item.model_id for item in items}])
        self.pending = len(items)
        configs = {model_id: config_from_model(models[model_id]) for model_id in {item.model_id for item in items}}
        self._mark_started()
        queues = self._queues(items, models)
        shared_budget = self.shard is not None and self.options.budget_usd is not None
        self.writer = GroupWriter(self.engine, observe=self._observe_spend if shared_budget else None,
                                  guard=self._guard if self.fences else None)
        clients = {(mid, r): self._client(models[mid], r) for mid, r in {(i.model_id, i.repeat) for i in items}}
        prompts = _PromptFeed(self.engine, self.options, configs, clients, by_provider(items, models))
        monitor = asyncio.create_task(self._monitor())
        self._install_signal_handler()
        gc.freeze()
        try:
            self.dispatch = asyncio.gather(*(self._worker(queue, clients, prompts) for queue in queues.values()
                                             for _ in range(max(1, self.options.concurrency))))
            await self.dispatch
        except asyncio.CancelledError:
            if self.lost is None:
                raise  # cancelled from outside; a lost lease cancels the workers and ends below
        finally:
            monitor.cancel()
            self.writer.close()
            await asyncio.gather(*(client.aclose() for client in clients.values()), return_exceptions=True)
        return self._finish()

    def _queues(self, items: list[PendingItem], models: dict[int, Model]) -> dict[str, asyncio.Queue[PendingItem]]:
        queues: dict[str, asyncio.Queue[PendingItem]] = {}
        for provider, mine in by_provider(items, models).items():
            queues[provider] = asyncio.Queue()
            for item in mine:
                queues[provider].put_nowait(item)
        self.limiters = {p: RateLimiter(self.options.rpm, self.options.tpm, self.clock) for p in queues}
        self.models = models
        return queues

    def _client(self, model: Model, repeat: int) -> LLMClient:
        limiter = None if model.is_baseline else self.limiters.get(model.provider)
        return LLMClient(repeat_config(config_from_model(model), repeat), self.engine, max_retries=self.options.max_retries,
                         limiter=limiter, clock=self.clock, writer=self.writer,
                         max_connections=max(1, self.options.concurrency))

    async def _worker(self, queue: asyncio.Queue[PendingItem], clients: dict[tuple[int, int], LLMClient],
                      prompts: _PromptFeed) -> None:
        while not queue.empty():
            if self.stop_reason or self.budget_reached():
                self.stop_reason = self.stop_reason or "budget"
                return
            item = queue.get_nowait()
            prompt = prompts.take(item)
            if prompt.error is not None:  # over the context window under 'refuse': never sent, never paid
                await self._write_failed(item, f"context_window: {prompt.error}", 0, prompt.meta)
                continue
            await self._process(item, clients[(item.model_id, item.repeat)], prompt.messages, prompt.meta)

    async def _process(self, item: PendingItem, client: LLMClient, messages: list[ChatMessage], meta: dict) -> None:
        """Reserve the call's cost, send it, and persist the answer with its spend in one transaction on arrival."""
        reserved: float | None = None

        async def reserve(amount: float) -> None:
            nonlocal reserved
            await self._reserve(item, amount)
            reserved = amount

        try:
            completion = await client.complete(messages, purpose="generate", reserve=reserve,
                                               persist=lambda c: self._done_writes(item, c, meta, reserved))
        except BudgetReached:
            self.stop_reason = self.stop_reason or "budget"  # never sent: the item stays pending
            return
        except LeaseLost as error:  # the reservation or the answer was refused: the run is someone else's now
            self._lose_lease(error)
            return
        except DatabaseLocked as error:
            self._stop_for_database(error)  # the item stays pending; a reserved call in flight is re-bought on resume
            return
        except ProviderError as error:
            await self._write_failed(item, f"{error.kind}: {redact(str(error))}", getattr(error, "attempts", 1), meta,
                                     reserved)
            return
        except Exception as error:  # noqa: BLE001 - nothing is silently skipped: the item fails with the reason
            log.exception("item %s failed unexpectedly", item.response_id)
            await self._write_failed(item, f"unexpected: {redact(f'{type(error).__name__}: {error}')}", 1, meta,
                                     reserved)
            return
        self.spent += 0.0 if completion.cached else completion.cost_usd
        self._release_wakeup(reserved)
        self.counts["cached"] += int(completion.cached)
        self._advance("done")

    def _done_writes(self, item: PendingItem, completion: Completion, meta: dict, reserved: float | None) -> list[Write]:
        """The writes that record an answer: the response done and the run's spend (its reservation released)."""
        writes: list[Write] = [(RESPONSE_DONE, {
            "p_id": item.response_id, "p_text": completion.text, "p_attempts": completion.attempts,
            "p_reasoning": completion.reasoning or None, "p_reasoning_state": completion.reasoning_state,
            "p_reasoning_tokens": completion.reasoning_tokens,
            "p_cache_key": completion.cache_key, "p_cached": completion.cached, "p_latency": completion.latency_ms,
            "p_in": completion.input_tokens, "p_out": completion.output_tokens, "p_cost": completion.cost_usd,
            "p_meta": meta, "p_finished": utc_now(),
        })]
        paid = 0.0 if completion.cached else completion.cost_usd
        if paid or reserved:
            writes.append((RUN_SPEND, {"p_id": self.run_id, "p_paid": paid, "p_released": reserved or 0.0}))
        return writes

    async def _reserve(self, item: PendingItem, amount: float) -> None:
        """Reserve `amount` on the run before sending (marks the call in flight); waits while other calls in flight
        may free budget, raises BudgetReached when the budget cannot cover it."""
        while True:
            ok, in_flight = await self.writer.commit(Merged(self._try_reserve_many, (item.response_id, amount)))
            if ok:
                return
            if self.stop_reason or in_flight <= BUDGET_SLACK_USD:
                raise BudgetReached()
            self.released.clear()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self.released.wait(), RESERVE_RETRY_S)

    def _try_reserve_many(self, conn: Connection, requests: list[tuple[int, float]]) -> list[tuple[bool, float]]:
        """Reserve every (response id, amount) at once when the budget covers them all (two statements), else one
        by one as _try_reserve."""
        total = sum(amount for _, amount in requests)
        budget = self.options.budget_usd
        if budget is None:
            reserved = conn.execute(RUN_RESERVE, {"p_id": self.run_id, "p_amount": total}).rowcount
        else:
            reserved = conn.execute(RUN_RESERVE_WITHIN, {"p_id": self.run_id, "p_amount": total,
                                                         "p_limit": budget + BUDGET_SLACK_USD}).rowcount
        if not reserved:
            return [self._try_reserve(conn, response_id, amount) for response_id, amount in requests]
        conn.execute(RESPONSE_RESERVE, [{"p_id": response_id, "p_amount": amount} for response_id, amount in requests])
        return [(True, 0.0)] * len(requests)

    def _try_reserve(self, conn: Connection, response_id: int, amount: float) -> tuple[bool, float]:
        condition = RUNS.c.id == self.run_id
        budget = self.options.budget_usd
        if budget is not None:
            committed = RUNS.c.spent_usd + RUNS.c.reserved_usd + RUNS.c.rebought_usd
            condition = condition & (committed + amount <= budget + BUDGET_SLACK_USD)
        if conn.execute(update(RUNS).where(condition).values(reserved_usd=RUNS.c.reserved_usd + amount)).rowcount:
            conn.execute(update(RESPONSES).where(RESPONSES.c.id == response_id).values(reserved_usd=amount))
            return True, 0.0
        reserved = conn.execute(select(RUNS.c.reserved_usd).where(RUNS.c.id == self.run_id)).scalar_one()
        return False, float(reserved or 0.0)

    def _release_wakeup(self, reserved: float | None) -> None:
        if reserved:
            self.released.set()

    def _guard(self, conn: Connection) -> float | None:
        """First in every write transaction: the fences still hold (LeaseLost otherwise); when they expire."""
        return check_fences(conn, self.fences)

    def _lose_lease(self, error: LeaseLost) -> None:
        """A write was refused by the fence: stop at once (cancel every worker, calls in flight included; their
        answers could not be recorded, and the new owner counted them as re-bought when it took the run over)."""
        if self.lost is None:
            self.lost = error
            log.error("%s", error)
        self.stop_reason = "lease_lost"
        if self.dispatch is not None and not self.dispatch.done():
            self.dispatch.cancel()

    def _stop_for_database(self, error: DatabaseLocked) -> None:
        if self.stop_reason != "database":
            self.notes.append(f"stopped: {error}; resume with gauntlet run --resume {self.run_id}")
        self.stop_reason = "database"

    async def _write_failed(self, item: PendingItem, reason: str, attempts: int, meta: dict,
                            reserved: float | None = None) -> None:
        writes: list[Write] = [(RESPONSE_FAILED, {"p_id": item.response_id, "p_error": reason,
                                                  "p_attempts": attempts, "p_meta": meta, "p_finished": utc_now()})]
        if reserved:
            writes.append((RUN_SPEND, {"p_id": self.run_id, "p_paid": 0.0, "p_released": reserved}))
        try:
            await self.writer.commit(writes)
        except DatabaseLocked as error:
            self._stop_for_database(error)
            return
        except LeaseLost as error:
            self._lose_lease(error)
            return
        self._release_wakeup(reserved)
        log.warning("item %s failed: %s", item.response_id, reason)
        self._advance("failed")

    def _advance(self, status: str) -> None:
        self.counts[status] += 1
        self.pending -= 1
        self.report(self.snapshot())

    def report(self, snapshot: RunProgress) -> None:
        """Hand `snapshot` to the progress callback with this execution's fences (its writes check them: a refusal
        stops the execution as ours do); nothing once the lease is lost."""
        if self.progress is None or self.stop_reason == "lease_lost":
            return
        try:
            self.progress(replace(snapshot, fences=tuple(self.fences)))
        except LeaseLost as error:
            self._lose_lease(error)

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
        processes = [context.Process(target=_shard_main, args=(url, self.run_id, k, workers, share, self.fences),
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
            await self._beat()
            snapshot = await asyncio.to_thread(progress_snapshot, self.engine, self.run_id,
                                               time.monotonic() - self.started)
            if snapshot.status == CANCEL_REQUEST:
                self.stop_reason = "cancel"
            self.report(snapshot)
        for process in processes:
            process.join()
            self._collect_exit(process)
        snapshot = progress_snapshot(self.engine, self.run_id)
        self.total, self.spent = snapshot.total, snapshot.spent_usd
        self.counts.update(done=snapshot.done, failed=snapshot.failed, cached=snapshot.cached)
        return self._finish()

    def _collect_exit(self, process: Any) -> None:
        reason = SHARD_EXIT_REASONS.get(process.exitcode)
        if "lease_lost" in (reason, self.stop_reason):
            self.stop_reason = "lease_lost"
        elif reason:
            self.stop_reason = "cancel" if "cancel" in (reason, self.stop_reason) else reason
        elif process.exitcode:
            self.notes.append(f"{process.name} exited with code {process.exitcode}; resume finishes its items")

    def _record_workers(self, pids: list[int]) -> None:
        with Session(self.engine) as session:
            check_fences(session.connection(), self.fences)
            run = get_run(session, self.run_id)
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
            check_fences(session.connection(), self.fences)
            run = get_run(session, self.run_id)
            run.status = CANCEL_REQUEST if run.status == CANCEL_REQUEST else "running"  # a cancel while starting holds
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
            status, spent = await self._beat()
            if self.shard is not None:
                self.spent = max(self.spent, spent)
                if os.getppid() != self.parent_pid:
                    self.stop_reason = "cancel"  # the parent is gone: stop dispatching, leave the rest pending

    async def _beat(self) -> tuple[str, float]:
        """Heartbeat (and lease renewal); a locked database skips a beat, a lost lease stops the execution at once."""
        try:
            status, spent = await asyncio.to_thread(self._heartbeat)
        except OperationalError as error:
            log.warning("heartbeat of run %s skipped: %s", self.run_id, str(error).splitlines()[0])
            return "running", self.spent
        except LeaseLost as error:
            self._lose_lease(error)
            return "running", self.spent
        if status == CANCEL_REQUEST:
            self.stop_reason = "cancel"
        return status, spent

    def _heartbeat(self) -> tuple[str, float]:
        with self.engine.begin() as conn:
            check_fences(conn, self.fences)
            if self.holding is not None:
                renew_lease(conn, self.holding)
            conn.execute(update(RUNS).where(RUNS.c.id == self.run_id).values(heartbeat_at=utc_now()))
            row = conn.execute(select(RUNS.c.status, RUNS.c.spent_usd).where(RUNS.c.id == self.run_id)).one()
            return row.status, float(row.spent_usd or 0.0)

    def _install_signal_handler(self) -> None:
        for signum in (signal.SIGTERM, signal.SIGINT):
            with contextlib.suppress(NotImplementedError, RuntimeError, ValueError):
                asyncio.get_running_loop().add_signal_handler(signum, self._on_signal)

    def _on_signal(self) -> None:
        """SIGTERM (the app's cancel) or Ctrl-C: stop dispatching, let in-flight calls finish, end as cancelled."""
        self.stop_reason = "cancel"
        for child in self.children:
            if child.is_alive():
                os.kill(child.pid, signal.SIGTERM)

    def _finish(self) -> RunProgress:
        if self.stop_reason == "lease_lost":
            raise self.lost or LeaseLost(f"lease of run {self.run_id} taken over; stopping")  # write nothing more
        if self.shard is not None:
            status = {"cancel": "cancelled", "budget": "budget_stopped"}.get(self.stop_reason or "", "done")
            return self.snapshot(status)
        status = with_lock_patience(self.engine, self._write_final_status, db_patience() + FINAL_STATUS_PATIENCE_S)
        log.info("run %s %s", self.run_id, status)
        return self.snapshot(status)

    def _write_final_status(self, conn: Connection) -> str:
        check_fences(conn, self.fences)
        run = conn.execute(select_columns(RUNS).where(RUNS.c.id == self.run_id)).one()
        pending = conn.execute(select(RESPONSES.c.id).where(RESPONSES.c.run_id == self.run_id,
                                                            RESPONSES.c.status == "pending")).all()
        if self.stop_reason == "cancel" or run.status == CANCEL_REQUEST:
            status = "cancelled"
        elif pending and self.stop_reason == "budget":
            status = "budget_stopped"
        else:
            status = "pending" if pending else "done"
        self.spent = float(run.spent_usd)
        rebought = [rebought_note(run.rebought_calls, run.rebought_usd)] if run.rebought_calls else []
        message = "; ".join([f"{self.counts['done']} done, {self.counts['failed']} failed, {len(pending)} pending",
                             f"spent ${run.spent_usd:.4f}", *rebought, *self.notes])
        conn.execute(update(RUNS).where(RUNS.c.id == self.run_id).values(
            status=status, message=message, finished_at=utc_now() if status != "pending" else None))
        return status


def rebought_note(calls: int, usd: float) -> str:
    """How many calls were in flight when an executor died (their answers lost, so bought again) and their cost."""
    return f"re-bought: {calls} calls, ${usd:.4f} (in flight when an executor died; reserved at max output tokens)"


def recover_in_flight(engine: Engine, run_id: int, fences: list[Fence]) -> tuple[int, float]:
    """Under the run's lease (checked: `fences`), before anything is sent: the calls still marked in flight were
    lost with a dead or taken-over executor (their answers never saved); count them as re-bought on the run and clear
    every reservation."""
    def recover(conn: Connection) -> tuple[int, float]:
        check_fences(conn, fences)
        lost = conn.execute(select(RESPONSES.c.reserved_usd).where(
            RESPONSES.c.run_id == run_id, col(RESPONSES.c.reserved_usd).is_not(None))).scalars().all()
        calls, usd = len(lost), float(sum(lost))
        if calls:
            conn.execute(update(RESPONSES).where(RESPONSES.c.run_id == run_id,
                                                 col(RESPONSES.c.reserved_usd).is_not(None)).values(reserved_usd=None))
        conn.execute(update(RUNS).where(RUNS.c.id == run_id).values(
            reserved_usd=0.0, rebought_calls=RUNS.c.rebought_calls + calls, rebought_usd=RUNS.c.rebought_usd + usd))
        conn.execute(update(RUNS).where(RUNS.c.id == run_id, RUNS.c.status == CANCEL_REQUEST).values(status="pending"))
        return calls, usd

    return with_lock_patience(engine, recover)


async def execute_run(
    engine: Engine,
    run_id: int,
    *,
    progress: ProgressFn | None = None,
    clock: Clock | None = None,
    overrides: dict[str, Any] | None = None,
    wait_s: float = 0.0,
) -> RunProgress:
    """Process every pending item of the run; ends done, budget_stopped or cancelled, every item done/failed/listed.

    The run is owned by one live executor at a time: its lease is taken first (LeaseHeld, naming the owner, when
    another live executor holds it after waiting `wait_s` seconds) and renewed by the heartbeat.
    """
    with Session(engine) as session:
        get_run(session, run_id)
    holding = await asyncio.to_thread(take_lease, engine, run_lease(run_id), "gauntlet run", wait_s=wait_s)
    try:
        options = run_options(engine, run_id)
        for key, value in (overrides or {}).items():
            if value is not None:
                setattr(options, key, value)
        check_options(options)
        if overrides:
            save_options(engine, run_id, options, [holding.fence])
        calls, usd = recover_in_flight(engine, run_id, [holding.fence])  # also drops a cancel request left by a dead owner
        if calls:
            log.warning("run %s: %s", run_id, rebought_note(calls, usd))
        execution = _Execution(engine, run_id, options, clock, progress, holding=holding)
        if options.executor in EXECUTOR_HOOKS:
            return await resolve_hook(EXECUTOR_HOOKS[options.executor])(execution)
        if options.workers > 1:
            return await execution.run_sharded(options.workers)
        return await execution.run()
    finally:
        try:
            release_lease(engine, holding)  # only if still ours
        except OperationalError as error:  # the lease expires on its own
            log.warning("could not release the lease of run %s: %s", run_id, str(error).splitlines()[0])


SHARD_EXIT_CODES = {"cancelled": 3, "budget_stopped": 4}
SHARD_LEASE_LOST = 5
SHARD_EXIT_REASONS = {3: "cancel", 4: "budget", SHARD_LEASE_LOST: "lease_lost"}


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


def _shard_main(url: str, run_id: int, shard: int, shards: int, options: dict[str, Any], fences: list[Fence]) -> None:
    """A worker process: run shard `shard` of `shards` on its own engine and client, its writes fenced by the run's
    lease (held by the parent); exit code tells how it ended."""
    for signum in (signal.SIGTERM, signal.SIGINT):
        signal.signal(signum, signal.SIG_DFL)
    with contextlib.suppress(ValueError):
        signal.set_wakeup_fd(-1)  # a forked child must not wake the parent's event loop
    from core.store.db import make_engine

    engine = make_engine(url)
    try:
        result = asyncio.run(_Execution(engine, run_id, RunOptions(**options), None, None, (shard, shards),
                                        fences=fences).run())
    except LeaseLost as error:
        print(error, file=sys.stderr)
        sys.exit(SHARD_LEASE_LOST)
    finally:
        engine.dispose()
    sys.exit(SHARD_EXIT_CODES.get(result.status, 0))


