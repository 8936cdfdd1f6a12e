"""Rate limiter timing on a manual clock, and the cached LLM client: cache hits, retries honouring Retry-After."""

from __future__ import annotations

import asyncio

import pytest
from sqlmodel import Session, select

from core.generation.llm import LLMClient, cache_key, make_client
from core.generation.providers.base import ChatMessage, ModelConfig, ProviderError
from core.generation.ratelimit import ManualClock, RateLimiter
from core.store.models import LLMCall
from core.testing.fake_server import FakeLLMServer, ScriptRule
from tests.providers.conftest import PLANTED_KEY, point_sdks_at


async def acquire_all(limiter: RateLimiter, clock: ManualClock, token_counts: list[int]) -> list[float]:
    times = []
    for tokens in token_counts:
        await limiter.acquire(tokens)
        times.append(round(clock.now(), 6))
    return times


@pytest.mark.parametrize(
    ("rpm", "tpm", "tokens", "expected_times"),
    [
        pytest.param(60, None, [0] * 4, [0, 0, 0, 0], id="rpm-burst-within-capacity"),
        pytest.param(2, None, [0] * 4, [0, 0, 30, 60], id="rpm-2-spaces-after-burst"),
        pytest.param(None, 1200, [600, 600, 600, 300], [0, 0, 30, 45], id="tpm-refills-20-per-second"),
        pytest.param(120, 600, [300, 300, 300], [0, 0, 30], id="both-limits-tpm-binds"),
        pytest.param(None, None, [10**6] * 3, [0, 0, 0], id="unlimited"),
    ],
)
def test_rate_limiter_timing(rpm, tpm, tokens, expected_times):
    clock = ManualClock()
    limiter = RateLimiter(rpm=rpm, tpm=tpm, clock=clock)
    assert asyncio.run(acquire_all(limiter, clock, tokens)) == pytest.approx(expected_times)


def model_config(**settings) -> ModelConfig:
    return ModelConfig(name="gpt-test", provider="openai", model_name="gpt-test", price_input_per_mtok=1.0,
                       price_output_per_mtok=2.0, settings={"timeout_s": 0.5, **settings})


MESSAGES = [ChatMessage(role="system", content="rules"), ChatMessage(role="user", content="question one")]


@pytest.fixture
def server(monkeypatch, tmp_path):
    monkeypatch.setenv("GAUNTLET_SECRETS_FILE", str(tmp_path / "none.toml"))
    rules = [ScriptRule(match="flaky", fault="429", retry_after=7, times=2),
             ScriptRule(match="broken", fault="500")]
    with FakeLLMServer(rules, leak_auth_in_errors=True) as fake:
        point_sdks_at(monkeypatch, fake)
        yield fake


def test_cache_hit_is_never_paid_twice(engine, server):
    first = asyncio.run(make_client(model_config(), engine).complete(MESSAGES))
    second = asyncio.run(make_client(model_config(), engine).complete(MESSAGES, purpose="judge:x"))
    assert (first.cached, second.cached, second.text) == (False, True, first.text)
    assert server.call_count == 1
    with Session(engine) as session:
        rows = session.exec(select(LLMCall)).all()
    assert len(rows) == 1 and rows[0].key == cache_key(model_config(), MESSAGES) and rows[0].purpose == "generate"
    assert rows[0].cost_usd == pytest.approx(first.cost_usd) and first.cost_usd > 0


@pytest.mark.parametrize(
    ("change", "same_key"),
    [
        pytest.param({"settings": {"timeout_s": 9, "api_key_env": "OTHER", "base_url_env": "X"}}, True,
                     id="keys-endpoints-timeouts-ignored"),
        pytest.param({"temperature": 0.7}, False, id="temperature-matters"),
        pytest.param({"model_name": "gpt-other"}, False, id="model-matters"),
        pytest.param({"settings": {"reasoning_effort": "low"}}, False, id="reasoning-matters"),
    ],
)
def test_cache_key_identity(change, same_key):
    assert (cache_key(model_config().model_copy(update=change), MESSAGES) == cache_key(model_config(), MESSAGES)) \
        is same_key


def test_retries_honour_retry_after_then_succeed(engine, server):
    clock = ManualClock()
    client = LLMClient(model_config(), engine, clock=clock, max_retries=4, seed=1)
    messages = [ChatMessage(role="user", content="a flaky one")]
    completion = asyncio.run(client.complete(messages))
    assert completion.attempts == 3 and server.call_count == 1
    assert len(clock.sleeps) == 2 and all(7 <= s <= 7.7 for s in clock.sleeps)


def test_last_attempt_raises_with_backoff_growing(engine, server):
    clock = ManualClock()
    client = LLMClient(model_config(), engine, clock=clock, max_retries=3, seed=1)
    with pytest.raises(ProviderError) as info:
        asyncio.run(client.complete([ChatMessage(role="user", content="broken")]))
    assert info.value.attempts == 4 and info.value.kind == "http_500"
    assert PLANTED_KEY not in str(info.value)
    assert len(clock.sleeps) == 3 and clock.sleeps[0] < clock.sleeps[2]
    with Session(engine) as session:
        assert session.exec(select(LLMCall)).all() == []


def test_identical_concurrent_calls_share_one_request(engine, server):
    client = LLMClient(model_config(), engine)

    async def both():
        return await asyncio.gather(client.complete(MESSAGES), client.complete(MESSAGES))

    first, second = asyncio.run(both())
    assert first.text == second.text and server.call_count == 1


@pytest.mark.parametrize(
    ("name", "prompts", "stale_read", "server_calls"),
    [
        ("distinct_calls_at_once", ["one", "two", "three"], False, 3),
        ("identical_calls_at_once", ["same", "same"], False, 1),
        ("read_that_missed_the_commit_shares_the_answer", ["same", "same"], True, 1),
    ],
)
def test_answered_calls_shared_then_forgotten(engine, server, monkeypatch, name, prompts, stale_read, server_calls):
    import threading

    client = LLMClient(model_config(), engine)
    lookup, first_done = client._lookup, threading.Event()

    def miss_then_wait(key: str):  # the cache read misses, and returns only once the first caller has committed
        found = lookup(key)
        first_done.wait(10)
        return found

    async def calls():
        first = asyncio.create_task(client.complete([ChatMessage(role="user", content=prompts[0])]))
        first.add_done_callback(lambda _: first_done.set())
        if stale_read:
            server.latency_ms = 300
            while not client._inflight:  # the first caller read the cache and is waiting for the server
                await asyncio.sleep(0.01)
            monkeypatch.setattr(client, "_lookup", miss_then_wait)
        rest = [client.complete([ChatMessage(role="user", content=p)]) for p in prompts[1:]]
        return [*await asyncio.gather(first, *rest)]

    answers = asyncio.run(calls())
    assert len({a.text for a in answers}) == len(set(prompts)), name
    assert server.call_count == server_calls, name
    assert client._inflight == {}, name
