"""The toy protocol's own metric's computation (declared in the package's __init__): whether the response's last
word is an accepted answer (a response with no word: unparseable, left out of the mean and counted)."""

from __future__ import annotations

import re

from core.scoring.judges.base import MetricOutcome
from core.store.schema import ReferenceSpec

WORD_RE = re.compile(r"[^\W_]+")


def last_word(text: str) -> str | None:
    """The response's last word, lower-cased (None when it has no word)."""
    words = WORD_RE.findall(text.lower())
    return words[-1] if words else None


def echo_match(reference: ReferenceSpec, response: str, language: str | None) -> MetricOutcome:
    """1 when the response ends on an accepted answer (its text or an alias), 0 otherwise; no word: unparseable."""
    word = last_word(response)
    if word is None:
        return MetricOutcome(status="unparseable", value=0.0, passed=False, reason="the response has no word")
    accepted = {form.lower() for answer in reference.answers for form in (answer.text, *answer.aliases)}
    passed = word in accepted
    return MetricOutcome(value=float(passed), passed=passed, method="echo_match", details={"accepted": passed},
                         reason=f"last word {word!r} {'is' if passed else 'is not'} an accepted answer")


def answer_units(answer: str) -> list[str]:
    """What an expert labels for the echo label kind: the whole answer, one unit (none when it is empty)."""
    return [answer.strip()] if answer.strip() else []
