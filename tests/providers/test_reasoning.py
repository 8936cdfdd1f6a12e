"""Reasoning kept apart from the answer, with the real openai and anthropic SDKs over HTTP to the loopback fake
server: providers' reasoning fields (OpenAI-compatible `reasoning_content`, Anthropic `thinking` blocks) and inline
<think>-style blocks end in `Completion.reasoning`, the answer alone in `text`; reasoning tokens are counted and paid;
an unclosed block is 'unfinished' (no answer)."""

from __future__ import annotations

import asyncio

import pytest

from core.generation.providers import get_provider
from core.generation.providers.base import ChatMessage, ModelConfig
from core.generation.reasoning import split_reasoning
from core.testing.fake_server import FakeLLMServer, ScriptRule, count_tokens
from tests.providers.conftest import point_sdks_at

THOUGHT = "Option A looks tempting. The answer is yes? No: B is rejected, so C."
RULES = [ScriptRule(match="field", reply="Answer: C", reasoning=THOUGHT),
         ScriptRule(match="inline", reply=f"<think>{THOUGHT}</think>\n\nAnswer: C"),
         ScriptRule(match="tagged", reply=f"<thinking>{THOUGHT}</thinking>Answer: C"),
         ScriptRule(match="template", reply=f"{THOUGHT}</think>\nAnswer: C"),
         ScriptRule(match="unclosed", reply=f"<think>{THOUGHT} Still weighing"),
         ScriptRule(match="plain", reply="Answer: C")]


@pytest.fixture
def server(monkeypatch, isolated_secrets):
    with FakeLLMServer(RULES) as fake:
        point_sdks_at(monkeypatch, fake)
        yield fake


def ask(provider: str, prompt: str):
    settings = {"timeout_s": 2, **({"base_url_env": "OPENAI_BASE_URL"} if provider == "openai_compatible" else {})}
    config = ModelConfig(name="r", provider=provider, model_name="reasoner", price_input_per_mtok=1.0,
                         price_output_per_mtok=10.0, paradigm="reasoning", settings=settings)
    return asyncio.run(get_provider(config).complete([ChatMessage(role="user", content=prompt)]))


CASES = [pytest.param("field", "finished", id="provider-field"),
         pytest.param("inline", "finished", id="inline-think"),
         pytest.param("tagged", "finished", id="inline-thinking"),
         pytest.param("template", "finished", id="opening-tag-in-template"),
         pytest.param("unclosed", "unfinished", id="unclosed")]


@pytest.mark.parametrize("provider", ["openai", "anthropic", "openai_compatible"])
@pytest.mark.parametrize(("prompt", "state"), CASES)
def test_reasoning_is_kept_apart_from_the_answer(server, provider, prompt, state):
    got = ask(provider, prompt)
    assert got.reasoning_state == state
    assert got.reasoning.startswith(THOUGHT)
    assert got.text == ("" if state == "unfinished" else "Answer: C")
    assert got.reasoning_tokens > 0
    assert got.output_tokens >= got.reasoning_tokens  # reasoning is within the paid output
    assert got.cost_usd == pytest.approx((got.input_tokens * 1.0 + got.output_tokens * 10.0) / 1e6)


@pytest.mark.parametrize("provider", ["openai", "anthropic"])
def test_provider_reasoning_tokens_are_paid(server, provider):
    plain, reasoned = ask(provider, "plain"), ask(provider, "field")
    assert (plain.text, plain.reasoning, plain.reasoning_state) == ("Answer: C", "", "none")
    assert reasoned.output_tokens == plain.output_tokens + count_tokens(THOUGHT)
    if provider == "openai":  # usage.completion_tokens_details.reasoning_tokens
        assert reasoned.reasoning_tokens == count_tokens(THOUGHT)
    else:  # Anthropic reports no separate count: estimated, within the output tokens
        assert 0 < reasoned.reasoning_tokens <= reasoned.output_tokens
    assert reasoned.cost_usd > plain.cost_usd


SPLITS = [
    pytest.param("<think>a</think>b", ("b", "a", "finished"), id="think"),
    pytest.param("<Reasoning>a</Reasoning> b", ("b", "a", "finished"), id="reasoning-any-case"),
    pytest.param("<thought>a</thought>b<think>c</think>", ("b", "a\n\nc", "finished"), id="two-blocks"),
    pytest.param("a</think>b", ("b", "a", "finished"), id="closing-only"),
    pytest.param("<think>a", ("", "a", "unfinished"), id="unclosed"),
    pytest.param("no block at all", ("no block at all", "", "none"), id="none"),
    pytest.param("use <b>bold</b>", ("use <b>bold</b>", "", "none"), id="other-tags-kept"),
]


@pytest.mark.parametrize(("text", "expected"), SPLITS)
def test_split_reasoning(text, expected):
    got = split_reasoning(text)
    assert (got.answer, got.reasoning, got.state) == expected


def test_provider_reasoning_cut_off_with_no_answer_is_unfinished():
    assert split_reasoning("", "thinking...", "length").state == "unfinished"
    assert split_reasoning("", "thinking...", "max_tokens").state == "unfinished"
    assert split_reasoning("C", "thinking...", "length").state == "finished"
