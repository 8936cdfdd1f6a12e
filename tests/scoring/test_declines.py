"""An assistant's declines in its own voice (data/reading/declines.yaml) are refusal phrases in English, Chinese and
Japanese; a decline followed by an answer stays an answer, and look-alikes that decline nothing are not read."""

from __future__ import annotations

import pytest

from core.scoring.judges.refusal import detect_refusal
from core.scoring.judges.text import declines, refusal_matches

CASES = [  # text, a refusal phrase is found, the response is a refusal overall
    pytest.param("I do not have specific information on the fee for that course.", True, True, id="en-no-information"),
    pytest.param("I am sorry that I do not have information about property investment in Asia.", True, True,
                 id="en-sorry-no-information"),
    pytest.param("We don't have up-to-date data on those prices.", True, True, id="en-we-no-data"),
    pytest.param("Sorry, I can't help you with that.", True, True, id="en-cannot-help"),
    pytest.param("I have no detailed information about the second plant.", True, True, id="en-have-no-information"),
    pytest.param("The fee is 5 dollars per person. I do not have specific information on discounts, though.", True,
                 False, id="en-caveat-after-an-answer"),
    pytest.param("I can't help but notice that the fee is 5 dollars per person.", False, False, id="en-cant-help-but"),
    pytest.param("We do not have to file the return before April 30.", False, False, id="en-do-not-have-to"),
    pytest.param("抱歉，我没有关于该费用的具体信息。", True, True, id="zh-no-information"),
    pytest.param("很抱歉，我无法帮助您。", True, True, id="zh-cannot-help"),
    pytest.param("费用是每人五美元。", False, False, id="zh-answer"),
    pytest.param("申し訳ありませんが、その件についての情報を持っていません。", True, True, id="ja-no-information"),
    pytest.param("申し訳ございませんが、お手伝いできません。", True, True, id="ja-cannot-help"),
    pytest.param("料金は一人5ドルです。", False, False, id="ja-answer"),
]


@pytest.mark.parametrize(("text", "phrase", "refusal"), CASES)
def test_declines_are_read_in_each_language(text: str, phrase: bool, refusal: bool) -> None:
    assert bool(refusal_matches(text)) is phrase, refusal_matches(text)
    assert detect_refusal(text)[0] is refusal


def test_every_language_of_the_file_is_one_the_rule_reads() -> None:
    import yaml

    from core.scoring.judges.text import DECLINES_FILE
    from core.scoring.reference import REFUSAL_LANGUAGES

    assert set(yaml.safe_load(DECLINES_FILE.read_text(encoding="utf-8"))["declines"]) <= set(REFUSAL_LANGUAGES)
    assert declines()
