"""The conversation protocol's per-turn metrics: answer quality (token F1 against the reference, the product's
computation), the same on later turns only, and answerability handling by rule (core.scoring.judges.refusal reads
refusals and hedges in English, Chinese and Japanese; another language: not applicable, said so)."""

from __future__ import annotations

import re
from typing import Any

from core.generation.reasoning import split_reasoning
from core.scoring.judges.base import JudgeInput, MetricOutcome
from core.scoring.judges.refusal import detect_refusal
from core.scoring.reference import REFUSAL_LANGUAGES, reference_metric, response_language

from . import ANSWERABILITY, EARLY_TURNS

QUESTION_RE = re.compile(r"[?？]")
HANDLED_BY = {"ANSWERABLE": "answers (no refusal)", "UNANSWERABLE": "declines: says the passages do not answer",
              "PARTIAL": "hedges: says what the passages leave out, or declines",
              "UNDERSPECIFIED": "asks a clarifying question, or says what is missing"}
CONCERNED = ("UNANSWERABLE", "PARTIAL")


def turn_number(attributes: dict[str, Any]) -> int | None:
    """The 1-based turn number of an instance (aspect 'turn:N')."""
    for aspect in attributes.get("aspects") or []:
        key, _, value = aspect.partition(":")
        if key == "turn" and value.isdigit():
            return int(value)
    return None


def answerability(attributes: dict[str, Any]) -> str | None:
    """The turn's answerability label (ANSWERABLE, PARTIAL, UNANSWERABLE, UNDERSPECIFIED)."""
    return next((c for c in attributes.get("categories") or [] if c in ANSWERABILITY), None)


def quality_of(item: JudgeInput) -> MetricOutcome:
    """Token F1 of the response against the reference (no reference answer: not applicable)."""
    if item.reference is None or not item.reference.answers:
        return MetricOutcome(status="not_applicable", reason="the turn has no reference answer (unanswerable)")
    return reference_metric("token_f1", item.reference, item.response, item.language)


async def answer_quality(judge: Any, item: JudgeInput) -> MetricOutcome:
    """The turn's answer quality: token F1 against its reference."""
    return quality_of(item)


async def later_turn_quality(judge: Any, item: JudgeInput) -> MetricOutcome:
    """Answer quality on turns after EARLY_TURNS (earlier turns: not applicable)."""
    turn = turn_number(item.attributes)
    if turn is None or turn <= EARLY_TURNS:
        return MetricOutcome(status="not_applicable", reason=f"turn {turn} is one of the first {EARLY_TURNS}")
    return quality_of(item)


def handled(label: str, answer: str) -> tuple[bool, str]:
    """Whether an answer handles a turn of this answerability, and why."""
    refused, phrases = detect_refusal(answer)
    if label == "ANSWERABLE":
        return not refused, "declined an answerable turn" if refused else "answered"
    if label == "UNANSWERABLE":
        return refused, f"declined ({phrases})" if refused else "answered a turn the passages cannot answer"
    if label == "PARTIAL":
        return bool(phrases), f"hedged or declined ({phrases})" if phrases else "answered as if fully supported"
    asks = bool(QUESTION_RE.search(answer))
    return asks or bool(phrases), "asked back or said what is missing" if asks or phrases else "guessed the intent"


def handling(item: JudgeInput, labels: tuple[str, ...]) -> MetricOutcome:
    """1 when the answer handles the turn as its answerability asks, for turns whose label is in `labels`."""
    label = answerability(item.attributes)
    if label is None or label not in labels:
        return MetricOutcome(status="not_applicable", reason=f"answerability {label}: not concerned")
    split = split_reasoning(item.response)
    if split.unfinished:
        return MetricOutcome(status="unparseable", value=0.0, reason="the reasoning never finished")
    lang = response_language(split.answer, item.language)
    if lang not in REFUSAL_LANGUAGES:
        return MetricOutcome(status="not_applicable", reason=f"refusals are read in {', '.join(REFUSAL_LANGUAGES)} "
                                                              f"only, not {lang}")
    ok, why = handled(label, split.answer)
    return MetricOutcome(value=float(ok), passed=ok, method="rule", reason=f"{label}: {why}",
                         details={"answerability": label, "expected": HANDLED_BY[label]})


async def answerability_handling(judge: Any, item: JudgeInput) -> MetricOutcome:
    """Every turn: handled as its answerability asks."""
    return handling(item, ANSWERABILITY)


async def unanswerable_handling(judge: Any, item: JudgeInput) -> MetricOutcome:
    """Unanswerable and partial turns only: the model says what the passages do not support."""
    return handling(item, CONCERNED)
