"""Shared Chinese / Japanese helpers of core.language: content-character terms, and one cjk_language for everyone."""

from __future__ import annotations

import pytest

from core import language
from core.scoring.judges import text


@pytest.mark.parametrize(
    ("source", "terms"),
    [
        pytest.param("X200泵的保修期是多久？", ["泵", "保修", "修期"], id="zh-function-and-question-words-out"),
        pytest.param("谢谢您的理解。", ["谢谢", "理解"], id="zh-courtesy"),
        pytest.param("キンゴケモドキの学名は何ですか。", ["キン", "ンゴ", "ゴケ", "ケモ", "モド", "ドキ", "学名"],
                     id="ja-katakana-and-kanji-runs"),
        pytest.param("ご了承ください。", ["了承"], id="ja-hiragana-split-runs"),
        pytest.param("The warranty is 24 months.", [], id="english-has-none"),
    ],
)
def test_cjk_terms(source: str, terms: list[str]) -> None:
    assert language.cjk_terms(source) == terms


def test_judge_text_uses_the_shared_cjk_language() -> None:
    assert text.cjk_language is language.cjk_language
