"""The Ray executor (`gauntlet run --executor ray [--address ADDR]`): a run's pending (model, instance, condition)
items as Ray tasks on a local instance or a cluster, with the local runner's guarantees.

The driver (the process holding the run's lease) only plans, submits and waits: it deals the pending items into
shards, submits one task per shard and renews the run's lease while they run. Each task connects to the run's
database by URL (a SQLite file or a server), takes its shard's lease and runs the local runner's per-item path on its
items: the LLM call cache, each call's worst case reserved against the budget before it is sent, each answer saved
with its spend on arrival. Items with the same cache key share a shard, so a prompt is paid once, as in one process.

Every write of a task is fenced by the run's lease generation (handed down by the driver) and its shard's: once
either was taken over (the driver or the task paused past the lease TTL while another executor took the run or the
shard over), the task's writes are refused, it sends no further call and ends with status "lease_lost".

A task whose worker dies is retried by Ray (TASK_RETRIES): the retry skips every answer already saved, and the calls
the dead worker had in flight are counted as re-bought (as after a kill -9 of a local run). A shard whose task still
fails has its pending items failed with the reason (`gauntlet run --retry-failed RUN` retries them).

Ray is imported only here, and only when a run uses this executor (`pip install 'rag-gauntlet[ray]'`). Task workers
read provider keys and endpoints from their own environment, as the driver does: a local instance inherits the
driver's; a cluster's nodes need them set, and the same version of this package installed.
"""

from __future__ import annotations

import asyncio
import logging
import os
import time
from dataclasses import asdict
from types import ModuleType
from typing import Any

from sqlalchemy import update
from sqlalchemy.engine import Connection, Engine
from sqlmodel import Session, col, select

from core.config import redact
from core.generation.llm import cache_key, config_from_model, repeat_config
from core.generation.run_progress import RunProgress, progress_snapshot
from core.generation.run_prompts import PromptBook, load_prompt_plans
from core.generation.runner import (
    MONITOR_INTERVAL_S,
    RESPONSES,
    RUNS,
    _Execution,
    shard_options,
    shareable_url,
)
from core.generation.runs import CANCEL_REQUEST, RunOptions, pending_items, request_cancel
from core.store.leases import (
    LEASE_POLL_S,
    Fence,
    LeaseLost,
    check_fences,
    lease_holder,
    lease_ttl,
    release_lease,
    take_lease,
)
from core.store.models import Model, utc_now
from core.store.writes import with_lock_patience

log = logging.getLogger("gauntlet.ray")

TASK_RETRIES = 3
USAGE_STATS_ENV = "RAY_USAGE_STATS_ENABLED"
LOOPBACK_ONLY_ENV = "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"
LOOPBACK = "127.0.0.1"
SHARD_STOPS = {"cancelled": "cancel", "budget_stopped": "budget"}


def connect(address: str | None = None, **local: Any) -> ModuleType:
    """Ray, imported now and connected (an existing connection is reused): to the cluster at `address` ('auto',
    HOST:PORT or ray://HOST:PORT), else to a new local instance on loopback without dashboard or usage statistics
    (`local`: more ray.init arguments, e.g. num_cpus)."""
    os.environ.setdefault(USAGE_STATS_ENV, "0")
    if not address:  # read when ray is imported: the node's address is 127.0.0.1 and every server binds loopback only
        os.environ.setdefault(LOOPBACK_ONLY_ENV, "0")
    try:
        import ray
    except ImportError as error:
        raise ValueError("--executor ray needs Ray: pip install 'rag-gauntlet[ray]'") from error
    if not ray.is_initialized():
        quiet: dict[str, Any] = {"log_to_driver": False, "logging_level": logging.WARNING}
        if address:
            ray.init(address=address, **quiet)
        else:
            ray.init(include_dashboard=False, _node_ip_address=LOOPBACK, **quiet, **local)
    return ray


def plan_shards(engine: Engine, run_id: int, options: RunOptions, shards: int) -> list[list[int]]:
    """The run's pending response ids in at most `shards` non-empty groups: the distinct calls (cache keys) dealt
    round-robin in id order, each item in the group of the first item with its key (so the call is paid once and the
    others answered from the cache, as in one process); an item refused by the context policy is a call of its own."""
    with Session(engine) as session:
        items = pending_items(session, run_id)
        models = {m.id: m for m in session.exec(select(Model))}
        plans = load_prompt_plans(session, [item.key for item in items], options.order, options.seed)
    book = PromptBook(plans, options.context_policy)
    configs = {model_id: config_from_model(models[model_id]) for model_id in {item.model_id for item in items}}
    groups: list[list[int]] = [[] for _ in range(max(1, shards))]
    shard_of: dict[str, int] = {}
    for item in items:
        prompt = book.item(configs[item.model_id], item.key)
        config = repeat_config(configs[item.model_id], item.repeat)
        key = cache_key(config, prompt.messages) if prompt.error is None else f"#{item.response_id}"
        groups[shard_of.setdefault(key, len(shard_of) % len(groups))].append(item.response_id)
    return [group for group in groups if group]


def shard_lease(run_id: int, shard: int) -> str:
    """The lease name of one shard of a run on Ray (held by the task executing it)."""
    return f"run:{run_id}:ray-shard:{shard}"


def recover_shard(engine: Engine, run_id: int, response_ids: list[int], fences: list[Fence]) -> tuple[int, float]:
    """Before a shard's task sends anything (its leases checked: `fences`): its items still marked in flight were lost
    with a dead earlier attempt; count them as re-bought on the run and release their reservations (the other shards'
    stay)."""
    wanted = set(response_ids)

    def recover(conn: Connection) -> tuple[int, float]:
        check_fences(conn, fences)
        rows = conn.execute(select(RESPONSES.c.id, RESPONSES.c.reserved_usd).where(
            RESPONSES.c.run_id == run_id, col(RESPONSES.c.reserved_usd).is_not(None))).all()
        lost = [row for row in rows if row.id in wanted]
        if not lost:
            return 0, 0.0
        usd = float(sum(row.reserved_usd for row in lost))
        conn.execute(update(RESPONSES).where(col(RESPONSES.c.id).in_([row.id for row in lost])).values(
            reserved_usd=None))
        conn.execute(update(RUNS).where(RUNS.c.id == run_id).values(
            reserved_usd=RUNS.c.reserved_usd - usd, rebought_calls=RUNS.c.rebought_calls + len(lost),
            rebought_usd=RUNS.c.rebought_usd + usd))
        return len(lost), usd

    return with_lock_patience(engine, recover)


def run_shard(url: str, run_id: int, shard: int, response_ids: list[int], options: dict[str, Any],
              run_fences: list[Fence]) -> dict[str, Any]:
    """A Ray task: one shard's pending items on its own engine and clients, under the shard's lease (a retry waits for
    a previous attempt that may still live), every write fenced by the run's lease (`run_fences`, the driver's) and
    the shard's; how it ended: status ("lease_lost" when a fence refused a write), notes and the calls re-bought from
    a dead attempt."""
    from core.store.db import make_engine

    engine = make_engine(url)
    rebought = 0
    try:
        holding = take_lease(engine, shard_lease(run_id, shard), "gauntlet run: Ray task",
                             wait_s=lease_ttl() + LEASE_POLL_S)
        fences: list[Fence] = [*((name, generation) for name, generation in run_fences), holding.fence]
        try:
            rebought, _ = recover_shard(engine, run_id, response_ids, fences)
            execution = _Execution(engine, run_id, RunOptions(**options), None, None, shard=(0, 1), holding=holding,
                                   only=response_ids, fences=fences)
            status, notes = asyncio.run(execution.run()).status, execution.notes
        except LeaseLost as error:
            status, notes = "lease_lost", [str(error)]
        finally:
            release_lease(engine, holding)
    finally:
        engine.dispose()
    return {"status": status, "notes": notes, "rebought": rebought, "pid": os.getpid()}


def fail_shard(engine: Engine, run_id: int, shard: int, response_ids: list[int], reason: str,
               fences: list[Fence]) -> int:
    """After a shard's task failed for good: its items still pending fail with `reason` (those in flight counted as
    re-bought first), under the driver's lease (`fences`); left pending while another live task holds the shard.
    Returns the items failed."""
    if lease_holder(engine, shard_lease(run_id, shard)) is not None:
        return 0
    recover_shard(engine, run_id, response_ids, fences)
    wanted = set(response_ids)

    def fail(conn: Connection) -> int:
        check_fences(conn, fences)
        pending = [i for i in conn.execute(select(RESPONSES.c.id).where(
            RESPONSES.c.run_id == run_id, RESPONSES.c.status == "pending")).scalars() if i in wanted]
        if pending:
            conn.execute(update(RESPONSES).where(col(RESPONSES.c.id).in_(pending)).values(
                status="failed", error=reason, finished_at=utc_now()))
        return len(pending)

    return with_lock_patience(engine, fail)


class _Driver:
    """Submits a run's shards as Ray tasks and waits for them, keeping the run's lease and heartbeat."""

    def __init__(self, execution: _Execution) -> None:
        self.execution = execution
        self.engine = execution.engine
        self.run_id = execution.run_id
        self.cancel_sent = False

    async def run(self) -> RunProgress:
        execution, options = self.execution, self.execution.options
        url = shareable_url(self.engine)
        with Session(self.engine) as session:
            anything = bool(pending_items(session, self.run_id))
        ray = connect(options.ray_address) if anything else None
        if ray is not None:
            cpus = int(ray.cluster_resources().get("CPU", 1))
            groups = await asyncio.to_thread(plan_shards, self.engine, self.run_id, options,
                                             options.workers if options.workers > 1 else max(1, cpus))
            execution._mark_started()
            share = asdict(shard_options(options, len(groups)))
            task = ray.remote(run_shard).options(max_retries=TASK_RETRIES, num_cpus=1)
            fences = execution.fences
            submitted = {task.remote(url, self.run_id, k, ids, share, fences): (k, ids) for k, ids in enumerate(groups)}
            execution._install_signal_handler()
            await self._wait(ray, submitted)
        snapshot = progress_snapshot(self.engine, self.run_id)
        execution.total, execution.spent = snapshot.total, snapshot.spent_usd
        execution.counts.update(done=snapshot.done, failed=snapshot.failed, cached=snapshot.cached)
        return execution._finish()

    async def _wait(self, ray: ModuleType, submitted: dict[Any, tuple[int, list[int]]]) -> None:
        running = list(submitted)
        while running:
            ready, running = await asyncio.to_thread(ray.wait, running, num_returns=len(running),
                                                     timeout=MONITOR_INTERVAL_S)
            for ref in ready:
                self._collect(ray, ref, *submitted[ref])
            await self.execution._beat()
            if self.execution.stop_reason == "lease_lost":  # another executor owns the run now: stop ours at once
                for ref in running:
                    ray.cancel(ref, force=True)
                return
            if self.execution.stop_reason == "cancel" and not self.cancel_sent:
                self.cancel_sent = True  # Ctrl-C / SIGTERM of the driver: the tasks see the request in the run's status
                await asyncio.to_thread(request_cancel, self.engine, self.run_id)
            snapshot = await asyncio.to_thread(progress_snapshot, self.engine, self.run_id,
                                               time.monotonic() - self.execution.started)
            if snapshot.status == CANCEL_REQUEST:
                self.execution.stop_reason = "cancel"
            self.execution.report(snapshot)

    def _collect(self, ray: ModuleType, ref: Any, shard: int, ids: list[int]) -> None:
        execution = self.execution
        try:
            outcome = ray.get(ref)
        except ray.exceptions.RayError as error:
            first = (str(error).strip().splitlines() or [type(error).__name__])[-1]
            reason = f"ray: the task of shard {shard} failed ({type(error).__name__}: {redact(first)[:300]})"
            try:
                failed = fail_shard(self.engine, self.run_id, shard, ids, reason, execution.fences)
            except LeaseLost as lost:
                execution._lose_lease(lost)
                return
            log.warning("run %s: %s; %s item(s) failed", self.run_id, reason, failed)
            execution.notes.append(f"{reason}; {failed} item(s) failed with it")
            return
        execution.notes.extend(note for note in outcome["notes"] if note not in execution.notes)
        stop = SHARD_STOPS.get(outcome["status"])
        if stop:
            execution.stop_reason = "cancel" if "cancel" in (stop, execution.stop_reason) else stop


async def execute_on_ray(execution: _Execution) -> RunProgress:
    """Run the execution's pending items as Ray tasks and wait for every one; the run then ends as a local run does
    (done, pending, budget_stopped or cancelled, with the same message)."""
    return await _Driver(execution).run()
