"""Judge calls in flight during scoring, on the loopback fake server through the real OpenAI and Anthropic SDKs:
--concurrency bounds the calls (not the responses), a response's independent calls overlap, cache reads are batched,
and the numbers equal those of one call at a time."""

from __future__ import annotations

import asyncio
import json
import re

import pytest
from sqlalchemy import event
from sqlmodel import Session, delete, select

from core.scoring.scorer import score_run
from core.store.models import ContextClaims, LLMCall, Model, Verdict
from core.testing.fake_server import FakeLLMServer, ScriptRule
from tests.judges.conftest import REFUSAL, World
from tests.judges.test_fake_server_judge import JUDGE, rules

LATENCY_MS = 200  # long enough that the calls sent together are in flight together on a loaded machine
FAST_MS = 50
PAID = 27
EVERY_ID = json.dumps({"verdicts": [{"id": f"c{i}", "verdict": "yes"} for i in range(1, 6)]})


def six_responses(world: World) -> None:
    """Two models' answers to the noisy, gap and conflict instances (gen-b refuses the gap one): 30 judge calls, of
    which 3 are paid once for both models (the claims to verify are scripted, so their verification prompts match)."""
    for model in ("gen-a", "gen-b"):
        for mode in ("noisy", "gap", "conflict"):
            text = REFUSAL if (model, mode) == ("gen-b", "gap") else f"{model} on the {mode} case: see [1]."
            world.respond(model, mode, None if model == "gen-a" else text)


def judge_on(world: World, server: FakeLLMServer, provider: str, monkeypatch) -> None:
    """Point the judge model row at the fake server through `provider`'s SDK."""
    url = server.base_url + ("/v1" if provider == "openai_compatible" else "")
    monkeypatch.setenv("JUDGE_URL", url)
    monkeypatch.setenv("JUDGE_KEY", "test-key")
    with Session(world.engine) as s:
        m = s.exec(select(Model).where(Model.name == "judge-x")).one()
        m.provider, m.settings = provider, {"base_url_env": "JUDGE_URL", "api_key_env": "JUDGE_KEY"}
        s.add(m)
        s.commit()


def scores(world: World) -> tuple[list[tuple], int]:
    """Every verdict of the run as comparable values (no ids, no timestamps) and the judge calls of all of them (which
    response's verdict carries an instance's shared context-claim calls depends on who asked first)."""
    with Session(world.engine) as s:
        rows = s.exec(select(Verdict).where(Verdict.run_id == world.run_id)).all()
    return sorted((v.response_id, v.judge, v.metric, v.constraint_id or 0, v.status, v.passed, v.value, v.reason,
                   v.method) for v in rows), sum(v.calls for v in rows)


def forget(world: World, cache: bool) -> None:
    """Drop the run's verdicts and stored context claims (and the call cache when `cache`)."""
    with Session(world.engine) as s:
        for table in (Verdict, ContextClaims, *([LLMCall] if cache else [])):
            s.exec(delete(table))
        s.commit()


@pytest.mark.parametrize(("provider", "modes", "concurrency", "paid"), [
    pytest.param("openai_compatible", 1, 1, 6, id="openai-1-response-1"),
    pytest.param("openai_compatible", 6, 3, PAID, id="openai-6-responses-3"),
    pytest.param("openai_compatible", 6, 8, PAID, id="openai-6-responses-8"),
    pytest.param("openai_compatible", 1, 4, 6, id="openai-1-response-4"),  # 4 independent calls of one response
    pytest.param("anthropic", 6, 4, PAID, id="anthropic-6-responses-4"),
])
def test_concurrency_bounds_calls_in_flight(world: World, monkeypatch, provider, modes, concurrency, paid) -> None:
    if modes == 1:
        world.respond("gen-a", "conflict")
    else:
        six_responses(world)
    with FakeLLMServer(script=rules(EVERY_ID), latency_ms=LATENCY_MS) as server:
        judge_on(world, server, provider, monkeypatch)
        report = asyncio.run(score_run(world.engine, world.run_id, JUDGE, concurrency=concurrency))
        assert server.call_count == paid and server.max_in_flight == concurrency
    assert sum(report.errors.values()) == 0


@pytest.mark.parametrize(("first", "second", "overlap"), [
    pytest.param("constraint-batched", "response-claims", True, id="constraints-faithfulness"),
    pytest.param("response-claims", "context-claims", True, id="faithfulness-coverage"),
    pytest.param("context-claims", "conflict-recognition", True, id="coverage-conflict"),
    pytest.param("response-claims", "claim-verify", False, id="claims-then-verification"),
    pytest.param("context-claims", "coverage-verify", False, id="context-claims-then-coverage"),
])
def test_independent_calls_of_a_response_overlap(world: World, monkeypatch, first, second, overlap) -> None:
    world.respond("gen-a", "conflict")
    with FakeLLMServer(script=rules(EVERY_ID), latency_ms=LATENCY_MS) as server:
        judge_on(world, server, "openai_compatible", monkeypatch)
        asyncio.run(score_run(world.engine, world.run_id, JUDGE))
        spans = {task: [(a, b) for a, b, prompt in server.spans if f"[task: {task}]" in prompt]
                 for task in (first, second)}
    (a_start, a_end), (b_start, b_end) = spans[first][0], spans[second][0]
    assert (a_start < b_end and b_start < a_end) == overlap
    if not overlap:
        assert b_start >= a_end  # the dependent call starts only after the call it depends on


@pytest.mark.parametrize(("cached", "most_selects"), [
    pytest.param(True, 6, id="re-score-from-cache"),   # 3 batches (stage 1, stage 2) and 3 repeated prompts
    pytest.param(False, 15, id="fresh"),  # stage 1 in one query, then at most one per later call: not 30
])
def test_cache_reads_are_batched(world: World, monkeypatch, cached, most_selects) -> None:
    six_responses(world)
    with FakeLLMServer(script=rules(EVERY_ID), latency_ms=FAST_MS) as server:
        judge_on(world, server, "openai_compatible", monkeypatch)
        first = asyncio.run(score_run(world.engine, world.run_id, JUDGE))
        forget(world, cache=not cached)
        selects: list[str] = []

        def count(conn, cursor, statement, *args) -> None:
            if statement.lstrip().upper().startswith("SELECT") and LLMCall.__tablename__ in statement.lower():
                selects.append(statement)

        event.listen(world.engine, "before_cursor_execute", count)
        try:
            again = asyncio.run(score_run(world.engine, world.run_id, JUDGE))
        finally:
            event.remove(world.engine, "before_cursor_execute", count)
        assert server.call_count == PAID * (1 if cached else 2)
    assert again.total_calls == first.total_calls == 30
    assert 1 <= len(selects) <= most_selects, [s.split("WHERE")[-1][:60] for s in selects]


@pytest.mark.parametrize(("mode", "concurrency"), [
    pytest.param("batched", 16, id="batched"),
    pytest.param("single", 16, id="single"),
    pytest.param("batched", 2, id="batched-2"),
])
def test_scores_equal_one_call_at_a_time(world: World, monkeypatch, mode, concurrency) -> None:
    six_responses(world)
    no_claims = ScriptRule(match=r"\[task: response-claims\][\s\S]*" + re.escape(REFUSAL), reply='{"claims": []}')
    with FakeLLMServer(script=[no_claims, *rules(EVERY_ID)],
                       latency_ms=10) as server:
        judge_on(world, server, "openai_compatible", monkeypatch)
        asyncio.run(score_run(world.engine, world.run_id, JUDGE, concurrency=1, constraint_mode=mode))
        sequential = scores(world)
        forget(world, cache=True)
        asyncio.run(score_run(world.engine, world.run_id, JUDGE, concurrency=concurrency, constraint_mode=mode))
        assert server.max_in_flight > 1
    assert scores(world) == sequential and len(sequential[0]) > 30


@pytest.mark.parametrize("concurrency", [pytest.param(1, id="one"), pytest.param(8, id="eight")])
def test_identical_prompts_are_paid_once(world: World, monkeypatch, concurrency) -> None:
    for model in ("gen-a", "gen-b"):
        for mode in ("noisy", "gap", "conflict"):
            world.respond(model, mode, REFUSAL)  # one response-claims prompt for all six
    with FakeLLMServer(script=rules(EVERY_ID), latency_ms=FAST_MS) as server:
        judge_on(world, server, "openai_compatible", monkeypatch)
        asyncio.run(score_run(world.engine, world.run_id, JUDGE, concurrency=concurrency))
        claims = [p for _, _, p in server.spans if "[task: response-claims]" in p]
    assert len(claims) == 1
