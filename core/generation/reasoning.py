"""Reasoning kept apart from the answer: <think>-style blocks in a model's text and providers' reasoning fields.

A reasoning model writes its thinking before the answer, inline (`<think>…</think>`, `<thinking>`, `<reasoning>`,
`<thought>`; the tag names are in data/reading/reasoning.yaml) or in a field of its own (OpenAI-compatible
`reasoning_content`, Anthropic `thinking` content blocks). `split_reasoning` returns the answer alone and the
reasoning alone; everything that reads an answer (metrics, checkers, claim extraction, refusal detection, judges)
reads the answer. A block opened and never closed, or a provider's reasoning cut off at the token limit with no answer
after it, is the state 'unfinished' ("reasoning not finished"): there is no answer to read.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache
from typing import Literal

import yaml

from core.config import REPO_ROOT

ReasoningState = Literal["none", "finished", "unfinished"]
REASONING_FILE = REPO_ROOT / "data" / "reading" / "reasoning.yaml"
UNFINISHED_REASON = "reasoning not finished"


@dataclass(frozen=True)
class Reasoned:
    """A model's output split: the answer, the reasoning ('' when none) and whether the reasoning finished."""

    answer: str
    reasoning: str = ""
    state: ReasoningState = "none"

    @property
    def unfinished(self) -> bool:
        """True when the reasoning never ended: no answer to read."""
        return self.state == "unfinished"


@lru_cache(maxsize=1)
def reasoning_rules() -> dict[str, list[str]]:
    """The reasoning tag names and cut-off finish reasons of data/reading/reasoning.yaml."""
    data = yaml.safe_load(REASONING_FILE.read_text(encoding="utf-8"))
    return {"tags": [str(t) for t in data["tags"]], "cut_off": [str(r) for r in data["cut_off"]]}


@lru_cache(maxsize=1)
def _patterns() -> tuple[re.Pattern[str], re.Pattern[str], re.Pattern[str]]:
    names = "|".join(re.escape(t) for t in reasoning_rules()["tags"])
    block = re.compile(rf"<\s*({names})\s*>(.*?)<\s*/\s*\1\s*>", re.IGNORECASE | re.DOTALL)
    opened = re.compile(rf"<\s*(?:{names})\s*>", re.IGNORECASE)
    closed_only = re.compile(rf"<\s*/\s*(?:{names})\s*>", re.IGNORECASE)
    return block, opened, closed_only


def _join(*parts: str) -> str:
    return "\n\n".join(p.strip() for p in parts if p and p.strip())


def split_reasoning(text: str | None, provided: str | None = None, finish_reason: str | None = None) -> Reasoned:
    """The answer and the reasoning of a model's output: `provided` is the provider's own reasoning field (first),
    then every closed reasoning block of `text` (also one whose opening tag the chat template wrote, so the text
    starts inside it and holds only `</think>`); an opening tag left unclosed is unfinished reasoning, as is provider
    reasoning with no answer when the provider stopped at the token limit (`finish_reason`)."""
    block, opened, closed_only = _patterns()
    text = text or ""
    found = [m.group(2) for m in block.finditer(text)]
    answer = block.sub("", text)
    head = ""
    lone_close = closed_only.search(answer)
    if lone_close and not opened.search(answer[:lone_close.start()]):
        head, answer = answer[:lone_close.start()], answer[lone_close.end():]
    open_tag = opened.search(answer)
    tail = ""
    if open_tag:
        answer, tail = answer[:open_tag.start()], answer[open_tag.end():]
    reasoning = _join(provided or "", head, *found, tail)
    answer = answer.strip()
    if open_tag or (reasoning and not answer and finish_reason in reasoning_rules()["cut_off"]):
        return Reasoned(answer, reasoning, "unfinished")
    return Reasoned(answer if reasoning else text, reasoning, "finished" if reasoning else "none")


def answer_only(text: str | None) -> str:
    """The answer of a model's output, its reasoning blocks left out ('' when the reasoning never finished)."""
    return split_reasoning(text).answer


def stored_split(text: str | None, reasoning: str | None = None, state: str | None = None) -> Reasoned:
    """A stored response as shown and read: its answer, its reasoning (the stored field first, then any block still
    inside an older or imported text) and its state (a stored 'unfinished' stays unfinished)."""
    split = split_reasoning(text, reasoning)
    return Reasoned(split.answer, split.reasoning, "unfinished") if state == "unfinished" else split
