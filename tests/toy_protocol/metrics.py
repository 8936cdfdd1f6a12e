"""The toy protocol's own metric, declared and computed here: `toy_echo.echo_match`, whether the response's last
word is an accepted answer (a response with no word: unparseable, left out of the mean and counted)."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from core.metrics import MetricDeclaration, declare
from core.store.schema import ReferenceSpec

if TYPE_CHECKING:
    from core.scoring.judges.base import MetricOutcome

ECHO_MATCH = "toy_echo.echo_match"
WORD_RE = re.compile(r"[^\W_]+")


def last_word(text: str) -> str | None:
    """The response's last word, lower-cased (None when it has no word)."""
    words = WORD_RE.findall(text.lower())
    return words[-1] if words else None


def echo_match(reference: ReferenceSpec, response: str, language: str | None) -> MetricOutcome:
    """1 when the response ends on an accepted answer (its text or an alias), 0 otherwise; no word: unparseable."""
    from core.scoring.judges.base import MetricOutcome  # the scoring layer, needed only when a response is scored

    word = last_word(response)
    if word is None:
        return MetricOutcome(status="unparseable", value=0.0, passed=False, reason="the response has no word")
    accepted = {form.lower() for answer in reference.answers for form in (answer.text, *answer.aliases)}
    passed = word in accepted
    return MetricOutcome(value=float(passed), passed=passed, method="toy_echo",
                         reason=f"last word {word!r} {'is' if passed else 'is not'} an accepted answer")


ECHO_MATCH_METRIC = declare(MetricDeclaration(
    ECHO_MATCH, "Echo match", "rate", ("lexical",), states=("scored", "not_applicable", "unparseable", "unjudged"),
    unparseable="excluded", description="the response's last word is an accepted answer", compute=echo_match))
