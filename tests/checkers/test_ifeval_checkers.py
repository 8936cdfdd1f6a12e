"""Table-driven verdicts of the IFEval-compatible checkers, strict and loose."""

from __future__ import annotations

import pytest

from core.scoring.checkers import build_checker
from core.scoring.checkers.base import loose_variants

LONG_EN = "This is a plain English answer about the weather in the city today. It will rain in the evening."
# (id, checker_id, kwargs, response, strict, loose)
CASES = [
    ("empty-response-fails", "punctuation:no_comma", {}, "", False, False),
    ("whitespace-response-fails", "punctuation:no_comma", {}, "  \n ", False, False),
    ("no-comma-ok", "punctuation:no_comma", {}, "No commas here.", True, True),
    ("no-comma-violated", "punctuation:no_comma", {}, "Yes, here.", False, False),
    ("comma-only-in-first-line-loose", "punctuation:no_comma", {}, "Sure, here:\nNo commas here", False, True),
    ("existence-all", "keywords:existence", {"keywords": ["Bank", "river"]}, "The river bank.", True, True),
    ("existence-missing", "keywords:existence", {"keywords": ["bank", "lake"]}, "The river bank.", False, False),
    ("existence-substring-counts", "keywords:existence", {"keywords": ["art"]}, "A party.", True, True),
    ("frequency-at-least-boundary", "keywords:frequency", {"keyword": "data", "frequency": 2, "relation": "at least"}, "Data and data.", True, True),
    ("frequency-less-than-boundary", "keywords:frequency", {"keyword": "data", "frequency": 2, "relation": "less than"}, "Data and data.", False, False),
    ("forbidden-whole-word-only", "keywords:forbidden_words", {"forbidden_words": ["cat"]}, "A catalog.", True, True),
    ("forbidden-present", "keywords:forbidden_words", {"forbidden_words": ["cat"]}, "The CAT sat.", False, False),
    ("letter-at-least", "keywords:letter_frequency", {"letter": "z", "let_frequency": 2, "let_relation": "at least"}, "Zig zag", True, True),
    ("letter-less-than", "keywords:letter_frequency", {"letter": "z", "let_frequency": 2, "let_relation": "less than"}, "Zig zag", False, False),
    ("letter-symbol", "keywords:letter_frequency", {"letter": "#", "let_frequency": 2, "let_relation": "at least"}, "#a #b", True, True),
    ("language-en", "language:response_language", {"language": "en"}, LONG_EN, True, True),
    ("language-de-wrong", "language:response_language", {"language": "de"}, LONG_EN, False, False),
    ("language-undetectable-passes", "language:response_language", {"language": "fr"}, "12345 !!!", True, True),
    ("capital-ok", "change_case:english_capital", {}, LONG_EN.upper(), True, True),
    ("capital-mixed", "change_case:english_capital", {}, LONG_EN, False, False),
    ("lowercase-ok", "change_case:english_lowercase", {}, LONG_EN.lower(), True, True),
    ("lowercase-unicode-german", "change_case:english_lowercase", {}, "das ist ein deutscher satz über das wetter heute und morgen.", False, False),
    ("capital-words-at-least", "change_case:capital_word_frequency", {"capital_frequency": 2, "capital_relation": "at least"}, "I LOVE NASA a lot.", True, True),
    ("capital-words-less-than", "change_case:capital_word_frequency", {"capital_frequency": 2, "capital_relation": "less than"}, "I LOVE it", False, False),
    ("sentences-less-than", "length_constraints:number_sentences", {"num_sentences": 3, "relation": "less than"}, "One. Two! Three?", False, False),
    ("sentences-at-least", "length_constraints:number_sentences", {"num_sentences": 3, "relation": "at least"}, "One. Two! Three?", True, True),
    ("words-boundary", "length_constraints:number_words", {"num_words": 4, "relation": "at least"}, "one two-three four", True, True),
    ("words-under", "length_constraints:number_words", {"num_words": 5, "relation": "at least"}, "one two-three four", False, False),
    ("paragraphs-exact", "length_constraints:number_paragraphs", {"num_paragraphs": 2}, "A\n***\nB", True, True),
    ("paragraphs-empty-inner", "length_constraints:number_paragraphs", {"num_paragraphs": 2}, "A\n***\n***\nB", False, False),
    ("paragraphs-trailing-divider", "length_constraints:number_paragraphs", {"num_paragraphs": 2}, "A\n***\nB\n***", True, True),
    ("nth-first-word", "length_constraints:nth_paragraph_first_word", {"num_paragraphs": 2, "nth_paragraph": 2, "first_word": "However"}, "Intro.\n\n\"However, no.", True, True),
    ("nth-wrong-count", "length_constraints:nth_paragraph_first_word", {"num_paragraphs": 3, "nth_paragraph": 2, "first_word": "however"}, "Intro.\n\nHowever no.", False, False),
    ("placeholders", "detectable_content:number_placeholders", {"num_placeholders": 2}, "[name] at [address]", True, True),
    ("placeholders-short", "detectable_content:number_placeholders", {"num_placeholders": 3}, "[name] at [address]", False, False),
    ("postscript-ps", "detectable_content:postscript", {"postscript_marker": "P.S."}, "Hi.\n\nP.S. bye", True, True),
    ("postscript-pps", "detectable_content:postscript", {"postscript_marker": "P.P.S"}, "Hi.\np.p.s later", True, True),
    ("postscript-missing", "detectable_content:postscript", {"postscript_marker": "P.S."}, "Hi there.", False, False),
    ("bullets-exact", "detectable_format:number_bullet_lists", {"num_bullets": 2}, "* a\n- b", True, True),
    ("bullets-bold-not-bullet", "detectable_format:number_bullet_lists", {"num_bullets": 2}, "**a**\n* a\n- b", True, True),
    ("bullets-too-many-loose-drops-line", "detectable_format:number_bullet_lists", {"num_bullets": 1}, "* a\n- b", False, True),
    ("constrained", "detectable_format:constrained_response", {}, "My answer is no.", True, True),
    ("constrained-missing", "detectable_format:constrained_response", {}, "No.", False, False),
    ("highlights-single-and-double", "detectable_format:number_highlighted_sections", {"num_highlights": 2}, "*one* and **two**", True, True),
    ("highlights-blank-ignored", "detectable_format:number_highlighted_sections", {"num_highlights": 1}, "** ** x", False, False),
    ("sections", "detectable_format:multiple_sections", {"section_spliter": "Section", "num_sections": 2}, "Section 1\na\nSection 2\nb", True, True),
    ("sections-short", "detectable_format:multiple_sections", {"section_spliter": "SECTION", "num_sections": 3}, "SECTION 1\na\nSECTION 2\nb", False, False),
    ("json-fenced", "detectable_format:json_format", {}, "```json\n{\"a\": 1}\n```", True, True),
    ("json-broken", "detectable_format:json_format", {}, "{a: 1}", False, False),
    ("json-after-intro-loose", "detectable_format:json_format", {}, "Here it is:\n{\"a\": 1}", False, True),
    ("title", "detectable_format:title", {}, "<<Poem>>\ntext", True, True),
    ("title-empty", "detectable_format:title", {}, "<< >>\ntext", False, False),
    ("two-responses", "combination:two_responses", {}, "First.\n******\nSecond.", True, True),
    ("two-responses-identical", "combination:two_responses", {}, "Same\n******\nSame", False, False),
    ("repeat-prompt", "combination:repeat_prompt", {"prompt_to_repeat": "Write a poem."}, "write a POEM. Roses...", True, True),
    ("repeat-prompt-missing", "combination:repeat_prompt", {"prompt_to_repeat": "Write a poem."}, "Roses...", False, False),
    ("end-phrase-quoted", "startend:end_checker", {"end_phrase": "Any other questions?"}, "\"Text. Any other questions?\"", True, True),
    ("end-phrase-extra", "startend:end_checker", {"end_phrase": "Bye."}, "Bye. :)", False, False),
    ("quotation", "startend:quotation", {}, " \"quoted\" ", True, True),
    ("quotation-single-char", "startend:quotation", {}, "\"", False, False),
    ("quotation-unicode-quotes", "startend:quotation", {}, "“quoted”", False, False),
]


@pytest.mark.parametrize(
    "checker_id, kwargs, response, strict, loose", [case[1:] for case in CASES], ids=[case[0] for case in CASES]
)
def test_ifeval_checker_verdicts(checker_id, kwargs, response, strict, loose):
    checker = build_checker(checker_id, kwargs)
    assert checker.check(response) is strict
    assert checker.check_loose(response) is loose
    assert checker.describe()


@pytest.mark.parametrize(
    "response, expected",
    [
        ("a\nb\nc", ("a\nb\nc", "b\nc", "a\nb", "b", "a\nb\nc", "b\nc", "a\nb", "b")),
        ("*x*", ("*x*", "", "", "", "x", "", "", "")),
    ],
    ids=["three-lines", "stars-stripped"],
)
def test_loose_variants(response, expected):
    assert loose_variants(response) == expected
