"""Reading a judge's JSON reply: lenient extraction of the first {...} object, then one repair call, else an error."""

from __future__ import annotations

import json
import re
from typing import TypeVar

from pydantic import BaseModel, ValidationError

from core.generation.providers.base import ChatMessage, Completion, ProviderError
from core.scoring.judges.base import CompletionClient
from core.scoring.judges.prompts import REPAIR_PROMPT
from core.scoring.judges.text import snippet

M = TypeVar("M", bound=BaseModel)
FENCE_RE = re.compile(r"^```(?:json)?\s*|\s*```$", re.IGNORECASE)
JUDGE_REFUSAL_RE = re.compile(
    r"\b(?:i\s+(?:can(?:no|')t|am unable to|won't|will not)\s+(?:evaluate|judge|assess|help|comply)|"
    r"i'?m (?:sorry|unable)|as an ai\b)",
    re.IGNORECASE,
)


class JsonReply(BaseModel):
    """The outcome of asking a judge for JSON: the parsed object or an error, with call accounting."""

    parsed: dict | None = None
    raw: str = ""
    error: str | None = None
    calls: int = 0
    cost_usd: float = 0.0
    repaired: bool = False


def extract_json_object(text: str) -> dict | None:
    """The whole reply as a JSON object, else the first decodable {...} object inside it, else None."""
    stripped = FENCE_RE.sub("", text.strip())
    decoder = json.JSONDecoder()
    for start in [0] + [i for i, ch in enumerate(stripped) if ch == "{"]:
        try:
            obj, _ = decoder.raw_decode(stripped, start)
        except (ValueError, RecursionError):  # malformed, an over-long number, or nested too deep
            continue
        if isinstance(obj, dict):
            return obj
    return None


def parse_reply(text: str, model: type[M]) -> tuple[M | None, str]:
    """Parse `text` into `model` leniently; returns (value, problem) with problem '' on success."""
    obj = extract_json_object(text)
    if obj is None:
        return None, "no JSON object found"
    try:
        return model.model_validate(obj), ""
    except ValidationError as exc:
        return None, f"JSON does not match the schema: {exc.errors()[0].get('msg', 'invalid')}"


def match_key(raw: str) -> str:
    """An id as the judge wrote it, reduced for matching: case and whitespace do not count ('C 1' matches 'c1')."""
    return "".join(str(raw).split()).casefold()


def paid(completion: Completion) -> float:
    """What a call cost this pass: nothing when it was answered from the cache."""
    return 0.0 if completion.cached else completion.cost_usd


def looks_like_judge_refusal(text: str) -> bool:
    """True when a reply without JSON reads as the judge declining the task."""
    return extract_json_object(text) is None and bool(JUDGE_REFUSAL_RE.search(text))


async def ask_json(client: CompletionClient, messages: list[ChatMessage], model: type[M], purpose: str) -> JsonReply:
    """Call the judge and parse its JSON into `model`: lenient parse, then at most one repair call."""
    reply = JsonReply()
    try:
        first = await client.complete(messages, purpose=purpose)
    except ProviderError as exc:
        return JsonReply(error=f"judge call failed: {snippet(str(exc))}", calls=1)
    reply.calls, reply.cost_usd, reply.raw = 1, paid(first), first.text
    value, problem = parse_reply(first.text, model)
    if value is not None:
        reply.parsed = value.model_dump()
        return reply
    if looks_like_judge_refusal(first.text):
        reply.error = f"judge refused to judge: {snippet(first.text)}"
        return reply
    repair = [*messages, ChatMessage(role="assistant", content=first.text),
              ChatMessage(role="user", content=REPAIR_PROMPT.format(problem=problem))]
    try:
        second = await client.complete(repair, purpose=f"{purpose}:repair")
    except ProviderError as exc:
        reply.calls += 1
        reply.error = f"unparseable judge output ({problem}); repair call failed: {snippet(str(exc))}; raw: {snippet(first.text)}"
        return reply
    reply.calls += 1
    reply.cost_usd += paid(second)
    value, problem2 = parse_reply(second.text, model)
    if value is None:
        reply.error = f"unparseable judge output after one repair ({problem2}); raw: {snippet(second.text or first.text)}"
        reply.raw = second.text
        return reply
    reply.parsed, reply.raw, reply.repaired = value.model_dump(), second.text, True
    return reply
