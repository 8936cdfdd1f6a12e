"""JSON reading of judge replies: lenient extraction, one repair call, recorded errors."""

from __future__ import annotations

import asyncio

import pytest

from core.generation.providers.base import ChatMessage, ProviderError
from core.scoring.judges.llm_judge import ConstraintReply
from core.scoring.judges.parsing import ask_json, extract_json_object, looks_like_judge_refusal, match_key
from tests.judges.conftest import ScriptedClient

MSGS = [ChatMessage(role="system", content="[task: t]"), ChatMessage(role="user", content="judge this")]
REPAIR = "could not be read as the required JSON"


@pytest.mark.parametrize(
    ("name", "text", "expected"),
    [
        ("plain", '{"verdict": "yes", "reason": "ok"}', {"verdict": "yes", "reason": "ok"}),
        ("fenced", '```json\n{"verdict": "no"}\n```', {"verdict": "no"}),
        ("prose_around", 'Sure! {"verdict": "yes"} hope that helps', {"verdict": "yes"}),
        ("brace_in_prose_first", 'Use {curly} then {"a": 1}', {"a": 1}),
        ("nested", 'x {"verdicts": [{"id": "c1"}]} y', {"verdicts": [{"id": "c1"}]}),
        ("none", "Yes, it satisfies the constraint.", None),
        ("array_only", "[1, 2]", None),
    ],
)
def test_extract_json_object(name: str, text: str, expected: dict | None) -> None:
    assert extract_json_object(text) == expected, name


@pytest.mark.parametrize(
    ("name", "rules", "parsed_verdict", "error_part", "calls", "repaired"),
    [
        ("first_try", [("[task: t]", '{"verdict": "Yes", "reason": "fine"}')], "yes", None, 1, False),
        ("lenient_prose", [("[task: t]", 'Verdict follows: {"verdict": "no", "reason": "r"}.')], "no", None, 1, False),
        ("repaired", [(REPAIR, '{"verdict": "no", "reason": "fixed"}'), ("[task: t]", "verdict yes (no json)")],
         "no", None, 2, True),
        ("repair_fails", [(REPAIR, "still not json"), ("[task: t]", "verdict: yes")],
         None, "after one repair", 2, False),
        ("schema_mismatch_then_fails", [(REPAIR, '{"verdict": "maybe"}'), ("[task: t]", '{"verdict": "unclear"}')],
         None, "after one repair", 2, False),
        ("judge_refuses", [("[task: t]", "I'm sorry, I cannot evaluate this response.")],
         None, "judge refused to judge", 1, False),
        ("provider_error", [("[task: t]", ProviderError("boom 500", retryable=True))], None, "judge call failed", 1, False),
        ("repair_call_errors", [(REPAIR, ProviderError("down", retryable=False)), ("[task: t]", "nope")],
         None, "repair call failed", 2, False),
    ],
)
def test_ask_json(name, rules, parsed_verdict, error_part, calls, repaired) -> None:
    client = ScriptedClient(rules)
    reply = asyncio.run(ask_json(client, MSGS, ConstraintReply, "judge:test"))
    assert reply.calls == calls == len(client.calls), name
    assert reply.repaired is repaired, name
    if parsed_verdict is None:
        assert reply.parsed is None and error_part in (reply.error or ""), (name, reply.error)
    else:
        assert reply.parsed["verdict"] == parsed_verdict and reply.error is None, name


@pytest.mark.parametrize(
    ("name", "text", "expected"),
    [
        ("sorry", "I'm sorry, but I can't help with that.", True),
        ("cannot_evaluate", "I cannot evaluate the answer without more context.", True),
        ("json_present", 'I cannot evaluate fully, but {"verdict": "no"}', False),
        ("plain_text", "The answer is fine.", False),
    ],
)
def test_looks_like_judge_refusal(name: str, text: str, expected: bool) -> None:
    assert looks_like_judge_refusal(text) is expected, name


@pytest.mark.parametrize(
    ("name", "raw", "key"),
    [
        ("same", "c1", "c1"),
        ("upper", "C1", "c1"),
        ("padded", " c1 ", "c1"),
        ("inner_space", "C 1", "c1"),
        ("tabs_newlines", "\tk2\n", "k2"),
        ("different_id", "c10", "c10"),
    ],
)
def test_match_key(name: str, raw: str, key: str) -> None:
    assert match_key(raw) == key, name
