"""Correctness and consistency judges for reference protocols: the LLM judge (prompt content, parsing, errors) with a
scripted client, and the heuristic judge (exact-match containment / token F1, labelled as such)."""

from __future__ import annotations

import asyncio
import json
import re

import pytest

from core.scoring.judges.base import JudgeInput
from core.scoring.judges.heuristic import HeuristicJudge
from core.scoring.judges.llm_judge import LLMJudge
from core.scoring.judges.prompts import CONSISTENCY_SYSTEM, CORRECTNESS_SYSTEM, describe_reference
from core.store.schema import ReferenceSpec
from tests.judges.conftest import ScriptedClient

SHORT = ReferenceSpec(answer_type="short", answers=[{"text": "Denise Levertov", "aliases": ["Levertov"]}],
                      wrong_answers=["Harvey Pekar"], reasoning="Levertov was born in 1923, Pekar in 1939.")
MCQ = ReferenceSpec(answer_type="mcq", choices={"A": "Paris", "B": "Rome"}, answer_key="B")
LONG = ReferenceSpec(answer_type="long", answers=[{"text": "Night shifts are capped at four per week."}])
PARTS = ReferenceSpec(answer_type="short", answers=[{"text": "Lyon and Porto", "parts": ["Lyon", "Porto"]}])


def item(ref: ReferenceSpec, response: str, language: str = "en") -> JudgeInput:
    return JudgeInput(query="Who was born earlier?", mode="", documents=[], response=response, reference=ref,
                      language=language)


def run(coro):
    return asyncio.run(coro)


@pytest.mark.parametrize(
    ("reply", "status", "value", "calls"),
    [
        pytest.param('{"verdict": "correct", "reason": "same person"}', "ok", 1.0, 1, id="correct"),
        pytest.param('```json\n{"verdict": "INCORRECT", "reason": "other person"}\n```', "ok", 0.0, 1,
                     id="incorrect_fenced_any_case"),
        pytest.param('{"verdict": "yes"}', "error", None, 2, id="wrong_schema_after_repair"),
        pytest.param("The answer seems fine to me.", "error", None, 2, id="garbled_after_repair"),
        pytest.param("I'm sorry, I cannot evaluate this.", "error", None, 1, id="judge_refuses"),
    ],
)
def test_llm_correctness(reply: str, status: str, value: float | None, calls: int) -> None:
    client = ScriptedClient([("could not be read as the required JSON", "still not json"),
                             ("[task: correctness]", reply)])
    out = run(LLMJudge(client, "llm:j").correctness(item(SHORT, "Levertov")))
    assert (out.status, out.value, out.calls) == (status, value, calls)
    assert out.cost_usd == pytest.approx(0.01 * calls)
    if status == "error":
        assert out.reason and out.details.get("raw") is not None


def test_llm_correctness_prompt_carries_the_reference() -> None:
    seen: list[str] = []

    class Recording(ScriptedClient):
        async def complete(self, messages, *, purpose):
            seen.append("\n".join(m.content for m in messages))
            return await super().complete(messages, purpose=purpose)

    client = Recording([("[task: correctness]", '{"verdict": "correct"}')])
    run(LLMJudge(client, "llm:j").correctness(item(SHORT, "It was Levertov.")))
    (prompt,) = seen
    for needle in ("[task: correctness]", "Denise Levertov (also accepted: Levertov)", "Known wrong answers:\n- Harvey Pekar",
                   "Reference reasoning:\nLevertov was born in 1923", "Answer to evaluate:\nIt was Levertov."):
        assert needle in prompt, needle


@pytest.mark.parametrize(
    ("ref", "needles"),
    [
        pytest.param(MCQ, ["Options:\nA. Paris\nB. Rome\nCorrect option: B"], id="mcq"),
        pytest.param(PARTS, ["(a complete answer needs: Lyon; Porto)"], id="parts"),
        pytest.param(ReferenceSpec(answer_type="multi", answers=[{"text": "Lyon"}, {"text": "Porto"}]),
                     ["Required answers (all of them):\n- Lyon\n- Porto"], id="multi"),
        pytest.param(ReferenceSpec(answer_type="short", answers=[{"text": "1898"}, {"text": "1898年"}]),
                     ["any one of these is correct"], id="several_answers"),
    ],
)
def test_describe_reference(ref: ReferenceSpec, needles: list[str]) -> None:
    text = describe_reference(ref)
    for needle in needles:
        assert needle in text


@pytest.mark.parametrize(
    ("reply", "status", "value"),
    [
        pytest.param('{"score": 5, "reason": "all key points"}', "ok", 1.0, id="five"),
        pytest.param('{"score": "3", "reason": "main conclusion"}', "ok", 0.6, id="string_digit"),
        pytest.param('{"score": 0}', "ok", 0.0, id="zero"),
        pytest.param('{"score": 7}', "error", None, id="out_of_range"),
        pytest.param('{"score": 4.5}', "error", None, id="fractional"),
    ],
)
def test_llm_consistency(reply: str, status: str, value: float | None) -> None:
    client = ScriptedClient([("could not be read as the required JSON", reply), ("[task: consistency]", reply)])
    out = run(LLMJudge(client, "llm:j").consistency(item(LONG, "At most four night shifts a week.")))
    assert out.status == status
    assert out.value == (pytest.approx(value) if value is not None else None)


def test_prompts_are_tagged_and_have_examples() -> None:
    assert CORRECTNESS_SYSTEM.startswith("[task: correctness]") and CORRECTNESS_SYSTEM.count("Example") == 4
    assert CONSISTENCY_SYSTEM.startswith("[task: consistency]") and "Example" in CONSISTENCY_SYSTEM
    examples = [line for system in (CORRECTNESS_SYSTEM, CONSISTENCY_SYSTEM) for line in system.splitlines()
                if re.match(r'\{"(?:verdict": "(?:correct|incorrect)",|score": \d)', line)]
    assert len(examples) == 5
    for line in examples:
        json.loads(line)


@pytest.mark.parametrize(
    ("ref", "response", "language", "status", "value"),
    [
        pytest.param(SHORT, "It was Levertov.", "en", "ok", 1.0, id="alias_contained"),
        pytest.param(SHORT, "Harvey Pekar", "en", "ok", 0.0, id="wrong"),
        pytest.param(PARTS, "Lyon only", "en", "ok", 0.0, id="half_the_parts_is_not_correct"),
        pytest.param(MCQ, "答案是B", "zh", "ok", 1.0, id="mcq_letter"),
        pytest.param(ReferenceSpec(answer_type="short", answers=[{"text": "北京大学"}]), "是北京 大学。", "zh", "ok", 1.0,
                     id="zh_characters"),
        pytest.param(SHORT, "x", "th", "not_applicable", None, id="unsupported_language"),
    ],
)
def test_heuristic_correctness_is_exact_match_containment(ref, response, language, status, value) -> None:
    out = run(HeuristicJudge().correctness(item(ref, response, language)))
    assert (out.status, out.value, out.method) == (status, value, "heuristic")
    assert out.reason.startswith("heuristic:")
    if status == "ok":
        assert "exact-match containment" in out.reason and out.calls == 0


def test_heuristic_consistency_is_token_f1() -> None:
    # pred [night, shifts, capped, at, four], gold [night, shifts, are, capped, at, four, per, week]: 5 shared,
    # p = 5/5, r = 5/8, F1 = 10/13
    out = run(HeuristicJudge().consistency(item(LONG, "Night shifts capped at four.")))
    assert out.value == pytest.approx(10 / 13)
    assert out.method == "heuristic" and "consistency = token F1" in out.reason


def test_heuristic_without_reference_is_not_applicable() -> None:
    out = run(HeuristicJudge().correctness(JudgeInput(query="q", mode="", documents=[], response="r")))
    assert out.status == "not_applicable" and out.reason == "no reference answer"
