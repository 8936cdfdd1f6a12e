"""Leases, round four: a take-over never lets a call through while another owner's lease is live; judge calls under
the scoring lease check the lease (fence and deadline) like generation calls; every lease deadline is read on the
database's clock, so a host whose clock is an hour off neither takes a live lease nor calls past a lapsed one."""

from __future__ import annotations

import asyncio
import subprocess
import time
import types

import pytest
from sqlalchemy import update
from sqlmodel import Session, select

from core.generation import registered_models, runner, runs
from core.generation.llm import LLMClient, config_from_model
from core.generation.providers.base import ChatMessage
from core.scoring import scorer
from core.scoring.scorer import score_lease, score_run
from core.store import leases, writes
from core.store.models import Lease, Model
from core.store.writes import GroupWriter
from core.testing.fake_server import FakeLLMServer
from tests.factories import add_model, seed_instances
from tests.faults.conftest import figure
from tests.providers.conftest import point_sdks_at

TTL_S = 0.5
HOUR_S = 3600.0


def dead_pid() -> int:
    """The pid of a process that has exited on this host."""
    child = subprocess.Popen(["true"])
    child.wait()
    return child.pid


def gone_on_this_host(engine, holding: leases.Holding) -> None:
    """The holder's lease row names a process that is gone on this host (its heartbeat still valid): the next taker
    takes it over at once, while the lease is live. The holder's own writer (its --workers children, whose pid is
    not the lease's) is still running."""
    with engine.begin() as conn:
        conn.execute(update(Lease.__table__).where(Lease.__table__.c.name == holding.name).values(pid=dead_pid()))


def lapsed(engine, holding: leases.Holding) -> None:
    """The lease's deadline passed (on the database's clock) and nobody renewed it."""
    with engine.begin() as conn:
        conn.execute(update(Lease.__table__).where(Lease.__table__.c.name == holding.name).values(expires_at=0.0))


def taken_over(engine, holding: leases.Holding) -> None:
    """Another executor takes the lease over (after a forced take-over of a live lease, or a lapse)."""
    leases.take_lease(engine, holding.name, "the new owner")


def lapsed_and_taken_over(engine, holding: leases.Holding) -> None:
    """The lease lapsed and another executor took it over."""
    lapsed(engine, holding)
    taken_over(engine, holding)


async def one_call(engine, writer: GroupWriter, then) -> None:
    """A writer's guard passes (as when the call's reservation commits), `then` happens, and the call is sent."""
    with Session(engine) as session:
        config = config_from_model(session.exec(select(Model).where(Model.name == "gpt-x")).one())
    client = LLMClient(config, engine, writer=writer, max_retries=0)
    try:
        await writer.commit([])  # the reservation's transaction: the fence passes, its check is fresh
        then()
        await client.complete([ChatMessage(role="user", content="sent after the take-over?")])
    finally:
        writer.close()
        await client.aclose()


def test_a_forced_take_over_of_a_live_lease_lets_no_call_through(engine, monkeypatch, tmp_path):
    monkeypatch.setenv("GAUNTLET_SECRETS_FILE", str(tmp_path / "none.toml"))
    add_model(engine, "gpt-x", "openai")
    holding = leases.take_lease(engine, "run:1", "the first owner")
    writer = GroupWriter(engine, guard=lambda conn: leases.check_fences(conn, [holding.fence]))

    def force() -> None:
        gone_on_this_host(engine, holding)
        second = leases.take_lease(engine, holding.name, "the new owner")  # no wait: the lease was live
        assert second.generation == 2

    with FakeLLMServer() as server:
        point_sdks_at(monkeypatch, server)
        with pytest.raises(leases.LeaseLost, match=r"taken over by .*\(the new owner\)"):
            asyncio.run(one_call(engine, writer, force))
        figure(f"forced take-over of a live lease ({engine.dialect.name}): {len(server.requests)} calls let through")
        assert server.requests == [], "the old owner's call went out after the take-over"


def skewed_clock(monkeypatch, offset_s: float) -> None:
    """This host's wall clock is `offset_s` off (the database's is right); the monotonic clock is unchanged."""
    real = time.time
    fake = types.SimpleNamespace(time=lambda: real() + offset_s, monotonic=time.monotonic, sleep=time.sleep)
    monkeypatch.setattr(leases, "time", fake)
    monkeypatch.setattr(writes, "time", fake)


def test_a_host_whose_clock_runs_ahead_does_not_take_a_live_lease(engine, monkeypatch):
    first = leases.take_lease(engine, "run:1", "the first owner")
    skewed_clock(monkeypatch, +HOUR_S)
    with pytest.raises(leases.LeaseHeld, match=r"run 1 is owned by .*\(the first owner\)"):
        leases.take_lease(engine, "run:1", "a host an hour ahead")
    assert leases.lease_holder(engine, "run:1").token == first.token


def test_a_host_whose_clock_runs_behind_sends_no_call_past_its_lapsed_lease(engine, monkeypatch, tmp_path):
    monkeypatch.setenv("GAUNTLET_SECRETS_FILE", str(tmp_path / "none.toml"))
    monkeypatch.setenv(leases.LEASE_TTL_ENV, str(TTL_S))
    add_model(engine, "gpt-x", "openai")
    skewed_clock(monkeypatch, -HOUR_S)
    holding = leases.take_lease(engine, "run:1", "an owner an hour behind")
    with Session(engine) as session:
        expires_at = session.exec(select(Lease.expires_at).where(Lease.name == "run:1")).one()
    assert abs(expires_at - (time.time() + TTL_S)) < 5, "the deadline was not set on the database's clock"
    writer = GroupWriter(engine, guard=lambda conn: leases.check_fences(conn, [holding.fence]))
    with FakeLLMServer() as server:
        point_sdks_at(monkeypatch, server)
        with pytest.raises(leases.LeaseLost, match=r"expired .* did not renew it"):
            asyncio.run(one_call(engine, writer, lambda: lapsed(engine, holding)))
        assert server.requests == [], "a call went out past the lease's deadline"


def scored_run(engine) -> int:
    """A finished run of 12 baseline answers, ready for a judge."""
    seed_instances(engine, 6)
    registered_models.ensure_baselines(engine)
    run_id = runs.create_run(engine, runs.RunOptions(models=["baseline:extractive", "baseline:always-refuse"]))
    assert asyncio.run(runner.execute_run(engine, run_id)).status == "done"
    return run_id


def no_heartbeat(engine, holding, renew) -> None:
    """The scorer's heartbeat does not renew its lease (a frozen renewal thread)."""


@pytest.mark.parametrize("then, refused", [
    pytest.param(lapsed_and_taken_over, r"taken over by .*\(the new owner\)", id="taken-over-before-the-first-judge-call"),
    pytest.param(lapsed, r"expired .* did not renew it", id="lapsed-and-not-renewed"),
])
def test_judge_calls_under_the_scoring_lease_check_it_like_generation_calls(engine, monkeypatch, tmp_path, then,
                                                                          refused):
    monkeypatch.setenv("GAUNTLET_SECRETS_FILE", str(tmp_path / "none.toml"))
    monkeypatch.setenv(leases.LEASE_TTL_ENV, str(TTL_S))
    monkeypatch.setattr(scorer, "_renew", no_heartbeat)
    run_id = scored_run(engine)
    add_model(engine, "judge-x", "openai")
    original = scorer._Scorer.run

    async def run_after(self, progress):
        with Session(engine) as session:
            row = session.exec(select(Lease).where(Lease.name == score_lease(run_id, "llm:judge-x"))).one()
        then(engine, leases.Holding(row.name, row.token, row.owner, row.generation))
        return await original(self, progress)

    monkeypatch.setattr(scorer._Scorer, "run", run_after)
    with FakeLLMServer() as server:
        point_sdks_at(monkeypatch, server)
        with pytest.raises(leases.LeaseLost, match=refused):
            asyncio.run(score_run(engine, run_id, "llm:judge-x"))
        figure(f"judge under a {then.__name__} scoring lease ({engine.dialect.name}): {len(server.requests)} judge "
               "calls sent")
        assert server.requests == [], "a judge call went out without a live scoring lease"



@pytest.mark.parametrize(("after_the_pause", "expected"), [
    pytest.param("taken over", "taken over by pid 9 on elsewhere", id="taken-over-while-paused-names-the-new-owner"),
    pytest.param("still lapsed", "did not renew it", id="lapsed-and-not-taken-over-says-so"),
    pytest.param("renewed", None, id="renewed-at-the-last-check-goes-on"),
])
def test_a_writer_paused_past_its_patience_checks_the_lease_once_more(engine, monkeypatch, after_the_pause, expected):
    """A writer waiting for its lapsed lease's renewal, stopped (SIGSTOP) right after a passing check until past the
    heartbeat's patience, checks the fence once more on waking: it names who took the lease over, says the lease
    lapsed when nobody did, or goes on when it was renewed (before, it stopped with 'lapsed' in every case)."""
    paused = {"s": 0.0}
    fake = types.SimpleNamespace(time=time.time, monotonic=lambda: time.monotonic() + paused["s"], sleep=time.sleep)
    monkeypatch.setattr(writes, "time", fake)
    checks: list[float] = []

    def guard(conn) -> float:
        checks.append(paused["s"])
        if not paused["s"]:
            if len(checks) == 2:
                paused["s"] = HOUR_S  # stopped right after this check passed, woken an hour later
            return -1.0  # ours, lapsed a second ago, its renewal awaited
        if after_the_pause == "taken over":
            raise leases.LeaseLost("lease of run 1 taken over by pid 9 on elsewhere (generation 2); stopping")
        return -1.0 if after_the_pause == "still lapsed" else 30.0

    writer = GroupWriter(engine, guard=guard)
    try:
        if expected is None:
            asyncio.run(writer.confirm_guard())
        else:
            with pytest.raises(leases.LeaseLost, match=expected):
                asyncio.run(writer.confirm_guard())
    finally:
        writer.close()
    assert checks[:2] == [0.0, 0.0] and HOUR_S in checks  # the fence was checked again after the pause
