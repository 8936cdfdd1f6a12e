"""Judging LIT-RAGBench answers: the correctness prompt reads abstention references and Japanese, the heuristic judge
counts a refusal right exactly on abstention references, and judged_accuracy applies to every answer type while
reference_qa's correctness keeps leaving unanswerable items to rejection."""

from __future__ import annotations

import asyncio

import pytest

from core.scoring.judges.base import JudgeInput
from core.scoring.judges.heuristic import HeuristicJudge
from core.scoring.judges.llm_judge import LLMJudge
from core.scoring.judges.prompts import ABSTENTION_HEAD, CORRECTNESS_SYSTEM, describe_reference
from core.scoring.judges.registry import REFERENCE_JUDGE_METRICS
from core.store.schema import ReferenceSpec
from tests.judges.conftest import ScriptedClient

ABSTAIN_JA = ReferenceSpec(answer_type="unanswerable", answers=[{"text": "回答に必要な情報源が存在しないため回答不可"}],
                           reasoning="正の文書がなく、質問に答える根拠がない。")
ABSTAIN_EN = ReferenceSpec(answer_type="unanswerable", answers=[{"text": "Unable to answer because the necessary "
                                                                         "information sources do not exist."}])
ANSWER_JA = ReferenceSpec(answer_type="short", answers=[{"text": "29位"}], reasoning="2025年は28位で、1つ順位を上げた。")
REFUSALS = {"en": "The documents do not contain this information, so I cannot answer.",
            "ja": "提供された文書には記載がないため、回答できません。"}


def item(ref: ReferenceSpec, response: str, language: str) -> JudgeInput:
    return JudgeInput(query="順位は？", mode="", documents=[], response=response, reference=ref, language=language)


def test_abstention_reference_is_described_as_such_with_its_reasoning() -> None:
    text = describe_reference(ABSTAIN_JA)
    assert text.startswith(ABSTENTION_HEAD + "\n- 回答に必要な情報源が存在しないため回答不可")
    assert "Reference reasoning:\n正の文書がなく" in text
    assert describe_reference(ReferenceSpec(answer_type="unanswerable")) == ABSTENTION_HEAD


def test_correctness_prompt_states_the_abstention_rule_with_a_japanese_example() -> None:
    assert "6. Abstention references" in CORRECTNESS_SYSTEM and "unless the\n   reference itself says" in CORRECTNESS_SYSTEM
    assert "Example D" in CORRECTNESS_SYSTEM and "お答えできません" in CORRECTNESS_SYSTEM
    assert '"in GB"' in CORRECTNESS_SYSTEM


def test_llm_correctness_sends_the_abstention_reference() -> None:
    client = ScriptedClient([(f"{ABSTENTION_HEAD}\n- {ABSTAIN_JA.answers[0].text}", '{"verdict": "correct"}')])
    out = asyncio.run(LLMJudge(client, "llm:j").correctness(item(ABSTAIN_JA, REFUSALS["ja"], "ja")))
    assert (out.status, out.value, client.calls) == ("ok", 1.0, ["judge:correctness"])


@pytest.mark.parametrize(
    ("ref", "response", "language", "value", "reason"),
    [
        pytest.param(ABSTAIN_JA, REFUSALS["ja"], "ja", 1.0, "abstention reference = refusal", id="ja-declines"),
        pytest.param(ABSTAIN_EN, REFUSALS["en"], "en", 1.0, "abstention reference = refusal", id="en-declines"),
        pytest.param(ABSTAIN_JA, "サクラ精機は29位です。", "ja", 0.0, "abstention reference = refusal", id="ja-answers"),
        pytest.param(ABSTAIN_EN, "It ranked 29th in 2024.", "en", 0.0, "abstention reference = refusal",
                     id="en-answers"),
        pytest.param(ANSWER_JA, "2024年は29位でした。", "ja", 1.0, "exact-match containment", id="ja-answer-right"),
        pytest.param(ANSWER_JA, REFUSALS["ja"], "ja", 0.0, "exact-match containment", id="ja-refusal-is-wrong"),
    ],
)
def test_heuristic_correctness(ref, response, language, value, reason) -> None:
    out = asyncio.run(HeuristicJudge().correctness(item(ref, response, language)))
    assert (out.status, out.value, out.method) == ("ok", value, "heuristic")
    assert reason in out.reason


@pytest.mark.parametrize(("language", "refused"), [("en", 1.0), ("ja", 1.0)])
def test_heuristic_refusal_reads_both_languages(language, refused) -> None:
    out = asyncio.run(HeuristicJudge().refusal(item(ANSWER_JA, REFUSALS[language], language)))
    assert out.value == refused


def test_judged_accuracy_covers_abstention_items_and_correctness_still_does_not() -> None:
    assert "unanswerable" in REFERENCE_JUDGE_METRICS.get("judged_accuracy").answer_types
    assert "unanswerable" in REFERENCE_JUDGE_METRICS.get("refusal").answer_types
    assert "unanswerable" not in REFERENCE_JUDGE_METRICS.get("correctness").answer_types
