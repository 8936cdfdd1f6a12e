"""The LLM judge against scripted in-test clients: constraints (single, batched), metrics, error paths."""

from __future__ import annotations

import asyncio
import json

import pytest

from core.scoring.judges.base import ConstraintView, ContextClaimsOutcome
from core.scoring.judges.llm_judge import LLMJudge
from tests.judges.conftest import ANSWERS, REFUSAL, ScriptedClient, judge_input

C1 = ConstraintView(cid="c1", text="Answer as an engineer.", criterion="Engineer tone.", category="persona", sub_dimension="role")
C2 = ConstraintView(cid="c2", text="Cite documents.", criterion="Has a doc reference.", category="knowledge_protocol",
                    sub_dimension="citation")
BATCH_TAG = "[task: constraint-batched]"
SINGLE_TAG = "[task: constraint-single]"
REPAIR = "could not be read as the required JSON"


def run(coro):
    return asyncio.run(coro)


def batched(*items: tuple[str, str]) -> str:
    return json.dumps({"verdicts": [{"id": i, "verdict": v, "reason": f"r-{i}"} for i, v in items]})


@pytest.mark.parametrize(
    ("name", "rules", "expected", "calls"),
    [
        ("both_answered", [(BATCH_TAG, batched(("c1", "yes"), ("c2", "no")))], [("ok", True), ("ok", False)], 1),
        ("missing_id", [(BATCH_TAG, batched(("c1", "yes")))], [("ok", True), ("error", None)], 1),
        ("malformed_twice", [(REPAIR, "{oops"), (BATCH_TAG, "{oops")], [("error", None), ("error", None)], 2),
        ("judge_refuses", [(BATCH_TAG, "I cannot evaluate this content.")], [("error", None), ("error", None)], 1),
        ("uppercase_verdicts", [(BATCH_TAG, batched(("c1", "YES"), ("c2", " No ")))], [("ok", True), ("ok", False)], 1),
        ("uppercase_ids", [(BATCH_TAG, batched(("C1", "yes"), ("C2", "no")))], [("ok", True), ("ok", False)], 1),
        ("padded_ids", [(BATCH_TAG, batched((" c1 ", "yes"), ("\tC 2\n", "no")))], [("ok", True), ("ok", False)], 1),
        ("unmatched_id_is_error", [(BATCH_TAG, batched(("C1", "yes"), ("c3", "no")))], [("ok", True), ("error", None)], 1),
    ],
)
def test_batched_constraints(name, rules, expected, calls) -> None:
    client = ScriptedClient(rules)
    out = run(LLMJudge(client, "llm:j").judge_constraints(judge_input("noisy", ANSWERS["noisy"]), [C1, C2], "batched"))
    assert [(o.status, o.passed) for o in out] == expected, name
    assert {o.method for o in out} == {"batched"}
    assert sum(o.calls for o in out) == calls == len(client.calls), name
    for o in out:
        if o.status == "error":
            assert o.reason and o.passed is None, name
    if name in ("missing_id", "unmatched_id_is_error"):
        assert "c2" in out[1].reason and "raw" in out[1].reason


@pytest.mark.parametrize(
    ("name", "reply", "expected"),
    [
        ("yes", '{"verdict": "yes", "reason": "engineer tone"}', ("ok", True)),
        ("no", '{"verdict": "no", "reason": "chatty"}', ("ok", False)),
        ("refusal", "As an AI I won't judge that.", ("error", None)),
    ],
)
def test_single_constraints_one_call_each(name, reply, expected) -> None:
    client = ScriptedClient([(REPAIR, reply), (SINGLE_TAG, reply)])
    out = run(LLMJudge(client, "llm:j").judge_constraints(judge_input("noisy", ANSWERS["noisy"]), [C1, C2], "single"))
    assert [(o.status, o.passed) for o in out] == [expected, expected], name
    assert {o.method for o in out} == {"single"}
    assert client.calls.count("judge:constraint_single") == 2


CLAIMS = '{"claims": ["The X200 warranty is 24 months.", "The warranty starts at installation.", "It covers the pump housing."]}'
VERIFY = json.dumps({"results": [{"index": 1, "supported": True, "reason": "[1]"}, {"index": 2, "supported": True},
                                 {"index": 3, "supported": False, "reason": "not stated"}]})


@pytest.mark.parametrize(
    ("name", "rules", "status", "value", "reason_part", "calls"),
    [
        ("two_of_three", [("[task: response-claims]", CLAIMS), ("[task: claim-verify]", VERIFY)], "ok", 2 / 3, "2/3", 2),
        ("refusal_no_claims", [("[task: response-claims]", '{"claims": []}')], "not_applicable", None,
         "no factual claims (refusal)", 1),
        ("verify_missing_index", [("[task: response-claims]", CLAIMS),
                                  ("[task: claim-verify]", '{"results": [{"index": 1, "supported": true}]}')],
         "error", None, "[2, 3]", 2),
        ("extract_unparseable", [(REPAIR, "no"), ("[task: response-claims]", "claims: a, b")], "error", None, "repair", 2),
    ],
)
def test_faithfulness(name, rules, status, value, reason_part, calls) -> None:
    client = ScriptedClient(rules)
    out = run(LLMJudge(client, "llm:j").faithfulness(judge_input("noisy", ANSWERS["noisy"])))
    assert out.status == status and out.calls == calls, (name, out)
    assert out.value == pytest.approx(value) if value is not None else out.value is None
    assert reason_part in out.reason, (name, out.reason)


def coverage_reply(**covered: bool) -> str:
    return json.dumps({"results": [{"id": k, "covered": v, "reason": ""} for k, v in covered.items()]})


@pytest.mark.parametrize(
    ("name", "core", "supp", "reply", "status", "value"),
    [
        ("weighted", ["a", "b"], ["s"], coverage_reply(K1=True, K2=False, S1=True), "ok", 0.7 * 0.5 + 0.3),
        ("no_supplementary_all_to_core", ["a", "b"], [], coverage_reply(K1=True, K2=False), "ok", 0.5),
        ("nothing_covered", ["a"], ["s"], coverage_reply(K1=False, S1=False), "ok", 0.0),
        ("no_claims", [], [], None, "not_applicable", None),
        ("missing_claim_id", ["a", "b"], [], coverage_reply(K1=True), "error", None),
        ("claim_ids_any_case", ["a", "b"], ["s"], coverage_reply(k1=True, K2=False, s1=True), "ok", 0.7 * 0.5 + 0.3),
    ],
)
def test_coverage(name, core, supp, reply, status, value) -> None:
    client = ScriptedClient([("[task: coverage-verify]", reply)] if reply else [])
    claims = ContextClaimsOutcome(core=core, supplementary=supp)
    out = run(LLMJudge(client, "llm:j").coverage(judge_input("noisy", ANSWERS["noisy"]), claims))
    assert out.status == status, (name, out.reason)
    assert out.value == pytest.approx(value) if value is not None else out.value is None
    assert len(client.calls) == (1 if reply else 0)


@pytest.mark.parametrize(
    ("name", "method", "tag", "reply", "status", "value"),
    [
        ("rejection_valid", "rejection", "[task: rejection]", '{"refused": 1, "reason": "says missing"}', "ok", 1.0),
        ("rejection_guess", "rejection", "[task: rejection]", '{"refused": 0, "reason": "guessed"}', "ok", 0.0),
        ("rejection_bool", "rejection", "[task: rejection]", '{"refused": true, "reason": "x"}', "ok", 1.0),
        ("conflict_named", "conflict_recognition", "[task: conflict-recognition]", '{"recognized": 1}', "ok", 1.0),
        ("conflict_bad_value", "conflict_recognition", "[task: conflict-recognition]", '{"recognized": 2}', "error", None),
        ("refusal_noisy", "refusal", "[task: refusal]", '{"refused": 0, "reason": "answers"}', "ok", 0.0),
    ],
)
def test_binary_metrics(name, method, tag, reply, status, value) -> None:
    client = ScriptedClient([(REPAIR, reply), (tag, reply)])
    out = run(getattr(LLMJudge(client, "llm:j"), method)(judge_input("gap", REFUSAL)))
    assert out.status == status and out.value == value, (name, out)
    if status == "error":
        assert out.reason and len(client.calls) == 2


def test_context_claims_error_is_recorded() -> None:
    client = ScriptedClient([(REPAIR, "nope"), ("[task: context-claims]", "core: x")])
    out = run(LLMJudge(client, "llm:j").context_claims(judge_input("noisy", "")))
    assert out.status == "error" and "repair" in (out.error or "") and out.calls == 2
