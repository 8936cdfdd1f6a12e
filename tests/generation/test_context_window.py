"""Context windows: a prompt over its model's window (prompt + max output tokens) is refused unsent or truncated by
whole documents from the end of the bundle, recorded in prompt_meta; the estimate says how many and what happens."""

from __future__ import annotations

import asyncio

import pytest
from sqlmodel import Session, select
from typer.testing import CliRunner

from core.cli import app
from core.generation import llm, registered_models, run_estimates, run_prompts, runner, runs
from core.generation.providers.base import ChatMessage, ModelConfig
from core.generation.ratelimit import ManualClock
from core.protocols import get_protocol
from core.protocols.prompting import DocumentView, InstanceView
from core.store.models import Model, Response
from core.testing.fake_server import FakeLLMServer, prompt_text
from tests.generation.conftest import add_qa_instance
from tests.providers.conftest import point_sdks_at

DOC_TOKENS = 92_500  # four documents: a 370k-token prompt
ROLES = ["noise", "noise", "noise", "supporting"]
MAX_OUTPUT = 64


def big_text(uid: str) -> str:
    marker = f"MARK-{uid} "
    return marker + "lorem " * ((DOC_TOKENS * 4 - len(marker)) // 6)


@pytest.fixture
def big(engine, monkeypatch, tmp_path):
    """A 370k-token reference-QA prompt (three noise pages, then the supporting one) and a small question."""
    monkeypatch.setenv("GAUNTLET_SECRETS_FILE", str(tmp_path / "none.toml"))
    with Session(engine) as session:
        documents = [(f"big-{i}", role, "text", big_text(f"big-{i}")) for i, role in enumerate(ROLES)]
        add_qa_instance(session, "qa-big", query="What is in the long report?", documents=documents,
                        reference={"answer_type": "short", "answers": [{"text": "lorem"}]})
        add_qa_instance(session, "qa-small", query="What is the fee?",
                        documents=[("small", "supporting", "text", "The fee is 10 euros.")],
                        reference={"answer_type": "short", "answers": [{"text": "10 euros"}]})
        session.commit()
    return engine


def with_window(engine, window: int | None, name: str = "gpt-x") -> None:
    registered_models.register_model(engine, ModelConfig(name=name, provider="openai", model_name=name, context_window=window,
                                            max_output_tokens=MAX_OUTPUT, price_input_per_mtok=2.0,
                                            price_output_per_mtok=8.0, settings={"timeout_s": 0.3}))


def run_all(engine, monkeypatch, options: runs.RunOptions) -> tuple[int, FakeLLMServer]:
    server = FakeLLMServer(hang_s=0.5).start()
    point_sdks_at(monkeypatch, server)
    try:
        run_id = runs.create_run(engine, options)
        asyncio.run(runner.execute_run(engine, run_id, clock=ManualClock()))
    finally:
        server.stop()
    return run_id, server


def big_item(engine, run_id: int) -> Response:
    with Session(engine) as session:
        return next(r for r in session.exec(select(Response).where(Response.run_id == run_id))
                    if "small" not in r.prompt_meta["doc_order"])


def sent_markers(server: FakeLLMServer) -> set[str]:
    return {f"big-{i}" for body in server.requests for i in range(4) if f"MARK-big-{i} " in prompt_text(body)}


def test_refuse_fails_the_370k_prompt_unsent_and_unpaid(big, monkeypatch):
    with_window(big, 128_000)
    options = runs.RunOptions(models=["gpt-x"])
    estimate = run_estimates.estimate_options(big, options)
    run_id, server = run_all(big, monkeypatch, options)
    item = big_item(big, run_id)
    tokens = item.prompt_meta["context"]["tokens_before"]
    assert 370_000 <= tokens < 371_000
    assert item.status == "failed" and item.attempts == 0 and item.cost_usd == 0 and item.cache_key is None
    assert item.error == (f"context_window: prompt of {tokens} tokens exceeds the context window of 128000 tokens "
                          f"of gpt-x ({MAX_OUTPUT} reserved for the output)")
    assert item.prompt_meta["context"] == {"policy": "refuse", "window": 128_000, "tokens_before": tokens}
    assert server.call_count == 1 and sent_markers(server) == set()
    counts = (estimate.items, estimate.calls, estimate.over_window, estimate.refused, estimate.truncated)
    assert counts == (2, 1, 1, 1, 0)
    assert estimate.per_model["gpt-x"]["over_window"] == 1
    assert estimate.context_summary() == ("1 prompt(s) exceed their model's context window (policy refuse): 1 will "
                                          "fail unsent and cost nothing (--context-policy truncate drops documents)")


@pytest.mark.parametrize(
    ("condition", "kept", "dropped"),
    [
        pytest.param("", ["big-0", "big-1"], ["big-2", "big-3"], id="stored-order-drops-the-last-two"),
        pytest.param("gold_first", ["big-3", "big-0"], ["big-1", "big-2"], id="gold-first-keeps-the-supporting-page"),
    ],
)
def test_truncate_drops_whole_documents_from_the_end_and_records_them(big, monkeypatch, condition, kept, dropped):
    with_window(big, 200_000)
    options = runs.RunOptions(models=["gpt-x"], conditions=[condition], context_policy="truncate")
    estimate = run_estimates.estimate_options(big, options)
    run_id, server = run_all(big, monkeypatch, options)
    item = big_item(big, run_id)
    context = item.prompt_meta["context"]
    assert item.status == "done" and item.prompt_meta["doc_order"] == kept
    assert context["policy"] == "truncate" and context["dropped"] == dropped and context["window"] == 200_000
    assert context["tokens_before"] >= 370_000 and 185_000 < context["tokens"] <= 200_000 - MAX_OUTPUT
    assert sent_markers(server) == set(kept) and server.call_count == 2
    assert (estimate.over_window, estimate.truncated, estimate.refused, estimate.calls) == (1, 1, 0, 2)
    assert estimate.input_tokens < 200_000


def test_truncate_fails_when_even_the_first_document_does_not_fit(big, monkeypatch):
    with_window(big, 50_000)
    options = runs.RunOptions(models=["gpt-x"], context_policy="truncate")
    estimate = run_estimates.estimate_options(big, options)
    run_id, server = run_all(big, monkeypatch, options)
    item = big_item(big, run_id)
    assert item.status == "failed" and item.error.endswith("it does not fit even with only its first document")
    assert "exceeds the context window of 50000 tokens of gpt-x" in item.error and sent_markers(server) == set()
    assert (estimate.over_window, estimate.truncated, estimate.refused) == (1, 0, 1)
    assert "1 do not fit even so and will fail unsent" in estimate.context_summary()


def test_a_refused_item_retried_with_the_truncate_policy_is_answered(big, monkeypatch):
    with_window(big, 200_000)
    run_id, _ = run_all(big, monkeypatch, runs.RunOptions(models=["gpt-x"]))
    assert big_item(big, run_id).status == "failed"
    assert runs.retry_failed(big, run_id) == 1
    server = FakeLLMServer(hang_s=0.5).start()
    point_sdks_at(monkeypatch, server)
    try:
        result = asyncio.run(runner.execute_run(big, run_id, clock=ManualClock(),
                                                overrides={"context_policy": "truncate"}))
    finally:
        server.stop()
    assert result.status == "done" and result.failed == 0 and server.call_count == 1
    assert big_item(big, run_id).prompt_meta["context"]["dropped"] == ["big-2", "big-3"]
    assert runs.run_options(big, run_id).context_policy == "truncate"


def test_no_window_means_no_check_and_models_without_one_are_unaffected(big, monkeypatch):
    with_window(big, None)
    estimate = run_estimates.estimate_options(big, runs.RunOptions(models=["gpt-x"]))
    assert estimate.over_window == 0 and estimate.calls == 2 and estimate.context_summary() == ""


PROTOCOL = get_protocol("reference_qa")


def plan_of(text_tokens: int) -> run_prompts.PromptPlan:
    documents = [DocumentView(doc_uid="d", position=0, title="", text="x" * (text_tokens * 4), role="supporting")]
    view = InstanceView(query="q", reference={"answer_type": "short"})
    bundle, meta = PROTOCOL.bundle(documents, "")
    messages, prompt_meta = PROTOCOL.render_prompt(view, bundle, "", meta)
    return run_prompts.PromptPlan(PROTOCOL, view, "", bundle, meta, messages, prompt_meta)


@pytest.mark.parametrize(
    ("window", "over", "policy", "error"),
    [
        pytest.param(None, 10**6, "refuse", False, id="no-window-no-check"),
        pytest.param(1000, 0, "refuse", False, id="prompt-plus-output-exactly-fills-the-window"),
        pytest.param(1000, 1, "refuse", True, id="one-token-over"),
        pytest.param(1000, 1, "truncate", True, id="one-token-over-and-a-single-document-cannot-be-cut"),
    ],
)
def test_fit_context_boundaries(window, over, policy, error):
    base = plan_of(0).tokens
    plan = plan_of((window or 0) - MAX_OUTPUT - base + over)
    assert plan.tokens + MAX_OUTPUT == (window or 0) + over
    config = ModelConfig(name="m", provider="openai", context_window=window, max_output_tokens=MAX_OUTPUT)
    prompt = run_prompts.fit_context(plan, config, policy)
    assert (prompt.error is not None) is error and prompt.over_window is error
    assert prompt.messages is plan.messages


def test_context_window_is_registered_listed_and_never_part_of_the_cache_key(engine):
    cli = CliRunner()
    added = cli.invoke(app, ["models", "add", "long-model", "--provider", "openai", "--context-window", "1000000"])
    assert added.exit_code == 0, added.output
    assert "1000000" in cli.invoke(app, ["models", "list"]).output
    with Session(engine) as session:
        row = session.exec(select(Model).where(Model.name == "long-model")).one()
    config = llm.config_from_model(row)
    messages = [ChatMessage(role="user", content="q")]
    assert config.context_window == 1_000_000
    assert llm.cache_key(config, messages) == llm.cache_key(config.model_copy(update={"context_window": None}),
                                                             messages)
    assert cli.invoke(app, ["models", "add", "bad", "--context-window", "0"]).exit_code == 2


def test_dry_run_prints_what_the_policy_will_do(big):
    with_window(big, 128_000)
    out = CliRunner().invoke(app, ["run", "--models", "gpt-x", "--dry-run", "--context-policy", "truncate"])
    assert out.exit_code == 0, out.output
    text = " ".join(out.output.split())
    assert "over context window" in text
    assert "1 prompt(s) exceed their model's context window (policy truncate): 1 will lose documents" in text
