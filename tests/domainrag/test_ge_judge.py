"""The paper's GE judge (metric domainrag.ge_paper) through the real OpenAI SDK against the loopback fake server: the
prompt carries the authors' three criteria (ShootingWong/DomainRAG, BCM/evaluation/prediction_results/gpt_eval.py at
commit bf13f1957118a45e4546794d65404e55a4579631: consistent with, covering, and nothing beyond the golden answer)
with worked examples, the typed reply becomes score / 5 with its reason, a garbled reply is a judge error after one
repair, and short answers or a judge without a model are not applicable, with the reason."""

from __future__ import annotations

import asyncio
import json

import pytest
from pydantic import ValidationError

from core.generation import runner, runs
from core.generation.ratelimit import ManualClock
from core.ingest.io import import_file
from core.pipeline import score_and_summarise
from core.protocols import get_protocol
from core.protocols.domainrag.builder import BuildOptions, build_instances, write_jsonl
from core.protocols.domainrag.judge import GE_SYSTEM, LONG_ONLY, NEEDS_LLM, GeReply, ge_paper
from core.protocols.paper import build_table
from core.scoring.judges.base import JudgeInput
from core.scoring.judges.prompts import CONSISTENCY_SYSTEM
from core.scoring.judges.registry import resolve_judge
from core.store.db import make_engine
from core.store.schema import InstanceSpec, ReferenceSpec
from core.testing.fake_server import FakeLLMServer, ScriptRule
from tests.domainrag.conftest import asked, first_alternative, shared_data
from tests.factories import add_fake_server_model, scripted_models

GOLD = "中法学院用汉语、法语和英语三种语言教学。"
EXACT = "教学语言为汉语、法语和英语。"
EXTRA = "用汉语、法语和英语教学。学院还有金融学专业和国际交流项目。"
GARBLED = "教学语言是汉语。"
RULES = [ScriptRule(match="Prediction: " + EXACT, reply='{"score": 5, "reason": "same languages, nothing added"}'),
         ScriptRule(match="Prediction: " + EXTRA, reply='{"score": 3, "reason": "adds the majors and exchanges"}'),
         ScriptRule(match="", reply="I think it is fairly good.")]


def _item(response: str, answer_type: str = "long") -> JudgeInput:
    reference = ReferenceSpec(answer_type=answer_type, answers=[{"text": GOLD}])
    return JudgeInput(query="中法学院用哪些语言教学？", mode="", documents=[], response=response, reference=reference,
                      language="zh")


@pytest.fixture
def ge_judge(backend_url_factory):
    engine = make_engine(backend_url_factory())
    with scripted_models(engine, {"ge-judge": RULES}, max_output_tokens=128):
        yield resolve_judge("llm:ge-judge", engine)


@pytest.mark.parametrize(("response", "status", "value", "reason", "calls"), [
    pytest.param(EXACT, "ok", 1.0, "same languages, nothing added", 1, id="complete-nothing-extra"),
    pytest.param(EXTRA, "ok", 0.6, "adds the majors and exchanges", 1, id="extra-information-penalised"),
    pytest.param(GARBLED, "error", None, "", 2, id="garbled-reply-after-repair"),
])
def test_llm_grade(ge_judge, response, status, value, reason, calls):
    out = asyncio.run(ge_paper(ge_judge, _item(response)))
    assert (out.status, out.value, out.calls, out.method) == (status, value, calls, "llm")
    assert reason in out.reason
    if status == "ok":
        assert out.details["score_0_5"] == round(value * 5)


def test_the_prompt_sent_states_the_papers_criteria(backend_url_factory, monkeypatch):
    engine = make_engine(backend_url_factory())
    env: dict[str, str] = {}
    with FakeLLMServer(script=RULES) as server:
        add_fake_server_model(engine, "ge-judge", server.base_url, env)
        for key, value in env.items():
            monkeypatch.setenv(key, value)
        asyncio.run(ge_paper(resolve_judge("llm:ge-judge", engine), _item(EXTRA)))
        (body,) = server.requests
    system, user = (m["content"] for m in body["messages"])
    assert system == GE_SYSTEM and "[task: domainrag_ge]" in system
    for criterion in ("agrees with the golden answer", "states everything the golden answer states",
                      "Extra information lowers the grade even when it is true", "Example B"):
        assert criterion in " ".join(system.split()), criterion
    assert user == f"Question: 中法学院用哪些语言教学？\nGolden Answer: {GOLD}\nPrediction: {EXTRA}\nYour score:"
    assert "Extra correct detail is fine" in CONSISTENCY_SYSTEM and "Extra correct detail is fine" not in system


@pytest.mark.parametrize(("judge", "answer_type", "reason"), [
    pytest.param("heuristic", "long", NEEDS_LLM, id="heuristic-judge"),
    pytest.param("heuristic", "short", LONG_ONLY, id="short-answer"),
])
def test_not_applicable(judge, answer_type, reason, backend_url_factory):
    out = asyncio.run(ge_paper(resolve_judge(judge, make_engine(backend_url_factory())), _item(EXACT, answer_type)))
    assert (out.status, out.reason, out.value) == ("not_applicable", reason, None)


@pytest.mark.parametrize(("reply", "valid"), [pytest.param({"score": 5, "reason": "x"}, True, id="in-range"),
                                              pytest.param({"score": 6}, False, id="above-5"),
                                              pytest.param({"score": -1}, False, id="below-0")])
def test_reply_schema(reply, valid):
    assert (GeReply.model_validate_json(json.dumps(reply)).score == reply["score"]) if valid else True
    if not valid:
        with pytest.raises(ValidationError):
            GeReply.model_validate(reply)


def test_scored_runs_store_both_ge_settings_and_table_2_reads_them(backend_url_factory, tmp_path):
    """End to end: a conversational question answered by a scripted model, scored by an LLM judge on the fake server
    (GE 4/5 on the paper's criteria, consistency 5/5); Table 2 shows 80 under ge=paper and 100 under ge=product."""

    payloads, _ = build_instances(BuildOptions(data=shared_data(), embedder=None, index_dir=None, limit=1))
    chosen = [p for p in payloads if p["attributes"]["question_type"] == "conversational"]
    write_jsonl(chosen, tmp_path / "one.jsonl")
    engine = make_engine(backend_url_factory())
    assert import_file(engine, tmp_path / "one.jsonl").ok
    spec = InstanceSpec.model_validate(chosen[0])
    judge_rules = [ScriptRule(match=r"\[task: domainrag_ge\]", reply='{"score": 4, "reason": "a little extra"}'),
                   ScriptRule(match=r"\[task: consistency\]", reply='{"score": 5, "reason": "all key points"}')]
    answer = [ScriptRule(match=asked(spec), reply=first_alternative(spec.reference.answers[0]))]
    with scripted_models(engine, {"gold-bot": answer, "ge-judge": judge_rules}, max_output_tokens=256):
        run_id = runs.create_run(engine, runs.RunOptions(models=["gold-bot"], conditions=[""]))
        assert asyncio.run(runner.execute_run(engine, run_id, clock=ManualClock())).failed == 0
        asyncio.run(score_and_summarise(engine, run_id, ["llm:ge-judge"]))
    spec_2 = get_protocol("domainrag").paper_tables[0]
    for ge, want in (("paper", 0.8), ("product", 1.0)):
        table = build_table(spec_2, engine, [run_id], "llm:ge-judge", {"ge": ge})
        cell = table.cell("Golden Reference", "Conversational GE")
        assert (cell.value, cell.n) == (pytest.approx(want), 1), (ge, cell)
