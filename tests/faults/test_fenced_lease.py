"""Fenced run leases: a run owner paused (SIGSTOP) past the lease TTL while a second `run --resume` takes the run
over and finishes it, then continued (SIGCONT), writes nothing more and exits at once naming the new owner. The
provider is paid at most once per prompt plus the calls in flight at the pause (reported as re-bought), and the
recorded spend is that of the distinct answers."""

from __future__ import annotations

import asyncio
import os
import signal
import sqlite3
import subprocess
import time

import pytest
from sqlalchemy import text, update
from sqlmodel import Session, select

from core.config import REPO_ROOT
from core.generation import runs
from core.generation.llm import LLMClient, config_from_model
from core.generation.providers.base import ChatMessage
from core.store import leases
from core.store.models import Lease, Model
from core.store.writes import GroupWriter
from core.testing.fake_server import FakeLLMServer, canned_answer, count_tokens, prompt_text
from tests.factories import add_model, seed_instances
from tests.faults.conftest import (
    PRICE_IN,
    PRICE_OUT,
    env_for,
    figure,
    finish,
    gauntlet,
    in_flight,
    recorded,
    run_row,
    start,
    statuses,
    wait_until,
)
from tests.providers.conftest import point_sdks_at

ITEMS = 24
CONCURRENCY = 4
TTL_S = 1.0
LATENCY_MS = 150
PAUSE_AFTER_DONE = 4  # answers saved before the pause
PAUSE_ATTEMPTS = 50
EXIT_WITHIN_S = 10.0  # after SIGCONT (it takes one refused write or one heartbeat: well under a second)


def writing_now(engine) -> bool:
    """Whether another process holds a write transaction open (SQLite: the write lock; PostgreSQL: a transaction
    that wrote, i.e. holds a transaction id) - a process paused there would block every other writer."""
    if engine.dialect.name == "sqlite":
        probe = sqlite3.connect(engine.url.database, timeout=0.05)
        try:
            probe.execute("BEGIN IMMEDIATE")
            probe.rollback()
            return False
        except sqlite3.OperationalError:
            return True
        finally:
            probe.close()
    with engine.connect() as conn:
        return bool(conn.execute(text(
            "SELECT count(*) FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid WHERE l.locktype = "
            "'transactionid' AND a.datname = current_database() AND l.pid <> pg_backend_pid()")).scalar_one())


def pause_between_writes(engine, process: subprocess.Popen) -> None:
    """SIGSTOP the process group, retried until it is stopped outside a write transaction (a process paused inside
    one holds the database's locks; no lease can help the others then)."""
    for _ in range(PAUSE_ATTEMPTS):
        os.killpg(process.pid, signal.SIGSTOP)
        time.sleep(0.05)
        if not writing_now(engine):
            return
        os.killpg(process.pid, signal.SIGCONT)
        time.sleep(0.01)
    raise AssertionError("the run owner was always paused inside a write transaction")


def distinct_cost(prompts: list[str]) -> float:
    """What the provider charges for each distinct prompt once."""
    return sum(count_tokens(p) * PRICE_IN + count_tokens(canned_answer(p)) * PRICE_OUT for p in set(prompts)) / 1e6


def spawn(args: list[str], env: dict[str, str]) -> subprocess.Popen:
    """A CLI process in its own process group (its --workers children are paused and continued with it)."""
    return subprocess.Popen(args, cwd=REPO_ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            start_new_session=True)


@pytest.mark.parametrize("workers", [pytest.param(1, id="one-process"), pytest.param(2, id="workers-2")])
def test_a_paused_owner_whose_lease_was_taken_over_writes_nothing_and_stops(engine, db_url, tmp_path, workers):
    seed_instances(engine, ITEMS)
    add_model(engine, "gpt-x", "openai")
    run_id = runs.create_run(engine, runs.RunOptions(models=["gpt-x"], concurrency=CONCURRENCY, workers=workers))
    with FakeLLMServer(latency_ms=LATENCY_MS) as server:
        env = env_for(db_url, server, tmp_path, GAUNTLET_LEASE_TTL_S=str(TTL_S))
        first = spawn(gauntlet("run", "--resume", str(run_id), "--quiet"), env)
        try:
            wait_until(lambda: statuses(engine, run_id).get("done", 0) >= PAUSE_AFTER_DONE or first.poll() is not None,
                       timeout=60, what="the first answers")
            pause_between_writes(engine, first)
            paused_in_flight, saved = in_flight(engine, run_id), statuses(engine, run_id).get("done", 0)
            time.sleep(TTL_S + 0.3)  # the paused owner's lease expires
            second = start(gauntlet("run", "--resume", str(run_id), "--quiet", "--wait"), env)
            second_code, second_out = finish(second, 90)
            after_takeover, sent_before_cont = recorded(engine, run_id), [prompt_text(body) for body in server.requests]
            calls_before_cont = len(sent_before_cont)
        finally:
            os.killpg(first.pid, signal.SIGCONT)
        continued = time.monotonic()
        first_code, first_out = finish(first, 60)
        exit_s = time.monotonic() - continued
        prompts = [prompt_text(body) for body in server.requests]
    row = run_row(engine, run_id)
    paid_twice = len(prompts) - len(set(prompts))
    figure(f"SIGSTOP past the TTL ({engine.dialect.name}, workers={workers}): paused after {saved} answers with "
           f"{paused_in_flight} calls in flight; provider calls {len(prompts)} for {ITEMS} prompts ({paid_twice} paid "
           f"twice, reported re-bought {row.rebought_calls}, ${row.rebought_usd:.6f}); {len(prompts) - calls_before_cont}"
           f" calls after SIGCONT; recorded spend ${row.spent_usd:.6f} vs distinct answers "
           f"${distinct_cost(prompts):.6f}; the paused owner exited {exit_s:.2f} s after SIGCONT with code {first_code}: "
           f"{first_out.strip().splitlines()[-1] if first_out.strip() else ''!r}")
    assert second_code == 0, second_out
    assert statuses(engine, run_id) == {"done": ITEMS} and row.status == "done"
    assert first_code == 3, first_out
    assert f"lease of run {run_id} taken over by pid {second.pid} on" in first_out and "stopping" in first_out, first_out
    assert exit_s < EXIT_WITHIN_S
    assert recorded(engine, run_id) == after_takeover, "the fenced owner wrote after the take-over"
    after_cont = prompts[calls_before_cont:]
    assert prompts[:calls_before_cont] == sent_before_cont
    # after SIGCONT only requests already handed to the HTTP client at the pause may still reach the server: each is
    # the re-sent copy of a prompt the second owner answered (so one of the re-bought calls), never a new prompt
    assert set(after_cont) <= set(sent_before_cont) and len(after_cont) <= paused_in_flight, \
        "the fenced owner sent a new call after SIGCONT"
    assert len(set(prompts)) == ITEMS and len(prompts) <= ITEMS + paused_in_flight
    assert paid_twice <= row.rebought_calls == paused_in_flight, "calls paid twice beyond those reported as re-bought"
    assert row.spent_usd == pytest.approx(distinct_cost(prompts)), "recorded spend differs from the distinct answers"
    assert row.reserved_usd == pytest.approx(0.0)


def expire(engine, holding: leases.Holding) -> None:
    """What a paused holder's lease looks like once its TTL passed."""
    with engine.begin() as conn:
        conn.execute(update(Lease.__table__).where(Lease.__table__.c.name == holding.name).values(expires_at=0.0))


@pytest.mark.parametrize("end_first", [
    pytest.param(expire, id="expired-then-taken-over"),
    pytest.param(leases.release_lease, id="released-then-taken-again"),
])
def test_each_take_over_raises_the_generation_and_fences_out_the_previous_holder(engine, end_first):
    first = leases.take_lease(engine, "run:1", "first")
    end_first(engine, first)
    second = leases.take_lease(engine, "run:1", "second")
    with engine.begin() as conn:
        leases.check_fences(conn, [second.fence])
    lost = r"lease of run 1 taken over by pid \d+ on .* \(second\) \(generation 2\)"
    with pytest.raises(leases.LeaseLost, match=lost), engine.begin() as conn:
        leases.check_fences(conn, [first.fence])
    assert (first.generation, second.generation) == (1, 2)


async def send_after_a_pause(engine, holding: leases.Holding) -> None:
    """One paid call from a client whose writer is fenced by `holding` and last passed its fence a second ago (as
    after a pause between reserving a call and sending it)."""
    await send_with_guard(engine, lambda conn: leases.check_fences(conn, [holding.fence]))


@pytest.mark.parametrize("taken_over, sent", [
    pytest.param(False, 1, id="lease-still-held-the-call-goes-out"),
    pytest.param(True, 0, id="lease-taken-over-the-call-is-not-sent"),
])
def test_a_call_is_sent_only_after_a_fresh_fence_check(engine, monkeypatch, tmp_path, taken_over, sent):
    monkeypatch.setenv("GAUNTLET_SECRETS_FILE", str(tmp_path / "none.toml"))
    add_model(engine, "gpt-x", "openai")
    holding = leases.take_lease(engine, "run:1", "paused")
    if taken_over:
        expire(engine, holding)
        leases.take_lease(engine, "run:1", "the new owner")
    with FakeLLMServer() as server:
        point_sdks_at(monkeypatch, server)
        if taken_over:
            with pytest.raises(leases.LeaseLost, match=r"taken over by .*\(the new owner\)"):
                asyncio.run(send_after_a_pause(engine, holding))
        else:
            asyncio.run(send_after_a_pause(engine, holding))
        assert len(server.requests) == sent


UNIT_TTL_S = 0.5  # the shortest lease TTL (GAUNTLET_LEASE_TTL_S)


def take_over(engine, holding: leases.Holding) -> None:
    """Another executor takes the lapsed lease over."""
    leases.take_lease(engine, holding.name, "the new owner")


def left_lapsed(engine, holding: leases.Holding) -> None:
    """Nobody takes the lapsed lease over, and its heartbeat does not renew it."""


def renewed_soon(engine, holding: leases.Holding) -> None:
    """The holder's heartbeat renews the lapsed lease a moment later (nobody took it over meanwhile)."""
    def renew() -> None:
        with engine.begin() as conn:
            leases.renew_lease(conn, holding)

    asyncio.get_running_loop().call_later(0.1, renew)


def pausing_guard(engine, holding: leases.Holding, then):
    """The fence check of `holding`; the first one that passes is followed, before the call waiting on it resumes,
    by a pause past the lease's TTL (a SIGSTOP between the fence check and the send) and then `then`."""
    paused: list[bool] = []

    def pause() -> None:
        time.sleep(UNIT_TTL_S + 0.2)
        then(engine, holding)

    def guard(conn):
        expires_at = leases.check_fences(conn, [holding.fence])
        if then is not None and not paused:
            paused.append(True)
            asyncio.get_running_loop().call_soon(pause)  # runs before the awaiting call is woken
        return expires_at

    return guard


async def send_with_guard(engine, guard) -> None:
    """One paid call from a client whose writer runs `guard` before sending (its last check a second ago)."""
    with Session(engine) as session:
        config = config_from_model(session.exec(select(Model).where(Model.name == "gpt-x")).one())
    writer = GroupWriter(engine, guard=guard)
    writer.guarded_at -= 1.0
    client = LLMClient(config, engine, writer=writer, max_retries=0)
    try:
        await client.complete([ChatMessage(role="user", content="sent after the fence check?")])
    finally:
        writer.close()
        await client.aclose()


@pytest.mark.parametrize("then, sent, refused", [
    pytest.param(None, 1, None, id="no-pause-the-call-goes-out"),
    pytest.param(take_over, 0, r"taken over by .*\(the new owner\)", id="paused-and-taken-over-not-sent"),
    pytest.param(left_lapsed, 0, r"expired .* did not renew it", id="paused-and-lapsed-not-sent"),
    pytest.param(renewed_soon, 1, None, id="paused-lapsed-then-renewed-goes-out"),
])
def test_a_call_is_not_sent_past_its_lease_deadline_even_right_after_a_fence_check(engine, monkeypatch, tmp_path,
                                                                                   then, sent, refused):
    monkeypatch.setenv("GAUNTLET_SECRETS_FILE", str(tmp_path / "none.toml"))
    monkeypatch.setenv(leases.LEASE_TTL_ENV, str(UNIT_TTL_S))
    add_model(engine, "gpt-x", "openai")
    holding = leases.take_lease(engine, "run:1", "paused")
    with FakeLLMServer() as server:
        point_sdks_at(monkeypatch, server)
        if refused:
            with pytest.raises(leases.LeaseLost, match=refused):
                asyncio.run(send_with_guard(engine, pausing_guard(engine, holding, then)))
        else:
            asyncio.run(send_with_guard(engine, pausing_guard(engine, holding, then)))
        assert len(server.requests) == sent
