"""Resume after kill -9: a CLI run is killed mid-way, `run --resume` finishes it; nothing lost, nothing paid twice."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import pytest
from sqlmodel import Session, select

from core.config import REPO_ROOT
from core.store.models import LLMCall, Response, Run
from core.testing.fake_server import FakeLLMServer, prompt_text
from tests.factories import add_model, seed_instances
from tests.providers.conftest import PLANTED_KEY

ITEMS = 12
CONCURRENCY = 2


def cli_env(db_url: str, server: FakeLLMServer, tmp_path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
    env.update(GAUNTLET_DATABASE_URL=db_url, OPENAI_BASE_URL=server.base_url + "/v1", OPENAI_API_KEY=PLANTED_KEY,
               GAUNTLET_SECRETS_FILE=str(tmp_path / "none.toml"), PYTHONPATH=str(REPO_ROOT))
    return env


def done_rows(engine) -> dict[int, str]:
    with Session(engine) as session:
        rows = session.exec(select(Response).where(Response.status == "done")).all()
        return {r.id: r.text for r in rows}


def wait_for_done(engine, count: int, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while len(done_rows(engine)) < count:
        assert time.monotonic() < deadline, "the run made no progress"
        time.sleep(0.05)


def test_kill_9_then_resume_loses_nothing_and_pays_nothing_twice(engine, db_url, tmp_path):
    seed_instances(engine, ITEMS)
    add_model(engine, "gpt-x", "openai")
    with FakeLLMServer(latency_ms=250) as server:
        env = cli_env(db_url, server, tmp_path)
        command = [sys.executable, "-m", "core.cli", "run", "--models", "gpt-x", "--concurrency", str(CONCURRENCY),
                   "--quiet"]
        first = subprocess.Popen(command, cwd=REPO_ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        wait_for_done(engine, 4)
        os.kill(first.pid, signal.SIGKILL)
        first.wait(timeout=10)
        survived = done_rows(engine)
        with Session(engine) as session:
            cached_prompts = {prompt_text({"messages": c.request["messages"]}) for c in session.exec(select(LLMCall))}
            run = session.exec(select(Run)).one()
        requests_before = len(server.requests)
        resumed = subprocess.run([sys.executable, "-m", "core.cli", "run", "--resume", str(run.id), "--quiet"],
                                 cwd=REPO_ROOT, env=env, capture_output=True, text=True, timeout=60)
        resume_prompts = [prompt_text(body) for body in server.requests[requests_before:]]
    assert first.returncode == -signal.SIGKILL and ITEMS > len(survived) >= 4
    assert resumed.returncode == 0, resumed.stdout + resumed.stderr
    finished = done_rows(engine)
    assert len(finished) == ITEMS
    assert all(finished[i] == text for i, text in survived.items())
    assert not cached_prompts & set(resume_prompts), "a call already cached was paid again"
    assert len(resume_prompts) == ITEMS - len(cached_prompts)
    assert len(server.requests) <= ITEMS + CONCURRENCY
    assert len({prompt_text(body) for body in server.requests}) == ITEMS
    with Session(engine) as session:
        assert session.get(Run, run.id).status == "done"


@pytest.mark.parametrize("workers", [1, 2])
def test_cancel_signals_the_background_process(engine, db_url, tmp_path, monkeypatch, workers):
    from core.generation import jobs, run_progress, runs

    seed_instances(engine, ITEMS)
    add_model(engine, "gpt-x", "openai")
    with FakeLLMServer(latency_ms=300) as server:
        for key, value in cli_env(db_url, server, tmp_path).items():
            monkeypatch.setenv(key, value)
        run_id = runs.create_run(engine, runs.RunOptions(models=["gpt-x"], concurrency=1, workers=workers))
        pid = jobs.launch_in_background(engine, run_id, log_dir=tmp_path)
        wait_for_done(engine, 1)
        with Session(engine) as session:
            pids = [pid, *session.get(Run, run_id).config.get("worker_pids", [])]
        assert len(pids) == (1 if workers == 1 else 1 + workers)
        assert jobs.cancel_run(engine, run_id) == runs.CANCEL_REQUEST
        deadline = time.monotonic() + 20
        while any(jobs.process_alive(p) for p in pids):
            assert time.monotonic() < deadline, "the runner (or one of its workers) ignored the cancel"
            time.sleep(0.1)
    snapshot = run_progress.progress_snapshot(engine, run_id)
    assert snapshot.status == "cancelled" and snapshot.pending > 0 and snapshot.done >= 1
    assert snapshot.done + snapshot.failed + snapshot.pending == ITEMS
