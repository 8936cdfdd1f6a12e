"""Reference metrics (core.scoring.reference): hand-worked cases per metric, SQuAD's official EM/F1 on English,
character-level Chinese / Japanese, the MCQ option-letter rule, and not_applicable for unsupported languages."""

from __future__ import annotations

import collections
import re
import string

import pytest

from core.scoring.reference import (
    extract_option,
    lcs_length,
    reference_metric,
    reference_metrics,
    rouge_l_score,
    scheme_for,
    squad_normalize,
    token_f1_score,
    tokens,
)
from core.store.schema import ReferenceSpec


def short(*answers: str | dict, **kw) -> ReferenceSpec:
    return ReferenceSpec(answer_type="short", answers=[a if isinstance(a, dict) else {"text": a} for a in answers], **kw)


def multi(*answers: str, wrong: tuple[str, ...] = ()) -> ReferenceSpec:
    return ReferenceSpec(answer_type="multi", answers=[{"text": a} for a in answers], wrong_answers=list(wrong))


MCQ_EN = ReferenceSpec(answer_type="mcq", choices={"A": "Paris", "B": "London", "C": "Rome", "D": "Madrid"}, answer_key="C")
MCQ_ZH = ReferenceSpec(answer_type="mcq", answer_key="E",
                       choices={"A": "2小时", "B": "4小时内", "C": "8小时内", "D": "12小时内", "E": "24小时内"})
UNANSWERABLE = ReferenceSpec(answer_type="unanswerable")


def value(metric: str, ref: ReferenceSpec, response: str, language: str | None = "en") -> float | None:
    out = reference_metric(metric, ref, response, language)
    assert out.status in ("ok", "not_applicable", "unparseable"), out
    return out.value


# --------------------------------------------------------------------------- SQuAD v1.1 official definitions
# Transcribed from the official SQuAD v1.1 evaluation script (evaluate-v1.1.py), used as the reference here.


def official_normalize_answer(s: str) -> str:
    def remove_articles(text):
        return re.sub(r"\b(a|an|the)\b", " ", text)

    def white_space_fix(text):
        return " ".join(text.split())

    def remove_punc(text):
        exclude = set(string.punctuation)
        return "".join(ch for ch in text if ch not in exclude)

    return white_space_fix(remove_articles(remove_punc(s.lower())))


def official_f1(prediction: str, ground_truth: str) -> float:
    prediction_tokens = official_normalize_answer(prediction).split()
    ground_truth_tokens = official_normalize_answer(ground_truth).split()
    common = collections.Counter(prediction_tokens) & collections.Counter(ground_truth_tokens)
    num_same = sum(common.values())
    if num_same == 0:
        return 0
    precision = 1.0 * num_same / len(prediction_tokens)
    recall = 1.0 * num_same / len(ground_truth_tokens)
    return (2 * precision * recall) / (precision + recall)


def official_em(prediction: str, ground_truth: str) -> bool:
    return official_normalize_answer(prediction) == official_normalize_answer(ground_truth)


SQUAD_CASES = [
    pytest.param("Denver Broncos", ["Denver Broncos", "The Denver Broncos"], id="exact"),
    pytest.param("the Denver Broncos!", ["Denver Broncos"], id="article_and_punctuation"),
    pytest.param("Broncos", ["Denver Broncos"], id="partial"),
    pytest.param("Santa Clara, California", ["Levi's Stadium", "Santa Clara, California"], id="comma"),
    pytest.param("in the year 1998 and 1998", ["1998"], id="repeated_token"),
    pytest.param("An apple a day", ["apple day"], id="articles_only_difference"),
    pytest.param("Carolina Panthers", ["Denver Broncos"], id="wrong"),
    pytest.param("", ["Denver Broncos"], id="empty_prediction"),
    pytest.param("well-known   author", ["wellknown author"], id="hyphen_removed_like_squad"),
]


@pytest.mark.parametrize(("prediction", "golds"), SQUAD_CASES)
def test_english_em_and_f1_match_the_official_squad_script(prediction: str, golds: list[str]) -> None:
    ref = short(*golds)
    assert value("strict_exact_match", ref, prediction) == float(max(official_em(prediction, g) for g in golds))
    assert value("token_f1", ref, prediction) == pytest.approx(max(official_f1(prediction, g) for g in golds), abs=1e-12)
    for g in golds:
        assert squad_normalize(g) == official_normalize_answer(g)


@pytest.mark.parametrize(
    ("text", "squad", "ours"),
    [
        # SQuAD keeps non-ASCII punctuation; ours makes it a space (so the dash does not glue "paris" to "the")
        pytest.param("“Paris”—the capital.", "“paris”— capital", "paris capital", id="curly_quotes_and_dash"),
        pytest.param("«Paris» est la capitale", "«paris» est la capitale", "paris est la capitale", id="guillemets"),
        pytest.param("Levi's Stadium (2016)", "levis stadium 2016", "levis stadium 2016", id="ascii_deleted_as_squad"),
    ],
)
def test_unicode_punctuation_is_the_one_documented_widening(text: str, squad: str, ours: str) -> None:
    assert official_normalize_answer(text) == squad
    assert squad_normalize(text) == ours


# --------------------------------------------------------------------------- hand-worked metric tables

EM_CASES = [
    pytest.param(short("Denise Levertov"), "It was Denise Levertov, born in 1923.", "en", 1.0, id="en_contained"),
    pytest.param(short({"text": "Denise Levertov", "aliases": ["Levertov"]}), "Levertov.", "en", 1.0, id="en_alias"),
    pytest.param(short("Denise Levertov"), "Harvey Pekar", "en", 0.0, id="en_wrong"),
    pytest.param(short("3"), "There were 13 of them.", "en", 0.0, id="en_word_boundary_not_substring"),
    pytest.param(short({"text": "Paris and Lyon", "parts": ["Paris", "Lyon", "Nice"]}), "Paris, then Nice.", "en",
                 2 / 3, id="en_parts_share"),
    pytest.param(short({"text": "X", "parts": ["Paris", "Lyon"]}, {"text": "Lyon"}), "Lyon only", "en", 1.0,
                 id="en_max_over_answers"),
    pytest.param(multi("Paris", "London"), "Paris", "en", 0.5, id="multi_mean_over_gold"),
    pytest.param(multi("Paris", "London"), "London and Paris", "en", 1.0, id="multi_all"),
    pytest.param(short("北京大学"), "答案是北京 大学。", "zh", 1.0, id="zh_segmented_contained"),
    pytest.param(short("北京大学"), "清华大学", "zh", 0.0, id="zh_wrong"),
    pytest.param(short("29位"), "順位は２９位です。", "ja", 1.0, id="ja_fullwidth_digits_nfkc"),
    pytest.param(short("29位"), "30位です。", "ja", 0.0, id="ja_wrong"),
    pytest.param(MCQ_EN, "The answer is C.", "en", 1.0, id="mcq_letter"),
    pytest.param(MCQ_EN, "Rome", "en", 1.0, id="mcq_option_text"),
    pytest.param(MCQ_EN, "Rome or Paris", "en", 0.0, id="mcq_two_option_texts"),
    pytest.param(MCQ_ZH, "24小时内", "zh", 1.0, id="mcq_zh_text_containing_other_option_text"),
    pytest.param(MCQ_ZH, "答案是B", "zh", 0.0, id="mcq_zh_wrong_letter"),
]


@pytest.mark.parametrize(("ref", "response", "language", "expected"), EM_CASES)
def test_exact_match(ref: ReferenceSpec, response: str, language: str, expected: float) -> None:
    assert value("exact_match", ref, response, language) == pytest.approx(expected)


STRICT_CASES = [
    pytest.param(short("Denise Levertov"), "denise levertov.", "en", 1.0, id="en_equal_after_normalisation"),
    pytest.param(short("Denise Levertov"), "It was Denise Levertov", "en", 0.0, id="en_contained_is_not_equal"),
    pytest.param(short("北京大学"), "北京 大学。", "zh", 1.0, id="zh_segmented_equals_unsegmented"),
    pytest.param(short("東京タワー"), "「東京タワー」", "ja", 1.0, id="ja_brackets_stripped"),
    pytest.param(multi("Paris", "London"), "London, Paris.", "en", 1.0, id="multi_any_order_with_separators"),
    pytest.param(multi("Paris", "London"), "Paris and London and Rome", "en", 0.0, id="multi_extra_item"),
    pytest.param(multi("上海", "广州"), "上海和广州", "zh", 1.0, id="multi_zh_connector"),
    pytest.param(multi("東京", "大阪"), "東京と大阪", "ja", 1.0, id="multi_ja_connector"),
    pytest.param(MCQ_EN, "(C)", "en", 1.0, id="mcq_key_letter"),
    pytest.param(MCQ_EN, "rome", "en", 1.0, id="mcq_key_text"),
    pytest.param(MCQ_EN, "The answer is C", "en", 0.0, id="mcq_sentence_not_strict"),
]


@pytest.mark.parametrize(("ref", "response", "language", "expected"), STRICT_CASES)
def test_strict_exact_match(ref: ReferenceSpec, response: str, language: str, expected: float) -> None:
    assert value("strict_exact_match", ref, response, language) == expected


F1_CASES = [
    # pred [denise, levertov, born, 1923], gold [denise, levertov]: p = 2/4, r = 2/2, F1 = 2/3
    pytest.param(short("Denise Levertov"), "Denise Levertov, born 1923", "en", 2 / 3, id="en_precision_half"),
    # chars pred 北京大学成立 (6), gold 北京大学 (4): p = 4/6, r = 1, F1 = 0.8
    pytest.param(short("北京大学"), "北京 大学 成立", "zh", 0.8, id="zh_characters"),
    # chars pred 東京都 (3), gold 東京タワー (5): common 東京 = 2, p = 2/3, r = 2/5, F1 = 0.5
    pytest.param(short("東京タワー"), "東京都", "ja", 0.5, id="ja_characters"),
    # multi: gold tokens [paris, london], pred [paris]: p = 1, r = 1/2, F1 = 2/3
    pytest.param(multi("Paris", "London"), "Paris", "en", 2 / 3, id="multi_joined_gold"),
    pytest.param(short("Paris", "City of Light"), "the city of light", "en", 1.0, id="max_over_answers"),
]


@pytest.mark.parametrize(("ref", "response", "language", "expected"), F1_CASES)
def test_token_f1(ref: ReferenceSpec, response: str, language: str, expected: float) -> None:
    assert value("token_f1", ref, response, language) == pytest.approx(expected)


@pytest.mark.parametrize(
    ("prediction", "gold", "lcs", "f"),
    [
        # LCS of [police, killed, gunman] and [police, kill, gunman] is [police, gunman] = 2; p = r = 2/3
        pytest.param("police killed the gunman", "the police kill the gunman", 2, 2 / 3, id="en_rouge_paper_example"),
        # order matters: [b, a] vs [a, b]: LCS 1, p = r = 1/2
        pytest.param("london paris", "paris london", 1, 0.5, id="en_order"),
        pytest.param("", "paris", 0, 0.0, id="empty"),
    ],
)
def test_rouge_l_by_hand(prediction: str, gold: str, lcs: int, f: float) -> None:
    pred, ref = tokens(prediction, "word"), tokens(gold, "word")
    assert lcs_length(pred, ref) == lcs
    assert rouge_l_score(pred, ref) == pytest.approx(f)
    assert value("rouge_l", short(gold), prediction) == pytest.approx(f)


@pytest.mark.parametrize(
    ("ref", "response", "language", "expected"),
    [
        # chars 夜班每周最多四次 (8) vs 每周夜班最多四次 (8): LCS 每周最多四次 = 6 -> F = 0.75
        pytest.param(short("夜班每周最多四次"), "每周夜班最多四次。", "zh", 0.75, id="zh_reordered"),
        pytest.param(short("夜勤は週4回まで"), "夜勤は 週４回 まで", "ja", 1.0, id="ja_spaces_and_fullwidth"),
    ],
)
def test_rouge_l_cjk(ref: ReferenceSpec, response: str, language: str, expected: float) -> None:
    assert value("rouge_l", ref, response, language) == pytest.approx(expected)


@pytest.mark.parametrize(
    ("ref", "response", "expected"),
    [
        pytest.param(multi("Paris", "London", wrong=("Berlin",)), "Paris and London.", 1.0, id="all_gold"),
        pytest.param(multi("Paris", "London", wrong=("Berlin",)), "Paris, London, Berlin", 0.0, id="wrong_added"),
        pytest.param(multi("Paris", "London", wrong=("Berlin",)), "Paris", 0.0, id="gold_missing"),
        pytest.param(multi("Paris, Texas", "London", wrong=("Paris",)), "Paris, Texas and London", 1.0,
                     id="wrong_inside_gold_text_does_not_count"),
    ],
)
def test_all_gold_no_wrong(ref: ReferenceSpec, response: str, expected: float) -> None:
    assert value("all_gold_no_wrong", ref, response) == expected


# --------------------------------------------------------------------------- the option-letter rule

OPTION_CASES = [
    pytest.param("C", "C", id="bare_letter"),
    pytest.param("**C**\n\nRome is the capital.", "C", id="bare_markdown"),
    pytest.param("Answer: C", "C", id="answer_colon"),
    pytest.param("The correct answer is (C) Rome.", "C", id="answer_is_bracketed"),
    pytest.param("I would pick option C here.", "C", id="option_cue"),
    pytest.param("C. Rome", "C", id="letter_dot_line_start"),
    pytest.param("Rome, i.e. (C).", "C", id="bracketed_anywhere"),
    pytest.param("C is correct because Rome is the capital.", "C", id="confirmation"),
    pytest.param("Looking at A) Paris and B) London... Answer: C", "C", id="cue_beats_format"),
    pytest.param("A patient with fever. The answer is D.", "D", id="article_a_skipped_cue_wins"),
    pytest.param("A patient with fever presents.", None, id="article_a_is_not_an_option"),
    pytest.param("A 45-year-old man presents with fever.", None, id="article_a_before_a_number"),
    pytest.param("D-glutamate capsule", None, id="hyphenated_word_is_not_a_letter"),
    pytest.param("E. coli infection", None, id="genus_abbreviation_bare"),
    pytest.param("Most likely:\nC. difficile colitis", None, id="genus_abbreviation_line_start"),
    pytest.param("V(D)J recombination", None, id="bracket_inside_a_word"),
    pytest.param("B because Rome is not the capital of the UK.", "B", id="bare_letter_then_prose"),
    pytest.param("Vitamin B deficiency is likely.", None, id="letter_inside_prose_not_taken"),
    pytest.param("hepatitis B.", None, id="letter_at_sentence_end_not_taken"),
    pytest.param("The answer is F.", None, id="letter_outside_options"),
    pytest.param("选C", "C", id="zh_xuan"),
    pytest.param("答案是C。", "C", id="zh_daan_shi"),
    pytest.param("答案：Ｃ", "C", id="zh_fullwidth_colon_and_letter"),
    pytest.param("根据题意，故选C项。", "C", id="zh_gu_xuan"),
    pytest.param("正解はCです。", "C", id="ja_seikai_wa"),
    pytest.param("答えは C", "C", id="ja_kotae_wa"),
    pytest.param("（C）東京", "C", id="fullwidth_brackets"),
    pytest.param("I cannot answer this from the documents.", None, id="refusal_has_no_letter"),
    pytest.param("Therefore A patient with fever needs antibiotics.", None, id="article_a_after_a_concluding_word"),
    pytest.param("So A, as the passage says.", "A", id="letter_a_after_a_concluding_word"),
]


@pytest.mark.parametrize(("response", "expected"), OPTION_CASES)
def test_option_letter_rule(response: str, expected: str | None) -> None:
    assert extract_option(response, "ABCD") == expected


@pytest.mark.parametrize(
    ("ref", "response", "expected", "status"),
    [
        pytest.param(MCQ_EN, "Answer: C", 1.0, "ok", id="en_right"),
        pytest.param(MCQ_EN, "Answer: B", 0.0, "ok", id="en_wrong"),
        pytest.param(MCQ_EN, "Rome", 0.0, "unparseable", id="no_letter_is_unparseable_valued_wrong"),
        pytest.param(MCQ_EN, "", 0.0, "unparseable", id="empty_is_unparseable"),
        pytest.param(MCQ_ZH, "答案是E", 1.0, "ok", id="zh_five_options"),
        pytest.param(MCQ_ZH, "选A", 0.0, "ok", id="zh_wrong"),
        pytest.param(MCQ_ZH, "我不确定", 0.0, "unparseable", id="zh_no_letter_is_unparseable"),
    ],
)
def test_mcq_accuracy(ref: ReferenceSpec, response: str, expected: float, status: str) -> None:
    out = reference_metric("mcq_accuracy", ref, response, "zh" if ref is MCQ_ZH else "en")
    assert (out.value, out.status) == (expected, status)


# --------------------------------------------------------------------------- applicability and languages


@pytest.mark.parametrize(
    ("ref", "metric", "reason"),
    [
        pytest.param(UNANSWERABLE, "exact_match", "unanswerable reference: scored by rejection", id="unanswerable_em"),
        pytest.param(UNANSWERABLE, "token_f1", "unanswerable reference: scored by rejection", id="unanswerable_f1"),
        pytest.param(UNANSWERABLE, "mcq_accuracy", "unanswerable reference: scored by rejection", id="unanswerable_mcq"),
        pytest.param(short("x"), "rejection", "the reference has an answer", id="answered_rejection"),
        pytest.param(short("x"), "mcq_accuracy", "not a multiple-choice reference", id="short_mcq"),
        pytest.param(short("x"), "all_gold_no_wrong", "applies to 'multi' references only", id="short_all_gold"),
        pytest.param(MCQ_EN, "token_f1", "scored by the option letter", id="mcq_f1"),
        pytest.param(MCQ_EN, "rouge_l", "scored by the option letter", id="mcq_rouge"),
    ],
)
def test_not_applicable_with_reason(ref: ReferenceSpec, metric: str, reason: str) -> None:
    out = reference_metric(metric, ref, "x", "en")
    assert (out.status, out.value) == ("not_applicable", None)
    assert reason in out.reason


@pytest.mark.parametrize(
    ("language", "metric"),
    [
        pytest.param("th", "exact_match", id="thai_em"),
        pytest.param("th-TH", "token_f1", id="thai_region_f1"),
        pytest.param("km", "rouge_l", id="khmer_rouge"),
        pytest.param("my", "strict_exact_match", id="burmese_strict"),
    ],
)
def test_unsupported_language_is_not_applicable_never_a_number(language: str, metric: str) -> None:
    out = reference_metric(metric, short("กรุงเทพ"), "กรุงเทพมหานคร", language)
    assert out.status == "not_applicable" and out.value is None
    assert out.reason == f"unsupported for language {language.split('-')[0]}"


def test_mcq_accuracy_works_in_any_language() -> None:
    ref = ReferenceSpec(answer_type="mcq", choices={"A": "ก", "B": "ข"}, answer_key="B")
    assert value("mcq_accuracy", ref, "Answer: B", "th") == 1.0


@pytest.mark.parametrize(
    ("language", "ref", "kind"),
    [
        pytest.param("zh-Hant", None, "character", id="zh_region"),
        pytest.param("ja", None, "character", id="ja"),
        pytest.param("de", None, "word", id="german_by_word"),
        pytest.param(None, short("北京大学"), "character", id="undetermined_cjk_reference"),
        pytest.param("und", short("Paris"), "word", id="undetermined_latin_reference"),
    ],
)
def test_scheme_per_language(language: str | None, ref: ReferenceSpec | None, kind: str) -> None:
    assert scheme_for(language, ref).kind == kind


@pytest.mark.parametrize(
    ("response", "language", "expected"),
    [
        pytest.param("I cannot find the answer in the provided documents.", "en", 1.0, id="en_refusal"),
        pytest.param("The penalty is 50 EUR per month.", "en", 0.0, id="en_answer"),
        pytest.param("根据提供的文档，我无法回答这个问题。", "zh", 1.0, id="zh_refusal"),
        pytest.param("罚款为每月500元。", "zh", 0.0, id="zh_answer"),
        pytest.param("提供された文書には、この質問に答える情報がありません。", "ja", 1.0, id="ja_refusal"),
        pytest.param("罰金は月5万円です。", "ja", 0.0, id="ja_answer"),
        pytest.param("Based on the provided documents, I cannot directly answer your question: the knowledge base "
                     "does not contain the information needed.", "ja", 1.0, id="english_refusal_to_japanese_question"),
    ],
)
def test_rejection(response: str, language: str, expected: float) -> None:
    assert value("rejection", UNANSWERABLE, response, language) == expected


def test_rejection_unsupported_language() -> None:
    out = reference_metric("rejection", UNANSWERABLE, "Ich kann diese Frage nicht beantworten.", "de")
    assert (out.status, out.reason) == ("not_applicable", "unsupported for language de")


def test_reference_metrics_returns_every_metric_once() -> None:
    got = reference_metrics(short("Paris"), "Paris", "en")
    assert list(got) == ["exact_match", "strict_exact_match", "token_f1", "rouge_l", "mcq_accuracy",
                         "all_gold_no_wrong", "wrong_answer", "rejection"]
    assert {k for k, v in got.items() if v.status == "ok"} == {"exact_match", "strict_exact_match", "token_f1", "rouge_l"}


def test_token_f1_score_edge_cases() -> None:
    assert token_f1_score([], ["a"]) == 0.0
    assert token_f1_score(["a", "a", "b"], ["a", "b", "b"]) == pytest.approx(2 / 3)
