"""Baselines in Chinese and Japanese: the extractive baseline answers from the documents with [doc N] citations and
refuses in the question's language when nothing overlaps; always-refuse refuses in the question's language."""

from __future__ import annotations

import pytest

from core.generation.baselines import REFUSAL_TEXT, REFUSALS, always_refuse, extractive
from tests.languages.conftest import is_abstention
from tests.test_baselines import prompt

ZH_DOCS = [
    "食堂每周一供应汤。停车位按资历分配。",
    "安全第一。风机主轴承的维护周期为6000运行小时。",
    "电网规范要求每季度对变电站进行一次检查。",
]
JA_DOCS = [
    "社員食堂では月曜日にスープを提供しています。駐車場は勤続年数順に割り当てられます。",
    "安全第一。風力タービン主軸受の保守間隔は6000運転時間です。",
    "グリッドコードでは変電所の点検を四半期ごとに行うことが求められています。",
]


@pytest.mark.parametrize(
    ("query", "docs", "expected"),
    [
        pytest.param("风机主轴承的维护周期是多久？", ZH_DOCS, "- 风机主轴承的维护周期为6000运行小时。 [doc 2]",
                     id="zh-second-doc"),
        pytest.param("变电站多久检查一次？", ZH_DOCS, "- 电网规范要求每季度对变电站进行一次检查。 [doc 3]",
                     id="zh-third-doc"),
        pytest.param("風力タービン主軸受の保守間隔はどれくらいですか？", JA_DOCS,
                     "- 風力タービン主軸受の保守間隔は6000運転時間です。 [doc 2]", id="ja-second-doc"),
        pytest.param("変電所の点検はどのくらいの頻度で行いますか？", JA_DOCS,
                     "- グリッドコードでは変電所の点検を四半期ごとに行うことが求められています。 [doc 3]",
                     id="ja-third-doc"),
    ],
)
def test_extractive_answers_cjk_questions_with_citations(query: str, docs: list[str], expected: str) -> None:
    assert extractive(prompt(query, docs)).splitlines()[0] == expected


@pytest.mark.parametrize(
    ("query", "docs", "language"),
    [
        pytest.param("1998年足球冠军是谁？", ZH_DOCS, "zh", id="zh-unrelated"),
        pytest.param("什么是？", ZH_DOCS, "zh", id="zh-only-question-words"),
        pytest.param("1998年のサッカー選手権の優勝者は誰ですか？", JA_DOCS, "ja", id="ja-unrelated"),
        pytest.param("Who won the 1998 football championship?", ZH_DOCS, "en", id="en-question-zh-docs"),
    ],
)
def test_extractive_refuses_in_the_question_language(query: str, docs: list[str], language: str) -> None:
    assert extractive(prompt(query, docs)) == REFUSALS[language]


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        pytest.param("保修期是多久？", REFUSALS["zh"], id="zh"),
        pytest.param("保証期間はどれくらいですか？", REFUSALS["ja"], id="ja"),
        pytest.param("How long is the warranty?", REFUSAL_TEXT, id="en"),
    ],
)
def test_always_refuse_speaks_the_question_language(query: str, expected: str) -> None:
    assert always_refuse(prompt(query, ZH_DOCS)) == expected


def test_extractive_answers_lit_ragbench_japanese(lit_rows) -> None:
    """On the answerable Japanese items it answers most and its first citation is mostly an evidence chunk."""
    answerable = [r for r in lit_rows("ja") if not is_abstention(r)]
    answered = evidence_first = 0
    for row in answerable:
        out = extractive(prompt(row["question"], row["positive_chunk_list"] + row["negative_chunk_list"]))
        if out != REFUSALS["ja"]:
            answered += 1
            evidence_first += int(out.split("[doc ", 1)[1].split("]", 1)[0]) <= len(row["positive_chunk_list"])
    assert len(answerable) == 54
    assert answered >= 0.75 * len(answerable), f"answered {answered}/{len(answerable)}"
    assert evidence_first >= 2 / 3 * answered, f"evidence chunk cited first in {evidence_first}/{answered}"
