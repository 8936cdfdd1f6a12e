"""The LLM judge end to end through LLMClient against the fake OpenAI-compatible server (no internet, no keys)."""

from __future__ import annotations

import asyncio
import json

import pytest
from sqlmodel import Session, select

from core.analysis.readmodel import response_scores
from core.scoring.judges.registry import resolve_judge
from core.scoring.scorer import score_run
from core.store.models import Verdict
from core.testing.fake_server import FakeLLMServer, ScriptRule
from tests.judges.conftest import REFUSAL, World, point_judge

JUDGE = "llm:judge-x"
SINGLE = "llm:judge-x@single"
ALL_IDS = json.dumps({"verdicts": [{"id": "c1", "verdict": "yes"}, {"id": "c2", "verdict": "yes"},
                                    {"id": "c5", "verdict": "no"}]})


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
        ScriptRule(match=r"\[task: refusal\]", reply='{"refused": 0, "reason": "answers"}'),
        ScriptRule(match=r"\[task: constraint-single\]", reply='{"verdict": "no", "reason": "one at a time"}'),
    ]


def judged(world: World, judge: str = JUDGE) -> dict[str, Verdict]:
    with Session(world.engine) as s:
        rows = s.exec(select(Verdict).where(Verdict.judge == judge)).all()
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
        point_judge(world.engine, server)
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
        point_judge(world.engine, server)
        report = asyncio.run(score_run(world.engine, world.run_id, JUDGE, constraint_mode="single"))
        assert server.call_count == report.total_calls
    assert judged(world) == {}
    got = judged(world, SINGLE)
    assert got["rejection"].value == 1.0
    assert got["faithfulness"].status == "not_applicable" and got["faithfulness"].reason == "no factual claims (refusal)"
    assert got["coverage"].status == "not_applicable"


def test_resolve_single_suffix_builds_a_single_mode_judge(world: World, monkeypatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "test-key")
    with FakeLLMServer(script=[]) as server:
        point_judge(world.engine, server)
        batched, single = resolve_judge(JUDGE, world.engine), resolve_judge(SINGLE, world.engine)
        assert (batched.name, batched.constraint_mode) == (JUDGE, "batched")
        assert (single.name, single.constraint_mode) == (SINGLE, "single")
        assert resolve_judge(JUDGE, world.engine, constraint_mode="single").name == SINGLE
        assert resolve_judge("heuristic", world.engine, constraint_mode="single").name == "heuristic"
        assert server.call_count == 0


@pytest.mark.parametrize(
    ("name", "second", "mode"),
    [("mode_argument", JUDGE, "single"), ("suffixed_id", SINGLE, "batched")],
)
def test_single_and_batched_verdicts_coexist(world: World, monkeypatch, name, second, mode) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "test-key")
    responses = [world.respond("gen-a", "noisy"), world.respond("gen-a", "conflict")]
    with FakeLLMServer(script=rules(ALL_IDS)) as server:
        point_judge(world.engine, server)
        first = asyncio.run(score_run(world.engine, world.run_id, JUDGE))
        paid_first = server.call_count
        assert paid_first == first.total_calls and first.calls["constraint"] == 2, name
        again = asyncio.run(score_run(world.engine, world.run_id, second, constraint_mode=mode))
        # noisy: c2 and c5 one call each; conflict: c1. Every metric call is answered by the LLM cache.
        assert server.call_count - paid_first == again.calls["constraint"] == 3, name
    assert again.judge == SINGLE and again.constraint_mode == "single" and again.cost_usd == 0.0, name
    assert again.calls["faithfulness"] == first.calls["faithfulness"], name
    batched_v, single_v = judged(world, JUDGE), judged(world, SINGLE)
    assert {v.method for k, v in batched_v.items() if k.startswith("constraint:")} == {"batched", "precondition"}
    assert {v.method for k, v in single_v.items() if k.startswith("constraint:")} == {"single", "precondition"}
    # noisy: rule c1 and preconditions c3, c4 pass, judged c2 and c5; conflict: judged c1, rule c2 passes
    for judge, loose in ((JUDGE, (4 / 5, 2 / 2)), (SINGLE, (3 / 5, 1 / 2))):
        df = response_scores(world.engine, [world.run_id], judge).set_index("response_id")
        assert sorted(df.index) == sorted(responses), (name, judge)
        assert (df["n_constraint_errors"] == 0).all() and (df["n_constraint_unjudged"] == 0).all(), (name, judge)
        assert df["strict_ias"].notna().all() and df["faithfulness"].notna().all(), (name, judge)
        assert df["coverage"].notna().all(), (name, judge)
        assert df.loc[responses[1], "conflict_recognition"] == 1.0 and df.loc[responses[0], "refusal"] == 0.0
        assert list(df.loc[responses, "loose_ias"]) == pytest.approx(list(loose)), (name, judge)


@pytest.mark.parametrize(
    ("configured", "label", "method"),
    [
        pytest.param(JUDGE, "scored by llm:judge-x (batched constraints)", "batched", id="batched"),
        pytest.param(SINGLE, "scored by llm:judge-x (one call per constraint) (single constraints)", "single",
                     id="single"),
    ],
)
def test_cli_score_uses_the_configured_llm_judge(world: World, monkeypatch, tmp_path, configured, label,
                                                  method) -> None:
    from typer.testing import CliRunner

    from core.cli import app

    monkeypatch.setenv("OPENAI_API_KEY", "test-key")
    monkeypatch.setenv("GAUNTLET_SECRETS_FILE", str(tmp_path / "none.toml"))
    monkeypatch.setenv("GAUNTLET_JUDGE", configured)
    world.respond("gen-a", "conflict")
    with FakeLLMServer(script=rules(ALL_IDS)) as server:
        point_judge(world.engine, server)
        result = CliRunner().invoke(app, ["score", str(world.run_id)])
        assert result.exit_code == 0 and server.call_count > 0, result.output
    assert label in result.stdout and "warning" not in result.stderr, result.output
    assert f"judge: {configured.replace('@single', ' (one call per constraint)')}" in result.stderr
    (constraint,) = [v for k, v in judged(world, configured).items() if k.startswith("constraint:")]
    assert constraint.method == method and constraint.status == "ok"
