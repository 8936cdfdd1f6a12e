"""reference_qa scoring end to end: per answer type (short, multi, mcq, unanswerable, long) in English, Chinese and
Japanese, gold answers score 1, wrong answers 0, refusals are rejected only where no answer exists; the LLM judge
through the fake server; the scorer is idempotent and counts judge errors."""

from __future__ import annotations

import asyncio
import json

import pytest
from sqlmodel import Session, select

from core.generation.baselines import refusal_text
from core.scoring.scorer import score_run
from core.store.models import Verdict
from core.testing.fake_server import FakeLLMServer, ScriptRule
from tests.judges.conftest import point_judge
from tests.scoring.conftest import ALWAYS_REFUSE, CASE_IDS, CASES, NATIVE_REFUSALS, Case, RefWorld

REFERENCE_QA_METRICS = ("exact_match", "strict_exact_match", "token_f1", "rouge_l", "mcq_accuracy", "all_gold_no_wrong",
                        "correctness", "consistency", "rejection")


def verdicts(world: RefWorld, judge: str = "heuristic") -> dict[tuple[int, str], Verdict]:
    with Session(world.engine) as s:
        rows = s.exec(select(Verdict).where(Verdict.judge == judge)).all()
    return {(v.response_id, v.metric): v for v in rows}


def ok_value(v: Verdict) -> float | None:
    return v.value if v.status == "ok" else None


@pytest.mark.parametrize("case", CASES, ids=CASE_IDS)
def test_gold_right_wrong_zero_heuristic(ref_world: RefWorld, case: Case) -> None:
    gold = ref_world.respond("gold-model", case.uid, case.gold)
    wrong = ref_world.respond("wrong-model", case.uid, case.wrong)
    report = asyncio.run(score_run(ref_world.engine, ref_world.run_id, "heuristic"))
    got = verdicts(ref_world)
    assert {m for r, m in got if r == gold} == set(REFERENCE_QA_METRICS)
    assert report.total_calls == 0 and not report.errors
    if case.answer_type == "unanswerable":
        assert got[(gold, "rejection")].value == 1.0 and got[(wrong, "rejection")].value == 0.0
        for metric in ("exact_match", "correctness", "token_f1"):
            assert got[(gold, metric)].status == "not_applicable", metric
            assert "scored by rejection" in got[(gold, metric)].reason
        return
    assert ok_value(got[(gold, "exact_match")]) == 1.0 and ok_value(got[(wrong, "exact_match")]) == 0.0
    assert ok_value(got[(gold, "correctness")]) == 1.0 and ok_value(got[(wrong, "correctness")]) == 0.0
    assert "exact-match containment" in got[(gold, "correctness")].reason
    assert got[(gold, "rejection")].status == "not_applicable"
    if case.answer_type == "mcq":
        assert ok_value(got[(gold, "mcq_accuracy")]) == 1.0 and ok_value(got[(wrong, "mcq_accuracy")]) == 0.0
    if case.answer_type == "multi":
        assert ok_value(got[(gold, "all_gold_no_wrong")]) == 1.0 and ok_value(got[(wrong, "all_gold_no_wrong")]) == 0.0
    if case.answer_type == "long":
        assert ok_value(got[(gold, "consistency")]) == 1.0
        assert ok_value(got[(wrong, "consistency")]) < 0.3
        assert "token F1" in got[(gold, "consistency")].reason
    else:
        assert got[(gold, "consistency")].status == "not_applicable"
    if case.answer_type in ("short", "long"):
        assert ok_value(got[(gold, "token_f1")]) == 1.0 and ok_value(got[(gold, "rouge_l")]) == 1.0
    if case.answer_type != "mcq":
        assert ok_value(got[(wrong, "token_f1")]) < 0.5
    assert ok_value(got[(gold, "strict_exact_match")]) == 1.0


@pytest.mark.parametrize("refusal", ["baseline", "english", "native"])
@pytest.mark.parametrize("case", CASES, ids=CASE_IDS)
def test_always_refuse(ref_world: RefWorld, case: Case, refusal: str) -> None:
    texts = {"baseline": refusal_text(case.query), "english": ALWAYS_REFUSE, "native": NATIVE_REFUSALS[case.language]}
    text = texts[refusal]
    rid = ref_world.respond("refuser", case.uid, text)
    asyncio.run(score_run(ref_world.engine, ref_world.run_id, "heuristic"))
    got = verdicts(ref_world)
    if case.answer_type == "unanswerable":
        assert ok_value(got[(rid, "rejection")]) == 1.0, got[(rid, "rejection")].reason
        assert got[(rid, "correctness")].status == "not_applicable"
    else:
        assert ok_value(got[(rid, "correctness")]) == 0.0
        if case.answer_type == "mcq":  # a refusal names no option: unread, its own state (counted as wrong)
            assert (got[(rid, "exact_match")].status, got[(rid, "exact_match")].value) == ("unparseable", 0.0)
        else:
            assert ok_value(got[(rid, "exact_match")]) == 0.0
        assert got[(rid, "rejection")].status == "not_applicable"


def test_scoring_is_idempotent_and_enterprise_metrics_do_not_run(ref_world: RefWorld) -> None:
    for c in CASES:
        ref_world.respond("gold-model", c.uid, c.gold)
    first = asyncio.run(score_run(ref_world.engine, ref_world.run_id, "heuristic"))
    assert first.verdicts_written == len(CASES) * len(REFERENCE_QA_METRICS)
    again = asyncio.run(score_run(ref_world.engine, ref_world.run_id, "heuristic"))
    assert again.verdicts_written == 0 and again.verdicts_skipped == first.verdicts_written
    metrics = {m for _, m in verdicts(ref_world)}
    assert metrics == set(REFERENCE_QA_METRICS)
    assert first.not_applicable["correctness"] == 3 and first.not_applicable["consistency"] == 12


# --------------------------------------------------------------------------- the LLM judge through the fake server

JUDGE = "llm:judge-x"
CORRECT = json.dumps({"verdict": "correct", "reason": "matches the reference"})
INCORRECT = json.dumps({"verdict": "Incorrect", "reason": "another answer"})


def script() -> list[ScriptRule]:
    return [
        ScriptRule(match=r"could not be read as the required JSON", reply="still garbled"),
        ScriptRule(match=r"\[task: correctness\][\s\S]*Answer to evaluate:\nGARBLE", reply="verdict: maybe?"),
        ScriptRule(match=r"\[task: correctness\][\s\S]*Answer to evaluate:\nWRONG", reply=INCORRECT),
        ScriptRule(match=r"\[task: correctness\]", reply=CORRECT),
        ScriptRule(match=r"\[task: consistency\][\s\S]*Answer to evaluate:\nWRONG", reply='{"score": 1, "reason": "x"}'),
        ScriptRule(match=r"\[task: consistency\]", reply='{"score": 4, "reason": "nearly all key points"}'),
    ]


def test_llm_judge_correctness_round_trips_and_garbled_is_a_counted_error(ref_world: RefWorld, monkeypatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "test-key")
    answered = [c for c in CASES if c.answer_type != "unanswerable"]
    ids = {}
    for c in answered:
        ids[(c.uid, "gold")] = ref_world.respond("gold-model", c.uid, c.gold)
        ids[(c.uid, "wrong")] = ref_world.respond("wrong-model", c.uid, f"WRONG {c.wrong}")
    garbled = ref_world.respond("refuser", "zh-short", "GARBLE 1898年")
    with FakeLLMServer(script=script()) as server:
        point_judge(ref_world.engine, server)
        report = asyncio.run(score_run(ref_world.engine, ref_world.run_id, JUDGE))
        assert server.call_count == report.total_calls
        again = asyncio.run(score_run(ref_world.engine, ref_world.run_id, JUDGE))
        assert again.verdicts_written == 0 and server.call_count == report.total_calls
    got = verdicts(ref_world, JUDGE)
    for c in answered:
        gold, wrong = got[(ids[(c.uid, "gold")], "correctness")], got[(ids[(c.uid, "wrong")], "correctness")]
        assert (gold.status, gold.value, gold.method) == ("ok", 1.0, "llm"), c.uid
        assert (wrong.status, wrong.value) == ("ok", 0.0), c.uid
        assert gold.reason == "matches the reference"
        if c.answer_type == "long":
            assert got[(ids[(c.uid, "gold")], "consistency")].value == pytest.approx(0.8)
            assert got[(ids[(c.uid, "wrong")], "consistency")].value == pytest.approx(0.2)
    bad = got[(garbled, "correctness")]
    assert bad.status == "error" and bad.value is None and "unparseable judge output" in bad.reason
    assert bad.calls == 2
    assert report.errors == {"correctness": 1}
    assert report.calls["correctness"] == 2 * len(answered) + 2 and report.calls["consistency"] == 6
    assert got[(garbled, "exact_match")].value == 1.0 and got[(garbled, "exact_match")].method == "reference"


def test_llm_judge_provider_failure_is_an_error_not_a_zero(ref_world: RefWorld, monkeypatch) -> None:
    from core.generation.llm import make_client
    from core.scoring.judges.llm_judge import LLMJudge
    from core.scoring.judges.registry import model_config

    monkeypatch.setenv("OPENAI_API_KEY", "test-key")
    rid = ref_world.respond("gold-model", "en-short", "Denise Levertov")
    with FakeLLMServer(script=[ScriptRule(match=r"\[task: correctness\]", fault="500")]) as server:
        point_judge(ref_world.engine, server)

        async def score_without_retries():
            client = make_client(model_config(ref_world.engine, "judge-x"), ref_world.engine, max_retries=0)
            judge = LLMJudge(client, JUDGE)
            try:
                return await score_run(ref_world.engine, ref_world.run_id, judge)
            finally:
                await judge.aclose()

        report = asyncio.run(score_without_retries())
    v = verdicts(ref_world, JUDGE)[(rid, "correctness")]
    assert v.status == "error" and v.value is None and "judge call failed" in v.reason
    assert report.errors == {"correctness": 1}
