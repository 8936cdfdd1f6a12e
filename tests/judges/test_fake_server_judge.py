"""The LLM judge end to end through LLMClient against the fake OpenAI-compatible server (no internet, no keys)."""

from __future__ import annotations

import asyncio
import json

import pytest
from sqlmodel import Session, select

from core.testing.fake_server import FakeLLMServer, ScriptRule
from core.store.models import Model, Verdict
from core.scoring.scorer import score_run
from tests.judges.conftest import REFUSAL, World

JUDGE = "llm:judge-x"


def rules(batched: str, conflict: str = '{"recognized": 1, "reason": "both dates"}') -> list[ScriptRule]:
    return [
        ScriptRule(match=r"could not be read as the required JSON", reply="still not json"),
        ScriptRule(match=r"\[task: constraint-batched\]", reply=batched),
        ScriptRule(match=r"\[task: response-claims\]", reply=json.dumps({"claims": ["Deadline 12 May.", "Deadline 2 June."]})),
        ScriptRule(match=r"\[task: claim-verify\]",
                   reply='{"results": [{"index": 1, "supported": true}, {"index": 2, "supported": false}]}'),
        ScriptRule(match=r"\[task: context-claims\]", reply='{"core": ["a", "b"], "supplementary": []}'),
        ScriptRule(match=r"\[task: coverage-verify\]",
                   reply='{"results": [{"id": "K1", "covered": true}, {"id": "K2", "covered": true}]}'),
        ScriptRule(match=r"\[task: conflict-recognition\]", reply=conflict),
        ScriptRule(match=r"\[task: rejection\]", reply='{"refused": 1, "reason": "says missing"}'),
    ]


def point_judge(world: World, server: FakeLLMServer) -> None:
    with Session(world.engine) as s:
        m = s.exec(select(Model).where(Model.name == "judge-x")).one()
        m.settings = {"base_url": server.base_url + "/v1"}
        s.add(m)
        s.commit()


def judged(world: World) -> dict[str, Verdict]:
    with Session(world.engine) as s:
        rows = s.exec(select(Verdict).where(Verdict.judge == JUDGE)).all()
    return {v.metric if v.constraint_id is None else f"constraint:{v.constraint_id}": v for v in rows}


@pytest.mark.parametrize(
    ("name", "batched", "conflict", "constraint_status", "conflict_status", "conflict_reason"),
    [
        ("all_good", '{"verdicts": [{"id": "c1", "verdict": "yes", "reason": "both"}]}',
         '{"recognized": 1, "reason": "both dates"}', "ok", "ok", "both dates"),
        ("missing_id", '{"verdicts": [{"id": "c9", "verdict": "yes"}]}',
         '{"recognized": 1, "reason": "both dates"}', "error", "ok", "both dates"),
        ("malformed_then_repair_fails", "{not json", "I'm sorry, I cannot evaluate this.", "error", "error",
         "judge refused to judge"),
    ],
)
def test_conflict_response_through_fake_server(world: World, monkeypatch, name, batched, conflict,
                                               constraint_status, conflict_status, conflict_reason) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "test-key")
    world.respond("gen-a", "conflict")
    with FakeLLMServer(script=rules(batched, conflict)) as server:
        point_judge(world, server)
        report = asyncio.run(score_run(world.engine, world.run_id, JUDGE))
        assert server.call_count == report.total_calls, name
        again = asyncio.run(score_run(world.engine, world.run_id, JUDGE))
        assert again.verdicts_written == 0 and server.call_count == report.total_calls, name
    got = judged(world)
    (constraint,) = [v for k, v in got.items() if k.startswith("constraint:")]
    assert constraint.status == constraint_status and constraint.method == "batched", name
    assert got["conflict_recognition"].status == conflict_status
    assert conflict_reason in got["conflict_recognition"].reason
    assert got["faithfulness"].value == 0.5 and got["coverage"].value == 1.0


def test_gap_refusal_through_fake_server(world: World, monkeypatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "test-key")
    world.respond("gen-a", "gap", REFUSAL)
    script = [ScriptRule(match=r"\[task: response-claims\]", reply='{"claims": []}'), *rules("{}")]
    with FakeLLMServer(script=script) as server:
        point_judge(world, server)
        report = asyncio.run(score_run(world.engine, world.run_id, JUDGE, constraint_mode="single"))
        assert server.call_count == report.total_calls
    got = judged(world)
    assert got["rejection"].value == 1.0
    assert got["faithfulness"].status == "not_applicable" and got["faithfulness"].reason == "no factual claims (refusal)"
    assert got["coverage"].status == "not_applicable"
