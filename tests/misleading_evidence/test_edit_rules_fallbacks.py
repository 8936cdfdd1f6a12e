"""HotpotQA fallback rules for bridge answers with no same-type entity among the distractors: counts whose distractor
figures are all unusable, ordinals standing alone, and the coverage they add on the shared slice."""

from __future__ import annotations

import pytest

from core.protocols.misleading_evidence.builder import build_stress, one_span_diff, plan_for
from tests.misleading_evidence.conftest import source_specs
from tests.misleading_evidence.test_edit_rules import _item

SINGER = ("Jane Roe", "Jane Roe (born 1950) is an English singer who toured France.")
SCORES = ("Gamma Delta", "Gamma Delta scored 25 goals.")
ORDINALS = {f"{n}th" for n in range(4, 21)} | {"2nd", "3rd"}


@pytest.mark.parametrize(("question", "answer", "sentence", "noise", "wrong"), [
    # the distractors' only count, 25, stands inside '250' of the evidence: the count is scaled instead
    pytest.param("How many copies did it sell?", "250 million", "His books sold more than 250 million copies.",
                 [SCORES], {f"{n} million" for n in (125, 150, 188, 325, 375, 500)},
                 id="count-scaled-when-distractor-figures-unusable"),
    pytest.param("What number largest airline is it?", "8th", "It is the 8th largest airline in the US.",
                 [SINGER], ORDINALS - {"8th"}, id="ordinal-alone"),
    pytest.param("What rank did it reach?", "12th", "It reached the 12th place in 1990.",
                 [SINGER], ORDINALS - {"12th"}, id="ordinal-alone-teens-suffix"),
])
def test_figure_fallbacks(question, answer, sentence, noise, wrong) -> None:
    plan = plan_for(_item(question, answer, [("Alpha Beta", sentence)], noise))
    assert plan.wrong_answer in wrong and plan.edit.before == answer
    clean, misleading = plan.evidence.text(), plan.misleading.text()
    start, end, new_end = one_span_diff(clean, misleading)
    assert clean[start:end] in answer
    assert plan.wrong_answer in misleading and plan.wrong_answer not in clean


def test_hotpotqa_coverage_with_fallbacks() -> None:
    assert len(build_stress(source_specs("hotpotqa"), seed=0).instances) >= 258 + 2
