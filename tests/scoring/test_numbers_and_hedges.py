"""Numbers and hedges read as models write them, and benchmark rules as their authors state them: number lists in
every separator, Han numerals and full-width digits; a hedged refusal that gives a guess scored as that guess (RGB's
own rule for RGB); CRAG false-premise rows by CRAG's rule on the published row; yes/no golds imported as short
answers; a RAMDocs gold with a slash (published row); FollowRAG's "No." answer."""

from __future__ import annotations

import bz2
import json
from pathlib import Path

import pytest

from core.scoring.benchmarks import BenchmarkItem, benchmark_metric
from core.scoring.checkers.sentences import split_sentences
from core.scoring.judges.refusal import detect_refusal
from core.scoring.reference import reference_metric
from core.store.schema import ReferenceSpec

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"


def short(gold: str) -> ReferenceSpec:
    return ReferenceSpec(answer_type="short", answers=[{"text": gold}])


NUMBER_CASES = [  # (gold, response, language, exact_match, strict_exact_match)
    pytest.param("8、9", "8，9", "zh", 1.0, 1.0, id="zh-list-fullwidth-comma"),
    pytest.param("8、9", "8, 9", "zh", 1.0, 1.0, id="zh-list-comma-space"),
    pytest.param("8、9", "答案是8、9。", "zh", 1.0, 0.0, id="zh-list-in-sentence"),
    pytest.param("8、9", "89", "zh", 0.0, 0.0, id="zh-list-is-not-89"),
    pytest.param("3、12、25", "3，12，25", "zh", 1.0, 1.0, id="zh-three-numbers"),
    pytest.param("8、9", "8、9です。", "ja", 1.0, 0.0, id="ja-list"),
    pytest.param("1,000人", "1000人", "zh", 1.0, 1.0, id="thousands-comma-kept-one-number"),
    pytest.param("3月", "三月に開催されます。", "ja", 1.0, 0.0, id="ja-han-month"),
    pytest.param("3月", "会议在三月举行。", "zh", 1.0, 0.0, id="zh-han-month"),
    pytest.param("3月", "会议在十三月举行。", "zh", 0.0, 0.0, id="zh-han-13-is-not-3"),
    pytest.param("100", "一百", "zh", 1.0, 1.0, id="zh-one-hundred"),
    pytest.param("第3", "第三", "zh", 1.0, 1.0, id="zh-ordinal"),
    pytest.param("2023年", "二〇二三年", "zh", 1.0, 1.0, id="zh-digit-by-digit-year"),
    pytest.param("23岁", "二十三岁", "zh", 1.0, 1.0, id="zh-twenty-three"),
    pytest.param("2005年", "两千零五年", "zh", 1.0, 1.0, id="zh-two-thousand-five"),
    pytest.param("123", "１２３", "ja", 1.0, 1.0, id="fullwidth-digits"),
    pytest.param("统一", "统一", "zh", 1.0, 1.0, id="zh-word-with-yi-unchanged"),
    pytest.param("1", "国家统一", "zh", 0.0, 0.0, id="zh-yi-in-a-word-is-no-number"),
]


@pytest.mark.parametrize(("gold", "response", "language", "em", "strict"), NUMBER_CASES)
def test_numbers_are_read_as_numbers(gold, response, language, em, strict):
    assert reference_metric("exact_match", short(gold), response, language).value == em
    assert reference_metric("strict_exact_match", short(gold), response, language).value == strict


HEDGES = [  # (response, refusal overall)
    pytest.param("I cannot answer this from the documents, but my best guess is Paris.", False, id="en-best-guess"),
    pytest.param("The documents do not say. If I had to guess, I'd say Paris.", False, id="en-if-i-had-to"),
    pytest.param("资料中没有相关信息，无法回答。不过我猜是巴黎。", False, id="zh-guess"),
    pytest.param("資料からは判断できません。おそらくパリです。", False, id="ja-guess"),
    pytest.param("I cannot answer this from the documents.", True, id="en-plain-refusal"),
    pytest.param("资料中没有相关信息，无法回答。", True, id="zh-plain-refusal"),
]


@pytest.mark.parametrize(("response", "refused"), HEDGES)
def test_a_hedged_refusal_that_guesses_is_scored_as_the_guess(response, refused):
    assert detect_refusal(response)[0] is refused
    gold = {"en": "Paris", "zh": "巴黎", "ja": "パリ"}
    language = "zh" if "资料" in response else "ja" if "資料" in response else "en"
    assert reference_metric("exact_match", short(gold[language]), response, language).value == float(not refused)
    unanswerable = ReferenceSpec(answer_type="unanswerable")
    assert reference_metric("rejection", unanswerable, response, language).value == float(refused)


RGB_REJECTION = [  # RGB's own rule (evalue.py): a rejection says "insufficient information" / "信息不足"
    pytest.param("I cannot answer, but my best guess is 1998.", 0.0, id="hedge-with-guess-answers"),
    pytest.param("There is insufficient information in the documents; my best guess is 1998.", 1.0,
                 id="rgb-phrase-is-rejection-by-rgb-rule"),
    pytest.param("I cannot answer the question from these documents.", 1.0, id="plain-refusal"),
]


@pytest.mark.parametrize(("response", "rejected"), RGB_REJECTION)
def test_rgb_rejection_follows_rgb_rule(response, rejected):
    item = BenchmarkItem(short("1998"), response, "en", "rgb/en/1", {}, ("noise", "noise"))
    assert benchmark_metric("rgb_rejection", item).value == rejected


def crag_false_premise_row() -> dict:
    with bz2.open(FIXTURES / "crag" / "dev_data.jsonl.bz2", "rt", encoding="utf-8") as f:
        return next(r for r in map(json.loads, f) if r.get("question_type") == "false_premise")


CRAG_FP = [  # CRAG local_evaluation.py on the published false-premise row (its gold is a sentence, no 'invalid')
    pytest.param("{gold}", "correct", 1.0, id="the-gold-sentence-is-correct"),
    pytest.param("Rory McIlroy has never won the Masters.", "correct", 1.0, id="the-gold-content"),
    pytest.param("invalid question", "hallucinated", -1.0, id="invalid-where-gold-does-not-say-it"),
    pytest.param("I don't know.", "missing", 0.0, id="idk-missing"),
    pytest.param("He has won it twice.", "hallucinated", -1.0, id="premise-accepted"),
]


@pytest.mark.parametrize(("template", "kind", "score"), CRAG_FP)
def test_crag_false_premise_rows_follow_crags_rule(template, kind, score):
    row = crag_false_premise_row()
    gold = row["answer"]
    ref = ReferenceSpec(answer_type="short", answers=[{"text": gold, "aliases": ["never won"]}])
    item = BenchmarkItem(ref, template.format(gold=gold), "en", "crag/fp", {"question_type": "false_premise"})
    out = benchmark_metric("crag_score", item)
    assert (out.details["crag"], out.value) == (kind, score), out.reason


def test_a_crag_gold_saying_invalid_accepts_invalid():
    ref = short("invalid question")
    item = BenchmarkItem(ref, "The question is invalid: its premise is false.", "en", "crag/x",
                         {"question_type": "false_premise"})
    assert benchmark_metric("crag_score", item).value == 1.0


@pytest.mark.parametrize(("response", "status", "value"), [
    pytest.param("Yes.", "ok", 1.0, id="yes"), pytest.param("No.", "ok", 0.0, id="no"),
    pytest.param("The report covers 2019.", "unparseable", 0.0, id="unread-is-its-own-state")])
def test_yes_no_gold_imported_as_short_answer(response, status, value):
    out = reference_metric("exact_match", short("yes"), response, "en")
    assert (out.status, out.value) == (status, value)


def ramdocs_row(gold: str) -> dict:
    rows = map(json.loads, (FIXTURES / "ramdocs" / "RAMDocs_test.jsonl").read_text(encoding="utf-8").splitlines())
    return next(r for r in rows if gold in r["gold_answers"])


@pytest.mark.parametrize(("response", "correct"), [
    pytest.param("The station airs a News/Talk radio format.", 1.0, id="the-whole-gold"),
    pytest.param("The station airs News.", 0.0, id="half-of-a-slash-is-not-the-gold")])
def test_ramdocs_gold_with_a_slash_is_one_answer(response, correct):
    row = ramdocs_row("News/Talk radio format")
    others = [g for g in row["gold_answers"] if g != "News/Talk radio format"]
    ref = ReferenceSpec(answer_type="multi", answers=[{"text": "News/Talk radio format"}],
                        wrong_answers=row.get("wrong_answers", []))
    item = BenchmarkItem(ref, response, "en", "ramdocs/1")
    assert benchmark_metric("ramdocs_accuracy", item).value == correct, (others, row.get("wrong_answers"))


@pytest.mark.parametrize(("text", "expected"), [
    pytest.param("No. The team lost the final.", ["No.", "The team lost the final."], id="no-answers"),
    pytest.param("See No. 5 for details.", ["See No. 5 for details."], id="no-before-a-number-abbreviates"),
])
def test_followrag_no_is_an_answer_not_an_abbreviation(text, expected):
    assert split_sentences(text) == expected
