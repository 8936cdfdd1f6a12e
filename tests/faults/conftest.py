"""Shared pieces of the fault suite: CLI subprocesses against a loopback fake server that counts every request,
the provider bill those requests add up to, and run rows."""

from __future__ import annotations

import subprocess
import sys
import time
from typing import Any

from sqlmodel import Session, col, select

from core.config import REPO_ROOT
from core.store.models import LLMCall, Response, Run
from core.testing.fake_server import FakeLLMServer, canned_answer, count_tokens, prompt_text
from tests.test_runner_resume import cli_env

PRICE_IN, PRICE_OUT = 2.0, 8.0  # tests.factories.add_model defaults, USD per million tokens


def env_for(db_url: str, server: FakeLLMServer, tmp_path, **extra: str) -> dict[str, str]:
    """The environment of a `gauntlet` subprocess on this database and fake server."""
    return {**cli_env(db_url, server, tmp_path), **extra}


def gauntlet(*args: str) -> list[str]:
    """The argv of `python -m core.cli ARGS`."""
    return [sys.executable, "-m", "core.cli", *args]


def start(args: list[str], env: dict[str, str]) -> subprocess.Popen:
    """A CLI process with its output captured."""
    return subprocess.Popen(args, cwd=REPO_ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)


def finish(process: subprocess.Popen, timeout: float = 60) -> tuple[int, str]:
    """Wait for a CLI process: (exit code, output)."""
    output, _ = process.communicate(timeout=timeout)
    return process.returncode, output


def bill(server: FakeLLMServer, price_in: float = PRICE_IN, price_out: float = PRICE_OUT) -> float:
    """What the provider would charge for every request it received (answered or not)."""
    total = 0
    for body in list(server.requests):
        prompt = prompt_text(body)
        total += count_tokens(prompt) * price_in + count_tokens(canned_answer(prompt)) * price_out
    return total / 1_000_000


def run_row(engine, run_id: int) -> Run:
    with Session(engine) as session:
        return session.get(Run, run_id)


def only_run_id(engine) -> int:
    with Session(engine) as session:
        return int(session.exec(select(Run.id)).one())


def statuses(engine, run_id: int) -> dict[str, int]:
    with Session(engine) as session:
        rows = session.exec(select(Response.status).where(Response.run_id == run_id)).all()
    return {status: rows.count(status) for status in set(rows)}


def cached_calls(engine) -> int:
    with Session(engine) as session:
        return len(session.exec(select(LLMCall.key)).all())


def in_flight(engine, run_id: int) -> int:
    """Items marked in flight (a reservation and no saved answer)."""
    with Session(engine) as session:
        return len(session.exec(select(Response.id).where(Response.run_id == run_id,
                                                          col(Response.reserved_usd).is_not(None))).all())


def recorded(engine, run_id: int) -> tuple:
    """Everything a stale owner could still write: the run row and every response."""
    with Session(engine) as session:
        run = session.get(Run, run_id)
        rows = session.exec(select(Response.id, Response.status, Response.text, Response.cost_usd, Response.attempts,
                                   Response.reserved_usd, Response.finished_at)
                            .where(Response.run_id == run_id).order_by(Response.id)).all()
        return (run.status, run.spent_usd, run.reserved_usd, run.rebought_calls, run.rebought_usd, run.message,
                run.finished_at, dict(run.config), tuple(tuple(row) for row in rows))


def wait_until(predicate: Any, timeout: float = 30.0, what: str = "condition") -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.02)


def figure(line: str) -> None:
    """A measured figure of the fault suite (shown with pytest -s)."""
    print(f"\nFIGURE {line}")
