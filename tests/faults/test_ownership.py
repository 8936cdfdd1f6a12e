"""One live executor per run: concurrent `run --resume` (CLI, --workers, a page-launched background job) pay each
call once; the second refuses naming the owner or waits (--wait); a dead owner's lease is taken over."""

from __future__ import annotations

import asyncio
import socket
import subprocess
import sys
import time

import pytest
from sqlalchemy import insert

from core.generation import jobs, runner, runs
from core.store import leases
from core.store.models import Lease
from core.testing.fake_server import FakeLLMServer, prompt_text
from tests.factories import add_model, seed_instances
from tests.faults.conftest import (
    bill,
    env_for,
    figure,
    finish,
    gauntlet,
    run_row,
    start,
    statuses,
    wait_until,
)
from tests.providers.conftest import point_sdks_at

ITEMS = 24
SLOW_MS, FAST_MS = 1000, 20


def make_run(engine, concurrency: int, workers: int = 1) -> int:
    seed_instances(engine, ITEMS)
    add_model(engine, "gpt-x", "openai")
    return runs.create_run(engine, runs.RunOptions(models=["gpt-x"], concurrency=concurrency, workers=workers))


@pytest.mark.parametrize("workers", [pytest.param(1, id="one-process"), pytest.param(2, id="workers-2")])
def test_two_resumes_at_once_pay_every_call_once(engine, db_url, tmp_path, workers):
    run_id = make_run(engine, concurrency=4, workers=workers)
    with FakeLLMServer(latency_ms=SLOW_MS) as server:  # slow until one process has given up, so they overlap
        env = env_for(db_url, server, tmp_path)
        first = start(gauntlet("run", "--resume", str(run_id), "--quiet"), env)
        second = start(gauntlet("run", "--resume", str(run_id), "--quiet"), env)
        wait_until(lambda: first.poll() is not None or second.poll() is not None, timeout=60, what="a refusal")
        server.latency_ms = FAST_MS
        outcomes = sorted([finish(first), finish(second)])
        requests = [prompt_text(body) for body in server.requests]
        billed = bill(server)
    (ok_code, ok_out), (refused_code, refused_out) = outcomes
    figure(f"concurrent resume workers={workers}: {len(requests)} provider calls for {ITEMS} items, "
           f"exit codes {ok_code}/{refused_code}, refusal: {refused_out.strip().splitlines()[-1]!r}")
    assert ok_code == 0, ok_out
    assert refused_code == 3 and f"run {run_id} is owned by pid" in refused_out, refused_out
    assert len(requests) == len(set(requests)) == ITEMS, "a call was paid twice"
    row = run_row(engine, run_id)
    assert statuses(engine, run_id) == {"done": ITEMS} and row.status == "done"
    assert row.spent_usd == pytest.approx(billed) and row.reserved_usd == pytest.approx(0.0)


def test_a_page_launched_job_owns_its_run_and_a_resume_waits_for_it(engine, db_url, tmp_path, monkeypatch):
    run_id = make_run(engine, concurrency=2)
    with FakeLLMServer(latency_ms=SLOW_MS) as server:
        env = env_for(db_url, server, tmp_path, GAUNTLET_LOG_DIR=str(tmp_path))
        for key, value in env.items():
            monkeypatch.setenv(key, value)
        pid = jobs.launch_in_background(engine, run_id, log_dir=tmp_path)
        wait_until(lambda: server.requests, timeout=60, what="the background job's first call")
        refusing = start(gauntlet("run", "--resume", str(run_id), "--quiet"), env)
        waiting = start(gauntlet("run", "--resume", str(run_id), "--quiet", "--wait"), env)
        refused_code, refused_out = finish(refusing)
        time.sleep(1.0)  # the waiter started with the refused one: it is waiting by now
        server.latency_ms = FAST_MS
        waited_code, waited_out = finish(waiting, 90)
        wait_until(lambda: not jobs.process_alive(pid), what="the background job to exit")
        requests = [prompt_text(body) for body in server.requests]
    figure(f"page job + CLI resume: {len(requests)} provider calls for {ITEMS} items; second resume exit "
           f"{refused_code}, --wait exit {waited_code}")
    assert refused_code == 3 and f"owned by pid {pid} on" in refused_out, refused_out
    assert waited_code == 0 and "waiting:" in waited_out, waited_out
    assert len(requests) == len(set(requests)) == ITEMS
    assert statuses(engine, run_id) == {"done": ITEMS}


def dead_pid() -> int:
    process = subprocess.Popen([sys.executable, "-c", "pass"])
    process.wait()
    return process.pid


@pytest.mark.parametrize("host, pid, expires_in, refused", [
    pytest.param("elsewhere", 4242, 1.0, True, id="live-lease-elsewhere-refused-until-it-expires"),
    pytest.param("here", None, 3600.0, False, id="dead-process-on-this-host-taken-at-once"),
])
def test_a_dead_owners_lease_is_taken_over(engine, monkeypatch, tmp_path, host, pid, expires_in, refused):
    monkeypatch.setenv("GAUNTLET_SECRETS_FILE", str(tmp_path / "none.toml"))
    run_id = make_run(engine, concurrency=4)
    host = socket.gethostname() if host == "here" else host
    pid = pid or dead_pid()
    with engine.begin() as conn:
        conn.execute(insert(Lease.__table__).values(name=leases.run_lease(run_id), token="old", owner=f"pid {pid} on {host}",
                                                     host=host, pid=pid, acquired_at=time.time(),
                                                     expires_at=time.time() + expires_in))
    with FakeLLMServer() as server:
        point_sdks_at(monkeypatch, server)
        if refused:
            with pytest.raises(leases.LeaseHeld, match=f"owned by pid {pid} on {host}"):
                asyncio.run(runner.execute_run(engine, run_id))
            with pytest.raises(leases.LeaseHeld):
                runs.retry_failed(engine, run_id)
            assert not server.requests
            time.sleep(expires_in + 0.1)
        result = asyncio.run(runner.execute_run(engine, run_id))
    assert result.status == "done" and len(server.requests) == ITEMS
    assert leases.lease_holder(engine, leases.run_lease(run_id)) is None, "the lease is released at the end"
