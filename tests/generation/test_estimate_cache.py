"""The run estimate reuses each scope's items and each prompt (built and token-counted once) across model choices,
with the same numbers as an estimate built from scratch; an import between two estimates is seen by the second."""

from __future__ import annotations

from dataclasses import asdict

import pytest
from sqlalchemy import event
from sqlmodel import Session, select

from core.generation import llm, run_estimates, run_prompts, runs
from core.ingest.io import import_specs, instance_spec
from core.store.models import Instance, LLMCall, Model
from tests.factories import add_model


def answer_half(engine, name: str) -> None:
    """Store `name`'s answer to every other latest instance's default prompt in the call cache."""
    with Session(engine) as session:
        config = llm.config_from_model(session.exec(select(Model).where(Model.name == name)).one())
        ids = answered_items(engine)
        for messages, _ in run_prompts.load_prompts(session, ids, "stored", 0).values():
            session.add(LLMCall(key=llm.cache_key(config, messages), provider=config.provider,
                                model_name=config.model_name, text="cached answer"))
        session.commit()


@pytest.fixture
def priced(mixed):
    """The mixed benchmark with a second paid model at other prices, half of gpt-x's prompts answered in the call
    cache, and no estimate cached from another test."""
    add_model(mixed, "gpt-y", "openai", price_in=5.0, price_out=15.0, max_output_tokens=128)
    answer_half(mixed, "gpt-x")
    run_estimates.ESTIMATE_CACHE.clear()
    yield mixed
    run_estimates.ESTIMATE_CACHE.clear()


def cold_estimate(engine, options: runs.RunOptions) -> dict:
    """The estimate with nothing cached: every prompt selected, built and counted for this call."""
    run_estimates.ESTIMATE_CACHE.clear()
    return asdict(run_estimates.estimate_options(engine, options))


OPTIONS = [
    pytest.param(runs.RunOptions(models=["gpt-x"]), id="one-model"),
    pytest.param(runs.RunOptions(models=["gpt-x", "gpt-y"]), id="two-models"),
    pytest.param(runs.RunOptions(models=["gpt-y", "baseline:extractive"]), id="paid-and-baseline"),
    pytest.param(runs.RunOptions(models=["gpt-x", "gpt-y"], repeats=2), id="repeats"),
    pytest.param(runs.RunOptions(models=["gpt-y"], limit=3), id="limit"),
    pytest.param(runs.RunOptions(models=["gpt-x", "gpt-y"], context_policy="truncate"), id="truncate-policy"),
]


@pytest.mark.parametrize("options", OPTIONS)
def test_estimate_after_other_model_choices_equals_estimate_from_scratch(priced, options):
    expected = cold_estimate(priced, options)
    for models in (["gpt-x"], ["gpt-y", "gpt-x"], ["baseline:always-refuse"]):  # the user changes the model choice
        run_estimates.estimate_options(priced, runs.RunOptions(**{**vars(options), "models": models}))
    assert asdict(run_estimates.estimate_options(priced, options)) == expected


def document_queries(engine) -> list[str]:
    """The SQL statements reading documents' texts (to build prompts), recorded from now on."""
    seen: list[str] = []
    event.listen(engine, "before_cursor_execute",
                 lambda conn, cursor, statement, *rest: seen.append(statement) if "document.text" in statement else None)
    return seen


@pytest.mark.parametrize("first, then", [
    pytest.param(["gpt-x"], ["gpt-x", "gpt-y"], id="add-a-model"),
    pytest.param(["gpt-x", "gpt-y"], ["gpt-y"], id="drop-a-model"),
    pytest.param(["gpt-x"], ["baseline:extractive"], id="switch-to-a-baseline"),
    pytest.param(["gpt-y"], ["gpt-x"], id="switch-to-a-model-with-cached-calls"),
])
def test_a_model_change_builds_no_prompt_again(priced, first, then):
    run_estimates.estimate_options(priced, runs.RunOptions(models=first))
    built = document_queries(priced)
    estimate = run_estimates.estimate_options(priced, runs.RunOptions(models=then))
    assert built == [], "a model change read the documents to build the prompts again"
    assert estimate.cached == (len(answered_items(priced)) if "gpt-x" in then else 0)
    assert asdict(estimate) == cold_estimate(priced, runs.RunOptions(models=then))


def answered_items(engine) -> list[int]:
    """The latest instances whose gpt-x answer the call cache holds (every other one)."""
    with Session(engine) as session:
        return sorted(i.id for i in session.exec(select(Instance).where(Instance.is_latest)))[::2]


def longer_document(engine) -> list:
    """A new version of the first reference-QA question whose first document is much longer."""
    with Session(engine) as session:
        current = session.exec(select(Instance).where(Instance.uid == "qa-0", Instance.is_latest)).one()
        spec = instance_spec(session, current)
    first = spec.documents[0]
    documents = [first.model_copy(update={"text": first.text + " More about the cut-off." * 200}), *spec.documents[1:]]
    return [(1, spec.model_copy(update={"documents": documents}))]


def new_question(engine) -> list:
    """A further reference-QA question next to the others."""
    with Session(engine) as session:
        spec = instance_spec(session, session.exec(select(Instance).where(Instance.uid == "qa-1")).one())
    return [(1, spec.model_copy(update={"id": "qa-new", "version": 1, "query": "What was the Law cut-off?"}))]


@pytest.mark.parametrize("specs, on_existing", [
    pytest.param(longer_document, "new_version", id="new-instance-version"),
    pytest.param(new_question, "reject", id="new-instance"),
])
def test_an_import_between_two_estimates_changes_the_second(priced, specs, on_existing):
    options = runs.RunOptions(models=["gpt-x", "gpt-y"])
    before = asdict(run_estimates.estimate_options(priced, options))
    report = import_specs(priced, specs(priced), on_existing=on_existing)
    assert not report.errors
    after = asdict(run_estimates.estimate_options(priced, options))
    assert after != before
    assert after["input_tokens"] > before["input_tokens"]
    assert after == cold_estimate(priced, options)
