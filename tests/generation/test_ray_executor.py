"""The Ray executor (`gauntlet run --executor ray`) on a local Ray instance (2 CPUs, no dashboard, usage statistics
off, loopback only) against the loopback fake server through the real SDK: the same response table and cache hits as
the local runner, and a worker killed mid-run loses nothing and pays nothing twice (counted on the fake server)."""

from __future__ import annotations

import asyncio
import hashlib
import json
import os
import signal
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict

import pytest
from sqlalchemy import update
from sqlmodel import Session, col, select

from core.config import REPO_ROOT
from core.generation import ray_executor, runner, runs
from core.store import leases
from core.store.db import make_engine
from core.store.models import Document, Domain, Instance, Lease, LLMCall, Model, Response, Run
from core.testing.fake_server import FakeLLMServer, prompt_text
from tests.factories import add_model, make_instance, seed_instances
from tests.faults.conftest import in_flight, recorded, wait_until
from tests.faults.conftest import statuses as fault_statuses
from tests.ray_runtime import PAUSE_MARKS

MODELS = ("gpt-a", "gpt-b")  # the tests asking for the Ray runtime are put in its xdist group by tests/conftest.py


@pytest.fixture
def ray_server(ray_runtime) -> FakeLLMServer:
    """The fake server the shared Ray runtime's workers call (tests/ray_runtime.py)."""
    return ray_runtime.server


@pytest.mark.parametrize("modules", [("core.cli", "core.commands.run", "core.commands.build"),
                                     ("core.generation.runner", "core.generation.ray_executor"),
                                     ("core.construction.build",)], ids=["cli", "runner", "construction"])
def test_core_imports_ray_only_when_a_ray_executor_runs(modules):
    code = f"import sys, {', '.join(modules)}; sys.exit('ray' in sys.modules)"
    assert subprocess.run([sys.executable, "-c", code], cwd=REPO_ROOT, capture_output=True, check=False).returncode == 0


def seed_models(engine, instances: int) -> None:
    """`instances` instances, then as many again with the same content (the same prompts: answered from the cache
    once the first is paid), and MODELS."""
    seed_instances(engine, instances)
    with Session(engine) as session:
        rows = session.exec(select(Instance, Domain.name).join(Domain, col(Domain.id) == col(Instance.domain_id))
                            .order_by(col(Instance.id))).all()
        for row, domain in rows:
            support = session.exec(select(Document.text).where(Document.instance_id == row.id,
                                                                Document.role == "supporting")).one()
            make_instance(session, uid=f"{row.uid}-twin", domain=domain, query=row.query, mode=row.mode, support=support,
                          noise=["Parking spaces are assigned by seniority."])
        session.commit()
    for name in MODELS:
        add_model(engine, name, "openai")


def execute(engine, options: runs.RunOptions) -> int:
    """Create and execute a run; its id."""
    run_id = runs.create_run(engine, options)
    assert asyncio.run(runner.execute_run(engine, run_id)).status == "done"
    return run_id


def response_dump(engine, run_id: int) -> bytes:
    """The run's responses as canonical JSON lines without ids, timestamps or latencies, in (model, instance,
    condition) order."""
    with Session(engine) as session:
        rows = session.exec(select(Response, Model.name, Instance.uid)
                            .join(Model, col(Model.id) == col(Response.model_id))
                            .join(Instance, col(Instance.id) == col(Response.instance_id))
                            .where(Response.run_id == run_id)).all()
    skip = {"id", "run_id", "model_id", "instance_id", "latency_ms", "started_at", "finished_at", "created_at"}
    lines = sorted(json.dumps({"model": name, "instance": uid, **response.model_dump(exclude=skip)}, sort_keys=True,
                              default=str) for response, name, uid in rows)
    return "\n".join(lines).encode("utf-8")


def run_summary(engine, run_id: int) -> dict:
    """Cache hits, calls in the cache, spend and status of a run."""
    with Session(engine) as session:
        run = session.get(Run, run_id)
        cached = session.exec(select(Response.id).where(Response.run_id == run_id, col(Response.cached))).all()
        return {"status": run.status, "cache_hits": len(cached), "spent_usd": round(run.spent_usd, 9),
                "cache_rows": len(session.exec(select(LLMCall.key)).all()), "rebought": run.rebought_calls}


def compare_executors(make_url, server: FakeLLMServer, instances: int, warm: int, shards: int = 0) -> dict:
    """The same seeded database twice; `warm` instances answered beforehand by gpt-a locally in both; then one run of
    MODELS x all instances (and their twins) locally and one on Ray. The two dumps, summaries and provider calls."""
    out = {}
    for executor in ("local", "ray"):
        engine = make_engine(make_url())
        try:
            seed_models(engine, instances)
            if warm:
                execute(engine, runs.RunOptions(models=["gpt-a"], limit=warm))
            before = server.stats()["calls"]
            started = time.perf_counter()
            run_id = execute(engine, runs.RunOptions(models=list(MODELS), executor=executor, concurrency=8,
                                                     workers=shards or 1))
            out[executor] = {"dump": response_dump(engine, run_id), "seconds": time.perf_counter() - started,
                             "provider_calls": server.stats()["calls"] - before, **run_summary(engine, run_id)}
        finally:
            engine.dispose()
    return out


@pytest.mark.parametrize(("instances", "warm"), [(40, 0), (40, 15)], ids=["cold-cache", "warm-cache"])
def test_ray_run_gives_the_local_runners_responses_and_cache_hits(ray_server, backend_url_factory, instances, warm):
    result = compare_executors(backend_url_factory, ray_server, instances, warm)
    local, ray = result["local"], result["ray"]
    print(f"\nFIGURE ray vs local, {2 * instances * len(MODELS)} items: provider calls {ray['provider_calls']} vs "
          f"{local['provider_calls']}, cache hits {ray['cache_hits']} vs {local['cache_hits']}, "
          f"{ray['seconds']:.2f} s vs {local['seconds']:.2f} s")
    assert hashlib.sha256(ray["dump"]).hexdigest() == hashlib.sha256(local["dump"]).hexdigest()
    assert ray["dump"] == local["dump"]
    assert {k: ray[k] for k in ("status", "cache_hits", "spent_usd", "cache_rows", "provider_calls", "rebought")} == \
           {k: local[k] for k in ("status", "cache_hits", "spent_usd", "cache_rows", "provider_calls", "rebought")}
    assert local["cache_hits"] + local["provider_calls"] == 2 * instances * len(MODELS)
    assert local["cache_hits"] >= instances * len(MODELS) + (warm > 0)  # every twin, and a warm call more


def add_paused_instance(engine, mark: str) -> None:
    """One more instance whose prompt the fake server answers first with a 429 (Retry-After PAUSE_S)."""
    with Session(engine) as session:
        make_instance(session, uid="paused", query=f"What does {mark} mean?", support="It means wait.")
        session.commit()


def wait_for_the_pause(server: FakeLLMServer, faults: int, driving) -> None:
    """Until the paused item got its 429 (its task now sleeps with nothing in flight) while the run is driven."""
    deadline = time.monotonic() + 60
    while server.stats()["faults"] == faults:
        assert time.monotonic() < deadline and not driving.done(), "the paused item was never sent"
        time.sleep(0.01)


def paused_shard(engine, run_id: int, shards: int) -> int:
    """The index of the shard holding the paused instance's item, as the executor plans it."""
    with Session(engine) as session:
        item = session.exec(select(Response.id).join(Instance, col(Instance.id) == col(Response.instance_id))
                            .where(Response.run_id == run_id, Instance.uid == "paused")).one()
    groups = ray_executor.plan_shards(engine, run_id, runs.run_options(engine, run_id), shards)
    return next(k for k, group in enumerate(groups) if item in group)


@pytest.mark.parametrize(("mark", "retries", "expect_failed"),
                         [(PAUSE_MARKS[0], ray_executor.TASK_RETRIES, False), (PAUSE_MARKS[1], 0, True)],
                         ids=["retried-by-ray", "failed-for-good-then-retry-failed"])
def test_killing_a_worker_mid_run_loses_nothing_and_pays_nothing_twice(ray_server, engine, monkeypatch, mark, retries,
                                                                       expect_failed):
    monkeypatch.setattr(ray_executor, "TASK_RETRIES", retries)
    items, shards = 24, 2
    seed_instances(engine, items - 1)
    add_paused_instance(engine, mark)
    add_model(engine, "gpt-k", "openai")
    run_id = runs.create_run(engine, runs.RunOptions(models=["gpt-k"], executor="ray", workers=shards,
                                                     concurrency=shards))  # one call at a time per task
    shard = paused_shard(engine, run_id, shards)
    first_request, faults = len(ray_server.requests), ray_server.stats()["faults"]
    with ThreadPoolExecutor(1) as pool:
        driving = pool.submit(asyncio.run, runner.execute_run(engine, run_id))
        wait_for_the_pause(ray_server, faults, driving)
        holder = leases.lease_holder(engine, ray_executor.shard_lease(run_id, shard))
        os.kill(holder.pid, signal.SIGKILL)
        result = driving.result(timeout=120)
    failed = runs.failed_items(engine, run_id)
    if expect_failed:
        assert result.status == "done" and failed and all("WorkerCrashedError" in f["error"] for f in failed)
        assert runs.retry_failed(engine, run_id) == len(failed)
        assert asyncio.run(runner.execute_run(engine, run_id)).status == "done"
    prompts = [prompt_text(body) for body in ray_server.requests[first_request:]]
    paid = len(prompts) - 1  # every request but the scripted 429 was answered (and billed)
    row = run_summary(engine, run_id)
    print(f"\nFIGURE ray worker kill ({'no retry' if expect_failed else 'retried'}): {items} items, killed pid "
          f"{holder.pid} of shard {shard}; requests {len(prompts)} (1 scripted 429), paid {paid}, unique "
          f"{len(set(prompts))}, failed then retried {len(failed)}, re-bought reported {row['rebought']}")
    with Session(engine) as session:
        statuses = session.exec(select(Response.status).where(Response.run_id == run_id)).all()
    assert statuses == ["done"] * items and row["status"] == "done"
    assert paid == len(set(prompts)) == items, "a call was paid twice or an item never answered"
    assert row["rebought"] == 1  # the paused call: reserved when killed, so reported (an upper bound; unpaid here)


@pytest.mark.parametrize(("budget_usd", "items"), [(0.004, 24)], ids=["budget-stops-then-resume-finishes"])
def test_ray_run_keeps_the_budget_and_resume_finishes_without_paying_twice(ray_server, engine, budget_usd, items):
    seed_instances(engine, items)
    add_model(engine, "gpt-budget", "openai")
    first_request = len(ray_server.requests)
    run_id = runs.create_run(engine, runs.RunOptions(models=["gpt-budget"], executor="ray", budget_usd=budget_usd))
    stopped = asyncio.run(runner.execute_run(engine, run_id))
    spent = run_summary(engine, run_id)["spent_usd"]
    resumed = asyncio.run(runner.execute_run(engine, run_id, overrides={"budget_usd": 1.0}))
    prompts = [prompt_text(body) for body in ray_server.requests[first_request:]]
    print(f"\nFIGURE ray budget: stopped at {stopped.done}/{items} done, spent ${spent:.6f} of ${budget_usd}; resumed "
          f"{resumed.status}, {len(prompts)} requests for {len(set(prompts))} prompts")
    assert stopped.status == "budget_stopped" and 0 < stopped.done < items and spent <= budget_usd
    assert resumed.status == "done" and resumed.done == items
    assert len(prompts) == len(set(prompts)) == items


@pytest.mark.parametrize("mark", [PAUSE_MARKS[2]], ids=["cancel-while-a-task-waits-then-resume"])
def test_cancelling_a_ray_run_stops_its_tasks_and_resume_finishes_it(ray_server, engine, mark):
    items = 40
    add_paused_instance(engine, mark)  # the first item of its shard: that task waits out a 429 with the rest pending
    seed_instances(engine, items - 1)
    add_model(engine, "gpt-cancel", "openai")
    first_request, faults = len(ray_server.requests), ray_server.stats()["faults"]
    run_id = runs.create_run(engine, runs.RunOptions(models=["gpt-cancel"], executor="ray", workers=2, concurrency=2))
    with ThreadPoolExecutor(1) as pool:
        driving = pool.submit(asyncio.run, runner.execute_run(engine, run_id))
        wait_for_the_pause(ray_server, faults, driving)
        runs.request_cancel(engine, run_id)
        cancelled = driving.result(timeout=60)
    resumed = asyncio.run(runner.execute_run(engine, run_id))
    prompts = [prompt_text(body) for body in ray_server.requests[first_request:]]
    print(f"\nFIGURE ray cancel: {cancelled.done}/{items} done, {cancelled.pending} pending when cancelled; resumed "
          f"{resumed.status}; {len(prompts)} requests (1 scripted 429) for {len(set(prompts))} prompts")
    assert cancelled.status == "cancelled" and cancelled.pending > 0
    assert resumed.status == "done" and resumed.done == items
    assert len(prompts) - 1 == len(set(prompts)) == items


def take_over(engine, run_id: int) -> leases.Fence:
    """What another executor taking the run over does to its lease: the next generation, its owner. Returns the fence
    the run's old owner (the driver and its tasks) writes under."""
    old = leases.lease_holder(engine, leases.run_lease(run_id))
    assert old is not None, "the run's lease is not held"
    with engine.begin() as conn:
        conn.execute(update(Lease.__table__).where(Lease.__table__.c.name == leases.run_lease(run_id)).values(
            generation=Lease.__table__.c.generation + 1, token="other", owner="pid 1 on elsewhere (gauntlet run)",
            host="elsewhere", pid=1, expires_at=time.time() + 3600))
    return leases.run_lease(run_id), old.generation


def shards_held(engine, run_id: int, shards: int) -> int:
    """How many of the run's shard leases a live task holds (a task releases its lease when it ends; a killed one's
    lapses with its process)."""
    return sum(leases.lease_holder(engine, ray_executor.shard_lease(run_id, k)) is not None for k in range(shards))


def stale_task(engine, run_id: int, fence: leases.Fence) -> dict:
    """A task of the run's old owner started now, in this process: every pending item as shard 0 under the old run
    fence (what a late retry of the old owner's task does); how it ended."""
    with Session(engine) as session:
        pending = [item.response_id for item in runs.pending_items(session, run_id)]
    share = asdict(runner.shard_options(runs.run_options(engine, run_id), 1))
    return ray_executor.run_shard(runner.shareable_url(engine), run_id, 0, pending, share, [fence])


@pytest.mark.parametrize("items", [40], ids=["taken-over-mid-run"])
def test_a_ray_run_whose_lease_is_taken_over_stops_and_writes_nothing_more(ray_server, engine, items):
    seed_instances(engine, items)
    add_model(engine, "gpt-fence", "openai")
    shards = 2
    run_id = runs.create_run(engine, runs.RunOptions(models=["gpt-fence"], executor="ray", workers=shards,
                                                     concurrency=4))
    ray_server.latency_ms = 150  # answers in flight when the lease is taken over
    try:
        with ThreadPoolExecutor(1) as pool:
            driving = pool.submit(asyncio.run, runner.execute_run(engine, run_id))
            wait_until(lambda: fault_statuses(engine, run_id).get("done", 0) >= 4 or driving.done(), timeout=120,
                       what="the first answers")
            fence = take_over(engine, run_id)
            taken, flying, calls = recorded(engine, run_id), in_flight(engine, run_id), len(ray_server.requests)
            with pytest.raises(leases.LeaseLost, match=f"lease of run {run_id} taken over by pid 1 on elsewhere"):
                driving.result(timeout=60)
        # The driver cancelled its tasks: once no task holds a shard lease, none can write or send any more
        wait_until(lambda: shards_held(engine, run_id, shards) == 0, timeout=60, what="the fenced tasks to end")
        after = len(ray_server.requests) - calls
        stale = stale_task(engine, run_id, fence)  # the old owner tries once more: refused before it sends anything
    finally:
        ray_server.latency_ms = 2
    print(f"\nFIGURE ray lease taken over: {fault_statuses(engine, run_id)} at the take-over with {flying} calls in "
          f"flight; {after} calls after it; a stale task started after it ended {stale['status']}")
    assert stale["status"] == "lease_lost" and "taken over by pid 1 on elsewhere" in " ".join(stale["notes"])
    assert len(ray_server.requests) - calls == after, "the stale task sent a call"
    assert recorded(engine, run_id) == taken, "a fenced task or driver wrote after the take-over"
    assert after <= flying, "a fenced task sent calls not in flight at the take-over"
