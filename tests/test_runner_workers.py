"""Multi-process runs (--workers N): every item done, each call paid once, resume after a worker is killed, budget
across workers (cancellation reaching every worker is in test_runner_resume)."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys

from sqlmodel import Session, select

from core.config import REPO_ROOT
from core.generation import run_progress, runner, runs
from core.store.models import LLMCall, Run
from core.testing.fake_server import FakeLLMServer, prompt_text
from tests.factories import add_model, seed_instances
from tests.providers.conftest import point_sdks_at
from tests.test_runner_resume import cli_env, done_rows, wait_for_done

ITEMS = 12


def test_two_workers_finish_every_item_paying_each_call_once(engine, monkeypatch, tmp_path):
    monkeypatch.setenv("GAUNTLET_SECRETS_FILE", str(tmp_path / "none.toml"))
    seed_instances(engine, ITEMS)
    add_model(engine, "gpt-x", "openai")
    with FakeLLMServer(latency_ms=20) as server:
        point_sdks_at(monkeypatch, server)
        run_id = runs.create_run(engine, runs.RunOptions(models=["gpt-x"], concurrency=4, workers=2))
        result = asyncio.run(runner.execute_run(engine, run_id))
        calls = len(server.requests)
    snapshot = run_progress.progress_snapshot(engine, run_id)
    assert result.status == snapshot.status == "done"
    assert (snapshot.done, snapshot.failed, snapshot.pending) == (ITEMS, 0, 0)
    assert calls == ITEMS
    with Session(engine) as session:
        run = session.get(Run, run_id)
        assert len(session.exec(select(LLMCall)).all()) == ITEMS
        assert len(run.config["worker_pids"]) == 2 and os.getpid() not in run.config["worker_pids"]
        assert run.spent_usd > 0


def test_kill_9_of_one_worker_then_resume_pays_nothing_twice(engine, db_url, tmp_path):
    seed_instances(engine, ITEMS)
    add_model(engine, "gpt-x", "openai")
    with FakeLLMServer(latency_ms=250) as server:
        env = cli_env(db_url, server, tmp_path)
        command = [sys.executable, "-m", "core.cli", "run", "--models", "gpt-x", "--concurrency", "2", "--workers", "2",
                   "--quiet"]
        first = subprocess.Popen(command, cwd=REPO_ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        wait_for_done(engine, 2)
        with Session(engine) as session:
            run = session.exec(select(Run)).one()
            victim = run.config["worker_pids"][0]
        os.kill(victim, signal.SIGKILL)
        output, _ = first.communicate(timeout=60)
        survived = done_rows(engine)
        with Session(engine) as session:
            cached_prompts = {prompt_text({"messages": c.request["messages"]}) for c in session.exec(select(LLMCall))}
            assert session.get(Run, run.id).status == "pending"
        requests_before = len(server.requests)
        resumed = subprocess.run([sys.executable, "-m", "core.cli", "run", "--resume", str(run.id), "--quiet"],
                                 cwd=REPO_ROOT, env=env, capture_output=True, text=True, timeout=60)
        resume_prompts = [prompt_text(body) for body in server.requests[requests_before:]]
    assert first.returncode == 0, output
    assert resumed.returncode == 0, resumed.stdout + resumed.stderr
    assert ITEMS > len(survived) >= 2
    finished = done_rows(engine)
    assert len(finished) == ITEMS
    assert all(finished[i] == text for i, text in survived.items())
    assert not cached_prompts & set(resume_prompts), "a call already cached was paid again"
    assert len(resume_prompts) == ITEMS - len(cached_prompts)
    assert len(server.requests) <= ITEMS + 1, "more calls than the killed worker had in flight"
    assert len({prompt_text(body) for body in server.requests}) == ITEMS
    with Session(engine) as session:
        assert session.get(Run, run.id).status == "done"


def test_budget_is_checked_across_workers(engine, monkeypatch, tmp_path):
    monkeypatch.setenv("GAUNTLET_SECRETS_FILE", str(tmp_path / "none.toml"))
    seed_instances(engine, 40)
    add_model(engine, "gpt-x", "openai")
    with FakeLLMServer(latency_ms=30) as server:
        point_sdks_at(monkeypatch, server)
        probe = runs.create_run(engine, runs.RunOptions(models=["gpt-x"], limit=1))
        asyncio.run(runner.execute_run(engine, probe))
        per_call = run_progress.progress_snapshot(engine, probe).spent_usd
        budget = per_call * 8
        run_id = runs.create_run(engine, runs.RunOptions(models=["gpt-x"], concurrency=2, workers=2,
                                                             budget_usd=budget))
        result = asyncio.run(runner.execute_run(engine, run_id))
    snapshot = run_progress.progress_snapshot(engine, run_id)
    assert result.status == snapshot.status == "budget_stopped"
    assert snapshot.pending > 0 and snapshot.done + snapshot.failed + snapshot.pending == 40
    # every call's worst case (max output tokens) is reserved on the run before it is sent, across the workers
    assert 0 < snapshot.spent_usd <= budget

