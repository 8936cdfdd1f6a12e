"""Provider adapters with the real openai/anthropic SDKs over HTTP to the fake server: answers, usage, faults."""

from __future__ import annotations

import asyncio

import pytest

from core.generation.providers import PROVIDERS, get_provider
from core.generation.providers.base import ChatMessage, ModelConfig, ProviderError
from core.generation.providers.prices import default_price
from core.registry import UnknownNameError
from core.testing.fake_server import canned_answer, count_tokens
from tests.providers.conftest import PLANTED_KEY

SDK_PROVIDERS = ["openai", "anthropic", "openai_compatible"]


def config(provider: str, **settings) -> ModelConfig:
    base = {"timeout_s": 0.5}
    if provider == "openai_compatible":
        base["base_url_env"] = "OPENAI_BASE_URL"
    return ModelConfig(name="m", provider=provider, model_name="test-model", price_input_per_mtok=2.0,
                       price_output_per_mtok=8.0, settings={**base, **settings})


def ask(provider, text: str):
    messages = [ChatMessage(role="system", content="Be exact."), ChatMessage(role="user", content=text)]
    return asyncio.run(get_provider(provider).complete(messages))


@pytest.mark.parametrize("provider", SDK_PROVIDERS)
def test_happy_path_and_usage(fake_llm, provider):
    completion = ask(config(provider), "what is the interval")
    prompt = "Be exact.\nwhat is the interval"
    assert completion.text == canned_answer(prompt)
    assert completion.input_tokens == count_tokens(prompt) == 6
    assert completion.output_tokens == count_tokens(completion.text)
    assert completion.cost_usd == pytest.approx((6 * 2.0 + completion.output_tokens * 8.0) / 1e6)
    assert completion.latency_ms > 0
    assert fake_llm.call_count == 1


FAULT_EXPECTATIONS = [
    pytest.param("429", "rate_limit", 0.01, id="429"),
    pytest.param("500", "http_500", None, id="500"),
    pytest.param("503", "http_503", None, id="503"),
    pytest.param("reset", "connection", None, id="reset"),
    pytest.param("timeout", "timeout", None, id="timeout"),
    pytest.param("malformed", "malformed", None, id="malformed"),
    pytest.param("truncated", "connection", None, id="truncated"),
]


@pytest.mark.parametrize("provider", ["openai", "anthropic"])
@pytest.mark.parametrize(("fault", "kind", "retry_after"), FAULT_EXPECTATIONS)
def test_each_fault_maps_to_a_retryable_provider_error(fake_llm, provider, fault, kind, retry_after):
    with pytest.raises(ProviderError) as info:
        ask(config(provider), f"please FAULT-{fault} now")
    error = info.value
    assert (error.kind, error.retryable, error.retry_after) == (kind, True, retry_after)
    assert PLANTED_KEY not in str(error)
    assert fake_llm.call_count == 0


@pytest.mark.parametrize(
    ("provider", "settings", "field", "expected"),
    [
        pytest.param("openai", {"reasoning_effort": "high"}, "reasoning_effort", "high", id="openai-reasoning"),
        pytest.param("openai", {}, "temperature", 0.0, id="openai-temperature"),
        pytest.param("anthropic", {"thinking_budget": 2048}, "thinking", {"type": "enabled", "budget_tokens": 2048},
                     id="anthropic-thinking"),
        pytest.param("anthropic", {}, "max_tokens", 1024, id="anthropic-max-tokens"),
    ],
)
def test_reasoning_settings_reach_the_wire(fake_llm, provider, settings, field, expected):
    ask(config(provider, **settings), "hello")
    assert fake_llm.requests[-1][field] == expected
    assert "thinking" not in fake_llm.requests[-1] or provider == "anthropic"


def test_custom_key_env_is_used_and_redacted(fake_llm, monkeypatch):
    monkeypatch.setenv("MY_CUSTOM_CRED", "custom-credential-value-42")
    with pytest.raises(ProviderError) as info:
        ask(config("openai", api_key_env="MY_CUSTOM_CRED"), "FAULT-500")
    assert "custom-credential-value-42" not in str(info.value) and "***" in str(info.value)


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        pytest.param("gpt-4.1", (2.0, 8.0), id="exact"),
        pytest.param("claude-opus-4-5-20251101", (5.0, 25.0), id="dated-claude"),
        pytest.param("gpt-4o-mini-2024-07-18", (0.15, 0.6), id="longest-prefix"),
        pytest.param("my-local-llama", (0.0, 0.0), id="unknown"),
    ],
)
def test_default_prices(name, expected):
    assert default_price(name) == expected


def test_registry_lists_known_providers():
    assert {"openai", "anthropic", "openai_compatible", "baseline"} <= set(PROVIDERS.names())
    with pytest.raises(UnknownNameError, match="known: anthropic, baseline"):
        get_provider(ModelConfig(name="x", provider="nope"))


def test_openai_compatible_needs_an_endpoint(isolated_secrets):
    with pytest.raises(ProviderError, match="base_url"):
        get_provider(ModelConfig(name="x", provider="openai_compatible", model_name="llama"))


@pytest.mark.parametrize("provider", SDK_PROVIDERS)
def test_pool_sized_for_the_runner_and_sdk_retries_off(fake_llm, provider):
    adapter = get_provider(config(provider), max_connections=7)
    transport = adapter.client._client._transport
    assert type(transport).__name__ == "AiohttpTransport", "the SDK's aiohttp client is the cheaper one per call"
    assert (transport.limits.max_connections, transport.limits.max_keepalive_connections) == (7, 7)
    assert adapter.client.max_retries == 0
    assert ask(config(provider), "what is the interval").text


def test_baseline_accepts_and_ignores_a_pool_size():
    adapter = get_provider(ModelConfig(name="b", provider="baseline", model_name="baseline:always-refuse"),
                           max_connections=4)
    assert asyncio.run(adapter.complete([ChatMessage(role="user", content="q")])).text
