"""A run end to end with reasoning models on the loopback fake server (openai_compatible SDK path): the provider's
reasoning field and an inline <think> block are stored apart from the answer with their tokens; the answers score as
the plain model's; an unclosed block is stored 'unfinished' and scored unparseable ('reasoning not finished')."""

from __future__ import annotations

import asyncio
import json

import pytest
from sqlmodel import Session, select

from core.generation import runner, runs
from core.generation.ratelimit import ManualClock
from core.ingest.io import import_file
from core.pipeline import score_and_summarise
from core.protocols import register_package, unregister_package
from core.store.db import make_engine
from core.store.models import Model, Response, Verdict
from core.testing.fake_server import ScriptRule
from tests.factories import scripted_models

QUESTIONS = {"What colour is the sky on a clear day?": "blue", "How many legs has a spider?": "eight"}
RECORDS = [{"id": f"toy-r{n}", "domain": "ToyR", "query": q, "protocol": "toy_echo",
            "documents": [{"doc_id": f"d{n}", "text": f"The answer is {a}.", "role": "supporting"}],
            "reference": {"answers": [{"text": a}]}} for n, (q, a) in enumerate(QUESTIONS.items(), start=1)]
THOUGHT = "It could be red or four. No: "
MODELS = {
    "plain": [ScriptRule(match=q, reply=f"It is {a}.") for q, a in QUESTIONS.items()],
    "field": [ScriptRule(match=q, reply=f"It is {a}.", reasoning=THOUGHT + a) for q, a in QUESTIONS.items()],
    "inline": [ScriptRule(match=q, reply=f"<think>{THOUGHT}{a}</think>\nIt is {a}.") for q, a in QUESTIONS.items()],
    "cut": [ScriptRule(match="", reply=f"<think>{THOUGHT}")],
}


@pytest.fixture(scope="module")
def world(session_url_factory, tmp_path_factory):
    register_package("tests.toy_protocol")
    url, path = session_url_factory(), tmp_path_factory.mktemp("toyr") / "toy.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in RECORDS))
    engine = make_engine(url)
    import_file(engine, path)
    with scripted_models(engine, MODELS):
        run_id = runs.create_run(engine, runs.RunOptions(models=list(MODELS), domains=["ToyR"]))
        result = asyncio.run(runner.execute_run(engine, run_id, clock=ManualClock()))
        assert (result.status, result.failed) == ("done", 0)
        asyncio.run(score_and_summarise(engine, run_id, ["heuristic"]))
    yield engine, run_id
    engine.dispose()
    unregister_package("tests.toy_protocol")


def rows(engine, run_id):
    with Session(engine) as s:
        return s.exec(select(Response, Model.name).join(Model, Model.id == Response.model_id)
                      .where(Response.run_id == run_id)).all()


def test_reasoning_is_stored_apart_with_its_tokens(world):
    engine, run_id = world
    for resp, model in rows(engine, run_id):
        if model in ("field", "inline"):
            assert resp.text.startswith("It is ") and "<think>" not in resp.text
            assert resp.reasoning.startswith(THOUGHT) and resp.reasoning_state == "finished"
            assert 0 < resp.reasoning_tokens <= resp.output_tokens
        elif model == "cut":
            assert (resp.text, resp.reasoning_state) == ("", "unfinished") and resp.reasoning == THOUGHT.strip()
        else:
            assert (resp.reasoning, resp.reasoning_state, resp.reasoning_tokens) == (None, "none", 0)


def test_reasoning_models_score_as_the_plain_model(world):
    engine, run_id = world
    with Session(engine) as s:
        got = s.exec(select(Model.name, Response.instance_id, Verdict.metric, Verdict.status, Verdict.value)
                     .join(Response, Response.id == Verdict.response_id).join(Model, Model.id == Response.model_id)
                     .where(Verdict.run_id == run_id)).all()
    by_model: dict[str, set] = {}
    for model, iid, metric, status, value in got:
        by_model.setdefault(model, set()).add((iid, metric, status, value))
    assert by_model["plain"] and {s for _, _, s, _ in by_model["plain"]} == {"ok"}
    assert by_model["field"] == by_model["plain"] == by_model["inline"]
    assert {s for _, _, s, _ in by_model["cut"]} == {"unparseable"}
