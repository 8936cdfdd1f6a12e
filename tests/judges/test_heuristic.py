"""The offline heuristic judge on named cases."""

from __future__ import annotations

import asyncio

import pytest

from core.scoring.judges.base import UNJUDGED_REASON, ConstraintView
from core.scoring.judges.heuristic import HeuristicJudge, detect_refusal
from tests.judges.conftest import ANSWERS, REFUSAL, judge_input

J = HeuristicJudge()


def run(coro):
    return asyncio.run(coro)


@pytest.mark.parametrize(
    ("name", "text", "expected"),
    [
        ("cannot_find", REFUSAL, True),
        ("do_not_contain", "The provided documents do not contain the penalty for form Q7.", True),
        ("no_information", "There is no information about Q7 penalties in the material.", True),
        ("out_of_scope", "This question is outside the scope of the documents.", True),
        ("dont_know", "I don't know.", True),
        ("plain_answer", "The penalty is 50 EUR per month of delay.", False),
        ("answer_then_minor_caveat", "The warranty is 24 months from installation. It covers seals and motors. "
         "Claims go through the dealer portal. Shipping costs are not mentioned.", False),
        ("empty", "", False),
    ],
)
def test_detect_refusal(name: str, text: str, expected: bool) -> None:
    assert detect_refusal(text)[0] is expected, name


@pytest.mark.parametrize(
    ("name", "text", "value"),
    [
        ("names_both_values", ANSWERS["conflict"], 1.0),
        ("values_without_conflict_word", "The memo says 12 May 2025 and the plan says 2 June 2025.", 0.0),
        ("trusts_one_side", "The annual audit deadline is 12 May 2025.", 0.0),
        ("conflict_word_one_side", "There is a conflict, but the deadline is 12 May 2025.", 0.0),
        ("sources_named_by_number", "Documents [1] and [2] contradict each other on the deadline.", 1.0),
        ("insufficient_only", "There is insufficient information to answer.", 0.0),
    ],
)
def test_conflict_recognition(name: str, text: str, value: float) -> None:
    out = run(J.conflict_recognition(judge_input("conflict", text)))
    assert out.status == "ok" and out.value == value, (name, out.reason)


@pytest.mark.parametrize(
    ("name", "mode", "text", "status", "value"),
    [
        ("grounded_answer", "noisy", ANSWERS["noisy"], "ok", 1.0),
        ("half_invented", "noisy", "The X200 pump has a warranty period of 24 months. "
         "Replacement impellers ship free within Europe overnight.", "ok", 0.5),
        ("refusal_has_no_claims", "noisy", REFUSAL, "not_applicable", None),
    ],
)
def test_faithfulness(name, mode, text, status, value) -> None:
    out = run(J.faithfulness(judge_input(mode, text)))
    assert out.status == status and out.value == value, (name, out)
    if status == "not_applicable":
        assert out.reason == "no factual claims (refusal)"


def test_context_claims_take_query_similar_supporting_sentences_as_core() -> None:
    out = run(J.context_claims(judge_input("noisy", "")))
    assert out.core[0].startswith("The X200 pump has a warranty period")
    assert all("canteen" not in c.lower() for c in out.core + out.supplementary)
    assert out.calls == 0


@pytest.mark.parametrize(
    ("name", "text", "low", "high"),
    [
        ("full_answer", "The X200 pump has a warranty period of 24 months from installation. The warranty covers "
         "seals and the motor assembly. Claims must be filed through the dealer portal.", 0.99, 1.0),
        ("refusal_covers_nothing", REFUSAL, 0.0, 0.1),
    ],
)
def test_coverage(name, text, low, high) -> None:
    item = judge_input("noisy", text)
    claims = run(J.context_claims(item))
    out = run(J.coverage(item, claims))
    assert low <= out.value <= high, (name, out)


GAP_C = ConstraintView(cid="g", text="If the documents lack the answer, say 'Data Unavailable'.", sub_dimension="knowledge_gap",
                       category="knowledge_protocol")
GAP_PLAIN = ConstraintView(cid="g2", text="Refuse when the material lacks the answer.", sub_dimension="knowledge_gap",
                           category="knowledge_protocol")
CONFLICT_C = ConstraintView(cid="k", text="Present both sides of a conflict.", sub_dimension="conflict_handling",
                            category="knowledge_protocol")
CITE_C = ConstraintView(cid="r", text="Cite documents.", sub_dimension="citation", category="knowledge_protocol")
STYLE_C = ConstraintView(cid="s", text="Be warm and friendly.", sub_dimension="style", category="output")


@pytest.mark.parametrize(
    ("name", "mode", "constraint", "text", "status", "passed"),
    [
        ("gap_phrase_present", "gap", GAP_C, ANSWERS["gap"], "ok", True),
        ("gap_phrase_absent", "gap", GAP_C, REFUSAL, "ok", False),
        ("gap_refusal_detected", "gap", GAP_PLAIN, REFUSAL, "ok", True),
        ("gap_guess", "gap", GAP_PLAIN, "The penalty is 50 EUR.", "ok", False),
        ("gap_rule_on_noisy_unjudged", "noisy", GAP_PLAIN, ANSWERS["noisy"], "not_applicable", None),
        ("conflict_both_sides", "conflict", CONFLICT_C, ANSWERS["conflict"], "ok", True),
        ("conflict_one_side", "conflict", CONFLICT_C, "The deadline is 12 May 2025.", "ok", False),
        ("citation_bracket", "noisy", CITE_C, ANSWERS["noisy"], "ok", True),
        ("citation_title", "noisy", CITE_C, "Per the X200 pump manual, it is 24 months.", "ok", True),
        ("citation_missing", "noisy", CITE_C, "It is 24 months.", "ok", False),
        ("style_unjudged", "noisy", STYLE_C, ANSWERS["noisy"], "not_applicable", None),
    ],
)
def test_heuristic_constraints(name, mode, constraint, text, status, passed) -> None:
    (out,) = run(J.judge_constraints(judge_input(mode, text), [constraint], "batched"))
    assert (out.status, out.passed) == (status, passed), (name, out.reason)
    assert out.method == "heuristic"
    if status == "not_applicable":
        assert out.reason == UNJUDGED_REASON


def test_always_refuse_scores_rejection_one() -> None:
    out = run(J.rejection(judge_input("gap", REFUSAL)))
    assert out.value == 1.0 and out.passed is True
