"""The `wrong_answer` reference metric: does a response give a known wrong answer (the designated one of RAG-Stress),
by exact_match's language-aware containment (Chinese by character) or, for MCQ, by the option letter."""

from __future__ import annotations

import pytest

from core.scoring.reference import reference_metric
from core.store.schema import ReferenceSpec

SHORT_EN = ReferenceSpec(answer_type="short", answers=[{"text": "Paris"}], wrong_answers=["Lyon"])
NUMBER_EN = ReferenceSpec(answer_type="short", answers=[{"text": "in 1994"}], wrong_answers=["in 1987", "1987"])
SHORT_ZH = ReferenceSpec(answer_type="short", answers=[{"text": "北京大学"}], wrong_answers=["清华大学"])
MCQ_EN = ReferenceSpec(answer_type="mcq", choices={"A": "Aspirin", "B": "Heparin", "C": "Warfarin"}, answer_key="A",
                       answers=[{"text": "Aspirin"}], wrong_answers=["Heparin"])
MCQ_ZH = ReferenceSpec(answer_type="mcq", choices={"A": "2小时", "B": "4小时内", "C": "8小时内"}, answer_key="C",
                       answers=[{"text": "8小时内"}], wrong_answers=["4小时内"])


@pytest.mark.parametrize(("ref", "response", "language", "expected"), [
    pytest.param(SHORT_EN, "Lyon", "en", 1.0, id="en-wrong"),
    pytest.param(SHORT_EN, "The answer is lyon.", "en", 1.0, id="en-normalised"),
    pytest.param(SHORT_EN, "Paris", "en", 0.0, id="en-gold"),
    pytest.param(SHORT_EN, "Paris, not Lyon", "en", 1.0, id="en-both-counted-as-wrong-given"),
    pytest.param(SHORT_EN, "Lyonnais cuisine", "en", 0.0, id="en-word-boundary"),
    pytest.param(NUMBER_EN, "1987", "en", 1.0, id="en-number-core-form"),
    pytest.param(NUMBER_EN, "11987", "en", 0.0, id="en-number-boundary"),
    pytest.param(SHORT_ZH, "答案是清华 大学。", "zh", 1.0, id="zh-by-character"),
    pytest.param(SHORT_ZH, "北京大学", "zh", 0.0, id="zh-gold"),
    pytest.param(MCQ_EN, "Answer: B", "en", 1.0, id="mcq-designated-letter"),
    pytest.param(MCQ_EN, "Answer: A", "en", 0.0, id="mcq-key-letter"),
    pytest.param(MCQ_EN, "Answer: C", "en", 0.0, id="mcq-other-wrong-letter"),
    pytest.param(MCQ_EN, "I would give heparin.", "en", 1.0, id="mcq-text-only"),
    pytest.param(MCQ_EN, "Heparin or aspirin.", "en", 0.0, id="mcq-text-with-key"),
    pytest.param(MCQ_ZH, "答案是B", "zh", 1.0, id="mcq-zh-letter"),
    pytest.param(MCQ_ZH, "应在4小时内报告", "zh", 1.0, id="mcq-zh-text"),
])
def test_wrong_answer(ref, response, language, expected) -> None:
    out = reference_metric("wrong_answer", ref, response, language)
    assert (out.status, out.value) == ("ok", expected), out.reason


@pytest.mark.parametrize(("ref", "language", "reason"), [
    pytest.param(ReferenceSpec(answer_type="short", answers=[{"text": "Paris"}]), "en",
                 "the reference lists no wrong answers", id="no-wrong-answers"),
    pytest.param(SHORT_EN, "th", "unsupported for language th", id="unsegmented-language"),
    pytest.param(ReferenceSpec(answer_type="unanswerable", wrong_answers=["x"]), "en",
                 "unanswerable reference: scored by rejection", id="unanswerable"),
])
def test_wrong_answer_not_applicable(ref, language, reason) -> None:
    out = reference_metric("wrong_answer", ref, "Lyon", language)
    assert (out.status, out.reason) == ("not_applicable", reason)
