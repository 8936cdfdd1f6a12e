"""Count-based checkers on Chinese and Japanese: counted correctly (characters as words, 。！？ ending sentences,
substring keywords, full-width commas, 年月日 dates) or an "unsupported for language" error the scorer records."""

from __future__ import annotations

import pytest

from core.scoring.checkers import build_checker
from core.scoring.checkers.base import UnsupportedLanguageError
from core.scoring.checkers.text import capital_word_count, sentence_count, word_count
from core.scoring.judges.base import ConstraintView
from core.scoring.scorer import rule_outcome

ZH = "委员会经过长时间的辩论，批准了下一财年的预算。"  # 21 Han characters, a comma and a full stop
JA = "私は学生です。"  # 6 kanji and kana


@pytest.mark.parametrize(
    ("text", "words", "sentences", "capitals"),
    [
        pytest.param(ZH, 21, 1, 0, id="zh-sentence"),
        pytest.param("你好。再见！真的吗?好的。", 2 + 2 + 3 + 2, 4, 0, id="zh-four-sentences-no-spaces"),
        pytest.param("公司CEO和CFO表示同意。", 2 + 1 + 2 + 2 + 2, 1, 2, id="zh-with-latin-capitals"),
        pytest.param(JA, 6, 1, 0, id="ja-sentence"),
        pytest.param("これはペンです。あれは本です！", 13, 2, 0, id="ja-two-sentences"),
        pytest.param("Hello world. THE END.", 4, 2, 2, id="english-unchanged"),
    ],
)
def test_counts(text: str, words: int, sentences: int, capitals: int) -> None:
    assert (word_count(text), sentence_count(text), capital_word_count(text)) == (words, sentences, capitals)


CASES = [
    # IFEval checkers
    ("length_constraints:number_words", {"num_words": 20, "relation": "at least"}, ZH, True, "zh-21-characters"),
    ("length_constraints:number_words", {"num_words": 10, "relation": "less than"}, ZH, False, "zh-not-under-10"),
    ("length_constraints:number_words", {"num_words": 7, "relation": "less than"}, JA, True, "ja-6-characters"),
    ("length_constraints:number_sentences", {"num_sentences": 3, "relation": "at least"}, "你好。再见！真的吗？",
     True, "zh-3-sentences"),
    ("length_constraints:number_sentences", {"num_sentences": 3, "relation": "at least"},
     "これはペンです。あれは本です。", False, "ja-2-sentences"),
    ("length_constraints:number_paragraphs", {"num_paragraphs": 2}, "第一段。\n***\n第二段。", True, "zh-paragraphs"),
    ("length_constraints:nth_paragraph_first_word", {"num_paragraphs": 2, "nth_paragraph": 2, "first_word": "首先"},
     "介绍。\n\n首先，我们讨论预算。", True, "zh-first-word"),
    ("length_constraints:nth_paragraph_first_word", {"num_paragraphs": 2, "nth_paragraph": 2, "first_word": "最后"},
     "介绍。\n\n首先，我们讨论预算。", False, "zh-wrong-first-word"),
    ("length_constraints:nth_paragraph_first_word", {"num_paragraphs": 2, "nth_paragraph": 2, "first_word": "まず"},
     "概要です。\n\nまず、予算について説明します。", True, "ja-first-word"),
    ("length_constraints:nth_paragraph_first_word", {"num_paragraphs": 2, "nth_paragraph": 2, "first_word": "first"},
     "概要。\n\nFirst，我们讨论预算。", True, "latin-first-word-before-full-width-comma"),
    ("keywords:frequency", {"keyword": "预算", "frequency": 2, "relation": "at least"}, "预算很重要。预算已批准。",
     True, "zh-keyword-twice"),
    ("keywords:frequency", {"keyword": "予算", "frequency": 2, "relation": "less than"}, "予算は承認されました。",
     True, "ja-keyword-once"),
    ("keywords:forbidden_words", {"forbidden_words": ["预算"]}, ZH, False, "zh-forbidden-word-inside-text"),
    ("keywords:forbidden_words", {"forbidden_words": ["予算"]}, "来年度の予算が承認された。", False,
     "ja-forbidden-word-inside-text"),
    ("keywords:forbidden_words", {"forbidden_words": ["预算"]}, "批准了计划。", True, "zh-forbidden-word-absent"),
    ("keywords:letter_frequency", {"letter": "a", "let_frequency": 1, "let_relation": "less than"}, ZH, True,
     "zh-no-latin-letter"),
    ("change_case:capital_word_frequency", {"capital_frequency": 2, "capital_relation": "at least"},
     "公司CEO和CFO表示同意。", True, "zh-two-capital-words"),
    ("change_case:capital_word_frequency", {"capital_frequency": 2, "capital_relation": "at least"},
     "会社のCEOが発表しました。", False, "ja-one-capital-word"),
    ("punctuation:no_comma", {}, "首先，我们讨论。", False, "zh-full-width-comma"),
    ("punctuation:no_comma", {}, "まず、説明します。", False, "ja-ideographic-comma"),
    ("punctuation:no_comma", {}, "我们讨论预算。", True, "zh-no-comma"),
    # enterprise checkers
    ("enterprise:word_count_range", {"max_words": 10}, ZH, False, "zh-over-10-characters"),
    ("enterprise:word_count_range", {"min_words": 5}, JA, True, "ja-at-least-5"),
    ("enterprise:paragraph_count_range", {"min_paragraphs": 2}, "第一段。\n\n第二段。", True, "zh-two-paragraphs"),
    ("enterprise:keyword_frequency", {"keyword": "预算", "min_count": 2}, "预算很重要。批准了预算。", True,
     "zh-keyword-inside-text"),
    ("enterprise:keyword_frequency", {"keyword": "API", "min_count": 2}, "公司API接口和API文档", True,
     "latin-keyword-between-han"),
    ("enterprise:keyword_frequency", {"keyword": "予算", "min_count": 0, "max_count": 0}, "来年度の予算", False,
     "ja-keyword-present"),
    ("enterprise:forbidden_phrases", {"phrases": ["预算"]}, ZH, False, "zh-forbidden-phrase"),
    ("enterprise:char_count_range", {"max_chars": 5}, "日本語です", True, "ja-characters"),
    ("enterprise:ordered_list_items", {"order": "chronological"}, "- 2023年1月 立项\n- 2024年3月5日 发布", True,
     "zh-dates-in-order"),
    ("enterprise:ordered_list_items", {"order": "chronological"}, "- 2024年3月5日 发布\n- 2023年1月 立项", False,
     "zh-dates-out-of-order"),
    ("enterprise:ordered_list_items", {"order": "chronological"}, "- 平成31年4月 開始\n- 令和2年1月 更新", True,
     "ja-era-years-in-order"),
    ("enterprise:ordered_list_items", {"order": "alphabetical"}, "- apple\n- banana", True, "english-alphabetical"),
]


@pytest.mark.parametrize(("checker_id", "kwargs", "response", "expected"),
                         [pytest.param(*case[:4], id=case[4]) for case in CASES])
def test_checker_verdicts(checker_id: str, kwargs: dict, response: str, expected: bool) -> None:
    assert build_checker(checker_id, kwargs).check(response) is expected


@pytest.mark.parametrize(
    ("response", "language"),
    [pytest.param("- 苹果\n- 香蕉", "zh", id="zh"), pytest.param("- りんご\n- 東京", "ja", id="ja"),
     pytest.param("- apple\n- りんご", "ja", id="latin-and-kana")],
)
def test_alphabetical_order_is_unsupported(response: str, language: str) -> None:
    checker = build_checker("enterprise:ordered_list_items", {"order": "alphabetical"})
    with pytest.raises(UnsupportedLanguageError, match=f"^unsupported for language {language}$"):
        checker.check(response)


def test_scorer_records_unsupported_language_as_error_verdict() -> None:
    c = ConstraintView(cid="c1", text="List the items in alphabetical order.", judge_method="rule",
                       checker_id="enterprise:ordered_list_items", checker_kwargs={"order": "alphabetical"})
    out = rule_outcome(c, "- 苹果\n- 香蕉")
    assert (out.status, out.passed) == ("error", None)
    assert "unsupported for language zh" in out.reason
