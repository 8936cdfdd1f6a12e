"""Chinese reference metrics against hand-worked examples: EM as the best alternative's share of parts contained,
strict EM, token F1 and ROUGE-L by character; word-segmented and unsegmented text give the same score."""

from __future__ import annotations

import pytest

from core.ingest.importers.domainrag import composite
from core.scoring.reference import reference_metric
from core.store.schema import ReferenceSpec


def _ref(*alternatives: list[str], answer_type: str = "short") -> ReferenceSpec:
    return ReferenceSpec(answer_type=answer_type, answers=[composite(parts) for parts in alternatives])


# (metric, reference alternatives, response, hand-worked value)
CASES = [
    # EM: 2 of the 3 parts (汉语, 法语; not 英语) are contained -> 2/3
    pytest.param("exact_match", [["汉语", "法语", "英语"]], "用汉语和法语教学", 2 / 3, id="em-share-of-parts"),
    # EM: the best alternative counts: ["632"] is contained -> 1 although "文史专业632分" is not
    pytest.param("exact_match", [["632"], ["632分"], ["文史专业632分"]], "最低分数线是632分", 1.0, id="em-best-alternative"),
    # EM: max(1/2 for [人工智能, 计算机], 0 for [新闻学]) = 1/2
    pytest.param("exact_match", [["人工智能", "计算机"], ["新闻学"]], "人工智能", 0.5, id="em-max-over-alternatives"),
    # EM: full-width digits are NFKC-normalised (８０人 -> 80人)
    pytest.param("exact_match", [["80人"]], "招收８０人。", 1.0, id="em-full-width"),
    # strict EM: the response is exactly an alternative once punctuation and spaces go
    pytest.param("strict_exact_match", [["632"], ["632分"]], "632分。", 1.0, id="strict-equal"),
    pytest.param("strict_exact_match", [["632"], ["632分"]], "是632分", 0.0, id="strict-extra-text"),
    # token F1 by character: pred 新闻学院 (4), gold 新闻学 (3), 3 shared -> P 3/4, R 1, F1 = 6/7
    pytest.param("token_f1", [["新闻学"]], "新闻学院", 6 / 7, id="f1-characters"),
    # ROUGE-L by character: pred 降分至一本线 (6), gold 降至一本线 (5), LCS 5 -> P 5/6, R 1, F = 10/11
    pytest.param("rouge_l", [["降至一本线"]], "降分至一本线", 10 / 11, id="rouge-l-characters"),
    # Han numerals are read as digits before characters are compared (issue 37): a year written in Han numerals matches
    pytest.param("rouge_l", [["2021"]], "二零二一", 1.0, id="rouge-l-han-year-read-as-digits"),
    pytest.param("rouge_l", [["2021"]], "二零二二", 0.75, id="rouge-l-han-year-one-digit-off"),
]


def _segmented(text: str) -> str:
    """The text word-segmented as the DomainRAG release is (here: a space between every two characters)."""
    return " ".join(text)


@pytest.mark.parametrize(("metric", "alternatives", "response", "expected"), CASES)
def test_hand_worked_chinese_metrics(metric, alternatives, response, expected) -> None:
    reference = _ref(*alternatives)
    assert reference_metric(metric, reference, response, "zh").value == pytest.approx(expected)
    assert reference_metric(metric, reference, _segmented(response), "zh").value == pytest.approx(expected)
    segmented_reference = _ref(*[[_segmented(p) for p in parts] for parts in alternatives])
    assert reference_metric(metric, segmented_reference, response, "zh").value == pytest.approx(expected)


def test_a_real_segmented_passage_answers_like_its_unsegmented_text() -> None:
    """24 characters once spaces and punctuation go (降分政策为 甲类考生 降至一本线 录取 乙类考生 降 2 0 分); the gold 降至一本线 is
    5 of them in a row: EM 1, F1 = 2 * (5/24) * 1 / (5/24 + 1) = 10/29, and ROUGE-L (LCS 5) the same."""
    passage = "降分 政策 为 ： 甲类 考生 降 至 一本线 录取 ， 乙类 考生 降 20 分"
    reference = _ref(["降至一本线"])
    for text in (passage, passage.replace(" ", "")):
        scores = {m: reference_metric(m, reference, text, "zh").value for m in ("exact_match", "token_f1", "rouge_l")}
        assert scores == pytest.approx({"exact_match": 1.0, "token_f1": 10 / 29, "rouge_l": 10 / 29})
